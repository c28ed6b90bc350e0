"""The core types every stage shares: reader -> Run -> detectors -> Finding -> Patch -> Diagnosis.

The result types (Evidence ... Diagnosis) are also the JSON contract (`--format json`,
schema_version 1 of `docs/contract.md`): field names are the contract's names (`from_`
is `from`); extend, never rename.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from enum import Enum, StrEnum
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:  # polars is imported lazily at run time; keep `import advisor` light
    import polars as pl

SCHEMA_VERSION = 1
# What the TRL callback (advisor.integrations.transformers) leaves beside a run: what the live run
# knew, for a later `diagnose OUTPUT_DIR`, and the run's GRPOConfig as `trl grpo --config` reads it
# (the file --patched-config patches when no --config is given).
RUN_FILE = "rl-advisor-run.json"
JOB_FILE = "rl-advisor-job.yaml"

# One setting's value: a job's hyperparameter, a rule's or a detector's parameter. A number, a
# flag or a choice (its string). pydantic, checking a rulebook, keeps each value's own type
# whatever the order; this order is the one their exported JSON schemas list.
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


class _Data:
    """The per-run results: plain data (slotted dataclasses), built by the engine, the remedy
    and the assembler from values of their declared types, so never validated. `to_dict()` is
    the contract's data (`from` for `from_`), `to_json()` its text; `dataclasses.replace`
    copies one with some fields changed. Equality and repr are the dataclass ones, defined
    once here (generating them per class costs a third of this module's import)."""

    __slots__ = ()
    _HIDDEN: ClassVar[frozenset[str]] = frozenset()  # fields kept out of the JSON
    # fields the JSON carries only when set: an extension that most runs do not have (a log
    # that counts epochs) leaves every other run's JSON as it was
    _OMIT_NONE: ClassVar[frozenset[str]] = frozenset()
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        names = _all_fields(type(self))
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in _all_fields(type(self)))
        return f"{type(self).__name__}({shown})"

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract's data: `from` for `from_`, enums as their values, tuples and
        sets as lists, NaN and inf as None (null), fields outside the JSON left out."""
        omit = self._OMIT_NONE
        return {
            _WIRE.get(name, name): _plain(getattr(self, name))
            for name in _fields(type(self))
            if not (name in omit and getattr(self, name) is None)
        }

    def to_json(self, indent: int | None = 2) -> str:
        """`to_dict()` as JSON text (`dumps`)."""
        return dumps(self.to_dict(), indent)


_WIRE = {"from_": "from"}  # Python names that are keywords -> the contract's names
_FIELDS: dict[type, tuple[str, ...]] = {}
_ALL_FIELDS: dict[type, tuple[str, ...]] = {}


def _all_fields(cls: type) -> tuple[str, ...]:
    names = _ALL_FIELDS.get(cls)
    if names is None:
        names = _ALL_FIELDS[cls] = tuple(f.name for f in fields(cls))
    return names


def _fields(cls: type) -> tuple[str, ...]:
    """The fields the JSON carries."""
    names = _FIELDS.get(cls)
    if names is None:
        hidden: frozenset[str] = getattr(cls, "_HIDDEN", frozenset())
        names = _FIELDS[cls] = tuple(n for n in _all_fields(cls) if n not in hidden)
    return names


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value.value if isinstance(value, Enum) else value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, _Data):
        return value.to_dict()
    if isinstance(value, dict):
        return {k.value if isinstance(k, Enum) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, Enum):
        return _plain(value.value)
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"cannot write a {type(value).__name__} as JSON: {value!r}")


def dumps(data: Any, indent: int | None = 2) -> str:
    """JSON text of plain data (`to_dict()`'s): strict JSON (non-finite numbers as null), text
    as UTF-8 (not escaped), a float in its shortest form laid out as Rust's serde_json lays it
    out (`1e-7`, `0.00001`, `1e+16`), the layout of pydantic's writer, which clients of the
    contract may compare against (tests/test_result_types.py checks the two agree)."""
    out: list[str] = []
    if indent is None:
        _write(data, out, "", "", ":")
    else:
        _write(data, out, "\n", " " * indent, ": ")
    return "".join(out)


def _float(x: float) -> str:
    if not math.isfinite(x):
        return "null"
    text = float.__repr__(x)  # shortest round trip, as serde_json's; only the layout differs
    if "e-" in text:
        mantissa, exp = text.split("e-")
        if exp == "05":  # serde_json writes 1e-5 <= |x| < 1e-4 out: 0.00001, 0.000015
            sign = "-" if mantissa[0] == "-" else ""
            return f"{sign}0.0000{mantissa.lstrip('-').replace('.', '')}"
        return f"{mantissa}e-{int(exp)}"
    return text


def _scalar(value: Any) -> str | None:
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    return None


def _key(key: Any) -> str:
    if isinstance(key, str):
        return encode_basestring(key)
    text = _scalar(key)
    if text is None or text.startswith('"'):
        raise TypeError(f"cannot write a {type(key).__name__} as a JSON key: {key!r}")
    return f'"{text}"'


def _write(value: Any, out: list[str], nl: str, step: str, colon: str) -> None:
    """`value` as JSON text onto `out`: each item on a line of its own, indented by `step` a
    level (`nl` the line break and the current indent; both empty: all on one line)."""
    text = _scalar(value)
    if text is not None:
        out.append(text)
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = nl + step
        sep = "{" + inner
        for k, v in value.items():
            out.append(sep)
            out.append(_key(k))
            out.append(colon)
            _write(v, out, inner, step, colon)
            sep = "," + inner
        out.append(nl + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        inner = nl + step
        sep = "[" + inner
        for v in value:
            out.append(sep)
            _write(v, out, inner, step, colon)
            sep = "," + inner
        out.append(nl + "]")
    else:
        _write(_plain(value), out, nl, step, colon)




@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Evidence(_Data):
    """What one detector saw on one metric."""

    metric: str
    detector: str
    window: tuple[int, int]  # first and last step the statistic covers
    statistic: dict[str, Any] = field(default_factory=dict)
    effect_size: float | None = None
    summary: str  # one sentence a person can check against the curve


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class FrameworkKey(_Data):
    """A change as the run's framework names it: a TRL GRPOConfig field or a verl Hydra key,
    with the framework's own values (verl's response cap, not the guide's prompt + response)."""

    key: str
    from_: Any = None  # `from` in the JSON
    to: Any = None
    note: str | None = None
    assumed: bool = False  # `from` was not given by the user nor shown by the run


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Change(_Data):
    """One hyperparameter change of an action, after clamping and coupling repair."""

    param: str
    from_: Any = None  # `from` in the JSON
    to: Any = None
    op: Literal["multiply", "add", "set"] = "set"
    factor: float | None = None
    note: str | None = None  # e.g. "clamped to 1e-5", "repaired coupling ppo_mini_batch_size"
    # `from` is an assumed value (the platform default), not the user's nor the run's
    assumed: bool = False
    # the same change in the run's framework (empty for the platform's job)
    framework_keys: list[FrameworkKey] = field(default_factory=list)


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Action(_Data):
    """What to do about a finding: the settings to change (`changes`) and the advice in words;
    `kind` says whether it is the rule's primary action, its fallback or advice alone."""

    kind: Literal["primary", "fallback", "advice"] = "primary"
    advice: str
    changes: list[Change] = field(default_factory=list)
    safety: Literal["safe", "unsafe", "display_only"] = "unsafe"


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Finding(_Data):
    """A run-time symptom rule that fired."""

    _OMIT_NONE: ClassVar[frozenset[str]] = frozenset(
        {"onset_epoch", "detected_epoch", "cleared_epoch"}
    )

    id: str
    name: str
    severity: Severity
    confidence: Literal["low", "medium", "high"] = "medium"
    priority: int = 100  # lower = more urgent; the patch follows the top one
    strength: float = 0.5  # 0..1 from the evidence's effect size; picks the factor in a range
    onset_step: int | None = None
    # the log's epoch at onset_step, when its records count epochs (RunInfo.axis); absent else
    onset_epoch: float | None = None
    detected_step: int | None = None  # the step at which the evidence became conclusive
    cleared_step: int | None = None  # set when the symptom went away again
    # the log's epochs at detected_step and cleared_step, as onset_epoch; absent else
    detected_epoch: float | None = None
    cleared_epoch: float | None = None
    # set when the episode was over before the run's end (cleared and stayed clear): its
    # severity is then info and this keeps the severity it had while active
    recovered_from: Severity | None = None
    evidence: list[Evidence] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    action: Action | None = None
    fallback: Action | None = None
    why: str = ""
    source: str = ""  # knowledge.md line or public source


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class ConfigFinding(_Data):
    """A static-rule finding about the job config itself."""

    id: str
    name: str = ""
    severity: Severity
    confidence: Literal["low", "medium", "high"] = "high"
    params: list[str] = field(default_factory=list)
    message: str
    why: str = ""
    suggested: Any = None
    line: int | None = None  # line of the job file the finding points at, when known


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class RunEnding(_Data):
    """How the run ended, as far as its log says."""

    kind: Literal[
        "completed", "oom", "nccl", "traceback", "disk_full", "killed", "failed", "unknown"
    ] = "unknown"
    step: int | None = None
    line: int | None = None
    message: str = ""


# A run's standing, the JSON's `status` (docs/contract.md): "crashed" when it ended in one of
# CRASHED, whatever it showed before; "issues" when a warning or error fired; else
# "insufficient_data" before the warm-up was over, or "healthy".
Status = Literal["healthy", "issues", "insufficient_data", "crashed"]
CRASHED = frozenset({"oom", "nccl", "traceback", "disk_full", "killed", "failed"})


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class RunInfo(_Data):
    """The `run` block of the JSON output."""

    _OMIT_NONE: ClassVar[frozenset[str]] = frozenset({"axis"})

    source: str
    format: str
    steps: int
    first_step: int | None
    last_step: int | None
    metrics: list[str]
    config_hints: dict[str, Any] = field(default_factory=dict)
    ending: RunEnding | None = None
    warnings: list[str] = field(default_factory=list)
    framework: str = "platform"  # whose log it is: platform, trl, verl, openrlhf
    # set when the log counts epochs, not steps (records that print an epoch and no step):
    # {"unit": "epoch", "epochs": {"1": 0.25, ...}}, each record's number (its `step`, the
    # axis every detector works on) -> the epoch it printed. Absent for a log of steps.
    axis: dict[str, Any] | None = None


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
    # step -> epoch when the log's records print an epoch and no step: the steps are the
    # records' numbers in order (the index the detectors work on), the epochs what to say
    epochs: dict[int, float] | None = None

    def epoch_of(self, step: int | None) -> float | None:
        """The epoch a step (a record's number) stands for; None on a log of steps."""
        return None if self.epochs is None or step is None else self.epochs.get(step)

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
            config_hints=dict(self.config_hints),
            ending=self.ending,
            warnings=list(self.warnings),
            axis=(
                {"unit": "epoch", "epochs": {str(k): v for k, v in self.epochs.items()}}
                if self.epochs is not None
                else None
            ),
        )


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Patch(_Data):
    """The one change the report proposes, from the finding it answers, with the patched set of
    hyperparameters it makes."""

    from_finding: str | None = None
    kind: Literal["primary", "fallback", "none"] = "none"
    changes: list[Change] = field(default_factory=list)
    # the patched set: the values the user gave or the run showed, plus the change; never an
    # assumed value (those are listed in `assumed`)
    hyper_parameters: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)  # parameters whose old value was assumed
    framework: str = "platform"  # whose names `settings` and `override` use
    settings: dict[str, Any] = field(default_factory=dict)  # the change in the framework's names
    override: str | None = None  # verl: Hydra overrides to append; TRL: GRPOConfig keywords
    # the change as command-line arguments ready to paste in the run's dialect: `trl grpo`
    # flags (--learning_rate 5e-05), verl Hydra overrides, the platform's --set key=value
    override_args: str | None = None


def _tool() -> dict[str, str]:
    return {"name": "rl-advisor", "version": ""}


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Diagnosis(_Data):
    """Everything known about one run: the only input the renderers take (JSON schema v1)."""

    _HIDDEN: ClassVar[frozenset[str]] = frozenset({"series"})

    schema_version: int = SCHEMA_VERSION
    tool: dict[str, str] = field(default_factory=_tool)
    run: RunInfo | None = None
    status: Status = "healthy"
    warmup_steps: int | None = None
    findings: list[Finding] = field(default_factory=list)
    config_findings: list[ConfigFinding] = field(default_factory=list)
    patch: Patch | None = None
    # Extensions beyond schema v1 (allowed: extend, never break)
    assumptions: list[str] = field(default_factory=list)  # what was assumed, what it weakens
    next_steps: list[str] = field(default_factory=list)
    # the log's metric names read as no canonical metric; each canonical metric the run lacks
    # -> the symptom rules that read it
    unread_keys: list[str] = field(default_factory=list)
    lacking_metrics: dict[str, list[str]] = field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None
    hyper_parameters: dict[str, Any] = field(default_factory=dict)  # effective, before the patch
    plots: dict[str, str] = field(default_factory=dict)  # finding id -> image path
    # the patch as a unified diff of the user's own job file (None without --config)
    patch_diff: str | None = None
    framework: str = "platform"  # the dialect every name of the report is said in
    # hyperparameters whose value (in `hyper_parameters`) is an assumption, not known
    assumed_parameters: list[str] = field(default_factory=list)
    # the earlier runs of `--previous`, oldest first: source, the settings that differ from
    # this run's, what their diagnosis advised ("raise"/"lower" per parameter), healthy or not
    history: list[dict[str, Any]] = field(default_factory=list)
    # what the run's waste cost (advisor.cost): shares, steps, hours, GPU-hours, money
    cost: dict[str, Any] | None = None
    # when an active trend crosses its threshold (advisor.outlook), with an interval
    forecasts: list[dict[str, Any]] = field(default_factory=list)
    # metric -> (steps, values) the report draws; not in the JSON
    series: dict[str, tuple[list[int], list[float | None]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A run in which no canonical metric was read was not judged: never "healthy"
        # (contract.md, status); the command line refuses it (`no_metric_read`).
        if self.status == "healthy" and self.run is not None and not self.run.metrics:
            self.status = "insufficient_data"

    def worst(self) -> Severity | None:
        sev = [f.severity for f in self.findings] + [c.severity for c in self.config_findings]
        return max(sev, key=lambda s: s.rank) if sev else None


PathLike = str | Path


def no_metric_read(run: RunInfo | None) -> str | None:
    """Why a run cannot be judged at all (no canonical metric was read from it), else None:
    the one line `diagnose` and `watch` refuse it with (exit 2)."""
    if run is None or run.metrics or run.steps == 0:
        return None
    names = ", ".join(CANONICAL_METRICS[:6])
    return (
        f"{run.source}: {run.steps} steps of {run.format} read, none with a metric the advisor "
        f"judges ({names} ...); expected a training log that reports them (see the metric "
        "names in docs/contract.md)"
    )
