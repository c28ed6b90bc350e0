"""The engine's plans: each rule compiled to a tree of leaf evaluations, the leaves' keys,
layouts and masks, and the job's facts the rules read."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from advisor.book.symptoms import Leaf, SymptomRule, SymptomRulebook
from advisor.book.symptoms import leaves as _leaves
from advisor.detectors import REGISTRY, Baseline
from advisor.engine.records import _Track
from advisor.types import Evidence

# _quiet at each block a push_columns call closes and where the leaf's metrics were logged,
# as ints (bit j: block j), which the rule masks combine
_Blocks = tuple[int, int]


def _bits(a: np.ndarray) -> int:
    """A boolean array as an int whose bit j is a[j]."""
    return int.from_bytes(np.packbits(a, bitorder="little").tobytes(), "little")


@dataclass(slots=True)
class _RuleMask:
    """An inactive rule at each block a push_columns call closes (from the one being closed
    when it was made on): where it surely says NO, where it surely is ABSENT; the notes and
    missing metrics evaluating it can add."""

    stamp: int  # the call
    epoch: int  # the baselines count it holds for
    used: list[tuple[_LeafPlan, _Blocks]]  # its leaves' arrays read
    no: int  # bit j: block j
    absent: int
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
    screen: Any = None  # the Registration's `screen`, when the detector has one
    baseless: bool = False  # that screen reads no baseline (`baseless`)
    brief: bool = False  # the detector can give its evidence without the summary (`brief`)
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


_T = TypeVar("_T")


def _per_rules(
    cache: dict[tuple[int, ...], tuple[list[SymptomRule], _T]],
    rules: list[SymptomRule],
    make: Callable[[list[SymptomRule]], _T],
) -> _T:
    """`make(rules)` once per compiled rule list: kept by the rules' ids with the rules
    themselves (so the ids stay theirs), 32 lists at most (read-only)."""
    key = tuple(id(r) for r in rules)
    got = cache.get(key)
    if got is None:
        if len(cache) >= 32:
            cache.clear()
        got = cache[key] = (list(rules), make(rules))
    return got[1]


# id of each compiled rule -> (the rules, _layout's answer for them)
_LAYOUTS: dict[
    tuple[int, ...],
    tuple[list[SymptomRule], tuple[tuple[str, ...], list[tuple[str, str]], frozenset[str]]],
] = {}


def _layout(
    rules: list[SymptomRule],
) -> tuple[tuple[str, ...], list[tuple[str, str]], frozenset[str]]:
    """The metrics the rules read (companions too), the (companion, metric) pairs whose level
    is kept at the companion's best 3-block mean (`at_companion_peak`), and the metrics whose
    long-run wander a detector reads (`reads_wander`); made once per compiled rule list."""
    return _per_rules(_LAYOUTS, rules, _laid_out)


def _laid_out(
    rules: list[SymptomRule],
) -> tuple[tuple[str, ...], list[tuple[str, str]], frozenset[str]]:
    leaves = [leaf for r in rules for leaf in _leaves(r.when)]
    metrics = {m for leaf in leaves for m in leaf.metrics}
    metrics |= {c for leaf in leaves for c in (leaf.per, leaf.rounds) if c is not None}
    at_peak = sorted(
        {
            (leaf.per, m)
            for leaf in leaves
            if REGISTRY[leaf.detector].at_companion_peak and leaf.per is not None
            for m in leaf.metrics
        }
    )
    wanders = frozenset(m for leaf in leaves if REGISTRY[leaf.detector].reads_wander
                        for m in leaf.metrics)  # fmt: skip
    return tuple(metrics), at_peak, wanders


# id of each compiled rule -> (the rules, _brief_rules' answer for them)
_BRIEF: dict[tuple[int, ...], tuple[list[SymptomRule], set[str]]] = {}


def _brief_rules(rules: list[SymptomRule]) -> set[str]:
    """The rules whose evidence can be refreshed brief (_distinct_slots); made once per
    compiled rule list."""
    return _per_rules(
        _BRIEF, rules, lambda rs: {r.id for r in rs if r.when is not None and _distinct_slots(r)}
    )


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
