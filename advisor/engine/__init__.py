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
  screen (its Registration's `screen`, a vectorised test over the metric's records that is False
  only where the detector surely returns None) passes. Combined through each rule's tree, the
  screens say at which blocks an inactive rule surely gives the verdict it gave last (NO, or
  ABSENT for metrics still not logged): it is not evaluated there, and where no rule is, past
  the warm-up with no finding active, whole spans of blocks are folded at once. An active
  finding's refresh takes its evidence without the summary (a `brief` detector's), and the
  evidence it keeps is made whole when push_columns returns. On both paths a leaf whose tracks
  did not change keeps its last result, and a rule whose latest evaluation changed nothing is
  not evaluated again while the leaves it reached give the same results (of an `all` that
  said NO, those of the kid that said it); an `all` whose later kid is surely NO by a result
  known without running a detector (shared at the block, kept, screened out) says NO without
  judging the kids before it (tests/engine/test_all_shortcuts.py). Findings, notes and
  missing metrics are identical either way (tests/engine/test_same_judgement.py replays every
  fixture both ways, audits every detector call a screen skipped and every rule evaluation
  the masks skipped, and compares the fold's state).
- Speed (tests/engine/perf_engine.py; bench/bench_scale.py): offline, a healthy block costs
  ~0.03 ms whatever the metric count (most are folded in spans); a block where findings are
  active costs what their detectors do (~0.4 ms), since they are judged at each block.

False-alarm budget: ~1 % of healthy runs per warning/error symptom; see `advisor.detectors`.
"""

from __future__ import annotations

from advisor.book.symptoms import SymptomRulebook, load_symptom_rules
from advisor.book.symptoms import leaves as _leaves
from advisor.engine.evaluation import _Context
from advisor.engine.monitor import Monitor, judge_run
from advisor.engine.records import ABSENT, NO, Judgement

__all__ = [
    "ABSENT",
    "NO",
    "Judgement",
    "Monitor",
    "SymptomRulebook",
    "_Context",
    "_leaves",
    "judge_run",
    "load_symptom_rules",
]
