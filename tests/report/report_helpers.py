"""Fixtures for remedy/report tests: a small local action spec (the guide's §4 rows) and
hand-made findings, so these tests do not depend on the engine's rulebook."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from advisor.types import Evidence, Finding, Severity

SPECS: dict[str, dict[str, Any]] = {
    "P1": {
        "action": {
            "advice": "raise learning_rate",
            "changes": [{"param": "learning_rate", "op": "multiply", "range": [1.5, 2.0]}],
        },
        "fallback": {"advice": "check the reward function and the data", "changes": []},
    },
    "P2": {
        "action": {
            "advice": "lower learning_rate and raise batch_size",
            "changes": [
                {"param": "learning_rate", "op": "multiply", "range": [0.5, 0.5]},
                {"param": "batch_size", "op": "multiply", "range": [2, 2]},
            ],
        },
        "fallback": {
            "advice": "raise n_rollouts",
            "changes": [{"param": "n_rollouts", "op": "multiply", "range": [2, 2]}],
        },
    },
    "P3": {
        "action": {
            "advice": "raise kl_loss_coef",
            "changes": [{"param": "kl_loss_coef", "op": "multiply", "range": [5, 10]}],
        },
        "fallback": {
            "advice": "lower learning_rate",
            "changes": [{"param": "learning_rate", "op": "multiply", "range": [0.5, 0.5]}],
        },
    },
    "KL0": {
        "action": {
            "advice": "lower kl_loss_coef",
            "changes": [{"param": "kl_loss_coef", "op": "multiply", "range": [0.1, 0.1]}],
        },
        "fallback": {
            "advice": "switch to DAPO",
            "changes": [{"param": "algorithm", "op": "set", "value": "dapo"}],
        },
    },
    "P4": {
        "action": {
            "advice": "switch to DAPO (Clip-Higher)",
            "changes": [{"param": "algorithm", "op": "set", "value": "dapo"}],
        },
        "fallback": {
            "advice": "raise n_rollouts",
            "changes": [{"param": "n_rollouts", "op": "multiply", "range": [2, 2]}],
        },
    },
    "SLOW": {
        "action": {
            "advice": "fewer rollouts",
            "changes": [{"param": "n_rollouts", "op": "multiply", "range": [0.5, 0.5]}],
        },
        "fallback": {"advice": "more concurrency", "changes": []},
    },
    "OOM": {
        "action": {
            "advice": "halve ppo_mini_batch_size",
            "changes": [{"param": "ppo_mini_batch_size", "op": "multiply", "range": [0.5, 0.5]}],
        },
        "fallback": {
            "advice": "lower max_length",
            "changes": [{"param": "max_length", "op": "add", "range": [-2048, -2048]}],
        },
    },
    "P9": {
        "action": {
            "advice": "raise max_length",
            "changes": [{"param": "max_length", "op": "add", "range": [2048, 2048]}],
        },
        "fallback": {"advice": "check max_prompt_length", "changes": []},
    },
    "P6": {
        "action": {
            "advice": "fewer epochs",
            "changes": [{"param": "n_epochs", "op": "add", "range": [-1, -2]}],
        },
        "fallback": {
            "advice": "save_strategy=steps and stop early",
            "changes": [{"param": "save_strategy", "op": "set", "value": "steps"}],
        },
    },
}


def make_rules() -> SimpleNamespace:
    return SimpleNamespace(by_id={k: SimpleNamespace(**v) for k, v in SPECS.items()})


HP: dict[str, Any] = {
    "algorithm": "gspo",
    "kl_loss_coef": 0.001,
    "learning_rate": 2e-6,
    "lr_scheduler_type": "linear",
    "lr_warmup_steps": -1,
    "n_epochs": 3,
    "batch_size": 64,
    "n_rollouts": 8,
    "ppo_mini_batch_size": 8,
    "max_length": 8192,
    "max_prompt_length": 1024,
    "eval_steps": 10,
    "save_steps": 100,
    "save_strategy": "steps",
    "save_total_limit": 3,
}


def finding(
    fid: str,
    severity: str = "error",
    priority: int = 10,
    strength: float = 0.5,
    onset: int | None = 200,
) -> Finding:
    return Finding(
        id=fid,
        name=fid.lower() + "-name",
        severity=Severity(severity),
        priority=priority,
        strength=strength,
        onset_step=onset,
        evidence=[
            Evidence(
                metric="reward_mean",
                detector="plateau",
                window=(150, 400),
                statistic={"tau": 0.01},
                effect_size=0.1,
                summary="reward_mean flat at 0.31 from step 150 to 400",
            )
        ],
        causes=["learning rate too small"],
    )
