"""The TrainerCallback with the real transformers classes (TrainingArguments, TrainerState,
TrainerControl, and the Trainer's own CallbackHandler dispatching the events)."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")
pytestmark = [pytest.mark.transformers, pytest.mark.usefixtures("corpus_available")]

from transformers import TrainerControl, TrainerState, TrainingArguments  # noqa: E402
from transformers.trainer_callback import CallbackHandler  # noqa: E402

from advisor.api import diagnose  # noqa: E402
from advisor.ingest import load_run  # noqa: E402
from advisor.ingest.frame import is_eval_key  # noqa: E402
from advisor.integrations.transformers import AdvisorCallback, hints_from_args  # noqa: E402

from .conftest import corpus_runs, ids, rows  # noqa: E402


@dataclasses.dataclass
class GRPOLikeConfig(TrainingArguments):
    """TrainingArguments with the GRPO fields TRL's GRPOConfig adds (TRL is not installed)."""

    num_generations: int = 8
    beta: float = 0.04
    max_prompt_length: int = 512
    max_completion_length: int = 256
    importance_sampling_level: str = "token"
    epsilon: float = 0.2
    epsilon_high: float = 0.2


def _trl_run(prefix: str) -> Path:
    runs = [p for p in corpus_runs() if p.name.startswith(prefix) and "trl-state" in p.name]
    if not runs:
        pytest.skip(f"no {prefix} trl-state run in the corpus")
    return runs[0]


def _train(cb: AdvisorCallback, path: Path, out: Path, eval_steps: int) -> dict[str, Any]:
    """Drive the callback as Trainer.train() does, with the run's logged rows."""
    args = TrainingArguments(
        output_dir=str(out), logging_steps=1, eval_strategy="steps", eval_steps=eval_steps,
        report_to="none",
    )  # fmt: skip
    run = load_run(path / "trainer_state.json")
    data = list(rows(run))
    state = TrainerState(max_steps=data[-1][0], logging_steps=1, eval_steps=eval_steps)
    control = TrainerControl()
    handler = CallbackHandler([cb], None, None, None, None)
    handler.on_train_begin(args, state, control)
    stopped_at = None
    for step, metrics in data:
        state.global_step = step
        train = {k: v for k, v in metrics.items() if not is_eval_key(k)}
        evals = {k: v for k, v in metrics.items() if is_eval_key(k) and k.startswith("eval_")}
        control.should_evaluate = bool(evals)  # as DefaultFlowCallback sets it before logging
        control = handler.on_log(args, state, control, train)
        if evals:
            control = handler.on_log(args, state, control, evals)
            control = handler.on_evaluate(args, state, control, metrics=evals)
        if control.should_training_stop:
            stopped_at = step
            break
    handler.on_log(args, state, control, {"train_runtime": 1.0, "train_loss": 0.1})
    handler.on_train_end(args, state, control)
    return {"stopped_at": stopped_at, "run": run}


def test_callback_ends_with_the_findings_diagnose_gives(tmp_path: Path) -> None:
    path = _trl_run("p3")
    cb = AdvisorCallback(config=path / "job.yaml")
    _train(cb, path, tmp_path, eval_steps=20)
    batch = diagnose(path / "trainer_state.json", path / "job.yaml")
    assert ids(cb.findings) == ids(batch.findings) != []
    assert cb.advisor.run_info().warnings == []  # train + eval of one step judged as one row
    report = tmp_path / "rl-advisor-report.md"
    assert cb.report_path == report and report.exists()
    assert "P3" in report.read_text(encoding="utf-8")
    data = json.loads(report.with_suffix(".json").read_text(encoding="utf-8"))
    assert sorted({f["id"] for f in data["findings"]}) == ids(batch.findings)


def test_callback_stops_training_on_an_error_finding(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _trl_run("div")
    cb = AdvisorCallback(config=path / "job.yaml", stop_on="error")
    with caplog.at_level(logging.WARNING, logger="rl_advisor"):
        out = _train(cb, path, tmp_path, eval_steps=20)
    errors = [f for f in cb.findings if f.severity.value == "error"]
    assert errors, "the collapse run must raise an error-severity finding"
    assert out["stopped_at"] is not None
    assert out["stopped_at"] < out["run"].frame["step"][-1]  # stopped before the end
    assert any(f.id in r.getMessage() for r in caplog.records for f in errors)
    assert cb.advisor.ending is not None and cb.advisor.ending.kind == "killed"


def test_callback_without_stop_on_never_stops(tmp_path: Path) -> None:
    path = _trl_run("div")
    cb = AdvisorCallback(config=path / "job.yaml", report_name=None)
    out = _train(cb, path, tmp_path, eval_steps=20)
    assert out["stopped_at"] is None
    assert not (tmp_path / "rl-advisor-report.md").exists()


def test_hints_from_grpo_like_arguments(tmp_path: Path) -> None:
    args = GRPOLikeConfig(
        output_dir=str(tmp_path), learning_rate=3e-6, num_train_epochs=2, eval_strategy="steps",
        eval_steps=25, save_strategy="steps", save_steps=50, save_total_limit=3,
        lr_scheduler_type="cosine", importance_sampling_level="sequence", report_to="none",
    )  # fmt: skip
    hints = hints_from_args(args)
    assert hints["learning_rate"] == 3e-6
    assert hints["n_rollouts"] == 8 and hints["kl_loss_coef"] == 0.04
    assert hints["n_epochs"] == 2 and hints["eval_steps"] == 25
    assert hints["save_strategy"] == "steps" and hints["save_steps"] == 50
    assert hints["lr_scheduler_type"] == "cosine"
    assert hints["max_length"] == 768 and hints["algorithm"] == "gspo"
    clip_higher = dataclasses.replace(args, importance_sampling_level="token", epsilon_high=0.28)
    assert hints_from_args(clip_higher)["algorithm"] == "dapo"
    plain = TrainingArguments(output_dir=str(tmp_path), report_to="none")
    assert "algorithm" not in hints_from_args(plain)  # not a GRPO trainer: no guess
