"""The screens of no_rise, peak_below, steady, plateau, drop_from_peak and held against their
detectors, window by window: on random columns of block records (rising, falling, flat,
noisy, with NaN blocks and blocks of no finite value), wherever a screen says False the
detector returns None on the Series the engine would hand it at that row (its window, the
run-wide peak and best 3-block mean kept as the engine keeps them, blocks_total). Each
detector also fires at some rows and is screened out at others, with every parameter set
below, so no gate goes untested. test_same_judgement audits the same on every fixture,
through the engine."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from advisor import detectors as d

WINDOW = 32


def _rows(rng: np.random.Generator, n: int, shape: str) -> np.ndarray:
    t = np.arange(n, dtype=float)
    level = {
        "flat": np.full(n, 0.3),
        "rise": 0.2 + 0.5 * (1 - np.exp(-t / rng.uniform(5, 30))),
        "fall": 0.7 - 0.4 * np.clip((t - rng.uniform(5, 30)) / 10, 0, 1),
        "peak": 0.3 + 0.4 * np.exp(-(((t - rng.uniform(5, 35)) / 8) ** 2)),
        "tiny": np.full(n, rng.choice([1e-7, 2e-6])),
    }[shape]
    noise = float(rng.choice([0.0, 0.003, 0.02, 0.06]))
    mean = level + rng.normal(0, noise, n) * (level if shape == "tiny" else 1.0)
    rows = np.zeros((n, d.RECORD_WIDTH))
    rows[:, d.START] = 1 + 10 * t
    rows[:, d.END] = 10 + 10 * t
    rows[:, d.MEAN] = mean
    rows[:, d.LO] = mean - abs(noise)
    rows[:, d.HI] = mean + abs(noise)
    rows[:, d.COUNT] = 10
    if rng.random() < 0.3:
        rows[rng.integers(0, n, 2), d.MEAN] = np.nan  # no finite value...
        rows[np.isnan(rows[:, d.MEAN]), d.COUNT] = 0  # ...only NaNs in those blocks
        rows[rows[:, d.COUNT] == 0, d.NONFINITE] = 10
    return rows


def _baseline(rows: np.ndarray, rng: np.random.Generator) -> d.Baseline:
    x = rows[:6, d.MEAN]
    x = x[np.isfinite(x)]
    med = float(np.median(x)) if len(x) else 0.3
    scale = max(float(rng.choice([0.002, 0.01, 0.03])), 0.01 * abs(med))
    start = float(x[0]) if len(x) else med
    return d.Baseline(med, scale, start, scale, 6, 60, first=start - float(rng.choice([0, 0.01])))


def _running(rows: np.ndarray, upto: int, peak: float | None, peak3: float | None,
             last3: list[float]) -> tuple[Any, ...]:  # fmt: skip
    """The engine's peak and best 3-block mean (with their steps) after folding rows[:upto]
    on top of (peak, peak3, last3)."""
    peak_step = peak3_step = None
    trip = [(m, 0) for m in last3]
    for r in range(upto):
        if rows[r, d.COUNT] == 0:
            continue
        mean, end = float(rows[r, d.MEAN]), int(rows[r, d.END])
        if peak is None or mean > peak:
            peak, peak_step = mean, end
        trip = [*trip[-2:], (mean, end)]
        if len(trip) == 3:
            m3 = (trip[0][0] + trip[1][0] + trip[2][0]) / 3.0
            if peak3 is None or m3 > peak3:
                peak3, peak3_step = m3, trip[1][1]
    return peak, peak_step, peak3, peak3_step, [m for m, _ in trip[-2:]]


PARAMS: dict[str, list[dict[str, Any]]] = {
    "no_rise": [{"max_rise": 4.0}, {"max_rise": 0.5}],
    "peak_below": [{"value": 2.0e-7}, {"value": 0.5}],
    "steady": [{"max_ratio": 1.5, "k": 3, "m": 4}, {"max_ratio": 1.1, "k": 1, "m": 1}],
    "plateau": [
        {"window": 8, "max_p": 0.05, "max_effect": 3.0, "min_steps": 100},
        {"window": 8, "max_p": 0.01, "until_rise": True},
        {"window": 6, "max_effect": 1.0, "max_rise": 3.0, "min_blocks": 4},
        {"window": "peak", "min_steps": 200},
    ],
    "drop_from_peak": [
        {"scale": "window", "smooth": 3, "onset": "peak", "peak_bias": True, "bias_run": True,
         "min_z": 2.5, "min_rel": 0.03, "min_abs": 0.02, "k": 3, "m": 3},
        {"scale": "window", "smooth": 3, "peak_bias": True, "min_z": 5.0, "min_rel": 0.03,
         "min_abs": 0.02, "k": 3, "m": 3},
        {"min_z": 6, "min_rel": 0.3, "k": 2, "m": 3},
        {"min_z": 3, "min_rel": 0.2, "rel_to": "rise", "min_frac": 0.05, "strong": 2.0},
        {"smooth": 2, "min_z": 2.0, "k": 2, "m": 2},
    ],
}
CASES = [(name, i) for name, ps in PARAMS.items() for i in range(len(ps))]


def _window(rows: np.ndarray, r: int, offset: int, metric: str = "m", **refs: Any) -> d.Series:
    """The Series a detector judges at row r: the window's rows up to it, `offset` blocks of
    the run before the first row, and the run-wide references `refs` (none given: None)."""
    fields = dict.fromkeys(("baseline", "peak", "peak_step", "peak3", "peak3_step"))
    return d.Series(
        metric=metric,
        raw=rows[max(0, r + 1 - WINDOW) : r + 1],
        trough=None,
        trough_step=None,
        blocks_total=offset + r + 1,
        **{**fields, **refs},
    )


@pytest.mark.parametrize(("name", "case"), CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_screen_false_only_where_the_detector_returns_none(name: str, case: int) -> None:
    p = PARAMS[name][case]
    fn, screen = d.REGISTRY[name].fn, d.REGISTRY[name].screen
    assert screen is not None
    rng = np.random.default_rng(1000 * case + len(name))
    quiet = fired = 0
    for trial in range(120):
        n = int(rng.integers(8, 60))
        rows = _rows(rng, n, str(rng.choice(["flat", "rise", "fall", "peak", "tiny"])))
        b = _baseline(rows, rng)
        # the rows before `new` are the window's past: the run-wide references cover them
        new = int(rng.integers(0, min(n - 1, WINDOW) + 1))
        offset = int(rng.choice([0, 0, 40]))
        peak, _, peak3, _, last3 = _running(rows, new, None, None, [])
        if trial % 4 == 0 and peak is not None:  # a peak from before the window
            peak, peak3 = peak + 0.05, (peak3 or peak) + 0.04
            offset = max(offset, 1)
        col = d.Column(rows, WINDOW, b, peak, new, new, False, offset, peak3, tuple(last3))
        verdict = screen(col, p)
        for r in range(new, n):
            pk, pk_step, p3, p3_step, _ = _running(rows[new:], r + 1 - new, peak, peak3, last3)
            s = _window(rows, r, offset, baseline=b, peak=pk, peak_step=pk_step, peak3=p3,
                        peak3_step=p3_step, first=b.first)  # fmt: skip
            got = fn(s, p)
            if not verdict[r]:
                assert got is None, f"{name} {p}: screened out at row {r} where it fires"
                quiet += 1
            fired += got is not None
    assert quiet > 50 and fired > 5, f"{name} {p}: {quiet} rows screened out, {fired} fired"


def test_peak3s_is_the_engines_running_best() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(3, 40))
        rows = _rows(rng, n, str(rng.choice(["rise", "peak", "flat"])))
        new = int(rng.integers(0, n))
        peak, _, peak3, _, last3 = _running(rows, new, None, None, [])
        col = d.Column(rows, WINDOW, None, peak, new, new, False, 0, peak3, tuple(last3))
        got = d._peak3s(col)
        for r in range(new, n):
            want = _running(rows[new:], r + 1 - new, peak, peak3, last3)[2]
            assert got[r] == (-math.inf if want is None else want)


HELD = [
    {"max_move": 0.02, "min_level": 0.01, "min_steps": 100, "k": 8, "m": 8, "also_high": True},
    {"max_move": 0.05, "min_steps": 30, "k": 3, "m": 4},
    {"max_move": 0.01, "k": 1, "m": 1},
]


@pytest.mark.parametrize("case", range(len(HELD)))
def test_held_screen_false_only_where_held_returns_none(case: int) -> None:
    """held's screen (its latest block near the start, k of the last m near, a window of 2
    blocks or more spanning min_steps) against the detector, row by row, with the run's first
    block inside the window (the reference itself) or before it."""
    p = HELD[case]
    fn, screen = d.REGISTRY["held"].fn, d.REGISTRY["held"].screen
    assert screen is not None
    rng = np.random.default_rng(50 + case)
    quiet = fired = 0
    for _ in range(150):
        n = int(rng.integers(3, 60))
        rows = _rows(rng, n, str(rng.choice(["flat", "flat", "rise", "fall", "tiny"])))
        new = int(rng.integers(0, min(n - 1, WINDOW) + 1))
        offset = int(rng.choice([0, 0, 40]))
        if offset or not np.isfinite(rows[0, d.MEAN]):  # the first block: before the window
            level = 0.3 * float(rng.choice([1.0, 1.01, 1.1]))
            first = (level, level - 0.01, level + float(rng.choice([0.0, 0.01])))
        else:
            first = (float(rows[0, d.MEAN]), float(rows[0, d.LO]), float(rows[0, d.HI]))
        col = d.Column(rows, WINDOW, None, None, new, new, False, offset, first=first)
        verdict = screen(col, p)
        for r in range(new, n):
            s = _window(rows, r, offset, metric="entropy", first=first[0],
                        first_range=(first[1], first[2]))  # fmt: skip
            got = fn(s, p)
            if not verdict[r]:
                assert got is None, f"held {p}: screened out at row {r} where it fires"
                quiet += 1
            fired += got is not None
    assert quiet > 50 and fired > 5, f"held {p}: {quiet} rows screened out, {fired} fired"
