"""transformers / TRL: `AdvisorCallback`, a `TrainerCallback` that judges the run as it logs.

    from advisor.integrations.transformers import AdvisorCallback
    trainer = GRPOTrainer(..., callbacks=[AdvisorCallback(config="job.yaml", stop_on="error")])

`on_log` feeds every log dict (train and eval) to the Advisor at `state.global_step`; new
findings go to the `rl_advisor` logger; with `stop_on="error"` an error-severity finding sets
`control.should_training_stop`. At train end the report is written into `args.output_dir`
(`rl-advisor-report.md` and `.json`) by the world's process zero.

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
from advisor.types import Finding, RunEnding

REPORT_NAME = "rl-advisor-report.md"


RUN_FILE = "rl-advisor-run.json"  # what the live run knew, for a later `diagnose OUTPUT_DIR`


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

    data = {
        "framework": "trl" if hasattr(args, "num_generations") else "transformers",
        "hints": _json_safe(dict(hints)),
        "training_arguments": _json_safe(_arguments(args)),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
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
