"""P6's validation noise scale on short series: a bend and a fall fill the second differences,
the spread around a rise-then-fall fit is blind to both (advisor.detectors._window_scale)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from advisor.detectors import (
    DETECTORS,
    Baseline,
    Series,
    _isotonic_prefixes,
    _unimodal_sd,
    _window_scale,
)


def _val(points: list[float]) -> Series:
    """One validation point per block (blocks without an evaluation are not kept)."""
    rows = []
    for i, m in enumerate(points):
        start = 1 + i * 50
        rows.append((start, start + 24, m, m, m, 1, 0, -1, math.nan, m, m * m, 0, 0, 0))
    base = Baseline(median=points[0], scale=0.01, start=points[0], sd=0.01, n_blocks=3,
                    end_step=150)
    return Series(metric="val_reward", raw=np.asarray(rows, float), baseline=base,
                  peak=max(points), peak_step=None, peak3=None, peak3_step=None, trough=None,
                  trough_step=None, blocks_total=len(points))


def _brute_unimodal(x: list[float]) -> tuple[float, int]:
    """Least residual sum of squares of a rise-then-fall fit, by enumerating every split into
    consecutive level sets with a nondecreasing-then-nonincreasing sequence of means."""
    n, best = len(x), (math.inf, 0)
    for cuts in itertools.product((0, 1), repeat=n - 1):
        sets, cur = [], [x[0]]
        for v, c in zip(x[1:], cuts, strict=True):
            if c:
                sets.append(cur)
                cur = []
            cur.append(v)
        sets.append(cur)
        means = [sum(g) / len(g) for g in sets]
        top = means.index(max(means))
        if any(means[i] > means[i + 1] for i in range(top)):
            continue
        if any(means[i] < means[i + 1] for i in range(top, len(means) - 1)):
            continue
        rss = sum((v - m) ** 2 for g, m in zip(sets, means, strict=True) for v in g)
        if rss < best[0] - 1e-12:
            best = (rss, len(sets))
    return best


def test_isotonic_prefixes_pool_adjacent_violators() -> None:
    rss, k = _isotonic_prefixes([1.0, 3.0, 2.0, 4.0, 0.0])
    # prefix fits: [1] | [1,3] | [1,2.5,2.5] | [1,2.5,2.5,4] | [1,2.25,2.25,2.25,2.25]
    assert k == [1, 2, 2, 3, 2]
    last = sum((v - 2.25) ** 2 for v in (3.0, 2.0, 4.0, 0.0))
    assert np.allclose(rss, [0.0, 0.0, 0.5, 0.5, last])


def test_unimodal_fit_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    for _ in range(40):
        x = (np.cumsum(rng.normal(0, 1, 9)) + rng.normal(0, 1, 9)).tolist()
        rss, k = _brute_unimodal(x)
        got = _unimodal_sd(x)
        want = math.sqrt(rss / (9 - k)) if 9 - k >= 3 else math.inf
        assert math.isclose(got, want, rel_tol=1e-9) or got == want == math.inf


NOISE = 0.012
# Ten evaluations: a learning curve bending into a plateau, then a 0.16 step down and flat
# (13 noise sigmas), the shape of the short runs P6 missed.
STEP = [0.25, 0.36, 0.39, 0.40, 0.40, 0.30, 0.24, 0.24, 0.24, 0.24]


def _noisy(shape: list[float], seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return [v + e for v, e in zip(shape, rng.normal(0, NOISE, len(shape)), strict=True)]


def test_a_bend_and_a_step_inflate_the_differences_not_the_fit() -> None:
    diff, fit = [], []
    for seed in range(40):
        x = _noisy(STEP, seed)
        d2 = np.diff(x, n=2)
        diff.append(math.sqrt(float(np.mean(d2 * d2)) / 6.0) / NOISE)
        fit.append(_unimodal_sd(x) / NOISE)
    usable = np.isfinite(fit)
    assert float(np.median(diff)) > 1.8  # the bend and the step fill the differences
    assert usable.sum() >= 15  # the fit leaves 3 residual degrees in about half of them
    assert 0.7 < float(np.median(np.asarray(fit)[usable])) < 1.2


P1 = {"scale": "window", "smooth": 3, "onset": "peak", "peak_bias": True, "min_z": 2.5,
      "min_rel": 0.03, "min_abs": 0.02, "k": 3, "m": 3}
P5 = {**P1, "min_z": 5.0, "bias_run": True}
PT = {"scale": "window", "direction": "down", "window": "after_peak", "min_blocks": 4,
      "max_p": 0.1, "min_effect": 2.0}


def _p6_leaves(s: Series) -> bool:
    """P6's validation leaves (rulebook/symptoms.yaml): a drop held, and a trend or a large one."""
    drop, trend = DETECTORS["drop_from_peak"], DETECTORS["trend"]
    return bool(drop(s, P1) and (trend(s, PT) or drop(s, P5)))


def test_a_short_fall_is_found_a_noisy_plateau_is_not() -> None:
    # Against the differences, a quarter of these falls were found (10 of 40); against the
    # fit's spread where the differences exceed it beyond chance, half (20 of 40).
    assert sum(_p6_leaves(_val(_noisy(STEP, seed))) for seed in range(40)) >= 16
    # The same rise into a plateau as noisy, with no fall: nothing is found.
    rng = np.random.default_rng(5)
    for _ in range(60):
        n = int(rng.integers(9, 25))
        t = np.arange(n, dtype=float)
        x = (0.25 + 0.15 * (1 - np.exp(-t / 1.5)) + rng.normal(0, NOISE, n)).tolist()
        assert not _p6_leaves(_val(x))


def test_pure_noise_keeps_the_difference_estimate() -> None:
    # With no shape in the series, the differences exceed the fit's spread by more than
    # _diff_excess_95 in about 5 % of series only: the scale stays the differences' there.
    rng = np.random.default_rng(8)
    switched = 0
    for _ in range(400):
        x = (0.4 + rng.normal(0, 0.01, 16)).tolist()
        d2 = np.diff(x, n=2)
        diff_sd = max(1.4826 * float(np.median(np.abs(d2))), math.sqrt(float(np.mean(d2 * d2))))
        switched += _window_scale(_val(x)) < diff_sd / math.sqrt(6.0) - 1e-12
    assert 0 < switched <= 400 * 0.08
