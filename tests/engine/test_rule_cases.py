"""Every rule's own cases, as the rulebook declares them beside the rule (`cases:` in
rulebook/symptoms.yaml): the healthy base run of engine_series plus the declared changes; a
case expected to fire must fire with its onset within its tolerance, a quiet one must not
alarm. Adding a case is editing the YAML; this file needs no change."""

from __future__ import annotations

import math

import numpy as np
import pytest
from engine_series import HP, base, rows

from advisor.book.symptoms import CaseChange, RuleCase, load_symptom_rules
from advisor.engine import Monitor
from advisor.types import RunEnding

RULES = load_symptom_rules().rules
CASES = [(r.id, c) for r in RULES for c in r.cases]


def _apply(s: dict[str, np.ndarray], ch: CaseChange, seed: int) -> None:
    x = s[ch.metric]
    n = len(x)
    lo, hi = ch.start - 1, (ch.end or n)
    t = np.arange(hi - lo, dtype=float)
    ramp = np.clip((t + 1) / ch.over, 0.0, 1.0)
    seg = x[lo:hi].astype(float)
    if ch.set is not None:
        keep = (np.arange(lo, hi) + 1) % ch.every == 0
        seg = np.where(keep, ch.set, seg)
    if ch.multiply is not None:
        seg = seg * (1.0 + (ch.multiply - 1.0) * ramp)
    if ch.add is not None:
        seg = seg + ch.add * ramp
    if ch.period is not None:
        seg = seg + ch.amplitude * np.sin(2 * math.pi * t / ch.period)
    if ch.noise:
        seg = seg + np.random.default_rng(seed).normal(0.0, ch.noise, hi - lo)
    x[lo:hi] = seg  # NaN stays NaN: a validation series is logged where it was set


def _run(case: RuleCase) -> Monitor:
    s = base()
    for i, ch in enumerate(case.change):
        _apply(s, ch, seed=i)
    mon = Monitor({**HP, **case.hp})
    for step, row in rows(s):
        mon.push(step, row)
    mon.close(RunEnding(kind=case.ending) if case.ending else None)  # type: ignore[arg-type]
    return mon


def test_the_rulebook_declares_cases() -> None:
    with_cases = {rid for rid, _ in CASES}
    assert with_cases == {r.id for r in RULES}, {r.id for r in RULES} - with_cases
    for rid in with_cases:
        kinds = {c.expect for r in RULES if r.id == rid for c in r.cases}
        assert kinds == {"fires", "quiet"}, f"{rid}: a firing and a quiet case each"


@pytest.mark.parametrize(("rule_id", "case"), CASES, ids=[f"{r}: {c.name}" for r, c in CASES])
def test_rule_case(rule_id: str, case: RuleCase) -> None:
    mon = _run(case)
    mine = [f for f in mon.findings if f.id == rule_id]
    if case.expect == "quiet":
        loud = [f for f in mine if f.severity.rank >= 1 and f.recovered_from is None]
        said = [e.summary for e in loud[0].evidence] if loud else []
        assert not loud, f"{rule_id} fired on '{case.name}': {said}"
        return
    assert mine, f"{rule_id} did not fire on '{case.name}': {[f.id for f in mon.findings]}"
    if case.onset is not None:
        onset = mine[0].onset_step
        assert onset is not None and abs(onset - case.onset) <= case.within, (
            f"{rule_id} onset {onset}, declared {case.onset} +- {case.within}"
        )
