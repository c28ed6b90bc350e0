"""The config rulebook (rulebook/config.yaml) and the guide's profiles (rulebook/profiles.yaml):
their schema, their loaders and their JSON schema, with the custom checks a rule may name.

The rules are data; advisor/static.py judges a loaded job with them. A check is one of a
handful of kinds (`require`, `range`, `enum`, `sum_equals`, `regex`, `custom`, `load`), its
expressions in the language of advisor/book/expressions.py.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from advisor import schema
from advisor.book.expressions import _parse, fmt
from advisor.resources import load_validated, read_yaml_data, rulebook_dir
from advisor.schema import STRICT, After, Plain, declared
from advisor.types import ConfigFinding, Severity

if TYPE_CHECKING:
    from pydantic import Field

# ---------------------------------------------------------------------------------------------
# Rulebook schema (plain dataclasses that pydantic checks on a cache miss, extra="forbid":
# advisor/schema.py): this is what `rulebook/schema_config.json` exports.


class _Strict(Plain):
    __pydantic_config__ = STRICT


def _expression(value: str | None) -> str | None:
    """An expression field's check (`After`): it parses in the expression language."""
    if value is not None:
        _parse(value)
    return value


@declared()
class FieldSpec(_Strict):
    """One scalar field of the job model: type, valid range or choices, platform default."""

    type: Literal["int", "float", "choice", "str", "bool", "mapping", "list"]
    min: float | None = None
    max: float | None = None
    min_exclusive: bool = False
    choices: list[Any] | None = None
    required: bool = False
    default: Any = None
    meaning: str = ""


@declared()
class HpAlias(_Strict):
    """Another framework's name for a platform hyperparameter (for C001's "did you mean")."""

    param: str
    note: Annotated[
        str, Field(description="said when the meaning differs from the platform's")
    ] = ""
    source: str = ""


@declared()
class ModelInfo(_Strict):
    kind: Literal["dense", "moe"]
    params_b: Annotated[float, Field(gt=0, description="total parameters, billions")]
    active_b: Annotated[
        float | None, Field(description="active parameters per token (MoE)")
    ] = None


@declared()
class ScaleAdvice(_Strict):
    lr_max: float
    kl_max: float


@declared()
class MtuSpec(_Strict):
    gpu_memory_gb: Annotated[float, Field(gt=0)]
    note: str = ""


@declared()
class RequireCheck(_Strict):
    """Fires when `expr` is false."""

    kind: Literal["require"]
    expr: str


@declared()
class RangeCheck(_Strict):
    """Fires when `param` lies outside [min, max] (either bound optional)."""

    kind: Literal["range"]
    param: str
    min: float | None = None
    max: float | None = None


@declared()
class EnumCheck(_Strict):
    """Fires when `param` is not one of `values`."""

    kind: Literal["enum"]
    param: str
    values: list[Any]


@declared()
class SumEqualsCheck(_Strict):
    """Fires when the numbers of mapping/list `param` do not sum to `total` (within tolerance)."""

    kind: Literal["sum_equals"]
    param: str
    total: float = 1.0
    tolerance: float = 1e-6


@declared()
class RegexCheck(_Strict):
    """Fires when string `param` does not fully match `pattern`."""

    kind: Literal["regex"]
    param: str
    pattern: str


@declared()
class CustomCheck(_Strict):
    """A registered Python function, for the few rules that need arithmetic (memory estimate)."""

    kind: Literal["custom"]
    function: str
    args: dict[str, Any] = dataclasses.field(default_factory=dict)


@declared()
class LoadCheck(_Strict):
    """Emitted by the config loader (unknown keys, types, ranges); documented here."""

    kind: Literal["load"]


# one of these, told apart by `kind` (ConfigRule.check)
Check = (
    RequireCheck | RangeCheck | EnumCheck | SumEqualsCheck | RegexCheck | CustomCheck | LoadCheck
)


@declared()
class RepairMove(_Strict):
    """One way to restore a coupling: `param` takes the value of the expression `to`."""

    param: Annotated[str, Field(description="the side that moves (one of the rule's params)")]
    to: Annotated[
        str,
        After(_expression),
        Field(description="expression over the job's values: the value `param` takes"),
    ]
    note: Annotated[
        str,
        Field(
            min_length=1,
            description="what the repair did, said after 'repaired coupling: ' ({expression} "
            "parts are evaluated on the job before the repair)",
        ),
    ]
    if_changed: Annotated[
        list[str],
        Field(
            description="taken only when the remedy's change moved one of these; otherwise the "
            "next move is tried (the change's own value keeps its intent)"
        ),
    ] = dataclasses.field(default_factory=list)


@declared()
class CouplingRepair(_Strict):
    """How the remedy restores this coupling after its change broke it: the rule's `require`
    check is the relation, the first move that applies says which side moves and to what."""

    assume: Annotated[
        dict[str, int | float | str],
        Field(description="values the relation takes for params the job leaves out"),
    ] = dataclasses.field(default_factory=dict)
    moves: Annotated[list[RepairMove], Field(min_length=1)]


@declared()
class ConfigRule(_Strict):
    """One static rule, with its ruff-shaped documentation."""

    id: Annotated[str, Field(pattern=r"^C\d{3}$")]
    name: Annotated[
        str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", description="kebab-case problem name")
    ]
    severity: Severity
    confidence: Literal["low", "medium", "high"] = "high"
    scope: Literal["job", "function"] = "job"
    function_type: Literal["rollout", "reward"] | None = None
    params: list[str]
    when: Annotated[
        str | None,
        After(_expression),
        Field(description="expression; the rule is judged only when true"),
    ] = None
    check: Annotated[Check, Field(discriminator="kind")]
    message: Annotated[
        str, Field(min_length=1, description="{expression} parts are evaluated")
    ]
    suggested: Annotated[
        str | None,
        After(_expression),
        Field(description="expression giving the suggested value"),
    ] = None
    summary: Annotated[str, Field(min_length=1, description="What it does")]
    why: Annotated[str, Field(min_length=1, description="Why is this bad?")]
    example: Annotated[str, Field(min_length=1)]
    use_instead: Annotated[str, Field(min_length=1)]
    source: Annotated[str, Field(min_length=1)]
    repair: Annotated[
        CouplingRepair | None,
        Field(description="how the remedy restores a coupling (C1xx) its change broke"),
    ] = None
    shows_as: Annotated[
        list[str],
        Field(
            description="run-time symptom ids by which a run would show this rule's "
            "consequence: the rule is a prior (a value typical of other runs), and a diagnosed "
            "run that is healthy past its warm-up with none of them overrules it (its finding "
            "drops to info, says why, and suggests no value)"
        ),
    ] = dataclasses.field(default_factory=list)

    def finding(
        self,
        params: list[str],
        message: str,
        *,
        severity: Severity | None = None,
        suggested: object = None,
        line: int | None = None,
    ) -> ConfigFinding:
        """This rule's finding on `params` (at its own severity unless told)."""
        return ConfigFinding(
            id=self.id,
            name=self.name,
            severity=severity or self.severity,
            confidence=self.confidence,
            params=params,
            message=message,
            why=self.why,
            suggested=suggested,
            line=line,
        )


@declared()
class ConfigRulebook(_Strict):
    version: int
    hyper_parameters: dict[str, FieldSpec]
    hp_aliases: dict[str, HpAlias] = dataclasses.field(default_factory=dict)
    function_runtime: dict[str, FieldSpec]
    resources: dict[str, FieldSpec]
    models: dict[str, ModelInfo]
    scales: dict[str, ScaleAdvice]
    mtu_specs: dict[str, MtuSpec]
    change_groups: Annotated[
        dict[str, list[str]],
        Field(description="coupled parameters counted as one change (C801)"),
    ] = dataclasses.field(default_factory=dict)
    change_ignored: Annotated[
        list[str], Field(description="not counted by C801")
    ] = dataclasses.field(default_factory=list)
    other_estimators: Annotated[
        list[str],
        Field(description="verl adv_estimator values that are not GSPO/GRPO/DAPO"),
    ] = dataclasses.field(default_factory=list)
    group_rules: Annotated[
        list[str],
        Field(description="rules skipped for a run with one of other_estimators"),
    ] = dataclasses.field(default_factory=list)
    rules: list[ConfigRule]

    def __post_init__(self) -> None:  # run by pydantic after validation (advisor/schema.py)
        stray = {a.param for a in self.hp_aliases.values()} - set(self.hyper_parameters)
        if stray:
            raise ValueError(f"hp_aliases name unknown hyperparameters: {sorted(stray)}")
        ids = [r.id for r in self.rules]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"duplicate rule ids: {sorted(dupes)}")
        for rule in self.rules:
            if isinstance(rule.check, RequireCheck):
                _parse(rule.check.expr)
            if isinstance(rule.check, CustomCheck) and rule.check.function not in CUSTOM:
                raise ValueError(f"{rule.id}: unknown custom function {rule.check.function!r}")
            if rule.repair is not None:
                _check_repair(rule, set(self.hyper_parameters))

    def rule(self, rule_id: str) -> ConfigRule:
        return next(r for r in self.rules if r.id == rule_id)


def _check_repair(rule: ConfigRule, known: set[str]) -> None:
    """A repair restores a `require` relation by moving one of the rule's own params."""
    assert rule.repair is not None
    if not isinstance(rule.check, RequireCheck):
        raise ValueError(f"{rule.id}: a repair needs a require check (the relation)")
    named = {m.param for m in rule.repair.moves} | set(rule.repair.assume)
    named |= {p for m in rule.repair.moves for p in m.if_changed}
    stray = sorted(named - set(rule.params))
    if stray:
        raise ValueError(f"{rule.id}: the repair names params the rule does not: {stray}")
    unknown = sorted(set(rule.params) - known)
    if unknown:
        raise ValueError(f"{rule.id}: a repair moves hyperparameters only, not {unknown}")


@declared()
class Profile(_Strict):
    description: str
    model: str
    source: str
    hyper_parameters: dict[str, Any]


@declared()
class ProfileBook(_Strict):
    version: int
    profiles: dict[str, Profile]


_B = TypeVar("_B", ConfigRulebook, ProfileBook)


@cache
def rulebook() -> ConfigRulebook:
    """The config rulebook, validated against its schema (cached)."""
    return _book("config.yaml", ConfigRulebook)


@cache
def profiles() -> ProfileBook:
    """The guide's starting points (rulebook/profiles.yaml), validated (cached)."""
    return _book("profiles.yaml", ProfileBook)


def _book(name: str, book: type[_B]) -> _B:
    def build(path: Path) -> _B:
        return schema.validate_file(book, _read_yaml(path), path)

    return load_validated(_rulebook_file(name), build, __name__)


def _rulebook_file(name: str) -> Path:
    return rulebook_dir() / name


def _read_yaml(path: Path) -> Any:
    return read_yaml_data(path)


def export_schema(dest: Path) -> None:
    """Write the JSON schema of the config rulebook (rulebook/schema_config.json)."""

    book_schema = {
        "title": "rl-advisor config rulebook",
        "$defs": {
            "ConfigRulebook": schema.json_schema(ConfigRulebook),
            "ProfileBook": schema.json_schema(ProfileBook),
        },
    }
    dest.write_text(json.dumps(book_schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Custom checks: registered by name, referenced from the rulebook.

CustomResult = list[tuple[Severity, str, Any]]  # (severity, message, suggested value)
CUSTOM: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], CustomResult]] = {}


def custom(name: str) -> Callable[[Callable[..., CustomResult]], Callable[..., CustomResult]]:
    def register(fn: Callable[..., CustomResult]) -> Callable[..., CustomResult]:
        CUSTOM[name] = fn
        return fn

    return register


@custom("memory_estimate")
def memory_estimate(scope: Mapping[str, Any], args: Mapping[str, Any]) -> CustomResult:
    """KB 2.6: params x (weight + optimizer bytes) / model-parallel split, against the card."""
    params_b, card = scope.get("model_params_b"), scope.get("gpu_memory_gb")
    if params_b is None or card is None:
        return []
    tp, pp = scope["tensor_model_parallel_size"], scope["pipeline_model_parallel_size"]
    moe = scope.get("model_kind") == "moe"
    ep = scope["expert_model_parallel_size"] if moe else 1
    wb, ob = args.get("weight_bytes", 2), args.get("optimizer_bytes", 8)
    split = tp * pp * ep
    weights, total = params_b * wb / split, params_b * (wb + ob) / split
    split_text = f"TP {tp} x PP {pp}" + (f" x EP {ep}" if moe else "")
    arith = (
        f"{fmt(params_b)}B params x ({wb} + {ob}) bytes / ({split_text}) = {total:.1f} GB per GPU"
        f" vs the {fmt(card)} GB card of {scope.get('mtu_spec_code')}"
    )
    fit = next(
        (t for t in (2, 4, 8) if t > tp and params_b * (wb + ob) / (t * pp * ep) <= card), None
    )
    if weights > card:
        return [
            (
                Severity.error,
                f"{arith}: the bf16 weights alone ({weights:.1f} GB) do not fit;"
                " raise tensor_model_parallel_size",
                fit,
            )
        ]
    if total > card:
        return [
            (
                Severity.warning,
                f"{arith}: weights + AdamW state exceed the card before"
                " activations and KV cache; split with tensor_model_parallel_size first",
                fit,
            )
        ]
    if total > args.get("info_fraction", 0.8) * card:
        return [
            (
                Severity.info,
                f"{arith}: under {1 - args.get('info_fraction', 0.8):.0%} is left"
                " for activations and KV cache; watch for OOM",
                None,
            )
        ]
    return []
