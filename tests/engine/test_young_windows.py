"""The screens judged window by window (swing, growth) take a young run's windows, which grow
a block at a time and so each have a length of their own, at once: the answers equal the
window-by-window ones on every window."""

from __future__ import annotations

import numpy as np

from advisor import detectors as d


def _windows(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.integers(35, n, 20), rng.integers(12, 33, 20)


def test_swing_young_windows_equal_one_length_at_a_time() -> None:
    rng = np.random.default_rng(0)
    passing = 0
    for trial in range(200):
        n = 60
        rows = np.zeros((n, d.RECORD_WIDTH))
        t = np.arange(n)
        amp = float(rng.choice([0.0, 0.01, 0.05, 0.2]))
        rows[:, d.MEAN] = 0.5 + amp * np.sin(2 * np.pi * t / rng.uniform(6, 20))
        rows[:, d.MEAN] += rng.normal(0, 0.01, n)
        rows[:, d.COUNT] = rng.choice([3, 5, 10] if trial % 5 else [2, 5, 10], n)
        rows[:, d.SD] = np.abs(rng.normal(0.02, 0.01, n))
        if trial % 7 == 0:
            rows[rng.integers(0, n), d.MEAN] = np.nan
        p = {"min_ratio": 5.0, "min_rel": float(rng.choice([0.0, 0.1, 0.2]))}
        ends, ws = _windows(rng, n)
        young = d._swing_young(rows, ends, ws, p)
        pairs = zip(ends, ws, strict=True)
        one = [d._swing_may(rows, np.array([e]), int(w), p)[0] for e, w in pairs]
        assert young.tolist() == one
        passing += sum(one)
    assert passing > 500


def test_growth_young_windows_equal_one_length_at_a_time() -> None:
    rng = np.random.default_rng(1)
    passing = 0
    for trial in range(200):
        n = 60
        x = np.exp(rng.normal(0, 1.5, n)) * (np.arange(n) + 1) ** rng.uniform(0, 2)
        if trial % 5 == 0:
            x[rng.integers(0, n)] = np.nan
        p = {"min_ratio": float(rng.choice([2.0, 8.0]))}
        ends, ws = _windows(rng, n)
        young = d._growth_young(x, ends, ws, p)
        pairs = zip(ends, ws, strict=True)
        one = [d._growth_may(x, np.array([e]), int(w), p)[0] for e, w in pairs]
        assert young.tolist() == one
        passing += sum(one)
    assert passing > 500
