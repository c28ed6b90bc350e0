"""Static rules over a job config: the checker of a loaded job.

The rules are data (`rulebook/config.yaml`, read by advisor/book/config.py; their expressions
in the language of advisor/book/expressions.py); this module only knows a handful of check
kinds (`require`, `range`, `enum`, `sum_equals`, `regex`, `custom`, `load`) and evaluates their
expressions over a flat scope of names (the 25 hyperparameters, values derived from the model
name, resources and training-set size, and for function rules the fields of one rollout/reward
function). A name whose value is unknown makes the rule skip: the advisor never
judges on a value it invented.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.book.config import (
    CUSTOM,
    Check,
    ConfigRule,
    CustomCheck,
    EnumCheck,
    LoadCheck,
    RangeCheck,
    RegexCheck,
    RequireCheck,
    SumEqualsCheck,
    profiles,
    rulebook,
)
from advisor.book.expressions import Unknown, _values, evaluate, fmt, render
from advisor.i18n import config_text, t
from advisor.types import ConfigFinding, InputError

if TYPE_CHECKING:
    from advisor.config import LoadedConfig

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
    names = [f.name for f in functions if f.name]  # an unnamed one is named by the SDK
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
        repeated_function_names=", ".join(sorted({n for n in names if names.count(n) > 1})),
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
    # the SDK's fcmodel.requirements_path (under zipdir), else the guide's project-root file
    requirements = next(
        (m.requirements_path for m in fcmodels if m.requirements_path), "requirements.txt"
    )
    return {
        "workspace_local": local,
        "workspace_path": str(workspace) if local else None,
        "requirements_found": (
            (workspace / requirements).is_file() if local and workspace is not None else None
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
            message = config_text(rule.id, "message", rule.message)  # in the asked language
            hits = [(rule.severity, render(message, scope), _suggest(rule, scope))]
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
        import difflib  # (only an unknown name is matched)

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
    shown = (
        t("{first} to {last}", first=fmt(want[0]), last=fmt(want[1]))
        if isinstance(want, list)
        else fmt(want)
    )
    return rule.finding(
        [param],
        t(
            "{param} {have}; profile {profile} uses {shown}",
            param=param,
            have=fmt(have),
            profile=profile,
            shown=shown,
        ),
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
    message = t(
        "{n} hyperparameters changed at once ({what}); "
        "change one at a time so the effect can be attributed",
        n=len(changed),
        what=what,
    )
    return [rule.finding(changed, message, line=loaded.line_of(changed))]
