"""Data-driven rule cases (as semgrep / sqlfluff do): every symptom rule has a series that must
fire it, with its onset, and healthy series that must not."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from engine_series import CASES, HP, ONSET, base, rows, with_val

from advisor.engine import Monitor, load_symptom_rules
from advisor.types import RunEnding, Severity


def _judge(s: dict[str, np.ndarray], hp: dict[str, Any] | None = None,
           ending: RunEnding | None = None) -> Monitor:
    mon = Monitor({**HP, **(hp or {})})
    for step, row in rows(s):
        mon.push(step, row)
    mon.close(ending)
    return mon


def test_every_rule_has_cases() -> None:
    ids = {r.id for r in load_symptom_rules().rules}
    assert ids - {"OOM"} == set(CASES), "a rule without a firing/non-firing case"


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_fires_with_its_onset(rule_id: str) -> None:
    modify, hp, tol = CASES[rule_id]
    s = base()
    modify(s)
    mon = _judge(s, hp)
    found = [f for f in mon.findings if f.id == rule_id]
    assert found, f"{rule_id} did not fire: {[f.id for f in mon.findings]}"
    f = found[0]
    assert f.onset_step is not None and f.detected_step is not None
    assert f.onset_step <= f.detected_step
    if tol is not None:
        assert abs(f.onset_step - ONSET) <= tol, (f.onset_step, f.evidence[0].summary)
    assert f.evidence and all(e.summary for e in f.evidence)
    assert 0.0 <= f.strength <= 1.0


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_does_not_fire_on_healthy(rule_id: str, seed: int) -> None:
    s = base(seed=seed)
    with_val(s, 20)
    mon = _judge(s, CASES[rule_id][1], RunEnding(kind="completed"))
    assert rule_id not in {f.id for f in mon.findings}


def _alarming_healthy(kind: str, seed: int) -> dict[str, np.ndarray]:
    """Healthy runs that look alarming (the issue's list)."""
    n = 400
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    s = base(n, seed, noise=0.07 if kind == "noisy" else 0.02)
    if kind == "early-plateau":
        s["reward_mean"] = 0.92 - 0.7 * np.exp(-t / 20) + rng.normal(0, 0.015, n)
    elif kind == "slow-gain":
        s["reward_mean"] = 0.3 + 0.12 * t / n + rng.normal(0, 0.02, n)
    with_val(s, 20)
    return s


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", ["noisy", "early-plateau", "slow-gain"])
def test_alarming_healthy_runs_raise_no_warning(kind: str, seed: int) -> None:
    mon = _judge(_alarming_healthy(kind, seed), ending=RunEnding(kind="completed"))
    bad = [(f.id, f.evidence[0].summary) for f in mon.findings if f.severity.rank >= 1]
    assert not bad
    assert mon.status == "healthy"


def test_oom_fires_from_the_ending_only() -> None:
    s = base(150)
    mon = _judge(s, ending=RunEnding(kind="oom", step=151, message="CUDA out of memory"))
    oom = [f for f in mon.findings if f.id == "OOM"]
    assert len(oom) == 1 and oom[0].severity is Severity.error and oom[0].onset_step == 151
    clean = _judge(base(150), ending=RunEnding(kind="completed"))
    assert "OOM" not in {f.id for f in clean.findings}


def test_evidence_gone_at_the_end_is_cleared() -> None:
    """A symptom that no longer holds at the last judged block carries cleared_step, even when
    the run ends before clear_after misses (issue 4: no "still present" on a recovered run)."""
    s = base()
    mon_probe = Monitor(HP)
    n = len(s["truncation_rate"])
    end = n - 2 * mon_probe.block_steps  # two full blocks back to normal before the end
    s["truncation_rate"][ONSET:end] = 0.4
    mon = _judge(s)
    p9 = [f for f in mon.findings if f.id == "P9"]
    assert p9 and p9[0].cleared_step is not None and p9[0].cleared_step >= end


def test_evidence_still_there_at_the_end_is_not_cleared() -> None:
    s = base()
    s["truncation_rate"][ONSET:] = 0.4
    p9 = [f for f in _judge(s).findings if f.id == "P9"]
    assert p9 and p9[0].cleared_step is None


def _abrupt(rule_id: str, s: dict[str, np.ndarray]) -> None:
    """The symptom at full size from ONSET on (no ramp): far past every threshold."""
    if rule_id == "P3":
        s["kl_ref"][ONSET:] = s["kl_ref"][ONSET] * 200
    elif rule_id == "P4":
        s["entropy"][ONSET:] *= 0.03
    elif rule_id == "SLOW":
        s["rollout_time"][ONSET:] *= 4
    elif rule_id == "P9":
        s["truncation_rate"][ONSET:] = 0.4
    else:  # DIV: the reward collapses while entropy blows up
        s["reward_mean"][ONSET:] *= 0.1
        s["entropy"][ONSET:] *= 16


@pytest.mark.parametrize("rule_id", ["P3", "P4", "SLOW", "P9", "DIV"])
def test_an_abrupt_symptom_is_alerted_within_one_eval_interval(rule_id: str) -> None:
    # Issue 6: graded persistence lets one block far past the threshold (every point of it)
    # carry the evidence, so a step change is known one evaluation interval after it begins.
    s = base()
    _abrupt(rule_id, s)
    f = next(f for f in _judge(s).findings if f.id == rule_id)
    assert f.detected_step is not None and f.onset_step is not None
    assert f.detected_step - ONSET <= HP["eval_steps"], (f.detected_step, f.evidence[0].summary)
    assert abs(f.onset_step - ONSET) <= HP["eval_steps"] // 2
