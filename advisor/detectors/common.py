"""Helpers more than one detector family uses: persistence, onsets, evidence and its wording."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from advisor.detectors.registry import Column, Params
from advisor.detectors.series import COUNT, HI, LO, MEAN, Series, median, robust_scale
from advisor.types import Evidence

# Past this magnitude the square of a value (and a sum of squares) overflows a double.
_SQUARE_SAFE = 2.0**500


def _pow2_scale(x: np.ndarray) -> float:
    """1.0 for values whose squares stay finite; else the power of two that brings the largest
    of them under 1. A power of two scales every sum, product and quotient exactly, so a
    statistic of x * _pow2_scale(x), divided back, is the statistic of x without overflow (a value
    of 1e300, which a run logs only when its loss has blown up, squares to inf)."""
    big = float(np.max(np.abs(x), initial=0.0))
    if not big > _SQUARE_SAFE or not math.isfinite(big):
        return 1.0
    return 2.0 ** -math.frexp(big)[1]


def _window_scale(s: Series) -> float:
    """Noise sigma of single points from the whole window, floored at 1 % of the level: the
    larger of the robust (median) and the plain (rms) second differences / sqrt 6, both blind
    to a local linear trend. Validation noise is heavy-tailed; the robust estimate alone read
    it 1.3-2.6x too small on runs it was not tuned on.

    Differences are not blind to a bend (a learning curve levelling off) nor to a fall: on a
    short series (9-16 evaluations) those fill most second differences, and the fall itself
    inflates the noise it is tested against 1.6-3.2x. The spread around the best
    rise-then-fall fit (_unimodal_sd) is blind to both: a rise, a plateau, a step or a decline
    all lie inside that shape. It is noisier (it spends degrees of freedom on the fit), so it
    replaces the differences only when they exceed it by more than noise alone makes them
    (_diff_excess_95): then the shape, not the noise, filled the differences."""
    ok = np.isfinite(s.mean)
    x = s.mean[ok]
    level = float(median(x)) if ok.any() else 0.0
    floor = max(0.01 * abs(level), 1e-12)
    sigma = robust_scale(s.mean, floor, line=False)
    if len(x) >= 5:
        c = _pow2_scale(x)  # scaled before the differences are squared (see _pow2_scale)
        d2 = np.diff(x * c if c != 1.0 else x, n=2)
        sigma = max(sigma, math.sqrt(float(np.mean(d2 * d2)) / 6.0) / c)
    if len(x) >= 6:
        shape_sd = _unimodal_sd(x.tolist())
        if sigma > shape_sd * _diff_excess_95(len(x)):
            sigma = max(shape_sd, floor)
    return sigma


def _diff_excess_95(n: int) -> float:
    """95th percentile of (difference estimate / _unimodal_sd) over n points of pure Gaussian
    noise, where no shape inflates either: 1 + 2.56 / sqrt(n - 5.5) is within 0.03 of the
    simulated quantiles for n = 9..32 (20,000 series each) and above them for fewer points."""
    return 1.0 + 2.56 / math.sqrt(n - 5.5)


# Residual degrees of freedom a rise-then-fall fit must leave before its spread is trusted:
# with fewer, the fit has followed (nearly) every point and its spread says nothing.
_UNIMODAL_MIN_DF = 3


def _unimodal_sd(x: list[float]) -> float:
    """Residual sd around the least-squares rise-then-fall fit of `x` (nondecreasing up to a
    mode, nonincreasing after it), or inf with fewer than _UNIMODAL_MIN_DF residual degrees.

    The degrees of freedom of an isotonic fit are its number of level sets (Meyer & Woodroofe
    2000, "On the degrees of freedom in shape-restricted regression"), so the residual sum of
    squares over (points - level sets) estimates the noise variance whatever the curve's shape
    inside that family; the mode is chosen too, which leaves it 7-18 % low on pure noise (32-9
    points; _diff_excess_95 is simulated with it as it is). A curve that rises steeply leaves
    few degrees (each rising point is its own level): then the estimate is not used."""
    n = len(x)
    rise_rss, rise_k = _isotonic_prefixes(x)
    fall_rss, fall_k = _isotonic_prefixes(x[::-1])  # a fall read backwards is a rise
    best_rss, best_k = rise_rss[-1], rise_k[-1]
    for m in range(n - 1):  # rise on x[:m + 1], fall on x[m + 1:]
        rss = rise_rss[m] + fall_rss[n - 2 - m]
        if rss < best_rss:
            best_rss, best_k = rss, rise_k[m] + fall_k[n - 2 - m]
    df = n - best_k
    return math.sqrt(max(best_rss, 0.0) / df) if df >= _UNIMODAL_MIN_DF else math.inf


def _isotonic_prefixes(x: list[float]) -> tuple[list[float], list[int]]:
    """Residual sum of squares and level sets of the nondecreasing least-squares fit of every
    prefix of x (pool adjacent violators, one pass: each prefix's fit extends the last)."""
    pools: list[tuple[float, int, float]] = []  # (sum, count, sum of squares) per level set
    rss = 0.0
    out_rss, out_k = [], []
    for v in x:
        tot, cnt, sq = v, 1, v * v
        while pools and pools[-1][0] * cnt >= tot * pools[-1][1]:  # mean before >= this mean
            a, c, q = pools.pop()
            rss -= q - a * a / c
            tot, cnt, sq = tot + a, cnt + c, sq + q
        rss += sq - tot * tot / cnt
        pools.append((tot, cnt, sq))
        out_rss.append(rss)
        out_k.append(len(pools))
    return out_rss, out_k


def _persistent(mask: np.ndarray, k: int, m: int) -> bool:
    """At least k of the last m blocks satisfy the condition, the latest one included."""
    if len(mask) == 0 or not mask[-1]:
        return False
    return int(mask[-m:].sum()) >= min(k, len(mask))


def _onset_index(mask: np.ndarray, gap: int = 1) -> int:
    """Index of the first block of the excursion that ends at the last block.

    Walks back over satisfying blocks, tolerating `gap` non-satisfying blocks in a row (noise).
    """
    flags = mask.tolist()  # Python bools: indexed one by one below
    i = len(flags) - 1
    j = i
    misses = 0
    while j - 1 >= 0:
        j -= 1
        if flags[j]:
            i, misses = j, 0
        else:
            misses += 1
            if misses > gap:
                break
    return i


def _k_m(p: Params, k: int = 3, m: int = 4) -> tuple[int, int]:
    return int(p.get("k", k)), int(p.get("m", m))


# Graded persistence. k of m blocks guard against chance; one block far past the
# threshold is as strong a guard. Three independent blocks at z pool (Stouffer) to z x sqrt 3
# = 1.73 z; consecutive blocks of autocorrelated noise are not independent, so the block must
# be `strong` (2) times past the statistic's threshold. It must also be a level, not a spike:
# every logged point of the block past the plain thresholds (its min for a rise, its max for
# a fall), and at least STRONG_POINTS of them: a sparse log (TRL every 10 steps: 1-2 points a
# block) pools the latest blocks until they hold that many, each of them strong, as long as
# that is fewer blocks than k.
STRONG_POINTS = 3


def _strong_run(s: Series, p: Params, k: int) -> tuple[float, range]:
    """(`strong` factor, indices of the latest blocks that must each be strong), or (0, empty)
    when the leaf has no `strong` or fewer than k blocks cannot hold STRONG_POINTS points."""
    factor = float(p.get("strong", 0.0))
    n = len(s)
    if factor <= 1.0:
        return 0.0, range(0)
    points = 0
    for j in range(1, min(k - 1, n) + 1):
        if s.nonfinite[n - j] > 0 or s.count[n - j] == 0:
            break
        points += int(s.count[n - j])
        if points >= STRONG_POINTS:
            return factor, range(n - j, n)
    return 0.0, range(0)


def _held_how(
    s: Series,
    p: Params,
    k: int,
    m: int,
    mask: np.ndarray,
    each_strong: Callable[[int, float], bool],
) -> tuple[bool, float, range]:
    """(k of the last m blocks hold, the `strong` factor if each of the latest blocks
    `_strong_run` names is strong by `each_strong(index, factor)` else 0, those blocks)."""
    strong, run = _strong_run(s, p, k)
    if strong and not all(each_strong(i, strong) for i in run):
        strong = 0.0
    return _persistent(mask, k, m), strong, run


def _excess(effect: float, threshold: float) -> float:
    """How far past its threshold an effect is (1 = at the threshold)."""
    if threshold == 0 or not math.isfinite(threshold):
        return 1.0
    return abs(effect) / abs(threshold)


def _fmt(x: float) -> str:
    if x is None or not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 1000 or ax < 1e-3:
        return f"{x:.2e}"
    return f"{x:.3g}"


def _evidence(
    s: Series,
    name: str,
    lo_idx: int,
    summary: str,
    effect: float,
    excess: float,
    **stat: Any,
) -> Evidence:
    """Evidence over the window [start of block lo_idx, end of the last block]. Every field is
    made here of its declared type (str, a pair of ints, a dict, a float or None), so the
    model is built without validation: an active finding's evidence is rebuilt every block."""
    onset = int(s.start[lo_idx])
    statistic = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in stat.items()}
    statistic["onset_step"] = onset
    statistic["excess"] = round(float(excess), 4)
    return Evidence(
        metric=s.metric,
        detector=name,
        window=(onset, int(s.end[-1])),
        statistic=statistic,
        effect_size=round(float(effect), 4) if math.isfinite(effect) else None,
        summary=summary,
    )


def _steps(s: Series, i: int) -> str:
    return f"{int(s.start[i])}–{int(s.end[-1])}"


def _aligned(starts: np.ndarray, comp: Series) -> np.ndarray:
    """The companion's block means at the blocks starting at `starts` (nan where it has no
    such block)."""
    idx = np.clip(np.searchsorted(comp.start, starts), 0, len(comp) - 1)
    return np.where(comp.start[idx] == starts, comp.mean[idx], np.nan)


def _trailing_mean(x: np.ndarray, n: int) -> np.ndarray:
    """Mean of the last n blocks at each block (nan until n blocks exist)."""
    out = np.full(len(x), np.nan)
    if len(x) >= n:
        c = np.convolve(x, np.ones(n) / n, mode="valid")
        out[n - 1 :] = c
    return out


def _trimmed_means(s: Series) -> np.ndarray:
    """Each block's mean without its lowest and highest finite value (blocks of 3 or more;
    of 3, that is the median), from the block's sum, min and max; smaller blocks as they are."""
    n = s.count
    with np.errstate(invalid="ignore", divide="ignore"):
        trimmed = (s.mean * n - s.lo - s.hi) / (n - 2)
    return np.where(n >= 3, trimmed, s.mean)


def _maybe(rows: np.ndarray) -> np.ndarray:
    return np.ones(len(rows), dtype=bool)


def _never(rows: np.ndarray) -> np.ndarray:
    return np.zeros(len(rows), dtype=bool)


def _trailing(x: np.ndarray, w: int) -> np.ndarray:
    """x's last `w` values at each row (rows before the first w padded with nan)."""
    pad = np.concatenate([np.full(w - 1, np.nan), x])
    return np.lib.stride_tricks.sliding_window_view(pad, w)


def _trimmed_rows(rows: np.ndarray) -> np.ndarray:
    """_trimmed_means of block records."""
    n, mean = rows[:, COUNT], rows[:, MEAN]
    with np.errstate(invalid="ignore", divide="ignore"):
        trimmed = (mean * n - rows[:, LO] - rows[:, HI]) / (n - 2)
    return np.where(n >= 3, trimmed, mean)


_MARGIN = 1e-9  # relative slack of the bounds below: far beyond float rounding (~1e-15)


def _by_window(
    c: Column,
    k: int,
    w_max: int,
    min_blocks: int,
    may: Callable[[np.ndarray, int], np.ndarray],
    young: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """For detectors judged on the latest `w` = min(w_max, blocks in the window - (k - 1))
    blocks: may(ends, w) at the rows ending windows of each length (below min_blocks the
    detector does not judge); the lengths that end one row each (a young run's window,
    growing a block at a time) at once by young(ends, their lengths), when given."""
    n = np.minimum(np.arange(len(c.rows)) + 1, c.window)
    ws = np.minimum(w_max, n - (k - 1))
    ws[: c.ask] = -1
    out = _maybe(c.rows)
    out[c.ask :] = False
    lengths, counts = np.unique(ws[ws >= min_blocks], return_counts=True)
    if young is not None and (counts == 1).sum() > 2:
        ends = np.flatnonzero(np.isin(ws, lengths[counts == 1]))
        out[ends] = young(ends, ws[ends])
        lengths = lengths[counts > 1]
    for w in lengths.tolist():
        ends = np.flatnonzero(ws == w)
        out[ends] = may(ends, w)
    return out


def _rows_of(rows: np.ndarray, ends: np.ndarray, ws: np.ndarray, col: int
             ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Column `col` of the windows of lengths `ws` ending at `ends`, right-aligned in one
    array (nan before a shorter window's first row), and where each window's rows are."""
    width = int(ws.max())
    at = np.arange(width)[None, :]
    inside = at >= (width - ws)[:, None]
    idx = np.where(inside, ends[:, None] - width + 1 + at, 0)
    return np.where(inside, rows[idx, col], np.nan), inside


def _row_median(sorted_rows: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The median of each row's first m values (rows sorted, nan last), as `median` takes it."""
    r = np.arange(len(m))
    lo, hi = sorted_rows[r, (m - 1) // 2], sorted_rows[r, m // 2]
    return np.where(m % 2 == 1, lo, (lo + hi) / 2.0)


def _peaks(c: Column) -> np.ndarray | None:
    """Series.peak at each row from c.new on (nan before), as the engine keeps it: the highest
    finite block mean so far; None where that is not a plain running maximum (a nan mean
    became the peak)."""
    means = c.rows[c.new :, MEAN]
    if c.peak is not None and math.isnan(c.peak):
        return None
    if c.peak is None and len(means) and math.isnan(means[0]):
        return None
    start = -math.inf if c.peak is None else c.peak
    out = np.full(len(c.rows), np.nan)
    with np.errstate(invalid="ignore"):
        out[c.new :] = np.fmax.accumulate(np.r_[start, means])[1:]
    return out
