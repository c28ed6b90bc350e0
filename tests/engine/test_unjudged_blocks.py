"""Long runs through the offline path's rule masks and its blocks folded at once: where every
rule surely gives the verdict it gave last (by its leaves' screens, or its metrics still not
logged), push_columns skips the rule, and where that holds for every rule it folds whole spans
of blocks without evaluating one. These runs are long enough for both to happen often, with
findings that fire, clear and fire again, NaNs, a late metric and a crash; each is replayed
the three ways of test_same_judgement (its audit proves every skip) with the fold's state
compared too."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from engine_series import HP, base, with_val
from test_same_judgement import _replays

from advisor.types import Run, RunEnding


def _run(s: dict[str, np.ndarray], ending: RunEnding | None = None) -> Run:
    n = len(s["reward_mean"])
    frame = pl.DataFrame({"step": np.arange(1, n + 1), **s})
    sparse = [pl.col(c).fill_nan(None) for c in ("val_reward", "gen_batches") if c in s]
    return Run(frame=frame.with_columns(sparse), source="t", format="t", ending=ending)


def _healthy(n: int) -> dict[str, np.ndarray]:
    """engine_series' healthy run, validated every 20 steps on the reward's curve."""
    s = base(n, seed=3)
    t = np.arange(1, n + 1, dtype=float)
    with_val(s, 20, 0.2 + 0.6 * (1 - np.exp(-t / (0.3 * n))))
    return s


def _episodes(n: int) -> dict[str, np.ndarray]:
    """Truncation past the cap twice (P9 fires, clears, fires again), a NaN burst, entropy
    easing to a floor and back, a metric first logged late."""
    s = _healthy(n)
    for a, b in ((1500, 1800), (3000, 3400)):
        s["truncation_rate"][a:b] = 0.45
    s["grad_norm"][2200:2212] = np.nan
    s["entropy"][3800:4100] *= 0.05
    late = np.full(n, np.nan)
    late[2600:] = 2.0 + np.random.default_rng(5).normal(0, 0.1, n - 2600)
    s["gen_batches"] = late
    return s


CASES = {
    "healthy": (lambda: _healthy(6000), None),
    "episodes": (lambda: _episodes(5000), None),
    "episodes-crashed": (
        lambda: _episodes(5000),
        RunEnding(kind="oom", step=5000, line=None, message="CUDA out of memory"),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_long_runs_judged_alike_with_rules_and_blocks_skipped(name: str) -> None:
    make, ending = CASES[name]
    run = _run(make(), ending)
    (batch, online, *chunked), (screened, masked, unjudged) = _replays(run, HP, {}, seed=11)
    assert online == batch, f"{name}: push step by step differs from judge_run"
    assert chunked == [batch, batch], f"{name}: push_columns in chunks differs from judge_run"
    assert screened > 100 and masked > 1000 and unjudged > 100, "the audit is not vacuous"


def test_episodes_fire_clear_and_fire_again() -> None:
    """The episodes run exercises what a skip must leave alone: findings that fired, cleared
    and fired again, and the run's notes."""
    from advisor.engine import judge_run

    j = judge_run(_run(_episodes(5000)), HP)
    p9 = [f for f in j.findings if f.id == "P9"]
    assert len(p9) == 2 and all(f.cleared_step is not None for f in p9), p9
    assert {"NAN", "P4"} <= {f.id for f in j.findings}


def test_brief_evidence_is_the_evidence_without_its_summary() -> None:
    """Every `brief` detector, asked at every block of a run with episodes, gives with
    `_brief` the evidence it gives without, but for the summary it leaves empty."""
    from advisor.detectors import REGISTRY
    from advisor.engine import Monitor, _leaves

    class Asking(Monitor):
        fired = 0

        def _evaluate(self, end: int, full: bool) -> Any:
            cache: dict[str, Any] = {}
            plans = {id(p): p for r in self._rules for p in map(self._plan, _leaves(r.when))}
            for plan in plans.values():
                if not REGISTRY[plan.leaf.detector].brief or plan.per or plan.rounds:
                    continue
                for name in plan.names:
                    s = self._series(name, cache)
                    if s is None:
                        continue
                    whole = plan.fn(s, plan.params)
                    brief = plan.fn(s, {**plan.params, "_brief": True})
                    if whole is None:
                        assert brief is None
                        continue
                    assert brief is not None and brief.summary == "" and whole.summary
                    assert brief.to_dict() == {**whole.to_dict(), "summary": ""}
                    self.fired += 1
            return super()._evaluate(end, full)

    mon = Asking(HP)
    s = _episodes(5000)
    for i in range(5000):
        sparse = {"val_reward", "gen_batches"}  # NaN there: not logged at that step
        mon.push(i + 1, {k: float(v[i]) for k, v in s.items()
                         if k not in sparse or not np.isnan(v[i])})  # fmt: skip
    assert mon.fired > 500
