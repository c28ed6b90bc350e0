"""The detector registry: each detector's Registration by name (its function, its screen and
its traits), and the Column a screen tests."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from advisor.detectors.series import Baseline, Series
from advisor.types import Evidence

Params = Mapping[str, Any]
Detector = Callable[["Series", Params], Evidence | None]

# Metrics that are the share of logged steps where something held (the engine derives them,
# advisor.engine.DERIVED): what held, for the evidence sentence.
SHARES: dict[str, str] = {"grad_zero": "had a gradient of exactly 0"}


# ----------------------------------------------------------------------------- screens
# A screen answers, for a whole column of block records at once, where a detector might fire:
# `screen(c, p)[i]` is False only where the detector surely returns None on the Series whose
# window is c.rows[max(0, i - c.window + 1) : i + 1] (for rows from c.new on), with the
# leaf's parameters `p` (companions not given). Each repeats the detector's first gates,
# vectorised: the same operations in the same order where the gate compares exact values, a
# bound with a margin far beyond rounding where it does not. The engine's offline path
# (Monitor.push_columns) calls a detector only where its screen passes; the same-judgement
# test (tests/engine/test_same_judgement.py) audits every call a screen skips. A detector
# with `reads_run_end` is screened only where its metric was logged in the run's latest block.


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


# ----------------------------------------------------------------------------- registrations
@dataclass(frozen=True, slots=True)
class Registration:
    """A detector as the rulebook names it and the engine runs it: its function, its screen
    (declared beside it, `@screen`) and the traits the engine relies on. Each trait is audited
    against the code by a test (tests/engine/test_same_judgement.py, test_paramspec.py)."""

    name: str
    fn: Detector
    screen: Screen | None = None
    # the screen reads no Column.baseline: its verdicts stand when a baseline is set
    baseless: bool = False
    # reads `Series.run_end` (the run's last step, which moves on while the metric is not
    # logged): the engine reuses a detector's last result while its metrics' block history is
    # unchanged, except for these; screened only where its metric was logged in the run's
    # latest block
    reads_run_end: bool = False
    # reads `Series.wander` or `Series.span_wander` (the run's long-run wander): the engine
    # keeps those chunks only for the metrics such a leaf judges
    reads_wander: bool = False
    # leaves its evidence's summary empty when the params hold `_brief` (every other field as
    # without it): the engine asks so for an active finding's refresh, and builds the summary
    # only of the evidence the finding keeps (Monitor.push_columns)
    brief: bool = False
    # reads a metric's level at its companion's (`per`) best 3-block mean: the engine keeps
    # that level when the best is set (Series.peak3_ctx of the companion)
    at_companion_peak: bool = False


REGISTRY: dict[str, Registration] = {}
# name -> the detector's function (REGISTRY's `fn`): what the rulebook's leaves may name
DETECTORS: dict[str, Detector] = {}


def detector(
    name: str,
    *,
    reads_run_end: bool = False,
    reads_wander: bool = False,
    brief: bool = False,
    at_companion_peak: bool = False,
) -> Callable[[Detector], Detector]:
    """Register a detector under `name` (the rulebook refers to it by that name), with its
    traits (see Registration)."""

    def wrap(fn: Detector) -> Detector:
        if name in REGISTRY:
            raise ValueError(f"detector {name!r} registered twice")
        REGISTRY[name] = Registration(
            name,
            fn,
            reads_run_end=reads_run_end,
            reads_wander=reads_wander,
            brief=brief,
            at_companion_peak=at_companion_peak,
        )
        DETECTORS[name] = fn
        return fn

    return wrap


def screen(name: str, *, baseless: bool = False) -> Callable[[Screen], Screen]:
    """Register the screen of detector `name`, declared beside it: a field of its
    registration. `baseless`: the screen reads no Column.baseline."""

    def wrap(fn: Screen) -> Screen:
        reg = REGISTRY.get(name)
        if reg is None or reg.screen is not None:
            raise ValueError(f"screen {name!r}: no such detector, or registered twice")
        REGISTRY[name] = replace(reg, screen=fn, baseless=baseless)
        return fn

    return wrap
