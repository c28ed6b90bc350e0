"""Noise detectors (and their screens): oscillation, jumps and periodic swings."""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np

from advisor.detectors.common import (
    _MARGIN,
    _aligned,
    _by_window,
    _evidence,
    _excess,
    _fmt,
    _held_how,
    _k_m,
    _maybe,
    _never,
    _onset_index,
    _persistent,
    _pow2_scale,
    _row_median,
    _rows_of,
    _steps,
    _trailing,
    _trailing_mean,
    _trimmed_means,
    _trimmed_rows,
)
from advisor.detectors.registry import Column, Params, detector, screen
from advisor.detectors.series import (
    COUNT,
    MEAN,
    SD,
    SPAN,
    START,
    SUM_T,
    SUM_TT,
    SUM_X,
    SUM_XT,
    SUM_XX,
    Series,
    _span_sd_last,
    median,
    median_rows,
    nanmedian,
    robust_scale,
    span_sd,
)
from advisor.types import Evidence


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


@detector("volatility", reads_wander=True)
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
    with np.errstate(over="ignore"):  # a threshold past the float range is inf: nothing passes it
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


@screen("jump", baseless=True)
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
    steps = median(s.end[i:] - s.start[i:] + 1) * st["period"]
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


@screen("swing", baseless=True)
def _swing_screen(c: Column, p: Params) -> np.ndarray:
    # swing's gate at the latest window: the residual spread around a line bounds the spread
    # around the quadratic, which must carry the thresholds
    return _by_window(c, int(p.get("k", 3)), int(p.get("window", 32)),
                      int(p.get("min_blocks", 12)), lambda ends, w: _swing_may(c.rows, ends, w, p),
                      lambda ends, ws: _swing_young(c.rows, ends, ws, p))  # fmt: skip


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
        noise = np.maximum(median_rows(sd / np.sqrt(cnt)), 1e-12)
        need = np.maximum(
            np.maximum(float(p.get("min_ratio", 5.0)) * noise, float(p.get("min_abs", 0.0))),
            float(p.get("min_rel", 0.2)) * np.abs(median_rows(y)),
        )
        tc = np.arange(w, dtype=float) - (w - 1) / 2.0
        yc = y - y.mean(axis=1, keepdims=True)
        res = yc - ((yc @ tc) / float(tc @ tc))[:, None] * tc
        rms = np.sqrt((res * res).sum(axis=1) / w)
        bound = rms * (1 + 1e-6) + 1e-6 * np.abs(y).max(axis=1)
        quiet = 2.0 * math.sqrt(2.0) * bound < need * (1 - 1e-6)
    return judged & ~quiet  # a window the detector does not judge: it returns None
