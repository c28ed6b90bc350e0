"""Sizing: how far one change of the remedy goes.

- the amount inside the rule's range, from the evidence's strength (`choose_amount`), held in
  the valid range of the job's fields (`clamp`; the ranges are the config rulebook's);
- a step sized from what the run showed, beyond the rule's ordinary range (`sized_step`, from
  a rule's `size`), and the room added to max_length from what finished answers took
  (`sized_response_room`);
- over the run history (`--previous`, advisor.history): a step that did not cure escalated
  geometrically, held inside the bracket the values shown too low and too high make, or the
  knob found spent so the remedy takes the fallback (`stepped`).

advisor.remedy applies these to the job; nothing here reads findings or makes a patch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from advisor.book.symptoms import ChangeSpec, SizeBy, SizeSpec
from advisor.config import HyperParams
from advisor.history import Round
from advisor.static import rulebook
from advisor.types import Scalar

# The smallest sensible value where the valid range excludes its minimum: (0, 1] for the
# rollout's GPU memory share, where 0 itself is invalid. The ranges themselves come from the
# config rulebook (`valid_ranges`), the one source of truth.
_EXCLUSIVE_FLOOR = {"inference_gpu_memory_utilization": 0.05}


# ----------------------------------------------------------------------------- numbers
def round_sig(x: float, digits: int = 2) -> float:
    """Round to significant digits, so 2e-6 x 1.65 reads 3.3e-06, not 3.2999999e-06."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


def choose_amount(spec: ChangeSpec, strength: float) -> float:
    """Pick the factor / addend within the rule's range: lo + (hi - lo) x strength.

    `lo` is the mild end of the range as the rule wrote it (x1.5 in "x1.5 to x2"); stronger
    evidence moves further. Factors are rounded to 0.05, addends to 2 significant digits.
    """
    assert spec.range is not None
    lo, hi = spec.range
    s = min(1.0, max(0.0, float(strength) if math.isfinite(strength) else 0.5))
    amount = lo + (hi - lo) * s
    if spec.op == "multiply":
        return round(round(amount / 0.05) * 0.05, 4)
    if float(lo).is_integer() and float(hi).is_integer():  # +2048 tokens, -1 epoch: whole units
        return float(round(amount))
    return round_sig(amount, 2)


@lru_cache(maxsize=1)
def valid_ranges() -> tuple[dict[str, tuple[float, float, bool]], dict[str, tuple[Scalar, ...]]]:
    """Ranges and choices of the hyperparameters, from the config rulebook
    (`rulebook/config.yaml`, the one source of truth)."""
    specs = rulebook().hyper_parameters
    bounds: dict[str, tuple[float, float, bool]] = {}
    choices: dict[str, tuple[Scalar, ...]] = {}
    for name, spec in specs.items():
        if spec.choices:
            choices[name] = tuple(spec.choices)
        elif spec.type in ("int", "float"):
            lo = spec.min if spec.min is not None else -math.inf
            hi = spec.max if spec.max is not None else math.inf
            if spec.min_exclusive:  # (0, 1]: the smallest sensible value, not 0 itself
                lo = _EXCLUSIVE_FLOOR.get(name, lo)
            bounds[name] = (lo, hi, spec.type == "int")
    return bounds, choices


def clamp(param: str, value: Any) -> tuple[Any, str | None]:
    """Clamp to the valid range and type; the note says what was done, if anything."""
    bounds, choices = valid_ranges()
    if param in choices:
        ok = value in choices[param]
        return value, None if ok else f"{value!r} is not one of {choices[param]}"
    if param not in bounds or not isinstance(value, (int, float)) or isinstance(value, bool):
        return value, None
    lo, hi, is_int = bounds[param]
    v = round(value) if is_int else round_sig(float(value), 3)
    note = None
    if v < lo:
        v, note = lo, f"clamped to the valid minimum {lo:g}"
    elif v > hi:
        v, note = hi, f"clamped to the valid maximum {hi:g}"
    return (int(v) if is_int else float(v)), note


def sized_response_room(
    spec: ChangeSpec, hp: HyperParams, facts: Mapping[str, object] | None
) -> tuple[float, str] | None:
    """The tokens to add to max_length, sized from what finished answers need, when the run
    logged it (TRL's completions/mean_terminated_length): room for a cut answer to run one
    typical finished answer further, `cap + mean_terminated`, at least 256 more, rounded up to
    a multiple of 256 and never beyond the rule's own addend (its range is the ceiling)."""
    m_t = (facts or {}).get("terminated_length")
    cap = (facts or {}).get("response_cap")
    if spec.param != "max_length" or spec.op != "add" or spec.range is None:
        return None
    if not isinstance(m_t, int | float) or not math.isfinite(m_t) or m_t <= 0:
        return None
    if not isinstance(cap, int | float) or cap <= 0:
        # The cap the answers ran into is not in the log: sized from an assumed max_length
        # the addend would rest on a guess; the rule's own addend stands.
        return None
    ceiling = max(spec.range)
    room = max(float(m_t), 256.0)
    room = float(min(ceiling, math.ceil(room / 256) * 256))
    note = (
        f"sized from completions/mean_terminated_length {m_t:.0f}: the response cap {cap:.0f} "
        f"+ {room:.0f} (what a finished answer takes, rounded up to 256; at most the rule's "
        f"+{ceiling:.0f})"
    )
    return room, note


def fmt(value: object) -> str:
    """A value as the advice writes it (a float by %g: 3e-06, not 3.0000000000000004e-06)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


# ----------------------------------------------------------------------------- from the evidence
def _measure(by: SizeBy, facts: Mapping[str, object]) -> float | None:
    """The raw factor one measure gives (unbounded), None when the run lacks its fact."""
    value = facts.get(by.fact)
    if by.kind == "kl_controller":
        if not isinstance(value, list | tuple) or not value:
            return None
        factor = 1.0
        for kl in value:
            if isinstance(kl, int | float) and math.isfinite(kl):
                err = min(by.clip, max(-by.clip, kl / by.target - 1.0))
                factor *= 1.0 + by.gain * err
        return factor
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return None
    if value <= 0:  # nothing measured at all: as far off as a step may go
        return math.inf if by.power < 0 else 0.0
    return float((value / by.target) ** by.power)


def _within(raw: float, bounds: tuple[float, float]) -> float:
    """`raw` held between the mild and the strongest factor of `bounds` (either order)."""
    lo, hi = min(bounds), max(bounds)
    return min(hi, max(lo, raw))


def _fmt_fact(value: object) -> str:
    if isinstance(value, list | tuple):
        return f"{len(value)} logged points"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def sized_step(
    size: SizeSpec, facts: Mapping[str, object] | None
) -> tuple[float, float, str] | None:
    """(factor within the bounds, raw factor, why) from the first measure the run has."""
    for by in size.by:
        raw = _measure(by, facts or {})
        if raw is None:
            continue
        factor = round_sig(_within(raw, size.bounds), 3)
        said = "unbounded" if not math.isfinite(raw) else f"x{round_sig(raw, 3):g}"
        if by.kind == "kl_controller":
            how = (
                f"Ziegler's adaptive KL controller (target {by.target:g}, K {by.gain:g}) "
                f"replayed over the run's {_fmt_fact((facts or {}).get(by.fact))} of KL"
            )
        else:
            how = f"{by.fact} {_fmt_fact((facts or {}).get(by.fact))} against {by.target:g}"
            how += f" to the power {by.power:g}"
        lo, hi = size.bounds
        note = f"sized x{factor:g} ({how} gives {said}, within x{lo:g}..x{hi:g}: {by.why})"
        return factor, raw, note
    return None


# ----------------------------------------------------------------------------- over the run history
# Two values this close (x1.25) bracket the knob: neither side cured, so the knob is not it.
_BRACKET_TIGHT = 1.25


@dataclass(frozen=True)
class Stepped:
    """A primary's step decided from the run history: its factor and why, or why the knob is
    spent (then the fallback is used)."""

    factor: float | None
    note: str
    spent: str | None = None
    goes_on: bool = False  # the same move again, after one that did not cure
    by_evidence: bool = False  # sized by what the run showed, beyond the rule's own range
    bracket: tuple[float | None, float | None] = (None, None)  # known too low, too high


def _path(param: str, history: Sequence[Round], now: Any) -> list[tuple[Any, int | None]]:
    """The values `param` ran with, oldest first, each with the direction its round's
    diagnosis advised (None unknown); rounds that do not know the value are left out."""
    out = [
        (r.hp[param], r.advised.get(param))
        for r in history
        if isinstance(r.hp.get(param), int | float) and not isinstance(r.hp.get(param), bool)
    ]
    return [*out, (now, None)]


def judged(
    param: str, history: Sequence[Round], now: float, direction: int
) -> tuple[float | None, float | None]:
    """(the highest value known too low, the lowest known too high) of `param`.

    A round's own report says which (it advised raising or lowering it); without one, a move
    the next round made says what that round was judged (a raise: too low). The run at hand
    is too low when the advice now is to raise it."""
    path = _path(param, history, now)
    low: list[float] = []
    high: list[float] = []
    for i, (value, advised) in enumerate(path):
        said = advised
        if i == len(path) - 1:
            said = direction
        elif said is None:
            later = next((v for v, _ in path[i + 1 :] if v != value), None)
            said = None if later is None else (1 if later > value else -1)
        if said == 1:
            low.append(float(value))
        elif said == -1:
            high.append(float(value))
    return (max(low) if low else None, min(high) if high else None)


def _last_move(param: str, history: Sequence[Round], now: float) -> float | None:
    """The factor of the latest change of `param` that led to the run at hand (rounds that
    left it alone, a fallback round, are skipped: the knob's own escalation goes on)."""
    for value, _ in reversed(_path(param, history, now)[:-1]):
        if value != now and value:
            return float(now) / float(value)
    return None


def stepped(
    spec: ChangeSpec,
    hp: HyperParams,
    history: Sequence[Round],
    facts: Mapping[str, object] | None,
    strength: float = 0.5,
) -> Stepped | None:
    """The step of a sized primary against the run history: escalated geometrically while the
    same move has not cured, held inside the bracket the history's too-low and too-high values
    make. None when the history has nothing to say about this knob."""
    size = spec.size
    now = hp.get(spec.param)
    if size is None or spec.op != "multiply" or not isinstance(now, int | float) or now <= 0:
        return None
    direction = 1 if max(size.bounds) > 1 else -1
    by_run = sized_step(size, facts)
    mild = min(size.bounds, key=lambda b: abs(math.log(b)))
    strongest = max(size.bounds, key=lambda b: abs(math.log(b)))
    factor = choose_amount(spec, strength) if spec.range is not None else mild
    notes = []
    by_evidence = by_run is not None and abs(math.log(by_run[0])) > abs(math.log(factor))
    if by_run is not None and by_evidence:
        factor, notes = by_run[0], [by_run[2]]
    last = _last_move(spec.param, history, float(now))
    goes_on = last is not None and (last > 1) == (direction > 0)
    if last is not None and goes_on:
        # the evidence now says the step is no more off than the rule's mild end (signed: a
        # raise is spent when the run asks for less than x mild, or for a cut)
        asked = math.log(by_run[1]) * direction if by_run is not None else math.inf
        spent_at = size.spent_at if size.spent_at is not None else mild
        if asked < math.log(spent_at) * direction:
            return Stepped(
                None,
                "",
                spent=(
                    f"the previous run already moved {spec.param} x{round_sig(last, 2):g} and the "
                    f"run now moves (by its {size.by[0].fact}): the knob is not what holds it"
                ),
            )
        if size.escalate is None:
            return None  # the rule falls back after a failed step
        grown = last**size.escalate
        if abs(math.log(grown)) > abs(math.log(factor)):
            factor = round_sig(_within(grown, size.bounds), 3)
            notes.append(
                f"escalated: the last x{round_sig(last, 2):g} on {spec.param} did not cure, "
                f"so this step is that factor to the power {size.escalate:g} (x{factor:g}, "
                f"at most x{strongest:g})"
            )
    low, high = judged(spec.param, history, float(now), direction)
    target = float(now) * factor
    if low is not None and high is not None and low < high:
        if high / low < _BRACKET_TIGHT:
            return Stepped(
                None,
                "",
                spent=(
                    f"{spec.param} is bracketed between {fmt(low)} (too low) and {fmt(high)} (too "
                    "high) by the earlier runs: the knob is not what holds the run"
                ),
            )
        if not low < target < high:
            target = math.sqrt(low * high)
            notes.append(
                f"bracketed: earlier runs showed {fmt(low)} too low and {fmt(high)} too high, "
                f"so the step goes to their geometric middle {fmt(round_sig(target, 2))}"
            )
    elif direction > 0 and high is not None and target >= high:
        target = math.sqrt(float(now) * high)
        notes.append(f"held below {fmt(high)}, which an earlier run showed too high")
    elif direction < 0 and low is not None and target <= low:
        target = math.sqrt(float(now) * low)
        notes.append(f"held above {fmt(low)}, which an earlier run showed too low")
    factor = target / float(now)
    if not notes:
        return Stepped(None, "", goes_on=goes_on, bracket=(low, high))
    return Stepped(
        factor, "; ".join(notes), goes_on=goes_on, by_evidence=by_evidence, bracket=(low, high)
    )
