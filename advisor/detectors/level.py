"""Level detectors (and their screens): a metric at, above, below or away from a level."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np

from advisor.detectors.common import (
    _aligned,
    _evidence,
    _excess,
    _fmt,
    _held_how,
    _k_m,
    _maybe,
    _never,
    _onset_index,
    _persistent,
    _steps,
)
from advisor.detectors.registry import SHARES, Column, Params, detector, screen
from advisor.detectors.series import (
    COUNT,
    END,
    HI,
    LO,
    MEAN,
    NONFINITE,
    START,
    Baseline,
    Series,
    median,
    nanmedian,
)
from advisor.types import Evidence


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %" if math.isfinite(x) else "?"


# ----------------------------------------------------------------------------- detectors
@detector("nonfinite")
def nonfinite(s: Series, p: Params) -> Evidence | None:
    """NaN/inf values: skipped updates (verl) or a numerically broken run. Not a trend."""
    if s.nonfinite[-1] == 0:  # gate: the latest block must show it (cheap, no arrays)
        return None
    k, m = _k_m(p, 1, 1)
    mask = s.nonfinite > 0
    if not _persistent(mask, k, m):
        return None
    i = _onset_index(mask, gap=int(p.get("gap", 2)))
    bad = int(s.nonfinite[i:].sum())
    total = bad + int(s.count[i:].sum())
    # one NaN grad_norm is one skipped update, not yet a symptom; unless it is a large share
    # of what was logged (`min_frac`: TRL averages logging_steps steps into one entry)
    share = float(p.get("min_frac", 2.0))
    logged = int(s.nonfinite.sum() + s.count.sum())
    if bad < int(p.get("min_count", 1)) and not (logged and bad / logged >= share):
        return None
    first = int(s.first_bad[i]) if s.nonfinite[i] > 0 else int(s.start[i])
    frac = bad / total if total else 1.0
    ev = _evidence(
        s,
        "nonfinite",
        i,
        f"{s.metric} had {bad} non-finite value{'s' if bad != 1 else ''} (NaN/inf) in {total} "
        "logged points over "
        f"steps {first}–{int(s.end[-1])}, the first at step {first}.",
        effect=frac,
        excess=1.0 + frac,
        nonfinite=bad,
        points=total,
        first_nonfinite_step=first,
    )
    ev.statistic["onset_step"] = first
    return replace(ev, window=(first, int(s.end[-1])))


@screen("nonfinite", baseless=True)
def _nonfinite_screen(c: Column, p: Params) -> np.ndarray:
    return c.rows[:, NONFINITE] != 0


def _level(s: Series, p: Params, above: bool, name: str) -> Evidence | None:
    k, m = _k_m(p)
    value = float(p["value"])
    stat = str(p.get("stat", "mean"))
    x = {"mean": s.mean, "max": s.hi, "min": s.lo}[stat]
    last = float(x[-1])
    if not (last >= value if above else last <= value):  # gate on the latest block (nan: no)
        return None
    if p.get("nonzero") and s.lo[-1] == 0 and s.hi[-1] == 0:
        return None
    with np.errstate(invalid="ignore"):
        mask = (x >= value) if above else (x <= value)
    mask = mask & np.isfinite(x)
    if p.get("nonzero"):  # blocks of exact zeros say nothing (a logging artefact)
        mask &= ~((s.lo == 0) & (s.hi == 0))
    edge = s.lo if above else s.hi

    def each_strong(i: int, f: float) -> bool:  # the mean f x past the level, every point past
        if stat != "mean":
            return False
        if above:
            return bool(x[i] >= value * f and edge[i] >= value)
        return bool(x[i] <= value / f and edge[i] <= value)

    persist, strong, run = _held_how(s, p, k, m, mask, each_strong)
    if not (strong or persist):
        return None
    i = _onset_index(mask)
    level = float(nanmedian(x[i:]))
    word = "at or above" if above else "at or below"
    what = SHARES.get(s.metric)
    return _evidence(
        s,
        name,
        i,
        ""
        if p.get("_brief")
        else f"{s.metric} block {stat} stayed {word} {_fmt(value)} over steps {_steps(s, i)} "
        f"(median {_fmt(level)}; {_held(mask, m, persist, strong, len(run))})"
        + (f": {_pct(level)} of the logged steps {what}." if what else "."),
        effect=level,
        excess=_excess(level, value) if above else _excess(value, level or 1e-300),
        level=level,
        threshold=value,
        stat=stat,
    )


def _held(mask: np.ndarray, m: int, persist: bool, strong: float, blocks: int) -> str:
    """How the persistence was met, for the evidence sentence."""
    if persist or not strong:
        return f"{int(mask[-m:].sum())} of the last {min(m, len(mask))} blocks"
    which = "the latest block" if blocks == 1 else f"the latest {blocks} blocks"
    return f"{which} {strong:g} x past it, every point beyond"


@detector("above", brief=True)
def above(s: Series, p: Params) -> Evidence | None:
    """Block mean (or max/min via `stat`) at or above an absolute `value`, k of m blocks."""
    return _level(s, p, True, "above")


@screen("above", baseless=True)
def _above_screen(c: Column, p: Params) -> np.ndarray:
    return _level_screen(c.rows, p, above=True)


@detector("below", brief=True)
def below(s: Series, p: Params) -> Evidence | None:
    """Block mean (or max/min via `stat`) at or below an absolute `value`, k of m blocks."""
    return _level(s, p, False, "below")


@screen("below", baseless=True)
def _below_screen(c: Column, p: Params) -> np.ndarray:
    return _level_screen(c.rows, p, above=False)


@detector("near_zero")
def near_zero(s: Series, p: Params) -> Evidence | None:
    """Every value of the block within ±`value` of 0 (min and max, not only the mean: signed
    metrics such as ppo_kl can average to 0 while moving), k of m blocks."""
    k, m = _k_m(p)
    value = float(p["value"])
    last = max(abs(float(s.lo[-1])), abs(float(s.hi[-1])))
    if not last <= value or (last == 0 and not p.get("exact_zero", False)):
        return None
    with np.errstate(invalid="ignore"):
        mag = np.maximum(np.abs(s.lo), np.abs(s.hi))
        mask = (mag <= value) & np.isfinite(mag)
    if not p.get("exact_zero", False):
        # A block of exact zeros is a rounded log (verl <= 0.4 prints 3 decimals) or an
        # on-policy update: it says nothing about the magnitude.
        mask &= mag > 0
    if not _persistent(mask, k, m):
        return None
    i = _onset_index(mask)
    worst = float(np.nanmax(mag[i:]))
    return _evidence(
        s,
        "near_zero",
        i,
        f"{s.metric} stayed within ±{_fmt(value)} of zero over steps {_steps(s, i)} "
        f"(largest |value| {_fmt(worst)}).",
        effect=worst,
        excess=_excess(value, max(worst, value * 1e-3)),
        max_abs=worst,
        threshold=value,
    )


@screen("near_zero", baseless=True)
def _near_zero_screen(c: Column, p: Params) -> np.ndarray:
    a, b = np.abs(c.rows[:, LO]), np.abs(c.rows[:, HI])
    last = np.where(b > a, b, a)  # max(|lo|, |hi|) as Python's max takes it
    with np.errstate(invalid="ignore"):
        quiet = ~(last <= float(p["value"])) | ((last == 0) & (not p.get("exact_zero", False)))
    return ~quiet


def _hinge(y: np.ndarray, cross: int, back: int = 16, after: int = 2) -> int:
    """Where a move that crossed the thresholds at block `cross` began: the block after the
    break h of the least-squares fit "a level, then a straight line from block h" to the block
    means from `back` blocks before the crossing to `after` past it. A gradual slide began well
    before it crossed, a sudden drop barely (dated within a block); no fraction of the way
    suits both.

    Every break's fit is solved at once in closed form (_hinge_fits); where its best break
    does not stand clear of the others by far more than rounding can move a sum of squares,
    each break is fitted by numpy's least squares (_hinge_lstsq), which decides."""
    lo, hi = max(0, cross - back), min(len(y), cross + after + 1)
    # the fits read the block means and the breaks' places relative to each other only: the
    # same means give the same break wherever the window starts (an active finding's evidence
    # is judged again at every block, its means one block further back in the window each time)
    return lo + _hinge_in(np.ascontiguousarray(y[lo:hi], dtype=float).tobytes(), cross - lo)


@lru_cache(maxsize=512)
def _hinge_in(means: bytes, cross: int) -> int:
    """_hinge on block means (float64 bytes) that start at block 0."""
    v = np.frombuffer(means, dtype=float)
    t = np.arange(len(v), dtype=float)
    ok = np.isfinite(v)
    t, v = t[ok], v[ok]
    if len(v) < 4:
        return cross
    breaks = np.arange(0, min(cross + 1, int(t[-1])), dtype=float)  # h >= t[-1]: x all 0
    if not len(breaks):
        return cross
    at = _hinge_fits(t, v, breaks)
    if at is None:
        at = _hinge_lstsq(t, v, 0, cross)
    return min(at + 1, cross)  # block h is the last on the level: the move shows from h + 1


def _hinge_fits(t: np.ndarray, v: np.ndarray, breaks: np.ndarray) -> int | None:
    """The break with the least sum of squares (_hinge), each fit's coefficients in closed
    form and its residuals summed directly; None unless every other break's sum exceeds the
    least by a margin that no rounding of either method reaches (then numpy decides)."""
    with np.errstate(all="ignore"):
        x = np.maximum(0.0, t[None, :] - breaks[:, None])  # a row per break
        xm = x.mean(axis=1, keepdims=True)
        vm = v.mean()
        dx = x - xm
        b = (dx @ (v - vm)) / np.einsum("ij,ij->i", dx, dx)
        a = vm - b * xm[:, 0]
        r = v[None, :] - a[:, None] - b[:, None] * x
        sse = np.einsum("ij,ij->i", r, r)
        scale = float(np.dot(v, v))
        spread = float(np.dot(v - vm, v - vm))
    if not (np.isfinite(sse).all() and math.isfinite(scale)):
        return None
    k = int(np.argmin(sse))
    least = float(sse[k])
    margin = 1e-6 * least + 1e-9 * spread + 1e-12 * scale
    others = np.delete(sse, k)
    if len(others) and not bool((others - least > margin).all()):
        return None
    return int(breaks[k])


def _hinge_lstsq(t: np.ndarray, v: np.ndarray, lo: int, cross: int) -> int:
    """_hinge's break by numpy's least squares, one fit per break (ties: the earlier)."""
    best, at = math.inf, cross
    for h in range(lo, cross + 1):
        x = np.maximum(0.0, t - h)
        if not x.any():
            continue
        design = np.column_stack([np.ones_like(x), x])
        with np.errstate(over="ignore", invalid="ignore"):  # values near float max: no fit
            coef = np.linalg.lstsq(design, v, rcond=None)[0]
            sse = float(np.sum((v - design @ coef) ** 2))
        if sse < best * (1 - 1e-12):  # ties: the earlier break
            best, at = sse, h
    return at


@detector("shift", brief=True)
def shift(s: Series, p: Params) -> Evidence | None:
    """A persistent shift from the warm-up level: robust z AND (optionally) a ratio, k of m.

    Params: direction up|down, min_z (warm-up sigmas), min_ratio (level / warm-up median: >= for
    up, <= for down), min_abs (absolute change), k, m.
    """
    b = s.baseline
    if b is None:
        return None
    k, m = _k_m(p)
    up = str(p.get("direction", "up")) == "up"
    min_z = float(p.get("min_z", 4.0))
    sign = 1.0 if up else -1.0
    comp, rounds = p.get("_per"), p.get("_rounds")
    net = ""
    if comp is not None or rounds is not None:
        n, cap = int(p.get("_rounds_n", 8)), float(p.get("rounds_cap", 10))
        # the gate on the latest block first, counted per companion as _per_companion counts
        # it (its growth is 1 where none is explained: the mean divided by 1 is itself)
        longer, more = _growth(s.start[-1:], comp, rounds, n, cap)
        if not _shifted(float((s.mean[-1:] / (longer * more))[0]), b, p, up, min_z):
            return None
        s, net = _per_companion(s, comp, rounds, n, cap)
    last = float(s.mean[-1])
    if not _shifted(last, b, p, up, min_z):  # gate: the latest block, all criteria
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        z = sign * (s.mean - b.median) / b.scale
        mask = z >= min_z
        if "min_ratio" in p and b.median != 0:
            r = float(p["min_ratio"])
            ratios = s.mean / b.median
            mask &= (ratios >= r) if up else (ratios <= r)
        if "min_abs" in p:
            mask &= sign * (s.mean - b.median) >= float(p["min_abs"])
    mask &= np.isfinite(s.mean)
    edge = s.lo if up else s.hi
    persist, strong, run = _held_how(  # strong: the mean f x min_z out, every point past
        s, p, k, m, mask,
        lambda i, f: _shifted(float(s.mean[i]), b, p, up, f * min_z)
        and _shifted(float(edge[i]), b, p, up, min_z),
    )  # fmt: skip
    if not (strong or persist):
        return None
    i = _onset_index(mask)
    # A gradual move crosses the thresholds well after it began: walk back over the blocks
    # already a fifth of the way from the warm-up level to the current one (the level the
    # evidence stands on: the last k blocks, or the strong ones alone).
    if p.get("onset") == "hinge":
        i = _hinge(s.mean, i)
    else:
        now = float(nanmedian(s.mean[-min(k if persist else len(run), len(s)) :]))
        part = b.median + float(p.get("onset_frac", 0.2)) * (now - b.median)
        x = s.mean.tolist()  # (Python floats: the same arithmetic, indexed one by one)
        while i > 0 and math.isfinite(x[i - 1]) and sign * (x[i - 1] - part) >= 0:
            i -= 1
    level = float(nanmedian(s.mean[i:]))
    zz = float(nanmedian(z[i:]))
    ratio = level / b.median if b.median else math.inf
    word = "rose" if up else "fell"
    return _evidence(
        s,
        "shift",
        i,
        ""
        if p.get("_brief")
        else f"{s.metric}{net} {word} from its warm-up level {_fmt(b.median)} to {_fmt(level)} "
        f"(x{_fmt(ratio)}, {abs(zz):.1f} warm-up sigmas {'above' if up else 'below'} it, a "
        f"robust sigma of {_fmt(b.scale)}) "
        f"over steps {_steps(s, i)}{_extreme(s, i, b.median, level, up)}.",
        effect=zz,
        excess=_excess(zz, min_z),
        level=level,
        baseline=b.median,
        ratio=ratio,
        z=zz,
        sigma=b.scale,
    )


@screen("shift")
def _shift_screen(c: Column, p: Params) -> np.ndarray:
    rows, b = c.rows, c.baseline
    if b is None:
        return _never(rows)  # no warm-up level yet: shift does not judge
    up = str(p.get("direction", "up")) == "up"
    min_z = float(p.get("min_z", 4.0))
    sign = 1.0 if up else -1.0
    x = rows[:, MEAN]
    if c.companions:
        # counted per companion, the mean is divided by a growth >= 1: a rise past min_z
        # sigmas of a non-negative mean needs one in the mean itself (a smaller quotient,
        # and rounding keeps that order); anything else the detector decides
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return ~(up & (x >= 0) & ~(sign * (x - b.median) / b.scale >= min_z))
    # _shifted on the latest block mean
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ok = sign * (x - b.median) / b.scale >= min_z
        if "min_ratio" in p and b.median != 0:
            r = x / b.median
            ok &= (r >= float(p["min_ratio"])) if up else (r <= float(p["min_ratio"]))
        if "min_abs" in p:
            ok &= sign * (x - b.median) >= float(p["min_abs"])
    return ok


def _extreme(s: Series, i: int, base: float, level: float, up: bool) -> str:
    """"; peaking at X ..." when the window's extreme block goes more than twice as far
    from the warm-up level as its median does (a spike the median of the window hides)."""
    window = s.mean[i:]
    if not np.isfinite(window).any():
        return ""
    # np.nanargmax / np.nanargmin as numpy computes them (nan replaced by -inf / inf), without
    # their wrappers' cost
    j = int(np.argmax(np.where(np.isnan(window), -np.inf, window)) if up
            else np.argmin(np.where(np.isnan(window), np.inf, window)))  # fmt: skip
    x = float(window[j])
    if not abs(x - base) > 2 * abs(level - base):
        return ""
    where = f"in the block ending at step {int(s.end[i + j])}"
    return f"; {'peaking at' if up else 'down to'} {_fmt(x)} {where}"


def _shifted(x: float, b: Baseline, p: Params, up: bool, min_z: float) -> bool:
    """One value past every criterion of a shift: z, ratio to the warm-up level, absolute."""
    sign = 1.0 if up else -1.0
    if not sign * (x - b.median) / b.scale >= min_z:
        return False
    if "min_ratio" in p and b.median != 0:
        r = x / b.median
        if not (r >= float(p["min_ratio"]) if up else r <= float(p["min_ratio"])):
            return False
    return "min_abs" not in p or sign * (x - b.median) >= float(p["min_abs"])


def _per_companion(
    s: Series, comp: Series | None, rounds: Series | None = None, n: int = 8, cap: float = 10.0
) -> tuple[Series, str]:
    """`s` with each block mean divided by the growth its companions explain (max 1: explained
    growth is forgiven, a shrinking companion never inflates), and what it was counted per.

    - comp (`per`): its growth over its warm-up level. Rollout time per response_length:
      generation time scales with the tokens generated, so longer reasoning is not a slower
      rollout (verl logs timing_per_token_ms/gen for the same reason).
    - rounds (`rounds`, a reward in [0, 1] read as the success rate p): the generation rounds
      per step DAPO's dynamic sampling needs, 1 / (1 - u), where u = p^n + (1 - p)^n is the
      share of groups of n rollouts that come out all correct or all wrong (dropped and
      refilled) when every prompt succeeds at the rate p; forgiven: its growth over the
      warm-up's. Prompts of mixed difficulty make more groups uniform than that: this counts
      the rounds a rising reward costs at the least, so a slowdown past them stays evidence.
      Rounds are capped at `cap` (10: the max_num_gen_batches of verl's DAPO recipe scripts).
      A reward outside [0, 1] is no success rate: no discount.
    """
    longer, more = _growth(s.start, comp, rounds, n, cap)
    growth = longer * more
    if not (growth > 1.0).any():
        return s, ""
    raw = s.raw.copy()
    raw[:, MEAN : HI + 1] = raw[:, MEAN : HI + 1] / growth[:, None]  # mean, min and max alike
    said = []
    if (longer > 1.0).any() and comp is not None:
        said.append(f"per generated token ({comp.metric} x{_fmt(float(longer[-1]))} at the end)")
    if (more > 1.0).any():
        said.append(
            "per generation round DAPO's dynamic sampling needs at that reward "
            f"(x{_fmt(float(more[-1]))} the warm-up's at the end)"
        )
    net = Series(
        metric=s.metric, raw=raw, baseline=s.baseline, peak=None, peak_step=None, peak3=None,
        peak3_step=None, trough=None, trough_step=None, blocks_total=s.blocks_total,
    )
    return net, " counted " + " and ".join(said)


def _growth(
    starts: np.ndarray, comp: Series | None, rounds: Series | None, n: int, cap: float
) -> tuple[np.ndarray, np.ndarray]:
    """The growth each companion of _per_companion explains at the blocks starting at
    `starts` (each block's on its own: a subset of the blocks gives the same values)."""
    longer, more = np.ones(len(starts)), np.ones(len(starts))
    if comp is not None and comp.baseline is not None and comp.baseline.median > 0 and len(comp):
        with np.errstate(invalid="ignore", divide="ignore"):
            longer = np.maximum(1.0, _aligned(starts, comp) / comp.baseline.median)
    if rounds is not None and rounds.baseline is not None and len(rounds) and _unit(rounds):
        def needed(p: Any) -> Any:  # rounds per step at success rate p, n rollouts per group
            uniform = np.clip(p, 0.0, 1.0) ** n + np.clip(1.0 - p, 0.0, 1.0) ** n
            return 1.0 / np.maximum(1.0 - uniform, 1.0 / cap)

        with np.errstate(invalid="ignore", divide="ignore"):
            base = needed(rounds.baseline.median)
            more = np.maximum(1.0, needed(_aligned(starts, rounds)) / base)
    longer = np.where(np.isfinite(longer), longer, 1.0)
    more = np.where(np.isfinite(more), more, 1.0)
    return longer, more


def _unit(s: Series) -> bool:
    """Every logged value of the window within [0, 1] (a success rate)."""
    lo, hi = s.lo[np.isfinite(s.lo)], s.hi[np.isfinite(s.hi)]
    return bool(len(lo)) and float(lo.min()) >= 0.0 and float(hi.max()) <= 1.0


def _start_ref(first: float, first_range: tuple[float, float], up: bool) -> float:
    """from_start's reference: the first block's lowest point for a rise, its highest for a
    fall (its mean when the range is unknown)."""
    ref = first_range[0] if up else first_range[1]
    return ref if math.isfinite(ref) else first


def _past_start(x: np.ndarray, first: float, up: bool, p: Params) -> np.ndarray:
    """Block means `x` past from_start's thresholds from the reference `first`."""
    sign = 1.0 if up else -1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = sign * (x - first) >= float(p.get("min_abs", 0.0))
        if "min_ratio" in p and first > 0:
            r = x / first
            ok &= (r >= float(p["min_ratio"])) if up else (r <= float(p["min_ratio"]))
    return ok & np.isfinite(x)


@detector("from_start")
def from_start(s: Series, p: Params) -> Evidence | None:
    """A persistent move away from the run's first logged block (its level before training
    moved it): `direction` up|down, `min_ratio` (level / first: >= for up, <= for down) and
    `min_abs` (absolute change), k of the last m blocks. Judged from the second block on. The
    reference is the first block's lowest point for a rise (its highest for a fall): a
    blow-up at step 4 of a 5-step first block lifts that block's mean, not its first steps."""
    up = str(p.get("direction", "up")) == "up"
    first = _start_ref(s.first, s.first_range, up)
    if not math.isfinite(first) or len(s) < 2:
        return None
    k, m = _k_m(p)
    if not bool(_past_start(s.mean[-1:], first, up, p)[0]):
        return None
    mask = _past_start(s.mean, first, up, p)
    mask[0] = mask[0] and s.blocks_total > len(s)  # the first block is the reference itself
    if not _persistent(mask, k, m):
        return None
    i = _onset_index(mask)
    level = float(nanmedian(s.mean[i:]))
    ratio = level / first if first else math.inf
    word = "rose" if up else "fell"
    need = float(p.get("min_ratio", 1.0)) if "min_ratio" in p and first > 0 else 1.0
    return _evidence(
        s,
        "from_start",
        i,
        f"{s.metric} {word} from its first logged level {_fmt(first)} to {_fmt(level)} "
        f"(x{_fmt(ratio)}) over steps {_steps(s, i)}.",
        effect=ratio,
        excess=_excess(ratio, need) if up else _excess(need, max(ratio, 1e-9)),
        first=first,
        level=level,
        ratio=ratio,
    )


@screen("from_start", baseless=True)
def _from_start_screen(c: Column, p: Params) -> np.ndarray:
    # from_start's gate: the latest block past the thresholds from the run's first level
    up = str(p.get("direction", "up")) == "up"
    first = _start_ref(c.first[0], (c.first[1], c.first[2]), up)
    if not math.isfinite(first):
        return _maybe(c.rows)
    return _past_start(c.rows[:, MEAN], first, up, p)


def _near_high_start(x: np.ndarray, first: float, p: Params) -> np.ndarray:
    """Block means `x` within x`max_ratio` of a first level `first` that is at or above
    `value` (all False when it is not, or unknown)."""
    if not (math.isfinite(first) and first >= float(p["value"])):
        return np.zeros(len(x), dtype=bool)
    ratio = float(p.get("max_ratio", 3.0))
    with np.errstate(invalid="ignore"):
        return (x >= first / ratio) & (x <= first * ratio) & np.isfinite(x)


@detector("high_from_start")
def high_from_start(s: Series, p: Params) -> Evidence | None:
    """Already high at the run's first logged block (its every point at or above `value`) and
    never far from that level since: the latest blocks within x`max_ratio` of it (either way),
    k of the last m. A KL to the reference that reads ~1 nat a token from step 1 and holds
    there is a reference that is not the policy's start; one that grows from 0 is a drift."""
    first = _start_ref(s.first, s.first_range, True)
    if not bool(_near_high_start(s.mean[-1:], first, p)[0]):  # gate on the latest block
        return None
    k, m = _k_m(p)
    mask = _near_high_start(s.mean, first, p)
    if not _persistent(mask, k, m):
        return None
    i = _onset_index(mask)
    value = float(p["value"])
    level = float(nanmedian(s.mean[i:]))
    top = float(np.nanmax(s.hi[i:]))
    return _evidence(
        s,
        "high_from_start",
        i,
        f"{s.metric} was already {_fmt(first)} at the run's first logged steps (at or above "
        f"{_fmt(value)}) and stayed near it, median {_fmt(level)} and at most "
        f"{_fmt(top)} over steps {_steps(s, i)}: it never grew from 0.",
        effect=first,
        excess=_excess(first, value),
        first=first,
        level=level,
        threshold=value,
    )


@screen("high_from_start", baseless=True)
def _high_from_start_screen(c: Column, p: Params) -> np.ndarray:
    first = _start_ref(c.first[0], (c.first[1], c.first[2]), True)
    if not math.isfinite(first):
        return _maybe(c.rows)
    return _near_high_start(c.rows[:, MEAN], first, p)


@detector("held")
def held(s: Series, p: Params) -> Evidence | None:
    """Still where it started: the latest blocks within `max_move` (relative) of the run's
    first logged block mean, k of the last m, once the run spans `min_steps` steps. A level
    under `min_level` at the start is not judged (a relative move of ~0 means nothing). Entropy
    held at its start says the policy has not moved: learning spends entropy."""
    first = float(s.first)
    if not (math.isfinite(first) and first >= float(p.get("min_level", 0.0)) and first > 0):
        return None
    if len(s) < 2 or s.end[-1] - s.start[0] + 1 < p.get("min_steps", 0):
        return None
    move = float(p.get("max_move", 0.02))
    high = s.first_range[1]
    high_too = bool(p.get("also_high")) and math.isfinite(high) and high > 0
    # gate: the latest block, in the float64 arithmetic of the mask below (nan: no)
    last = s.mean[-1]
    off_last = abs(last / first - 1.0)
    if high_too:
        off_last = np.fmin(off_last, abs(last / high - 1.0))
    if not off_last <= move:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(s.mean / first - 1.0)
        # `also_high`: or back at the first block's highest point, the untrained level of a
        # metric that training lowers (entropy) when the first steps broke it and the block's
        # mean sits between the two
        ref, what = first, "its first logged level"
        if high_too:
            to_high = np.abs(s.mean / high - 1.0)
            if bool(to_high[-1] < rel[-1]):
                ref, what = high, "the highest point of its first logged block"
            rel = np.fmin(rel, to_high)
        mask = rel <= move
    mask[0] = mask[0] and s.blocks_total > len(s)  # the first block is the reference itself
    if not bool(mask[-1]):
        return None
    k, m = _k_m(p)
    if not _persistent(mask, k, m):
        return None
    i = _onset_index(mask)
    level = float(nanmedian(s.mean[i:]))
    off = float(np.nanmax(rel[max(i, 1):])) if len(rel) > 1 else 0.0
    return _evidence(
        s,
        "held",
        i,
        f"{s.metric} stayed within {off:.1%} of {what} {_fmt(ref)} "
        f"(median {_fmt(level)} over steps {_steps(s, i)}): it has not moved from its start.",
        effect=off,
        excess=_excess(move, max(off, 1e-12)),
        first=ref,
        level=level,
        threshold=move,
    )


@screen("held", baseless=True)
def _held_screen(c: Column, p: Params) -> np.ndarray:
    # held's gate: the latest block within `max_move` of the first level (or of the first
    # block's highest point, `also_high`), in the detector's float64 arithmetic
    first, high = float(c.first[0]), float(c.first[2])
    if not (math.isfinite(first) and first >= float(p.get("min_level", 0.0)) and first > 0):
        return np.zeros(len(c.rows), dtype=bool)
    rows = c.rows
    x = rows[:, MEAN]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        off = np.abs(x / first - 1.0)
        if bool(p.get("also_high")) and math.isfinite(high) and high > 0:
            off = np.fmin(off, np.abs(x / high - 1.0))
        near = off <= float(p.get("max_move", 0.02))
    # then its persistence: k of the last m blocks of the window near (the detector's mask
    # is this one, with its first block's cleared where it is the run's first), over a window
    # of 2 blocks or more spanning `min_steps`
    k, m = _k_m(p)
    i = np.arange(len(rows))
    lo = np.maximum(0, i - c.window + 1)  # each row's window starts there
    count = np.r_[0, np.cumsum(near)]
    held_k = count[i + 1] - count[np.maximum(lo, i - m + 1)] >= np.minimum(k, i - lo + 1)
    long = (i - lo >= 1) & ~(rows[:, END] - rows[lo, START] + 1 < p.get("min_steps", 0))
    return near & held_k & long


@detector("wasted")
def wasted(s: Series, p: Params) -> Evidence | None:
    """A share metric (zero_std_frac: groups whose samples all scored alike; grad_zero: steps
    whose gradient was exactly 0) at or above `value`, k of the last m blocks: that share of
    the rollouts (or updates) taught nothing. Says the share over the episode (block means
    weighted by their logged points) and, from the reward (`per`: reward_mean) on a 0..1 scale,
    whether the uniform groups are mostly all wrong (`hard_below`: too hard) or all right
    (`easy_above`: too easy)."""
    value = float(p["value"])
    if not float(s.mean[-1]) >= value:  # gate on the latest block (nan: no)
        return None
    k, m = _k_m(p)
    with np.errstate(invalid="ignore"):
        mask = (s.mean >= value) & np.isfinite(s.mean)
    if not _persistent(mask, k, m):
        return None
    i = _onset_index(mask)
    ok = np.isfinite(s.mean[i:]) & (s.count[i:] > 0)
    weights = s.count[i:][ok]
    share = float(np.sum(s.mean[i:][ok] * weights) / np.sum(weights))
    what = SHARES.get(s.metric, "")
    said = (
        f"{_pct(share)} of the logged steps over steps {_steps(s, i)} {what}"
        if what
        else f"{_pct(share)} of the groups over steps {_steps(s, i)} scored alike"
    )
    level, verdict = math.nan, "unknown"
    comp = p.get("_per")
    if comp is not None and len(comp):
        with np.errstate(invalid="ignore"):
            at = _aligned(s.start[i:], comp)
        level = nanmedian(at)
        if not math.isfinite(level) and np.isfinite(comp.mean).any():
            level = nanmedian(comp.mean)
    if math.isfinite(level) and comp is not None and _unit(comp):
        if level <= float(p.get("hard_below", 0.3)):
            verdict = "too_hard"
            why = (
                f"the reward stays at {_fmt(level)} on a 0..1 scale, so the uniform groups are "
                "mostly all wrong: the prompts are too hard for the model"
            )
        elif level >= float(p.get("easy_above", 0.7)):
            verdict = "too_easy"
            why = (
                f"the reward stays at {_fmt(level)} on a 0..1 scale, so the uniform groups are "
                "mostly all right: the prompts are too easy for the model"
            )
        else:
            verdict = "mixed"
            why = (
                f"the reward stays at {_fmt(level)} on a 0..1 scale: some prompts are solved "
                "by every sample, others by none"
            )
    elif math.isfinite(level):
        why = (
            f"the reward stays at {_fmt(level)}, not on a 0..1 scale: too hard or too easy is "
            "not told"
        )
    else:
        why = "no reward is logged to tell too hard from too easy"
    return _evidence(
        s,
        "wasted",
        i,
        f"{said}: that share of the rollouts' compute gave no gradient (zero advantage); {why}.",
        effect=share,
        excess=_excess(share, value),
        share=share,
        threshold=value,
        reward_level=level,
        difficulty=verdict,
    )


@screen("wasted", baseless=True)
def _wasted_screen(c: Column, p: Params) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return c.rows[:, MEAN] >= float(p["value"])  # wasted's gate on the latest block


@detector("constant")
def constant(s: Series, p: Params) -> Evidence | None:
    """The latest logged points are all the same number (at least `min_points` of them, in
    whole blocks back from the latest): a reward function that returns a constant, visible
    from the first steps whatever the run's age, and after a first point or two that differed.
    Exact equality: a printed 0.000 that hides 0.0004 is equal too, which is why the rules
    pair this with a second sign (a gradient that is tiny as well)."""
    n = len(s)
    if n == 0 or s.count[-1] == 0 or s.nonfinite[-1] > 0 or s.lo[-1] != s.hi[-1]:
        return None
    value = float(s.lo[-1])
    i = n
    while i > 0 and s.nonfinite[i - 1] == 0 and (
        s.count[i - 1] == 0 or (s.lo[i - 1] == value and s.hi[i - 1] == value)
    ):
        i -= 1
    while i < n and s.count[i] == 0:  # the run starts at its first logged block
        i += 1
    points = int(s.count[i:].sum())
    need = int(p.get("min_points", 3))
    if points < need:
        return None
    return _evidence(
        s,
        "constant",
        i,
        f"{s.metric} was exactly {_fmt(value)} at every one of its latest {points} logged "
        f"points, over steps {_steps(s, i)}.",
        effect=float(points),
        excess=points / need,
        value=value,
        points=points,
    )


@screen("constant", baseless=True)
def _constant_screen(c: Column, p: Params) -> np.ndarray:
    rows = c.rows
    return (rows[:, COUNT] != 0) & (rows[:, NONFINITE] == 0) & (rows[:, LO] == rows[:, HI])


@detector("stopped", reads_run_end=True)
def stopped(s: Series, p: Params) -> Evidence | None:
    """The metric was logged, then no more while the run went on: for at least `min_blocks`
    blocks and `min_frac` of the run past its last value. A NaN written as JSON null (pandas,
    orjson, W&B exports) or TRL's None for a reward whose functions returned NaN reads as "not
    logged": silence where the step goes on is evidence, not absence."""
    if s.run_end is None or len(s) == 0:
        return None
    last = int(s.end[-1])
    gone = s.run_end - last
    if gone <= 0 or int(s.count.sum() + s.nonfinite.sum()) < int(p.get("min_points", 3)):
        return None
    block = median(s.end - s.start + 1)
    span = s.run_end - int(s.start[0]) + 1
    if gone < float(p.get("min_blocks", 2)) * block or gone < float(p.get("min_frac", 0.1)) * span:
        return None
    ev = _evidence(
        s,
        "stopped",
        len(s) - 1,
        f"{s.metric} was last logged at step {last}; the run went on to step {s.run_end} "
        f"({gone} steps) without it: a NaN written as null/None reads as missing.",
        effect=gone / span,
        excess=1.0 + gone / span,
        last_logged_step=last,
        run_end=s.run_end,
    )
    ev.statistic["onset_step"] = last + 1
    return replace(ev, window=(last + 1, s.run_end))


@screen("stopped", baseless=True)
def _stopped_screen(c: Column, p: Params) -> np.ndarray:
    # a metric logged in the run's latest block has not stopped (`reads_run_end`: the engine
    # asks only there)
    return np.zeros(len(c.rows), dtype=bool)


def _level_screen(rows: np.ndarray, p: Params, above: bool) -> np.ndarray:
    value = float(p["value"])
    x = rows[:, {"mean": MEAN, "max": HI, "min": LO}[str(p.get("stat", "mean"))]]
    with np.errstate(invalid="ignore"):
        return (x >= value) if above else (x <= value)
