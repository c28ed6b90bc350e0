"""The verl integration against the installed verl package's own classes (no GPU, no Ray
cluster): the task runners verl starts, its Tracking, and the modules that look it up."""

from __future__ import annotations

import importlib
import math
from pathlib import Path

import pytest

main_ppo = pytest.importorskip("verl.trainer.main_ppo", exc_type=ImportError)

from advisor.integrations import verl as integration  # noqa: E402
from advisor.integrations.hook import Hook  # noqa: E402
from advisor.online import Advisor  # noqa: E402


def _steps(n: int) -> list[dict[str, float]]:
    return [
        {
            "critic/score/mean": 0.2 + 0.3 * (1 - math.exp(-s / 30)),
            "actor/entropy": 0.6,
            "actor/grad_norm": 0.4,
            "actor/kl_loss": 0.001,
            "response_length/mean": 500.0,
            "response_length/clip_ratio": 0.0,
            "timing_s/step": 60.0,
        }
        for s in range(1, n + 1)
    ]


def test_the_runner_verl_starts_is_a_ray_actor_and_is_wrapped_underneath() -> None:
    runner = integration.verl_task_runner()
    assert hasattr(runner, "__ray_actor_class__")  # @ray.remote: not a class to subclass
    with pytest.raises(TypeError):
        type("Direct", (runner,), {})  # the metaclass conflict the integration avoids
    cls = integration.task_runner_class()
    assert issubclass(cls, runner.__ray_actor_class__)
    assert "run" in vars(cls)
    actor = integration.remote_task_runner()
    assert hasattr(actor, "remote") and actor.__ray_actor_class__ is not None


def test_advisor_task_runner_imports_on_this_verl() -> None:
    from advisor.integrations.verl import AdvisorTaskRunner

    assert hasattr(AdvisorTaskRunner, "remote")


def test_the_legacy_runner_is_wrapped_too() -> None:
    v0 = pytest.importorskip("verl.trainer.main_ppo_v0", exc_type=ImportError)
    cls = integration.task_runner_class(v0.TaskRunner)
    assert issubclass(cls, integration.actor_base(v0.TaskRunner))


def test_install_reaches_the_v1_trainers_own_binding() -> None:
    trainer_base = pytest.importorskip("verl.trainer.ppo.v1.trainer_base", exc_type=ImportError)
    tracking = importlib.import_module("verl.utils.tracking")
    original = tracking.Tracking
    hook = Hook(Advisor())
    undo = integration.install(hook)
    try:
        assert trainer_base.Tracking is tracking.Tracking is not original
        assert issubclass(trainer_base.Tracking, original)
        logger = trainer_base.Tracking("p", "e", default_backend=[])  # as fit() builds it
        for step, data in enumerate(_steps(5), start=1):
            logger.log(data=data, step=step)
    finally:
        undo()
    assert trainer_base.Tracking is original and tracking.Tracking is original
    assert hook.advisor.steps == 5 and hook.advisor.last_step == 5


def test_a_run_inside_the_runner_reports_in_verl_names(tmp_path: Path) -> None:
    trainer_base = pytest.importorskip("verl.trainer.ppo.v1.trainer_base", exc_type=ImportError)
    from omegaconf import OmegaConf

    cfg = OmegaConf.create(
        {
            "trainer": {"default_local_dir": str(tmp_path), "test_freq": 10, "save_freq": 20},
            "actor_rollout_ref": {
                "actor": {"optim": {"lr": 1e-6}, "use_kl_loss": True, "kl_loss_coef": 0.001},
                "rollout": {"n": 8},
            },
            "algorithm": {"adv_estimator": "grpo"},
        }
    )

    def fit(config: object) -> None:  # what the V1 trainer's fit() does with Tracking
        logger = trainer_base.Tracking("p", "e", default_backend=[])
        for step, data in enumerate(_steps(120), start=1):
            logger.log(data=data, step=step)

    hook = integration.make_hook(cfg)
    integration.run_with_advisor(fit, cfg, hook)
    report = tmp_path / integration.REPORT_NAME
    assert report.is_file() and report.with_suffix(".json").is_file()
    import json

    d = json.loads(report.with_suffix(".json").read_text())
    assert d["framework"] == "verl" and d["run"]["framework"] == "verl"
    assert d["run"]["steps"] == 120
