"""A log that begins well past step 1 is a resumed run's: "never rose from its start" is not
judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.engine import Monitor, judge_run
from advisor.ingest import load_run


@pytest.mark.parametrize(
    ("first", "hp", "late"),
    [
        (1, {}, False),  # verl: step 1
        (103, {}, True),  # a verl log resumed from a checkpoint at 102
        (50, {"logging_steps": 50}, False),  # TRL's first entry at its logging interval
        (250, {"logging_steps": 50}, True),
    ],
)
def test_late_start_from_the_first_step_pushed(first: int, hp: dict, late: bool) -> None:
    mon = Monitor({"eval_steps": 10, **hp})
    mon.push(first, {"reward_mean": 0.5})
    assert mon._pred["late_start"] is late


def test_a_resumed_plateau_is_not_p1_for_never_rising(tmp_path: Path) -> None:
    # The same flat low reward with a KL to the reference that is not growing (TRL's weak P1
    # sign: it logs no ppo_kl), logged from step 1 or from step 103 on: the first is P1 (stuck
    # from the start); the second shows no start to rise from.
    def run(first: int) -> list[str]:
        path = tmp_path / f"from{first}.jsonl"
        rows = [
            {"step": s, "data": {"critic/rewards/mean": 0.3 + 0.01 * ((s * 7) % 5 - 2),
                                 "actor/kl_loss": 0.002, "actor/grad_norm": 0.5}}
            for s in range(first, first + 400)
        ]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        hp = {"eval_steps": 10, "algorithm": "grpo", "batch_size": 32, "n_rollouts": 8,
              "ppo_mini_batch_size": 64}
        return [f.id for f in judge_run(load_run(path), hp).findings]

    assert "P1" in run(1)
    assert "P1" not in run(103)
