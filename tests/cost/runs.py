"""Runs written as verl's file logger writes them, for the cost and forecast tests."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path


def write_run(
    path: Path,
    steps: int = 200,
    zero_grad_from: int | None = None,
    zero_std: float | None = None,
    entropy_tau: float | None = None,
    step_time: float | None = 60.0,
    seed: int = 0,
) -> Path:
    """A verl JSONL run of `steps` steps: a rising reward; grad_norm exactly 0 on every other
    step after `zero_grad_from` (the even ones); `frac_reward_zero_std` at `zero_std`; entropy
    1.0 x exp(-step / entropy_tau) (x a 2 % noise) when `entropy_tau`, else a flat 0.7;
    `timing_s/step` at `step_time` seconds exactly."""
    rng = random.Random(seed)
    with path.open("w") as fh:
        for s in range(1, steps + 1):
            data: dict[str, float] = {
                "critic/rewards/mean": 0.2 + 0.4 * (1 - math.exp(-s / 120)) + rng.gauss(0, 0.02),
                "actor/kl_loss": 0.002 + rng.gauss(0, 0.0002),
                "actor/grad_norm": 0.3 + rng.gauss(0, 0.03),
                "actor/entropy": 0.7 + rng.gauss(0, 0.01),
                "response_length/mean": 500 + rng.gauss(0, 10),
            }
            if zero_grad_from is not None and s > zero_grad_from and s % 2 == 0:
                data["actor/grad_norm"] = 0.0
            if zero_std is not None:
                data["frac_reward_zero_std"] = zero_std
            if entropy_tau is not None:
                data["actor/entropy"] = math.exp(-s / entropy_tau) * (1 + rng.gauss(0, 0.02))
            if step_time is not None:
                data["timing_s/step"] = step_time
            fh.write(json.dumps({"step": s, "data": data}) + "\n")
    return path
