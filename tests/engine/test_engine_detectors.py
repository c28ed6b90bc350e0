"""Detectors: the statistics they compute, against brute force and known shapes."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.detectors import (
    DETECTORS,
    Baseline,
    Series,
    _span_sd_last,
    robust_scale,
    span_sd,
)


def _blocks(values: list[list[float]], length: int = 10, first: int = 1) -> np.ndarray:
    """Block records (as the engine keeps them) from raw points, t counted inside each block."""
    rows = []
    for b, pts in enumerate(values):
        start = first + b * length
        x = np.asarray(pts, float)
        t = np.arange(len(x), dtype=float)
        rows.append((start, start + length - 1, x.mean(), x.min(), x.max(), len(x), 0, -1,
                     math.nan, x.sum(), (x * x).sum(), t.sum(), (t * t).sum(), (x * t).sum()))
    return np.asarray(rows, float)


def _series(means: list[float], base: Baseline | None = None, metric: str = "m") -> Series:
    arr = _blocks([[m] * 5 for m in means])
    peak = int(np.nanargmax(arr[:, 2]))
    return Series(
        metric=metric, raw=arr, baseline=base, peak=float(arr[peak, 2]),
        peak_step=int(arr[peak, 1]), peak3=None, peak3_step=None, trough=None,
        trough_step=None, blocks_total=len(means),
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(-5, 5), min_size=2, max_size=12), min_size=3, max_size=8))
def test_span_sd_equals_brute_force(points: list[list[float]]) -> None:
    length = 12
    arr = _blocks(points, length)
    got = span_sd(arr)
    for j in range(2, len(points)):
        xs = np.concatenate([points[i] for i in range(j - 2, j + 1)])
        ts = np.concatenate([np.arange(len(points[i])) + (i - j + 2) * length
                             for i in range(j - 2, j + 1)])
        if len(xs) < 6:
            assert math.isnan(got[j])
            continue
        slope, icpt = np.polyfit(ts, xs, 1)
        want = math.sqrt(np.mean((xs - (slope * ts + icpt)) ** 2))
        assert math.isclose(got[j], want, rel_tol=1e-6, abs_tol=1e-6)
    assert math.isclose(_span_sd_last(arr), got[-1], rel_tol=1e-9, abs_tol=1e-12) or (
        math.isnan(got[-1]) and math.isnan(_span_sd_last(arr))
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(-5, 5), min_size=2, max_size=12), min_size=3, max_size=8))
def test_span_sd_leave_out_equals_brute_force(points: list[list[float]]) -> None:
    # The least residual sd of each 3-block span with one of its blocks left out (a line over
    # the remaining points at their own positions; sub-spans of fewer than 4 points skipped).
    length = 12
    got = span_sd(_blocks(points, length), leave_out=True)
    plain = span_sd(_blocks(points, length))
    for j in range(2, len(points)):
        best = plain[j]
        for out in range(j - 2, j + 1):
            keep = [i for i in range(j - 2, j + 1) if i != out]
            xs = np.concatenate([points[i] for i in keep])
            ts = np.concatenate([np.arange(len(points[i])) + (i - j + 2) * length for i in keep])
            if len(xs) < 4:
                continue
            slope, icpt = np.polyfit(ts, xs, 1)
            sd = math.sqrt(np.mean((xs - (slope * ts + icpt)) ** 2))
            best = sd if math.isnan(best) else min(best, sd)
        if math.isnan(best):
            assert math.isnan(got[j])
        else:
            assert math.isclose(got[j], best, rel_tol=1e-6, abs_tol=1e-6)


def test_robust_scale_ignores_a_trend() -> None:
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.01, 12)
    flat = robust_scale(0.5 + noise, 1e-9)
    rising = robust_scale(0.5 + noise + 0.1 * np.arange(12), 1e-9)
    assert math.isclose(flat, rising, rel_tol=1e-9)
    assert robust_scale(np.ones(10), 0.003) == 0.003  # a constant gives the floor


BASE = Baseline(median=1.0, scale=0.05, start=1.0, sd=0.05, n_blocks=6, end_step=60)


def test_shift_needs_direction_size_and_persistence() -> None:
    shift = DETECTORS["shift"]
    p = {"direction": "down", "min_z": 4, "min_ratio": 0.3, "k": 3, "m": 4}
    assert shift(_series([1.0] * 6 + [0.2, 0.1, 0.1, 0.1], BASE), p) is not None
    assert shift(_series([1.0] * 6 + [0.1, 1.0, 1.0, 0.1], BASE), p) is None  # not persistent
    assert shift(_series([1.0] * 6 + [0.5] * 4, BASE), p) is None  # too small a ratio
    ev = shift(_series([1.0] * 6 + [1.0, 0.1, 0.1, 0.1], BASE), p)
    assert ev is not None and ev.statistic["onset_step"] == 71 and ev.window == (71, 100)
    assert "fell" in ev.summary and "0.1" in ev.summary
    assert "peaking" not in ev.summary  # the window's median tells it all


def test_shift_names_a_spike_its_median_hides() -> None:
    """Entropy 1.0 -> 3 -> 3 -> 3 -> 40 -> 3: the window's median (3) understates the blow-up."""
    p = {"direction": "up", "min_z": 4, "min_ratio": 2.0, "k": 3, "m": 4}
    ev = DETECTORS["shift"](_series([1.0] * 6 + [3.0, 3.0, 40.0, 3.0], BASE), p)
    assert ev is not None and "to 3 " in ev.summary
    assert "peaking at 40 in the block ending at step 90" in ev.summary


def test_trend_and_plateau() -> None:
    up = [1.0 + 0.1 * i for i in range(10)]
    assert DETECTORS["trend"](_series(up, BASE), {"direction": "up", "min_effect": 4}) is not None
    assert DETECTORS["trend"](_series(up, BASE), {"direction": "down"}) is None
    assert DETECTORS["plateau"](_series(up, BASE), {"window": 8}) is None
    flat = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0]
    ev = DETECTORS["plateau"](_series(flat, BASE), {"window": 8, "max_rise": 4})
    assert ev is not None and ev.statistic["p"] > 0.05


def test_plateau_held_until_a_clear_rise() -> None:
    """`until_rise` (the keep of an active P1/KL0): a reward drifting down, or a Theil-Sen
    change of noisy block means, does not end a plateau; a significant rise does."""
    plateau = DETECTORS["plateau"]
    down = [1.0 - 0.05 * i for i in range(10)]  # change -9 sigmas (sigma 0.05)
    assert plateau(_series(down, BASE), {"window": 8}) is None  # to start: a decline
    assert plateau(_series(down, BASE), {"window": 8, "until_rise": True}) is not None
    up = [1.0 + 0.1 * i for i in range(10)]
    assert plateau(_series(up, BASE), {"window": 8, "until_rise": True}) is None


def test_near_zero_ignores_exact_zeros() -> None:
    s = _series([1e-6] * 4)
    assert DETECTORS["near_zero"](s, {"value": 1e-4}) is not None
    assert DETECTORS["near_zero"](_series([0.0] * 4), {"value": 1e-4}) is None
    assert DETECTORS["near_zero"](_series([0.0] * 4), {"value": 1e-4, "exact_zero": True})


def test_jump_sees_acceleration_not_saturation() -> None:
    jump = DETECTORS["jump"]
    p = {"lag": 4, "min_ratio": 5, "k": 3, "m": 4, "min_level": 0.05}
    explode = [0.01] * 8 + [0.02, 0.08, 0.3, 0.6, 0.9, 1.0]
    saturate = [0.01 * (1 - math.exp(-i / 3)) + 0.001 for i in range(14)]
    assert jump(_series(explode), p) is not None
    assert jump(_series(saturate), p) is None


def test_drop_from_peak_follows_the_peak() -> None:
    drop = DETECTORS["drop_from_peak"]
    p = {"min_z": 3, "min_rel": 0.5, "k": 3, "m": 3}
    ev = drop(_series([0.8] * 6 + [0.9, 0.1, 0.05, 0.05], BASE), p)
    assert ev is not None and ev.statistic["peak"] == 0.9
    assert drop(_series([0.8] * 6 + [0.9, 0.1, 0.9, 0.05], BASE), p) is None


def test_nonfinite_counts_points() -> None:
    s = _series([1.0] * 4)
    s.raw[-1, 6], s.raw[-1, 7] = 3, 33
    ev = DETECTORS["nonfinite"](s, {"min_count": 2})
    assert ev is not None and ev.statistic["onset_step"] == 33
    assert DETECTORS["nonfinite"](s, {"min_count": 5}) is None


def _raw_series(points: list[list[float]], base: Baseline) -> Series:
    arr = _blocks(points)
    return Series(
        metric="m", raw=arr, baseline=base, peak=float(np.nanmax(arr[:, 2])), peak_step=None,
        peak3=None, peak3_step=None, trough=None, trough_step=None, blocks_total=len(points),
    )


def test_volatility_within_span_needs_enough_points() -> None:
    # The same swing inside every block, logged densely (5 points a block) or sparsely (2):
    # a spread from a 2-point block pair is no estimate, so the sparse run is not judged on it.
    vol = DETECTORS["volatility"]
    p = {"min_ratio": 2.5, "k": 5, "m": 6, "slow_ratio": 1e6, "min_span_points": 12}
    calm = Baseline(median=0.5, scale=0.01, start=0.5, sd=0.01, n_blocks=6, end_step=60)
    dense = [[0.5, 0.6, 0.4, 0.6, 0.4]] * 10
    sparse = [[0.4, 0.6]] * 10
    assert vol(_raw_series(dense, calm), p) is not None
    assert vol(_raw_series(sparse, calm), {**p, "min_span_points": 0}) is not None
    assert vol(_raw_series(sparse, calm), p) is None


CALM = Baseline(median=1.0, scale=0.05, start=1.0, sd=0.05, n_blocks=6, end_step=60)


def test_one_block_far_past_the_threshold_is_enough() -> None:
    # Graded persistence: 3 of 4 blocks at 4 sigmas, or the latest alone at 2 x 4 sigmas with
    # every point past the plain thresholds and enough points to call it a level.
    shift = DETECTORS["shift"]
    p = {"direction": "down", "min_z": 4, "min_ratio": 0.3, "k": 3, "m": 4, "strong": 2}
    before = [[1.0, 1.02, 0.98, 1.0, 1.0]] * 6
    collapsed = _raw_series([*before, [0.1, 0.12, 0.08, 0.1, 0.1]], CALM)
    ev = shift(collapsed, p)
    assert ev is not None and ev.statistic["onset_step"] == 61
    assert shift(collapsed, {**p, "strong": 0}) is None  # plain k of m waits for 3 blocks
    # One wild point drags the mean down as far, but the block is not a level: no evidence.
    spike = _raw_series([*before, [1.0, 1.0, 1.0, 1.0, -3.0]], CALM)
    assert spike.mean[-1] < 0.3 and shift(spike, p) is None
    # Two logged points are too few to call a level; a sparse log pools the latest blocks
    # (fewer than k) until they hold three, each of them strong.
    assert shift(_raw_series([*before, [0.1, 0.1]], CALM), p) is None
    assert shift(_raw_series([*before, [0.1, 0.1], [0.1, 0.1]], CALM), p) is not None
    assert shift(_raw_series([*before, [0.1], [0.1]], CALM), p) is None
    # Past the plain thresholds but the z (7.5 with a sigma of 0.1) not 2 x 4: waits for k of m.
    noisy = Baseline(median=1.0, scale=0.1, start=1.0, sd=0.1, n_blocks=6, end_step=60)
    assert shift(_raw_series([*before, [0.25] * 5], noisy), p) is None
    assert shift(_raw_series([*before, *[[0.25] * 5] * 3], noisy), p) is not None


def test_strong_level_jump_and_drop() -> None:
    above = DETECTORS["above"]
    p = {"value": 0.1, "k": 3, "m": 4, "strong": 2}
    low = [[0.01] * 5] * 6
    assert above(_raw_series([*low, [0.5, 0.4, 0.6, 0.5, 0.5]], CALM), p) is not None
    assert above(_raw_series([*low, [0.15] * 5], CALM), p) is None  # only 1.5 x the level
    assert above(_raw_series([*low, [0.01, 0.01, 0.01, 0.01, 2.5]], CALM), p) is None  # spike
    jump = DETECTORS["jump"]
    pj = {"lag": 4, "min_ratio": 5, "k": 3, "m": 4, "min_level": 0.05, "strong": 2}
    kl = [[0.01] * 5] * 8
    assert jump(_raw_series([*kl, [0.2, 0.25, 0.2, 0.22, 0.2]], CALM), pj) is not None
    assert jump(_raw_series([*kl, [0.07] * 5], CALM), pj) is None  # x7: persistence needed
    drop = DETECTORS["drop_from_peak"]
    pd = {"smooth": 3, "min_z": 2, "min_rel": 0.5, "rel_to": "rise", "k": 3, "m": 3, "strong": 2}
    base = Baseline(median=0.3, scale=0.02, start=0.2, sd=0.02, n_blocks=6, end_step=60)
    rise = [[0.2 + 0.1 * i] * 5 for i in range(7)]  # 0.2 -> 0.8
    fell = _raw_series([*rise, [0.1, 0.05, 0.1, 0.0, 0.05]], base)
    assert drop(fell, pd) is not None
    assert drop(fell, {**pd, "strong": 0}) is None  # the 3-block smoothing lags the fall


def test_volatility_four_strong_spans_in_a_row_are_enough() -> None:
    vol = DETECTORS["volatility"]
    p = {"min_ratio": 2.5, "k": 5, "m": 6, "slow_ratio": 1e6, "strong": 2}
    calm = Baseline(median=0.5, scale=0.01, start=0.5, sd=0.01, n_blocks=6, end_step=60)
    quiet = [[0.5, 0.51, 0.49, 0.5, 0.5]] * 6
    swing = [[0.5, 0.6, 0.4, 0.6, 0.4]] * 4  # spread ~0.09: 9 x the warm-up's
    assert vol(_raw_series([*quiet, *swing], calm), p) is not None
    assert vol(_raw_series([*quiet, *swing], calm), {**p, "strong": 0}) is None  # 4 of 6 spans
    # One wild step inflates the three spans that hold its block, never four.
    spike = [*quiet, [0.5, 0.5, 3.0, 0.5, 0.5], *quiet[:2]]
    assert vol(_raw_series(spike, calm), p) is None


def test_volatility_swings_against_the_runs_long_run_wander() -> None:
    # Block means zigzagging by 0.1 after a warm-up that read a block sigma of 0.01: ten warm-up
    # sigmas. If the run's earlier 16-block chunks wandered by 0.03 a sigma, the zigzag is 3.3 of
    # those (autocorrelated noise does that over hundreds of windows): not an oscillation at
    # wander_ratio 4. Chunks that closed inside the judged window do not count (the oscillation
    # must not set its own yardstick), and wander_ratio 0 (the keep params) ignores them.
    vol = DETECTORS["volatility"]
    calm = Baseline(median=0.5, scale=0.01, start=0.5, sd=0.01, n_blocks=6, end_step=60)
    means = [0.5, 0.6] * 8
    arr = _blocks([[m] for m in means])
    p = {"min_ratio": 2.5, "slow_ratio": 6.0, "min_turns": 3, "window": 16, "wander_ratio": 4.0}

    def series(total: int, wander: tuple) -> Series:
        return Series(metric="m", raw=arr, baseline=calm, peak=0.6, peak_step=None, peak3=None,
                      peak3_step=None, trough=None, trough_step=None, blocks_total=total,
                      wander=wander)

    assert vol(series(16, ()), p) is not None  # no history yet: the warm-up's yardstick
    before = ((16, 0.03), (32, 0.03), (48, 0.02))
    assert vol(series(64, before), p) is None  # median wander 0.03: 0.1 is 3.3 of them
    assert vol(series(64, ((16, 0.01), (32, 0.01), (48, 0.01))), p) is not None
    wild_late = ((16, 0.01), (32, 0.05), (48, 0.05))
    assert vol(series(64, wild_late), p) is None
    assert vol(series(47, wild_late), p) is not None  # chunks 32 and 48 closed in the window
    assert vol(series(64, before), {**p, "wander_ratio": 0}) is not None


def test_volatility_within_span_against_the_runs_typical_span_spread() -> None:
    # A within-span spread 3 x the warm-up's (whose ~4 spans read low) is no oscillation when
    # the run's earlier chunks typically spread 2 x the warm-up's: 1.5 x its usual, below
    # span_wander_ratio 2. A spread of 5 x the warm-up's (2.5 x the usual) still is; chunks that
    # closed inside the window are not the yardstick; span_wander_ratio 0 (keep) ignores them.
    from dataclasses import replace

    vol = DETECTORS["volatility"]
    p = {"min_ratio": 2.5, "k": 5, "m": 6, "slow_ratio": 1e6, "span_wander_ratio": 2.0,
         "window": 16}
    calm = Baseline(median=0.5, scale=0.01, start=0.5, sd=0.01, n_blocks=6, end_step=60)

    def swinging(amp: float, total: int, chunks: tuple) -> Series:
        swing = [[0.5, 0.5 + amp, 0.5 - amp, 0.5 + amp, 0.5 - amp]] * 8
        s = _raw_series([[0.5, 0.51, 0.49, 0.5, 0.5]] * 6 + swing, calm)
        return replace(s, blocks_total=total, span_wander=chunks)

    usual = ((16, 0.02), (32, 0.02), (48, 0.02))
    assert vol(swinging(0.034, 64, ()), p) is not None  # no history: the warm-up's yardstick
    assert vol(swinging(0.034, 64, usual), p) is None
    assert vol(swinging(0.06, 64, usual), p) is not None
    wild_late = ((16, 0.01), (32, 0.02), (48, 0.02))
    assert vol(swinging(0.034, 64, wild_late), p) is None
    assert vol(swinging(0.034, 47, wild_late), p) is not None  # 32, 48 closed in the window
    assert vol(swinging(0.034, 64, usual), {**p, "span_wander_ratio": 0}) is not None


def test_rose_measures_the_gain_since_the_first_point_in_its_own_noise() -> None:
    # A validation reward evaluated every other block: 0.30 before training, then climbing by
    # 0.01 an evaluation with +-0.01 noise. Its warm-up (3 points) gives no usable scale; its
    # own point-to-point noise does: 0.30 -> ~0.40 is many of those. A flat one is not.
    rose = DETECTORS["rose"]
    rng = np.random.default_rng(3)
    p = {"min_sigmas": 4.0, "last": 3, "min_points": 6}

    def val(slope: float, first: float = 0.30) -> Series:
        y = [first + slope * i + rng.normal(0, 0.01) for i in range(12)]
        y[0] = first
        base = Baseline(median=0.3, scale=0.05, start=float(np.median(y[:2])), sd=0.01,
                        n_blocks=6, end_step=60, first=first)
        return _series(y, base, metric="val_reward")

    assert rose(val(0.01), p) is not None
    assert rose(val(0.0), p) is None
    assert rose(val(-0.01), p) is None
    short = _series([0.3, 0.35, 0.4], Baseline(0.3, 0.05, 0.3, 0.01, 3, 30, first=0.3))
    assert rose(short, p) is None  # fewer than min_points evaluations: not judged


def test_no_rise_counts_a_rise_inside_the_first_two_blocks() -> None:
    # Long blocks (eval_steps 50): the run learned within its first block (0.40), its second is
    # already up (0.55). From the first two's median (0.475) the plateau at 0.6 is 2.5 sigmas;
    # from the first block it is 4: a rise, not "never rose".
    no_rise = DETECTORS["no_rise"]
    means = [0.40, 0.55, 0.58, 0.6, 0.59, 0.6, 0.58, 0.6]
    base = Baseline(median=0.58, scale=0.05, start=0.475, sd=0.02, n_blocks=6, end_step=150,
                    first=0.40)
    assert no_rise(_series(means, base), {"max_rise": 3.0}) is None
    flat = Baseline(median=0.58, scale=0.05, start=0.475, sd=0.02, n_blocks=6, end_step=150)
    assert no_rise(_series(means, flat), {"max_rise": 3.0}) is not None  # no first: as before


def test_peak_bias_counts_independent_smoothed_points() -> None:
    # 32 validation points, 3-point smoothing: the best smoothed value is the best of ~10
    # independent ones, not of 30 overlapping ones (whose sqrt(2 ln n) over-rates the bias).
    # A fall of 0.058 under a fixed wiggle (sd 0.0145, which the rise-then-fall fit reads, not
    # the alternating wiggle's 2x larger second differences) passes, 0.054 does not; counted as
    # 30 points it needed 0.004 more (sigma / sqrt 3 x (sqrt(2 ln 30) - sqrt(2 ln 10))).
    drop = DETECTORS["drop_from_peak"]
    base = Baseline(median=0.58, scale=0.025, start=0.4, sd=0.025, n_blocks=6, end_step=60)
    p = {"scale": "window", "smooth": 3, "onset": "peak", "peak_bias": True, "min_z": 2.5,
         "min_rel": 0.03, "min_abs": 0.02, "k": 3, "m": 3}
    wiggle = [0.0, 0.02, -0.01, 0.015, -0.02, 0.005]

    def val(fall: float) -> Series:
        level = [0.58] * 12 + [0.58 - fall * min(1.0, i / 6) for i in range(1, 21)]
        return _series([v + wiggle[i % 6] for i, v in enumerate(level)], base, "val_reward")

    assert drop(val(0.058), p) is not None
    assert drop(val(0.054), p) is None
    assert drop(val(0.0), p) is None


def test_jump_with_accel_ignores_kl_growing_from_zero() -> None:
    # KL to the reference from 0 (step 0: the policy is the reference) up to a level of 0.15:
    # x18 over 6 blocks early on, but each lag's ratio smaller than the one before. A KL that
    # sat at 0.01 and jumps to 0.2 speeds up: an explosion either way.
    jump = DETECTORS["jump"]
    p = {"lag": 6, "min_ratio": 5.0, "k": 3, "m": 4, "min_level": 0.05, "accel": 2.0}
    ramp = [0.001, 0.003, 0.008, 0.015, 0.025, 0.04, 0.06, 0.08, 0.095, 0.11]
    assert jump(_series(ramp, CALM), {**p, "accel": 0}) is not None  # the old reading
    assert jump(_series(ramp, CALM), p) is None
    boom = [0.01] * 12 + [0.2, 0.22, 0.21, 0.2]
    assert jump(_series(boom, CALM), p) is not None


def test_shift_hinge_onset_dates_a_slide_from_where_it_began() -> None:
    # Entropy level at 1.0 for 12 blocks, then a straight slide of 0.06 a block (gradual) or a
    # drop within one block (sudden): the thresholds are crossed late on the slide, early on
    # the drop; the hinge fit dates both at their first block (12), a fraction of the way
    # (onset_frac 0.5) dates the slide several blocks late.
    from advisor.detectors import _hinge

    shift = DETECTORS["shift"]
    calm = Baseline(median=1.0, scale=0.02, start=1.0, sd=0.02, n_blocks=6, end_step=60)
    slide = [1.0] * 12 + [1.0 - 0.06 * i for i in range(1, 15)]
    drop = [1.0] * 12 + [0.1] * 6
    p = {"direction": "down", "min_z": 4, "min_ratio": 0.3, "k": 3, "m": 4}
    ev = shift(_series(slide, calm), {**p, "onset": "hinge"})
    assert ev is not None and ev.window[0] == 1 + 12 * 10  # block 12 starts at step 121
    ev = shift(_series(drop, calm), {**p, "onset": "hinge"})
    assert ev is not None and ev.window[0] in (1 + 11 * 10, 1 + 12 * 10)  # a block at most
    late = shift(_series(slide, calm), {**p, "onset_frac": 0.5})
    assert late is not None and late.window[0] > 1 + 14 * 10
    assert _hinge(np.array([1.0, 1.0, 1.0]), 2) == 2  # too few blocks to fit: the crossing


def test_volatility_leave_out_is_not_carried_by_wild_steps() -> None:
    # Two wild steps two blocks apart touch five overlapping spans: k=5 of 6 passes on them
    # alone. Leaving each span's wildest block out, no span is wide: no oscillation. A swing in
    # every block stays wide whichever block is left out.
    vol = DETECTORS["volatility"]
    p = {"min_ratio": 2.5, "k": 5, "m": 6, "slow_ratio": 1e6}
    calm = Baseline(median=0.5, scale=0.01, start=0.5, sd=0.01, n_blocks=6, end_step=60)
    quiet = [[0.5, 0.51, 0.49, 0.5, 0.5]] * 6
    wild = [0.5, 0.51, 0.9, 0.5, 0.49]
    glitches = [*quiet, wild, quiet[0], wild, quiet[0], quiet[0]]
    assert vol(_raw_series(glitches, calm), p) is not None  # the plain spans
    assert vol(_raw_series(glitches, calm), {**p, "leave_out": True}) is None
    swing = [[0.5, 0.6, 0.4, 0.6, 0.4]] * 6
    assert vol(_raw_series([*quiet, *swing], calm), {**p, "leave_out": True}) is not None


def test_steady_counts_only_blocks_past_the_warm_up() -> None:
    """Blocks of 10 steps, warm-up to step 60 (6 blocks): KL at its warm-up level one block past
    it is no evidence yet (a warm-up block is steady against itself); three blocks past it are,
    with the onset where the level entered the band (the first block)."""
    base = Baseline(median=0.01, scale=0.001, start=0.01, sd=0.001, n_blocks=6, end_step=60)
    steady = DETECTORS["steady"]
    params = {"max_ratio": 1.5, "k": 3, "m": 4}
    assert steady(_series([0.01] * 7, base), params) is None
    ev = steady(_series([0.01] * 9, base), params)
    assert ev is not None and ev.window[0] == 1
    assert steady(_series([0.01] * 6 + [0.01, 0.03, 0.04], base), params) is None  # it grew


def test_jump_on_a_young_run_compares_growth_per_block() -> None:
    """KL ramping up from ~0 after a short warm-up (x11 over the 6-block lag, but x1.7 in the one
    block before it: slowing down) is no acceleration, not even as a strong block; KL that
    multiplies x3 per block has sped up since that block and is."""
    params = {"lag": 6, "min_ratio": 5.0, "k": 3, "m": 4, "min_level": 0.05, "strong": 2,
              "accel": 2.0}
    ramp = [0.002, 0.0124, 0.032, 0.059, 0.080, 0.112, 0.136, 0.137]
    base = Baseline(median=0.045, scale=0.01, start=0.007, sd=0.01, n_blocks=6, end_step=60)
    assert DETECTORS["jump"](_series(ramp, base), params) is None
    boom = [0.002, 0.0024, 0.003, 0.004, 0.005, 0.006, 0.02, 0.06, 0.18]
    assert DETECTORS["jump"](_series(boom, base), params) is not None


def test_trimmed_jump_needs_more_than_one_spike_a_block() -> None:
    # KL 0.02 at every step of 5-step blocks; from block 12 on, one step in each block reads
    # x25 (a single-prompt TRL step, as in the public unsloth run): each block mean reads x5.8
    # and made P3. Without each block's highest point the level never moved; a KL whose every
    # step rose x10 still jumps.
    jump = DETECTORS["jump"]
    p = {"lag": 6, "min_ratio": 5.0, "k": 3, "m": 4, "min_level": 0.05, "trimmed": True}
    calm = [[0.02, 0.021, 0.019, 0.02, 0.02] for _ in range(12)]
    spiky = calm + [[0.02, 0.5, 0.019, 0.021, 0.02] for _ in range(4)]
    boom = calm + [[0.2, 0.21, 0.19, 0.2, 0.22] for _ in range(4)]
    assert jump(_raw_series(spiky, CALM), {**p, "trimmed": False}) is not None  # the old reading
    assert jump(_raw_series(spiky, CALM), p) is None
    assert jump(_raw_series(boom, CALM), p) is not None


def test_rose_waits_for_enough_evaluations_when_asked() -> None:
    rose = DETECTORS["rose"]
    p = {"min_sigmas": 4.0, "last": 3, "min_points": 6}
    few = _series([0.33, 0.37, 0.37, 0.42, 0.42], Baseline(0.33, 0.05, 0.33, 0.01, 3, 30))
    assert rose(few, p) is None  # not judged: "not rose" holds
    ev = rose(few, {**p, "wait": True})  # waits: "not rose" does not hold yet
    assert ev is not None and ev.statistic["points"] == 5


# ------------------------------------------------------ judged from the first block, no baseline
def _pts_series(points: list[list[float]], metric: str = "m", run_end: int | None = None) -> Series:
    """A Series without a baseline (inside the warm-up), from raw points per block."""
    arr = _blocks(points)
    arr[:, 8] = [float(np.std(p)) for p in points]  # the within-block sd the engine keeps
    peak = int(np.nanargmax(arr[:, 2]))
    return Series(
        metric=metric, raw=arr, baseline=None, peak=float(arr[peak, 2]),
        peak_step=int(arr[peak, 1]), peak3=None, peak3_step=None, trough=None,
        trough_step=None, blocks_total=len(points), first=float(arr[0, 2]),
        first_range=(float(arr[0, 3]), float(arr[0, 4])), run_end=run_end,
    )


def test_collapse_is_against_the_run_best_not_a_baseline() -> None:
    rng = np.random.default_rng(0)
    up = [list(0.85 + 0.08 * rng.standard_normal(5)) for _ in range(2)]
    down = [[0.0, 0.02, 0.0, 0.0, 0.01] for _ in range(4)]
    ev = DETECTORS["collapse"](_pts_series(up + down), {"max_frac": 0.3, "min_noise": 4})
    assert ev is not None and ev.statistic["ratio"] < 0.05
    assert ev.window[0] == 21  # the first block after the best


def test_collapse_ignores_a_reward_wandering_near_zero() -> None:
    # A slow starter: 0.02 +- 0.03 with a best block of ~0.05; "x0.2 of its best" is noise.
    rng = np.random.default_rng(1)
    pts = [list(np.clip(0.02 + 0.03 * rng.standard_normal(5), 0, 1)) for _ in range(8)]
    pts[1] = [0.05, 0.09, 0.0, 0.08, 0.03]
    assert DETECTORS["collapse"](_pts_series(pts), {"max_frac": 0.3, "min_noise": 4}) is None


def test_collapse_is_not_judged_on_a_signed_reward() -> None:
    pts = [[1.0, 1.2, 0.8], [1.1, 0.9, 1.0], [-0.5, 0.1, 0.0], [0.0, -0.1, 0.1], [0.0, 0.1, -0.1]]
    assert DETECTORS["collapse"](_pts_series(pts), {"max_frac": 0.3}) is None


def test_from_start_needs_ratio_and_absolute_change() -> None:
    fs = DETECTORS["from_start"]
    blow = _pts_series([[0.2] * 3, [0.3] * 3, [4.0] * 3, [6.0] * 3, [7.0] * 3])
    assert fs(blow, {"direction": "up", "min_ratio": 3, "min_abs": 0.5}) is not None
    tiny = _pts_series([[0.01] * 3, [0.02] * 3, [0.05] * 3, [0.06] * 3, [0.07] * 3])
    assert fs(tiny, {"direction": "up", "min_ratio": 3, "min_abs": 0.5}) is None


def test_held_is_a_level_still_at_its_start_once_the_run_had_time() -> None:
    held = DETECTORS["held"]
    p = {"max_move": 0.02, "min_level": 0.01, "min_steps": 100}
    flat = _pts_series([[2.50 + 0.004 * (i % 3)] * 3 for i in range(12)])  # 120 steps, < 1 %
    got = held(flat, p)
    assert got is not None and got.detector == "held"
    # the same level seen over fewer steps than min_steps: not yet judged
    assert held(_pts_series([[2.5] * 3 for _ in range(8)]), p) is None
    # entropy easing 4 % (a slow healthy run) moved: not held, either way
    eased = _pts_series([[2.5 * (1 - 0.004 * i)] * 3 for i in range(12)])
    assert held(eased, p) is None
    risen = _pts_series([[2.5 * (1 + 0.004 * i)] * 3 for i in range(12)])
    assert held(risen, p) is None
    # a level under min_level at the start is not judged (0.005 nats: already collapsed)
    assert held(_pts_series([[0.005] * 3 for _ in range(12)]), p) is None
    # one latest block back at the start after a move is not held (k of m)
    back = _pts_series([[2.5] * 3] + [[2.3] * 3] * 9 + [[2.5] * 3] * 2)
    assert held(back, p) is None


def test_held_also_high_sees_a_policy_thrown_off_and_back() -> None:
    """Entropy broken inside the first block (2.5 -> 1.1) and back at 2.49 from then on: its
    first block's mean (1.6) is no start to measure from, its highest point (2.5) is."""
    held = DETECTORS["held"]
    p = {"max_move": 0.02, "min_level": 0.01, "min_steps": 100}
    thrown = _pts_series([[2.5, 1.2, 1.1]] + [[2.49] * 3 for _ in range(11)])
    assert held(thrown, p) is None
    got = held(thrown, {**p, "also_high": True})
    assert got is not None and "highest point of its first logged block 2.5" in got.summary
    # a run that learnt (entropy 2.5 -> 2.2) is not held against either reference
    learnt = _pts_series([[2.5, 2.45, 2.4]] + [[2.2] * 3 for _ in range(11)])
    assert held(learnt, {**p, "also_high": True}) is None


def test_constant_needs_every_point_equal() -> None:
    c = DETECTORS["constant"]
    assert c(_pts_series([[0.0, 0.0], [0.0]]), {"min_points": 3}) is not None
    assert c(_pts_series([[0.0, 0.0], [0.0, 0.001]]), {"min_points": 3}) is None
    assert c(_pts_series([[0.0], [0.0]]), {"min_points": 3}) is None


def test_growth_tells_steady_multiplication_from_levelling_off() -> None:
    g = DETECTORS["growth"]
    p = {"window": 12, "min_blocks": 12, "min_ratio": 8.0, "min_late": 0.6, "min_level": 0.05,
         "k": 3}
    steady = [[0.005 * 1.35**i] * 3 for i in range(16)]  # x1.35 a block: an exponential
    assert g(_pts_series(steady), p) is not None
    # a healthy KL from ~0: linear growth, then levelling off (x8 and more over the window)
    linear = [[0.002 + 0.01 * i] * 3 for i in range(16)]
    saturating = [[0.06 * (1 - math.exp(-i / 3)) + 1e-4] * 3 for i in range(16)]
    assert g(_pts_series(linear), p) is None and g(_pts_series(saturating), p) is None
    low = [[1e-5 * 1.35**i] * 3 for i in range(16)]  # steady, but still far below the level
    assert g(_pts_series(low), p) is None


def test_stopped_needs_the_run_to_go_on() -> None:
    s = DETECTORS["stopped"]
    p = {"min_blocks": 2, "min_frac": 0.1, "min_points": 3}
    pts = [[0.5] * 5 for _ in range(6)]  # blocks of 10 steps: steps 1-60
    assert s(_pts_series(pts, run_end=60), p) is None
    assert s(_pts_series(pts, run_end=70), p) is None  # one block: TRL's sparse logging
    ev = s(_pts_series(pts, run_end=100), p)
    assert ev is not None and ev.statistic["last_logged_step"] == 60 and ev.window == (61, 100)
