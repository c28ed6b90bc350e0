"""A big verl console log is read part by part (its payload strings let go after each part):
the run is the same as when it is read at once."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

import advisor.ingest.console as console
import advisor.ingest.lines as lines
from advisor.ingest import load_run


def _log(path: Path, steps: int) -> Path:
    rng = random.Random(5)
    lines = ["(TaskRunner pid=1) {'trainer': {'test_freq': 10}}"]
    for s in range(1, steps + 1):
        pairs = {"critic/score/mean": rng.random(), "actor/entropy": rng.random()}
        if s > steps // 2:  # a key that first appears in a later part
            pairs["actor/grad_norm"] = rng.random()
        if s % 10 == 0:
            pairs["val-core/gsm8k/reward/mean@1"] = rng.random()
        body = " - ".join(f"{k}:{v!r}" for k, v in pairs.items())
        lines.append(f"(TaskRunner pid=1) step:{s} - {body}")
        lines.append("(WorkerDict pid=2) some other output")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_read_in_parts_equals_read_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log(tmp_path / "train.log", 3000)
    whole = load_run(log)
    monkeypatch.setattr(console, "_PART_TEXT", 1)  # a part per chunk ...
    monkeypatch.setattr(lines, "_CHUNK", 4096)  # ... of 4 kB: dozens of parts
    parts = load_run(log)
    assert_frame_equal(parts.frame, whole.frame)
    cols = parts.frame.columns  # the raw keys in the order the file shows them
    assert cols.index("actor/grad_norm") > cols.index("actor/entropy")
    assert (parts.steps, parts.config_hints) == (whole.steps, whole.config_hints)
