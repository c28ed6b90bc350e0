"""Trend detectors (and their screens): a metric rising, falling, flat or growing."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from advisor.detectors.common import (
    _MARGIN,
    _by_window,
    _evidence,
    _excess,
    _fmt,
    _k_m,
    _maybe,
    _never,
    _onset_index,
    _peaks,
    _persistent,
    _rows_of,
    _steps,
    _trailing_mean,
    _trimmed_means,
    _trimmed_rows,
    _window_scale,
)
from advisor.detectors.registry import Column, Params, detector, screen
from advisor.detectors.series import (
    END,
    MEAN,
    START,
    Series,
    _pairs,
    distinct,
    median,
    nanmedian,
)
from advisor.types import Evidence


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
    for wv in distinct(width[asked]).tolist():
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
        a = median(ly[:third])
        mid = median(ly[w // 2 - third // 2 : w // 2 - third // 2 + third])
        b = median(ly[-third:])
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


@screen("growth", baseless=True)
def _growth_screen(c: Column, p: Params) -> np.ndarray:
    # growth's gates: the latest level, then the cheap look at the window's ends
    x = _trimmed_rows(c.rows) if p.get("trimmed") else c.rows[:, MEAN]
    return _by_window(c, int(p.get("k", 3)), int(p.get("window", 32)),
                      int(p.get("min_blocks", 12)), lambda ends, w: _growth_may(x, ends, w, p),
                      lambda ends, ws: _growth_young(x, ends, ws, p))  # fmt: skip


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
