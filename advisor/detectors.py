"""Detectors: small pure functions over one metric's block statistics, registered by name.

The engine (`advisor.engine.Monitor`) never keeps a run's raw history. Each metric's values are
folded into *blocks* of a fixed number of steps (sum, count, non-finite count, min, max and the
sums a least-squares line needs); a block's mean is what most detectors test, because a single
RL step is mostly noise (knowledge.md "How to judge": 50 steps show no trend). A detector sees a
`Series`: the last M block records of one metric (bounded), the metric's warm-up `Baseline`
and its run-wide peaks. It returns an `advisor.types.Evidence` (window, statistic with the
numbers, effect size, a sentence a person can check against the curve) or None. Each detector
first checks the latest block alone (persistence requires it), so a healthy evaluation costs a
few float operations per rule.

False-alarm budget (designed for; held by the accuracy harness, not a unit test): at most ~1 %
of healthy runs may raise any one warning-or-error symptom, because a wrong alarm costs as much
as a miss. RL curves are noisy and autocorrelated, so naive per-step testing would alarm on
most healthy runs. The guards, each cutting the rate:
- test block means, not raw points (averaging removes most of the per-step noise);
- calibrate every scale on the run's own warm-up, robustly: the larger of the second-difference
  estimator (blind to the warm-up's trend) and the MAD around a Theil-Sen line (sees the slow
  wander of autocorrelated noise; a symptom starting inside the warm-up does not inflate it);
- require a direction AND an effect size: a robust z of 3 to 6 warm-up sigmas together with a
  ratio to the warm-up level (entropy <= 0.3 x) or an absolute level the guide names;
- require persistence: k of the last m blocks (typically 3 of 4), the latest included; under
  independence one 4-sigma block has p ~ 6e-5 and three of four ~ 1e-12, which leaves room for
  autocorrelation and ~100 evaluations per run. Graded (`strong`): the latest block alone (or
  the latest few, fewer than k, holding >= 3 points) suffices when its statistic is 2 x past
  the threshold and every logged point of it passes the plain thresholds: a level, not a spike
  (a KL x200 need not wait for three blocks);
- oscillation needs repeated swings (a zigzag with at least three turns, or 5 of 6 noisy spans)
  larger than the run's own long-run wander (`Series.wander`: a 6-block warm-up cannot show how
  far autocorrelated block means drift),
  a KL explosion needs the level to multiply itself over a fixed lag (a saturating healthy KL
  does not) and to reach an absolute floor, a divergence needs half the smoothed peak lost for
  three blocks AND something blowing up;
- trends use Mann-Kendall (Kendall's tau on the block index, computed as scipy.stats.kendalltau
  does) and Theil-Sen slopes, both robust to outliers, and count only when the total change is
  also large.

Every detector also returns where the current excursion began (`statistic["onset_step"]`):
the first block of the run of blocks satisfying the condition, extended back over a gradual
approach (a fifth of the way there, or steep growth): the onset of a symptom, not the step at
which it became conclusive.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from advisor.types import Evidence

Params = Mapping[str, Any]
Detector = Callable[["Series", Params], Evidence | None]
# Detectors that read a metric's level at its companion's (`per`) best 3-block mean: the
# engine keeps that level when the best is set (Series.peak3_ctx of the companion).
AT_COMPANION_PEAK = frozenset({"shared_fall"})

DETECTORS: dict[str, Detector] = {}
# Detectors that read `Series.run_end` (the run's last step, which moves on while the metric
# is not logged): the engine reuses a detector's last result while its metrics' block
# history is unchanged, except for these (tests/engine/test_same_judgement.py checks the set).
READS_RUN_END = frozenset({"stopped"})
# Detectors that read `Series.wander` or `Series.span_wander` (the run's long-run wander): the
# engine keeps those chunks only for the metrics such a leaf judges (tests/engine/
# test_same_judgement.py checks the set).
READS_WANDER = frozenset({"volatility"})
# Detectors that leave their evidence's summary empty when the params hold `_brief` (every
# other field as without it): the engine asks so for an active finding's refresh, and builds
# the summary only of the evidence the finding keeps (Monitor.push_columns).
BRIEF = frozenset({"shift", "above", "below"})

# Metrics that are the share of logged steps where something held (the engine derives them,
# advisor.engine.DERIVED): what held, for the evidence sentence.
SHARES: dict[str, str] = {"grad_zero": "had a gradient of exactly 0"}

# 1.4826 turns a median absolute deviation into a normal sigma.
_MAD_TO_SIGMA = 1.4826


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


def median(x: Any) -> float:
    """np.median of a 1-D sequence, exactly (NaN if it holds a NaN or is empty), without numpy's
    masked-array check: that check imports numpy.ma, ~10 ms of every `rl-advisor` start."""
    a = np.asarray(x, dtype=float).ravel()
    n = a.size
    if n == 0 or np.isnan(a).any():
        return math.nan
    k = n // 2
    if n % 2:
        return float(np.partition(a, k)[k])
    part = np.partition(a, (k - 1, k))
    return float((part[k - 1] + part[k]) / 2.0)  # as numpy: the mean of the middle two


def percentile(x: Any, q: float) -> float:
    """np.percentile(x, q) of a 1-D sequence (linear), exactly, without numpy's quantile path
    (it calls np.unique, which imports numpy.ma: see `median`)."""
    a = np.sort(np.asarray(x, dtype=float).ravel())
    n = a.size
    if n == 0 or np.isnan(a[-1]):
        return math.nan
    virtual = (q / 100.0) * (n - 1)
    lo = min(math.floor(virtual), n - 1)
    hi = min(lo + 1, n - 1)
    g = virtual - lo
    below, above = float(a[lo]), float(a[hi])
    diff = above - below
    # numpy's lerp: from the nearer end, so that g = 1 gives `above` exactly
    return above - diff * (1 - g) if g >= 0.5 else below + diff * g


def nanmedian(x: Any) -> float:
    """np.nanmedian of a 1-D sequence (NaN ignored; NaN when nothing is left), see `median`."""
    a = np.asarray(x, dtype=float).ravel()
    return median(a[~np.isnan(a)])


def detector(name: str) -> Callable[[Detector], Detector]:
    """Register a detector under `name` (the rulebook refers to it by that name)."""

    def wrap(fn: Detector) -> Detector:
        if name in DETECTORS:
            raise ValueError(f"detector {name!r} registered twice")
        DETECTORS[name] = fn
        return fn

    return wrap


@dataclass(frozen=True, slots=True)
class Baseline:
    """One metric's warm-up reference, frozen when the warm-up ends."""

    median: float  # median of the warm-up block means
    scale: float  # robust sigma of a block mean (noise), floored so it is never 0
    start: float  # level at the start of the run (median of the first two blocks)
    sd: float  # median SPAN-block residual sd in the warm-up (floored)
    n_blocks: int
    end_step: int  # last step of the warm-up
    first: float = math.nan  # the first block mean (a validation series: the base model's)
    step_sd: float = math.nan  # median within-block sd (around each block's line) in the warm-up


# The block record: one row per closed block of one metric (Series.raw, the engine's window),
# with these columns: the block's first and last step, the mean / min / max of its finite
# values (nan when none), their count, the count of non-finite values and the step of the
# first, the within-block sd around the block's own line, and the sums a least-squares line
# needs (x, x^2, t, t^2, x*t, with t counted from the block's first step).
START, END, MEAN, LO, HI, COUNT, NONFINITE, FIRST_BAD, SD = range(9)
SUM_X, SUM_XX, SUM_T, SUM_TT, SUM_XT = range(9, 14)
RECORD_WIDTH = 14


@dataclass(frozen=True, slots=True)
class Series:
    """The block statistics of one metric over the rolling window (oldest first).

    `raw` holds the block records (one row per block, the columns START .. SUM_XT); the named
    properties are views of it, made only when a detector reads them (a healthy evaluation
    reads few).
    """

    metric: str
    raw: np.ndarray
    baseline: Baseline | None
    peak: float | None  # highest block mean so far (whole run)
    peak_step: int | None
    peak3: float | None  # highest mean of 3 consecutive blocks, whole run (smoothed peak)
    peak3_step: int | None
    trough: float | None
    trough_step: int | None
    blocks_total: int  # blocks ever closed for this metric (the window holds the last ones)
    # The run's long-run wander: (blocks_total when it closed, robust scale) of each disjoint
    # chunk of WANDER_BLOCKS block means since the first block, the latest ones (bounded).
    wander: tuple[tuple[int, float], ...] = ()
    # The same chunks' median SPAN-block residual sd (span_sd): the run's own typical spread.
    span_wander: tuple[tuple[int, float], ...] = ()
    # Paired metrics' mean level over the blocks of the peak3 triple, kept when it was set
    # (only for the metrics of AT_COMPANION_PEAK leaves that name this one as `per`).
    peak3_ctx: Mapping[str, float] = field(default_factory=dict)
    # The run's first logged block mean (the level before training moved it; kept whole-run)
    # and the last step the run has reached (any metric), which may lie past this metric's
    # last block when it stopped being logged.
    first: float = math.nan
    first_range: tuple[float, float] = (math.nan, math.nan)  # its lowest and highest point
    run_end: int | None = None

    @property
    def start(self) -> np.ndarray:  # first step of each block
        return self.raw[:, START]

    @property
    def end(self) -> np.ndarray:  # last step of each block
        return self.raw[:, END]

    @property
    def mean(self) -> np.ndarray:  # mean of the finite values (nan if none)
        return self.raw[:, MEAN]

    @property
    def lo(self) -> np.ndarray:  # min of the finite values
        return self.raw[:, LO]

    @property
    def hi(self) -> np.ndarray:  # max of the finite values
        return self.raw[:, HI]

    @property
    def count(self) -> np.ndarray:  # finite values
        return self.raw[:, COUNT]

    @property
    def nonfinite(self) -> np.ndarray:  # NaN / inf values
        return self.raw[:, NONFINITE]

    @property
    def first_bad(self) -> np.ndarray:  # first non-finite step (when nonfinite > 0)
        return self.raw[:, FIRST_BAD]

    def __len__(self) -> int:
        return len(self.raw)


# ----------------------------------------------------------------------------- helpers
SPAN = 3  # blocks pooled for the residual spread (catches swings slower than one block)
WANDER_BLOCKS = 16  # block means per chunk of the long-run wander reference (Series.wander)
WANDER_CHUNKS = 64  # chunks kept (1,024 blocks: a 5,000-step run in 5-step blocks)


def span_sd(blocks: np.ndarray, span: int = SPAN, leave_out: bool = False) -> np.ndarray:
    """Residual sd of the raw points around one least-squares line over each run of `span`
    consecutive blocks (nan before `span` blocks or with fewer than 2 x span points), computed
    from the blocks' running sums alone (no raw history is kept).

    `blocks`: block records (START .. SUM_XT). A trend across the span is removed; a swing
    inside it is not.
    """
    out = np.full(len(blocks), np.nan)
    if len(blocks) < span:
        return out
    b0 = blocks[:, START] - blocks[0, START]  # block starts, from the window's first step
    n, sx, sxx = blocks[:, COUNT], blocks[:, SUM_X], blocks[:, SUM_XX]
    st, stt, sxt = blocks[:, SUM_T], blocks[:, SUM_TT], blocks[:, SUM_XT]
    # Move each block's t origin to the window's first step, then sum over spans.
    st_a = st + n * b0
    stt_a = stt + 2 * b0 * st + n * b0 * b0
    sxt_a = sxt + b0 * sx
    k = np.ones(span)

    def win(x: np.ndarray) -> np.ndarray:
        return np.convolve(x, k, mode="valid")

    cols = (n, sx, sxx, st_a, stt_a, sxt_a)
    sums = [win(x) for x in cols]
    sd = _resid_sd(*_six(sums), min_n=2 * span)
    if leave_out:
        # The least spread of the span without one of its blocks: one wild step (a reward
        # glitch) inflates every span that holds its block, never the span without it.
        q = len(sums[0])
        for j in range(span):
            less = [t - x[j : j + q] for t, x in zip(sums, cols, strict=True)]
            sd = np.fmin(sd, _resid_sd(*_six(less), min_n=2 * (span - 1)))
    out[span - 1 :] = sd
    return out


def _six(
    a: list[np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The six running sums of span_sd, as _resid_sd takes them."""
    nn, sx, sxx, st, stt, sxt = a
    return nn, sx, sxx, st, stt, sxt


def _resid_sd(
    nn: np.ndarray, sx: np.ndarray, sxx: np.ndarray, st: np.ndarray, stt: np.ndarray,
    sxt: np.ndarray, min_n: float,
) -> np.ndarray:
    """Residual sd around the least-squares line from the sums (nan below min_n points)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        vx = sxx - sx * sx / nn
        vt = stt - st * st / nn
        cxt = sxt - sx * st / nn
        resid = vx - np.where(vt > 0, cxt * cxt / np.where(vt > 0, vt, 1.0), 0.0)
        sd = np.sqrt(np.maximum(resid, 0.0) / nn)
    return np.where(nn >= min_n, sd, np.nan)


def _span_sd_last(blocks: np.ndarray, span: int = SPAN) -> float:
    """span_sd of the latest span only, in plain floats (the per-evaluation gate)."""
    if len(blocks) < span:
        return math.nan
    rows = blocks[-span:].tolist()
    c = rows[0][START]
    nn = sx = sxx = st = stt = sxt = 0.0
    for r in rows:
        d, n = r[START] - c, r[COUNT]
        nn += n
        sx += r[SUM_X]
        sxx += r[SUM_XX]
        st += r[SUM_T] + n * d
        stt += r[SUM_TT] + 2 * d * r[SUM_T] + n * d * d
        sxt += r[SUM_XT] + d * r[SUM_X]
    if nn < 2 * span:
        return math.nan
    vt = stt - st * st / nn
    cxt = sxt - sx * st / nn
    resid = sxx - sx * sx / nn - (cxt * cxt / vt if vt > 0 else 0.0)
    return math.sqrt(max(resid, 0.0) / nn)


def robust_scale(means: np.ndarray, floor: float, line: bool = True) -> float:
    """Noise sigma of a sequence of block means, robust to outliers and to a trend.

    The larger of two robust estimates:
    - second differences (median |x[t] - 2x[t-1] + x[t-2]| / 0.6745 / sqrt 6): blind to a
      locally linear trend, which a warm-up nearly always has (reward rising, entropy easing);
    - the MAD of the residuals around a robust line: catches the slow wander of
      autocorrelated noise, which differences underrate (RL curves are AR-like: block means
      drift nearly as far as single steps when the correlation is strong).
    First differences stand in for the first with only three points. `floor` keeps a constant
    metric (loss == 0, truncation == 1) from giving 0.
    """
    x = means[np.isfinite(means)]
    if len(x) < 3:
        return floor
    if len(x) < 4:
        sd = _MAD_TO_SIGMA * float(median(np.abs(np.diff(x)))) / math.sqrt(2.0)
    else:
        sd = _MAD_TO_SIGMA * float(median(np.abs(np.diff(x, n=2)))) / math.sqrt(6.0)
    if not line:
        return max(sd, floor)
    # Around a robust (Theil-Sen: median of pairwise slopes) line, so that a symptom already
    # starting inside the warm-up does not inflate the noise it will be measured against.
    t, i, j, dt = _pairs(len(x))
    slope = float(median((x[j] - x[i]) / dt))
    resid = x - slope * t
    sd_line = _MAD_TO_SIGMA * float(median(np.abs(resid - median(resid))))
    return max(sd, sd_line, floor)


def wander_of(rows: np.ndarray) -> tuple[float | None, float | None]:
    """One chunk of the long-run wander references from its block records (Series.wander,
    Series.span_wander): the robust scale (robust_scale, floored at 1 % of the level) of the
    finite block means, and the median SPAN-block residual sd (span_sd); None where fewer
    than half of WANDER_BLOCKS are finite."""
    x = rows[:, MEAN]
    x = x[np.isfinite(x)]
    if len(x) < WANDER_BLOCKS // 2:
        return None, None
    level = float(median(x))
    scale = robust_scale(x, max(0.01 * abs(level), 1e-12))
    spans = span_sd(rows)
    spans = spans[np.isfinite(spans)]
    return scale, (float(median(spans)) if len(spans) >= WANDER_BLOCKS // 2 else None)


def _median_rows(a: np.ndarray) -> np.ndarray:
    """`median` of each row of a 2-D array without NaN: the same order statistics and the same
    mean of the middle two, so each value equals median(row)."""
    n = a.shape[1]
    k = n // 2
    if n % 2:
        return np.partition(a, k, axis=1)[:, k]
    part = np.partition(a, (k - 1, k), axis=1)
    return (part[:, k - 1] + part[:, k]) / 2.0


def wander_chunks(chunks: np.ndarray) -> list[tuple[float | None, float | None]]:
    """wander_of of each chunk of a (chunks, blocks, RECORD_WIDTH) array, value for value: the
    chunks whose means are all finite at once (element-wise operations and order statistics
    in wander_of's order), the others one by one."""
    out: list[tuple[float | None, float | None]] = [(None, None)] * len(chunks)
    if not len(chunks):
        return out
    means = chunks[:, :, MEAN]
    whole = np.isfinite(means).all(axis=1)
    w = chunks.shape[1]
    if w < 4 or w < WANDER_BLOCKS // 2:
        whole[:] = False
    idx = np.flatnonzero(whole)
    for c in np.flatnonzero(~whole).tolist():
        out[c] = wander_of(chunks[c])
    if not len(idx):
        return out
    x = means[idx]
    with np.errstate(invalid="ignore", over="ignore"):
        level = _median_rows(x)
        floor = np.maximum(0.01 * np.abs(level), 1e-12)
        sd = _MAD_TO_SIGMA * _median_rows(np.abs(np.diff(x, n=2, axis=1))) / math.sqrt(6.0)
        t, i, j, dt = _pairs(w)
        slope = _median_rows((x[:, j] - x[:, i]) / dt)
        resid = x - slope[:, None] * t
        sd_line = _MAD_TO_SIGMA * _median_rows(np.abs(resid - _median_rows(resid)[:, None]))
        scale = np.maximum(np.maximum(sd, sd_line), floor)
        spans = _span_sd_rows(chunks[idx])
    ok_spans = np.isfinite(spans).all(axis=1) & (spans.shape[1] >= WANDER_BLOCKS // 2)
    span_med = np.full(len(idx), np.nan)
    if ok_spans.any():
        span_med[ok_spans] = _median_rows(spans[ok_spans])
    for r, c in enumerate(idx.tolist()):
        if not math.isfinite(scale[r]):  # an overflow: as wander_of gives it
            out[c] = wander_of(chunks[c])
            continue
        if ok_spans[r]:
            out[c] = (float(scale[r]), float(span_med[r]))
            continue
        s = spans[r][np.isfinite(spans[r])]
        out[c] = (float(scale[r]), float(median(s)) if len(s) >= WANDER_BLOCKS // 2 else None)
    return out


def _span_sd_rows(chunks: np.ndarray, span: int = SPAN) -> np.ndarray:
    """span_sd of each chunk (rows: chunks), without the first span - 1 NaN: the same
    element-wise operations, and each span's sums by the same np.convolve over the chunks laid
    end to end (a window's sum depends only on its own values)."""
    k_, w = chunks.shape[0], chunks.shape[1]
    b0 = chunks[:, :, START] - chunks[:, :1, START]
    n, sx, sxx = chunks[:, :, COUNT], chunks[:, :, SUM_X], chunks[:, :, SUM_XX]
    st, stt, sxt = chunks[:, :, SUM_T], chunks[:, :, SUM_TT], chunks[:, :, SUM_XT]
    st_a = st + n * b0
    stt_a = stt + 2 * b0 * st + n * b0 * b0
    sxt_a = sxt + b0 * sx
    k = np.ones(span)
    keep = (np.arange(k_)[:, None] * w + np.arange(w - span + 1)[None, :]).ravel()

    def win(x: np.ndarray) -> np.ndarray:
        return np.convolve(x.ravel(), k, mode="valid")[keep]

    sums = [win(x) for x in (n, sx, sxx, st_a, stt_a, sxt_a)]
    return _resid_sd(*_six(sums), min_n=2 * span).reshape(k_, w - span + 1)


@lru_cache(maxsize=64)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The positions of n points as floats, all index pairs i < j and j - i (read-only)."""
    i, j = np.triu_indices(n, k=1)
    t = np.arange(n, dtype=float)
    out = (t, i, j, t[j] - t[i])
    for a in out:
        a.setflags(write=False)
    return out


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
    i = len(mask) - 1
    j = i
    misses = 0
    while j - 1 >= 0:
        j -= 1
        if mask[j]:
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


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %" if math.isfinite(x) else "?"


def _steps(s: Series, i: int) -> str:
    return f"{int(s.start[i])}–{int(s.end[-1])}"


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


@detector("above")
def above(s: Series, p: Params) -> Evidence | None:
    """Block mean (or max/min via `stat`) at or above an absolute `value`, k of m blocks."""
    return _level(s, p, True, "above")


@detector("below")
def below(s: Series, p: Params) -> Evidence | None:
    """Block mean (or max/min via `stat`) at or below an absolute `value`, k of m blocks."""
    return _level(s, p, False, "below")


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


def _hinge(y: np.ndarray, cross: int, back: int = 16, after: int = 2) -> int:
    """Where a move that crossed the thresholds at block `cross` began: the block after the
    break h of the least-squares fit "a level, then a straight line from block h" to the block
    means from `back` blocks before the crossing to `after` past it. A gradual slide began well
    before it crossed, a sudden drop barely (dated within a block); no fraction of the way
    suits both."""
    lo, hi = max(0, cross - back), min(len(y), cross + after + 1)
    t = np.arange(lo, hi, dtype=float)
    v = y[lo:hi]
    ok = np.isfinite(v)
    t, v = t[ok], v[ok]
    if len(v) < 4:
        return cross
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
    return min(at + 1, cross)  # block h is the last on the level: the move shows from h + 1


@detector("shift")
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
    now = float(nanmedian(s.mean[-min(k if persist else len(run), len(s)) :]))
    if p.get("onset") == "hinge":
        i = _hinge(s.mean, i)
    else:
        part = b.median + float(p.get("onset_frac", 0.2)) * (now - b.median)
        while i > 0 and np.isfinite(s.mean[i - 1]) and sign * (s.mean[i - 1] - part) >= 0:
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


def _extreme(s: Series, i: int, base: float, level: float, up: bool) -> str:
    """"; peaking at X ..." when the window's extreme block goes more than twice as far
    from the warm-up level as its median does (a spike the median of the window hides)."""
    window = s.mean[i:]
    if not np.isfinite(window).any():
        return ""
    j = int(np.nanargmax(window) if up else np.nanargmin(window))
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


def _aligned(starts: np.ndarray, comp: Series) -> np.ndarray:
    """The companion's block means at the blocks starting at `starts` (nan where it has no
    such block)."""
    idx = np.clip(np.searchsorted(comp.start, starts), 0, len(comp) - 1)
    return np.where(comp.start[idx] == starts, comp.mean[idx], np.nan)


def _unit(s: Series) -> bool:
    """Every logged value of the window within [0, 1] (a success rate)."""
    lo, hi = s.lo[np.isfinite(s.lo)], s.hi[np.isfinite(s.hi)]
    return bool(len(lo)) and float(lo.min()) >= 0.0 and float(hi.max()) <= 1.0


def _window(s: Series, p: Params, default: int) -> int:
    """First block index of the tested window: the last `window` blocks, or "peak": from the
    highest block mean in the window on (a decline since the best point)."""
    w = p.get("window", default)
    if w == "peak":
        ok = np.isfinite(s.mean)
        return int(np.nanargmax(np.where(ok, s.mean, -np.inf))) if ok.any() else 0
    if w == "after_peak":
        # From the block after the best 3-block stretch: a test that starts AT a selected
        # maximum finds a "decline" in pure noise (regression to the mean).
        y = _trailing_mean(s.mean, 3)
        return int(np.nanargmax(y)) + 1 if np.isfinite(y).any() else 0
    return max(0, len(s) - int(w))


def _trend_stats(y: np.ndarray) -> tuple[float, float, float]:
    """Mann-Kendall tau and p (Kendall's tau-b of y against the block index) and the Theil-Sen
    slope, as scipy.stats.kendalltau / theilslopes compute them (tests hold them equal).

    Computed here in numpy because importing scipy.stats costs ~0.9 s, more than the rest of a
    `diagnose` run together; on <= 32 block means the pairwise arithmetic is trivial.
    """
    y = np.asarray(y, dtype=float)
    n = len(y)
    _, i, j, _ = _pairs(n)  # all pairs i < j; x = block index has no ties
    dy = y[j] - y[i]
    slope = float(median(dy / (j - i))) if n > 1 else math.nan
    tot = n * (n - 1) // 2
    _, counts = np.unique(y, return_counts=True)
    ytie = int((counts * (counts - 1) // 2).sum())
    if tot == 0 or ytie == tot:
        return math.nan, math.nan, slope
    s = float(np.sign(dy).sum())  # concordant minus discordant pairs
    tau = max(-1.0, min(1.0, s / math.sqrt(tot) / math.sqrt(tot - ytie)))
    dis = int((dy < 0).sum())
    if ytie == 0 and (n <= 33 or min(dis, tot - dis) <= 1):
        return tau, _kendall_exact_p(n, dis), slope
    var = (n * (n - 1) * (2 * n + 5) - float((counts * (counts - 1) * (2 * counts + 5)).sum())) / 18
    return tau, math.erfc(abs(s) / math.sqrt(2 * var)), slope


def _kendall_exact_p(n: int, dis: int) -> float:
    """Two-sided exact p of Kendall's tau with no ties: the number of discordant pairs of a random
    order is the inversion count of a random permutation (Mahonian distribution)."""
    tail = min(dis, n * (n - 1) // 2 - dis)
    return float(min(1.0, 2.0 * _inversion_cdf(n)[tail]))


@lru_cache(maxsize=64)
def _inversion_cdf(n: int) -> np.ndarray:
    """P(inversions <= k) for a uniformly random permutation of n items, k = 0 .. n(n-1)/2."""
    dist = np.ones(1)
    for m in range(2, n + 1):  # the m-th item adds 0 .. m-1 inversions, uniformly
        dist = np.convolve(dist, np.full(m, 1.0 / m))
    return np.cumsum(dist)


@detector("trend")
def trend(s: Series, p: Params) -> Evidence | None:
    """A monotone trend over the last `window` blocks: Mann-Kendall p <= max_p in `direction`,
    and a Theil-Sen change over the window of at least `min_effect` warm-up sigmas."""
    b = s.baseline
    i = _window(s, p, 8)
    y = s.mean[i:]
    ok = np.isfinite(y)
    if b is None or ok.sum() < int(p.get("min_blocks", 6)):
        return None
    y = y[ok]
    tau, pval, slope = _trend_stats(y)
    change = slope * (len(y) - 1)
    sigma = b.scale
    if p.get("scale") == "window":  # sparse series: see drop_from_peak
        sigma = _window_scale(s)
    effect = change / sigma
    up = str(p.get("direction", "up")) == "up"
    min_effect = float(p.get("min_effect", 4.0))
    if (tau > 0) != up or pval > float(p.get("max_p", 0.01)) or abs(effect) < min_effect:
        return None
    word = "rose" if up else "fell"
    if p.get("window") == "after_peak":
        i = max(0, i - 2)  # the decline began at the peak stretch's middle block
    return _evidence(
        s,
        "trend",
        i,
        f"{s.metric} block means {word} {_fmt(change)} over steps {_steps(s, i)} (Theil–Sen, "
        f"Mann–Kendall tau {tau:.2f}, p {pval:.3g}), {abs(effect):.1f} warm-up sigmas.",
        effect=effect,
        excess=_excess(effect, min_effect),
        tau=tau,
        p=pval,
        slope_per_block=slope,
        change=change,
        sigma=sigma,
    )


@detector("plateau")
def plateau(s: Series, p: Params) -> Evidence | None:
    """No progress: over the last `window` blocks no significant rise (Mann-Kendall p > max_p or
    tau <= 0) and a Theil-Sen change under `max_effect` warm-up sigmas; and the level never rose
    more than `max_rise` sigmas above the run's start (a run that learned and then levelled off
    has converged, it is not stuck)."""
    b = s.baseline
    # `min_steps`: not judged before the run has that many steps (knowledge.md "How to judge":
    # 50 steps show no trend, 150 is the least). A window that dropped blocks is >= 160 steps.
    if len(s) and s.blocks_total <= len(s) and s.end[-1] - s.start[0] + 1 < p.get("min_steps", 0):
        return None
    i = _window(s, p, 8)
    y = s.mean[i:]
    ok = np.isfinite(y)
    if b is None or ok.sum() < int(p.get("min_blocks", 6)):
        return None
    y = y[ok]
    tau, pval, slope = _trend_stats(y)
    change = slope * (len(y) - 1)
    effect = change / b.scale
    if tau > 0 and pval <= float(p.get("max_p", 0.05)):
        return None
    # `until_rise` (a `keep` of an active P1/KL0): once stuck, only a significant rise (above)
    # ends it; a Theil-Sen change of noisy block means, or a falling reward, is no progress.
    # To start one the change must be small both ways (a fall is a decline, not a plateau).
    if not p.get("until_rise") and abs(effect) > float(p.get("max_effect", 3.0)):
        return None
    rise = ((s.peak if s.peak is not None else b.median) - b.start) / b.scale
    if "max_rise" in p and rise > float(p["max_rise"]):
        return None
    level = float(median(y))
    # The plateau began where the level last left the band around its current value.
    band = float(p.get("band", 3.0)) * b.scale
    inband = np.abs(s.mean - level) <= band
    j = _onset_index(inband, gap=1)
    max_effect = float(p.get("max_effect", 3.0))
    return _evidence(
        s,
        "plateau",
        j,
        f"{s.metric} stayed flat at {_fmt(level)} over steps {_steps(s, j)}: Theil–Sen change "
        f"{_fmt(change)} ({effect:+.1f} warm-up sigmas, Mann–Kendall tau {tau:.2f}, p {pval:.2g}); "
        f"highest level {rise:.1f} sigmas above the start.",
        effect=effect,
        excess=_excess(max_effect, max(abs(effect), max_effect / 3)),
        level=level,
        tau=tau,
        p=pval,
        change=change,
        rise_sigmas=rise,
        sigma=b.scale,
    )


@detector("steady")
def steady(s: Series, p: Params) -> Evidence | None:
    """The level stayed within x`max_ratio` of its warm-up level (both ways) for k of the last m
    blocks: a positive metric that should grow (KL to the reference as the policy moves) and
    does not."""
    b = s.baseline
    if b is None or not b.median > 0:
        return None
    k, m = _k_m(p)
    r_max = float(p.get("max_ratio", 1.5))
    last = float(s.mean[-1]) / b.median
    if not (1.0 / r_max <= last <= r_max):
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = s.mean / b.median
        held = (ratio <= r_max) & (ratio >= 1.0 / r_max)
    # k of m blocks past the warm-up (a warm-up block is "steady" against its own level); the
    # onset is where the level last entered the band, warm-up included
    if not _persistent(held & (s.start > b.end_step), k, m):
        return None
    i = _onset_index(held)
    r = float(nanmedian(ratio[i:]))
    return _evidence(
        s,
        "steady",
        i,
        f"{s.metric} stayed at x{r:.2f} of its warm-up level {_fmt(b.median)} over steps "
        f"{_steps(s, i)}: it is not growing.",
        effect=r,
        excess=_excess(r_max, max(r, 1.0 / max(r, 1e-12))),
        ratio=r,
        warmup_level=b.median,
    )


@detector("no_rise")
def no_rise(s: Series, p: Params) -> Evidence | None:
    """The metric never rose more than `max_rise` warm-up sigmas above its start level: its
    run-wide highest block mean did not (`level: peak`), or, with `level: latest`, its latest
    level (the median of its last `last` block means) does not stand that far above it: a rise
    that did not hold is none (one noisy block lifts the peak for good, not the median)."""
    b = s.baseline
    if b is None or s.peak is None or len(s) == 0:
        return None
    # From the lower of the first block and the first two's median: with long blocks (eval_steps
    # 50: 25 steps) a run that learned within its first block has a second block already up.
    start = min(b.start, b.first) if math.isfinite(b.first) else b.start
    latest = str(p.get("level", "peak")) == "latest"
    if latest:
        y = s.mean[np.isfinite(s.mean)][-int(p.get("last", 3)) :]
        if not len(y):
            return None
        top = float(median(y))
    else:
        top = s.peak
    rise = (top - start) / b.scale
    if rise > float(p.get("max_rise", 3.0)):
        return None
    said = (
        f"{s.metric}'s latest level {_fmt(top)} stands no more than {rise:.1f} warm-up sigmas "
        f"above its start level {_fmt(start)} (highest block mean {_fmt(s.peak)})."
        if latest
        else f"{s.metric} never rose above its start level {_fmt(start)} by more than "
        f"{rise:.1f} warm-up sigmas (highest block mean {_fmt(s.peak)})."
    )
    return _evidence(
        s,
        "no_rise",
        0,
        said,
        effect=rise,
        excess=1.0,
        start=start,
        peak=s.peak,
        rise_sigmas=rise,
    )


@detector("peak_below")
def peak_below(s: Series, p: Params) -> Evidence | None:
    """The metric's highest block mean over the whole run stayed at or below `value`: a ceiling
    it never reached. For a schedule (the learning rate) the peak is the configured value,
    whatever its warm-up ramp or decay tail reads at the latest block. A peak of 0 (a series of
    exact zeros: verl's 3-decimal print of a 1e-6 lr) is no evidence."""
    if s.peak is None or not s.peak > 0 or len(s) == 0:
        return None
    value = float(p["value"])
    if s.peak > value:
        return None
    where = f" (block ending at step {s.peak_step})" if s.peak_step is not None else ""
    # As a fraction of the ceiling: statistics keep 6 decimals, an lr of 1e-8 would read 0.
    ratio = s.peak / value
    return _evidence(
        s,
        "peak_below",
        0,
        f"{s.metric} never exceeded {_fmt(value)}: its highest block mean was "
        f"{_fmt(s.peak)}{where}, x{ratio:.2g} of it.",
        effect=ratio,
        excess=1.0 / ratio,
        peak_ratio=ratio,
    )


@detector("rose")
def rose(s: Series, p: Params) -> Evidence | None:
    """The metric's latest level (median of its last `last` block means) stands `min_sigmas`
    above its start level, in units of its own point-to-point noise over the window (robust sd
    of successive block means' differences / sqrt 2: a trend barely moves it). Meant for a
    sparse series such as the validation reward, whose warm-up holds too few points for a
    scale: a run whose held-out score climbed since its first evaluation is learning. `wait`:
    with fewer than `min_points` evaluations logged it holds, so that a rule which must not fire
    while validation climbs waits for validation's word instead of judging without it."""
    b = s.baseline
    y = s.mean[np.isfinite(s.mean)]
    if b is None or len(y) < int(p.get("min_points", 6)):
        if p.get("wait") and len(y):
            # Too few evaluations to tell yet: a rule that needs validation's word (P1's "not
            # while validation climbs") waits for it rather than judging without it.
            return _evidence(
                s,
                "rose",
                0,
                f"{s.metric}: {len(y)} evaluations so far, too few to tell whether it rose.",
                effect=0.0,
                excess=1.0,
                points=len(y),
            )
        return None
    d = np.diff(y)
    noise = 1.4826 * median(np.abs(d - median(d))) / math.sqrt(2.0)
    # from the first point: the second evaluation may already be past the early learning
    start = b.first if math.isfinite(b.first) else b.start
    noise = max(noise, 0.01 * abs(start), 1e-12)
    level = median(y[-int(p.get("last", 3)) :])
    gain = (level - start) / noise
    if gain < float(p.get("min_sigmas", 4.0)):
        return None
    return _evidence(
        s,
        "rose",
        0,
        f"{s.metric} rose from {_fmt(start)} at the start to {_fmt(level)} lately "
        f"({gain:.1f} times its point-to-point noise {_fmt(noise)}).",
        effect=gain,
        excess=_excess(gain, float(p.get("min_sigmas", 4.0))),
        start=start,
        level=level,
        noise=noise,
    )


def _smoothed_peak(s: Series, smooth: int) -> tuple[float, int]:
    """Highest mean of `smooth` consecutive blocks and the end of the middle one: the run-wide
    peak the engine keeps (for 3) when it is higher than what the window shows."""
    y = _trailing_mean(s.mean, smooth)
    if np.isfinite(y).any():
        top = int(np.nanargmax(y))
        peak, step = float(y[top]), int(s.end[max(0, top - (smooth - 1) // 2)])
    else:
        peak, step = -math.inf, int(s.end[-1])
    if smooth == 3 and s.peak3 is not None and s.peak3 > peak and s.peak3_step is not None:
        peak, step = s.peak3, s.peak3_step
    return peak, step


def _peak_where(smooth: int, step: int | None) -> str:
    """Where a peak of block means lies, said as what it is: a block ends at `step` (for a
    validation series, its evaluation is earlier in the block), a smoothed peak is a mean."""
    if step is None:
        return "before the window"
    if smooth > 1:
        return f"mean of {smooth} blocks, around step {step}"
    return f"the block ending at step {step}"


def _trailing_mean(x: np.ndarray, n: int) -> np.ndarray:
    """Mean of the last n blocks at each block (nan until n blocks exist)."""
    out = np.full(len(x), np.nan)
    if len(x) >= n:
        c = np.convolve(x, np.ones(n) / n, mode="valid")
        out[n - 1 :] = c
    return out


def _selection_excess(s: Series, sigma: float, smooth: int, run_wide: bool) -> float:
    """How far the best of a series' (smoothed) points sits above its true level by noise
    alone, about sqrt(2 ln n) of their sigma, which a plain z-test would read as a decline.
    Smoothed points overlap (each shares smooth - 1 blocks with the next): n counts the
    independent ones, the logged blocks / smooth. A run-wide best (`run_wide`), possibly from
    before the window, was selected over every block the run logged, not the window's."""
    smooth = max(smooth, 1)
    logged = int(np.isfinite(s.mean).sum())
    if run_wide:
        logged = max(logged, s.blocks_total)
    n = max(2, logged // smooth)
    return sigma / math.sqrt(smooth) * math.sqrt(2.0 * math.log(n))


@detector("drop_from_peak")
def drop_from_peak(s: Series, p: Params) -> Evidence | None:
    """The level fell from its peak and stays down: drop >= `min_z` warm-up sigmas, >= `min_rel`
    x |peak| and >= `min_abs`, in k of the last m blocks (the latest included), all after the
    peak. `smooth` > 1 compares trailing medians of that many blocks (sparse, noisy series such
    as val_reward, whose single best point is biased upward by its noise). `peak_bias` adds the
    excess the best of n noisy points has anyway; n counts the window's points, or with
    `bias_run` every point the run logged (the run-wide peak may predate the window)."""
    b = s.baseline
    if b is None or s.peak is None:
        return None
    k, m = _k_m(p)
    min_z = float(p.get("min_z", 5.0))
    smooth = int(p.get("smooth", 1))
    # Gate on the latest (smoothed) block: the cheap absolute and relative conditions, against
    # the raw peak first (a smoothed peak is never higher).
    if s.peak is None or len(s) < smooth:
        return None
    last = float(s.mean[-1]) if smooth <= 1 else float(np.mean(s.mean[-smooth:]))
    if _strong_run(s, p, k)[0]:  # raw latest blocks may carry it alone: gate on the lower
        last = min(last, float(s.mean[-1]))
    if not math.isfinite(last):
        return None
    rel = float(p.get("min_rel", 0.0))
    rise = p.get("rel_to") == "rise"

    def base(top: float) -> float:
        return max(top - b.start, b.scale) if rise else abs(top)

    # min_frac: also that fraction of |peak|, so that a rise of a few hundredths (a run that
    # starts near its ceiling) does not make every dip half of it
    frac = float(p.get("min_frac", 0.0))
    rough = s.peak - last
    if rough < float(p.get("min_abs", 0.0)) or rough < max(rel * base(s.peak), frac * abs(s.peak)):
        return None
    top = s.peak if smooth <= 1 else _smoothed_peak(s, smooth)[0]
    gap = top - last
    if gap < float(p.get("min_abs", 0.0)) or gap < max(rel * base(top), frac * abs(top)):
        return None
    if p.get("scale") != "window" and gap < min_z * b.scale:
        return None
    if smooth > 1:
        y = _trailing_mean(s.mean, smooth)
        if not np.isfinite(y).any():
            return None
        peak, best_step = _smoothed_peak(s, smooth)
        peak_step: int | None = best_step
    else:
        y, peak, peak_step = s.mean, s.peak, s.peak_step
    sigma = b.scale
    if p.get("scale") == "window":
        # Sparse series (a validation point every eval_steps): the warm-up holds only ~3 of
        # them; the whole window's second differences give a steadier noise estimate.
        sigma = _window_scale(s)
    drop = peak - y
    need = min_z * sigma
    if p.get("peak_bias"):
        need += _selection_excess(s, sigma, smooth, run_wide=bool(p.get("bias_run")))
    # min_rel is a fraction of |peak|, or with rel_to: rise of the rise from the run's start
    # (a signed or offset reward, e.g. format penalties, has a peak near 0: "half of |peak|"
    # is then any dip).
    rel_base = peak - b.start if p.get("rel_to") == "rise" else abs(peak)
    need_rel = float(p.get("min_rel", 0.0)) * max(rel_base, b.scale)
    need_all = max(need, need_rel, float(p.get("min_abs", 0.0)), frac * abs(peak))
    after = s.start > peak_step if peak_step is not None else np.ones(len(s), bool)
    with np.errstate(invalid="ignore"):
        mask = (drop >= need_all) & after  # the fall must follow the peak
    mask &= np.isfinite(y)
    # Strong: the raw latest block (a smoothed one lags a collapse by half its width), its mean
    # f x past every threshold, its highest point past the plain ones.
    persist, strong, _ = _held_how(
        s, p, k, m, mask,
        lambda i, f: bool(after[i])
        and peak - s.mean[i] >= f * need_all
        and peak - s.hi[i] >= need_all,
    )  # fmt: skip
    if not (strong or persist):
        return None
    if not persist:  # the raw block alone carries it (the smoothed series lags): describe those
        with np.errstate(invalid="ignore"):
            y = s.mean
            mask = (peak - y >= need_all) & after & np.isfinite(y)
    i = _onset_index(mask)
    level = float(nanmedian(y[i:]))
    z = (peak - level) / sigma
    if p.get("onset") == "peak":
        # The decline starts at the best point (P6: the checkpoint to publish); a smoothed
        # peak's middle block is the best estimate of it.
        i = int(np.searchsorted(s.end, peak_step)) if peak_step is not None else i
        i = min(i, len(s) - 1)
    return _evidence(
        s,
        "drop_from_peak",
        i,
        f"{s.metric} fell from its peak {_fmt(peak)} ({_peak_where(smooth, peak_step)}) to "
        f"{_fmt(level)} "
        f"over steps {_steps(s, i)} and "
        + ("stayed down" if persist else "every point of the latest block is down")
        + f" ({z:.1f} warm-up sigmas).",
        effect=z,
        excess=_excess(z, min_z),
        peak=peak,
        peak_step=peak_step,
        level=level,
        drop=peak - level,
        z=z,
        sigma=sigma,
    )


@detector("shared_fall")
def shared_fall(s: Series, p: Params) -> Evidence | None:
    """The metric (a training reward) fell, between its companion's best and now, by at least
    `ratio` x what the companion `per` (the validation reward) fell: a fall both share has a
    cause upstream of generalisation (a curriculum stage, a collapse), not memorisation.

    Overfitting is the gap between the two widening; `ratio` 0.5 is the midpoint between "the
    training reward held" (0) and "it fell as far" (1). The companion's fall is from its best
    3-block mean to its latest, less the excess the best of n noisy means has anyway (as
    drop_from_peak's peak_bias, n over the whole run). The metric's is from its level over the
    steps of that best (kept by the engine when it was set, Series.peak3_ctx) to its level
    over the companion's latest 3 blocks: not from its own best, which, the best of hundreds
    of noisy training blocks, sits above the curve by as much as a validation fall. Both are
    rewards of the same reward function (verl's val reward_fn, TRL's reward funcs), so their
    falls compare in the same units."""
    comp = p.get("_per")
    if comp is None or len(comp) < 4 or len(s) < 3:
        return None
    v_peak, v_step = _smoothed_peak(comp, 3)
    t_ref = _level_at_best(s, comp, v_step)
    v_fall = v_peak - float(np.mean(comp.mean[-3:]))
    v_fall -= _selection_excess(comp, _window_scale(comp), 3, run_wide=True)
    now = np.isfinite(s.mean) & (s.end >= comp.start[-3])
    if not (math.isfinite(t_ref) and v_fall > 0 and now.any()):
        return None
    t_fall = t_ref - float(np.mean(s.mean[now]))
    ratio = float(p.get("ratio", 0.5))
    if t_fall < ratio * v_fall:
        return None
    i = int(np.argmax(now))
    return _evidence(
        s,
        "shared_fall",
        i,
        f"{s.metric} fell {_fmt(t_fall)} from {_fmt(t_ref)} (its level at {comp.metric}'s best, "
        f"around step {v_step}) while {comp.metric} fell {_fmt(v_fall)} beyond its best's "
        "noise: the two fell together.",
        effect=t_fall / v_fall,
        excess=_excess(t_fall / v_fall, ratio),
        fall=t_fall,
        companion_fall=v_fall,
        level_at_best=t_ref,
        companion_peak_step=v_step,
    )


def _level_at_best(s: Series, comp: Series, step: int) -> float:
    """`s`'s mean level over the steps of `comp`'s best 3 blocks (`step` ends the middle one):
    the level the engine kept when that best was set, else from the window (nan if out of it)."""
    if comp.peak3_step == step and s.metric in comp.peak3_ctx:
        return float(comp.peak3_ctx[s.metric])
    mid = int(np.searchsorted(comp.end, step))
    if not 1 <= mid < len(comp) - 1:
        return math.nan
    inside = (s.start >= comp.start[mid - 1]) & (s.end <= comp.end[mid + 1]) & np.isfinite(s.mean)
    return float(np.mean(s.mean[inside])) if inside.any() else math.nan


def _norm_factor(s: Series, comp: Series | None) -> np.ndarray:
    """Per-block factor (companion's warm-up level / its level over the span) that expresses a
    spread in units of the companion's own level; 1 without a usable companion.

    A reward's step-to-step noise grows with its within-group spread (binary rewards: sqrt(p(1-p))
    rises as p leaves 0), so a reward that learns looks "noisier" than in the warm-up. Dividing
    by reward_std keeps the comparison level-independent.
    """
    ones = np.ones(len(s))
    if comp is None or comp.baseline is None or len(comp) == 0:
        return _own_norm(s)
    base = comp.baseline.median
    if not base > 0:
        return ones
    level = _trailing_mean(_aligned(s.start, comp), SPAN)
    with np.errstate(invalid="ignore", divide="ignore"):
        # Only discount: noise growth the companion explains is forgiven; a shrinking companion
        # (a saturating reward) never inflates a spread.
        f = np.minimum(1.0, base / level)
    return np.where(np.isfinite(f), f, 1.0)


def _own_norm(s: Series) -> np.ndarray:
    """`_norm_factor` without its companion (an export without reward_std): what the reward
    itself says of its samples' spread. A reward within 0..1 is read as a success rate p,
    whose samples spread as sqrt(p(1 - p)) (exact for a binary reward), from the level over
    SPAN blocks; another reward (a sum of several functions) by its per-step spread, the
    step-to-step noise of a batch mean being the samples' spread over sqrt(batch), as a
    trailing median over 5 blocks (a swing's turn inside a block inflates that block's
    spread around its own line)."""
    ones = np.ones(len(s))
    b = s.baseline
    if b is None:
        return ones
    fin = s.mean[np.isfinite(s.mean)]
    if len(fin) and fin.min() >= 0.0 and fin.max() <= 1.0 and 0.0 <= b.median <= 1.0:
        base = math.sqrt(max(b.median * (1.0 - b.median), 1e-6))
        p = np.clip(_trailing_mean(s.mean, SPAN), 0.0, 1.0)
        level = np.sqrt(np.maximum(p * (1.0 - p), 1e-6))
    else:
        if not b.step_sd > 0:
            return ones
        base = b.step_sd
        own = np.where(s.count >= 3, s.raw[:, SD], np.nan)
        level = np.full(len(s), np.nan)
        if len(s) >= 5:
            win = np.lib.stride_tricks.sliding_window_view(own, 5)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-nan windows stay nan
                level[4:] = np.nanmedian(win, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.minimum(1.0, base / level)
    return np.where(np.isfinite(f), f, 1.0)


def _wander(s: Series, window: int, chunks: tuple[tuple[int, float], ...] | None = None) -> float:
    """How far the block means wander over WANDER_BLOCKS blocks in this run so far: the median
    robust scale of the chunks that closed before the last `window` blocks (0 before any did).

    Autocorrelated noise makes block means wander slowly; six warm-up block means (and second
    differences over the window, which a slow wander barely moves) under-rate it 2-4x, and over
    hundreds of windows a few such wanders zigzag by chance (healthy runs of 5-step blocks).
    Chunks inside the judged window are left out so that an oscillation does not set its own
    yardstick; the median keeps a few odd chunks from moving it.
    """
    chunks = s.wander if chunks is None else chunks
    ref = [scale for end, scale in chunks if end <= s.blocks_total - window]
    return float(median(ref)) if ref else 0.0


def _zigzag(y: list[float], delta: list[float]) -> list[int]:
    """Turning points of a series that count only moves of at least delta[i] (a zigzag with
    hysteresis): a one-way step gives one, an oscillation gives one per swing."""
    pivots: list[int] = []
    idx = [i for i, v in enumerate(y) if math.isfinite(v)]
    if not idx:
        return pivots
    lo_i = hi_i = ext = idx[0]
    direction = 0
    for i in idx[1:]:
        v, d = y[i], delta[i]
        if direction == 0:
            if v < y[lo_i]:
                lo_i = i
            if v > y[hi_i]:
                hi_i = i
            if v - y[lo_i] >= d:
                pivots.append(lo_i)
                direction, ext = 1, i
            elif y[hi_i] - v >= d:
                pivots.append(hi_i)
                direction, ext = -1, i
        elif direction > 0:
            if v > y[ext]:
                ext = i
            elif y[ext] - v >= d:
                pivots.append(ext)
                direction, ext = -1, i
        else:
            if v < y[ext]:
                ext = i
            elif v - y[ext] >= d:
                pivots.append(ext)
                direction, ext = 1, i
    return pivots


@detector("volatility")
def volatility(s: Series, p: Params) -> Evidence | None:
    """Swings much larger than the warm-up's noise, repeated.

    Two views, because an oscillation may be faster or slower than a block:
    - within a span: the residual spread of the raw points around a line over SPAN blocks,
      `min_ratio` times the warm-up's, in k of the last m blocks (spans overlap, so one noisy
      block touches SPAN of them: k is high);
    - between blocks: a zigzag of the block means with moves of at least `slow_ratio` warm-up
      sigmas must turn at least `min_turns` times within the last `window` blocks, the latest
      turn in its second half (a one-way step or collapse turns once: not an oscillation).
    With a companion `per` (reward_std) both are measured in units of its level (see
    _norm_factor: noise growth the companion explains is forgiven, never inflated).
    """
    b = s.baseline
    if b is None or len(s) < 3:
        return None
    k, m = _k_m(p)
    min_ratio = float(p.get("min_ratio", 3.0))
    slow_ratio = float(p.get("slow_ratio", 2 * min_ratio))
    w = int(p.get("window", 12))
    comp = p.get("_per")
    lo = max(0, len(s) - w)
    # The zigzag reads each block without its lowest and highest point (the middle one of
    # three): one outlier step (a reward spike of a lucky batch) moves a block mean by 1/n of
    # itself and makes a turn there and back; an oscillation moves all of a block's points.
    means = _trimmed_means(s)
    # A move must beat both the block-mean noise (slow_ratio sigmas) and `slow_sd` times the
    # per-step spread: under strong autocorrelation block means wander nearly as far as single
    # steps, and a warm-up of ~6 block means underestimates their sigma.
    move = max(slow_ratio * b.scale, float(p.get("slow_sd", 2.0)) * b.sd)
    # A span's spread is an estimate from its points: with few of them (sparse logging, e.g.
    # TRL every 5 steps = 2-3 points a block) a ratio of two such estimates passes 2.5 by
    # chance (an F ratio with ~4 and ~4 degrees of freedom exceeds 6.25 about 5 % of the time).
    # Below `min_span_points` the within-span view is not judged; the block means are then
    # nearly single points, which the between-blocks view tests.
    min_pts = float(p.get("min_span_points", 0))
    fast_last = _span_sd_last(s.raw) / b.sd
    if min_pts and float(s.count[-SPAN:].sum()) < min_pts:
        fast_last = math.nan
    window = means[lo:]
    # Two turns need a rise AND a fall of at least `move` inside the window: the smaller of the
    # largest run-up and the largest drawdown bounds what a zigzag can find (cheap, vectorised).
    fin = window[np.isfinite(window)]
    spread = (
        min(float(np.max(fin - np.minimum.accumulate(fin))),
            float(np.max(np.maximum.accumulate(fin) - fin)))
        if len(fin) else 0.0
    )
    # The gate below with the floors of its thresholds (`need` is at least min_ratio, `move`
    # only grows): what fails here fails there, before the costlier references are read.
    if not (fast_last >= min_ratio or spread >= move):
        return None
    if "window_ratio" in p:
        # ...and `window_ratio` sigmas of the block means' own spread over the whole window
        # (robust second differences): six warm-up block means under-rate that spread 2-2.5x
        # on runs they were not tuned on, and with one logged point per block the per-step
        # spread reads ~0
        # A swing slower than ~6 blocks barely moves second differences.
        floor = max(0.01 * abs(b.median), 1e-12)
        # (of the block means, or of the trimmed ones where their spread is the larger: the
        # trimmed mean of a few points is the noisier estimate when no outlier is in them)
        spread_w = max(robust_scale(x, floor, line=False) for x in (s.mean, means))
        move = max(move, float(p["window_ratio"]) * spread_w)
    if float(p.get("wander_ratio", 0.0)) > 0:
        # ...and `wander_ratio` times the run's long-run wander of its block means (_wander):
        # with the true spread sigma of independent block means, three alternating moves of 4
        # sigmas within 16 blocks turn up in ~10 % of 800-block runs, of 4.5 in < 1 %
        # (simulated); correlated means zigzag less. 0 until 2 chunks have closed.
        move = max(move, float(p["wander_ratio"]) * _wander(s, w))
    # ...and `span_wander_ratio` times the run's own typical span spread (the median over its
    # earlier chunks, `Series.span_wander`): the warm-up's ~4 spans of heavy-tailed,
    # autocorrelated noise can read 2-3x quieter than the run's usual, and hundreds of spans
    # later the ordinary spread passes 2.5 of that (healthy runs of 5-step blocks).
    typical = _wander(s, w, s.span_wander)
    need = max(min_ratio, float(p.get("span_wander_ratio", 0.0)) * typical / b.sd)
    # Gate (the factor below is <= 1, so it can only make both views harder).
    if not (fast_last >= need or spread >= move):
        return None
    norm = _norm_factor(s, comp)
    fast_last *= float(norm[-1])
    delta = (move / norm[lo:]).tolist()
    pivots = [lo + i for i in _zigzag(window.tolist(), delta)] if spread >= move else []
    # pivots[0] starts the first leg; the turns are the pivots after it.
    slow = len(pivots) - 1 >= int(p.get("min_turns", 2)) and pivots[-1] >= len(s) - w // 2
    fast = False
    fast_arr = None
    if fast_last >= need:  # gate: the latest span must show it
        with np.errstate(invalid="ignore", divide="ignore"):
            fast_arr = span_sd(s.raw, leave_out=bool(p.get("leave_out"))) / b.sd * norm
            if min_pts:
                pts = np.convolve(s.count, np.ones(SPAN), mode="full")[: len(s)]
                fast_arr = np.where(pts >= min_pts, fast_arr, np.nan)
        fast = _persistent(np.nan_to_num(fast_arr) >= need, k, m)
        strong = float(p.get("strong", 0.0))
        if not fast and strong > 1.0 and len(fast_arr) > SPAN:
            # Graded persistence for overlapping spans: SPAN + 1 spans in a row `strong` x past
            # the ratio; no single block (one outlier step) lies in all of them.
            fast = bool((np.nan_to_num(fast_arr[-(SPAN + 1) :]) >= strong * need).all())
    if not (fast or slow):
        return None
    if fast and fast_arr is not None:
        mask = np.nan_to_num(fast_arr) >= need
        j = max(0, _onset_index(mask, gap=1) - (SPAN - 1))  # the span's first block
        ratio = float(nanmedian(fast_arr[j + SPAN - 1 :]))
        threshold, view = need, "within-span"
        what = f"the spread around the local trend was {ratio:.1f} times the warm-up's"
    else:
        # pivots[0] starts the first leg (it may be the start of a warm-up rise); the first turn
        # of an oscillation comes about half a swing after it began.
        half = (pivots[2] - pivots[1]) // 2 if len(pivots) >= 3 else 0
        j = max(pivots[0], pivots[1] - half)
        swings = np.abs(np.diff(means[pivots]))
        ratio = float(median(swings)) / b.scale
        threshold, view = slow_ratio, "between-blocks"
        what = (
            f"block means swung {len(pivots) - 1} times by a median "
            f"{_fmt(float(median(swings)))} ({ratio:.1f} warm-up sigmas)"
        )
    unit = f" (in units of {comp.metric})" if comp is not None and comp.baseline else ""
    return _evidence(
        s,
        "volatility",
        j,
        f"{s.metric} oscillated over steps {_steps(s, j)}: {what}{unit}.",
        effect=ratio,
        excess=_excess(ratio, threshold),
        ratio=ratio,
        view=view,
        turns=len(pivots),
        warmup_sd=b.sd,
        sigma=b.scale,
        normalised_by=comp.metric if comp is not None and comp.baseline else None,
    )


def _trimmed_means(s: Series) -> np.ndarray:
    """Each block's mean without its lowest and highest finite value (blocks of 3 or more;
    of 3, that is the median), from the block's sum, min and max; smaller blocks as they are."""
    n = s.count
    with np.errstate(invalid="ignore", divide="ignore"):
        trimmed = (s.mean * n - s.lo - s.hi) / (n - 2)
    return np.where(n >= 3, trimmed, s.mean)


@detector("jump")
def jump(s: Series, p: Params) -> Evidence | None:
    """Acceleration: the level is `min_ratio` times what it was `lag` blocks earlier (a ratio of
    block means, for positive metrics such as KL), k of the last m blocks. A saturating healthy
    curve (KL to the reference growing then levelling) does not multiply itself over a fixed lag;
    an explosion does. `trimmed`: block means without their lowest and highest point, so that
    one spike (a single-prompt TRL step's KL x25) cannot make a block; an explosion lifts them
    all."""
    lag = int(p.get("lag", 6))
    x = _trimmed_means(s) if p.get("trimmed") else s.mean
    k, m = _k_m(p)
    if len(s) <= lag + 1:
        return None
    floor = float(p.get("min_level", 0.0))
    n = len(s)
    last = float(x[-1])
    ref3 = sorted(x[n - lag - 2 : n - lag + 1].tolist())
    ref_last = ref3[len(ref3) // 2]
    if not (last >= floor and last >= float(p.get("min_ratio", 5.0)) * max(ref_last, 1e-12)):
        return None  # gate on the latest block
    # The reference is the median of three blocks around `lag` back: robust to one spike.
    ref = np.full(len(s), np.nan)
    padded = np.concatenate([[np.nan], x])
    win3 = np.lib.stride_tricks.sliding_window_view(padded, 3)  # win3[i] = mean[i-1 .. i+1]
    med = np.sort(win3, axis=1)[:, 1]  # the median of 3; rows with a nan fall back to
    med[np.isnan(win3).any(axis=1)] = np.nan  # their nanmean below
    bad = np.isnan(med)
    if bad.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-nan rows stay nan
            med[bad] = np.nanmean(win3[bad], axis=1)
    ref[lag:] = med[: len(s) - lag]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = x / np.maximum(ref, 1e-12)
        mask = (ratio >= float(p.get("min_ratio", 5.0))) & (x >= floor)
        accel = float(p.get("accel", 0.0))
        if accel > 0:
            # ...and `accel` x faster than over the lag before (from the first blocks when the
            # run is younger): KL to the reference is 0 at step 0 and its healthy growth from
            # there multiplies itself by any ratio, but ever more slowly; an explosion speeds up.
            # A younger run compares growth per block: the lag before is then the `span`
            # blocks from the first block (none yet: not judged), and x(ref / before) over
            # `span` blocks is x(ref / before)^(lag / span) over `lag` of them.
            idx = np.arange(len(s))
            before = med[np.clip(idx - 2 * lag, 0, None)]
            span = np.clip(idx - lag, 0, lag).astype(float)
            earlier = (ref / np.maximum(before, 1e-12)) ** (lag / np.maximum(span, 1.0))
            sped = (ratio >= accel * earlier) & (span > 0)
        else:
            sped = np.ones(len(s), dtype=bool)
        mask &= sped
    mask &= np.isfinite(ratio)
    min_ratio = float(p.get("min_ratio", 5.0))
    base = np.maximum(ref, 1e-12)
    persist, strong, run = _held_how(  # strong: f x the ratio, every point past ratio and floor
        s, p, k, m, mask,
        lambda i, f: bool(sped[i]) and x[i] >= f * min_ratio * base[i]
        and s.lo[i] >= max(floor, min_ratio * base[i]),
    )  # fmt: skip
    if not (strong or persist):
        return None
    j = _onset_index(mask, gap=1)
    # The acceleration began where block-to-block growth turned steep: walk back while each
    # block is at least `onset_growth` x the one before (not over slow, healthy growth).
    growth = float(p.get("onset_growth", 1.3))
    while j > 0 and np.isfinite(x[j - 1]) and x[j] >= growth * max(x[j - 1], 1e-12):
        j -= 1
    if j < len(s) - 1 and not x[j + 1] < growth * max(x[j], 1e-12):
        j += 1  # block j is the last one still at the old level
    held = min(m, len(s)) if persist else len(run)  # the blocks that carry the evidence
    r = float(nanmedian(ratio[-held:]))
    level = float(nanmedian(x[-held:]))
    return _evidence(
        s,
        "jump",
        j,
        f"{s.metric} multiplied x{r:.1f} within {lag} blocks, reaching {_fmt(level)} over steps "
        f"{_steps(s, j)} (a saturating curve does not multiply itself).",
        effect=r,
        excess=_excess(r, min_ratio),
        ratio=r,
        level=level,
        lag_blocks=lag,
    )


# ------------------------------------------------------------- judged from the first block
# The detectors below need no warm-up baseline: they compare a metric with the run's own best
# or first block, or with an absolute anchor, so a collapse inside the warm-up, a reward that
# is constant from step 1 or a metric that stops being logged are seen whenever they happen.
def _block_noise(s: Series) -> float:
    """A block mean's typical noise: the median within-block sd of blocks holding 3 or more
    points, else (sparse logs: one point a block) the robust spread of successive block means
    (median |difference| / sqrt 2, as a sigma)."""
    sd = s.raw[:, SD]
    ok = (s.count >= 3) & np.isfinite(sd)
    if ok.sum() >= 2:
        return float(np.median(sd[ok]))
    y = s.mean[np.isfinite(s.mean)]
    if len(y) < 3:
        return math.nan
    return float(np.median(np.abs(np.diff(y)))) * _MAD_TO_SIGMA / math.sqrt(2.0)


@detector("collapse")
def collapse(s: Series, p: Params) -> Evidence | None:
    """The level fell to at most `max_frac` of the run's best block mean and stays there (k of
    the last m blocks, all after the best), with the fall at least `min_noise` x the metric's
    block noise (a reward wandering near 0 "falls" by any fraction of a tiny best). For a
    non-negative metric (a reward of correct answers) only: a signed reward has no fraction."""
    if s.peak is None or s.peak_step is None or not s.peak > 0:
        return None
    k, m = _k_m(p, 3, 3)
    frac = float(p.get("max_frac", 0.3))
    last = float(s.mean[-1])
    if not last <= frac * s.peak:  # gate: the latest block (nan: no)
        return None
    if np.nanmin(s.lo) < 0:
        return None
    noise = _block_noise(s)
    if not math.isfinite(noise):
        return None
    noise = max(noise, 0.01 * s.peak)  # a collapsed, constant tail has no spread at all
    need = max(float(p.get("min_noise", 4.0)) * noise, float(p.get("min_abs", 0.0)))
    after = s.start > s.peak_step
    with np.errstate(invalid="ignore"):
        mask = (s.mean <= frac * s.peak) & (s.peak - s.mean >= need) & after
    mask &= np.isfinite(s.mean)
    if not _persistent(mask, k, m):
        return None
    i = _onset_index(mask)
    level = float(nanmedian(s.mean[i:]))
    ratio = level / s.peak
    return _evidence(
        s,
        "collapse",
        i,
        f"{s.metric} collapsed from its best block mean {_fmt(s.peak)} (the block ending at "
        f"step {s.peak_step}) to {_fmt(level)} (x{_fmt(ratio)}) over steps {_steps(s, i)}.",
        effect=1.0 - ratio,
        excess=_excess(max(frac, 1e-9), max(ratio, 1e-3 * frac)),
        peak=s.peak,
        peak_step=s.peak_step,
        level=level,
        ratio=ratio,
        noise=noise,
    )


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
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(s.mean / first - 1.0)
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
        f"{s.metric} stayed within {off:.1%} of its first logged level {_fmt(first)} "
        f"(median {_fmt(level)} over steps {_steps(s, i)}): it has not moved from its start.",
        effect=off,
        excess=_excess(move, max(off, 1e-12)),
        first=first,
        level=level,
        threshold=move,
    )


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


@detector("growth")
def growth(s: Series, p: Params) -> Evidence | None:
    """Steady multiplication: over the last `window` blocks (or as many as the run has, at
    least `min_blocks`) the level (trimmed block means) grew at least `min_ratio` times, and
    its second half grew at least `min_late` of the first half's growth in log terms (an
    explosion at a steady rate; a healthy KL that grows from 0 and levels off grows ever more
    slowly), reaching `min_level`. Held at the latest block and at the `k` - 1 before it (each
    judged on its own window)."""
    k = int(p.get("k", 3))
    w = min(int(p.get("window", 32)), len(s) - (k - 1))
    if w < int(p.get("min_blocks", 12)):
        return None
    x = _trimmed_means(s) if p.get("trimmed") else s.mean
    floor = float(p.get("min_level", 0.0))
    if not float(x[-1]) >= floor:
        return None
    ratio_need = float(p.get("min_ratio", 8.0))
    late = float(p.get("min_late", 0.6))

    def at(end: int) -> tuple[bool, float]:
        y = x[end - w : end] if end < len(x) else x[end - w :]
        if len(y) < w or not np.all(np.isfinite(y)) or not np.all(y > 0):
            return False, math.nan
        ly = np.log(y)
        third = max(1, w // 4)
        a = float(np.median(ly[:third]))
        mid = float(np.median(ly[w // 2 - third // 2 : w // 2 - third // 2 + third]))
        b = float(np.median(ly[-third:]))
        g1, g2 = mid - a, b - mid
        total = b - a
        ok = total >= math.log(ratio_need) and g1 > 0 and g2 >= late * g1
        return ok, math.exp(total)

    # the latest window first (most evaluations stop there), after a cheap look at its ends
    third = max(1, w // 4)
    if not float(np.max(x[-third:])) >= ratio_need * float(np.min(x[-w : -w + third])):
        return None  # (a median of the last third cannot pass then either)
    results = []
    for j in range(k):
        ok, ratio_j = at(len(x) - j)
        if not ok:
            return None
        results.append(ratio_j)
    r = results[0]
    i = len(s) - w
    # The growth began where the blocks leave its line (log level against block, fitted over
    # the window): walk back while an earlier block lies within x2 of the line's value there.
    ly = np.log(x[i:])
    slope, icpt = np.polyfit(np.arange(w, dtype=float), ly, 1)
    while i > 0 and np.isfinite(x[i - 1]) and x[i - 1] > 0:
        if abs(math.log(float(x[i - 1])) - (icpt + slope * (i - 1 - (len(s) - w)))) > math.log(2):
            break
        i -= 1
    level = float(x[-1])
    return _evidence(
        s,
        "growth",
        i,
        f"{s.metric} multiplied x{r:.1f} over steps {_steps(s, i)} at a steady rate, reaching "
        f"{_fmt(level)} (a healthy curve grows ever more slowly as it levels off).",
        effect=r,
        excess=_excess(r, ratio_need),
        ratio=r,
        level=level,
        window_blocks=w,
    )


@detector("stopped")
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
    block = float(np.median(s.end - s.start + 1))
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


def _line_resid_bound(y: np.ndarray) -> float:
    """An upper bound of np.std of the residuals of `y` around its least-squares quadratic in
    the index (swing's fit): the rms residual around its least-squares line, which the
    quadratic can only lower, widened by far more than the rounding of either fit (1e-9 of
    the values' magnitude; rounding is ~1e-13 of it)."""
    t = np.arange(len(y), dtype=float)
    tc = t - t.mean()
    yc = y - y.mean()
    res = yc - (float(tc @ yc) / float(tc @ tc)) * tc
    rms = math.sqrt(float(res @ res) / len(y))
    return rms * (1.0 + 1e-9) + 1e-9 * float(np.max(np.abs(y)))


@lru_cache(maxsize=64)
def _periods(shortest: float, longest: float) -> np.ndarray:
    """swing's candidate periods, in blocks (read-only: shared between calls)."""
    out = np.geomspace(shortest, longest, 48)
    out.setflags(write=False)
    return out


def _best_sine(r: np.ndarray, periods: np.ndarray) -> tuple[float, float, float]:
    """(period, share of the variance explained, amplitude) of the sinusoid that fits the
    residuals `r` best by least squares, over candidate `periods` (in samples)."""
    t = np.arange(len(r), dtype=float)
    ang = 2.0 * np.pi * t[None, :] / periods[:, None]
    sn, cs = np.sin(ang), np.cos(ang)
    ss, cc, sc = (sn * sn).sum(1), (cs * cs).sum(1), (sn * cs).sum(1)
    rs, rc = sn @ r, cs @ r
    det = ss * cc - sc * sc
    with np.errstate(invalid="ignore", divide="ignore"):
        a = (rs * cc - rc * sc) / det
        b = (rc * ss - rs * sc) / det
    explained = a * rs + b * rc  # the fitted sinusoid's sum of squares
    total = float(np.dot(r, r))
    if total <= 0 or not np.isfinite(explained).any():
        return math.nan, 0.0, 0.0
    j = int(np.nanargmax(explained))
    return float(periods[j]), float(explained[j]) / total, float(math.hypot(a[j], b[j]))


def _swing_start(r: np.ndarray, period: float, amp: float) -> int:
    """The first block from which the residuals swing about as far as the fitted sinusoid:
    their mean |value| over a half period at least a third of the sinusoid's own (2 / pi x
    amplitude) for 4 in 5 of the half periods from there on. An oscillation that began inside
    the window is dated there, not at the window's start."""
    h = max(1, round(period / 2))
    need = 0.35 * (2.0 / math.pi) * amp  # a third: noise and the detrend's edges dip some
    env = np.array([float(np.mean(np.abs(r[j : j + h]))) for j in range(len(r) - h + 1)])
    ok = (env >= need).astype(float)
    # from there on: 4 in 5 of the later half periods swing that far (noise dips some)
    tail = np.cumsum(ok[::-1])[::-1] / np.arange(len(ok), 0, -1)
    starts = np.flatnonzero(tail >= 0.8)
    return int(starts[0]) if len(starts) else len(r) - 1


@detector("swing")
def swing(s: Series, p: Params) -> Evidence | None:
    """An oscillation judged against the run's own noise around its trend, wherever it starts:
    the block means' residuals around a quadratic trend over the window are fitted best by a
    sinusoid of `periods` or more whole periods in the window that explains `min_share` of
    their variance, its peak-to-peak is `min_ratio` x the spread the per-step noise (around
    each block's own line) leaves in a block mean and `min_rel` x the level. Autocorrelated
    healthy noise wanders, but no single period carries much of it; white noise around the
    trend has no spread beyond its own. Held at the latest block and the `k` - 1 before it,
    each judged on its own window."""
    k = int(p.get("k", 3))
    w_max = int(p.get("window", 32))
    n = len(s)
    w = min(w_max, n - (k - 1))
    if w < int(p.get("min_blocks", 12)):
        return None
    min_pts = int(p.get("min_points", 3))

    def at(end: int) -> tuple[bool, dict[str, float]]:
        sl = slice(end - w, end)
        y, cnt, sd = s.mean[sl], s.count[sl], s.raw[sl, SD]
        if not (np.all(np.isfinite(y)) and np.all(cnt >= min_pts) and np.all(np.isfinite(sd))):
            return False, {}
        c = _pow2_scale(y)  # the fits square the values: judged on y x c (exact, see _pow2_scale)
        if c != 1.0:
            y, sd = y * c, sd * c
        min_abs = float(p.get("min_abs", 0.0)) * c
        noise = max(median(sd / np.sqrt(cnt)), 1e-12)
        level = abs(median(y))
        # A sinusoid's amplitude is at most sqrt 2 x the residuals' spread: a window whose
        # spread cannot carry the thresholds is not fitted (the fit is the costly part).
        need = max(
            float(p.get("min_ratio", 5.0)) * noise,
            min_abs,
            float(p.get("min_rel", 0.2)) * level,
        )
        if 2.0 * math.sqrt(2.0) * _line_resid_bound(y) < need:
            return False, {}  # not even around a line: less around the quadratic below
        t = np.arange(w, dtype=float)
        r = y - np.polyval(np.polyfit(t, y, 2), t)
        most = 2.0 * math.sqrt(2.0) * float(np.std(r))
        if (
            most < float(p.get("min_ratio", 5.0)) * noise
            or most < min_abs
            or most < float(p.get("min_rel", 0.2)) * level
        ):
            return False, {}
        cands = _periods(float(p.get("min_period", 2.2)), w / float(p.get("periods", 3)))
        period, share, amp = _best_sine(r, cands)
        if not math.isfinite(period):
            return False, {}
        p2p = 2.0 * amp
        ratio = p2p / noise
        ok = (
            share >= float(p.get("min_share", 0.5))
            and ratio >= float(p.get("min_ratio", 5.0))
            and p2p >= float(p.get("min_rel", 0.2)) * level
            and p2p >= min_abs
        )
        return ok, {"period": period, "share": share, "p2p": p2p / c, "ratio": ratio,
                    "noise": noise / c, "onset": _swing_start(r, period, amp)}

    results = []
    for j in range(k):  # the latest window first: most evaluations stop there
        ok, st_j = at(n - j)
        if not ok:
            return None
        results.append(st_j)
    st = results[0]
    i = n - w + int(st["onset"])
    steps = float(np.median(s.end[i:] - s.start[i:] + 1)) * st["period"]
    need = float(p.get("min_ratio", 5.0))
    return _evidence(
        s,
        "swing",
        i,
        f"{s.metric} swung up and down around its trend over steps {_steps(s, i)}: a period "
        f"of about {steps:.0f} steps and a peak-to-peak of {_fmt(st['p2p'])} "
        f"({st['share']:.0%} of the spread around the trend), {st['ratio']:.1f} x the noise "
        "its per-step spread leaves in a block mean.",
        effect=st["ratio"],
        excess=_excess(st["ratio"], need),
        period_blocks=st["period"],
        period_steps=steps,
        peak_to_peak=st["p2p"],
        share=st["share"],
        ratio=st["ratio"],
        noise=st["noise"],
    )


# ----------------------------------------------------------------------------- screens
# A screen answers, for a whole column of block records at once, where a detector might fire:
# `screen(c, p)[i]` is False only where the detector surely returns None on the Series whose
# window is c.rows[max(0, i - c.window + 1) : i + 1] (for rows from c.new on), with the
# leaf's parameters `p` (companions not given). Each repeats the detector's first gates,
# vectorised: the same operations in the same order where the gate compares exact values, a
# bound with a margin far beyond rounding where it does not. The engine's offline path
# (Monitor.push_columns) calls a detector only where its screen passes; the same-judgement
# test (tests/engine/test_same_judgement.py) audits every call a screen skips. A detector in
# READS_RUN_END is screened only where its metric was logged in the run's latest block.


@dataclass(frozen=True, slots=True)
class Column:
    """One metric's block records as a screen reads them."""

    rows: np.ndarray  # the records, oldest first: the window's rows, then the new ones
    window: int  # the Series window's length (blocks)
    baseline: Baseline | None  # None before the warm-up ended
    peak: float | None  # the run-wide highest block mean before rows[new] (Series.peak)
    new: int  # the first row made by this call (rows before: the window's past)
    ask: int = 0  # the first row whose verdict is asked (rows before may be left True)
    companions: bool = False  # the leaf divides the metric by its companions (per, rounds)
    offset: int = 0  # blocks of the metric closed before rows[0] (Series.blocks_total - rows)
    # the run-wide best 3-block mean before rows[new] (Series.peak3), and the means of the
    # counted blocks before rows[new] that a 3-block mean ending in the new rows takes in
    peak3: float | None = None
    last3: tuple[float, ...] = ()
    # the metric's first logged block: its mean, lowest and highest point (Series.first and
    # first_range; nan before it was logged)
    first: tuple[float, float, float] = (math.nan, math.nan, math.nan)


Screen = Callable[[Column, Params], np.ndarray]
SCREENS: dict[str, Screen] = {}
# The screens that do not read Column.baseline: their verdicts stand when a baseline is set
# (tests/engine/test_same_judgement.py checks the set).
BASELESS = frozenset({"nonfinite", "above", "below", "jump", "swing", "collapse", "constant",
                      "near_zero", "growth", "stopped", "peak_below", "from_start",
                      "high_from_start", "wasted"})  # fmt: skip


def screen(name: str) -> Callable[[Screen], Screen]:
    """Register the screen of detector `name`."""

    def wrap(fn: Screen) -> Screen:
        if name not in DETECTORS or name in SCREENS:
            raise ValueError(f"screen {name!r}: no such detector, or registered twice")
        SCREENS[name] = fn
        return fn

    return wrap


def _maybe(rows: np.ndarray) -> np.ndarray:
    return np.ones(len(rows), dtype=bool)


def _never(rows: np.ndarray) -> np.ndarray:
    return np.zeros(len(rows), dtype=bool)


def _trailing(x: np.ndarray, w: int) -> np.ndarray:
    """x's last `w` values at each row (rows before the first w padded with nan)."""
    pad = np.concatenate([np.full(w - 1, np.nan), x])
    return np.lib.stride_tricks.sliding_window_view(pad, w)


@screen("nonfinite")
def _nonfinite_screen(c: Column, p: Params) -> np.ndarray:
    return c.rows[:, NONFINITE] != 0


def _level_screen(rows: np.ndarray, p: Params, above: bool) -> np.ndarray:
    value = float(p["value"])
    x = rows[:, {"mean": MEAN, "max": HI, "min": LO}[str(p.get("stat", "mean"))]]
    with np.errstate(invalid="ignore"):
        return (x >= value) if above else (x <= value)


@screen("above")
def _above_screen(c: Column, p: Params) -> np.ndarray:
    return _level_screen(c.rows, p, above=True)


@screen("below")
def _below_screen(c: Column, p: Params) -> np.ndarray:
    return _level_screen(c.rows, p, above=False)


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


def _span_sd_lasts(rows: np.ndarray) -> np.ndarray:
    """_span_sd_last at every row (nan before SPAN rows), with its operations in its order."""
    out = np.full(len(rows), np.nan)
    if len(rows) < SPAN:
        return out
    q = len(rows) - SPAN + 1
    parts = [rows[j : j + q] for j in range(SPAN)]
    c = parts[0][:, START]
    nn = sx = sxx = st = stt = sxt = np.zeros(q)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for r in parts:
            d, n = r[:, START] - c, r[:, COUNT]
            nn = nn + n
            sx = sx + r[:, SUM_X]
            sxx = sxx + r[:, SUM_XX]
            st = st + (r[:, SUM_T] + n * d)
            stt = stt + (r[:, SUM_TT] + 2 * d * r[:, SUM_T] + n * d * d)
            sxt = sxt + (r[:, SUM_XT] + d * r[:, SUM_X])
        vt = stt - st * st / nn
        cxt = sxt - sx * st / nn
        resid = sxx - sx * sx / nn - np.where(vt > 0, cxt * cxt / vt, 0.0)
        sd = np.sqrt(np.where(resid < 0.0, 0.0, resid) / nn)  # max(resid, 0.0): nan stays
    out[SPAN - 1 :] = np.where(nn < 2 * SPAN, np.nan, sd)
    return out


def _trimmed_rows(rows: np.ndarray) -> np.ndarray:
    """_trimmed_means of block records."""
    n, mean = rows[:, COUNT], rows[:, MEAN]
    with np.errstate(invalid="ignore", divide="ignore"):
        trimmed = (mean * n - rows[:, LO] - rows[:, HI]) / (n - 2)
    return np.where(n >= 3, trimmed, mean)


_MARGIN = 1e-9  # relative slack of the bounds below: far beyond float rounding (~1e-15)


def _window_slopes(
    rows: np.ndarray, at: np.ndarray, w: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The windows of `w` block means ending at the rows `at`: the means, their pairwise
    differences (later minus earlier) and the Theil-Sen slope (the median of the pairwise
    slopes), in the trend statistics' operations (an order statistic: the same value row by
    row as the detector's)."""
    y = np.lib.stride_tricks.sliding_window_view(rows[:, MEAN], w)[at - w + 1]
    _, i, j, _ = _pairs(w)
    with np.errstate(invalid="ignore", over="ignore"):
        dy = y[:, j] - y[:, i]
        slopes = dy / (j - i)
        k = slopes.shape[1] // 2
        if slopes.shape[1] % 2:
            slope = np.partition(slopes, k, axis=1)[:, k]
        else:
            part = np.partition(slopes, (k - 1, k), axis=1)
            slope = (part[:, k - 1] + part[:, k]) / 2.0
    return y, dy, slope


@screen("trend")
def _trend_screen(c: Column, p: Params) -> np.ndarray:
    # trend's gates on a window of a fixed number of blocks, all finite: the direction of the
    # Mann-Kendall sum and the Theil-Sen change in warm-up sigmas, in the detector's operations
    # (the median of the pairwise slopes is an order statistic: the same value row by row)
    rows, b, w = c.rows, c.baseline, p.get("window", 8)
    if b is None:
        return _never(rows)
    if isinstance(w, str) or p.get("scale") == "window" or int(w) < 2:
        return _maybe(rows)
    w = int(w)
    index = np.arange(len(rows))
    n = np.minimum(index + 1, c.window)
    out = np.minimum(n, w) >= int(p.get("min_blocks", 6))  # fewer means: the detector's None
    at = np.flatnonzero((n >= w) & (index >= c.ask) & out)
    if not len(at):
        return out
    y, dy, slope = _window_slopes(rows, at, w)
    with np.errstate(invalid="ignore", over="ignore"):
        effect = slope * (w - 1) / b.scale
        rising = np.sign(dy).sum(axis=1) > 0
        way = rising if str(p.get("direction", "up")) == "up" else ~rising
        far = np.abs(effect) >= float(p.get("min_effect", 4.0)) * (1 - _MARGIN)
    out[at] = ~np.isfinite(y).all(axis=1) | (way & far)
    return out


@screen("volatility")
def _volatility_screen(c: Column, p: Params) -> np.ndarray:
    rows, window, b = c.rows, c.window, c.baseline
    # volatility's first gate: the within-span ratio past min_ratio (its `need` is at least
    # that), or a run-up and a drawdown of `move` in the zigzag window (the same differences
    # of its finite trimmed means as the detector takes)
    if b is None:
        return _never(rows)
    min_ratio = float(p.get("min_ratio", 3.0))
    slow_ratio = float(p.get("slow_ratio", 2 * min_ratio))
    move = max(slow_ratio * b.scale, float(p.get("slow_sd", 2.0)) * b.sd)
    if not move > 0:
        return _maybe(rows)
    w = min(int(p.get("window", 12)), window)
    with np.errstate(invalid="ignore", divide="ignore"):
        fast = _span_sd_lasts(rows) / b.sd
        tm = _trimmed_rows(rows)
        win = _trailing(np.where(np.isfinite(tm), tm, np.nan), w)  # nan: left out
        rise = np.fmax.reduce(win - np.fmin.accumulate(win, axis=1), axis=1)
        fall = np.fmax.reduce(np.fmax.accumulate(win, axis=1) - win, axis=1)
        spread = np.fmin(rise, fall)  # nan (no finite mean): the detector's 0
        # (nan passes neither, as in the detector)
        return (fast >= min_ratio * (1 - _MARGIN)) | (spread >= move * (1 - _MARGIN))


@screen("jump")
def _jump_screen(c: Column, p: Params) -> np.ndarray:
    rows, window = c.rows, c.window
    # jump's gate: the latest block at least min_level and min_ratio x the median of the three
    # blocks around `lag` back (any of them nan: the detector decides)
    lag = int(p.get("lag", 6))
    x = _trimmed_rows(rows) if p.get("trimmed") else rows[:, MEAN]
    out = _maybe(rows)
    i = np.arange(len(rows))
    at = np.flatnonzero((np.minimum(i + 1, window) > lag + 1) & (i >= lag + 1))
    if not len(at):
        return out
    ref3 = np.stack([x[at - lag - 1], x[at - lag], x[at - lag + 1]], axis=1)
    mid = np.sort(ref3, axis=1)[:, 1]
    last = x[at]
    floor = float(p.get("min_level", 0.0))
    with np.errstate(invalid="ignore", over="ignore"):
        ok = (last >= floor) & (last >= float(p.get("min_ratio", 5.0)) * np.where(
            mid < 1e-12, 1e-12, mid))
    out[at] = ok | np.isnan(ref3).any(axis=1)
    return out


@screen("swing")
def _swing_screen(c: Column, p: Params) -> np.ndarray:
    # swing's gate at the latest window: the residual spread around a line bounds the spread
    # around the quadratic, which must carry the thresholds
    return _by_window(c, int(p.get("k", 3)), int(p.get("window", 32)),
                      int(p.get("min_blocks", 12)), lambda ends, w: _swing_may(c.rows, ends, w, p),
                      lambda ends, ws: _swing_young(c.rows, ends, ws, p))  # fmt: skip


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


def _swing_young(rows: np.ndarray, ends: np.ndarray, ws: np.ndarray, p: Params) -> np.ndarray:
    """_swing_may of windows of several lengths at once (the same bound, its sums taken over
    each window's rows)."""
    y, inside = _rows_of(rows, ends, ws, MEAN)
    cnt, _ = _rows_of(rows, ends, ws, COUNT)
    sd, _ = _rows_of(rows, ends, ws, SD)
    out = np.zeros(len(ends), dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        judged = np.flatnonzero(
            (np.isfinite(y) | ~inside).all(axis=1)
            & ((cnt >= int(p.get("min_points", 3))) | ~inside).all(axis=1)
            & (np.isfinite(sd) | ~inside).all(axis=1)
        )
        if not len(judged):
            return out
        y, cnt, sd, inside, w = y[judged], cnt[judged], sd[judged], inside[judged], ws[judged]
        wf = w.astype(float)
        noise = np.maximum(_row_median(np.sort(sd / np.sqrt(cnt), axis=1), w), 1e-12)
        need = np.maximum(
            np.maximum(float(p.get("min_ratio", 5.0)) * noise, float(p.get("min_abs", 0.0))),
            float(p.get("min_rel", 0.2)) * np.abs(_row_median(np.sort(y, axis=1), w)),
        )
        t = np.arange(y.shape[1])[None, :] - (y.shape[1] - w)[:, None]
        tc = np.where(inside, t - (wf[:, None] - 1) / 2.0, 0.0)
        yz = np.where(inside, y, 0.0)
        yc = np.where(inside, yz - (yz.sum(axis=1) / wf)[:, None], 0.0)
        res = yc - ((yc * tc).sum(axis=1) / (tc * tc).sum(axis=1))[:, None] * tc
        rms = np.sqrt((res * res).sum(axis=1) / wf)
        bound = rms * (1 + 1e-6) + 1e-6 * np.abs(yz).max(axis=1)
        quiet = 2.0 * math.sqrt(2.0) * bound < need * (1 - 1e-6)
    out[judged] = ~quiet
    return out


def _swing_may(rows: np.ndarray, ends: np.ndarray, w: int, p: Params) -> np.ndarray:
    view = np.lib.stride_tricks.sliding_window_view
    y = view(rows[:, MEAN], w)[ends - w + 1]
    cnt = view(rows[:, COUNT], w)[ends - w + 1]
    sd = view(rows[:, SD], w)[ends - w + 1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        judged = (
            np.isfinite(y).all(axis=1)
            & (cnt >= int(p.get("min_points", 3))).all(axis=1)
            & np.isfinite(sd).all(axis=1)
        )
        noise = np.maximum(np.median(sd / np.sqrt(cnt), axis=1), 1e-12)
        need = np.maximum(
            np.maximum(float(p.get("min_ratio", 5.0)) * noise, float(p.get("min_abs", 0.0))),
            float(p.get("min_rel", 0.2)) * np.abs(np.median(y, axis=1)),
        )
        tc = np.arange(w, dtype=float) - (w - 1) / 2.0
        yc = y - y.mean(axis=1, keepdims=True)
        res = yc - ((yc @ tc) / float(tc @ tc))[:, None] * tc
        rms = np.sqrt((res * res).sum(axis=1) / w)
        bound = rms * (1 + 1e-6) + 1e-6 * np.abs(y).max(axis=1)
        quiet = 2.0 * math.sqrt(2.0) * bound < need * (1 - 1e-6)
    return judged & ~quiet  # a window the detector does not judge: it returns None


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


@screen("drop_from_peak")
def _drop_from_peak_screen(c: Column, p: Params) -> np.ndarray:
    # drop_from_peak's gates at the latest block, with the latest level taken no higher than
    # the detector takes it (the mean of the last `smooth` means; the latest alone too where a
    # strong block may carry the fall) and the peak no lower: the fall from the raw peak, from
    # the smoothed one (no higher than the run's best 3-block mean: every 3-block mean a window
    # shows is one of the run's), and the persistence's latest block: a fall of min_z sigmas
    # (warm-up ones, or the window's, which are at least 1 % of its median level) and the
    # best's selection excess on top. Sums and means taken in another order than the
    # detector's differ by rounding: `slack` (_MARGIN of the largest level) covers it.
    rows, b = c.rows, c.baseline
    if b is None:
        return _never(rows)
    peak = _peaks(c)
    smooth = int(p.get("smooth", 1))
    if peak is None or smooth < 1:
        return _maybe(rows)
    x = rows[:, MEAN]
    index = np.arange(len(rows))
    n = np.minimum(index + 1, c.window)  # the window's blocks (len(s))
    strong = float(p.get("strong", 0.0)) > 1.0
    rel, frac = float(p.get("min_rel", 0.0)), float(p.get("min_frac", 0.0))
    min_abs, rise = float(p.get("min_abs", 0.0)), p.get("rel_to") == "rise"
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        size = np.fmax.accumulate(np.abs(np.where(np.isfinite(x), x, np.nan)))
        size = np.fmax(size, abs(c.peak) if c.peak is not None else 0.0)
        slack = _MARGIN * np.where(np.isfinite(size), size, 0.0)
        mean = np.mean(_trailing(x, smooth), axis=1) if smooth > 1 else x
        none = np.isnan(mean) | (n < smooth)  # the detector's None: a nan mean, too few blocks
        last = (np.minimum(mean, x) if strong else mean) - slack
        last = last - _MARGIN * np.abs(last)
        # the raw peak's gate, as the detector takes it
        rough = peak - last
        base = np.maximum(peak - b.start, b.scale) if rise else np.abs(peak)
        need = np.maximum(rel * base, frac * np.abs(peak))
        quiet = none | (rough < min_abs) | (rough < need)
        # the smoothed peak's, its threshold at no more than the detector's (the peak is at
        # least the latest smoothed level)
        top = peak + slack
        if smooth == 3:
            top = np.fmin(top, _peak3s(c) + slack)
        gap = top - last
        quiet |= gap < min_abs
        if rel >= 0 and frac >= 0:
            low = np.maximum(last - b.start, b.scale) if rise else np.maximum(last, 0.0)
            quiet |= gap < np.maximum(rel * low, frac * np.maximum(last, 0.0))
    # the latest block's fall against min_z sigmas and the selection excess
    at = np.flatnonzero(~quiet & (index >= c.ask))
    if len(at) and float(p.get("min_z", 5.0)) > 0:
        if p.get("scale") == "window":
            y, _ = _rows_of(rows, at, n[at], MEAN)
            finite = np.isfinite(y)
            m = finite.sum(axis=1)
            level = _row_median(np.sort(np.where(finite, y, np.nan), axis=1), np.maximum(m, 1))
            level = np.where(m > 0, level, 0.0)
            sigma = np.maximum(0.01 * np.abs(level), 1e-12)  # _window_scale's floor
        else:
            m, sigma = np.isfinite(_rows_of(rows, at, n[at], MEAN)[0]).sum(axis=1), b.scale
        need = float(p.get("min_z", 5.0)) * sigma
        if p.get("peak_bias"):
            logged = np.maximum(m, c.offset + at + 1) if p.get("bias_run") else m
            count = np.maximum(2, logged // smooth)
            need = need + sigma / math.sqrt(smooth) * np.sqrt(2.0 * np.log(count))
        with np.errstate(invalid="ignore"):
            quiet[at] |= gap[at] < need * (1 - _MARGIN)
    out = ~quiet
    out[: c.new] = True
    return out


def _peak3s(c: Column) -> np.ndarray:
    """Series.peak3 at each row from c.new on, as the engine keeps it (the best mean of 3
    consecutive counted blocks so far; -inf before the first), inf where that may not be a
    plain running maximum (a mean that is not finite, or a best before that is not)."""
    out = np.full(len(c.rows), np.inf)
    new = c.rows[c.new :]
    counted = np.flatnonzero(new[:, COUNT] != 0)
    means = np.r_[np.asarray(c.last3, dtype=float), new[counted, MEAN]]
    if (c.peak3 is not None and not math.isfinite(c.peak3)) or not np.isfinite(means).all():
        return out
    prior = -math.inf if c.peak3 is None else c.peak3
    best = np.full(len(means), prior)
    if not len(means):
        out[c.new :] = prior
        return out
    q = np.arange(2, len(means))  # the triples' last blocks (those before are in c.peak3)
    best[q] = (means[q - 2] + means[q - 1] + means[q]) / 3.0
    best = np.fmax.accumulate(np.fmax(best, prior))
    # each new row: the best after its latest counted block (before the first: the prior)
    last = np.searchsorted(counted, np.arange(len(new)), side="right") - 1 + len(c.last3)
    out[c.new :] = np.where(last >= 0, best[np.maximum(last, 0)], prior)
    return out


@screen("collapse")
def _collapse_screen(c: Column, p: Params) -> np.ndarray:
    # collapse's gate: the latest mean at most max_frac x the run's best (a positive best)
    rows = c.rows
    peak = _peaks(c)
    if peak is None:
        return _maybe(rows)
    with np.errstate(invalid="ignore"):
        out = (peak > 0) & (rows[:, MEAN] <= float(p.get("max_frac", 0.3)) * peak)
    out[: c.new] = True
    return out


@screen("from_start")
def _from_start_screen(c: Column, p: Params) -> np.ndarray:
    # from_start's gate: the latest block past the thresholds from the run's first level
    up = str(p.get("direction", "up")) == "up"
    first = _start_ref(c.first[0], (c.first[1], c.first[2]), up)
    if not math.isfinite(first):
        return _maybe(c.rows)
    return _past_start(c.rows[:, MEAN], first, up, p)


@screen("high_from_start")
def _high_from_start_screen(c: Column, p: Params) -> np.ndarray:
    first = _start_ref(c.first[0], (c.first[1], c.first[2]), True)
    if not math.isfinite(first):
        return _maybe(c.rows)
    return _near_high_start(c.rows[:, MEAN], first, p)


@screen("wasted")
def _wasted_screen(c: Column, p: Params) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return c.rows[:, MEAN] >= float(p["value"])  # wasted's gate on the latest block


@screen("constant")
def _constant_screen(c: Column, p: Params) -> np.ndarray:
    rows = c.rows
    return (rows[:, COUNT] != 0) & (rows[:, NONFINITE] == 0) & (rows[:, LO] == rows[:, HI])


@screen("near_zero")
def _near_zero_screen(c: Column, p: Params) -> np.ndarray:
    a, b = np.abs(c.rows[:, LO]), np.abs(c.rows[:, HI])
    last = np.where(b > a, b, a)  # max(|lo|, |hi|) as Python's max takes it
    with np.errstate(invalid="ignore"):
        quiet = ~(last <= float(p["value"])) | ((last == 0) & (not p.get("exact_zero", False)))
    return ~quiet


@screen("growth")
def _growth_screen(c: Column, p: Params) -> np.ndarray:
    # growth's gates: the latest level, then the cheap look at the window's ends
    x = _trimmed_rows(c.rows) if p.get("trimmed") else c.rows[:, MEAN]
    return _by_window(c, int(p.get("k", 3)), int(p.get("window", 32)),
                      int(p.get("min_blocks", 12)), lambda ends, w: _growth_may(x, ends, w, p),
                      lambda ends, ws: _growth_young(x, ends, ws, p))  # fmt: skip


def _growth_may(x: np.ndarray, ends: np.ndarray, w: int, p: Params) -> np.ndarray:
    third = max(1, w // 4)
    view = np.lib.stride_tricks.sliding_window_view
    top = np.max(view(x, third)[ends - third + 1], axis=1)
    low = np.min(view(x, third)[ends - w + 1], axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        return (x[ends] >= float(p.get("min_level", 0.0))) & (
            top >= float(p.get("min_ratio", 8.0)) * low
        )


def _growth_young(x: np.ndarray, ends: np.ndarray, ws: np.ndarray, p: Params) -> np.ndarray:
    """_growth_may of windows of several lengths at once (the same maxima and minima)."""
    y, inside = _rows_of(x[:, None], ends, ws, 0)
    third = np.maximum(1, ws // 4)[:, None]
    at = np.arange(y.shape[1])[None, :]
    first = (y.shape[1] - ws)[:, None]
    top = np.max(np.where(at >= y.shape[1] - third, y, -np.inf), axis=1)
    low = np.min(np.where(inside & (at < first + third), y, np.inf), axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        return (x[ends] >= float(p.get("min_level", 0.0))) & (
            top >= float(p.get("min_ratio", 8.0)) * low
        )


@screen("stopped")
def _stopped_screen(c: Column, p: Params) -> np.ndarray:
    # a metric logged in the run's latest block has not stopped (READS_RUN_END: the engine
    # asks only there)
    return np.zeros(len(c.rows), dtype=bool)


@screen("no_rise")
def _no_rise_screen(c: Column, p: Params) -> np.ndarray:
    # no_rise's gate: the run-wide peak more than max_rise warm-up sigmas above the start, in
    # the detector's operations (the peak only grows: once past, it stays past)
    rows, b = c.rows, c.baseline
    if b is None:
        return _never(rows)
    peak = _peaks(c)
    if peak is None or str(p.get("level", "peak")) == "latest":
        return _maybe(rows)
    start = min(b.start, b.first) if math.isfinite(b.first) else b.start
    with np.errstate(invalid="ignore", over="ignore"):
        out = ~((peak - start) / b.scale > float(p.get("max_rise", 3.0)))
    out[: c.new] = True
    return out


@screen("peak_below")
def _peak_below_screen(c: Column, p: Params) -> np.ndarray:
    # peak_below's gate: the run-wide peak positive and no higher than `value` (it only grows:
    # once past, it stays past)
    peak = _peaks(c)
    if peak is None:
        return _maybe(c.rows)
    with np.errstate(invalid="ignore"):
        out = (peak > 0) & (peak <= float(p["value"]))
    out[: c.new] = True
    return out


@screen("steady")
def _steady_screen(c: Column, p: Params) -> np.ndarray:
    # steady's gates: the latest block within x max_ratio of the warm-up level both ways, and
    # so k of the window's last m blocks past the warm-up (the detector's _persistent), in the
    # detector's operations
    rows, b = c.rows, c.baseline
    k, m = _k_m(p)
    if b is None or not b.median > 0:
        return _never(rows)
    if m < 1:
        return _maybe(rows)
    r_max = float(p.get("max_ratio", 1.5))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = rows[:, MEAN] / b.median
        held = (ratio <= r_max) & (ratio >= 1.0 / r_max) & (rows[:, START] > b.end_step)
    index = np.arange(len(rows))
    n = np.minimum(index + 1, c.window)  # the window's blocks
    total = np.r_[0, np.cumsum(held)]
    count = total[index + 1] - total[index + 1 - np.minimum(m, n)]
    return held & (count >= np.minimum(k, n))


@screen("plateau")
def _plateau_screen(c: Column, p: Params) -> np.ndarray:
    # plateau's gates: not before min_steps while the window holds the whole run; then over a
    # window of a fixed number of blocks, fewer than min_blocks finite means, and where all are
    # finite the Mann-Kendall rise (no ties: its exact p) and the Theil-Sen change in warm-up
    # sigmas, in the detector's operations; the rise since the start (max_rise)
    rows, b = c.rows, c.baseline
    if b is None:
        return _never(rows)
    index = np.arange(len(rows))
    n = np.minimum(index + 1, c.window)  # the window's blocks
    whole = c.offset + index + 1 <= n  # Series.blocks_total <= len(s)
    with np.errstate(invalid="ignore"):
        span = rows[:, END] - rows[index + 1 - n, START] + 1
        quiet = whole & (span < p.get("min_steps", 0))
    if "max_rise" in p:
        peak = _peaks(c)
        if peak is not None:  # -inf: no peak yet, or a peak of -inf (the detector decides)
            level = np.where(peak == -np.inf, np.nan, peak)
            with np.errstate(invalid="ignore", over="ignore"):
                quiet |= (level - b.start) / b.scale > float(p["max_rise"])
    w = p.get("window", 8)
    if isinstance(w, str) or int(w) < 1:
        out = ~quiet
        out[: c.new] = True
        return out
    width = np.minimum(n, int(w))  # the tested blocks (_window)
    finite = np.r_[0, np.cumsum(np.isfinite(rows[:, MEAN]))]
    logged = finite[index + 1] - finite[index + 1 - width]
    quiet |= logged < int(p.get("min_blocks", 6))
    until_rise, max_p = bool(p.get("until_rise")), float(p.get("max_p", 0.05))
    max_effect = float(p.get("max_effect", 3.0))
    asked = ~quiet & (logged == width) & (width >= 2) & (index >= c.ask)
    for wv in np.unique(width[asked]).tolist():
        at = np.flatnonzero(asked & (width == wv))
        _, dy, slope = _window_slopes(rows, at, wv)
        with np.errstate(invalid="ignore", over="ignore"):
            effect = slope * (wv - 1) / b.scale
            done = np.zeros(len(at), dtype=bool)
            if not until_rise and max_effect >= 0:
                done |= np.abs(effect) > max_effect * (1 + _MARGIN)
            if wv <= 33:  # _trend_stats' exact p where no two means tie: a significant rise
                tot = wv * (wv - 1) // 2
                dis = (dy < 0).sum(axis=1)
                pval = np.minimum(1.0, 2.0 * _inversion_cdf(wv)[np.minimum(dis, tot - dis)])
                rising = np.sign(dy).sum(axis=1) > 0
                done |= ~(dy == 0).any(axis=1) & rising & (pval <= max_p)
        quiet[at] = done
    out = ~quiet
    out[: c.new] = True
    return out
