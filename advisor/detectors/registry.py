"""The detector registry: DETECTORS and SCREENS by name, the traits the engine reads by name,
and the Column a screen tests."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.detectors.series import Baseline, Series
from advisor.types import Evidence

Params = Mapping[str, Any]
Detector = Callable[["Series", Params], Evidence | None]
# Detectors that read a metric's level at its companion's (`per`) best 3-block mean: the
# engine keeps that level when the best is set (Series.peak3_ctx of the companion).
AT_COMPANION_PEAK = frozenset({"shared_fall"})

DETECTORS: dict[str, Detector] = {}
# Detectors that read `Series.run_end` (the run's last step, which moves on while the metric
# is not logged): the engine reuses a detector's last result while its metrics' block
# history is unchanged, except for these (tests/engine/test_same_judgement.py checks the set).
READS_RUN_END = frozenset({"stopped"})
# Detectors that read `Series.wander` or `Series.span_wander` (the run's long-run wander): the
# engine keeps those chunks only for the metrics such a leaf judges (tests/engine/
# test_same_judgement.py checks the set).
READS_WANDER = frozenset({"volatility"})
# Detectors that leave their evidence's summary empty when the params hold `_brief` (every
# other field as without it): the engine asks so for an active finding's refresh, and builds
# the summary only of the evidence the finding keeps (Monitor.push_columns).
BRIEF = frozenset({"shift", "above", "below"})

# Metrics that are the share of logged steps where something held (the engine derives them,
# advisor.engine.DERIVED): what held, for the evidence sentence.
SHARES: dict[str, str] = {"grad_zero": "had a gradient of exactly 0"}


def detector(name: str) -> Callable[[Detector], Detector]:
    """Register a detector under `name` (the rulebook refers to it by that name)."""

    def wrap(fn: Detector) -> Detector:
        if name in DETECTORS:
            raise ValueError(f"detector {name!r} registered twice")
        DETECTORS[name] = fn
        return fn

    return wrap


# ----------------------------------------------------------------------------- screens
# A screen answers, for a whole column of block records at once, where a detector might fire:
# `screen(c, p)[i]` is False only where the detector surely returns None on the Series whose
# window is c.rows[max(0, i - c.window + 1) : i + 1] (for rows from c.new on), with the
# leaf's parameters `p` (companions not given). Each repeats the detector's first gates,
# vectorised: the same operations in the same order where the gate compares exact values, a
# bound with a margin far beyond rounding where it does not. The engine's offline path
# (Monitor.push_columns) calls a detector only where its screen passes; the same-judgement
# test (tests/engine/test_same_judgement.py) audits every call a screen skips. A detector in
# READS_RUN_END is screened only where its metric was logged in the run's latest block.


@dataclass(frozen=True, slots=True)
class Column:
    """One metric's block records as a screen reads them."""

    rows: np.ndarray  # the records, oldest first: the window's rows, then the new ones
    window: int  # the Series window's length (blocks)
    baseline: Baseline | None  # None before the warm-up ended
    peak: float | None  # the run-wide highest block mean before rows[new] (Series.peak)
    new: int  # the first row made by this call (rows before: the window's past)
    ask: int = 0  # the first row whose verdict is asked (rows before may be left True)
    companions: bool = False  # the leaf divides the metric by its companions (per, rounds)
    offset: int = 0  # blocks of the metric closed before rows[0] (Series.blocks_total - rows)
    # the run-wide best 3-block mean before rows[new] (Series.peak3), and the means of the
    # counted blocks before rows[new] that a 3-block mean ending in the new rows takes in
    peak3: float | None = None
    last3: tuple[float, ...] = ()
    # the metric's first logged block: its mean, lowest and highest point (Series.first and
    # first_range; nan before it was logged)
    first: tuple[float, float, float] = (math.nan, math.nan, math.nan)


Screen = Callable[[Column, Params], np.ndarray]
SCREENS: dict[str, Screen] = {}
# The screens that do not read Column.baseline: their verdicts stand when a baseline is set
# (tests/engine/test_same_judgement.py checks the set).
BASELESS = frozenset({"nonfinite", "above", "below", "jump", "swing", "collapse", "constant",
                      "near_zero", "growth", "stopped", "peak_below", "from_start",
                      "high_from_start", "wasted"})  # fmt: skip


def screen(name: str) -> Callable[[Screen], Screen]:
    """Register the screen of detector `name`."""

    def wrap(fn: Screen) -> Screen:
        if name not in DETECTORS or name in SCREENS:
            raise ValueError(f"screen {name!r}: no such detector, or registered twice")
        SCREENS[name] = fn
        return fn

    return wrap
