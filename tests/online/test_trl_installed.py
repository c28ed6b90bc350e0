"""The TrainerCallback with TRL's real GRPOConfig: the report speaks GRPOConfig's names, the
output dir keeps what the live run knew (a later diagnose judges the same), a run that raises
still gets its report, and nothing assumed is presented as known."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

trl = pytest.importorskip("trl")
pytestmark = pytest.mark.usefixtures("corpus_available")

from transformers import TrainerControl, TrainerState  # noqa: E402
from transformers.trainer_callback import CallbackHandler  # noqa: E402

from advisor.api import diagnose  # noqa: E402
from advisor.ingest import load_run  # noqa: E402
from advisor.ingest.frame import is_eval_key  # noqa: E402
from advisor.integrations.transformers import RUN_FILE, AdvisorCallback, reporting  # noqa: E402
from advisor.report import render  # noqa: E402

from .conftest import corpus_runs, rows  # noqa: E402


def _run(prefix: str) -> Path:
    runs = [p for p in corpus_runs() if p.name.startswith(prefix) and "trl-state" in p.name]
    if not runs:
        pytest.skip(f"no {prefix} trl-state run in the corpus")
    return runs[0]


def _config(out: Path) -> Any:
    return trl.GRPOConfig(
        output_dir=str(out), num_generations=4, per_device_train_batch_size=4, logging_steps=1,
        eval_strategy="no", report_to="none", use_cpu=True, learning_rate=1e-6,
    )  # fmt: skip


def _drive(cb: AdvisorCallback, path: Path, args: Any, upto: int | None = None) -> TrainerState:
    data = list(rows(load_run(path / "trainer_state.json")))
    state = TrainerState(max_steps=data[-1][0], logging_steps=1)
    control = TrainerControl()
    handler = CallbackHandler([cb], None, None, None, None)
    handler.on_train_begin(args, state, control)
    for step, metrics in data[:upto]:
        state.global_step = step
        handler.on_log(
            args, state, control, {k: v for k, v in metrics.items() if not is_eval_key(k)}
        )
    if upto is None:
        handler.on_train_end(args, state, control)
    return state


def test_report_speaks_grpoconfig_and_keeps_assumed_values_out(tmp_path: Path) -> None:
    path = _run("kl0")
    cb = AdvisorCallback()
    _drive(cb, path, _config(tmp_path))
    d = json.loads((tmp_path / "rl-advisor-report.json").read_text())
    assert d["framework"] == "trl"
    patch = d["patch"]
    hp = patch["hyper_parameters"]
    # known: what GRPOConfig said; never the platform's defaults
    assert hp.get("n_rollouts") == 4
    assert "algorithm" not in hp or hp["algorithm"] == "grpo"
    assert "eval_steps" not in hp and "batch_size" not in hp
    fields = set(trl.GRPOConfig.__dataclass_fields__)
    for change in patch["changes"]:
        for key in change["framework_keys"]:
            assert key["key"] in fields, key
    for key in patch["settings"]:
        assert key in fields, key
    md = (tmp_path / "rl-advisor-report.md").read_text()
    for word in ("kl_loss_coef", "n_rollouts", "hyper_parameters:"):
        assert word not in md.split("## Run")[0].split("### ")[0], word


def test_diagnose_output_dir_judges_as_the_callback_did(tmp_path: Path) -> None:
    path = _run("p1")
    cb = AdvisorCallback()
    _drive(cb, path, _config(tmp_path))
    assert (tmp_path / RUN_FILE).is_file()
    shutil.copy(path / "trainer_state.json", tmp_path / "trainer_state.json")
    later = diagnose(tmp_path)
    live = json.loads((tmp_path / "rl-advisor-report.json").read_text())
    assert later.framework == "trl"
    assert sorted((f.id, f.onset_step) for f in later.findings) == sorted(
        (f["id"], f["onset_step"]) for f in live["findings"]
    )
    assert later.patch is not None
    assert [(c.param, c.to) for c in later.patch.changes] == [
        (c["param"], c["to"]) for c in live["patch"]["changes"]
    ]


def test_a_run_that_raises_gets_its_report(tmp_path: Path) -> None:
    path = _run("p1")
    cb = AdvisorCallback()
    args = _config(tmp_path)

    class Trainer:
        def __init__(self) -> None:
            self.args = args
            self.state: TrainerState | None = None
            self.callback_handler = CallbackHandler([cb], None, None, None, None)

        def train(self) -> None:
            self.state = _drive(cb, path, args, upto=80)
            raise RuntimeError("CUDA out of memory")

    trainer = Trainer()
    with pytest.raises(RuntimeError, match="out of memory"), reporting(trainer):
        trainer.train()
    report = tmp_path / "rl-advisor-report.md"
    assert report.is_file()
    d = json.loads(report.with_suffix(".json").read_text())
    assert (
        d["run"]["ending"]["kind"] == "failed" and "out of memory" in d["run"]["ending"]["message"]
    )


def test_every_format_marks_an_assumed_start(tmp_path: Path) -> None:
    """Without a job file the platform defaults are assumed: the headline and the change say
    so, the JSON marks it, the diff shows no old line for it, the patch writes only the change."""
    run = _run("p1") / "trainer_state.json"
    d = diagnose(run)
    assert d.patch is not None and d.patch.changes
    c = d.patch.changes[0]
    hp = d.patch.hyper_parameters
    for param in d.assumed_parameters:
        assert param not in hp or param in {x.param for x in d.patch.changes}, param
    md = render(d, "markdown")
    if c.assumed:
        assert "(assumed)" in md.split("\n")[2]  # the verdict
        assert d.patch.assumed == [c.param]
    data = json.loads(render(d, "json"))
    assert set(data["patch"]["hyper_parameters"]) <= set(hp)
    assert "assumed_parameters" in data and "framework_keys" in data["patch"]["changes"][0]
