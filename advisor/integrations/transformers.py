"""transformers / TRL: `AdvisorCallback`, a `TrainerCallback` that judges the run as it logs.

    from advisor.integrations.transformers import AdvisorCallback
    trainer = GRPOTrainer(..., callbacks=[AdvisorCallback(config="job.yaml", stop_on="error")])

`on_log` feeds every log dict (train and eval) to the Advisor at `state.global_step`; new
findings go to the `rl_advisor` logger; with `stop_on="error"` an error-severity finding sets
`control.should_training_stop`. At train end the report is written into `args.output_dir`
(`rl-advisor-report.md` and `.json`) by the world's process zero. At train begin it leaves there
what the run knew (`rl-advisor-run.json`) and, for a TRL config, a resubmittable job file
(`rl-advisor-job.yaml`, see `write_job_file`) that `rl-advisor diagnose OUTPUT_DIR
--patched-config NEXT.yaml` patches and `trl grpo --config NEXT.yaml` trains from.

Importing this module imports transformers (the `transformers` extra); `import advisor` does not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from advisor.dialect import trl_hints
from advisor.integrations.hook import Hook
from advisor.online import Advisor
from advisor.resources import write_text_atomic
from advisor.types import JOB_FILE, RUN_FILE, Finding, RunEnding

REPORT_NAME = "rl-advisor-report.md"



# Arguments that name this machine's folders or secrets: never in a resubmittable job file.
_MACHINE = frozenset({
    "output_dir", "logging_dir", "run_name", "resume_from_checkpoint", "hub_token",
    "hub_model_id", "push_to_hub_token", "push_to_hub_model_id", "push_to_hub_organization",
    "deepspeed", "fsdp_config", "accelerator_config", "torch_compile_backend",
})  # fmt: skip
# Sampling and clipping settings the advice may name besides the name table's keys.
# The GRPOConfig keys the advice's changes land on (the name table's TRL keys for the learning
# rate, beta, group size, length cap and algorithm, and the sampling and clipping settings):
# stated even at their defaults, so the job file shows what a patch changes.
_ADVISED = frozenset({
    "learning_rate", "beta", "num_generations", "max_completion_length", "loss_type",
    "importance_sampling_level", "epsilon", "epsilon_high", "temperature", "top_p",
    "max_grad_norm",
})  # fmt: skip


def _arguments(args: Any) -> dict[str, Any]:
    """TrainingArguments / GRPOConfig as a plain mapping (its dataclass fields)."""

    if dataclasses.is_dataclass(args):
        return {f.name: getattr(args, f.name, None) for f in dataclasses.fields(args)}
    return dict(vars(args)) if hasattr(args, "__dict__") else {}


def hints_from_args(args: Any) -> dict[str, Any]:
    """Platform hyperparameters that TrainingArguments / TRL's GRPOConfig reveal, plus the
    framework ("trl") and the TRL settings the advice is said with (the name table's
    `advisor.dialect.trl_hints`, which reads a TRL config file the same way).

    Only what maps one to one (names of knowledge.md §2.1); what would need a guess (prompts
    per step depends on the world size) is left out, so the report says it is unknown.
    """

    return trl_hints(_arguments(args))


def _json_safe(value: Any) -> Any:
    value = getattr(value, "value", value)  # enums
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    return str(value)


def write_run_file(args: Any, hints: Mapping[str, Any], path: Path) -> Path:
    """Leave in the output dir what the live run knew (its arguments, the framework, the hints
    the Advisor judged with), so `rl-advisor diagnose OUTPUT_DIR` judges as it did. JSON, not
    the pickle transformers writes (training_args.bin is never loaded)."""

    out_dir = str(getattr(args, "output_dir", "") or "")
    arguments = {
        k: v
        for k, v in _arguments(args).items()
        if k not in _MACHINE and not (out_dir and isinstance(v, str) and out_dir in v)
    }  # the run's settings, not this machine's folders or secrets
    data = {
        "framework": "trl" if hasattr(args, "num_generations") else "transformers",
        "hints": _json_safe(dict(hints)),
        "training_arguments": _json_safe(arguments),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def _plain(value: Any) -> bool:
    """A value a YAML job file can hold as written: a scalar, or a list of scalars."""
    if value is None or isinstance(value, bool | int | float | str):
        return True
    return isinstance(value, list | tuple) and all(
        v is None or isinstance(v, bool | int | float | str) for v in value
    )


def _declared_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return getattr(f.default, "value", f.default)
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


@contextlib.contextmanager
def _accelerate_state_kept() -> Iterator[None]:
    """Building a TrainingArguments sets up its devices, which resets accelerate's shared
    state under the running Trainer's feet: put the state back as it was afterwards."""
    try:
        from accelerate.state import AcceleratorState, GradientState, PartialState
    except Exception:  # no accelerate: nothing shared to keep
        yield
        return
    shared = [c._shared_state for c in (PartialState, AcceleratorState, GradientState)]
    saved = [dict(s) for s in shared]
    try:
        yield
    finally:
        for s, kept in zip(shared, saved, strict=True):
            s.clear()
            s.update(kept)


def _without_derived(
    build: Callable[[Mapping[str, Any]], Any], kept: dict[str, Any], declared: Mapping[str, Any]
) -> dict[str, Any]:
    """`kept` without the arguments `build` derives from the rest: first those declared with a
    value (the user's kind), then any other the build does not reproduce, then each one whose
    removal still reproduces it. `kept` itself when a build refuses or the result differs."""

    def made(given: Mapping[str, Any]) -> dict[str, Any] | None:
        try:
            obj = build(given)
        except Exception:  # the class refuses this combination
            return None
        return {k: _json_safe(getattr(obj, k, None)) for k in kept}

    chosen = {k: v for k, v in kept.items() if declared[k] is not None}
    got = made(chosen)
    if got is None:
        return kept
    chosen |= {k: v for k, v in kept.items() if got[k] != v}
    for k in list(chosen):
        rest = {n: v for n, v in chosen.items() if n != k}
        if (again := made(rest)) is not None and again == kept:
            chosen = rest
    return chosen if made(chosen) == kept else kept


def job_arguments(args: Any) -> dict[str, Any]:
    """The arguments of a TrainingArguments / GRPOConfig dataclass as a job file states them:
    those the run set to other than the class's declared default, without the ones its
    `__post_init__` derives from the rest (dropped when building the class without them gives
    the same value: TRL's generation_batch_size, transformers' report_to list), plus the keys
    the advice may change at their values, and never a machine path (_MACHINE, or a string
    naming the output folder)."""
    import warnings

    cls = type(args)
    fields = {f.name: f for f in dataclasses.fields(args) if f.init}
    out_dir = str(getattr(args, "output_dir", "") or "")
    values = {k: _json_safe(getattr(args, k, None)) for k in fields}

    def machine(k: str, v: Any) -> bool:
        return k in _MACHINE or bool(out_dir and isinstance(v, str) and out_dir in v)

    declared = {k: _json_safe(_declared_default(f)) for k, f in fields.items()}
    kept = {
        k: v for k, v in values.items()
        if _plain(v) and not machine(k, v) and v != declared[k]
    }  # fmt: skip

    def build(given: Mapping[str, Any]) -> Any:
        with warnings.catch_warnings(), _accelerate_state_kept():
            warnings.simplefilter("ignore")
            return cls(**given)

    kept = _without_derived(build, kept, declared)
    for k in sorted(_ADVISED & set(fields)):
        if k not in kept and values[k] is not None and _plain(values[k]):
            kept[k] = values[k]
    return {k: kept[k] for k in fields if k in kept}  # the class's field order


_YAML11_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", ""})


def write_job_file(args: Any, path: Path) -> Path:
    """Leave a job file that `trl grpo --config` reads and `rl-advisor diagnose OUTPUT_DIR
    --patched-config` patches: the run's GRPOConfig arguments as `job_arguments` states them
    (the model and the data are the script's arguments, not GRPOConfig's: add them to run)."""
    from io import StringIO

    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    def said(v: Any) -> Any:  # `no` is false to YAML 1.1 readers (PyYAML, TRL's parser)
        if isinstance(v, str) and v.lower() in _YAML11_WORDS:
            return DoubleQuotedScalarString(v)
        return [said(x) for x in v] if isinstance(v, list | tuple) else v

    yaml = YAML(typ="rt")  # keeps the class's field order
    yaml.default_flow_style = False
    body = StringIO()
    yaml.dump({k: said(v) for k, v in job_arguments(args).items()}, body)
    head = (
        f"# {type(args).__name__} arguments of this run that differ from the defaults, plus the\n"
        "# ones rl-advisor's advice may change; no machine paths (give --output_dir, the model\n"
        "# and the dataset when resubmitting: trl grpo --config THIS_FILE ...).\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, head + body.getvalue())
    return path


class AdvisorCallback(TrainerCallback):  # type: ignore[misc]
    """A TrainerCallback that feeds `on_log` to an Advisor; see the module doc."""

    def __init__(
        self,
        advisor: Advisor | None = None,
        *,
        config: str | Path | None = None,
        sets: Sequence[str] = (),
        hyper_parameters: Mapping[str, Any] | None = None,
        stop_on: str | None = None,
        report_name: str | None = REPORT_NAME,
        hints_from_trainer: bool = True,
        on_finding: Callable[[Finding], None] | None = None,
        alerts: Any = None,
    ) -> None:
        if advisor is None:
            advisor = (
                Advisor.from_config(config, sets=sets, hyper_parameters=hyper_parameters)
                if config is not None
                else Advisor(hyper_parameters=hyper_parameters, sets=sets, source="transformers")
            )
        self.advisor = advisor
        # alerts: Slack, Discord, a webhook, email (an alerts file, advisor.alerts.Alerter or
        # its keywords); every process of a distributed run judges, only process zero delivers
        self.hook = Hook(advisor, stop_on=stop_on, on_finding=on_finding, alerts=alerts)
        self.report_name = report_name
        self.hints_from_trainer = hints_from_trainer
        self.report_path: Path | None = None
        self.args: Any = None  # the TrainingArguments, from on_train_begin

    @property
    def findings(self) -> list[Finding]:
        return self.advisor.findings

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.args = args
        if not getattr(state, "is_world_process_zero", True):
            self.hook.alerts = None  # its thread starts with its first message: none started
        hints = hints_from_args(args) if self.hints_from_trainer else {}
        if hints and self.advisor.steps == 0:
            max_steps = getattr(state, "max_steps", 0) or None
            # RuntimeError: already judging (observe came first): keep the thresholds it has
            with contextlib.suppress(RuntimeError):
                self.advisor.add_hints(hints, expected_steps=max_steps)
        out_dir = getattr(args, "output_dir", None)
        if out_dir and getattr(state, "is_world_process_zero", True) and self.report_name:
            try:  # never break training over the advisor's own file
                write_run_file(args, hints, Path(out_dir) / RUN_FILE)
            except Exception as err:
                self.hook._error("run file", err)
            if hasattr(args, "num_generations") and dataclasses.is_dataclass(args):  # TRL's
                try:
                    write_job_file(args, Path(out_dir) / JOB_FILE)
                except Exception as err:
                    self.hook._error("job file", err)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kw: Any
    ) -> None:
        if not logs or "train_runtime" in logs:
            return  # the end-of-training summary repeats the last step: not a step's metrics
        is_eval = any(str(k).startswith("eval_") for k in logs)
        # The Trainer logs training, then evaluates at the same step when should_evaluate is
        # set: hold the training log so both are judged as one row, as a reader merges them.
        partial = not is_eval and bool(getattr(control, "should_evaluate", False))
        self.hook(state.global_step, logs, partial=partial)
        if self.hook.stop:
            control.should_training_stop = True

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.hook.flush()  # an evaluation that logged nothing must not hold the step back
        if self.hook.stop:
            control.should_training_stop = True

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.hook.close(self._ending(state))
        if not getattr(state, "is_world_process_zero", True) or self.report_name is None:
            return
        out_dir = getattr(args, "output_dir", None)
        if out_dir:
            self.hook.report_path = Path(out_dir) / self.report_name
            self.report_path = self.hook.write()

    def failed(self, err: BaseException, state: Any = None) -> Path | None:
        """Close the run as failed by `err` and write its report (a TrainerCallback never
        sees an exception raised inside train(): `reporting` calls this)."""
        step = int(getattr(state, "global_step", 0) or 0) if state is not None else None
        message = f"{type(err).__name__}: {err}"[:300]
        self.hook.close(
            RunEnding(kind="failed", step=step or self.advisor.last_step, message=message)
        )
        out_dir = getattr(getattr(self, "args", None), "output_dir", None)
        if not out_dir or self.report_name is None:
            return None
        if state is not None and not getattr(state, "is_world_process_zero", True):
            return None
        self.hook.report_path = Path(out_dir) / self.report_name
        self.report_path = self.hook.write()
        return self.report_path

    def _ending(self, state: Any) -> RunEnding:
        step = int(getattr(state, "global_step", 0) or 0)
        stopper = self.hook.stopped_by
        if stopper is not None:
            why = f"training stopped by rl-advisor on {stopper.id} ({stopper.name})"
            return RunEnding(kind="killed", step=step, message=why)
        max_steps = getattr(state, "max_steps", 0) or 0
        if max_steps and step >= max_steps:
            return RunEnding(kind="completed", step=step, message="reached max_steps")
        return RunEnding(kind="unknown", step=step)


def _callback_of(trainer: Any) -> AdvisorCallback | None:
    handler = getattr(trainer, "callback_handler", None)
    for cb in getattr(handler, "callbacks", []) or []:
        if isinstance(cb, AdvisorCallback):
            return cb
    return None


@contextlib.contextmanager
def reporting(trainer: Any) -> Iterator[AdvisorCallback]:
    """Report a run whose training raises: inside the block, an exception closes the run as
    failed, writes the report into the output dir, and is raised again.

        with reporting(trainer):
            trainer.train()

    The trainer must hold an AdvisorCallback (one is added if it has none)."""
    cb = _callback_of(trainer)
    if cb is None:
        cb = AdvisorCallback()
        trainer.add_callback(cb)
    try:
        yield cb
    except BaseException as err:
        if getattr(cb, "args", None) is None:
            cb.args = getattr(trainer, "args", None)
        try:
            cb.failed(err, getattr(trainer, "state", None))
        except Exception as report_err:  # the training error is what the caller must see
            cb.hook._error("failure report", report_err)
        raise


def train(trainer: Any, **kwargs: Any) -> Any:
    """`trainer.train(**kwargs)` with the report written even when it raises (`reporting`)."""
    with reporting(trainer):
        return trainer.train(**kwargs)
