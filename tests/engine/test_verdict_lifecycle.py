"""The verdict follows the run's outcome: an episode that cleared counts as recovered only when
the run learnt (rules with `recovery: learnt`), a borderline finding alone never sets the
verdict, and a run that ended abnormally is crashed."""

from __future__ import annotations

import numpy as np
import polars as pl
from engine_series import HP, base

from advisor.engine import Monitor, judge_run
from advisor.types import Run, RunEnding, Severity


def _judge(s: dict[str, np.ndarray], hp: dict | None = None, ending: RunEnding | None = None):
    n = len(s["reward_mean"])
    cols = {k: v for k, v in s.items() if k != "val_reward"}
    frame = pl.DataFrame({"step": np.arange(1, n + 1), **cols})
    return judge_run(Run(frame=frame, source="t", format="t", ending=ending), hp or HP)


def _collapse_and_back(level: float, seed: int = 0, n: int = 300) -> dict[str, np.ndarray]:
    """A policy that collapses at step 4 (reward 0.17 -> 0, one fixed answer cut at the cap, no
    gradient), then from step 150 comes back to a reward of `level`."""
    s = base(n, seed)
    rng = np.random.default_rng(seed + 50)
    s["reward_mean"][:] = 0.17 + rng.normal(0, 0.02, n)
    down = slice(3, 150)
    s["reward_mean"][down] = 0.0
    s["reward_std"][down] = 0.0
    s["entropy"][down] = 0.003
    s["grad_norm"][down] = 0.0
    s["truncation_rate"][down] = 1.0
    s["zero_std_frac"][down] = 1.0
    s["reward_mean"][150:] = level + rng.normal(0, 0.02, n - 150)
    return s


def test_back_from_a_collapse_only_to_the_untrained_level_is_no_recovery() -> None:
    # the reward comes back to the random policy's 0.17, not above it: DIV keeps its severity
    for seed in (0, 1, 2):
        j = _judge(_collapse_and_back(0.17, seed))
        div = [f for f in j.findings if f.id == "DIV"]
        assert div and div[0].cleared_step is not None, seed
        assert div[0].severity == Severity.error and div[0].recovered_from is None, seed
        assert j.status == "issues"
        assert any("no higher than its untrained level" in a for a in j.assumptions)


def test_back_from_a_collapse_to_a_learnt_level_is_a_recovery() -> None:
    # the same collapse, then a reward of 0.6, well above every point of the first block
    j = _judge(_collapse_and_back(0.6))
    div = [f for f in j.findings if f.id == "DIV"]
    assert div and all(f.severity == Severity.info for f in div)
    assert div[0].recovered_from == Severity.error


def _low_alarm_run() -> dict[str, np.ndarray]:
    """A healthy run but for 11 % of its responses cut at the cap, every step: P9's level of
    10 % just passed (x1.1 of it, one piece of evidence: low confidence)."""
    s = base(400, 0)
    s["truncation_rate"][:] = 0.11 + np.random.default_rng(1).normal(0, 0.002, 400)
    return s


def test_low_confidence_alone_does_not_set_the_verdict() -> None:
    j = _judge(_low_alarm_run())
    p9 = [f for f in j.findings if f.id == "P9"]
    assert p9 and all(f.confidence == "low" for f in p9)
    assert all(f.severity == Severity.info for f in p9)
    assert j.status == "healthy"
    said = "P9 truncation from step 1 rests on one piece of evidence"
    assert any(said in a for a in j.assumptions)


def test_a_sure_level_keeps_its_severity() -> None:
    s = base(400, 0)
    s["truncation_rate"][:] = 0.3  # x3 of the level: medium confidence
    j = _judge(s)
    p9 = [f for f in j.findings if f.id == "P9"]
    assert p9 and p9[0].confidence != "low" and p9[0].severity == Severity.warning
    assert j.status == "issues"


def test_low_confidence_beside_a_sure_alarm_keeps_its_severity() -> None:
    s = _low_alarm_run()
    s["kl_ref"][200:] *= np.minimum(200.0, 200.0 ** (np.arange(200) / 60))  # P3, ongoing
    j = _judge(s)
    p9 = [f for f in j.findings if f.id == "P9"]
    assert p9 and p9[0].confidence == "low" and p9[0].severity == Severity.warning
    assert any(f.id == "P3" and f.confidence != "low" for f in j.findings)
    assert not any("rests on one piece of evidence" in a for a in j.assumptions)


def test_a_run_that_ended_in_a_traceback_is_crashed() -> None:
    s = base(200, 0)
    crash = RunEnding(kind="traceback", step=200, message="ValueError: reward service")
    assert _judge(s, ending=crash).status == "crashed"
    assert _judge(s, ending=RunEnding(kind="completed", step=200)).status == "healthy"
    # the online Monitor says the same once closed with that ending
    mon = Monitor(HP)
    for i in range(200):
        mon.push(i + 1, {k: float(v[i]) for k, v in s.items() if k != "val_reward"})
    mon.close(crash)
    assert mon.status == "crashed"
