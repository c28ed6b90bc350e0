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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from advisor.integrations.hook import Hook
from advisor.online import Advisor
from advisor.types import Finding, RunEnding

REPORT_NAME = "rl-advisor-report.md"


def _value(x: Any) -> Any:
    return getattr(x, "value", x)  # transformers' enums (SchedulerType, SaveStrategy) -> str


def hints_from_args(args: Any) -> dict[str, Any]:
    """Platform hyperparameters that TrainingArguments / TRL's GRPOConfig reveal.

    Only what maps one to one (names of knowledge.md §2.1); what would need a guess (prompts
    per step depends on the world size) is left out, so the report says it is unknown.
    """
    g = lambda name: getattr(args, name, None)  # noqa: E731
    hints: dict[str, Any] = {
        "learning_rate": g("learning_rate"),
        "n_rollouts": g("num_generations"),  # TRL GRPO: completions per prompt
        "kl_loss_coef": g("beta"),  # TRL GRPO: the KL coefficient
        "max_prompt_length": g("max_prompt_length"),
        "lr_warmup_steps": g("warmup_steps") or None,
        "save_total_limit": g("save_total_limit"),
    }
    epochs = g("num_train_epochs")
    if (
        isinstance(epochs, (int, float))
        and float(epochs).is_integer()
        and g("max_steps")
        in (
            None,
            -1,
        )
    ):
        hints["n_epochs"] = int(epochs)
    sched = _value(g("lr_scheduler_type"))
    if sched in ("cosine", "linear", "constant"):
        hints["lr_scheduler_type"] = sched
    save = _value(g("save_strategy"))
    if save in ("steps", "epoch", "no"):
        hints["save_strategy"] = save
        if save == "steps" and isinstance(g("save_steps"), int):
            hints["save_steps"] = g("save_steps")
    if _value(g("eval_strategy")) == "steps":
        every = g("eval_steps") or g("logging_steps")
        if isinstance(every, int) or (isinstance(every, float) and every >= 1):
            hints["eval_steps"] = int(every)
    prompt, completion = g("max_prompt_length"), g("max_completion_length")
    if isinstance(prompt, int) and isinstance(completion, int) and prompt and completion:
        hints["max_length"] = prompt + completion
    algo = _algorithm(args)
    if algo:
        hints["algorithm"] = algo
    return {k: v for k, v in hints.items() if v is not None}


def _algorithm(args: Any) -> str | None:
    """GSPO is TRL's sequence-level importance sampling; Clip-Higher (epsilon_high above
    epsilon) marks DAPO (knowledge.md §3); a GRPOConfig without either is GRPO."""
    if not hasattr(args, "num_generations"):
        return None  # not a GRPO trainer
    if getattr(args, "importance_sampling_level", None) == "sequence":
        return "gspo"
    eps, eps_high = getattr(args, "epsilon", None), getattr(args, "epsilon_high", None)
    if isinstance(eps, float) and isinstance(eps_high, float) and eps_high > eps:
        return "dapo"
    return "grpo"


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
    ) -> None:
        if advisor is None:
            advisor = (
                Advisor.from_config(config, sets=sets, hyper_parameters=hyper_parameters)
                if config is not None
                else Advisor(hyper_parameters=hyper_parameters, sets=sets, source="transformers")
            )
        self.advisor = advisor
        self.hook = Hook(advisor, stop_on=stop_on, on_finding=on_finding)
        self.report_name = report_name
        self.hints_from_trainer = hints_from_trainer
        self.report_path: Path | None = None

    @property
    def findings(self) -> list[Finding]:
        return self.advisor.findings

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.hints_from_trainer and self.advisor.steps == 0:
            max_steps = getattr(state, "max_steps", 0) or None
            # RuntimeError: already judging (observe came first): keep the thresholds it has
            with contextlib.suppress(RuntimeError):
                self.advisor.add_hints(hints_from_args(args), expected_steps=max_steps)

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
