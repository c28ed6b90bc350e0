"""Remedy: turn the findings' action specs into one Patch of the job's hyperparameters.

The rules (`rulebook/symptoms.yaml`) say *what* to change and *by how much at most*
(`op` multiply/add/set with a `range` [lo, hi] or a `value`). This module applies them to the
job, keeps it valid and follows the guide's "How to judge" (knowledge.md §4):

- the factor is chosen inside the rule's range from the evidence's strength (0..1), or sized
  from the run's evidence and its history (advisor.sizing);
- values are clamped to the valid ranges of knowledge.md §2.1 / §2.2;
- couplings of knowledge.md §2.3 are re-checked after the change and repaired, saying so;
- the fallback is used when the primary cannot apply: a no-op at a bound, a change that would
  create an anti-pattern (decided by `advisor.static.check`, the one source of truth), or a
  change the previous job already made (`--previous`);
- one variable at a time: the patch carries one change of the top-priority finding; everything
  else becomes an ordered next step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from advisor.book.symptoms import ActionSpec, ChangeSpec, FirstWhen, SizeSpec
from advisor.config import HyperParams, load_config
from advisor.history import Round
from advisor.i18n import rule_text, t
from advisor.sizing import (
    Stepped,
    choose_amount,
    clamp,
    sized_response_room,
    sized_step,
    stepped,
)
from advisor.sizing import fmt as _v
from advisor.static import RequireCheck, Unknown, check, evaluate, render, rulebook
from advisor.types import Action, Change, ConfigFinding, Finding, Patch, Scalar

if TYPE_CHECKING:
    from advisor.book.symptoms import SymptomRulebook
    from advisor.dialect import Speaker

# What an algorithm switch implies, only where the guide says so (knowledge.md §3: DAPO's
# typical KL coefficient is 0, and kl_loss_coef 0 is an anti-pattern only outside DAPO).
IMPLIED_BY_SWITCH: dict[tuple[str, Scalar], dict[str, tuple[Scalar, str]]] = {
    ("algorithm", "dapo"): {
        "kl_loss_coef": (
            0.0,
            "DAPO runs without a KL term (typical coefficient 0, knowledge.md §3)",
        )
    },
}
ActionKind = Literal["primary", "fallback"]


# ----------------------------------------------------------------------------- action specs
@dataclass(frozen=True)
class RuleActions:
    """What the remedy reads of a rule: its primary and fallback, and the detectors whose
    evidence rules the primary out."""

    primary: ActionSpec | None
    fallback: ActionSpec | None
    fallback_first: tuple[str, ...] = ()
    fallback_if_only: tuple[str, ...] = ()
    first_when: tuple[FirstWhen, ...] = ()


def spec_of(action: Action | None) -> ActionSpec | None:
    """A resolved Action read back as a spec: each change's factor a one-point range, its
    value what a set writes. Used for a finding the rulebook does not name."""
    if action is None:
        return None
    changes = [
        ChangeSpec(
            param=c.param,
            op=c.op,
            range=(c.factor, c.factor) if c.factor is not None else None,
            value=c.to if c.factor is None else None,
            min_from=None,
        )
        for c in action.changes
    ]
    return ActionSpec(advice=action.advice, changes=changes, safety=action.safety)


def actions_for(finding: Finding, rules: SymptomRulebook | None = None) -> RuleActions:
    """The rule's primary and fallback for this finding; the finding's own action otherwise."""
    rule = rules.by_id.get(finding.id) if rules is not None else None
    if rule is not None:
        return RuleActions(
            rule.action,
            rule.fallback,
            tuple(rule.fallback_first),
            tuple(getattr(rule, "fallback_if_only", ())),
            tuple(getattr(rule, "first_when", ())),
        )
    return RuleActions(spec_of(finding.action), spec_of(finding.fallback))


def apply_change(
    spec: ChangeSpec,
    hp: HyperParams,
    strength: float,
    caps: Mapping[str, float] | None = None,
    facts: Mapping[str, object] | None = None,
    step: tuple[float, str] | None = None,
) -> Change | None:
    """The Change this spec makes on `hp`, clamped; None when the parameter is unknown.

    `caps`: the top of the guide's range for this model (learning_rate 7e-6 for a dense 9B);
    a raise from below it stops there, so the patched job passes `validate`. A value already
    above it is the user's choice: the guide's action applies to it as it is."""
    current = hp.get(spec.param)
    factor: float | None = None
    if spec.op == "set":
        target = spec.value
    else:
        if spec.range is None or not isinstance(current, (int, float)) or current is None:
            return None
        factor = choose_amount(spec, strength)
        sized = sized_response_room(spec, hp, facts)
        if sized is not None:
            factor = sized[0]
        if step is None and spec.op == "multiply" and spec.size is not None:
            # the rule's range for an ordinary case; the run's evidence sizes a step beyond it
            by_run = sized_step(spec.size, facts)
            if by_run is not None and abs(math.log(by_run[0])) > abs(math.log(factor)):
                step = (by_run[0], by_run[2])
        if step is not None:
            factor = step[0]
        target = current * factor if spec.op == "multiply" else current + factor
    target, note = clamp(spec.param, target)
    if spec.op != "set" and note is None and (sized := sized_response_room(spec, hp, facts)):
        note = sized[1]
    if spec.op != "set" and step is not None:
        note = step[1] + (f"; {note}" if note else "")
    cap = (caps or {}).get(spec.param)
    if (
        cap is not None
        and isinstance(current, int | float)
        and isinstance(target, int | float)
        and current < cap < target
    ):
        target, factor = cap, (cap / current if spec.op == "multiply" and current else factor)
        note = f"capped at {_v(cap)}, the top of the guide's range for this model"
    return _change(spec.param, current, target, spec.op, factor, note)


def _change(
    param: str,
    old: Any,
    new: Any,
    op: str = "set",
    factor: float | None = None,
    note: str | None = None,
) -> Change:
    """A Change by its JSON names (`from` is a Python keyword)."""
    factor = float(factor) if factor is not None else None  # a whole number is a float too
    return Change(param=param, from_=old, to=new, op=op, factor=factor, note=note)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- couplings
def repair_couplings(hp: dict[str, Scalar], changed: set[str]) -> list[Change]:
    """Re-check the couplings of knowledge.md §2.3 after a change and repair each one broken,
    as the config rulebook declares it (a C1xx rule's `repair`: its `require` check is the
    relation, its first move that applies says which side moves and to what). The repairs
    are made on `hp`, in the rulebook's order, and returned as Changes with notes."""
    book = rulebook()
    repairs: list[Change] = []
    for rule in book.rules:
        if rule.repair is None or not isinstance(rule.check, RequireCheck):
            continue
        scope = {**rule.repair.assume, **{p: hp[p] for p in rule.params if p in hp}}
        if not all(_judgeable(scope.get(p), book.hyper_parameters[p].type) for p in rule.params):
            continue  # a value unknown or not a number: the relation is not judged on it
        try:
            if evaluate(rule.check.expr, scope):
                continue
            moves = rule.repair.moves
            move = next(m for m in moves if not m.if_changed or changed & set(m.if_changed))
            value, _ = clamp(move.param, evaluate(move.to, scope))
        except (Unknown, StopIteration):
            continue
        note = f"repaired coupling: {render(move.note, scope)}"
        repairs.append(_change(move.param, hp.get(move.param), value, note=note))
        hp[move.param] = value
    return repairs


def _judgeable(value: Scalar | None, kind: str) -> bool:
    """A value of the type the rulebook declares for it (an int for an int parameter)."""
    if kind == "int":
        return isinstance(value, int)
    if kind == "float":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return value is not None


# ----------------------------------------------------------------------------- applicability
AntiPatternCheck = Callable[[HyperParams], set[str]]


def static_anti_patterns(hp: HyperParams) -> set[str]:
    """Static warnings/errors on `hp` as "rule:param" items, from the static rules (the
    one source of truth for anti-patterns)."""
    return {f"{f.id}:{p}" for f in _static_warnings(hp) for p in (f.params or [""])}


def _static_warnings(hp: HyperParams) -> tuple[ConfigFinding, ...]:
    """The static rules' warnings and errors on `hp` (read only: they may be cached)."""
    try:
        key = tuple(sorted(hp.items()))
        hash(key)
    except TypeError:  # an unhashable value (a list): check without the cache
        return _static_check(hp)
    return _static_check_cached(key)


@lru_cache(maxsize=4096)
def _static_check_cached(key: tuple[tuple[str, Scalar], ...]) -> tuple[ConfigFinding, ...]:
    # The remedy checks the same job (and the same patched jobs) many times over a batch.
    return _static_check(dict(key))


def _static_check(hp: HyperParams) -> tuple[ConfigFinding, ...]:
    return tuple(f for f in check(load_config(None, hints=dict(hp))) if f.severity.rank >= 1)


def already_tried(spec: ChangeSpec, hp: HyperParams, previous: HyperParams | None) -> bool:
    """The previous job already moved this parameter the same way (e.g. lr raised prev -> now)."""
    if not previous or spec.param not in previous:
        return False
    before, now = previous.get(spec.param), hp.get(spec.param)
    if before == now:
        return False
    if spec.op == "set":
        return now == spec.value
    if (
        not isinstance(before, (int, float))
        or not isinstance(now, (int, float))
        or spec.range is None
    ):
        return False
    up = (spec.range[0] > 1) if spec.op == "multiply" else (spec.range[0] > 0)
    return (now > before) == up


@dataclass
class Resolved:
    """An action resolved against the job: what it would change, and why a primary was skipped."""

    action: Action | None
    changes: list[Change] = field(default_factory=list)  # all changes of the action, resolved
    skipped: str | None = None  # why the primary was not used


def _resolve(
    spec: ActionSpec,
    hp: HyperParams,
    strength: float,
    caps: Mapping[str, float] | None = None,
    facts: Mapping[str, object] | None = None,
    steps: Mapping[str, Stepped] | None = None,
) -> list[Change]:
    out = []
    for s in spec.changes:
        st = (steps or {}).get(s.param)
        step = (st.factor, st.note) if st is not None and st.factor is not None else None
        c = apply_change(s, hp, strength, caps, facts, step)
        if c is not None and s.op == "multiply" and c.from_ == 0 and s.range and s.range[0] > 1:
            # a raise of 0 stays 0: the value the static rules suggest for it instead (a KL
            # term of 0 outside DAPO -> 0.001)
            value = _suggested(hp, s.param)
            if value is not None and value > 0:
                note = f"0 cannot be multiplied: set to {_v(value)}, the guide's value"
                c = _change(s.param, c.from_, value, "set", None, note)
        if c is not None:
            out.append(c)
    return out


def _why_not(
    changes: list[Change],
    spec: ActionSpec,
    hp: HyperParams,
    previous: HyperParams | None,
    check: AntiPatternCheck,
    before: set[str],
    escalating: frozenset[str] = frozenset(),
    trusted: frozenset[str] = frozenset(),
) -> str | None:
    """Why this resolved primary cannot apply, or None when it can. A parameter in
    `escalating` goes on in the same direction (the run history sized its next step); one in
    `trusted` was sized by the run's own evidence, which a static prior does not overrule."""
    for s in spec.changes:
        if s.param in escalating:
            continue
        if previous is not None and already_tried(s, hp, previous):
            return (
                f"the previous job already changed {s.param} "
                f"({_v(previous[s.param])} -> {_v(hp.get(s.param))}) and the symptom remains"
            )
    if spec.changes and not changes:
        return "its parameters are unknown for this job"
    for s in spec.changes:
        now = hp.get(s.param)
        if s.min_from is not None and isinstance(now, int | float) and now < s.min_from:
            return (
                f"{s.param} is already {_v(now)}, below {_v(s.min_from)}: changing it further "
                "would not matter"
            )
    if changes and all(c.from_ == c.to for c in changes):
        c = changes[0]
        return f"{c.param} is already at {_v(c.to)}" + (f" ({c.note})" if c.note else "")
    effective = [c for c in changes if c.from_ != c.to]
    if not effective or effective[0].param in trusted:
        return None
    return _anti_pattern(effective[0], hp, check, before)


def _within_size(
    change: Change,
    moved: Change,
    size: SizeSpec | None,
    bracket: tuple[float | None, float | None] = (None, None),
) -> Change:
    """The change carried on into the job's valid range (`_into_range`), unless that goes
    further in one step than the sizing's strongest factor or out of the bracket the earlier
    runs made: a static prior (an lr the guide flags for typical models) does not take a step
    past what the run's evidence allows."""
    if size is None or moved is change:
        return moved
    old, new = change.from_, moved.to
    if not all(isinstance(x, int | float) and x > 0 for x in (old, new)):
        return moved
    low, high = bracket
    if (low is not None and new <= low) or (high is not None and new >= high):
        return change
    strongest = max(abs(math.log(b)) for b in size.bounds)
    return moved if abs(math.log(new / old)) <= strongest + 1e-9 else change


def _prior_noted(
    change: Change, hp: HyperParams, check: AntiPatternCheck, before: set[str]
) -> Change:
    """A change the run's evidence sized, with what a static prior would have said of it."""
    bad = _anti_pattern(change, hp, check, before)
    if bad is None:
        return change
    note = (
        f"{change.note}; the static rules would hold it back ({bad}), but they are priors on "
        "typical models and the run's own evidence sizes this step"
    )
    return replace(change, note=note)


def _anti_pattern(
    change: Change, hp: HyperParams, check: AntiPatternCheck, before: set[str]
) -> str | None:
    """Why applying `change` (and what it implies) would be an anti-pattern, or None.

    New static warnings/errors block it; so does a warning the job already has on the changed
    parameter when the change moves the value further from the platform default (raising an
    lr that is already SFT-level), while moving back toward it (halving it) is allowed."""
    patched = {**hp, change.param: change.to}
    _implied(change, patched)
    after = check(patched)
    new = after - before
    what = f"{change.param} -> {_v(change.to)}"
    if new:
        return f"{what} would create an anti-pattern ({', '.join(sorted(new))})"
    kept = sorted(x for x in after & before if x.endswith(f":{change.param}"))
    ref = _default(change.param)
    if kept and _further(change.from_, change.to, ref):
        return f"{what} would push {change.param} further into {', '.join(kept)}"
    return None


def _into_range(
    change: Change,
    hp: HyperParams,
    check: AntiPatternCheck,
    before: set[str],
    caps: Mapping[str, float] | None = None,
) -> Change:
    """A change that moves a value the job's own config findings flag (an SFT-level lr, 15
    epochs) but stops short of clearing them goes on to the nearest value that clears them, so
    the patched job passes `validate`: an integer one unit at a time, a number to the value the
    static rule suggests. Only in the change's own direction; otherwise the change as it is."""
    old, new, param = change.from_, change.to, change.param
    flagged = {x for x in before if x.endswith(f":{param}")}
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new))
    if not flagged or not numbers or old == new:
        return change
    still = flagged & check({**hp, param: new})
    if not still:
        return change
    down = new < old
    if isinstance(old, int) and isinstance(new, int):
        for value in range(new - 1, 0, -1) if down else range(new + 1, new + 65):
            if not flagged & check({**hp, param: value}):
                return _moved(change, value, still)
        return change
    cap = (caps or {}).get(param)  # the top of the guide's range for this model
    target = cap if cap is not None and down and cap < new else _suggested(hp, param)
    if target is None or (target >= new if down else target <= new):
        return change
    target, _ = clamp(param, target)
    return _moved(change, target, still) if not flagged & check({**hp, param: target}) else change


def _moved(change: Change, value: Any, cleared: set[str]) -> Change:
    rules = ", ".join(sorted(x.split(":")[0] for x in cleared))
    factor = None
    if change.op == "multiply" and change.from_:
        factor = round(value / change.from_, 4)
    elif change.op == "add":
        factor = value - change.from_
    return _change(
        change.param,
        change.from_,
        value,
        change.op if factor is not None else "set",
        factor,
        f"on to {_v(value)}: {_v(change.to)} would still be flagged by {rules} (validate)",
    )


def _suggested(hp: HyperParams, param: str) -> float | None:
    """The value a static rule flagging `param` on this job suggests (a number), if any: from
    the same (cached) check the anti-patterns come from."""
    for f in _static_warnings(hp):
        if f.params[:1] == [param]:  # the first names the subject
            try:
                return float(f.suggested)
            except (TypeError, ValueError):
                continue
    return None


def _default(param: str) -> Any:
    """The platform default of `param` (the config rulebook's), None for an unknown one."""
    spec = rulebook().hyper_parameters.get(param)
    return spec.default if spec is not None else None


def _further(old: Any, new: Any, ref: Any) -> bool:
    nums = (old, new, ref)
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in nums):
        return new != ref  # a choice: any move that is not back to the default
    return abs(new - ref) > abs(old - ref)


def _implied(change: Change, patched: dict[str, Scalar]) -> list[Change]:
    out = []
    for param, (value, note) in IMPLIED_BY_SWITCH.get((change.param, change.to), {}).items():
        if patched.get(param) != value:
            out.append(_change(param, patched.get(param), value, note=note))  # type: ignore[arg-type]
            patched[param] = value
    return out


def resolve(
    finding: Finding,
    hp: HyperParams,
    rules: SymptomRulebook | None = None,
    previous: HyperParams | None = None,
    check: AntiPatternCheck | None = None,
    before: set[str] | None = None,
    caps: Mapping[str, float] | None = None,
    into_range: bool = True,
    facts: Mapping[str, object] | None = None,
    history: Sequence[Round] = (),
    can_set: Callable[[str], bool] | None = None,
    inert: Callable[[Change], str | None] | None = None,
) -> Resolved:
    """Resolve the finding's primary, or its fallback when the primary cannot apply.

    `facts`: what the run showed beyond its hyperparameters (see `advisor.runfacts`);
    `history`: the earlier runs, oldest first (the last one is `previous` when that is None);
    `inert`: why a change does nothing in the run's framework (then the fallback goes)."""
    check = check or static_anti_patterns
    before = check(hp) if before is None else before
    if previous is None and history:
        previous = dict(history[-1].hp)
    ra = actions_for(finding, rules)
    named = _first_when(ra, facts, hp)
    if named is not None:
        fw, value = named
        changes = _moves(fw.action, {**hp, fw.fact: value}, finding.strength, caps, facts)
        settable = can_set or (lambda p: p in hp)
        changes = [c for c in changes if settable(c.param)]  # else: advice only
        return Resolved(_action(fw.action, "primary", changes), changes)
    # ...as long as that evidence reaches the latest step the finding's evidence does (a
    # reward constant for a stretch that then moved again rules nothing out)
    latest = max((e.window[1] for e in finding.evidence), default=0)
    first = [
        e.detector
        for e in finding.evidence
        if e.detector in ra.fallback_first and e.window[1] >= latest
    ]
    only = {f"{e.detector}:{e.metric}" for e in finding.evidence}
    if ra.fallback_if_only and finding.evidence and only <= set(ra.fallback_if_only):
        first = [" and ".join(sorted(only)) + " alone"]
    reason: str | None
    steps: dict[str, Stepped] = {}
    spent = None
    if ra.primary is not None and not first:
        for s in ra.primary.changes:
            st = stepped(s, hp, history or _as_history(previous), facts, finding.strength)
            if st is not None:
                steps[s.param] = st
                spent = spent or st.spent
    if first and ra.fallback is not None:
        reason = f"its evidence ({first[0]}) rules the primary action out"
    elif spent is not None:
        reason = spent
    elif ra.primary is not None:
        changes = _resolve(ra.primary, hp, finding.strength, caps, facts, steps)
        escalating = frozenset(p for p, st in steps.items() if st.goes_on)
        trusted = frozenset(p for p, st in steps.items() if st.by_evidence or st.goes_on)
        reason = _why_not(changes, ra.primary, hp, previous, check, before, escalating, trusted)
        moved = [c for c in changes if c.from_ != c.to]
        if reason is None and inert is not None and moved:
            idle = [why for c in moved if (why := inert(c)) is not None]
            if len(idle) == len(moved) and ra.fallback is None:
                # nothing else to offer: the advice is said, the patch changes nothing
                return Resolved(_action(ra.primary, "primary", []), [])
            if len(idle) == len(moved):
                reason = idle[0]
        if reason is None:
            if into_range:
                sizes = {x.param: x.size for x in ra.primary.changes if x.size is not None}
                changes = [
                    _within_size(
                        c,
                        _into_range(c, hp, check, before, caps),
                        sizes.get(c.param),
                        steps[c.param].bracket if c.param in steps else (None, None),
                    )
                    for c in changes
                ]
            changes = [
                _prior_noted(c, hp, check, before) if c.param in trusted else c for c in changes
            ]
            shown = [c for c in changes if c.from_ != c.to]
            return Resolved(_action(ra.primary, "primary", shown), changes)
    else:
        reason = "the rule has no primary action"
    if ra.fallback is None:
        return Resolved(None, [], reason)
    changes = _moves(ra.fallback, hp, finding.strength, caps, facts)
    bad = _anti_pattern(changes[0], hp, check, before) if changes else None
    if bad:  # advise it, but do not write an anti-pattern into the job file
        reason += f"; the fallback is advice only: {bad}"
        changes = []
    return Resolved(_action(ra.fallback, "fallback", changes), changes, reason)


def _with_implied(changes: list[Change], hp: HyperParams) -> list[Change]:
    """The changes with what each implies (a switch to DAPO drops the KL term): the whole
    switch, as the patch would make it."""
    patched = dict(hp)
    out: list[Change] = []
    for c in changes:
        patched[c.param] = c.to
        out += [c, *_implied(c, patched)]
    return out


def _first_when(
    ra: RuleActions, facts: Mapping[str, object] | None, hp: HyperParams
) -> tuple[FirstWhen, float] | None:
    """The first `first_when` whose fact the run (or else the job) shows inside its
    condition, with the value."""
    for fw in ra.first_when:
        value = (facts or {}).get(fw.fact, hp.get(fw.fact))
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if (fw.below is None or value < fw.below) and (fw.above is None or value > fw.above):
            return fw, value
    return None


def _as_history(previous: HyperParams | None) -> tuple[Round, ...]:
    return (Round(dict(previous)),) if previous else ()


def _moves(
    spec: ActionSpec,
    hp: HyperParams,
    strength: float,
    caps: Mapping[str, float] | None,
    facts: Mapping[str, object] | None,
) -> list[Change]:
    """The changes of an action that move a value, resolved against the job and the run's
    facts: the fallback `resolve` applies is the one `plan` shows."""
    return [c for c in _resolve(spec, hp, strength, caps, facts) if c.from_ != c.to]


def _action(spec: ActionSpec, kind: ActionKind, changes: list[Change]) -> Action:
    return Action(kind=kind, advice=spec.advice, changes=changes, safety=spec.safety)


# ----------------------------------------------------------------------------- the patch
def rank(findings: Iterable[Finding]) -> list[Finding]:
    """Most urgent first: lowest priority number, then severity, then earliest onset."""
    return sorted(
        findings,
        key=lambda f: (
            f.priority,
            -f.severity.rank,
            f.onset_step if f.onset_step is not None else 1 << 62,
            f.id,
        ),
    )


def describe(change: Change, speaker: Speaker | None = None) -> str:
    """`param old -> new (xF)`; in the run's framework's names with a speaker, which also
    marks an assumed old value."""
    if speaker is not None:
        change = speaker.marked(change)
        if speaker.native:
            return speaker.describe(change)
    mark = " (assumed)" if change.assumed else ""
    how = (
        f" (x{change.factor:g})"
        if change.op == "multiply" and change.factor is not None
        else (f" ({change.factor:+g})" if change.op == "add" and change.factor is not None else "")
    )
    return f"{change.param} {_v(change.from_)}{mark} -> {_v(change.to)}{how}"


def _say(advice: str, changes: Sequence[Change], speaker: Speaker | None = None) -> str:
    """One sentence: the advice, then the exact changes it means for this job."""
    advice = rule_text(advice)  # the rule's sentence in the asked language (advisor.i18n)
    text = (speaker.text(advice) if speaker is not None else advice).strip().rstrip(".。")
    if changes:
        text += t(" (") + t("; ").join(describe(c, speaker) for c in changes) + t(")")
    return text + t(".")


@dataclass
class RemedyResult:
    """The remedy's plan: the patch, the next steps in words and the findings it ranked."""

    patch: Patch
    next_steps: list[str]
    findings: list[Finding]  # ranked, each with its resolved action (and fallback) filled in


def plan(
    findings: Sequence[Finding],
    hp: HyperParams,
    rules: SymptomRulebook | None = None,
    previous: HyperParams | None = None,
    check: AntiPatternCheck | None = None,
    caps: Mapping[str, float] | None = None,
    into_range: bool = True,
    speaker: Speaker | None = None,
    facts: Mapping[str, object] | None = None,
    history: Sequence[Round] = (),
    healthy: bool = False,
) -> RemedyResult:
    """Resolve every finding's action; patch only the top one's first change (one variable at
    a time, knowledge.md §4 "How to judge"); the rest become ordered next steps. A `healthy`
    run (no warning or error) gets no patch: its info findings' advice is for a next run.

    `into_range`: carry a change on until the job's own config findings clear (`_into_range`);
    off without a job file, where the values are the log's and the job's context (a LoRA run's
    lr of 1e-4) is unknown. `speaker`: says the next steps and notes in the run's framework;
    `facts`: what the run showed beyond its hyperparameters (advisor.runfacts)."""
    check = check or static_anti_patterns
    before = check(hp)
    ranked = rank(findings)
    out: list[Finding] = []
    resolved: list[Resolved] = []
    for f in ranked:
        r = resolve(
            f, hp, rules, previous, check, before, caps, into_range, facts, history,
            speaker.can_set if speaker is not None else None,
            speaker.inert if speaker is not None else None,
        )  # fmt: skip
        fb = actions_for(f, rules).fallback
        fallback = None
        if fb is not None and (r.action is None or r.action.kind != "fallback"):
            fallback = _action(
                fb, "fallback", _with_implied(_moves(fb, hp, f.strength, caps, facts), hp)
            )
        out.append(replace(f, action=r.action, fallback=fallback))
        resolved.append(r)
    if healthy:
        return RemedyResult(Patch(kind="none", hyper_parameters=dict(hp)), [], out)
    escalating = {
        f.id
        for f in ranked
        if (p := actions_for(f, rules).primary) is not None
        and any(c.size is not None and c.size.escalate for c in p.changes)
    }
    patch, steps = _patch(out, resolved, hp, speaker, escalating)
    return RemedyResult(patch, steps, out)


def _passed(f: Finding) -> bool:
    return f.severity.value == "info" and f.cleared_step is not None


def _patch(
    findings: list[Finding],
    resolved: list[Resolved],
    hp: HyperParams,
    speaker: Speaker | None = None,
    escalating: set[str] | None = None,
) -> tuple[Patch, list[str]]:
    steps: list[str] = []
    name = speaker.name if speaker is not None else (lambda p: p)

    def say(advice: str, changes: Sequence[Change]) -> str:
        return _say(advice, changes, speaker)

    patched = dict(hp)
    # A recovered episode (info, cleared) is no reason to change the job, low-confidence
    # evidence (a borderline level, a first evaluation) is never the one change on its own,
    # and neither is an info finding: a run with nothing at warning or above is healthy at its
    # settings, and a change offered to it (DAPO-ZSTD's switch on a run that saturates) may
    # make it sick. Its advice stays a next step to consider.
    top = next(
        (
            i
            for i, r in enumerate(resolved)
            if r.action is not None
            and not _passed(findings[i])
            and findings[i].confidence != "low"
            and findings[i].severity.rank >= 1
        ),
        None,
    )
    if top is None:
        for g in findings:
            if g.action is None or _passed(g):
                continue
            if g.severity.value != "info":
                steps.append(
                    t(
                        "{id} ({name}) rests on low-confidence evidence: confirm it over the "
                        "next evaluations before changing anything; then: {what}",
                        id=g.id,
                        name=g.name,
                        what=_say(g.action.advice, g.action.changes),
                    )
                )
            else:
                steps.append(
                    t(
                        "{id} ({name}, info) is no reason to change a run that is healthy at "
                        "its settings; for a next job, consider: {what}",
                        id=g.id,
                        name=g.name,
                        what=say(g.action.advice, []),
                    )
                )
        return Patch(kind="none", hyper_parameters=patched), steps
    f, r = findings[top], resolved[top]
    assert r.action is not None
    notes: list[str] = []
    if r.skipped:
        notes.append(
            f"{f.id}: the primary action was not used because "
            f"{speaker.text(r.skipped) if speaker is not None else r.skipped}; using the fallback."
        )
    effective = [c for c in r.changes if c.from_ != c.to]  # a part already at its bound waits
    first, rest = effective[:1], effective[1:]
    applied: list[Change] = []
    for c in first:
        patched[c.param] = c.to
        applied.append(c)
        applied += _implied(c, patched)
    for c in applied[1:]:
        notes.append(f"{describe(c, speaker)} goes with {describe(first[0], speaker)}: {c.note}")
    repairs = repair_couplings(patched, {c.param for c in applied})
    notes += [f"{describe(c, speaker)}: {c.note}" for c in repairs]
    for c in rest:
        notes.append(
            f"{f.id} also moves {name(c.param)}; changed one variable at a time (knowledge.md "
            f"§4), so {name(c.param)} waits for the next run."
        )
        steps.append(
            t(
                "If {id} ({name}) persists after this run: {what}.",
                id=f.id,
                name=f.name,
                what=describe(c, speaker),
            )
        )
    if not first:
        steps.insert(
            0, t("{id} ({name}): {what}", id=f.id, name=f.name, what=say(r.action.advice, []))
        )
    if r.action.kind == "primary" and f.id in (escalating or set()):
        fb = say(f.fallback.advice, f.fallback.changes) if f.fallback is not None else None
        steps.append(
            t(
                "If {id} ({name}) still shows after that: diagnose that run with `--previous` "
                "naming this one (and any earlier): the next step on the same setting is sized "
                "from both and grows while the symptom stays",
                id=f.id,
                name=f.name,
            )
            + (t("; the fallback once that setting is spent: {fb}", fb=fb) if fb else t("."))
        )
    elif r.action.kind == "primary" and f.fallback is not None:
        fb = say(f.fallback.advice, f.fallback.changes)
        steps.append(
            t(
                "If {id} ({name}) still shows after that, the fallback: {fb}",
                id=f.id,
                name=f.name,
                fb=fb,
            )
        )
    said = {f.id}
    for g in findings[top + 1 :]:
        if g.id in said:  # another episode of a rule already advised: one step per rule
            continue
        said.add(g.id)
        what = say(g.action.advice, g.action.changes) if g.action else t("see the finding.")
        if _passed(g):
            what = t(
                "cleared at step {step}; only if it comes back: {what}",
                step=g.cleared_step,
                what=what,
            )
        if (
            g.action
            and g.action.changes
            and all(patched.get(c.param) == c.to for c in g.action.changes)
        ):
            what = t("covered by the change above.")
        steps.append(
            t(
                "Then {id} ({name}, {severity}): {what}",
                id=g.id,
                name=g.name,
                severity=t(g.severity.value),
                what=what,
            )
        )
    for g in {g.id: g for g in reversed(findings[:top])}.values():
        what = say(g.action.advice, []) if g.action else t("see the finding's evidence.")
        if _passed(g):
            said_ = t(
                "{id} ({name}): cleared at step {step}; only if it comes back: {what}",
                id=g.id,
                name=g.name,
                step=g.cleared_step,
                what=what,
            )
        elif g.severity.value == "info":
            said_ = t(
                "{id} ({name}, info): no reason to change the job; {what}",
                id=g.id,
                name=g.name,
                what=what,
            )
        else:
            said_ = t(
                "{id} ({name}): no parameter change applies; {what}",
                id=g.id,
                name=g.name,
                what=what,
            )
        steps.insert(0, said_)
    patch = Patch(
        from_finding=f.id,
        kind="fallback" if r.action.kind == "fallback" else "primary",
        changes=applied + repairs,
        hyper_parameters=patched,
        notes=notes,
    )
    return patch, steps
