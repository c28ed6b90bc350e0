"""Detectors: small pure functions over one metric's block statistics, registered by name.

The engine (`advisor.engine.Monitor`) never keeps a run's raw history. Each metric's values are
folded into *blocks* of a fixed number of steps (sum, count, non-finite count, min, max and the
sums a least-squares line needs); a block's mean is what most detectors test, because a single
RL step is mostly noise (knowledge.md "How to judge": 50 steps show no trend). A detector sees a
`Series`: the last M block records of one metric (bounded), the metric's warm-up `Baseline`
and its run-wide peaks. It returns an `advisor.types.Evidence` (window, statistic with the
numbers, effect size, a sentence a person can check against the curve) or None. Each detector
first checks the latest block alone (persistence requires it), so a healthy evaluation costs a
few float operations per rule.

False-alarm budget (designed for; held by the accuracy harness, not a unit test): at most ~1 %
of healthy runs may raise any one warning-or-error symptom, because a wrong alarm costs as much
as a miss. RL curves are noisy and autocorrelated, so naive per-step testing would alarm on
most healthy runs. The guards, each cutting the rate:
- test block means, not raw points (averaging removes most of the per-step noise);
- calibrate every scale on the run's own warm-up, robustly: the larger of the second-difference
  estimator (blind to the warm-up's trend) and the MAD around a Theil-Sen line (sees the slow
  wander of autocorrelated noise; a symptom starting inside the warm-up does not inflate it);
- require a direction AND an effect size: a robust z of 3 to 6 warm-up sigmas together with a
  ratio to the warm-up level (entropy <= 0.3 x) or an absolute level the guide names;
- require persistence: k of the last m blocks (typically 3 of 4), the latest included; under
  independence one 4-sigma block has p ~ 6e-5 and three of four ~ 1e-12, which leaves room for
  autocorrelation and ~100 evaluations per run. Graded (`strong`): the latest block alone (or
  the latest few, fewer than k, holding >= 3 points) suffices when its statistic is 2 x past
  the threshold and every logged point of it passes the plain thresholds: a level, not a spike
  (a KL x200 need not wait for three blocks);
- oscillation needs repeated swings (a zigzag with at least three turns, or 5 of 6 noisy spans)
  larger than the run's own long-run wander (`Series.wander`: a 6-block warm-up cannot show how
  far autocorrelated block means drift),
  a KL explosion needs the level to multiply itself over a fixed lag (a saturating healthy KL
  does not) and to reach an absolute floor, a divergence needs half the smoothed peak lost for
  three blocks AND something blowing up;
- trends use Mann-Kendall (Kendall's tau on the block index, computed as scipy.stats.kendalltau
  does) and Theil-Sen slopes, both robust to outliers, and count only when the total change is
  also large.

Every detector also returns where the current excursion began (`statistic["onset_step"]`):
the first block of the run of blocks satisfying the condition, extended back over a gradual
approach (a fifth of the way there, or steep growth): the onset of a symptom, not the step at
which it became conclusive.
"""

from __future__ import annotations

from advisor.detectors.common import _isotonic_prefixes, _pow2_scale, _unimodal_sd, _window_scale
from advisor.detectors.level import _hinge
from advisor.detectors.noise import _swing_may, _swing_young
from advisor.detectors.peak import _peak3s
from advisor.detectors.registry import DETECTORS, REGISTRY, Column, Registration
from advisor.detectors.series import (
    COUNT,
    END,
    FIRST_BAD,
    HI,
    LO,
    MEAN,
    NONFINITE,
    RECORD_WIDTH,
    SD,
    START,
    SUM_T,
    SUM_TT,
    SUM_X,
    SUM_XT,
    SUM_XX,
    WANDER_BLOCKS,
    WANDER_CHUNKS,
    Baseline,
    Series,
    _span_sd_last,
    median,
    nanmedian,
    percentile,
    robust_scale,
    span_sd,
    wander_chunks,
    wander_of,
)
from advisor.detectors.trend import _growth_may, _growth_young, _trend_stats

__all__ = [
    "COUNT",
    "DETECTORS",
    "END",
    "FIRST_BAD",
    "HI",
    "LO",
    "MEAN",
    "NONFINITE",
    "RECORD_WIDTH",
    "REGISTRY",
    "SD",
    "START",
    "SUM_T",
    "SUM_TT",
    "SUM_X",
    "SUM_XT",
    "SUM_XX",
    "WANDER_BLOCKS",
    "WANDER_CHUNKS",
    "Baseline",
    "Column",
    "Registration",
    "Series",
    "_growth_may",
    "_growth_young",
    "_hinge",
    "_isotonic_prefixes",
    "_peak3s",
    "_pow2_scale",
    "_span_sd_last",
    "_swing_may",
    "_swing_young",
    "_trend_stats",
    "_unimodal_sd",
    "_window_scale",
    "median",
    "nanmedian",
    "percentile",
    "robust_scale",
    "span_sd",
    "wander_chunks",
    "wander_of",
]
