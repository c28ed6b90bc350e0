"""Long real curves judged as their shapes say (issue 27): the warm-up capped by the logged
run, a collapse finished inside the warm-up, in-reward KL, a reference model that does not
match, the compute wasted on zero-gradient steps and groups that score alike."""

from __future__ import annotations

import numpy as np
import polars as pl
from engine_series import HP, base

from advisor.engine import Monitor, judge_run
from advisor.types import Run


def _run(s: dict[str, np.ndarray], first: int = 1, every: int = 1) -> Run:
    n = len(next(iter(s.values())))
    cols: dict[str, object] = {"step": np.arange(first, first + n * every, every)}
    cols.update(s)
    frame = pl.DataFrame(cols)
    if "val_reward" in frame.columns:
        frame = frame.with_columns(pl.col("val_reward").fill_nan(None))
    return Run(frame=frame, source="t", format="t")


# ----------------------------------------------------------------------------- warm-up cap
def test_the_warm_up_is_capped_by_the_logged_run() -> None:
    hp = {**HP, "eval_steps": 300}  # a verl agent run validating every 300 steps
    assert Monitor(hp).warmup_steps == 900  # online, the run's length unknown: the guide's wait
    mon = Monitor(hp, expected_steps=192)
    assert mon.warmup_steps == 58  # 30 % of 192, rounded up
    assert any("capped at 58 steps" in a and "900" in a for a in mon.assumptions)
    assert Monitor(hp, expected_steps=699).warmup_steps == 210
    # never below the rulebook's minimum, and a shorter wait is left alone
    assert Monitor(hp, expected_steps=60).warmup_steps == 30
    assert Monitor(HP, expected_steps=400).warmup_steps == 60
    assert not any("capped" in a for a in Monitor(HP, expected_steps=400).assumptions)


def test_a_run_that_learns_over_192_steps_is_judged_not_insufficient() -> None:
    s = base(192, seed=5)
    j = judge_run(_run(s), {**HP, "eval_steps": 300})
    # the warm-up ends on a block boundary (9-step blocks) past 30 % of the run
    assert j.status == "healthy" and 58 <= j.warmup_steps <= 66
    assert any(f"capped at {j.warmup_steps} steps" in a for a in j.assumptions)
