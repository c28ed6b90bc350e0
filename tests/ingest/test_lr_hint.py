"""Without a config, the run's learning rate is the peak of the lr series it logged."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.ingest import load_run


def _state(tmp_path: Path, lrs: list[float]) -> Path:
    history = [
        {"step": i + 1, "epoch": 0.01 * i, "loss": 0.0, "reward": 0.1, "learning_rate": lr}
        for i, lr in enumerate(lrs)
    ]
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history, "global_step": len(lrs)}))
    return path


def test_peak_of_warmup_then_decay(tmp_path: Path) -> None:
    lrs = [1e-6, 2e-6, 3e-6, 2.5e-6, 1e-6, 0.0]  # warm-up to 3e-6, then linear decay to 0
    assert load_run(_state(tmp_path, lrs)).config_hints["learning_rate"] == 3e-6


def test_no_positive_lr_no_hint(tmp_path: Path) -> None:
    assert "learning_rate" not in load_run(_state(tmp_path, [0.0, 0.0])).config_hints
