"""What every detector reads: a metric's block records (Series), its warm-up Baseline, and the
robust statistics over block means."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

# 1.4826 turns a median absolute deviation into a normal sigma.
_MAD_TO_SIGMA = 1.4826


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


def distinct(x: Any) -> np.ndarray:
    """np.unique of a 1-D integer array (its values sorted, each once), without numpy's
    masked-array check: see `median`."""
    a = np.sort(np.asarray(x).ravel())
    return a[np.r_[True, a[1:] != a[:-1]]] if a.size else a


def nanmedian(x: Any) -> float:
    """np.nanmedian of a 1-D sequence (NaN ignored; NaN when nothing is left), see `median`."""
    a = np.asarray(x, dtype=float).ravel()
    return median(a[~np.isnan(a)])


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
    # (only for the metrics of `at_companion_peak` leaves that name this one as `per`).
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


def median_rows(a: np.ndarray) -> np.ndarray:
    """np.median(a, axis=1) of a 2-D float array, exactly (NaN in a row that holds one), see
    `median`: the same partition (NaN last) and the same mean of the middle two."""
    n = a.shape[1]
    k = n // 2
    part = np.partition(a, ([k] if n % 2 else [k - 1, k]) + [-1], axis=1)
    mid = part[:, k] if n % 2 else (part[:, k - 1] + part[:, k]) / 2.0
    last = part[:, -1]
    return np.where(np.isnan(last), last, mid)


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
