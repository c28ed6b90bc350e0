"""Evaluating the rules over the window (the second of Monitor's jobs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from advisor.book.symptoms import AllOf, AnyOf, Leaf, Node, NotOf, PerAlgorithm, SymptomRule
from advisor.book.symptoms import leaves as _leaves
from advisor.detectors import END, REGISTRY, Column, Series
from advisor.engine.blocks import _BlockFolding
from advisor.engine.plans import (
    _COMPILED,
    _bits,
    _Blocks,
    _brief_rules,
    _leaf_key,
    _LeafPlan,
    _per_rules,
    _RuleMask,
)
from advisor.engine.records import ABSENT, FIRE, NO
from advisor.types import Evidence, Scalar


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
    the job's facts then and the leaves it reached (but those before the kid that made an
    `all` say NO, which decide nothing: _deciding). While each leaf would give the same
    result, so does the rule, and it is not evaluated again."""

    facts: tuple[Any, ...]
    reached: list[_Reached]


_Eval = Callable[[_Context, bool], tuple[int, list[Evidence]]]


# id of each compiled rule -> (the rules, their condition trees compiled by _tree)
_TREES: dict[tuple[int, ...], tuple[list[SymptomRule], dict[str, _Eval]]] = {}


def _trees_of(rules: list[SymptomRule]) -> dict[str, _Eval]:
    """Each rule's condition tree compiled (_tree), once per compiled rule list: the
    evaluators read the Monitor judging from their context, never from what they close over."""
    return _per_rules(
        _TREES, rules, lambda rs: {r.id: _tree(r.when) for r in rs if r.when is not None}
    )


def _tree(node: Node) -> _Eval:
    """The evaluator of a condition tree: (state, evidence) from (block context, whether
    the rule's finding is active). A leaf whose metric was never logged is ABSENT."""
    if isinstance(node, Leaf):
        return _leaf_eval(node)
    if isinstance(node, AllOf):
        kids = [_tree(n) for n in node.all]
        # a kid past the first surely NO without a detector run (_probe) says the all's NO:
        # the kids before it are not judged where that changes nothing (_unjudged_ok)
        under = [list(_leaves(n)) for n in node.all]
        metrics = [[x.metrics for x in kid] for kid in under]
        # (a leaf under the kids before it says a note when the job's facts skip it: such
        # a note said first at another evaluation would come in another order)
        noted = [any(x.skip_if and x.skip_note for x in kid) for kid in under]
        probes = [(i, _probe(n), not any(noted[:i])) for i, n in enumerate(node.all) if i]

        def all_of(cx: _Context, active: bool) -> tuple[int, list[Evidence]]:
            for i, probe, quiet in probes:
                if quiet and probe(cx, active) == NO:
                    if cx.judge._unjudged_ok(metrics[:i]):
                        state, _ = kids[i](cx, active)
                        if state == NO:
                            return NO, []
                    break
            ev: list[Evidence] = []
            absent = False
            reached = cx.reached
            start = len(reached)
            for kid in kids:
                at = len(reached)
                state, e = kid(cx, active)
                if state == NO:
                    if at > start:  # the NO is this kid's whatever the kids before it say
                        reached[start:at] = _deciding(reached[start:at])
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


_Probe = Callable[[_Context, bool], int | None]


def _probe(node: Node) -> _Probe:
    """What a node says at this block where that is known without running a detector and
    without a side effect (a leaf's result shared at this block, its memo, its screen), else
    None."""
    if isinstance(node, Leaf):
        name = _leaf_key(node)
        while_active, has_keep = node.while_active, bool(node.keep)

        def leaf(cx: _Context, active: bool) -> int | None:
            if while_active and not active:
                return ABSENT
            judge = cx.judge
            plan = judge._plans.get(name)
            if plan is None:
                return None
            keep = active and has_keep
            key = plan.key_keep if keep else plan.key
            got = cx.leaves.get((*key, "brief") if cx.brief and plan.brief else key)
            if got is not None:
                return got[0]
            if judge._facts_decide(node):
                return ABSENT
            memo = plan.memo_keep if keep else plan.memo
            if memo is not None and memo[0] == judge._inputs(plan):
                return int(memo[1])
            if not keep and plan.screen is not None and judge._columns and judge._quiet(plan):
                return NO
            return None

        return leaf
    if isinstance(node, AllOf):
        kids = [_probe(n) for n in node.all]

        def all_of(cx: _Context, active: bool) -> int | None:
            return NO if any(kid(cx, active) == NO for kid in kids) else None

        return all_of
    if isinstance(node, AnyOf):
        alts, hold = [_probe(n) for n in node.any], node.hold

        def any_of(cx: _Context, active: bool) -> int | None:
            if active and hold:
                return None
            states = [alt(cx, active) for alt in alts]
            if FIRE in states or None in states:
                return None
            return NO if NO in states else ABSENT

        return any_of
    assert isinstance(node, NotOf)
    inner = _probe(node.not_)

    def not_of(cx: _Context, active: bool) -> int | None:
        state = inner(cx, active)
        return None if state is None else NO if state == FIRE else FIRE

    return not_of


def _deciding(reached: list[_Reached]) -> list[_Reached]:
    """Of the leaves an `all` reached before the kid that says NO, those a quiet evaluation
    (_Quiet) still checks: none. An `all` that says NO says it while that kid does, so the
    others need not give the same results for the rule's verdict to stand (an ABSENT among
    them, shared with a later rule, has that rule say its metrics missing: leaf_of)."""
    return []


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
        elif got[0] == ABSENT and not judge._facts_decide(leaf):
            # judged ABSENT by a rule before this one at this block (none of its metrics
            # logged): this rule says them missing, as it would judging the leaf itself
            cx.missing.update(leaf.metrics)
        cx.reached.append(_Reached(plan, key, got, plan.inputs))
        return got

    return leaf_of


class _RuleEvaluation(_BlockFolding):
    """Evaluating the rules at a block close (the second): the rules resolved
    for the job, each condition tree compiled once, a plan per leaf whose result stands while
    the tracks it reads are unchanged, the detectors' screens over push_columns' records, and
    rules not evaluated again while the leaves they reached give the same results."""

    # what this job keeps
    _plans: dict[tuple[str, ...], _LeafPlan]  # equal leaves of different rules share one
    _quiets: dict[str, _Quiet]  # rules whose latest evaluation changed nothing
    _rule_masks: dict[str, _RuleMask]  # per rule, for the blocks push_columns closes
    _added: dict[str, tuple[tuple[str, ...], frozenset[str]]]  # _adds
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
        self._brief_rules = _brief_rules(self._rules)
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
                when = self._resolve(rule.when)
                rules.append(rule if when is rule.when else rule.model_copy(update={"when": when}))
            if len(_COMPILED) >= 32:
                _COMPILED.clear()
            got = _COMPILED[key] = (self.rules, rules, notes)
        self._notes.update(got[2])
        return list(got[1])

    def _resolve(self, node: Node | None) -> Node | None:
        """The node with its leaves' per-algorithm thresholds picked: the node itself where
        none is under it (the rulebook is read-only, and so are the compiled rules)."""
        if node is None:
            return None
        if isinstance(node, Leaf):
            if not any(isinstance(v, PerAlgorithm) for v in (*node.params.values(),
                                                             *node.keep.values())):  # fmt: skip
                return node

            def pick(d: dict[str, Scalar | PerAlgorithm]) -> dict[str, Scalar | PerAlgorithm]:
                return {
                    k: (v.pick(self.algorithm) if isinstance(v, PerAlgorithm) else v)
                    for k, v in d.items()
                }

            return node.model_copy(update={"params": pick(node.params), "keep": pick(node.keep)})
        # copies, not new validated models: the rulebook was validated when it was loaded, and
        # validating here would build these classes' validators (~10 ms) in every process
        if isinstance(node, AllOf):
            kids = [self._resolve(n) for n in node.all]
            same = all(a is b for a, b in zip(kids, node.all, strict=True))
            return node if same else node.model_copy(update={"all": kids})
        if isinstance(node, AnyOf):
            kids = [self._resolve(n) for n in node.any]
            same = all(a is b for a, b in zip(kids, node.any, strict=True))
            return node if same else node.model_copy(update={"any": kids})
        if isinstance(node, NotOf):
            inner = self._resolve(node.not_)
            return node if inner is node.not_ else node.model_copy(update={"not_": inner})
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
        reg = REGISTRY[leaf.detector]  # the detector, its screen and its traits
        plan = _LeafPlan(
            leaf=leaf,
            fn=reg.fn,
            names=names,
            per=per,
            rounds=rounds,
            key=key,
            key_keep=(*key, "keep"),
            params=leaf.params,
            params_keep={**leaf.params, **leaf.keep},
            reads=tuple(self._tracks[n] for n in reads if n in self._tracks),
            reads_end=reg.reads_run_end,
            screen=reg.screen,
            baseless=reg.baseless,
            brief=reg.brief and per is None and rounds is None,
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

    def _facts_decide(self, leaf: Leaf) -> bool:
        """The job's facts make the leaf ABSENT whatever was logged (its only_if, skip_if)."""
        pred = self._pred
        return not all(pred[p] for p in leaf.only_if) or any(pred[p] for p in leaf.skip_if)

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
        kept = plan.quiet_blocks
        if kept is not None and kept[0][0] == ah.stamp and kept[0][1] == self._epoch:
            return kept[2]
        stamp = (ah.stamp, self._epoch)
        if kept is not None and kept[0][0] == ah.stamp:
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
        notes, metrics = self._adds(rule)
        every = (1 << ah.n) - 1
        got = _RuleMask(ah.stamp, self._epoch, used, every & ~(may_fire | may_absent),
                        every & ~(may_fire | may_no), notes, metrics)  # fmt: skip
        self._rule_masks[rule.id] = got
        return got

    def _adds(self, rule: SymptomRule) -> tuple[tuple[str, ...], frozenset[str]]:
        """What evaluating the rule can add: the notes of its leaves the job's facts skip, and
        the metrics of the others (said missing when not logged); made once: the job's facts
        do not change while push_columns closes blocks."""
        got = self._added.get(rule.id)
        if got is not None:
            return got
        pred = self._pred
        notes: list[str] = []
        metrics: set[str] = set()
        for leaf in _leaves(rule.when):
            if leaf.while_active or not all(pred[p] for p in leaf.only_if):
                continue
            if any(pred[p] for p in leaf.skip_if):
                if leaf.skip_note:
                    notes.append(f"skip:{leaf.detector}:{leaf.metric}")
            else:
                metrics.update(leaf.metrics)
        got = self._added[rule.id] = (tuple(notes), frozenset(metrics))
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
            if node.while_active or self._facts_decide(node):
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
        (a `brief` detector, no companion)."""
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

    def _unjudged_ok(self, metrics: list[list[list[str]]]) -> bool:
        """Whether kids of an `all` (the metrics of each of their leaves) may go unjudged at
        a block where the all says NO by a later kid: none of their leaves can be ABSENT for
        want of its metrics (a metric of each logged), which the rule or a later one taking
        the result would say missing otherwise. Their evidence is dropped, the leaves are
        pure, and the rule's verdict is the NO kid's whatever they give (_deciding)."""
        tracks = self._tracks
        for kid in metrics:
            for names in kid:
                if not any(n in tracks and tracks[n].nb for n in names):
                    return False
        return True

    def _logged(self, name: str, cache: dict[str, Series | None]) -> bool:
        return name in self._tracks and self._series(name, cache) is not None

    def _rounds_of(self, leaf: Leaf) -> str | None:
        """The reward a leaf's `rounds` discount reads, on a DAPO job only (dynamic sampling)."""
        return leaf.rounds if self._pred["is_dapo"] else None
