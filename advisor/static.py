"""Static rules over a job config: the rulebook schema, a tiny expression language, the checker.

The rules are data (`rulebook/config.yaml`, schema `ConfigRulebook`); this module only knows a
handful of check kinds (`require`, `range`, `enum`, `sum_equals`, `regex`, `custom`, `load`) and
evaluates their expressions over a flat scope of names (the 25 hyperparameters, values derived
from the model name, resources and training-set size, and for function rules the fields of one
rollout/reward function). A name whose value is unknown makes the rule skip: the advisor never
judges on a value it invented.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from advisor import schema
from advisor.resources import load_validated, read_yaml_data, rulebook_dir
from advisor.schema import STRICT, After, Plain
from advisor.types import ConfigFinding, InputError, Severity

if TYPE_CHECKING:
    from pydantic import Field

    from advisor.config import LoadedConfig

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


@dataclass(kw_only=True)
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


@dataclass(kw_only=True)
class HpAlias(_Strict):
    """Another framework's name for a platform hyperparameter (for C001's "did you mean")."""

    param: str
    note: Annotated[
        str, Field(description="said when the meaning differs from the platform's")
    ] = ""
    source: str = ""


@dataclass(kw_only=True)
class ModelInfo(_Strict):
    kind: Literal["dense", "moe"]
    params_b: Annotated[float, Field(gt=0, description="total parameters, billions")]
    active_b: Annotated[
        float | None, Field(description="active parameters per token (MoE)")
    ] = None


@dataclass(kw_only=True)
class ScaleAdvice(_Strict):
    lr_max: float
    kl_max: float


@dataclass(kw_only=True)
class MtuSpec(_Strict):
    gpu_memory_gb: Annotated[float, Field(gt=0)]
    note: str = ""


@dataclass(kw_only=True)
class RequireCheck(_Strict):
    """Fires when `expr` is false."""

    kind: Literal["require"]
    expr: str


@dataclass(kw_only=True)
class RangeCheck(_Strict):
    """Fires when `param` lies outside [min, max] (either bound optional)."""

    kind: Literal["range"]
    param: str
    min: float | None = None
    max: float | None = None


@dataclass(kw_only=True)
class EnumCheck(_Strict):
    """Fires when `param` is not one of `values`."""

    kind: Literal["enum"]
    param: str
    values: list[Any]


@dataclass(kw_only=True)
class SumEqualsCheck(_Strict):
    """Fires when the numbers of mapping/list `param` do not sum to `total` (within tolerance)."""

    kind: Literal["sum_equals"]
    param: str
    total: float = 1.0
    tolerance: float = 1e-6


@dataclass(kw_only=True)
class RegexCheck(_Strict):
    """Fires when string `param` does not fully match `pattern`."""

    kind: Literal["regex"]
    param: str
    pattern: str


@dataclass(kw_only=True)
class CustomCheck(_Strict):
    """A registered Python function, for the few rules that need arithmetic (memory estimate)."""

    kind: Literal["custom"]
    function: str
    args: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclass(kw_only=True)
class LoadCheck(_Strict):
    """Emitted by the config loader (unknown keys, types, ranges); documented here."""

    kind: Literal["load"]


# one of these, told apart by `kind` (ConfigRule.check)
Check = (
    RequireCheck | RangeCheck | EnumCheck | SumEqualsCheck | RegexCheck | CustomCheck | LoadCheck
)


@dataclass(kw_only=True)
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


@dataclass(kw_only=True)
class CouplingRepair(_Strict):
    """How the remedy restores this coupling after its change broke it: the rule's `require`
    check is the relation, the first move that applies says which side moves and to what."""

    assume: Annotated[
        dict[str, int | float | str],
        Field(description="values the relation takes for params the job leaves out"),
    ] = dataclasses.field(default_factory=dict)
    moves: Annotated[list[RepairMove], Field(min_length=1)]


@dataclass(kw_only=True)
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


@dataclass(kw_only=True)
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


@dataclass(kw_only=True)
class Profile(_Strict):
    description: str
    model: str
    source: str
    hyper_parameters: dict[str, Any]


@dataclass(kw_only=True)
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
# The expression language: a safe subset of Python expressions, evaluated over a scope dict.


class Unknown(Exception):
    """A value the expression needs is unknown (missing, or None where a number is needed)."""


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def _values(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return list(value.values())
    if isinstance(value, list | tuple):
        return list(value)
    raise Unknown("not a mapping")


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil": math.ceil,
    "floor": math.floor,
    "round": round,
    "len": len,
    "sum": sum,
    "values": _values,
    "get": lambda m, k: m.get(k) if isinstance(m, Mapping) else None,
    "truthy": _truthy,
    "startswith": lambda s, p: isinstance(s, str) and s.startswith(p),
}

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}
_ALLOWED = (
    ast.Expression,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.Tuple,
    ast.List,
    ast.And,
    ast.Or,
    ast.Not,
    ast.USub,
    ast.UAdd,
    *_BINOPS,
    *_CMPOPS,
)


@cache
def _parse(expr: str) -> ast.Expression:
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise ValueError(f"bad expression {expr!r}: {err.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"expression {expr!r}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords
        ):
            raise ValueError(f"expression {expr!r}: only {sorted(FUNCTIONS)} may be called")
    return tree


def evaluate(expr: str, scope: Mapping[str, Any]) -> Any:
    """Evaluate a rule expression; raises Unknown when a needed value is unknown."""
    return _eval(_parse(expr).body, scope)


def _eval(node: ast.AST, scope: Mapping[str, Any]) -> Any:
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name):
            if name in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[name]
            if name not in scope:
                raise Unknown(name)
            return scope[name]
        case ast.BoolOp(op=op, values=values):
            result: Any = None
            for sub in values:
                result = _eval(sub, scope)
                if isinstance(op, ast.And) != bool(result):
                    return result
            return result
        case ast.UnaryOp(op=op, operand=operand):
            value = _eval(operand, scope)
            if isinstance(op, ast.Not):
                return not value
            return _arith(lambda v: -v if isinstance(op, ast.USub) else +v, value)
        case ast.BinOp(left=left, op=op, right=right):
            return _arith(_BINOPS[type(op)], _eval(left, scope), _eval(right, scope))
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            return _compare(left, ops, comparators, scope)
        case ast.IfExp(test=test, body=body, orelse=orelse):
            return _eval(body if _eval(test, scope) else orelse, scope)
        case ast.Call(func=ast.Name(id=name), args=args):
            return _arith(FUNCTIONS[name], *(_eval(a, scope) for a in args), allow_none=True)
        case ast.Tuple(elts=elts) | ast.List(elts=elts):
            return tuple(_eval(e, scope) for e in elts)
    raise ValueError(f"unsupported expression node {type(node).__name__}")


def _arith(fn: Callable[..., Any], *args: Any, allow_none: bool = False) -> Any:
    if not allow_none and any(a is None for a in args):
        raise Unknown("None operand")
    try:
        return fn(*args)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as err:
        raise Unknown(str(err)) from None


def _compare(left: ast.AST, ops: list[ast.cmpop], comps: list[ast.expr], scope: Any) -> bool:
    value = _eval(left, scope)
    for op, comp in zip(ops, comps, strict=True):
        other = _eval(comp, scope)
        identity = isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq)
        if not identity and (value is None or other is None):
            raise Unknown("None compared")
        try:
            ok = _CMPOPS[type(op)](value, other)
        except TypeError as err:
            raise Unknown(str(err)) from None
        if not ok:
            return False
        value = other
    return True


def fmt(value: Any) -> str:
    """Format a value for a message: short floats, 2e-6 not 2e-06."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value)) if abs(value) >= 1 else "0"
        text = f"{value:.6g}"
        return re.sub(r"e([+-])0*(\d)", lambda m: f"e{'-' if m[1] == '-' else ''}{m[2]}", text)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


def render(template: str, scope: Mapping[str, Any]) -> str:
    """Fill `{expression}` parts of a message; an unknown value shows as '?'."""

    def one(match: re.Match[str]) -> str:
        try:
            return fmt(evaluate(match[1], scope))
        except (Unknown, ValueError):
            return "?"

    return _PLACEHOLDER.sub(one, template)


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


# ---------------------------------------------------------------------------------------------
# Model scale and the scope the rules see.


def model_scale(name: str | None) -> tuple[str, float | None, float | None]:
    """(kind, params in billions, active params) from a model name; kind 'unknown' if unsure."""
    if not name:
        return "unknown", None, None
    low = name.strip().lower()
    book = rulebook().models
    for known, info in book.items():
        if low == known or low.startswith(known + "-"):
            return info.kind, info.params_b, info.active_b
    if m := re.search(r"(?<![\d.])(\d+(?:\.\d+)?)b-a(\d+(?:\.\d+)?)b(?![a-z])", low):
        return "moe", float(m[1]), float(m[2])
    if m := re.search(r"(?<![\d.])(\d+)x(\d+(?:\.\d+)?)b(?![a-z])", low):
        return "moe", float(m[1]) * float(m[2]), None
    if "moe" in low:
        return "moe", None, None
    if m := re.search(r"(?<![\d.a-z])(\d+(?:\.\d+)?)b(?![a-z])", low):
        return "dense", float(m[1]), None
    return "unknown", None, None


def scale_caps(loaded: LoadedConfig) -> dict[str, float]:
    """The top of the guide's learning-rate range for the job's model (KB 2.5: 9B up to 7e-6,
    MoE up to 5e-6), for the remedy to stop at; none when the model is not named."""
    kind, _, _ = model_scale(loaded.config.model)
    scale = rulebook().scales.get(kind)
    return {"learning_rate": scale.lr_max} if scale is not None else {}


def job_scope(loaded: LoadedConfig) -> dict[str, Any]:
    """The names a job-level rule can use."""
    book = rulebook()
    cfg = loaded.config
    scope: dict[str, Any] = dict(loaded.hyper_parameters)
    kind, params_b, active_b = model_scale(cfg.model)
    scale = book.scales.get(kind)
    res = cfg.resources
    spec = book.mtu_specs.get(res.mtu_spec_code or "")
    functions = cfg.functions
    samples = loaded.training_samples
    hp: Mapping[str, Any] = loaded.hyper_parameters  # ints where used: the loader checks types
    steps_per_epoch = math.ceil(samples / hp["batch_size"]) if samples else None
    scope.update(
        model=cfg.model,
        model_kind=kind,
        model_params_b=params_b,
        model_active_b=active_b,
        scale_lr_max=scale.lr_max if scale else None,
        scale_kl_max=scale.kl_max if scale else None,
        mtu_spec_code=res.mtu_spec_code,
        mtu_capacity=res.mtu_capacity,
        charge_type=res.charge_type,
        gpu_memory_gb=spec.gpu_memory_gb if spec else None,
        training_samples=samples,
        steps_per_epoch=steps_per_epoch,
        total_steps=steps_per_epoch * hp["n_epochs"] if steps_per_epoch else None,
        expected_step_seconds=loaded.extras.get("expected_step_seconds"),
        teacher_model=cfg.teacher_model,
        training_type=cfg.mode,
        n_functions=len(functions),
        n_rollout_functions=sum(f.type == "rollout" for f in functions),
        n_reward_functions=sum(f.type in ("reward", "group_reward") for f in functions),
        has_datasets=bool(cfg.datasets),
        n_training_datasets=sum(d.type == "training" for d in cfg.datasets),
        n_validation_datasets=sum(d.type == "validation" for d in cfg.datasets),
    )
    scope.update(_workspace_scope(loaded))
    return scope


_CLASSPATH = re.compile(r"([A-Za-z_][A-Za-z0-9_]*\.)+[A-Za-z_][A-Za-z0-9_]*")


def _workspace_scope(loaded: LoadedConfig) -> dict[str, Any]:
    """What the local project holds, for the registration rules (KB 5); None = not judged.

    The project counts as local only when the top package of some classpath exists under the
    workspace (workspace_dir, relative to the job file): a job file copied elsewhere, or a
    submit_job() with entity ids, is never told that its files are missing.
    """
    workspace = None
    fcmodels = [f.fcmodel for f in loaded.config.functions if f.fcmodel]
    if loaded.source is not None:
        # the guide's workspace_dir, else the SDK's zipdir (per function; the first is read)
        zipdir = next((m.zipdir for m in fcmodels if m.zipdir), None)
        workspace = loaded.source.parent / (loaded.config.workspace_dir or zipdir or ".")
    paths = [
        m.classpath.split(".")[0]
        for m in fcmodels
        if m.classpath and _CLASSPATH.fullmatch(m.classpath)
    ] + [m.filepath for m in fcmodels if m.filepath and not m.classpath]
    local = workspace is not None and any((workspace / p).exists() for p in paths)
    return {
        "workspace_local": local,
        "workspace_path": str(workspace) if local else None,
        "requirements_found": (
            (workspace / "requirements.txt").is_file() if local and workspace is not None else None
        ),
    }


def _module_found(
    base: Mapping[str, Any], classpath: str | None, filepath: str | None = None
) -> bool | None:
    """Whether classpath's module (all but the class name), or the SDK's filepath, exists in
    the local project."""
    if base.get("workspace_local") and filepath and not classpath:
        return Path(base["workspace_path"], filepath).is_file()
    if not base.get("workspace_local") or not classpath or not _CLASSPATH.fullmatch(classpath):
        return None
    module = Path(base["workspace_path"], *classpath.split(".")[:-1])
    return module.with_suffix(".py").is_file() or (module / "__init__.py").is_file()


def function_scopes(loaded: LoadedConfig, base: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One scope per rollout/reward function: its fields, runtime defaults filled, plus `base`."""
    specs = rulebook().function_runtime
    out = []
    for i, fn in enumerate(loaded.config.functions):
        scope = dict(base)
        given = fn.runtime or {}
        for field, spec in specs.items():
            scope[field] = given.get(field, spec.default)
            scope[f"{field}_default"] = field not in given
        written = loaded.function_paths[i] if i < len(loaded.function_paths) else {}
        where = written.get("entity_id") or f"functions[{i}]"
        scope.update(
            index=i,
            written_at=written,
            id_list_form=bool(written),
            label=where + (f" ({fn.name or fn.entity_id})" if fn.name or fn.entity_id else ""),
            type=fn.type,
            name=fn.name,
            timeout=fn.timeout,
            weight=fn.weight,
            reward_metric_weight=fn.reward_metric_weight,
            classpath=fn.fcmodel.classpath if fn.fcmodel else None,
            filepath=fn.fcmodel.filepath if fn.fcmodel else None,
            classname=fn.fcmodel.classname if fn.fcmodel else None,
            entity_id=fn.entity_id,
        )
        scope["module_found"] = _module_found(base, scope["classpath"], scope["filepath"])
        out.append(scope)
    return out


# ---------------------------------------------------------------------------------------------
# The checker.

_FUNCTION_FIELDS = (
    "runtime.",
    "fcmodel.",
    "timeout",
    "weight",
    "reward_metric_weight",
    "entity_id",
    "type",
)


def check(loaded: LoadedConfig, rules: Sequence[ConfigRule] | None = None) -> list[ConfigFinding]:
    """Run the static rules over a loaded config; findings sorted worst first."""
    rules = rulebook().rules if rules is None else rules
    base = job_scope(loaded)
    fscopes = function_scopes(loaded, base)
    findings: list[ConfigFinding] = []
    for rule in rules:
        if isinstance(rule.check, LoadCheck):
            continue
        if rule.scope == "job":
            findings += _judge(rule, base, loaded)
            continue
        for scope in fscopes:
            # a group reward is a reward: the reward rules judge it too
            kind = "reward" if scope["type"] == "group_reward" else scope["type"]
            if rule.function_type in (None, kind):
                findings += _judge(rule, scope, loaded)
    return sort_findings(findings)


def sort_findings(findings: list[ConfigFinding]) -> list[ConfigFinding]:
    return sorted(findings, key=lambda f: (-f.severity.rank, f.id, f.params))


def _judge(rule: ConfigRule, scope: Mapping[str, Any], loaded: LoadedConfig) -> list[ConfigFinding]:
    params = _params(rule, scope)
    if _touches(params, loaded.unjudged):
        return []  # reported invalid or missing (C002-C005): judging the default would mislead
    try:
        if rule.when is not None and not evaluate(rule.when, scope):
            return []
        if isinstance(rule.check, CustomCheck):
            hits = CUSTOM[rule.check.function](scope, rule.check.args)
        elif _fires(rule.check, scope):
            hits = [(rule.severity, render(rule.message, scope), _suggest(rule, scope))]
        else:
            hits = []
    except Unknown:
        return []
    line = loaded.line_of(params) if hits else None
    return [rule.finding(params, m, severity=sev, suggested=sug, line=line) for sev, m, sug in hits]


def _touches(params: Sequence[str], unjudged: frozenset[str]) -> bool:
    """True when a param is, or contains, a value the file gave no valid value for."""
    return any(
        p == u or u.startswith((p + ".", p + "[")) or p.startswith((u + ".", u + "["))
        for p in params
        for u in unjudged
    )


def _fires(check_: Check, scope: Mapping[str, Any]) -> bool:
    match check_:
        case RequireCheck(expr=expr):
            return not evaluate(expr, scope)
        case RangeCheck(param=p, min=lo, max=hi):
            value = _need(scope, p)
            return (lo is not None and value < lo) or (hi is not None and value > hi)
        case EnumCheck(param=p, values=vals):
            return _need(scope, p) not in vals
        case SumEqualsCheck(param=p, total=total, tolerance=tol):
            return abs(sum(_values(_need(scope, p))) - total) > tol
        case RegexCheck(param=p, pattern=pattern):
            value = _need(scope, p)
            return not (isinstance(value, str) and re.fullmatch(pattern, value))
    return False


def _need(scope: Mapping[str, Any], name: str) -> Any:
    value = scope.get(name)
    if value is None:
        raise Unknown(name)
    return value


def _suggest(rule: ConfigRule, scope: Mapping[str, Any]) -> Any:
    if rule.suggested is None:
        return None
    try:
        value = evaluate(rule.suggested, scope)
    except Unknown:
        return None
    return float(value) if isinstance(value, float) else value


def _params(rule: ConfigRule, scope: Mapping[str, Any]) -> list[str]:
    if rule.scope != "function":
        return list(rule.params)
    prefix = f"functions[{scope['index']}]."
    written = scope.get("written_at") or {}  # rollout_id / reward_runtimes[i] ...
    out = []
    for p in rule.params:
        head, _, rest = p.partition(".")
        if head in written:
            out.append(written[head] + ("." + rest if rest else ""))
        else:
            out.append(prefix + p if p.startswith(_FUNCTION_FIELDS) else p)
    return out


# ---------------------------------------------------------------------------------------------
# Profiles and the whole validation.


def compare_profile(loaded: LoadedConfig, name: str) -> list[ConfigFinding]:
    """Info findings where the effective config differs from a named starting point."""
    book = profiles().profiles
    if name not in book:
        near = difflib.get_close_matches(name, list(book), n=1)
        hint = f"; did you mean {near[0]}?" if near else ""

        raise InputError(f"--profile {name}: unknown profile (known: {', '.join(book)}){hint}")
    prof = book[name]
    out = []
    model = loaded.config.model
    if model and model_scale(model)[0] != model_scale(prof.model)[0]:
        out.append(_profile_finding(name, "model", model, prof.model, loaded))
    for param, want in prof.hyper_parameters.items():
        have = loaded.hyper_parameters.get(param)
        if isinstance(want, list):
            ok = have is not None and want[0] <= have <= want[1]
        else:
            ok = have == want
        if not ok:
            out.append(_profile_finding(name, param, have, want, loaded))
    return out


def _profile_finding(profile: str, param: str, have: Any, want: Any, loaded: Any) -> ConfigFinding:
    rule = rulebook().rule("C901")
    shown = f"{fmt(want[0])} to {fmt(want[1])}" if isinstance(want, list) else fmt(want)
    return rule.finding(
        [param],
        f"{param} {fmt(have)}; profile {profile} uses {shown}",
        suggested=want[0] if isinstance(want, list) else want,
        line=loaded.line_of([param]),
    )


def compare_previous(loaded: LoadedConfig, previous: LoadedConfig) -> list[ConfigFinding]:
    """C801: more than one hyperparameter changed against the previous job."""
    changed = [
        k for k, v in loaded.hyper_parameters.items() if previous.hyper_parameters.get(k) != v
    ]
    book = rulebook()
    changed = [k for k in changed if k not in book.change_ignored]
    group_of = {p: g for g, params in book.change_groups.items() for p in params}
    if len({group_of.get(k, k) for k in changed}) < 2:
        return []
    rule = book.rule("C801")
    what = ", ".join(
        f"{k} {fmt(previous.hyper_parameters.get(k))} -> {fmt(loaded.hyper_parameters[k])}"
        for k in changed
    )
    message = (
        f"{len(changed)} hyperparameters changed at once ({what}); "
        "change one at a time so the effect can be attributed"
    )
    return [rule.finding(changed, message, line=loaded.line_of(changed))]

