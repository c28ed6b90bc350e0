"""The core types every stage shares: reader -> Run -> detectors -> Finding -> Patch -> Diagnosis.

Pydantic models here are also the JSON contract (`--format json`, schema_version 1 of
`shared/spec/contract.md`): field names are the contract's names; extend, never rename.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # polars is imported lazily at run time; keep `import advisor` light
    import polars as pl

SCHEMA_VERSION = 1

# One setting's value: a job's hyperparameter, a rule's or a detector's parameter. A number, a
# flag or a choice (its string). pydantic keeps each value's own type whatever the order; this
# order is the one the rulebook's exported JSON schemas list.
Scalar = float | int | bool | str

# Canonical metric vocabulary (contract.md "Metric names"); readers map framework names onto it.
CANONICAL_METRICS: tuple[str, ...] = (
    "reward_mean",
    "reward_std",
    "ppo_kl",
    "kl_ref",
    "grad_norm",
    "entropy",
    "truncation_rate",
    "prompt_truncation_rate",
    "response_length",
    "val_reward",
    "pg_clipfrac",
    "lr",
    "step_time",
    "rollout_time",
    "zero_std_frac",
    "loss",
    "vf_loss",  # PPO critic loss (verl critic/vf_loss)
    "critic_grad_norm",  # PPO critic gradient norm (verl critic/grad_norm)
    "gen_batches",  # DAPO dynamic sampling: generation rounds per step (verl train/num_gen_batches)
    "terminated_length",  # TRL completions/mean_terminated_length
    "clip_low",  # TRL clip_ratio/low_mean
    "clip_high",  # TRL clip_ratio/high_mean
    "memory_gb",  # verl perf/max_memory_allocated_gb
    "rollout_probs_diff",  # verl training/rollout_probs_diff_mean
    "aborted_ratio",  # verl response/aborted_ratio
)


class InputError(Exception):
    """Unusable input or call: the CLI prints `str(err)` as one line and exits 2.

    The message must name the file, the place (line, field, key) and what was expected. It is
    kept on one printable line whatever it quotes: line breaks (of any kind) become spaces,
    other control characters `?`, and lone surrogates U+FFFD (they cannot be written out).
    """

    def __init__(self, *args: object) -> None:
        if len(args) == 1 and isinstance(args[0], str):
            args = (_printable_line(args[0]),)
        super().__init__(*args)


_UNPRINTABLE = re.compile("[\x00-\x08\x0e-\x1f\x7f]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """`text` with each lone surrogate (an escape like \\ud800 read from JSON or YAML) as
    U+FFFD: such a string cannot be written out as UTF-8."""
    return _SURROGATES.sub("\ufffd", text) if _SURROGATES.search(text) else text


def _int(value: object) -> int | None:
    """A polars aggregate (typed as any literal) as an int, if it is a number."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _printable_line(text: str) -> str:
    text = " ".join(text.splitlines()) if len(text.splitlines()) > 1 else text
    text = _UNPRINTABLE.sub("?", text.replace("\t", " ").replace("\n", " ").replace("\r", " "))
    return _SURROGATES.sub("\ufffd", text)


class Severity(StrEnum):
    info = "info"
    warning = "warning"
    error = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


class _Model(BaseModel):
    """Mutable defaults (`= []`, `= {}`) are safe: pydantic copies them for each instance. (A
    `default_factory=list` costs more: pydantic inspects the factory's signature when it builds
    the model, through the tokenizer for a builtin.)"""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class Evidence(_Model):
    """What one detector saw on one metric."""

    metric: str
    detector: str
    window: tuple[int, int]  # first and last step the statistic covers
    statistic: dict[str, Any] = {}
    effect_size: float | None = None
    summary: str  # one sentence a person can check against the curve


class FrameworkKey(_Model):
    """A change as the run's framework names it: a TRL GRPOConfig field or a verl Hydra key,
    with the framework's own values (verl's response cap, not the guide's prompt + response)."""

    key: str
    from_: Any = Field(default=None, alias="from", serialization_alias="from")
    to: Any = None
    note: str | None = None
    assumed: bool = False  # `from` was not given by the user nor shown by the run


class Change(_Model):
    """One hyperparameter change of an action, after clamping and coupling repair."""

    param: str
    from_: Any = Field(default=None, alias="from", serialization_alias="from")
    to: Any = None
    op: Literal["multiply", "add", "set"] = "set"
    factor: float | None = None
    note: str | None = None  # e.g. "clamped to 1e-5", "repaired coupling ppo_mini_batch_size"
    # `from` is an assumed value (the platform default), not the user's nor the run's
    assumed: bool = False
    # the same change in the run's framework (empty for the platform's job)
    framework_keys: list[FrameworkKey] = []


class Action(_Model):
    kind: Literal["primary", "fallback", "advice"] = "primary"
    advice: str
    changes: list[Change] = []
    safety: Literal["safe", "unsafe", "display_only"] = "unsafe"


class Finding(_Model):
    """A run-time symptom rule that fired."""

    id: str
    name: str
    severity: Severity
    confidence: Literal["low", "medium", "high"] = "medium"
    priority: int = 100  # lower = more urgent; the patch follows the top one
    strength: float = 0.5  # 0..1 from the evidence's effect size; picks the factor in a range
    onset_step: int | None = None
    detected_step: int | None = None  # the step at which the evidence became conclusive
    cleared_step: int | None = None  # set when the symptom went away again
    # set when the episode was over before the run's end (cleared and stayed clear): its
    # severity is then info and this keeps the severity it had while active
    recovered_from: Severity | None = None
    evidence: list[Evidence] = []
    causes: list[str] = []
    action: Action | None = None
    fallback: Action | None = None
    why: str = ""
    source: str = ""  # knowledge.md line or public source


class ConfigFinding(_Model):
    """A static-rule finding about the job config itself."""

    id: str
    name: str = ""
    severity: Severity
    confidence: Literal["low", "medium", "high"] = "high"
    params: list[str] = []
    message: str
    why: str = ""
    suggested: Any = None
    line: int | None = None  # line of the job file the finding points at, when known


class RunEnding(_Model):
    """How the run ended, as far as its log says."""

    kind: Literal[
        "completed", "oom", "nccl", "traceback", "disk_full", "killed", "failed", "unknown"
    ] = "unknown"
    step: int | None = None
    line: int | None = None
    message: str = ""


class RunInfo(_Model):
    """The `run` block of the JSON output."""

    source: str
    format: str
    steps: int
    first_step: int | None
    last_step: int | None
    metrics: list[str]
    config_hints: dict[str, Any] = {}
    ending: RunEnding | None = None
    warnings: list[str] = []
    framework: str = "platform"  # whose log it is: platform, trl, verl, openrlhf


@dataclass(frozen=True)
class Run:
    """A training run as read from disk: one row per step, sorted by `step`.

    `frame` has an Int64 `step` column, the canonical columns that were found, and every original
    column under its own name. NaN/inf are kept (evidence); missing values are null.
    """

    frame: pl.DataFrame
    source: str
    format: str
    config_hints: dict[str, Any] = field(default_factory=dict)  # platform hyperparameter names
    ending: RunEnding | None = None
    warnings: list[str] = field(default_factory=list)
    # (count, first, last) of the training steps, when some rows hold only an evaluation (verl's
    # validation at step 0): those rows stay in `frame` but are no steps of the run
    training: tuple[int, int, int] | None = None

    @property
    def steps(self) -> int:
        return self.training[0] if self.training is not None else self.frame.height

    def info(self) -> RunInfo:
        steps = self.frame["step"] if "step" in self.frame.columns else None
        present = [c for c in CANONICAL_METRICS if c in self.frame.columns]
        first = _int(steps.min()) if steps is not None and self.frame.height else None
        last = _int(steps.max()) if steps is not None and self.frame.height else None
        if self.training is not None:
            _, first, last = self.training
        return RunInfo(
            source=self.source,
            format=self.format,
            steps=self.steps,
            first_step=first,
            last_step=last,
            metrics=present,
            config_hints=self.config_hints,
            ending=self.ending,
            warnings=list(self.warnings),
        )


class Patch(_Model):
    from_finding: str | None = None
    kind: Literal["primary", "fallback", "none"] = "none"
    changes: list[Change] = []
    # the patched set: the values the user gave or the run showed, plus the change; never an
    # assumed value (those are listed in `assumed`)
    hyper_parameters: dict[str, Any] = {}
    notes: list[str] = []
    assumed: list[str] = []  # parameters whose value the change starts from was assumed
    framework: str = "platform"  # whose names `settings` and `override` use
    settings: dict[str, Any] = {}  # the change in the framework's names (key -> new value)
    override: str | None = None  # verl: Hydra overrides to append; TRL: GRPOConfig keywords


class Diagnosis(_Model):
    """Everything known about one run: the only input the renderers take (JSON schema v1)."""

    schema_version: int = SCHEMA_VERSION
    tool: dict[str, str] = Field(default_factory=lambda: {"name": "rl-advisor", "version": ""})
    run: RunInfo | None = None
    status: Literal["healthy", "issues", "insufficient_data"] = "healthy"
    warmup_steps: int | None = None
    findings: list[Finding] = []
    config_findings: list[ConfigFinding] = []
    patch: Patch | None = None
    # Extensions beyond schema v1 (allowed: extend, never break)
    assumptions: list[str] = []  # what was assumed, and what it weakens
    next_steps: list[str] = []
    checkpoint: dict[str, Any] | None = None
    hyper_parameters: dict[str, Any] = {}  # effective, before the patch
    plots: dict[str, str] = {}  # finding id -> image path
    # the patch as a unified diff of the user's own job file (None without --config)
    patch_diff: str | None = None
    framework: str = "platform"  # the dialect every name of the report is said in
    # hyperparameters whose value (in `hyper_parameters`) is an assumption, not known
    assumed_parameters: list[str] = []
    # metric -> (steps, values) the report draws; excluded from the JSON
    series: dict[str, tuple[list[int], list[float | None]]] = Field(default={}, exclude=True)

    def worst(self) -> Severity | None:
        sev = [f.severity for f in self.findings] + [c.severity for c in self.config_findings]
        return max(sev, key=lambda s: s.rank) if sev else None


PathLike = str | Path
