"""Peak detectors (and their screens): a metric against its run-wide best."""

from __future__ import annotations

import math

import numpy as np

from advisor.detectors.common import (
    _MARGIN,
    _evidence,
    _excess,
    _fmt,
    _held_how,
    _k_m,
    _maybe,
    _never,
    _onset_index,
    _peaks,
    _persistent,
    _row_median,
    _rows_of,
    _steps,
    _strong_run,
    _trailing,
    _trailing_mean,
    _window_scale,
)
from advisor.detectors.registry import Column, Params, detector, screen
from advisor.detectors.series import (
    _MAD_TO_SIGMA,
    COUNT,
    MEAN,
    SD,
    Series,
    median,
    nanmedian,
)
from advisor.types import Evidence


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


@screen("peak_below", baseless=True)
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


@detector("shared_fall", at_companion_peak=True)
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
        return median(sd[ok])
    y = s.mean[np.isfinite(s.mean)]
    if len(y) < 3:
        return math.nan
    return median(np.abs(np.diff(y))) * _MAD_TO_SIGMA / math.sqrt(2.0)


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


@screen("collapse", baseless=True)
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
