"""The engine's records: verdict codes, a block's accumulators and records, the per-metric track
and the Judgement a run gets."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from advisor.detectors import (
    COUNT,
    END,
    FIRST_BAD,
    HI,
    LO,
    MEAN,
    NONFINITE,
    RECORD_WIDTH,
    SD,
    START,
    SUM_T,
    SUM_TT,
    SUM_X,
    SUM_XT,
    SUM_XX,
    WANDER_BLOCKS,
    WANDER_CHUNKS,
    Baseline,
    wander_chunks,
    wander_of,
)
from advisor.types import Finding, Status

# ============================================================================ evaluation
FIRE, NO, ABSENT = 1, 0, -1


# The open block's accumulators of one metric (a list, indexed by these; push folds each value
# in): the sum of the finite values, their count, the count of non-finite ones, their min and
# max, the step of the first non-finite one (-1: none yet), and the sums x^2, t, t^2, x*t of the
# block's least-squares line (t: steps since the block's first step).
ACC_SUM, ACC_N, ACC_BAD, ACC_MIN, ACC_MAX, ACC_FIRST_BAD = range(6)
ACC_SXX, ACC_ST, ACC_STT, ACC_SXT = range(6, 10)


def _new_acc() -> list[float]:
    return [0.0, 0, 0, math.inf, -math.inf, -1, 0.0, 0.0, 0.0, 0.0]


def _detrended_sd(a: list[float]) -> float:
    """Within-block sd around the block's own least-squares line: the swing inside the block,
    not the trend across it (a rising reward is not an oscillation)."""
    n = a[ACC_N]
    if n < 3:
        return math.nan
    sx, st = a[ACC_SUM], a[ACC_ST]
    sxx = a[ACC_SXX] - sx * sx / n
    stt = a[ACC_STT] - st * st / n
    sxt = a[ACC_SXT] - sx * st / n
    resid = sxx - (sxt * sxt / stt if stt > 0 else 0.0)
    return math.sqrt(max(0.0, resid) / n)


def _record(a: list[float], start: int, end: int) -> tuple[float, ...] | None:
    """The block record (columns START .. SUM_XT) of a block's accumulators, None when the
    metric was not logged in it."""
    n = a[ACC_N]
    if n == 0 and a[ACC_BAD] == 0:
        return None
    mean = a[ACC_SUM] / n if n else math.nan
    lo, hi = (a[ACC_MIN], a[ACC_MAX]) if n else (math.nan, math.nan)
    return (start, end, mean, lo, hi, n, a[ACC_BAD], a[ACC_FIRST_BAD], _detrended_sd(a),
            a[ACC_SUM], a[ACC_SXX], a[ACC_ST], a[ACC_STT], a[ACC_SXT])  # fmt: skip


def _records(acc: list[np.ndarray], starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """_record of every block at once (rows of the blocks the metric was not logged in are
    left out), with the same operations in the same order, so each value is the same."""
    n, bad = acc[ACC_N], acc[ACC_BAD]
    keep = (n > 0) | (bad > 0)
    a = [x[keep] for x in acc]
    n, nf = a[ACC_N], a[ACC_N].astype(float)
    sx, st = a[ACC_SUM], a[ACC_ST]
    has = n > 0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = np.where(has, sx / nf, math.nan)
        # _detrended_sd: max(0.0, nan) is 0.0, as where(resid > 0) gives
        sxx = a[ACC_SXX] - sx * sx / nf
        stt = a[ACC_STT] - st * st / nf
        sxt = a[ACC_SXT] - sx * st / nf
        resid = sxx - np.where(stt > 0, sxt * sxt / stt, 0.0)
        sd = np.where(n >= 3, np.sqrt(np.where(resid > 0.0, resid, 0.0) / nf), math.nan)
    out = np.empty((len(n), RECORD_WIDTH))
    out[:, START], out[:, END] = starts[keep], ends[keep]
    out[:, MEAN] = mean
    out[:, LO] = np.where(has, a[ACC_MIN], math.nan)
    out[:, HI] = np.where(has, a[ACC_MAX], math.nan)
    out[:, COUNT], out[:, NONFINITE], out[:, FIRST_BAD] = n, a[ACC_BAD], a[ACC_FIRST_BAD]
    out[:, SD] = sd
    out[:, SUM_X], out[:, SUM_XX], out[:, SUM_T] = sx, a[ACC_SXX], st
    out[:, SUM_TT], out[:, SUM_XT] = a[ACC_STT], a[ACC_SXT]
    return out


def _add_wander(t: _Track, total: int, latest: np.ndarray) -> None:
    """Close a chunk of the long-run wander reference: the robust scale (MAD around a Theil-Sen
    line, or second differences) of the latest WANDER_BLOCKS block means. A 6-block warm-up
    cannot show how far autocorrelated noise wanders over 16 blocks; the run's own history
    can, and the median over chunks converges as the run goes on (detectors.volatility).
    ...and the chunk's typical SPAN-block residual sd: the yardstick a warm-up of ~4 spans
    estimates poorly (heavy-tailed, autocorrelated noise), for volatility's within-span view.
    push_columns computes every chunk it closes at once (t.wander_ready, by total). `total`:
    the track's block count at the chunk's end; `latest`: the window's latest rows then."""
    ready = t.wander_ready.pop(total, None) if t.wander_ready else None
    scale, spans = ready if ready is not None else wander_of(latest)
    if scale is not None:
        t.wander.append((total, scale))
        del t.wander[:-WANDER_CHUNKS]
    if spans is not None:
        t.span_wander.append((total, spans))
        del t.span_wander[:-WANDER_CHUNKS]


def _wander_ready(t: _Track, records: np.ndarray) -> dict[int, tuple[float | None, float | None]]:
    """The wander chunks (_add_wander) that folding `records` after t's window will close, by
    the track's block count at each: each chunk is the window's latest rows then, as there."""
    width = min(WANDER_BLOCKS, len(t.buf))
    column = np.vstack([t.buf[: t.nb], records])
    base = t.total - t.nb  # column row 0's block count
    first = -(-(t.total + 1) // WANDER_BLOCKS) * WANDER_BLOCKS
    ends = np.arange(first, t.total + len(records) + 1, WANDER_BLOCKS)
    ends = ends[ends - width >= base]
    if not len(ends):
        return {}
    rows = (ends - base)[:, None] - width + np.arange(width)[None, :]
    return dict(zip(ends.tolist(), wander_chunks(column[rows]), strict=True))


# Metrics the engine derives from a logged one, point by point, when a rule reads them: the
# block mean of an indicator is the share of the block's logged steps where it holds.
# grad_zero: 1 where grad_norm is exactly 0 (a step whose every group scored alike: TRL and
# verl log a zero gradient for it; the update did nothing), 0 where it is a finite non-zero.
DERIVED: dict[str, str] = {"grad_zero": "grad_norm"}


def _zero(v: float) -> float | None:
    return None if v - v != 0.0 else float(v == 0.0)  # non-finite: no step to count


def _derive_row(metrics: Mapping[str, float | None]) -> Mapping[str, float | None]:
    g = metrics.get("grad_norm")
    if g is None or "grad_zero" in metrics:
        return metrics
    try:
        z = _zero(float(g))
    except (TypeError, ValueError):
        return metrics
    return {**metrics, "grad_zero": z}


def _derive_columns(
    columns: Mapping[str, tuple[np.ndarray, np.ndarray | None]], tracks: Mapping[str, Any]
) -> Mapping[str, tuple[np.ndarray, np.ndarray | None]]:
    if "grad_zero" not in tracks or "grad_zero" in columns or "grad_norm" not in columns:
        return columns
    v, m = columns["grad_norm"]
    finite = np.isfinite(v)
    logged = finite if m is None else (finite & m)
    return {**columns, "grad_zero": ((v == 0.0).astype(float), logged)}


def _cell(values: np.ndarray, logged: np.ndarray | None, i: int) -> float | None:
    return None if logged is not None and not logged[i] else float(values[i])


def _column(
    values: np.ndarray, logged: np.ndarray | None, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows' values, which of them are finite, which are logged but not finite (NaN/inf:
    counted, never summed). A row not logged is skipped, as push skips None."""
    x = np.asarray(values, dtype=float)[rows]
    finite = np.isfinite(x)
    if logged is None:
        return x, finite, ~finite
    seen = np.asarray(logged, dtype=bool)[rows]
    return x, seen & finite, seen & ~finite


class _BlockFold:
    """Per-block accumulators of whole columns (Monitor.push_columns): row r of block j sits at
    [j, r - start of j] of a blocks x longest-block matrix, so a running sum along each row adds
    the values in step order, as push does."""

    def __init__(self, steps: np.ndarray, starts: np.ndarray) -> None:
        n = len(steps)
        self.steps = steps
        self.n_blocks = len(starts)
        self.block = np.repeat(np.arange(self.n_blocks), np.diff(np.r_[starts, n]))
        self.pos = np.arange(n) - starts[self.block]
        self.shape = (self.n_blocks, int(self.pos.max()) + 1)
        # push's position inside the block: from the block's first step pushed (gaps count)
        self.dt = (steps - steps[starts][self.block]).astype(float)

    def accumulate(self, x: np.ndarray, finite: np.ndarray, bad: np.ndarray) -> list[np.ndarray]:
        """push's accumulators (ACC_SUM .. ACC_SXT), each as an array over the blocks."""
        f = np.flatnonzero(finite)
        row, col = self.block[f], self.pos[f]
        v, dt = x[f], self.dt[f]
        # sum x, x^2, t, t^2, x*t at once: a running sum along each block's row is push's `+=`
        # in step order (a plain row sum would pair the terms); + 0.0 turns a -0.0 total into
        # push's 0.0 (its sums start at 0.0)
        m = np.zeros((5, *self.shape))
        with np.errstate(over="ignore", invalid="ignore"):  # push overflows to inf silently
            m[:, row, col] = (v, v * v, dt, dt * dt, v * dt)
            sums = list(m.cumsum(axis=2)[:, :, -1] + 0.0)
        n = self.n_blocks
        b = np.flatnonzero(bad)
        first_bad = np.full(n, -1, dtype=np.int64)
        if len(b):
            blocks, first = np.unique(self.block[b], return_index=True)
            first_bad[blocks] = self.steps[b[first]]
        out: list[np.ndarray] = [first_bad] * (ACC_SXT + 1)
        out[ACC_SUM], out[ACC_SXX], out[ACC_ST], out[ACC_STT], out[ACC_SXT] = sums
        out[ACC_N] = np.bincount(row, minlength=n)
        out[ACC_BAD] = np.bincount(self.block[b], minlength=n)
        out[ACC_MIN] = self._extreme(math.inf, np.min, row, col, v)
        out[ACC_MAX] = self._extreme(-math.inf, np.max, row, col, v)
        return out

    def _extreme(
        self, fill: float, pick: Any, row: np.ndarray, col: np.ndarray, v: np.ndarray
    ) -> np.ndarray:
        m = np.full(self.shape, fill)
        m[row, col] = v
        out = pick(m, axis=1)
        zero = np.flatnonzero(out == 0)
        if len(zero):  # 0.0 == -0.0: push keeps the first one seen
            out[zero] = m[zero, np.argmax(m[zero] == 0, axis=1)]
        return out


@dataclass(slots=True)
class _Track:
    """One metric's state: the open block's accumulators + bounded block history."""

    buf: np.ndarray  # the last `window_blocks` block records, oldest first (rows of span_sd)
    # buf is a view of `store` (twice its rows) from row `off`: a full window moves on by a
    # row per block, and is copied to the front only once the store's end is reached
    store: np.ndarray | None = None
    off: int = 0
    acc: list[float] = field(default_factory=lambda: _new_acc())
    nb: int = 0  # rows of buf in use
    ready: list[float] | None = None  # the next block's record, made by push_columns
    version: int = 0  # bumped whenever what a Series of this metric shows changes
    seen: bool = False
    baseline: Baseline | None = None
    peak: float | None = None
    peak_step: int | None = None
    peak3: float | None = None  # highest mean of 3 consecutive blocks (whole run)
    peak3_step: int | None = None  # last step of the middle block of that triple
    last3: list[tuple[float, int, int]] = field(default_factory=list)  # (mean, end, start)
    # other metrics' mean level over the blocks of that triple (`at_companion_peak` leaves)
    peak3_ctx: dict[str, float] = field(default_factory=dict)
    trough: float | None = None
    trough_step: int | None = None
    # the first block's mean, lowest and highest point, and its within-block sd
    first: tuple[float, float, float, float] = (math.nan, math.nan, math.nan, math.nan)
    total: int = 0
    warm: list[tuple[float, float, int]] = field(default_factory=list)  # warm-up, bounded
    wander: list[tuple[int, float]] = field(default_factory=list)  # chunks, bounded
    span_wander: list[tuple[int, float]] = field(default_factory=list)  # chunks, bounded
    # the wander chunks push_columns computed at once, by the block count that closes each
    wander_ready: dict[int, tuple[float | None, float | None]] = field(default_factory=dict)
    wanders: bool = False  # a `reads_wander` detector judges it: the chunks are kept


def _slide(t: _Track, row: Any) -> None:
    """A full window's oldest record dropped and `row` appended (buf moved on in its store)."""
    store, width = t.store, len(t.buf)
    assert store is not None
    off = t.off + 1
    if off + width > len(store):
        store[: width - 1] = t.buf[1:]
        off = 0
    t.off = off
    t.buf = store[off : off + width]
    t.buf[-1] = row


@dataclass(slots=True)
class _Ahead:
    """The blocks one push_columns call closes while the screens' records are at hand (0 ..
    n - 1, in order), as the rule evaluation will see each: per metric with records in the
    call, the row of its latest record in its column at each block (-1: none yet), and the
    run's latest logged block end after each block (nan: none yet)."""

    n: int
    rows: dict[str, np.ndarray]
    logged_end: np.ndarray
    stamp: int  # which call: masks made in another are stale
    at: int = -1  # the block being closed
    # (the baselines it was made for, the blocks _fold_span may close)
    foldable: tuple[int, np.ndarray] | None = None
    # (the state it was made for, the blocks closed without evaluating a rule, bit j: block j)
    unjudged: tuple[tuple[int, ...], int] | None = None
    # per metric: (its rows, the blocks it is logged at, those its latest record there is one
    # of this call's; bit j: block j), made when a screen first asks
    logged: dict[str, tuple[np.ndarray, int, int]] = field(default_factory=dict)


@dataclass
class Judgement:
    """What judging a run found: its findings in the order they fired, the warm-up it was
    judged after, its status and assumptions, and the eval and block sizes it was judged in."""

    findings: list[Finding]
    warmup_steps: int
    status: Status
    assumptions: list[str]
    eval_steps: int
    block_steps: int
    missing_steps: int = 0
