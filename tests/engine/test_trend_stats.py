"""The numpy Mann-Kendall / Theil-Sen of the trend detectors agree with scipy.stats."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from advisor.detectors import _trend_stats

# Block means: continuous values, and coarse ones that tie (3-decimal logs, saturated rewards).
_values = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
    st.integers(-3, 3).map(float),
)


def _reference(y: np.ndarray) -> tuple[float, float, float]:
    x = np.arange(len(y), dtype=float)
    tau, p = stats.kendalltau(x, y)
    return float(tau), float(p), float(stats.theilslopes(y, x)[0])


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.lists(_values, min_size=2, max_size=60))
def test_matches_scipy(values: list[float]) -> None:
    y = np.array(values)
    ours, ref = _trend_stats(y), _reference(y)
    assert all(_same(a, b) for a, b in zip(ours, ref, strict=True)), (ours, ref)


def test_exact_and_asymptotic_branches() -> None:
    rng = np.random.default_rng(7)
    for n in (3, 10, 33, 34, 80):  # exact up to 33 without ties, asymptotic beyond
        y = np.cumsum(rng.normal(size=n))
        ours, ref = _trend_stats(y), _reference(y)
        assert all(_same(a, b) for a, b in zip(ours, ref, strict=True)), (n, ours, ref)
    flat = np.ones(8)
    tau, p, slope = _trend_stats(flat)
    assert math.isnan(tau) and math.isnan(p) and slope == 0.0


_maybe_nan = st.one_of(_values, st.just(math.nan))


@settings(max_examples=300, deadline=None)
@given(st.lists(_maybe_nan, min_size=1, max_size=80), st.sampled_from([10.0, 25.0, 50.0, 90.0]))
def test_median_and_percentile_equal_numpys_exactly(xs: list[float], q: float) -> None:
    """The engine's own median / nanmedian / percentile (they avoid numpy's import of numpy.ma)
    give numpy's results bit for bit, NaN handling included."""
    from advisor.detectors import median, nanmedian, percentile

    a = np.asarray(xs)
    finite = a[~np.isnan(a)]
    with np.errstate(all="ignore"):
        assert _bits(median(a)) == _bits(float(np.median(a)))
        if finite.size:
            assert nanmedian(a) == float(np.nanmedian(a))
            assert percentile(finite, q) == float(np.percentile(finite, q))


def _bits(v: float) -> float | str:
    return "nan" if math.isnan(v) else v


_cell = st.one_of(
    _values, st.just(math.nan), st.just(math.inf), st.just(-math.inf), st.floats(-1e308, 1e308)
)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5).flatmap(lambda w: st.lists(st.lists(_cell, min_size=w, max_size=w),
                                                    min_size=1, max_size=6)))  # fmt: skip
def test_row_medians_equal_numpys_exactly(rows: list[list[float]]) -> None:
    """median_rows is np.median(axis=1) bit for bit (NaN and infinities included), without
    numpy's import of numpy.ma."""
    from advisor.detectors.series import median_rows

    a = np.asarray(rows)
    with np.errstate(all="ignore"):
        ours, ref = median_rows(a), np.median(a, axis=1)
    assert ours.dtype == ref.dtype and np.array_equal(ours, ref, equal_nan=True), (ours, ref)


@given(st.lists(st.integers(-5, 40), max_size=50))
def test_distinct_is_numpys_unique(xs: list[int]) -> None:
    from advisor.detectors.series import distinct

    a = np.asarray(xs, dtype=np.int64)
    ours, ref = distinct(a), np.unique(a)
    assert ours.dtype == ref.dtype and np.array_equal(ours, ref)
