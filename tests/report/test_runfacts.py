"""The run facts the remedy sizes and chooses its steps from (advisor.runfacts), on recorded
live-fire runs (real TRL GRPOTrainer logs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.api import _with_run_file
from advisor.ingest import load_run
from advisor.runfacts import run_facts

LOOP = Path(__file__).resolve().parents[1] / "livefire" / "loop"


def facts(case: str, seed: int = 1234) -> dict:
    """The facts `diagnose RUN_DIR` sizes from: the log joined to the callback's run file."""
    state = LOOP / case / f"s{seed}" / "r0" / "trainer_state.json"
    return run_facts(_with_run_file(state, load_run(state)))


@pytest.mark.parametrize("seed", [1234, 1236])
def test_a_rate_ten_times_too_high_throws_the_policy_off_and_back(seed: int) -> None:
    """lr 10 x the working one: entropy 2.5 -> under 1.25 within 20 of 200 steps, back near
    2.5 over the last quarter."""
    got = facts("lr-high", seed)
    assert 0 < got["thrown_back"] <= 0.1


@pytest.mark.parametrize("case", ["sane", "lr-tiny", "lr-huge-clip", "beta-huge", "cap-tiny"])
def test_runs_that_learnt_stood_still_or_collapsed_were_not_thrown_back(case: str) -> None:
    assert "thrown_back" not in facts(case)


def test_the_group_size_comes_from_the_run() -> None:
    assert facts("gen-two")["n_rollouts"] == 2
    assert facts("sane")["n_rollouts"] == 8
