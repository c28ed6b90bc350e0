"""The plain hook and the verl route (verl is not installed: its Tracking and TaskRunner are
stood in by classes with verl's signatures, `log(self, data, step, backend=None)` and
`run(self, config)`, put where verl keeps them)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from advisor.api import diagnose
from advisor.ingest import load_run
from advisor.integrations import verl
from advisor.integrations.hook import Hook, make_hook
from advisor.online import Advisor

from .conftest import corpus_runs, ids, rows

pytestmark = pytest.mark.usefixtures("corpus_available")


def _run(prefix: str, fmt: str = "verl-jsonl") -> Path:
    runs = [p for p in corpus_runs() if p.name.startswith(prefix) and fmt in p.name]
    if not runs:
        pytest.skip(f"no {prefix} {fmt} run in the corpus")
    return runs[0]


class StandInTracking:
    """verl.utils.tracking.Tracking's interface: backends keyed by name, log(data, step)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.logged: list[tuple[int, dict[str, Any], Any]] = []

    def log(self, data: dict[str, Any], step: int, backend: Any = None) -> None:
        self.logged.append((step, dict(data), backend))


# -- the plain hook -------------------------------------------------------------------------
def test_hook_never_raises_into_the_loop() -> None:
    hook = Hook(Advisor())
    assert hook(1, {"reward": 0.1}) == []
    assert hook("not a step", {"reward": 0.1}) == []  # type: ignore[arg-type]
    assert hook(2, ["not", "a", "mapping"]) == []  # type: ignore[arg-type]
    assert hook.errors == 2 and not hook.stop


def test_hook_stops_on_error_and_writes_reports(tmp_path: Path) -> None:
    path = _run("div")
    run = load_run(path)
    hook = make_hook(path / "job.yaml", stop_on="error", report_path=tmp_path / "r.md")
    stopped_at = None
    for step, metrics in rows(run):
        hook(step, metrics)
        if hook.stop:
            stopped_at = step
            break
    assert stopped_at is not None and hook.stopped_by is not None
    assert hook.stopped_by.severity.value == "error"
    assert hook.finish() == tmp_path / "r.md"
    assert hook.stopped_by.id in (tmp_path / "r.md").read_text(encoding="utf-8")
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert data["run"]["last_step"] == stopped_at


def test_an_advisor_is_a_plain_callable() -> None:
    adv = Advisor()
    assert adv(1, {"reward": 0.5}) == [] and adv.steps == 1


# -- verl -----------------------------------------------------------------------------------
def test_tracking_wrapper_logs_first_then_feeds_the_advisor() -> None:
    path = _run("p3")
    run = load_run(path)
    hook = Hook(Advisor.from_config(path / "job.yaml", hints=run.config_hints))
    module = types.SimpleNamespace(Tracking=StandInTracking)
    undo = verl.install(hook, module)
    tracker = module.Tracking(project_name="p", experiment_name="e", default_backend=["file"])
    assert isinstance(tracker, StandInTracking)
    for step, metrics in rows(run):
        tracker.log(data=metrics, step=step)
    tracker.log(data={"val/generations": "a table"}, step=1, backend=["wandb"])
    undo()
    assert module.Tracking is StandInTracking
    assert len(tracker.logged) == run.frame.height + 1  # every backend call went through
    hook.close(run.ending)
    assert ids(hook.advisor.findings) == ids(diagnose(path, path / "job.yaml").findings) != []
    assert hook.advisor.steps == run.steps  # the backend-only call was not a step


def test_tracking_wrapper_stops_fit_when_asked() -> None:
    path = _run("div")
    run = load_run(path)
    hook = Hook(Advisor.from_config(path / "job.yaml"), stop_on="error")
    cls = verl.tracking_class(StandInTracking, hook)
    tracker = cls()
    with pytest.raises(verl.TrainingStopped) as info:
        for step, metrics in rows(run):
            tracker.log(metrics, step)
    assert info.value.finding.severity.value == "error"
    assert tracker.logged[-1][0] == hook.advisor.last_step  # the step was logged before


VERL_CONFIG = {
    "data": {"train_batch_size": 256, "max_prompt_length": 512, "max_response_length": 1024},
    "actor_rollout_ref": {
        "actor": {
            "optim": {"lr": 1e-6, "lr_warmup_steps": -1},
            "ppo_mini_batch_size": 64,
            "use_kl_loss": True,
            "kl_loss_coef": 0.001,
            "clip_ratio_low": 0.2,
            "clip_ratio_high": 0.28,
            "policy_loss": {"loss_mode": "vanilla"},
        },
        "rollout": {"n": 8, "gpu_memory_utilization": 0.6, "tensor_model_parallel_size": 2},
    },
    "algorithm": {"adv_estimator": "grpo"},
    "trainer": {"test_freq": 10, "save_freq": 20, "total_epochs": 3, "default_local_dir": ""},
}


def test_hints_from_verl_config_are_the_readers_mapping() -> None:
    from advisor.dialect import verl_facts
    from advisor.ingest.hints import verl_hints

    h = verl.hints_from_verl(VERL_CONFIG)
    # the reader's mapping, plus the facts that pick verl's dialect (its KL key, the framework)
    assert h == {**verl_hints(VERL_CONFIG), **verl_facts(VERL_CONFIG)}
    assert h["framework"] == "verl"
    assert h["learning_rate"] == 1e-6 and h["batch_size"] == 256 and h["n_rollouts"] == 8
    assert h["eval_steps"] == 10 and h["max_length"] == 1536 and h["algorithm"] == "grpo"
    gspo = json.loads(json.dumps(VERL_CONFIG))
    gspo["actor_rollout_ref"]["actor"]["policy_loss"]["loss_mode"] = "gspo"
    assert verl.hints_from_verl(gspo)["algorithm"] == "gspo"
    assert verl.hints_from_verl({}) == {"framework": "verl"}  # nothing known but whose it is
    assert verl.hints_from_verl("not a config") == {}


def test_task_runner_judges_the_run_and_writes_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _run("p3")
    run = load_run(path)
    tracking = types.ModuleType("verl.utils.tracking")
    tracking.Tracking = StandInTracking  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "verl.utils.tracking", tracking)
    monkeypatch.setenv(verl.ENV_CONFIG, str(path / "job.yaml"))
    calls: list[int] = []

    class TaskRunner:  # verl.trainer.main_ppo.TaskRunner's interface
        def run(self, config: Any) -> None:
            # what RayPPOTrainer.fit() does: import Tracking inside fit(), log every step
            from verl.utils.tracking import Tracking

            logger = Tracking(project_name="p", experiment_name="e", default_backend=["console"])
            for step, metrics in rows(run):
                logger.log(data=metrics, step=step)
                calls.append(step)

    runner_cls = verl.task_runner_class(TaskRunner)
    assert issubclass(runner_cls, TaskRunner)
    config = json.loads(json.dumps(VERL_CONFIG))
    config["trainer"]["default_local_dir"] = str(tmp_path / "ckpt")
    runner_cls().run(config)
    assert tracking.Tracking is StandInTracking  # undone after the run
    assert len(calls) == run.frame.height
    report = tmp_path / "ckpt" / verl.REPORT_NAME
    text = report.read_text(encoding="utf-8")
    for fid in ids(diagnose(path, path / "job.yaml").findings):
        assert fid in text


def test_task_runner_reports_a_failed_run_and_reraises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracking = types.ModuleType("verl.utils.tracking")
    tracking.Tracking = StandInTracking  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "verl.utils.tracking", tracking)
    monkeypatch.delenv(verl.ENV_CONFIG, raising=False)
    monkeypatch.setenv(verl.ENV_REPORT, str(tmp_path / "out" / "report.md"))

    class TaskRunner:
        def run(self, config: Any) -> None:
            from verl.utils.tracking import Tracking

            Tracking().log({"critic/rewards/mean": 0.1}, step=1)
            raise RuntimeError("NCCL timeout")

    with pytest.raises(RuntimeError, match="NCCL"):
        verl.task_runner_class(TaskRunner)().run(VERL_CONFIG)
    data = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert data["run"]["ending"]["kind"] == "failed"
    assert "NCCL timeout" in data["run"]["ending"]["message"]
    assert data["run"]["config_hints"]["n_rollouts"] == 8
