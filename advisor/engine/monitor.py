"""Monitor, the only judge, and judge_run, which replays a finished run through it."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from advisor.book.symptoms import ALGORITHMS, SymptomRulebook, load_symptom_rules
from advisor.engine.lifecycle import _Lifecycle
from advisor.engine.plans import _num, _predicates
from advisor.engine.records import (
    ACC_BAD,
    ACC_FIRST_BAD,
    ACC_MAX,
    ACC_MIN,
    ACC_N,
    ACC_ST,
    ACC_STT,
    ACC_SUM,
    ACC_SXT,
    ACC_SXX,
    DERIVED,
    Judgement,
    _Ahead,
    _BlockFold,
    _cell,
    _column,
    _derive_columns,
    _derive_row,
    _records,
    _wander_ready,
)
from advisor.types import CRASHED, Evidence, Finding, RunEnding

if TYPE_CHECKING:
    from advisor.types import Run


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
        only where its screen over those records passes (its Registration's `screen`)."""
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
        ready = [(self._tracks[name], *made[name]) for name in accs]
        j = 0
        while True:  # open block j, then close it (all but the last)
            self._block, self._block_first = numbers[j], firsts_at[j]
            self._last = lasts_at[j]
            if j == last_j:
                for name, acc in accs.items():
                    self._tracks[name].acc = [x[j].item() for x in acc]
                break
            for t, records, at_block in ready:
                r = at_block[j]
                t.ready = records[r].tolist() if r >= 0 else None
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
