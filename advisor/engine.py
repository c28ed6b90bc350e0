"""The diagnosis engine: one incremental evaluator of the symptom rulebook (advisor/book/).

`Monitor(hp).push(step, metrics)` is the only judge. `judge_run(run, hp)` replays a finished
Run's rows through a Monitor and closes it with the run's ending, so diagnose, watch and the
online hook give identical findings on the same series (the offline path's shortcuts, below,
skip only what cannot change them).

How a run is judged (knowledge.md §4 "How to judge"):
- Warm-up: nothing trend-like is judged before eval_steps x 3 steps (never fewer than the
  rulebook's `min_warmup_steps`); trend detectors are calibrated on those steps' noise, but
  the steps are not assumed healthy. eval_steps unknown: eval_steps = run length / 20 when the
  length is known (the guide's "total steps / 10 to 20", the short end), else the rulebook's
  `default_eval_steps`; the assumption is reported. The wait never outgrows the run: at most
  `max_warmup_share` of a run whose logged length is known. Rules marked `warmup: false` are judged
  from the first block: events (NAN), levels with an absolute anchor (P9's truncation, P4's
  entropy floor, P1's constant reward) and collapses against the run's own best block (DIV);
  run endings (OOM) fire whenever the run ends.
- Lifecycle: a finding that cleared and stayed clear for `clear_after` evaluations before the
  end is recovered: reported at info with `recovered_from`, it sets neither the exit code nor
  the patch. A rule with `recovery: learnt` (DIV, P1) recovers only when the reward ends above
  the untrained policy's level (a run back at it after a collapse or a stall keeps the
  severity). A finding whose evidence is low-confidence never becomes the one change, and
  when every alarm is borderline (low confidence, one piece of evidence just past its
  threshold) they are reported as info.
- Blocks: `push` is O(1): it folds each tracked metric into the current block's accumulators
  (sum, count, non-finite count, min, max). Block length = warm-up / `warmup_blocks` steps (at
  least 1), so the warm-up always gives about the same number of block means to calibrate on,
  whatever eval_steps is. At each block close the block stats go into bounded deques (the last
  `window_blocks` blocks per metric) and the rules are evaluated on that window. Memory is flat
  in the run length.
- Rules are data (`rulebook/symptoms.yaml`): all/any/not trees of detector leaves with
  per-algorithm thresholds; a leaf whose metric was never logged is ABSENT (not "zero"), and
  a rule that cannot be judged says so in the assumptions.
- A symptom fires once, with its onset (the latest of its conditions' onsets: the symptom exists
  once all hold; not the detection step); it clears after `clear_after` evaluations without it
  and may then fire again. `suppressed_by` lets a severe active symptom explain a lesser one
  away (no P1 "not converging" during a DIV collapse), and one whose onset lies inside such an
  episode stays explained after the episode cleared (a validation fall that began during a
  reward oscillation is the oscillation's).
- Finding.strength = (excess - 1) / 2 clipped to 0..1, where excess is how far the first
  evidence is past its threshold (1 = at it): the remedy picks the factor in the action's range
  from it. Finding.confidence is a separate axis: low on the first evaluation after the
  warm-up or with an assumed eval_steps, high with several corroborating evidences well past
  their thresholds.
- Status: "crashed" when the run ended abnormally (a traceback, out of memory, killed: every
  RunEnding kind but "completed" and "unknown"), whatever it showed before; else "issues" when
  a warning or error fired, else "insufficient_data" when the run never got past its warm-up,
  else "healthy" (info-level advice does not make a run unhealthy).
- One judge, two paths: `push` folds one step; `push_columns` (judge_run's) folds whole columns
  with numpy, makes every closed block's record at once, and lets a detector run only where its
  screen (advisor.detectors.SCREENS, a vectorised test over the metric's records that is False
  only where the detector surely returns None) passes. Combined through each rule's tree, the
  screens say at which blocks an inactive rule surely gives the verdict it gave last (NO, or
  ABSENT for metrics still not logged): it is not evaluated there, and where no rule is, past
  the warm-up with no finding active, whole spans of blocks are folded at once. An active
  finding's refresh takes its evidence without the summary (advisor.detectors.BRIEF), and the
  evidence it keeps is made whole when push_columns returns. On both paths a leaf whose tracks
  did not change keeps its last result, and a rule whose latest evaluation changed nothing is
  not evaluated again while the leaves it reached give the same results. Findings, notes and
  missing metrics are identical either way (tests/engine/test_same_judgement.py replays every
  fixture both ways, audits every detector call a screen skipped and every rule evaluation
  the masks skipped, and compares the fold's state).
- Speed (tests/engine/perf_engine.py; bench/bench_scale.py): offline, a healthy block costs
  ~0.03 ms whatever the metric count (most are folded in spans); a block where findings are
  active costs what their detectors do (~0.4 ms), since they are judged at each block.

False-alarm budget: ~1 % of healthy runs per warning/error symptom; see `advisor.detectors`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from advisor.book.symptoms import (
    ALGORITHMS,
    AllOf,
    AnyOf,
    Leaf,
    Node,
    NotOf,
    PerAlgorithm,
    Settings,
    SymptomRule,
    SymptomRulebook,
    load_symptom_rules,
)
from advisor.book.symptoms import leaves as _leaves
from advisor.detectors import (
    AT_COMPANION_PEAK,
    BASELESS,
    BRIEF,
    COUNT,
    DETECTORS,
    END,
    FIRST_BAD,
    HI,
    LO,
    MEAN,
    NONFINITE,
    READS_RUN_END,
    READS_WANDER,
    RECORD_WIDTH,
    SCREENS,
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
    Column,
    Series,
    median,
    percentile,
    robust_scale,
    span_sd,
    wander_chunks,
    wander_of,
)
from advisor.types import (
    CRASHED,
    Evidence,
    Finding,
    RunEnding,
    Scalar,
    Severity,
    Status,
)

if TYPE_CHECKING:

    from advisor.types import Run

# ============================================================================ evaluation
FIRE, NO, ABSENT = 1, 0, -1


# The open block's accumulators of one metric (a list, indexed by these; push folds each value
# in): the sum of the finite values, their count, the count of non-finite ones, their min and
# max, the step of the first non-finite one (-1: none yet), and the sums x^2, t, t^2, x*t of the
# block's least-squares line (t: steps since the block's first step).
ACC_SUM, ACC_N, ACC_BAD, ACC_MIN, ACC_MAX, ACC_FIRST_BAD = range(6)
ACC_SXX, ACC_ST, ACC_STT, ACC_SXT = range(6, 10)


def _new_acc() -> list[float]:
    return [0.0, 0, 0, math.inf, -math.inf, -1, 0.0, 0.0, 0.0, 0.0]


def _detrended_sd(a: list[float]) -> float:
    """Within-block sd around the block's own least-squares line: the swing inside the block,
    not the trend across it (a rising reward is not an oscillation)."""
    n = a[ACC_N]
    if n < 3:
        return math.nan
    sx, st = a[ACC_SUM], a[ACC_ST]
    sxx = a[ACC_SXX] - sx * sx / n
    stt = a[ACC_STT] - st * st / n
    sxt = a[ACC_SXT] - sx * st / n
    resid = sxx - (sxt * sxt / stt if stt > 0 else 0.0)
    return math.sqrt(max(0.0, resid) / n)


def _record(a: list[float], start: int, end: int) -> tuple[float, ...] | None:
    """The block record (columns START .. SUM_XT) of a block's accumulators, None when the
    metric was not logged in it."""
    n = a[ACC_N]
    if n == 0 and a[ACC_BAD] == 0:
        return None
    mean = a[ACC_SUM] / n if n else math.nan
    lo, hi = (a[ACC_MIN], a[ACC_MAX]) if n else (math.nan, math.nan)
    return (start, end, mean, lo, hi, n, a[ACC_BAD], a[ACC_FIRST_BAD], _detrended_sd(a),
            a[ACC_SUM], a[ACC_SXX], a[ACC_ST], a[ACC_STT], a[ACC_SXT])  # fmt: skip


def _records(acc: list[np.ndarray], starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """_record of every block at once (rows of the blocks the metric was not logged in are
    left out), with the same operations in the same order, so each value is the same."""
    n, bad = acc[ACC_N], acc[ACC_BAD]
    keep = (n > 0) | (bad > 0)
    a = [x[keep] for x in acc]
    n, nf = a[ACC_N], a[ACC_N].astype(float)
    sx, st = a[ACC_SUM], a[ACC_ST]
    has = n > 0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = np.where(has, sx / nf, math.nan)
        # _detrended_sd: max(0.0, nan) is 0.0, as where(resid > 0) gives
        sxx = a[ACC_SXX] - sx * sx / nf
        stt = a[ACC_STT] - st * st / nf
        sxt = a[ACC_SXT] - sx * st / nf
        resid = sxx - np.where(stt > 0, sxt * sxt / stt, 0.0)
        sd = np.where(n >= 3, np.sqrt(np.where(resid > 0.0, resid, 0.0) / nf), math.nan)
    out = np.empty((len(n), RECORD_WIDTH))
    out[:, START], out[:, END] = starts[keep], ends[keep]
    out[:, MEAN] = mean
    out[:, LO] = np.where(has, a[ACC_MIN], math.nan)
    out[:, HI] = np.where(has, a[ACC_MAX], math.nan)
    out[:, COUNT], out[:, NONFINITE], out[:, FIRST_BAD] = n, a[ACC_BAD], a[ACC_FIRST_BAD]
    out[:, SD] = sd
    out[:, SUM_X], out[:, SUM_XX], out[:, SUM_T] = sx, a[ACC_SXX], st
    out[:, SUM_TT], out[:, SUM_XT] = a[ACC_STT], a[ACC_SXT]
    return out


def _add_wander(t: _Track, total: int, latest: np.ndarray) -> None:
    """Close a chunk of the long-run wander reference: the robust scale (MAD around a Theil-Sen
    line, or second differences) of the latest WANDER_BLOCKS block means. A 6-block warm-up
    cannot show how far autocorrelated noise wanders over 16 blocks; the run's own history
    can, and the median over chunks converges as the run goes on (detectors.volatility).
    ...and the chunk's typical SPAN-block residual sd: the yardstick a warm-up of ~4 spans
    estimates poorly (heavy-tailed, autocorrelated noise), for volatility's within-span view.
    push_columns computes every chunk it closes at once (t.wander_ready, by total). `total`:
    the track's block count at the chunk's end; `latest`: the window's latest rows then."""
    ready = t.wander_ready.pop(total, None) if t.wander_ready else None
    scale, spans = ready if ready is not None else wander_of(latest)
    if scale is not None:
        t.wander.append((total, scale))
        del t.wander[:-WANDER_CHUNKS]
    if spans is not None:
        t.span_wander.append((total, spans))
        del t.span_wander[:-WANDER_CHUNKS]


def _wander_ready(t: _Track, records: np.ndarray) -> dict[int, tuple[float | None, float | None]]:
    """The wander chunks (_add_wander) that folding `records` after t's window will close, by
    the track's block count at each: each chunk is the window's latest rows then, as there."""
    width = min(WANDER_BLOCKS, len(t.buf))
    column = np.vstack([t.buf[: t.nb], records])
    base = t.total - t.nb  # column row 0's block count
    first = -(-(t.total + 1) // WANDER_BLOCKS) * WANDER_BLOCKS
    ends = np.arange(first, t.total + len(records) + 1, WANDER_BLOCKS)
    ends = ends[ends - width >= base]
    if not len(ends):
        return {}
    rows = (ends - base)[:, None] - width + np.arange(width)[None, :]
    return dict(zip(ends.tolist(), wander_chunks(column[rows]), strict=True))


# Metrics the engine derives from a logged one, point by point, when a rule reads them: the
# block mean of an indicator is the share of the block's logged steps where it holds.
# grad_zero: 1 where grad_norm is exactly 0 (a step whose every group scored alike: TRL and
# verl log a zero gradient for it; the update did nothing), 0 where it is a finite non-zero.
DERIVED: dict[str, str] = {"grad_zero": "grad_norm"}


def _zero(v: float) -> float | None:
    return None if v - v != 0.0 else float(v == 0.0)  # non-finite: no step to count


def _derive_row(metrics: Mapping[str, float | None]) -> Mapping[str, float | None]:
    g = metrics.get("grad_norm")
    if g is None or "grad_zero" in metrics:
        return metrics
    try:
        z = _zero(float(g))
    except (TypeError, ValueError):
        return metrics
    return {**metrics, "grad_zero": z}


def _derive_columns(
    columns: Mapping[str, tuple[np.ndarray, np.ndarray | None]], tracks: Mapping[str, Any]
) -> Mapping[str, tuple[np.ndarray, np.ndarray | None]]:
    if "grad_zero" not in tracks or "grad_zero" in columns or "grad_norm" not in columns:
        return columns
    v, m = columns["grad_norm"]
    finite = np.isfinite(v)
    logged = finite if m is None else (finite & m)
    return {**columns, "grad_zero": ((v == 0.0).astype(float), logged)}


def _cell(values: np.ndarray, logged: np.ndarray | None, i: int) -> float | None:
    return None if logged is not None and not logged[i] else float(values[i])


def _column(
    values: np.ndarray, logged: np.ndarray | None, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows' values, which of them are finite, which are logged but not finite (NaN/inf:
    counted, never summed). A row not logged is skipped, as push skips None."""
    x = np.asarray(values, dtype=float)[rows]
    finite = np.isfinite(x)
    if logged is None:
        return x, finite, ~finite
    seen = np.asarray(logged, dtype=bool)[rows]
    return x, seen & finite, seen & ~finite


class _BlockFold:
    """Per-block accumulators of whole columns (Monitor.push_columns): row r of block j sits at
    [j, r - start of j] of a blocks x longest-block matrix, so a running sum along each row adds
    the values in step order, as push does."""

    def __init__(self, steps: np.ndarray, starts: np.ndarray) -> None:
        n = len(steps)
        self.steps = steps
        self.n_blocks = len(starts)
        self.block = np.repeat(np.arange(self.n_blocks), np.diff(np.r_[starts, n]))
        self.pos = np.arange(n) - starts[self.block]
        self.shape = (self.n_blocks, int(self.pos.max()) + 1)
        # push's position inside the block: from the block's first step pushed (gaps count)
        self.dt = (steps - steps[starts][self.block]).astype(float)

    def accumulate(self, x: np.ndarray, finite: np.ndarray, bad: np.ndarray) -> list[np.ndarray]:
        """push's accumulators (ACC_SUM .. ACC_SXT), each as an array over the blocks."""
        f = np.flatnonzero(finite)
        row, col = self.block[f], self.pos[f]
        v, dt = x[f], self.dt[f]
        # sum x, x^2, t, t^2, x*t at once: a running sum along each block's row is push's `+=`
        # in step order (a plain row sum would pair the terms); + 0.0 turns a -0.0 total into
        # push's 0.0 (its sums start at 0.0)
        m = np.zeros((5, *self.shape))
        with np.errstate(over="ignore", invalid="ignore"):  # push overflows to inf silently
            m[:, row, col] = (v, v * v, dt, dt * dt, v * dt)
            sums = list(m.cumsum(axis=2)[:, :, -1] + 0.0)
        n = self.n_blocks
        b = np.flatnonzero(bad)
        first_bad = np.full(n, -1, dtype=np.int64)
        blocks, first = np.unique(self.block[b], return_index=True)
        first_bad[blocks] = self.steps[b[first]]
        out: list[np.ndarray] = [first_bad] * (ACC_SXT + 1)
        out[ACC_SUM], out[ACC_SXX], out[ACC_ST], out[ACC_STT], out[ACC_SXT] = sums
        out[ACC_N] = np.bincount(row, minlength=n)
        out[ACC_BAD] = np.bincount(self.block[b], minlength=n)
        out[ACC_MIN] = self._extreme(math.inf, np.min, row, col, v)
        out[ACC_MAX] = self._extreme(-math.inf, np.max, row, col, v)
        return out

    def _extreme(
        self, fill: float, pick: Any, row: np.ndarray, col: np.ndarray, v: np.ndarray
    ) -> np.ndarray:
        m = np.full(self.shape, fill)
        m[row, col] = v
        out = pick(m, axis=1)
        zero = np.flatnonzero(out == 0)
        if len(zero):  # 0.0 == -0.0: push keeps the first one seen
            out[zero] = m[zero, np.argmax(m[zero] == 0, axis=1)]
        return out


@dataclass(slots=True)
class _Track:
    """One metric's state: the open block's accumulators + bounded block history."""

    buf: np.ndarray  # the last `window_blocks` block records, oldest first (rows of span_sd)
    acc: list[float] = field(default_factory=lambda: _new_acc())
    nb: int = 0  # rows of buf in use
    ready: list[float] | None = None  # the next block's record, made by push_columns
    version: int = 0  # bumped whenever what a Series of this metric shows changes
    seen: bool = False
    baseline: Baseline | None = None
    peak: float | None = None
    peak_step: int | None = None
    peak3: float | None = None  # highest mean of 3 consecutive blocks (whole run)
    peak3_step: int | None = None  # last step of the middle block of that triple
    last3: list[tuple[float, int, int]] = field(default_factory=list)  # (mean, end, start)
    # other metrics' mean level over the blocks of that triple (AT_COMPANION_PEAK leaves)
    peak3_ctx: dict[str, float] = field(default_factory=dict)
    trough: float | None = None
    trough_step: int | None = None
    # the first block's mean, lowest and highest point, and its within-block sd
    first: tuple[float, float, float, float] = (math.nan, math.nan, math.nan, math.nan)
    total: int = 0
    warm: list[tuple[float, float, int]] = field(default_factory=list)  # warm-up, bounded
    wander: list[tuple[int, float]] = field(default_factory=list)  # chunks, bounded
    span_wander: list[tuple[int, float]] = field(default_factory=list)  # chunks, bounded
    # the wander chunks push_columns computed at once, by the block count that closes each
    wander_ready: dict[int, tuple[float | None, float | None]] = field(default_factory=dict)
    wanders: bool = False  # a detector reads its wander (READS_WANDER): the chunks are kept


@dataclass(slots=True)
class _Ahead:
    """The blocks one push_columns call closes while the screens' records are at hand (0 ..
    n - 1, in order), as the rule evaluation will see each: per metric with records in the
    call, the row of its latest record in its column at each block (-1: none yet), and the
    run's latest logged block end after each block (nan: none yet)."""

    n: int
    rows: dict[str, np.ndarray]
    logged_end: np.ndarray
    stamp: int  # which call: masks made in another are stale
    at: int = -1  # the block being closed
    # (the baselines it was made for, the blocks _fold_span may close)
    foldable: tuple[int, np.ndarray] | None = None
    # (the state it was made for, the blocks closed without evaluating a rule, bit j: block j)
    unjudged: tuple[tuple[int, ...], int] | None = None
    # per metric: (its rows, the blocks it is logged at, those its latest record there is one
    # of this call's; bit j: block j), made when a screen first asks
    logged: dict[str, tuple[np.ndarray, int, int]] = field(default_factory=dict)


class _Context(NamedTuple):
    """One rule's evaluation at one block: the Monitor judging (given at each call, so that
    the compiled trees hold no reference back to it: no reference cycle, which a run without
    the garbage collector would keep), the block's Series and leaf results (shared by the
    rules), the metrics the rule found missing, and the leaves it reached (with the track
    versions each result was judged on: None when the job's facts decided it); whether its
    leaves may give their evidence without its summary (_RuleEvaluation._judge_leaf)."""

    judge: _RuleEvaluation
    series: dict[str, Series | None]
    leaves: dict[tuple[str, ...], tuple[int, list[Evidence]]]
    missing: set[str]
    reached: list[_Reached]
    brief: bool = False


class _Reached(NamedTuple):
    plan: _LeafPlan
    key: tuple[str, ...]
    result: tuple[int, list[Evidence]]
    inputs: tuple[Any, ...] | None


class _Quiet(NamedTuple):
    """A rule's latest evaluation that changed nothing (inactive, neither absent nor fired):
    the job's facts then and the leaves it reached. While each leaf would give the same
    result, so does the rule, and it is not evaluated again."""

    facts: tuple[Any, ...]
    reached: list[_Reached]


_Eval = Callable[[_Context, bool], tuple[int, list[Evidence]]]

# _quiet at each block a push_columns call closes and where the leaf's metrics were logged,
# as ints (bit j: block j), which the rule masks combine
_Blocks = tuple[int, int]


def _bits(a: np.ndarray) -> int:
    """A boolean array as an int whose bit j is a[j]."""
    return int.from_bytes(np.packbits(a, bitorder="little").tobytes(), "little")


@dataclass(slots=True)
class _RuleMask:
    """An inactive rule at each block a push_columns call closes (from the one being closed
    when it was made on): where it surely says NO, where it surely is ABSENT, where evaluating
    it may hand a later rule an ABSENT; the notes and missing metrics evaluating it can add."""

    stamp: int  # the call
    epoch: int  # the baselines count it holds for
    used: list[tuple[_LeafPlan, _Blocks]]  # its leaves' arrays read
    no: int  # bit j: block j
    absent: int
    hands: int
    notes: tuple[str, ...]
    metrics: frozenset[str]


@dataclass(slots=True)
class _LeafPlan:
    """A leaf resolved for one Monitor: its detector, metrics, companions, parameters, the
    tracks it reads, and its last result with the versions of those tracks (memo)."""

    leaf: Leaf
    fn: Any
    names: tuple[str, ...]
    per: str | None
    rounds: str | None
    key: tuple[str, ...]
    key_keep: tuple[str, ...]
    params: Mapping[str, Any]
    params_keep: Mapping[str, Any]
    reads: tuple[_Track, ...]
    reads_end: bool
    screen: Any = None  # advisor.detectors.SCREENS' entry, when the detector has one
    baseless: bool = False  # that screen reads no baseline (advisor.detectors.BASELESS)
    brief: bool = False  # the detector can give its evidence without the summary (BRIEF)
    memo: tuple[Any, ...] | None = None
    memo_keep: tuple[Any, ...] | None = None
    inputs: tuple[Any, ...] | None = None  # the versions its latest result was judged on
    # _quiet at every block push_columns closes, and where the leaf's metrics were logged:
    # (the call and baselines count, the baselines of its metrics, the arrays)
    quiet_blocks: tuple[tuple[int, int], tuple[Baseline | None, ...], _Blocks] | None = None
    # per metric: (the records screened, the baseline they were screened with, the verdicts,
    # and the verdicts at the blocks push_columns closes, bit j: block j)
    screened: dict[str, tuple[np.ndarray, Baseline | None, np.ndarray, int]] = field(
        default_factory=dict
    )


@dataclass
class Judgement:
    findings: list[Finding]
    warmup_steps: int
    status: Status
    assumptions: list[str]
    eval_steps: int
    block_steps: int
    missing_steps: int = 0


_LEAF_KEYS: dict[int, tuple[Leaf, tuple[str, ...]]] = {}


def _leaf_key(leaf: Leaf) -> tuple[str, ...]:
    """What makes two leaves the same condition (their results are shared within a block);
    kept per leaf object of the compiled rules."""
    got = _LEAF_KEYS.get(id(leaf))
    if got is None or got[0] is not leaf:
        key = (leaf.detector, repr(leaf.metric), repr(sorted(leaf.params.items())),
               repr(leaf.skip_if), repr(leaf.only_if), repr(sorted(leaf.keep.items())),
               repr((leaf.per, leaf.rounds)))  # fmt: skip
        if len(_LEAF_KEYS) >= 4096:
            _LEAF_KEYS.clear()
        got = _LEAF_KEYS[id(leaf)] = (leaf, key)
    return got[1]


# id of each compiled rule -> (the rules, _layout's answer for them)
_LAYOUTS: dict[tuple[int, ...], tuple[list[SymptomRule], tuple[Any, Any, Any]]] = {}


def _layout(
    rules: list[SymptomRule],
) -> tuple[tuple[str, ...], list[tuple[str, str]], frozenset[str]]:
    """The metrics the rules read (companions too), the (companion, metric) pairs whose level
    is kept at the companion's best 3-block mean (AT_COMPANION_PEAK), and the metrics whose
    long-run wander a detector reads (READS_WANDER); made once per compiled rule list."""
    key = tuple(id(r) for r in rules)
    got = _LAYOUTS.get(key)
    if got is None:
        leaves = [leaf for r in rules for leaf in _leaves(r.when)]
        metrics = {m for leaf in leaves for m in leaf.metrics}
        metrics |= {c for leaf in leaves for c in (leaf.per, leaf.rounds) if c is not None}
        at_peak = sorted(
            {
                (leaf.per, m)
                for leaf in leaves
                if leaf.detector in AT_COMPANION_PEAK and leaf.per is not None
                for m in leaf.metrics
            }
        )
        wanders = frozenset(m for leaf in leaves if leaf.detector in READS_WANDER
                            for m in leaf.metrics)  # fmt: skip
        if len(_LAYOUTS) >= 32:
            _LAYOUTS.clear()
        got = _LAYOUTS[key] = (list(rules), (tuple(metrics), at_peak, wanders))
    return got[1]


# id of each compiled rule -> (the rules, _shares' answer for them)
_SHARES: dict[tuple[int, ...], tuple[list[SymptomRule], tuple[Any, Any]]] = {}


def _shares(
    rules: list[SymptomRule],
) -> tuple[dict[str, set[tuple[str, ...]]], set[str]]:
    """Per rule, the keys of the leaves of the rules after it (results they share within a
    block), and the rules whose evidence can be refreshed brief (_distinct_slots); made once
    per compiled rule list (read-only)."""
    key = tuple(id(r) for r in rules)
    got = _SHARES.get(key)
    if got is None:
        later: dict[str, set[tuple[str, ...]]] = {}
        after: set[tuple[str, ...]] = set()
        for r in reversed(rules):
            later[r.id] = set(after)
            after |= {_leaf_key(leaf) for leaf in _leaves(r.when)}
        brief = {r.id for r in rules if r.when is not None and _distinct_slots(r)}
        if len(_SHARES) >= 32:
            _SHARES.clear()
        got = _SHARES[key] = (list(rules), (later, brief))
    return got[1]


def _distinct_slots(rule: SymptomRule) -> bool:
    """No two different leaves of the rule can give evidence of the same detector on the same
    metric (a finding keeps one evidence per metric and detector; _distinct tells two such
    apart by their summaries)."""
    leaves = {_leaf_key(leaf): leaf for leaf in _leaves(rule.when)}.values()
    slots = [(leaf.detector, m) for leaf in leaves for m in leaf.metrics]
    return len(slots) == len(set(slots))


def _predicates(hp: Mapping[str, Any], kl_strong: float = 1.0) -> dict[str, bool]:
    """Named facts about the job that change what a metric means (metrics.md traps).
    `kl_strong`: the KL coefficient from which the KL term dominates any reward signal."""
    algo = str(hp.get("algorithm") or "").lower()
    kl = hp.get("kl_loss_coef")
    mini, batch = _num(hp.get("ppo_mini_batch_size")), _num(hp.get("batch_size"))
    rollouts = _num(hp.get("n_rollouts")) or 1.0
    # One mini-batch holding the whole step's samples (the platform's coupling counts it against
    # batch_size x n_rollouts, knowledge.md §2.3) and one PPO epoch make the update on-policy:
    # ppo_kl ~ 0 and clipfrac ~ 0 by design (metrics.md traps; the platform has no PPO-epochs
    # knob, so one epoch is assumed).
    on_policy = mini is not None and batch is not None and mini >= batch * rollouts
    # The KL to the reference is a penalty inside the reward (verl's use_kl_in_reward, PPO with
    # a critic) and not a term of the loss: a job fact, or what the run's KL column was named.
    in_reward = hp.get("use_kl_in_reward") is True and hp.get("use_kl_loss") is not True
    return {
        "on_policy": bool(on_policy),
        # No KL term: a coefficient of 0, or DAPO (typical coefficient 0) when it is not given;
        # a KL in the reward is a KL term whatever the loss's coefficient.
        "kl_off": not in_reward
        and (_num(kl) == 0 if _num(kl) is not None else algo == "dapo"),
        "kl_in_reward": in_reward,
        "is_dapo": algo == "dapo",
        "is_gspo": algo == "gspo",
        "is_grpo": algo == "grpo",
        "crashed": False,  # set by Monitor.close from the run's ending
        "late_start": False,  # set by Monitor._start from the first step pushed
        "kl_strong": _num(kl) is not None and float(_num(kl) or 0) >= kl_strong,
    }


_RANK = {"low": 0, "medium": 1, "high": 2}


def _distinct(evidence: list[Evidence]) -> list[Evidence]:
    """A condition named in two branches (P1: grad_norm fell, with either signature) is one
    piece of evidence: shown once, and counted once for the confidence."""
    return list({(e.metric, e.detector, e.window, e.summary): e for e in evidence}.values())


def _covers(new: Evidence, old: Evidence) -> bool:
    """`new` looks at all `old` did and more (a truncation from step 1, seen in one block at
    the alert, then over the whole run)."""
    return new.window[0] <= old.window[0] and new.window[1] > old.window[1]


def _excess_of(e: Evidence) -> float:
    return float(e.statistic.get("excess", 1.0))


def _strength(excess: float) -> float:
    """0..1 from how far past its threshold the first condition is (3x past: 1)."""
    return round(min(1.0, max(0.0, (excess - 1.0) / 2.0)), 3)


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


# (rulebook id, algorithm, facts) -> (the rulebook, its compiled rules, their notes)
_COMPILED: dict[tuple[Any, ...], tuple[SymptomRulebook, list[SymptomRule], dict[str, str]]] = {}


# id of each compiled rule -> (the rules, their condition trees compiled by _tree)
_TREES: dict[tuple[int, ...], tuple[list[SymptomRule], dict[str, Any]]] = {}


def _trees_of(rules: list[SymptomRule]) -> dict[str, _Eval]:
    """Each rule's condition tree compiled (_tree), once per compiled rule list: the
    evaluators read the Monitor judging from their context, never from what they close over."""
    key = tuple(id(r) for r in rules)
    got = _TREES.get(key)
    if got is None:
        if len(_TREES) >= 32:
            _TREES.clear()
        trees = {r.id: _tree(r.when) for r in rules if r.when is not None}
        got = _TREES[key] = (list(rules), trees)
    return got[1]


def _tree(node: Node) -> _Eval:
    """The evaluator of a condition tree: (state, evidence) from (block context, whether
    the rule's finding is active). A leaf whose metric was never logged is ABSENT."""
    if isinstance(node, Leaf):
        return _leaf_eval(node)
    if isinstance(node, AllOf):
        kids = [_tree(n) for n in node.all]

        def all_of(cx: _Context, active: bool) -> tuple[int, list[Evidence]]:
            ev: list[Evidence] = []
            absent = False
            for kid in kids:
                state, e = kid(cx, active)
                if state == NO:
                    return NO, []
                absent |= state == ABSENT
                ev += e
            return (ABSENT, []) if absent else (FIRE, ev)

        return all_of
    if isinstance(node, AnyOf):
        alts, hold = [_tree(n) for n in node.any], node.hold

        def any_of(cx: _Context, active: bool) -> tuple[int, list[Evidence]]:
            states, ev = [], []
            for alt in alts:  # all branches: every alternative that holds is evidence
                state, e = alt(cx, active)
                states.append(state)
                ev += e
            if FIRE in states or (active and hold):
                return FIRE, ev
            return (NO, []) if NO in states else (ABSENT, [])

        return any_of
    assert isinstance(node, NotOf)  # uses are expanded when the rulebook loads
    inner = _tree(node.not_)

    def not_of(cx: _Context, active: bool) -> tuple[int, list[Evidence]]:
        state, _ = inner(cx._replace(missing=set()), active)
        # "not X" where X cannot be judged does not block: absence is not evidence either
        # way.
        return (NO, []) if state == FIRE else (FIRE, [])

    return not_of


def _leaf_eval(leaf: Leaf) -> _Eval:
    """A leaf's evaluator: its plan is the judging Monitor's (_RuleEvaluation._plan)."""
    name = _leaf_key(leaf)
    while_active, has_keep = leaf.while_active, bool(leaf.keep)

    def leaf_of(cx: _Context, active: bool) -> tuple[int, list[Evidence]]:
        if while_active and not active:
            # not applicable: neither evidence nor a missing metric (under an `any`, the
            # other branches decide, and their absence is still said)
            return ABSENT, []
        judge = cx.judge
        plan = judge._plans.get(name) or judge._plan(leaf)
        keep = active and has_keep
        brief = cx.brief and plan.brief
        # equal leaves of different rules share a result (kept ones, brief ones their own)
        key = plan.key_keep if keep else plan.key
        key = (*key, "brief") if brief else key
        got = cx.leaves.get(key)
        if got is None:
            got = cx.leaves[key] = judge._leaf(plan, cx.series, cx.missing, keep, brief)
        cx.reached.append(_Reached(plan, key, got, plan.inputs))
        return got

    return leaf_of


class _BlockFolding:
    """Folding steps into blocks (the first of Monitor's jobs): each tracked metric's open-block
    accumulators, its bounded window of block records, its run-wide references (peaks,
    trough, first block, long-run wander) and its warm-up baseline; the window as the Series
    a detector reads."""

    # set by Monitor.__init__: the job as the rules see it
    rules: SymptomRulebook
    hp: dict[str, Any]
    algorithm: str | None
    eval_steps: int
    warmup_steps: int
    block_steps: int
    _st: Settings
    _notes: dict[str, str]  # the assumptions said, by key (in the order first said)
    _pred: dict[str, bool]  # the job's facts (_predicates)
    _rules: list[SymptomRule]  # resolved for the job (_RuleEvaluation._compile)
    _by_id: dict[str, SymptomRule]

    # what this job keeps
    _tracks: dict[str, _Track]  # per metric the rules read
    _at_peak: list[tuple[str, str]]  # (companion, metric): level kept at the companion's best
    _first: int | None  # the first step pushed
    _last: int | None  # the latest step pushed
    _block: int  # the open block's index (-1: none yet)
    _block_first: int | None  # the open block's first step
    _warm_done: bool
    _closed_blocks: int
    _logged_end: int | None  # end of the latest block any metric was logged in
    # push_columns' block records per metric while it closes blocks: (rows, the record count
    # before the first row, the metric's peak before the new rows, the first new row, its best
    # 3-block mean before them and the means of its last counted blocks then), read by the
    # detectors' screens (_RuleEvaluation._quiet)
    _columns: dict[str, tuple[np.ndarray, int, float | None, int, float | None, tuple[float, ...]]]
    _ahead: _Ahead | None  # the blocks those records close (None: no screens)
    _calls: int  # push_columns calls that closed blocks with screens
    _epoch: int  # baselines set so far: screens made before a new one are stale

    def _init_blocks(self) -> None:
        st = self._st
        metrics, self._at_peak, wanders = _layout(self._rules)
        self._tracks = {
            m: _Track(buf=np.empty((st.window_blocks, RECORD_WIDTH)), wanders=m in wanders)
            for m in metrics
        }
        self._first = self._last = None
        self._block, self._block_first = -1, None
        self._warm_done = False
        self._closed_blocks = 0
        self._logged_end = None
        self._columns = {}
        self._ahead = None
        self._calls = self._epoch = 0

    @property
    def tracked(self) -> list[str]:
        """The canonical metrics the rules read (others pushed are ignored)."""
        return sorted(self._tracks)

    def _start(self, step: int) -> int:
        """The first step pushed (returned). A log that begins past 50 steps and two logging
        intervals is a resumed run's (or a cut-out part): what it shows first is not where the
        run began."""
        self._first = step
        every = self.hp.get("logging_steps")
        every = every if isinstance(every, int | float) and every > 0 else 1
        self._pred["late_start"] = step > max(50, 2 * every)
        return step

    def _block_of(self, step: int) -> int:
        assert self._first is not None
        return (step - self._first) // self.block_steps

    def _forward(self, steps: Sequence[int | None]) -> tuple[list[int], list[int]]:
        """The rows push would take (row index, step): a step, and above every step before."""
        last = self._last
        if len(steps) and None not in steps:  # at once: a step above the running maximum before it
            at = np.asarray(steps, dtype=np.int64)
            keep = np.empty(len(at), dtype=bool)
            keep[0] = last is None or at[0] > last
            before = np.maximum.accumulate(at)[:-1]
            keep[1:] = at[1:] > (before if last is None else np.maximum(before, last))
            return np.flatnonzero(keep).tolist(), at[keep].tolist()
        rows: list[int] = []
        kept: list[int] = []
        for i, step in enumerate(steps):
            if step is None:
                continue
            s = int(step)
            if last is None or s > last:
                rows.append(i)
                kept.append(s)
                last = s
        return rows, kept

    def _fold_block(self, trends: bool = True) -> tuple[int, bool]:
        """Close the open block: its records into the windows, the run-wide references and
        the warm-up; (its last step, whether the rules judge trends at it)."""
        start, end, first = self._block_first, self._last, self._first
        assert start is not None and end is not None and first is not None
        new_peak3: set[int] = set()
        logged = False
        for t in self._tracks.values():
            row: Sequence[float] | None = t.ready  # the record push_columns made at once
            if row is None:
                row = _record(t.acc, start, end)
                if row is None:
                    continue  # not logged in this block
                t.acc = _new_acc()
            else:
                t.ready = None
            n, mean, lo, hi, sd = row[COUNT], row[MEAN], row[LO], row[HI], row[SD]
            t.seen = True
            if t.nb < len(t.buf):
                t.buf[t.nb] = row
                t.nb += 1
            else:  # bounded: drop the oldest block (a 32-row shift, cheaper than a deque->array)
                t.buf[:-1] = t.buf[1:]
                t.buf[-1] = row
            t.total += 1
            t.version += 1
            if t.wanders and t.total % WANDER_BLOCKS == 0:
                _add_wander(t, t.total, t.buf[max(0, t.nb - WANDER_BLOCKS) : t.nb])
            logged = True
            if n:
                if not math.isfinite(t.first[0]):
                    t.first = (mean, lo, hi, sd)
                if t.peak is None or mean > t.peak:
                    t.peak, t.peak_step = mean, end
                t.last3 = [*t.last3[-2:], (mean, end, start)]
                if len(t.last3) == 3:
                    m3 = (t.last3[0][0] + t.last3[1][0] + t.last3[2][0]) / 3.0
                    if t.peak3 is None or m3 > t.peak3:
                        t.peak3, t.peak3_step = m3, t.last3[1][1]
                        new_peak3.add(id(t))
                if t.trough is None or mean < t.trough:
                    t.trough, t.trough_step = mean, end
                if not self._warm_done or t.baseline is None:
                    t.warm.append((mean, sd, t.nb))
        if new_peak3:
            self._keep_at_peak(new_peak3)
        if logged:
            self._logged_end = end
        self._closed_blocks += 1
        in_warmup = not self._warm_done
        if in_warmup and end - first + 1 >= self.warmup_steps:
            if self._closed_blocks >= self._st.warmup_blocks:
                self._warm_done = True
            elif "warmup" not in self._notes:
                # Sparse logging (TRL logs every 10 steps by default): a baseline needs a few
                # points, so the warm-up runs on until it has `warmup_blocks` of them.
                self._notes["warmup"] = (
                    f"sparse logging: the warm-up was extended past {self.warmup_steps} steps "
                    f"to collect {self._st.warmup_blocks} logged blocks for the baseline."
                )
            if self._warm_done and end - first + 1 > self.warmup_steps:
                self.warmup_steps = end - first + 1
        for name, t in self._tracks.items():
            if self._warm_done and t.baseline is None and len(t.warm) >= 3 - in_warmup:
                t.baseline = self._baseline(t, end, name)
                t.version += 1
                self._epoch += 1
        return end, self._warm_done and not in_warmup and trends

    def _keep_at_peak(self, new_peak3: set[int]) -> None:
        """At a companion's new best 3-block mean, keep each paired metric's mean level over the
        steps of those 3 blocks: the level to compare with once the best has left the window."""
        for comp, name in self._at_peak:
            c, t = self._tracks.get(comp), self._tracks.get(name)
            if c is None or t is None or id(c) not in new_peak3 or not t.nb:
                continue
            rows = t.buf[: t.nb]
            inside = (rows[:, START] >= c.last3[0][2]) & np.isfinite(rows[:, MEAN])
            c.peak3_ctx[name] = float(np.mean(rows[inside, MEAN])) if inside.any() else math.nan

    def _foldable(self) -> np.ndarray:
        """The blocks push_columns closes that _fold_span may fold: no metric without a
        baseline is logged in them (its warm-up would grow), and every block mean in them is
        finite (the running peaks, troughs and 3-block means are then plain maxima)."""
        ah = self._ahead
        assert ah is not None
        if ah.foldable is not None and ah.foldable[0] == self._epoch:
            return ah.foldable[1]
        ok = np.ones(ah.n, dtype=bool)
        for name, i in ah.rows.items():
            rows, _, _, new, *_ = self._columns[name]
            logged = i > np.r_[new - 1, i[:-1]]
            if self._tracks[name].baseline is None:
                ok &= ~logged
            else:
                r = rows[np.maximum(i, 0)]
                ok &= ~(logged & (r[:, COUNT] != 0) & ~np.isfinite(r[:, MEAN]))
        ah.foldable = (self._epoch, ok)
        return ok

    def _fold_span(self, k: int, stop: int) -> None:
        """_fold_block of push_columns' blocks k .. stop - 1, at once: each track's window,
        counts, wander chunks, run-wide peaks, trough, first block and best 3-block mean (with
        its companions' levels) as closing each in turn leaves them. Only where _foldable:
        past the warm-up, no baseline set, finite means."""
        ah = self._ahead
        assert ah is not None and self._warm_done
        width = len(next(iter(self._tracks.values())).buf)
        events: dict[str, tuple[int, int]] = {}  # companion -> (block, start) of its best
        for name, i in ah.rows.items():
            t = self._tracks[name]
            t.ready = None
            rows, offset, _, new, *_ = self._columns[name]
            before, last = (int(i[k - 1]) if k else new - 1), int(i[stop - 1])
            if last == before:
                continue  # not logged in these blocks
            t.seen = True
            lo = max(0, last + 1 - width)
            t.nb = last + 1 - lo
            t.buf[: t.nb] = rows[lo : last + 1]
            total, t.total = t.total, offset + last + 1
            t.version += t.total - total
            first_chunk = total - total % WANDER_BLOCKS + WANDER_BLOCKS
            for chunk in range(first_chunk, t.total + 1, WANDER_BLOCKS) if t.wanders else ():
                h = chunk - offset  # the chunk's last row + 1: the window's latest rows then
                _add_wander(t, chunk, rows[h - min(WANDER_BLOCKS, width, h) : h])
            fresh = rows[before + 1 : last + 1]
            counted = np.flatnonzero(fresh[:, COUNT] != 0)
            if not len(counted):
                continue
            got = fresh[counted]
            means = got[:, MEAN]
            if not math.isfinite(t.first[0]):
                t.first = (
                    float(means[0]), float(got[0, LO]), float(got[0, HI]), float(got[0, SD])
                )
            top, low = int(np.argmax(means)), int(np.argmin(means))
            if t.peak is None or means[top] > t.peak:
                t.peak, t.peak_step = float(means[top]), int(got[top, END])
            if t.trough is None or means[low] < t.trough:
                t.trough, t.trough_step = float(means[low]), int(got[low, END])
            triple = [*t.last3, *zip(means.tolist(), got[:, END].astype(int).tolist(),
                                     got[:, START].astype(int).tolist(), strict=True)]  # fmt: skip
            q = np.arange(max(2, len(t.last3)), len(triple))
            if len(q):
                x = np.array([m for m, _, _ in triple])
                m3 = (x[q - 2] + x[q - 1] + x[q]) / 3.0
                best = int(np.argmax(m3))
                if t.peak3 is None or m3[best] > t.peak3:
                    at = int(q[best])
                    t.peak3, t.peak3_step = float(m3[best]), triple[at - 1][1]
                    # the block of that triple's last record, and the triple's first step
                    row = before + 1 + int(counted[at - len(t.last3)])
                    events[name] = (int(np.searchsorted(i, row)), triple[at - 2][2])
            t.last3 = triple[-3:]
        for comp, name in self._at_peak:
            if comp not in events:
                continue
            block, first = events[comp]
            c, t = self._tracks[comp], self._tracks[name]
            if name in ah.rows:
                r = int(ah.rows[name][block])
                window = self._columns[name][0][max(0, r + 1 - width) : r + 1]
            else:
                window = t.buf[: t.nb]
            if not len(window):
                continue
            inside = (window[:, START] >= first) & np.isfinite(window[:, MEAN])
            c.peak3_ctx[name] = float(np.mean(window[inside, MEAN])) if inside.any() else math.nan
        end = ah.logged_end[stop - 1]
        if not math.isnan(end):
            self._logged_end = int(end)
        self._closed_blocks += stop - k

    def _baseline(self, t: _Track, end: int, name: str = "") -> Baseline:
        arr = np.asarray(t.warm, dtype=float)
        x = arr[:, 0]
        med = float(median(x))
        st = self._st
        floor = max(st.rel_scale_floor * abs(med), st.abs_scale_floor)
        scale = robust_scale(x, floor)
        if name in st.early_break:
            med, scale = self._early_break(name, arr, med, scale, floor)
        start = float(median(x[:2]))
        # Residual sd over spans of SPAN blocks, from the warm-up blocks still in the window.
        blocks = t.buf[: int(arr[-1, 2])]
        spans = span_sd(blocks)
        ok = np.isfinite(spans)
        # The lower quartile, not the median: an oscillation that starts inside the warm-up must
        # not set its own yardstick (the early spans are still clean).
        sd = percentile(spans[ok], 25) if ok.any() else floor
        within = arr[:, 1][np.isfinite(arr[:, 1])]
        step_sd = float(median(within)) if len(within) else math.nan
        t.warm = []
        return Baseline(
            med, scale, start, max(sd, floor), len(x), end, first=float(x[0]), step_sd=step_sd
        )

    def _early_break(
        self, name: str, arr: np.ndarray, med: float, scale: float, floor: float
    ) -> tuple[float, float]:
        """The warm-up's level and noise, or those before it when it broke away inside the
        warm-up (an entropy blow-up at step 20 of a 30-step warm-up: the jump would inflate
        the noise too): far in the noise before AND by a ratio, so a warm-up that merely learns
        fast or eases keeps its own."""
        st = self._st
        arr = arr[np.isfinite(arr[:, 0])]
        x, within = arr[:, 0], arr[:, 1]
        for k in range(2, len(x) - 1):  # the earliest break with 2 blocks before and after
            a, b = float(median(x[:k])), float(median(x[k:]))
            # the noise of the blocks before: of their means from three on; with two, the
            # spread of their single steps (wider than a block mean's: harder to pass)
            if k >= 3:
                noise = robust_scale(x[:k], floor)
            else:
                steps = within[:k][np.isfinite(within[:k])]  # sparse logs: no spread (nan)
                noise = max(float(steps.max()), floor) if len(steps) else math.inf
            far = abs(b - a) > st.early_break_z * noise
            apart = a > 0 and b > 0 and max(a / b, b / a) >= st.early_break_ratio
            way = st.early_break[name]
            if far and apart and (way == "both" or (way == "up") == (b > a)):
                break
        else:
            return med, scale
        self._notes[f"early_break:{name}"] = (
            f"{name} moved from {a:.3g} to {b:.3g} inside the warm-up: its baseline is the "
            f"warm-up's first {k} blocks (a symptom that starts in the warm-up is judged "
            "against the run before it)."
        )
        return a, noise

    def _series(self, name: str, cache: dict[str, Series | None]) -> Series | None:
        if name in cache:
            return cache[name]
        t = self._tracks[name]
        s = None
        if t.nb:
            arr = t.buf[: t.nb]
            s = Series(
                metric=name,
                raw=arr,
                baseline=t.baseline,
                peak=t.peak,
                peak_step=t.peak_step,
                peak3=t.peak3,
                peak3_step=t.peak3_step,
                peak3_ctx=dict(t.peak3_ctx),
                trough=t.trough,
                trough_step=t.trough_step,
                blocks_total=t.total,
                wander=tuple(t.wander),
                span_wander=tuple(t.span_wander),
                first=t.first[0],
                first_range=(t.first[1], t.first[2]),
                run_end=self._logged_end,
            )
        cache[name] = s
        return s


class _RuleEvaluation(_BlockFolding):
    """Evaluating the rules at a block close (the second): the rules resolved
    for the job, each condition tree compiled once, a plan per leaf whose result stands while
    the tracks it reads are unchanged, the detectors' screens over push_columns' records, and
    rules not evaluated again while the leaves they reached give the same results."""

    # what this job keeps
    _plans: dict[tuple[str, ...], _LeafPlan]  # equal leaves of different rules share one
    _quiets: dict[str, _Quiet]  # rules whose latest evaluation changed nothing
    _rule_masks: dict[str, _RuleMask]  # per rule, for the blocks push_columns closes
    _later: dict[str, set[tuple[str, ...]]]  # per rule: the leaf keys of the rules after it
    _added: dict[str, tuple[tuple[str, ...], frozenset[str], list[_LeafPlan]]]  # _adds
    _trees: dict[str, _Eval]  # each rule's condition tree (_trees_of: shared, read-only)
    _judged: int  # rule trees evaluated so far
    # the evidence made without its summary at this block, by id: (it, the detector, the
    # Series, its block records (the Series' are a view of the window) and the params it
    # was judged on)
    _briefs: dict[int, tuple[Evidence, Any, Series, np.ndarray, Mapping[str, Any]]]
    _brief_rules: set[str]  # rules whose active findings are refreshed with such evidence

    def _init_trees(self) -> None:
        self._plans = {}
        self._quiets = {}
        self._rule_masks = {}
        self._added = {}
        self._judged = 0
        self._later, self._brief_rules = _shares(self._rules)
        self._trees = _trees_of(self._rules)
        self._briefs = {}

    def _compile(self) -> list[SymptomRule]:
        """Resolve per-algorithm thresholds once; drop rules their `unless` excludes. The same
        rulebook, algorithm and facts give the same rules: made once per process (a loaded
        rulebook is read-only)."""
        key = (id(self.rules), self.algorithm, tuple(sorted(p for p, v in self._pred.items() if v)))
        got = _COMPILED.get(key)
        if got is None or got[0] is not self.rules:
            rules, notes = [], {}
            for rule in sorted(self.rules.rules, key=lambda r: (r.priority, r.id)):
                if any(self._pred[p] for p in rule.unless):
                    if rule.unless_note:
                        notes[f"unless:{rule.id}"] = f"{rule.id} {rule.name}: {rule.unless_note}"
                    continue
                rules.append(rule.model_copy(update={"when": self._resolve(rule.when)}))
            if len(_COMPILED) >= 32:
                _COMPILED.clear()
            got = _COMPILED[key] = (self.rules, rules, notes)
        self._notes.update(got[2])
        return list(got[1])

    def _resolve(self, node: Node | None) -> Node | None:
        if node is None:
            return None
        if isinstance(node, Leaf):
            def pick(d: dict[str, Scalar | PerAlgorithm]) -> dict[str, Scalar | PerAlgorithm]:
                return {
                    k: (v.pick(self.algorithm) if isinstance(v, PerAlgorithm) else v)
                    for k, v in d.items()
                }

            return node.model_copy(update={"params": pick(node.params), "keep": pick(node.keep)})
        # copies, not new validated models: the rulebook was validated when it was loaded, and
        # validating here would build these classes' validators (~10 ms) in every process
        if isinstance(node, AllOf):
            return node.model_copy(update={"all": [self._resolve(n) for n in node.all]})
        if isinstance(node, AnyOf):
            return node.model_copy(update={"any": [self._resolve(n) for n in node.any]})
        if isinstance(node, NotOf):
            return node.model_copy(update={"not_": self._resolve(node.not_)})
        raise TypeError(f"a `use` of {node.use!r} left in a loaded rulebook")

    def _verdict(
        self,
        rule: SymptomRule,
        active: bool,
        facts: tuple[Any, ...],
        cache: dict[str, Series | None],
        leaf_cache: dict[tuple[str, ...], tuple[int, list[Evidence]]],
    ) -> tuple[int, list[Evidence], set[str]] | None:
        """The rule's condition tree at this block: (state, evidence, the metrics it found
        missing), or None when its latest evaluation changed nothing and each leaf it reached
        gives the same result now (the verdict is the same: its leaf results are shared with
        the rules after it, as evaluating would have)."""
        quiet = None if active else self._quiets.get(rule.id)
        if quiet is not None and quiet.facts == facts and self._same(quiet, leaf_cache):
            for r in quiet.reached:
                leaf_cache.setdefault(r.key, r.result)
            return None
        missing: set[str] = set()
        # an active finding's refresh, offline: evidence without summaries (_Lifecycle._refresh)
        brief = active and self._ahead is not None and rule.id in self._brief_rules
        cx = _Context(self, cache, leaf_cache, missing, [], brief)
        self._judged += 1
        state, evidence = self._trees[rule.id](cx, active)
        if active or state == ABSENT or (state == FIRE and evidence):
            self._quiets.pop(rule.id, None)
        else:
            self._quiets[rule.id] = _Quiet(facts, cx.reached)
        return state, evidence, missing

    def _plan(self, leaf: Leaf) -> _LeafPlan:
        """What a leaf needs at each evaluation, resolved once (shared by equal leaves)."""
        key = _leaf_key(leaf)
        if key in self._plans:
            return self._plans[key]
        per = leaf.per
        rounds = self._rounds_of(leaf)
        names = tuple(leaf.metrics)
        # the tracks whose versions say whether the detector's inputs changed
        reads = [n for n in (*names, per, rounds) if n is not None]
        if rounds is not None:
            reads.append(self._st.rounds_metric)
        plan = _LeafPlan(
            leaf=leaf,
            fn=DETECTORS[leaf.detector],
            names=names,
            per=per,
            rounds=rounds,
            key=key,
            key_keep=(*key, "keep"),
            params=leaf.params,
            params_keep={**leaf.params, **leaf.keep},
            reads=tuple(self._tracks[n] for n in reads if n in self._tracks),
            reads_end=leaf.detector in READS_RUN_END,
            screen=SCREENS.get(leaf.detector),
            baseless=leaf.detector in BASELESS,
            brief=leaf.detector in BRIEF and per is None and rounds is None,
        )
        self._plans[key] = plan
        return plan

    def _leaf(
        self,
        plan: _LeafPlan,
        cache: dict[str, Series | None],
        missing: set[str],
        keep: bool,
        brief: bool = False,
    ) -> tuple[int, list[Evidence]]:
        leaf, pred = plan.leaf, self._pred
        plan.inputs = None
        if leaf.only_if and not all(pred[p] for p in leaf.only_if):
            # not applicable to this job: neither evidence nor a missing metric (under an
            # `any`, the other branches decide, and their absence is still said)
            return ABSENT, []
        if leaf.skip_if and any(pred[p] for p in leaf.skip_if):
            if leaf.skip_note:
                self._notes[f"skip:{leaf.detector}:{leaf.metric}"] = leaf.skip_note
            return ABSENT, []
        # A detector is a pure function of its Series: while the tracks it reads are unchanged
        # (a validation series logged every few blocks), its last result stands.
        inputs = plan.inputs = self._inputs(plan)
        memo = plan.memo_keep if keep else plan.memo
        if memo is not None and memo[0] == inputs:
            if memo[1] == ABSENT:
                missing.update(leaf.metrics)
            return memo[1], memo[2]
        if not keep and plan.screen is not None and self._columns and self._quiet(plan):
            return NO, []
        out = self._judge_leaf(plan, cache, missing, keep, brief)
        if brief and out[1]:
            return out  # its summary is made only if a finding keeps it: not kept as the memo
        if keep:
            plan.memo_keep = (inputs, *out)
        else:
            plan.memo = (inputs, *out)
        return out

    def _inputs(self, plan: _LeafPlan) -> tuple[Any, ...]:
        """The versions of what the leaf's detector reads (the run's last logged step too,
        for the detectors that read it)."""
        inputs: tuple[Any, ...] = tuple([t.version for t in plan.reads])
        return (*inputs, self._logged_end) if plan.reads_end else inputs

    def _same(self, quiet: _Quiet, leaves: dict[tuple[str, ...], tuple[int, list[Evidence]]]
              ) -> bool:  # fmt: skip
        """Whether every leaf a quiet evaluation reached gives the same result now: already
        judged at this block with it, or its tracks unchanged (or the job's facts decided
        it), or still NO by its screen."""
        screening = bool(self._columns)
        for r in quiet.reached:
            got = leaves.get(r.key)
            if got is not None:
                if got is not r.result and (got[0] != r.result[0] or got[1] != r.result[1]):
                    return False
                continue
            if r.inputs is None:
                continue  # decided by the job's facts, which are the same
            plan = r.plan
            if r.result[0] == NO and screening and plan.screen is not None and self._quiet(plan):
                continue
            if self._inputs(plan) != r.inputs:
                return False
        return True

    def _quiet(self, plan: _LeafPlan) -> bool:
        """The leaf's detector surely returns None on every metric it reads that was logged,
        by its screen over the block records push_columns made (at least one was logged)."""
        assert self._ahead is not None
        return bool(self._quiet_blocks(plan)[0] >> self._ahead.at & 1)

    def _quiet_blocks(self, plan: _LeafPlan) -> _Blocks:
        """_quiet at every block push_columns closes (from the one being closed on; made once
        per call and set of baselines): at a block, each metric the leaf reads either not
        logged yet, or with its latest record made by this call, logged in the run's latest
        block when the detector reads the run's end, and not passed by the screen (no
        screen: never quiet); and where one of them was logged (else the leaf is ABSENT)."""
        ah = self._ahead
        assert ah is not None
        stamp = (ah.stamp, self._epoch)
        kept = plan.quiet_blocks
        if kept is not None and kept[0][0] == ah.stamp:
            if kept[0][1] == self._epoch:
                return kept[2]
            if plan.baseless:  # its screen reads no baseline: nothing it read changed
                plan.quiet_blocks = (stamp, kept[1], kept[2])
                return kept[2]
            baselines = tuple(t.baseline for t in plan.reads[: len(plan.names)])
            if all(a is b for a, b in zip(kept[1], baselines, strict=True)):
                plan.quiet_blocks = (stamp, kept[1], kept[2])  # none of its baselines changed
                return kept[2]
        window, j, screen = self._st.window_blocks, ah.at, plan.screen
        every = (1 << ah.n) - 1
        seen, ok = 0, every if screen is not None else 0
        for name, t in zip(plan.names, plan.reads, strict=False):  # reads: the names' first
            column = self._columns.get(name)
            if column is None:
                if t.nb:  # logged before, not in this call's blocks: the detector decides
                    seen, ok = every, 0
                continue
            rows, offset, peak, new, peak3, last3 = column
            i, logged, asked = self._logged_bits(name, new)
            seen |= logged
            if screen is None:
                continue
            if plan.reads_end:  # and was logged in the run's latest block
                asked &= _bits(rows[np.maximum(i, 0), END] == ah.logged_end)
            passed = every
            later = asked >> j
            if later:
                got = plan.screened.get(name)
                if (got is None or got[0] is not rows
                        or (not plan.baseless and got[1] is not t.baseline)):  # fmt: skip
                    companions = plan.per is not None or plan.rounds is not None
                    ask = int(i[j + (later & -later).bit_length() - 1])
                    col = Column(rows, window, t.baseline, peak, new, ask, companions, offset,
                                 peak3, last3, t.first[:3])  # fmt: skip
                    verdicts = screen(col, plan.params)
                    got = (rows, t.baseline, verdicts, _bits(verdicts[np.maximum(i, 0)]))
                    plan.screened[name] = got
                passed = got[3]
            ok &= (every & ~logged) | (asked & ~passed)
        out = (seen & ok, seen)
        plan.quiet_blocks = (stamp, tuple(t.baseline for t in plan.reads[: len(plan.names)]), out)
        return out

    def _logged_bits(self, name: str, new: int) -> tuple[np.ndarray, int, int]:
        """The metric's rows at each block push_columns closes (-1: none yet), where it was
        logged, and where its latest record is one this call made (`new`: its first row)."""
        ah = self._ahead
        assert ah is not None
        got = ah.logged.get(name)
        if got is None:
            i = ah.rows[name]
            got = ah.logged[name] = (i, _bits(i >= 0), _bits(i >= new))
        return got

    def _rule_mask(self, rule: SymptomRule) -> _RuleMask:
        """The rule's _RuleMask for this push_columns call (made again when the screens of
        its leaves change with a baseline)."""
        ah = self._ahead
        assert ah is not None and rule.when is not None
        got = self._rule_masks.get(rule.id)
        if got is not None and got.stamp == ah.stamp:
            if got.epoch == self._epoch:
                return got
            if all(self._quiet_blocks(plan) is out for plan, out in got.used):
                got.epoch = self._epoch
                return got
        used: list[tuple[_LeafPlan, _Blocks]] = []
        may_fire, may_no, may_absent = self._may(rule.when, used)
        hands = self._hands_absent(rule, used)
        notes, metrics, _ = self._adds(rule)
        every = (1 << ah.n) - 1
        got = _RuleMask(ah.stamp, self._epoch, used, every & ~(may_fire | may_absent),
                        every & ~(may_fire | may_no), hands, notes, metrics)  # fmt: skip
        self._rule_masks[rule.id] = got
        return got

    def _hands_absent(self, rule: SymptomRule, used: list[tuple[_LeafPlan, _Blocks]]) -> int:
        """Where evaluating the rule may hand a rule after it a leaf's ABSENT (none of its
        metrics logged yet): results are shared within a block, and a shared ABSENT does not
        say its metrics missing for the rule that takes it, so skipping this rule there would
        change what that rule says missing."""
        assert self._ahead is not None
        out, every = 0, (1 << self._ahead.n) - 1
        for plan in self._adds(rule)[2]:
            got = self._quiet_blocks(plan)
            used.append((plan, got))
            out |= every & ~got[1]
        return out

    def _adds(self, rule: SymptomRule) -> tuple[tuple[str, ...], frozenset[str], list[_LeafPlan]]:
        """What evaluating the rule can add: the notes of its leaves the job's facts skip,
        the metrics of the others (said missing when not logged), and those of them a rule
        after it also reaches (made once: the job's facts do not change while push_columns
        closes blocks)."""
        got = self._added.get(rule.id)
        if got is not None:
            return got
        pred, later = self._pred, self._later[rule.id]
        notes: list[str] = []
        metrics: set[str] = set()
        shared: list[_LeafPlan] = []
        for leaf in _leaves(rule.when):
            if leaf.while_active or not all(pred[p] for p in leaf.only_if):
                continue
            if any(pred[p] for p in leaf.skip_if):
                if leaf.skip_note:
                    notes.append(f"skip:{leaf.detector}:{leaf.metric}")
            else:
                metrics.update(leaf.metrics)
                if _leaf_key(leaf) in later:
                    shared.append(self._plan(leaf))
        got = self._added[rule.id] = (tuple(notes), frozenset(metrics), shared)
        return got

    def _may(
        self, node: Node, used: list[tuple[_LeafPlan, _Blocks]]
    ) -> tuple[int, int, int]:
        """Where a node of an inactive rule's tree may say FIRE, NO, ABSENT, at each block
        push_columns closes (bit j: block j; from the one being closed on): a leaf NO where
        its screen is quiet, ABSENT where none of its metrics was logged (or the job's facts
        decide it); each holds at least the blocks where the node says it (equal leaves under
        two branches are taken as if independent); `used`: the leaves' plans and arrays read."""
        assert self._ahead is not None
        every, at = (1 << self._ahead.n) - 1, self._ahead.at
        if isinstance(node, Leaf):
            pred = self._pred
            if (
                node.while_active
                or not all(pred[p] for p in node.only_if)
                or any(pred[p] for p in node.skip_if)
            ):
                return 0, 0, every
            plan = self._plan(node)
            got = self._quiet_blocks(plan)
            used.append((plan, got))
            quiet, seen = got
            return seen & ~quiet, seen, every & ~seen
        if isinstance(node, AllOf):  # NO if one says NO, else ABSENT if one does, else FIRE
            fire, no, not_no, absent = every, 0, every, 0
            for kid in node.all:
                f, o, a = self._may(kid, used)
                fire, no, not_no, absent = fire & f, no | o, not_no & (f | a), absent | a
                if not not_no >> at:
                    break  # NO at every block left, whatever the others say
            return fire, no, not_no & absent
        if isinstance(node, AnyOf):  # FIRE if one does (inactive: no hold), else NO, else ABSENT
            fire, no, not_fire, absent = 0, 0, every, every
            for alt in node.any:
                f, o, a = self._may(alt, used)
                fire, no, not_fire, absent = fire | f, no | o, not_fire & (o | a), absent & a
            return fire, not_fire & no, absent
        assert isinstance(node, NotOf)
        f, o, a = self._may(node.not_, used)
        return o | a, f, 0

    def _judge_leaf(
        self,
        plan: _LeafPlan,
        cache: dict[str, Series | None],
        missing: set[str],
        keep: bool,
        brief: bool = False,
    ) -> tuple[int, list[Evidence]]:
        """The leaf's detector on each of its metrics until one fires. `brief`: the evidence
        without its summary, which _described makes later from what this one was judged on
        (the detector in BRIEF, no companion)."""
        per, rounds = plan.per, plan.rounds
        params: Mapping[str, Any] = plan.params_keep if keep else plan.params
        if per is not None:  # a companion series the detector normalises by
            params = {**params, "_per": self._series(per, cache) if per in self._tracks else None}
        # DAPO's rounds per step explain a slower step only where the job runs dynamic sampling
        # and does not log them (logged rounds, settings.rounds_metric, are judged as themselves).
        if rounds is not None and not self._logged(self._st.rounds_metric, cache):
            n = self.hp.get("n_rollouts")
            params = {**params, "_rounds": self._series(rounds, cache), "_rounds_n": n or 8}
        seen = False
        fn = plan.fn
        for name in plan.names:
            s = self._series(name, cache)
            if s is None:
                continue
            seen = True
            if brief:
                ev = fn(s, {**params, "_brief": True})
                if ev is not None:
                    self._briefs[id(ev)] = (ev, fn, s, s.raw.copy(), params)
                    return FIRE, [ev]
                continue
            ev = fn(s, params)
            if ev is not None:
                return FIRE, [ev]
        if not seen:
            missing.update(plan.leaf.metrics)
            return ABSENT, []
        return NO, []

    def _logged(self, name: str, cache: dict[str, Series | None]) -> bool:
        return name in self._tracks and self._series(name, cache) is not None

    def _rounds_of(self, leaf: Leaf) -> str | None:
        """The reward a leaf's `rounds` discount reads, on a DAPO job only (dynamic sampling)."""
        return leaf.rounds if self._pred["is_dapo"] else None


class _Lifecycle(_RuleEvaluation):
    """The finding lifecycle (the third): a symptom fires once with its onset,
    is refreshed while it holds and clears after `clear_after` evaluations without it; at the
    run's end an episode is settled, recovered or kept; the run's status and assumptions."""

    # what this job keeps
    findings: list[Finding]  # every finding, in the order they fired
    ending: RunEnding | None
    _active: dict[str, Finding]
    _misses: dict[str, int]  # evaluations in a row without the active symptom
    _absent: dict[str, set[str]]  # rules not judged: the metrics they need
    _evaluations: int  # full evaluations (past the warm-up)
    _closed: bool
    _ended_clearing: set[int]  # findings that cleared only at the last blocks
    # per finding (by id): the evidence it keeps that was made without its summary, by slot
    _pending: dict[
        int, tuple[Finding, dict[tuple[str, str], tuple[Evidence, Any, Series, np.ndarray, Any]]]
    ]

    def _init_findings(self) -> None:
        self.findings = []
        self.ending = None
        self._active, self._misses, self._absent = {}, {}, {}
        self._evaluations = 0
        self._closed = False
        self._ended_clearing = set()
        self._pending = {}

    def _evaluate(self, end: int, full: bool) -> list[Finding]:
        if full:
            self._evaluations += 1
        self._briefs.clear()  # the last block's: those findings kept are in _pending
        cache: dict[str, Series | None] = {}
        leaf_cache: dict[tuple[str, ...], tuple[int, list[Evidence]]] = {}
        facts = (full, *self._pred.values())
        screening = self._ahead is not None and bool(self._columns)
        new: list[Finding] = []
        for rule in self._rules:
            if rule.when is None or (rule.warmup and not full):
                continue
            if rule.id not in self._active and any(x in self._active for x in rule.suppressed_by):
                continue  # a more severe active symptom explains this one
            active = rule.id in self._active
            if screening and not active and self._masked(rule, facts):
                continue  # surely NO by its screens, as at its last evaluation
            verdict = self._verdict(rule, active, facts, cache, leaf_cache)
            if verdict is None:
                continue  # the same as at its last evaluation, which changed nothing
            state, evidence, missing = verdict
            if state == ABSENT:
                self._absent.setdefault(rule.id, set()).update(missing)
            elif rule.id in self._absent:
                del self._absent[rule.id]
            if state == FIRE and evidence:
                self._misses[rule.id] = 0
                if rule.id not in self._active:
                    evidence = _distinct(evidence)
                    onset = self._onset(rule, evidence)
                    if self._explained(rule, onset):
                        continue
                    new.append(self._fire(rule, evidence, end, onset))
                else:
                    self._refresh(self._active[rule.id], evidence)
                    self._urgency(rule, self._active[rule.id])
            elif rule.id in self._active:
                self._misses[rule.id] = self._misses.get(rule.id, 0) + 1
                if self._misses[rule.id] >= self._st.clear_after:
                    self._active.pop(rule.id).cleared_step = end
        return new

    def _unjudged_until(self, k: int) -> int:
        """The first of push_columns' blocks from k on at which a rule may need evaluating (or
        that _fold_span may not fold): at the blocks before it, past the warm-up with no
        finding active, every rule is one _masked skips (but for the ABSENT it may hand a
        later rule: none is evaluated there), so closing each would only fold it (and count
        an evaluation)."""
        ah = self._ahead
        if ah is None or not self._warm_done or self._active:
            return k
        facts = (True, *self._pred.values())
        judged = [(r, self._rule_mask(r)) for r in self._rules if r.when is not None]
        if not all(self._unchanged(r, m, k, facts) for r, m in judged):
            return k  # (first at this block alone: the arrays below are made less often)
        state = (ah.stamp, self._epoch, self._judged, len(self._notes))
        if ah.unjudged is None or ah.unjudged[0] != state:
            ok = _bits(self._foldable())
            for rule, mask in judged:
                quiet, said = self._quiets.get(rule.id), self._absent.get(rule.id)
                skip = 0
                if quiet is not None and quiet.facts == facts:
                    skip |= mask.no
                if said is not None and mask.metrics <= said:
                    skip |= mask.absent
                ok &= skip
            ah.unjudged = (state, ok)
        judged_at = (((1 << ah.n) - 1) & ~ah.unjudged[1]) >> k  # the blocks from k on
        return k + (judged_at & -judged_at).bit_length() - 1 if judged_at else ah.n

    def _masked(self, rule: SymptomRule, facts: tuple[Any, ...]) -> bool:
        """An inactive rule whose evaluation at the block being closed would change nothing,
        known from its leaves' screens and which of their metrics were logged (_unchanged),
        and that hands no later rule an ABSENT: it is not evaluated."""
        assert self._ahead is not None
        mask = self._rule_mask(rule)
        at = self._ahead.at
        return not mask.hands >> at & 1 and self._unchanged(rule, mask, at, facts)

    def _unchanged(self, rule: SymptomRule, mask: _RuleMask, at: int, facts: tuple[Any, ...]
                   ) -> bool:  # fmt: skip
        """At block `at`, the inactive rule surely says NO and its latest evaluation (with
        these facts) changed nothing, or it surely is ABSENT and its metrics are already said
        missing; and the notes its leaves can add were said."""
        if not all(k in self._notes for k in mask.notes):
            return False
        if mask.no >> at & 1:
            quiet = self._quiets.get(rule.id)
            return quiet is not None and quiet.facts == facts
        if mask.absent >> at & 1:
            said = self._absent.get(rule.id)
            return said is not None and mask.metrics <= said
        return False

    def _onset(self, rule: SymptomRule, evidence: list[Evidence]) -> int:
        # The symptom exists once all its conditions hold: its onset is the latest of theirs.
        onset = max(int(e.statistic.get("onset_step", e.window[0])) for e in evidence)
        # A symptom back after it cleared starts again after that, whatever window the
        # evidence looks back on (episodes do not overlap).
        cleared = [f.cleared_step for f in self.findings if f.id == rule.id and f.cleared_step]
        return max(onset, max(cleared)) if cleared else onset

    def _explained(self, rule: SymptomRule, onset: int) -> bool:
        """A symptom that began (`onset`) inside an episode of one of its `suppressed_by` rules,
        which has cleared since: that episode explains it as it would have while active (a
        validation reward that fell during a reward oscillation, found after it ended)."""
        return any(
            f.id in rule.suppressed_by
            and f.cleared_step is not None
            and f.onset_step is not None
            and f.onset_step <= onset <= f.cleared_step
            for f in self.findings
        )

    def _fire(self, rule: SymptomRule, evidence: list[Evidence], end: int, onset: int) -> Finding:
        """A new finding from its distinct evidence (_distinct) and its onset (_onset)."""
        first = evidence[0]
        excess = _excess_of(first)
        f = Finding(
            id=rule.id,
            name=rule.name,
            severity=rule.severity,
            confidence=self._confidence(evidence, excess, rule.warmup),
            priority=rule.priority,
            strength=_strength(excess),
            onset_step=onset,
            detected_step=end,
            evidence=evidence,
            causes=list(rule.causes),
            why=rule.why,
            source=rule.source,
        )
        self._urgency(rule, f)
        self._active[rule.id] = f
        self.findings.append(f)
        return f

    @staticmethod
    def _urgency(rule: SymptomRule, f: Finding) -> None:
        """The rule's `urgent` priority while its first evidence is at that level."""
        u = rule.urgent
        if u is None or not f.evidence:
            return
        level = f.evidence[0].statistic.get("level")
        if isinstance(level, int | float) and level >= u.at_least:
            f.priority = min(f.priority, u.priority)

    def _refresh(self, f: Finding, evidence: list[Evidence]) -> None:
        """An active symptom that still holds: each piece of its evidence (a metric and a
        detector) is shown at its strongest while it held, or over the longest window that
        takes in the first one's, so the report at the end counts every NaN step and the whole
        decline, and a jump seen at the alert stays shown after it passed. The onset and the
        detection step stay those of the alert. Evidence made without its summary that the
        finding keeps is made whole when push_columns returns (_describe), or when it is kept
        no longer the summary is never made."""
        kept = {(e.metric, e.detector): e for e in f.evidence}
        for e in _distinct(evidence):
            old = kept.get((e.metric, e.detector))
            if old is None or _excess_of(e) >= _excess_of(old) or _covers(e, old):
                kept[(e.metric, e.detector)] = e
        f.evidence = list(kept.values())
        pending = self._pending.get(id(f))
        for slot, e in kept.items():
            brief = self._briefs.get(id(e))
            if brief is not None and brief[0] is e:
                pending = pending or self._pending.setdefault(id(f), (f, {}))
                pending[1][slot] = brief
            elif pending is not None and slot in pending[1] and pending[1][slot][0] is not e:
                del pending[1][slot]
        excess = _excess_of(f.evidence[0])  # the first condition, as at the alert
        f.strength = max(f.strength, _strength(excess))
        rule = self._by_id.get(f.id)
        confidence = self._confidence(f.evidence, excess, rule is None or rule.warmup)
        if _RANK[confidence] > _RANK[f.confidence]:
            f.confidence = confidence

    def _describe(self) -> None:
        """The evidence findings keep that was made without its summary, made whole: its
        detector again on the Series and params it was judged on (the same evidence, with
        its summary)."""
        for f, slots in self._pending.values():
            for e, fn, series, raw, params in slots.values():
                whole = fn(replace(series, raw=raw), params)
                assert whole is not None and whole.window == e.window, "a brief evidence changed"
                f.evidence = [whole if x is e else x for x in f.evidence]
        self._pending = {}

    def _settle(self) -> None:
        """Episodes of `settles` rules that ended long before the run did become info."""
        if self._last is None:
            return
        settles = {r.id for r in self._rules if r.settles}
        span = self._st.settled_blocks * self.block_steps
        for f in self.findings:
            if f.id not in settles or f.id in self._active or f.cleared_step is None:
                continue
            if self._last - f.cleared_step >= span and f.severity != Severity.info:
                f.recovered_from = f.severity
                f.severity = Severity.info
                self._notes[f"settled:{f.id}:{f.onset_step}"] = (
                    f"{f.id} {f.name} from step {f.onset_step} cleared at step {f.cleared_step}, "
                    f"{self._last - f.cleared_step} steps before the end: a passing episode, "
                    "kept as info with no change to make."
                )

    def _recover(self) -> None:
        """An episode that cleared and stayed clear for `clear_after` evaluations before the
        end is over: reported as recovered, at info, so it neither sets the exit code nor
        drives the patch. One that cleared only at the run's last blocks keeps its severity:
        a few quiet blocks at the end are not yet a recovery."""
        learnt = self._learnt()
        for f in self.findings:
            if f.cleared_step is None or f.recovered_from is not None:
                continue
            if id(f) in self._ended_clearing:
                continue
            rule = self._by_id.get(f.id)
            if rule is not None and rule.recovery == "learnt" and learnt is not None:
                ok, level, untrained = learnt
                if not ok and f.severity != Severity.info:
                    self._notes[f"unrecovered:{f.id}:{f.onset_step}"] = (
                        f"{f.id} {f.name} from step {f.onset_step} cleared by step "
                        f"{f.cleared_step}, but {self._st.learning_metric} ended at "
                        f"{level:.3g}, no higher than its untrained level {untrained:.3g} (the "
                        "highest point of its first logged block plus that block's spread): not "
                        "a recovery; kept at its severity."
                    )
                    continue
            if f.severity != Severity.info:
                f.recovered_from = f.severity
                f.severity = Severity.info
                self._notes[f"recovered:{f.id}:{f.onset_step}"] = (
                    f"{f.id} {f.name} from step {f.onset_step} recovered by step "
                    f"{f.cleared_step}: reported as info, with no change to make for it."
                )

    def _borderline(self) -> None:
        """A borderline finding never sets the verdict alone: when every warning or error the
        run raised is borderline (low confidence, one piece of evidence and that one less than
        x1.2 past its threshold: a level or a shift just past it, with nothing to corroborate
        it, and it never grew surer while it held), they are reported at info, so they set
        neither the status, the exit code nor the patch; the note says what to confirm. Beside
        a finding the evidence is sure of, they keep their severity; a young finding with
        corroborating evidence (a constant reward with no gradient, in a 3-step excerpt) is not
        borderline."""
        alarms = [f for f in self.findings if f.severity.rank >= Severity.warning.rank]
        if not alarms or not all(
            f.confidence == "low" and len(f.evidence) == 1 and _excess_of(f.evidence[0]) < 1.2
            for f in alarms
        ):
            return
        for f in alarms:
            self._notes[f"borderline:{f.id}:{f.onset_step}"] = (
                f"{f.id} {f.name} from step {f.onset_step} rests on one piece of evidence just "
                f"past its threshold (low confidence): reported as info ({f.severity.value} if "
                "it holds), with no change to make; confirm it over the next evaluations."
            )
            f.severity = Severity.info

    def _learnt(self) -> tuple[bool, float, float] | None:
        """Whether the run's reward (settings.learning_metric) ended above its untrained level:
        (learnt, its latest level, the untrained level). The latest level is the median of its
        last 3 block means (one block is noise); the untrained level is the highest point of
        its first logged block, the policy before training moved it (a collapse inside that
        block lowers its mean, not its first steps), plus that block's within-block sd: with
        few points before a collapse their highest is one noisy draw of the untrained reward,
        which a run back at that level passes half the time. A level at or above
        settings.learning_low is learnt whatever the start (a run saturated from its first
        step). None when the metric was not logged."""
        t = self._tracks.get(self._st.learning_metric)
        if t is None or not t.nb or not math.isfinite(t.first[2]):
            return None
        y = t.buf[: t.nb, MEAN]
        y = y[np.isfinite(y)][-3:]
        if not len(y):
            return None
        noise = t.first[3] if math.isfinite(t.first[3]) else 0.0
        level, untrained = float(median(y)), float(t.first[2]) + noise
        return level > untrained or level >= self._st.learning_low, level, untrained

    def _confidence(
        self, evidence: list[Evidence], excess: float, trend: bool = True
    ) -> Literal["low", "medium", "high"]:
        """Severity says how bad the symptom is; confidence how sure the evidence is. Early
        evaluations make a trend uncertain (`trend`: the rule waits for the warm-up); a level
        past an absolute anchor or a collapse against the run's own best is as sure at step 20
        as at step 200, so for those only the evidence counts."""
        young = self._evaluations < 2 or ("eval_steps" in self._notes and self._evaluations < 4)
        if young and (trend or excess < 1.5):
            return "low"
        if len(evidence) >= 2 and excess >= 1.5:
            return "high"
        return "medium" if excess >= 1.2 or len(evidence) >= 2 else "low"

    @property
    def span(self) -> int:
        return 0 if self._first is None or self._last is None else self._last - self._first + 1

    @property
    def missing_steps(self) -> int:
        return max(0, self.warmup_steps - self.span) if not self._evaluations else 0

    @property
    def status(self) -> Status:
        if self.ending is not None and self.ending.kind in CRASHED:
            return "crashed"  # what it showed before it died is in the findings
        if any(f.severity.rank >= Severity.warning.rank for f in self.findings):
            return "issues"
        if self._evaluations == 0:
            return "insufficient_data"
        return "healthy"

    def _warmup_why(self) -> str:
        """How the warm-up length came about: the guide's eval_steps x 3, the floor or the cap."""
        if "warmup_cap" in self._notes:
            return f"{self._st.max_warmup_share:.0%} of the run's logged steps"
        if 3 * self.eval_steps >= self._st.min_warmup_steps:
            return f"eval_steps {self.eval_steps} x 3"
        return (
            f"eval_steps {self.eval_steps} x 3 is {3 * self.eval_steps}, raised to the "
            f"rulebook's minimum of {self._st.min_warmup_steps}"
        )

    @property
    def assumptions(self) -> list[str]:
        out = [n.replace("{warmup}", str(self.warmup_steps)) for n in self._notes.values()]
        if self._evaluations == 0:
            out.insert(
                0,
                "insufficient data: "
                + (
                    f"steps {self._first} to {self._last} seen (a span of {self.span})"
                    if self._first is not None
                    else "no step seen"
                )
                + "; trends are judged only after the "
                f"warm-up of {self.warmup_steps} steps ({self._warmup_why()}) and one "
                f"block of {self.block_steps} more; {self.missing_steps + self.block_steps} "
                "steps missing.",
            )
        by_id = {r.id: r for r in self._rules}
        for rid, metrics in sorted(self._absent.items(), key=lambda kv: by_id[kv[0]].priority):
            if not metrics:  # not applicable (only_if, while_active), nothing missing
                continue
            rule = by_id[rid]
            note = f" {rule.absent_note}" if rule.absent_note else ""
            need = sorted({DERIVED.get(m, m) for m in metrics})  # a derived one: its source
            out.append(
                f"{rid} {rule.name} not judged: needs {', '.join(need)}, not in this run.{note}"
            )
        return out

    def judgement(self) -> Judgement:
        return Judgement(
            findings=list(self.findings),
            warmup_steps=self.warmup_steps,
            status=self.status,
            assumptions=self.assumptions,
            eval_steps=self.eval_steps,
            block_steps=self.block_steps,
            missing_steps=self.missing_steps,
        )


class Monitor(_Lifecycle):
    """The incremental judge: push steps in order; findings come out as they become conclusive.

    Its three jobs, one class each: folding steps into blocks (_BlockFolding), evaluating the
    rules at each block's end (_RuleEvaluation), the findings' lifecycle (_Lifecycle); this
    class sets the job up and drives them (push, push_columns, close).

    `hp`: the effective hyperparameters (platform names). `origin` (optional, from load_config):
    an `eval_steps` whose origin is "default" is treated as unknown. `expected_steps`: the run
    length when known (judge_run knows it), used only to assume eval_steps.
    """

    def __init__(
        self,
        hp: Mapping[str, Any] | None = None,
        rules: SymptomRulebook | None = None,
        *,
        origin: Mapping[str, str] | None = None,
        expected_steps: int | None = None,
    ) -> None:
        self.rules = rules if rules is not None else load_symptom_rules()
        self.hp = dict(hp or {})
        st = self.rules.settings
        self._st = st
        self._notes: dict[str, str] = {}
        self.algorithm = self._algorithm()
        self.eval_steps = self._eval_steps(origin or {}, expected_steps)
        self.warmup_steps = self._warmup(expected_steps)
        self.block_steps = max(1, self.warmup_steps // st.warmup_blocks)
        self._pred = _predicates(self.hp, st.kl_strong_coef)
        self._rules = self._compile()
        self._by_id = {r.id: r for r in self._rules}
        self._init_blocks()
        self._init_trees()
        self._init_findings()

    def _algorithm(self) -> str | None:
        algo = str(self.hp.get("algorithm") or "").lower() or None
        if algo not in ALGORITHMS:
            self._notes["algorithm"] = (
                "algorithm unknown: the algorithm-neutral thresholds were used (GSPO clips ~100x "
                "more tokens than GRPO and KL norms differ, so clip/KL evidence is weaker)."
            )
            return None
        return algo

    def kl_names(self, names: Iterable[str]) -> None:
        """The run's own metric names (a reader's columns; online, the keys of the first step
        that logs a KL): a KL to the reference read from a KL-in-reward name (verl's critic/kl,
        actor/reward_kl_penalty) makes `kl_in_reward` a fact, unless the job says whether
        the KL is in the reward (use_kl_in_reward)."""
        if "use_kl_in_reward" not in self.hp and _kl_in_reward_column(list(names)):
            self._pred["kl_in_reward"] = True

    def _warmup(self, expected: int | None) -> int:
        """eval_steps x 3 (the guide's wait), never below the rulebook's minimum, and never more
        than `max_warmup_share` of a run whose logged length is known: the wait is for a trend
        to show, and a run validated every 300 steps and logged at every one of its 200 steps
        has one (the guide's cadence, eval_steps = total / 10 to 20, waits 15-30 %)."""
        st = self._st
        wait = max(3 * self.eval_steps, st.min_warmup_steps)
        if expected:
            cap = max(st.min_warmup_steps, math.ceil(st.max_warmup_share * expected))

            def ends(w: int) -> int:  # where a warm-up of w steps ends: on a block boundary
                block = max(1, w // st.warmup_blocks)
                return -(-w // block) * block

            if ends(cap) < ends(wait):
                self._notes["warmup_cap"] = (
                    f"warm-up capped at {{warmup}} steps, {st.max_warmup_share:.0%} of the "
                    f"{expected} steps logged (eval_steps {self.eval_steps} x 3 = "
                    f"{3 * self.eval_steps} would leave less of the run to judge)."
                )
                return cap
        return wait

    def _eval_steps(self, origin: Mapping[str, str], expected: int | None) -> int:
        value = _num(self.hp.get("eval_steps"))
        if value is not None and value >= 1 and origin.get("eval_steps") != "default":
            return int(value)
        st = self._st
        if expected:
            assumed = max(1, round(expected / st.eval_steps_fraction))
            why = f"run length {expected} steps / {st.eval_steps_fraction} (the guide's advice)"
        else:
            assumed, why = st.default_eval_steps, "the rulebook's default"
        # the warm-up's length is filled in when said: it ends on a block boundary
        self._notes["eval_steps"] = (
            f"eval_steps unknown: assumed {assumed} ({why}), so the warm-up is {{warmup}} "
            "steps; pass --config or --set eval_steps=N."
        )
        return assumed

    def push(self, step: int, metrics: Mapping[str, float | None]) -> list[Finding]:
        """Fold one step in; return the findings new at this step. O(1) per metric except at a
        block boundary (every `block_steps` steps), where the rules are evaluated."""
        if self._closed or (self._last is not None and step <= self._last):
            return []  # the engine only moves forward (a replayed step adds nothing)
        first = self._first if self._first is not None else self._start(step)
        if DERIVED.keys() & self._tracks.keys():
            metrics = _derive_row(metrics)
        new: list[Finding] = []
        block = (step - first) // self.block_steps
        if block != self._block:
            if self._block >= 0:
                new = self._close_block()
            self._block, self._block_first = block, step
        tracks = self._tracks
        # position inside the block, for detrending
        dt = float(step - (step if self._block_first is None else self._block_first))
        for name, value in metrics.items():
            t = tracks.get(name)
            if t is None or value is None:
                continue
            try:
                v = float(value)
            except (TypeError, ValueError):
                continue
            a = t.acc
            if v - v == 0.0:  # finite (NaN - NaN and inf - inf are NaN)
                a[ACC_SUM] += v
                a[ACC_N] += 1
                if v < a[ACC_MIN]:
                    a[ACC_MIN] = v
                if v > a[ACC_MAX]:
                    a[ACC_MAX] = v
                a[ACC_SXX] += v * v
                a[ACC_ST] += dt
                a[ACC_STT] += dt * dt
                a[ACC_SXT] += v * dt
            else:
                a[ACC_BAD] += 1
                if a[ACC_BAD] == 1:  # the block's first (a step may be negative: no sentinel)
                    a[ACC_FIRST_BAD] = step
        self._last = step
        return new

    def push_columns(
        self,
        steps: Sequence[int | None],
        columns: Mapping[str, tuple[np.ndarray, np.ndarray | None]],
    ) -> list[Finding]:
        """`push` of many steps at once, for a run already on disk: the same block history and
        findings as pushing row i as `{name: value[i] if logged[i] else None}` for i in order
        (each column is `(float values, logged mask or None for all logged)`), with each whole
        block folded by numpy between the same `_close_block` calls. Sums are added in step
        order, so the accumulators and block records equal push's bit for bit; a detector runs
        only where its screen over those records passes (advisor.detectors.SCREENS)."""
        if self._closed:
            return []
        columns = _derive_columns(columns, self._tracks)
        rows, kept = self._forward(steps)
        new: list[Finding] = []
        k = 0  # rows of the block still open continue its sums: through push, one by one
        while k < len(kept) and self._block >= 0 and self._block_of(kept[k]) == self._block:
            i = rows[k]
            new += self.push(kept[k], {n: _cell(v, m, i) for n, (v, m) in columns.items()})
            k += 1
        return new + self._fold_blocks(rows[k:], kept[k:], columns) if k < len(kept) else new

    def _fold_blocks(
        self,
        rows: list[int],
        kept: list[int],
        columns: Mapping[str, tuple[np.ndarray, np.ndarray | None]],
    ) -> list[Finding]:
        """Rows that open new blocks: each block's accumulators at once, then the blocks closed
        in turn as push would close them (at the first step of the next)."""
        first = self._first if self._first is not None else self._start(kept[0])
        s = np.asarray(kept, dtype=np.int64)
        blocks = (s - first) // self.block_steps
        starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
        ends = np.r_[starts[1:], len(s)] - 1
        fold = _BlockFold(s, starts)
        at = np.asarray(rows, dtype=np.intp)
        accs = {
            name: fold.accumulate(*_column(values, logged, at))
            for name, (values, logged) in columns.items()
            if name in self._tracks
        }
        firsts, lasts = s[starts], s[ends]
        # every block's record at once, for the blocks closed here (all but the last, which
        # stays open: the next rows or close() finish it): per metric its records and, per
        # block, the row of its record there (-1: not logged in that block)
        made: dict[str, tuple[np.ndarray, list[int]]] = {}
        for name, acc in accs.items():
            done = [x[:-1] for x in acc]
            logged = (done[ACC_N] > 0) | (done[ACC_BAD] > 0)
            at_block = np.where(logged, np.cumsum(logged) - 1, -1).tolist()
            made[name] = (_records(done, firsts[:-1], lasts[:-1]), at_block)
        new: list[Finding] = []
        if self._block >= 0:  # the block left open before these rows closes first
            new += self._close_block()
        # every track's records as the block closes below will leave them (the window's rows
        # before this call, then the records made here), for the detectors' screens
        self._columns = {}
        last_j = len(starts) - 1
        # at each block closed below: each metric's latest row there, the run's latest end
        at_rows: dict[str, np.ndarray] = {}
        any_logged = np.zeros(last_j, dtype=bool)
        for name, (records, at_block) in made.items():
            t = self._tracks[name]
            if len(records):
                column = np.vstack([t.buf[: t.nb], records])
                last3 = tuple(m for m, _, _ in t.last3[-2:])
                self._columns[name] = (column, t.total - t.nb, t.peak, t.nb, t.peak3, last3)
                if t.wanders:
                    t.wander_ready = _wander_ready(t, records)
                logged = np.asarray(at_block, dtype=np.int64) >= 0
                any_logged |= logged
                at_rows[name] = t.nb + np.cumsum(logged) - 1
        latest = np.maximum.accumulate(np.where(any_logged, np.arange(last_j), -1))
        before = math.nan if self._logged_end is None else float(self._logged_end)
        ends_at = np.where(latest >= 0, lasts[:-1][np.maximum(latest, 0)], before)
        self._calls += 1
        self._ahead = _Ahead(last_j, at_rows, ends_at, self._calls)
        numbers, firsts_at, lasts_at = blocks[starts].tolist(), firsts.tolist(), lasts.tolist()
        j = 0
        while True:  # open block j, then close it (all but the last)
            self._block, self._block_first = numbers[j], firsts_at[j]
            for name, acc in accs.items():
                t = self._tracks[name]
                if j == last_j:
                    t.acc = [x[j].item() for x in acc]
                else:
                    records, at_block = made[name]
                    r = at_block[j]
                    t.ready = records[r].tolist() if r >= 0 else None
            self._last = lasts_at[j]
            if j == last_j:
                break
            self._ahead.at = j
            stop = self._unjudged_until(j)
            if stop - j >= 2:  # blocks at which no rule is evaluated: folded at once
                self._fold_span(j, stop)
                self._evaluations += stop - j
                j = stop
            else:
                new += self._close_block()
                j += 1
        self._columns, self._ahead = {}, None  # the block left open is judged without screens
        self._describe()
        return new

    def _close_block(self, trends: bool = True) -> list[Finding]:
        """The open block folded, then the rules evaluated at its end."""
        end, full = self._fold_block(trends)
        return self._evaluate(end, full)

    def close(self, ending: RunEnding | None = None) -> list[Finding]:
        """The run ended: judge the partial last block, then what only an ending tells."""
        if self._closed:
            return []
        new: list[Finding] = []
        # A run that died judges its last partial block knowing so (one NaN before a crash).
        self._pred["crashed"] = ending is not None and ending.kind in CRASHED
        missed = {r: n for r, n in self._misses.items() if n > 0}  # before the last block
        partial = False
        if self._block >= 0:
            # A last block shorter than half a block is too noisy to compare with full ones:
            # it is judged for events (NaN) only. Unless it holds an evaluation: that is a
            # whole one however short the block (verl validates once more at the last step),
            # and a decline seen only there is the run's last word (a 0.37 fall of validation
            # can show only in that evaluation).
            assert self._block_first is not None and self._last is not None
            size = self._last - self._block_first + 1
            partial = size < self.block_steps
            val = self._tracks.get(self._st.evaluation_metric)
            final_eval = val is not None and val.acc[ACC_N] > 0
            new = self._close_block(trends=size >= self.block_steps / 2 or final_eval)
        # A symptom whose evidence no longer held at the last judged block is reported as
        # cleared there (validation back near its peak, KL grown after an early ~0), not as
        # still present. A last block cut short by the run's end is noisier than the
        # full ones: its miss alone does not clear a symptom (an oscillation "cleared" at the
        # very last step).
        for rid in [r for r in self._active if self._misses.get(r, 0) > 0]:
            if partial and rid not in missed:
                continue
            f = self._active.pop(rid)
            f.cleared_step = self._last
            if self._misses[rid] < self._st.clear_after:
                self._ended_clearing.add(id(f))
        self._settle()
        self._recover()
        self._closed = True
        self.ending = ending
        if ending is None:
            self._borderline()
            return new
        step = ending.step if ending.step is not None else self._last
        for rule in self._rules:
            if ending.kind in rule.on_ending and rule.id not in self._active:
                ev = Evidence(
                    metric="run",
                    detector="ending",
                    window=(step or 0, step or 0),
                    statistic={"kind": ending.kind, "line": ending.line, "onset_step": step or 0},
                    summary=f"The run ended with {ending.kind} "
                    + (f"at step {step}" if step is not None else "before any metric line")
                    + (f" (log line {ending.line})" if ending.line else "")
                    + (f": {ending.message.strip()[:160]}" if ending.message else "."),
                )
                f = self._fire(rule, [ev], step or 0, self._onset(rule, [ev]))
                f.confidence = "high"
                new.append(f)
        if ending.kind not in ("completed", "unknown") and not any(
            ending.kind in r.on_ending for r in self._rules
        ):
            what = (
                "an exception in the training code or a service it calls (a reward function, "
                "a rollout server), not a numerical symptom: fix it and resume from the last "
                "checkpoint; no optimizer change is suggested for it."
                if ending.kind in ("traceback", "failed")
                else "an infrastructure failure, not a numerical symptom; no optimizer change "
                "is suggested for it."
            )
            self._notes["ending"] = (
                f"The run ended with {ending.kind} at step {step}"
                + (f" ({ending.message.strip()[:120]})" if ending.message else "")
                + f": {what}"
            )
        self._borderline()
        return new


def judge_run(
    run: Run,
    hp: Mapping[str, Any] | None = None,
    *,
    rules: SymptomRulebook | None = None,
    origin: Mapping[str, str] | None = None,
) -> Judgement:
    """Replay a finished Run through one Monitor (the same code path as online: push_columns
    folds the same accumulators push does, between the same block closes), then close it with
    the run's ending. Hyperparameters missing from `hp` are taken from the run's hints."""
    import polars as pl

    frame = run.frame
    merged = {**(run.config_hints or {}), **{k: v for k, v in (hp or {}).items() if v is not None}}
    steps = frame["step"].to_list() if "step" in frame.columns and frame.height else []
    expected = int(steps[-1] - steps[0] + 1) if steps else None
    mon = Monitor(merged, rules, origin=origin, expected_steps=expected)
    mon.kl_names(frame.columns)
    cols = [c for c in mon.tracked if c in frame.columns]
    data = frame.select([pl.col(c).cast(pl.Float64, strict=False) for c in cols])
    # what push would be given row by row; a null (not logged, or not a number) is skipped
    columns = {
        c: (col.to_numpy(), col.is_not_null().to_numpy() if col.null_count() else None)
        for c, col in zip(cols, data.get_columns(), strict=True)
    }
    mon.push_columns(steps, columns)
    mon.close(run.ending)
    return mon.judgement()


def _kl_in_reward_column(columns: Sequence[str]) -> bool:
    """The run's kl_ref came from a KL-in-reward name (verl's critic/kl, reward_kl_penalty):
    the first of kl_ref's aliases the run holds is one of names.KL_IN_REWARD."""
    from advisor.ingest import names

    held = set(columns)
    first = next((a for a in names.ALIASES["kl_ref"] if a in held), None)
    return first in names.KL_IN_REWARD


