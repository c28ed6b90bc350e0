"""A finding's life: onset, refresh, clearing, recovery, suppression
(the third of Monitor's jobs)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from advisor.book.symptoms import SymptomRule
from advisor.detectors import MEAN, Series, median
from advisor.engine.evaluation import _RuleEvaluation
from advisor.engine.plans import _RANK, _bits, _covers, _distinct, _excess_of, _RuleMask, _strength
from advisor.engine.records import ABSENT, DERIVED, FIRE, Judgement
from advisor.types import CRASHED, Evidence, Finding, RunEnding, Severity, Status


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
    _blocker: SymptomRule | None  # the rule that kept _unjudged_until's last block judged
    # per rule _masked skipped: (the call, the baselines count, the facts, the first block
    # from the one it was skipped at on where it may be evaluated)
    _wake: dict[str, tuple[int, int, tuple[Any, ...], int]]
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
        self._blocker = None
        self._wake = {}

    def _evaluate(self, end: int, full: bool) -> list[Finding]:
        if full:
            self._evaluations += 1
        self._briefs.clear()  # the last block's: those findings kept are in _pending
        cache: dict[str, Series | None] = {}
        leaf_cache: dict[tuple[str, ...], tuple[int, list[Evidence]]] = {}
        facts = (full, *self._pred.values())
        screening = self._ahead is not None and bool(self._columns)
        new: list[Finding] = []
        act = self._active
        for rule in self._rules:
            if rule.when is None or (rule.warmup and not full):
                continue
            active = rule.id in act
            if not active:
                if rule.suppressed_by and any(x in act for x in rule.suppressed_by):
                    continue  # a more severe active symptom explains this one
                if screening and self._masked(rule, facts):
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
        # (first at this block alone: the arrays below are made less often), the rule that
        # was not unchanged last time first: it mostly is not again
        blocker = self._blocker
        if blocker is not None and not self._unchanged(blocker, self._rule_mask(blocker), k,
                                                       facts):  # fmt: skip
            return k
        rules = [r for r in self._rules if r.when is not None]
        for r in rules:
            if r is not blocker and not self._unchanged(r, self._rule_mask(r), k, facts):
                self._blocker = r
                return k
        judged = [(r, self._rule_mask(r)) for r in rules]
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
        known from its leaves' screens and which of their metrics were logged (_unchanged):
        it is not evaluated."""
        ah = self._ahead
        assert ah is not None
        at = ah.at
        # the block it may be evaluated at next (_wake), while the call, the baselines and
        # the facts are those it was found for: nothing else changes what the masks say of a
        # rule that is not evaluated (the notes said stay said)
        wake = self._wake.get(rule.id)
        if wake is not None and at < wake[3] and wake[0] == ah.stamp and wake[1] == self._epoch \
                and wake[2] == facts:  # fmt: skip
            return True
        mask = self._rule_mask(rule)
        if not self._notes_said(mask):
            return False
        # _unchanged at every block of the call: where it surely says NO and its latest
        # evaluation changed nothing, or it is surely ABSENT with its metrics said missing
        quiet, said = self._quiets.get(rule.id), self._absent.get(rule.id)
        skip = mask.no if quiet is not None and quiet.facts == facts else 0
        if said is not None and mask.metrics <= said:
            skip |= mask.absent & ~mask.no
        left = ~skip >> at  # bit i: evaluated at block at + i (there are no blocks past n)
        until = at + (left & -left).bit_length() - 1
        self._wake[rule.id] = (ah.stamp, self._epoch, facts, until)
        return until > at

    def _unchanged(self, rule: SymptomRule, mask: _RuleMask, at: int, facts: tuple[Any, ...]
                   ) -> bool:  # fmt: skip
        """At block `at`, the inactive rule surely says NO and its latest evaluation (with
        these facts) changed nothing, or it surely is ABSENT and its metrics are already said
        missing; and the notes its leaves can add were said."""
        if not self._notes_said(mask):
            return False
        if mask.no >> at & 1:
            quiet = self._quiets.get(rule.id)
            return quiet is not None and quiet.facts == facts
        if mask.absent >> at & 1:
            said = self._absent.get(rule.id)
            return said is not None and mask.metrics <= said
        return False

    def _notes_said(self, mask: _RuleMask) -> bool:
        """Every note the rule's leaves can add (the job's facts skip them) is said already."""
        return not mask.notes or all(k in self._notes for k in mask.notes)

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
