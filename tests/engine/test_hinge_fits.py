"""The shift detector's hinge onset solved in closed form for every break at once gives the
break numpy's least squares gives, fitted break by break (_hinge_lstsq): the same block on
every series, or numpy decides."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from advisor.detectors.level import _hinge, _hinge_fits, _hinge_lstsq


def _by_lstsq(y: np.ndarray, cross: int, back: int = 16, after: int = 2) -> int:
    """_hinge with every break fitted by numpy's least squares."""
    lo, hi = max(0, cross - back), min(len(y), cross + after + 1)
    t = np.arange(lo, hi, dtype=float)
    v = y[lo:hi]
    ok = np.isfinite(v)
    t, v = t[ok], v[ok]
    if len(v) < 4:
        return cross
    return min(_hinge_lstsq(t, v, lo, cross) + 1, cross)


# Block means as curves show them: levels, slides, drops, noise, coarse logs that tie,
# values far from 0 with a small spread, gaps (NaN), and exact lines (a fit with no residual).
_value = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
    st.integers(-2, 2).map(float),
    st.just(float("nan")),
)


@st.composite
def _curve(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    n = draw(st.integers(1, 40))
    kind = draw(st.sampled_from(["free", "slide", "drop", "line", "offset"]))
    if kind == "free":
        y = np.array(draw(st.lists(_value, min_size=n, max_size=n)))
    else:
        at = draw(st.integers(0, n))
        level = draw(st.floats(-10, 10, allow_nan=False))
        slope = draw(st.floats(-1, 1, allow_nan=False))
        i = np.arange(n, dtype=float)
        if kind == "slide":
            y = level + slope * np.maximum(0.0, i - at)
        elif kind == "drop":
            y = np.where(i < at, level, level - abs(slope) - 0.1)
        elif kind == "line":
            y = level + slope * i
        else:
            y = 1e4 + 1e-3 * np.sin(i) + 1e-3 * (i >= at)
        noise = draw(st.sampled_from([0.0, 1e-9, 1e-3, 0.1]))
        seed = draw(st.integers(0, 2**16))
        y = y + noise * np.random.default_rng(seed).standard_normal(n)
    cross = draw(st.integers(0, n - 1))
    return y, cross


@settings(max_examples=600, deadline=None)
@given(_curve())
def test_hinge_breaks_as_least_squares_finds_them(curve: tuple[np.ndarray, int]) -> None:
    y, cross = curve
    assert _hinge(y, cross) == _by_lstsq(y, cross)


def test_hinge_fits_leave_near_ties_to_least_squares() -> None:
    # a constant level: every break fits it exactly, the closed form cannot tell them apart
    t = np.arange(10, dtype=float)
    assert _hinge_fits(t, np.full(10, 0.5), np.arange(0, 8, dtype=float)) is None
    # a clear break at 5 (level, then a slope of -0.1 a block): found in closed form
    v = np.where(t <= 5, 1.0, 1.0 - 0.1 * (t - 5))
    assert _hinge_fits(t, v, np.arange(0, 8, dtype=float)) == 5
    # values near float max: no sum of squares to compare
    assert _hinge_fits(t, 1e300 * (1 + t), np.arange(0, 8, dtype=float)) is None
    assert _hinge(np.full(12, 1e300), 10) == _by_lstsq(np.full(12, 1e300), 10)


@settings(max_examples=300, deadline=None)
@given(_curve(), st.lists(_value, min_size=1, max_size=30))
@example((np.r_[np.ones(20), 1.0 - 0.05 * np.arange(1, 11)], 25), [0.0, 1.0])
def test_the_same_means_give_the_same_break_wherever_the_window_starts(
    curve: tuple[np.ndarray, int], before: list[float]
) -> None:
    """Blocks before the window change nothing: the break is found on the means it holds (so
    an active finding's evidence, its window one block further on at each block, reuses it)."""
    y, cross = curve
    longer = np.r_[np.array(before), y]
    got = _hinge(longer, cross + len(before))
    if cross >= 16:  # the window (16 blocks back from the crossing) holds the same means
        assert got - len(before) == _hinge(y, cross) == _by_lstsq(y, cross)
    assert got == _by_lstsq(longer, cross + len(before))


def test_a_window_met_again_is_not_fitted_again() -> None:
    from advisor.detectors.level import _hinge_in

    y = np.r_[np.ones(20), 1.0 - 0.05 * np.arange(1, 11)]
    _hinge_in.cache_clear()
    first = _hinge(y, 25)
    assert _hinge(np.r_[np.ones(7), y], 32) == first + 7
    assert _hinge_in.cache_info().hits == 1
