"""verl: judge the run inside verl's Ray actor, where its trainer logs.

verl has no callback registry; its trainer's `fit()` runs in the TaskRunner Ray actor and logs
every step through `verl.utils.tracking.Tracking.log(data, step, backend=None)`. Where the
trainer finds that class differs by release (checked against the installed verl 0.9.1): the V1
trainer (`verl.trainer.ppo.v1.trainer_base`, the default with `trainer.use_v1: true`) binds
`Tracking` when it is imported; the legacy `RayPPOTrainer` (verl/trainer/ppo/ray_trainer.py,
run by `main_ppo_v0.TaskRunner`, and by `main_ppo.TaskRunner` before 0.9) imports it inside
`fit()`. Both task runners are `@ray.remote` actor classes already: a subclass of one is a
metaclass conflict, so the advisor subclasses the class underneath (`__ray_actor_class__`) and
makes its own actor of it. Two routes follow:

1. `AdvisorTaskRunner`: the actor class for `run_ppo(config, task_runner_class=...)`. In the
   actor it builds the Advisor (hints from verl's own config), puts a `Tracking` subclass in
   place wherever the trainers look it up, runs the normal TaskRunner, and writes the report
   into `trainer.default_local_dir` when training ends (or fails).
2. `install(hook)`: the same `Tracking` patch, for code that drives a verl trainer itself.

The sidecar route needs no code in the job: `rl-advisor watch <file logger's JSONL or console
log> --config job.yaml` (see docs/online.md).

Nothing here imports verl, Ray or OmegaConf at module level.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from advisor.dialect import verl_facts
from advisor.ingest.hints import verl_hints
from advisor.integrations.hook import Hook
from advisor.online import Advisor
from advisor.types import Finding, RunEnding

REPORT_NAME = "rl-advisor-report.md"
ENV_CONFIG = "RL_ADVISOR_CONFIG"  # job.yaml for the Advisor inside the actor
ENV_STOP_ON = "RL_ADVISOR_STOP_ON"  # "error" stops training on an error-severity finding
ENV_REPORT = "RL_ADVISOR_REPORT"  # where to write the report (default: the checkpoint dir)
ENV_ALERTS = "RL_ADVISOR_ALERTS"  # an alerts file (advisor.alerts): Slack, Discord, email


class TrainingStopped(RuntimeError):
    """Raised from Tracking.log when a finding at or above `stop_on` fired (opt-in): verl has
    no stop flag, so ending the fit loop with an exception is how a hook stops it."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(
            f"rl-advisor stopped training at {finding.id} ({finding.name}, "
            f"{finding.severity.value}) onset step {finding.onset_step}"
        )
        self.finding = finding


def tracking_class(base: Any, hook: Hook, *, raise_on_stop: bool = True) -> type:
    """A subclass of verl's `Tracking` whose `log` also feeds `hook` (after the real backends
    logged, so a failing advisor can never lose a metric)."""

    def log(self: Any, data: Mapping[str, Any], step: int, backend: Any = None) -> None:
        base.log(self, data=data, step=step, backend=backend)
        if backend is not None:
            return  # a call aimed at some backends only (e.g. tables): not a step's metrics
        hook(step, data)
        if raise_on_stop and hook.stop and hook.stopped_by is not None:
            raise TrainingStopped(hook.stopped_by)

    return type("AdvisorTracking", (base,), {"log": log, "__module__": __name__})


# Modules that bind `Tracking` at import (verl 0.9's V1 trainer): imported before patching,
# so their binding is replaced too. A module a release lacks is skipped.
BINDERS = ("verl.trainer.ppo.v1.trainer_base",)


def install(hook: Hook, module: Any = None, *, raise_on_stop: bool = True) -> Callable[[], None]:
    """Replace verl's `Tracking` by a subclass that feeds `hook`, wherever it is looked up:
    `verl.utils.tracking` (the legacy trainer imports it from there inside `fit()`) and every
    loaded module that bound the original at import (the V1 trainer). Returns the undo.

    Install before `fit()`, in the same process (inside the TaskRunner actor)."""

    if module is None:
        module = importlib.import_module("verl.utils.tracking")
        for name in BINDERS:
            try:
                importlib.import_module(name)
            except ImportError:  # not in this release, or its own imports are missing
                continue
    original = module.Tracking
    patched = tracking_class(original, hook, raise_on_stop=raise_on_stop)
    bound = [module] + [
        m
        for m in list(sys.modules.values())
        if m is not None and m is not module and getattr(m, "Tracking", None) is original
    ]
    for m in bound:
        m.Tracking = patched

    def undo() -> None:
        for m in bound:
            if getattr(m, "Tracking", None) is patched:
                m.Tracking = original

    return undo


def _plain(cfg: Any) -> Any:
    """verl's OmegaConf config as plain dicts (what its console log prints and readers parse)."""
    if hasattr(cfg, "_metadata"):  # an OmegaConf DictConfig, without importing omegaconf here
        from omegaconf import OmegaConf

        return OmegaConf.to_container(cfg, resolve=True)
    return cfg


def _get(cfg: Any, dotted: str) -> Any:
    node = cfg
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def hints_from_verl(cfg: Any) -> dict[str, Any]:
    """Platform hyperparameters verl's config reveals: the mapping the console-log reader
    applies to the config verl prints (`advisor.ingest.hints.verl_hints`), so the hook and diagnose
    read one config alike."""

    plain = _plain(cfg)
    return {**verl_hints(plain), **verl_facts(plain)} if isinstance(plain, Mapping) else {}


def _report_path(cfg: Any) -> Path | None:
    explicit = os.environ.get(ENV_REPORT)
    if explicit:
        return Path(explicit)
    out = _get(_plain(cfg), "trainer.default_local_dir")
    return Path(str(out)) / REPORT_NAME if out else None


def make_hook(cfg: Any, config_path: str | None = None, stop_on: str | None = None) -> Hook:
    """The Hook a TaskRunner uses: rl-advisor's job.yaml if given, verl's config as hints."""
    config_path = config_path or os.environ.get(ENV_CONFIG)
    stop_on = stop_on or os.environ.get(ENV_STOP_ON)
    hints = hints_from_verl(cfg)
    steps = hints.get("total_training_steps")
    kwargs: dict[str, Any] = {"hints": hints, "source": "verl", "format": "verl"}
    kwargs["expected_steps"] = steps if isinstance(steps, int) else None
    adv = Advisor.from_config(config_path, **kwargs) if config_path else Advisor(**kwargs)
    hook = Hook(adv, stop_on=stop_on, report_path=_report_path(cfg))
    if os.environ.get(ENV_ALERTS):
        try:  # a bad alerts file is said once; the run goes on without alerts
            from advisor.alerts import alerter_from

            hook.alerts = alerter_from(os.environ[ENV_ALERTS], run=adv.source)
        except Exception as err:
            hook._error("alerts", err)
    return hook


def run_with_advisor(run: Callable[[Any], Any], cfg: Any, hook: Hook) -> Any:
    """Run `run(cfg)` (a TaskRunner's run) with Tracking patched; close and report after."""
    undo = install(hook)
    try:
        result = run(cfg)
    except TrainingStopped as stop:
        hook.finish(RunEnding(kind="killed", step=stop.finding.onset_step, message=str(stop)))
        raise
    except BaseException as err:
        hook.finish(RunEnding(kind="failed", message=f"{type(err).__name__}: {err}"[:300]))
        raise
    finally:
        undo()
    hook.finish(RunEnding(kind="completed", step=hook.advisor.last_step))
    return result


def actor_base(runner: Any) -> type:
    """The plain class under a Ray actor class (`@ray.remote class TaskRunnerV1`); a plain
    class as it is."""
    inner = getattr(runner, "__ray_actor_class__", None)
    if isinstance(inner, type):
        return inner
    meta = getattr(runner, "__ray_metadata__", None)
    modified = getattr(meta, "modified_class", None)
    if isinstance(modified, type):
        return modified
    if isinstance(runner, type):
        return runner
    raise TypeError(f"{runner!r} is neither a class nor a Ray actor class")


def verl_task_runner() -> Any:
    """The task runner verl itself starts: `main_ppo.TaskRunnerV1` (verl 0.9), else
    `main_ppo.TaskRunner` (earlier releases)."""

    main = importlib.import_module("verl.trainer.main_ppo")
    for name in ("TaskRunnerV1", "TaskRunner"):
        runner = getattr(main, name, None)
        if runner is not None:
            return runner
    raise ImportError("verl.trainer.main_ppo has neither TaskRunnerV1 nor TaskRunner")


def task_runner_class(base: Any = None) -> type:
    """A TaskRunner subclass (not a Ray actor) whose `run` judges the run as it goes.

    `base`: a task runner class or Ray actor class (default: the one verl starts). For
    `run_ppo`, make an actor of it (`remote_task_runner()` does):

        from verl.trainer.main_ppo import run_ppo
        run_ppo(config, task_runner_class=remote_task_runner())

    Set RL_ADVISOR_CONFIG (job.yaml), RL_ADVISOR_STOP_ON=error, RL_ADVISOR_REPORT and
    RL_ADVISOR_ALERTS (an alerts file, with its secrets' variables) in the Ray runtime env to
    configure it inside the actor.
    """
    parent: Any = actor_base(base if base is not None else verl_task_runner())

    def run(self: Any, config: Any) -> Any:
        hook = make_hook(config)
        return run_with_advisor(lambda c: parent.run(self, c), config, hook)

    return type("AdvisorTaskRunner", (parent,), {"run": run, "__module__": __name__})


def remote_task_runner(base: Any = None, **ray_options: Any) -> Any:
    """`task_runner_class(base)` as a Ray actor class, for `run_ppo(config, task_runner_class=)`
    (`ray_options`, e.g. num_cpus=1, go to `ray.remote`)."""
    import ray  # optional: the user's verl environment provides it

    cls = task_runner_class(base)
    return ray.remote(**ray_options)(cls) if ray_options else ray.remote(cls)


_RUNNER: Any = None


def __getattr__(name: str) -> Any:
    # `from advisor.integrations.verl import AdvisorTaskRunner` imports verl only then.
    global _RUNNER
    if name == "AdvisorTaskRunner":
        if _RUNNER is None:
            _RUNNER = remote_task_runner()
        return _RUNNER
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
