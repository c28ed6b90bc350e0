"""Fixtures for remedy/report tests: a small local action spec (the guide's §4 rows) and
hand-made findings, so these tests do not depend on the engine's rulebook."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from advisor import schema
from advisor.book.symptoms import ActionSpec
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


def rule_actions(action: dict[str, Any], fallback: dict[str, Any] | None) -> SimpleNamespace:
    """What the remedy reads of a rule: its action specs (the rulebook's own model)."""
    return SimpleNamespace(
        action=schema.validate(ActionSpec, action),
        fallback=schema.validate(ActionSpec, fallback) if fallback is not None else None,
        fallback_first=[],
        fallback_if_only=[],
    )


def make_rules() -> SimpleNamespace:
    """A stand-in for the rulebook: the rules' actions by id."""
    return SimpleNamespace(by_id={k: rule_actions(**v) for k, v in SPECS.items()})


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


def make_run(steps: int = 400, val_every: int = 50, nan_at: int | None = None):
    """A small synthetic run: reward plateaus, entropy decays, val_reward every `val_every`."""
    import math

    import polars as pl

    from advisor.types import Run, RunEnding

    xs = list(range(1, steps + 1))
    reward = [0.3 + 0.1 * (1 - math.exp(-s / 40)) + 0.01 * math.sin(s) for s in xs]
    entropy = [1.0 * math.exp(-s / 150) for s in xs]
    if nan_at is not None:
        reward[nan_at - 1] = float("nan")
    val = [
        0.4 + (0.1 if s == 150 else 0.0) + 0.0001 * s if s % val_every == 0 else None for s in xs
    ]
    frame = pl.DataFrame(
        {"step": xs, "reward_mean": reward, "entropy": entropy, "val_reward": val},
        schema={
            "step": pl.Int64,
            "reward_mean": pl.Float64,
            "entropy": pl.Float64,
            "val_reward": pl.Float64,
        },
    )
    return Run(
        frame=frame,
        source="runs/demo.jsonl",
        format="jsonl",
        config_hints={"eval_steps": 50},
        ending=RunEnding(kind="completed", step=steps),
        warnings=["line 7: bad JSON"],
    )


class Judgement:
    def __init__(self, findings, status="issues", warmup_steps=150, assumptions=()):
        self.findings = list(findings)
        self.status = status if findings or status != "issues" else "healthy"
        self.warmup_steps = warmup_steps
        self.assumptions = list(assumptions)


JOB_YAML = """\
# my job: comments and order must survive the patch
job_name: "demo"
model: "qwen3.5-9b"
mode: "reinforcement"
training:
  hyper_parameters:
    algorithm: "grpo"          # token-level
    kl_loss_coef: 0.001
    learning_rate: 2.0e-06     # conservative
    lr_scheduler_type: "linear"
    lr_warmup_steps: -1
    n_epochs: 3
    batch_size: 64
    n_rollouts: 8
    ppo_mini_batch_size: 16
    max_length: 8192
    max_prompt_length: 1024
    eval_steps: 20
    save_steps: 40
    save_strategy: "steps"
    save_total_limit: 3
"""


def write_verl_jsonl(path, steps: int = 400, kind: str = "healthy", seed: int = 0) -> None:
    """A verl file-logger JSONL. kind: healthy | kl_blowup (from step 200) | nan_crash."""
    import json
    import math
    import random

    rng = random.Random(seed)
    with open(path, "w") as fh:
        for s in range(1, steps + 1):
            late = s > 200
            reward = 0.2 + 0.4 * (1 - math.exp(-s / 120)) + rng.gauss(0, 0.02)
            kl = 0.002 + rng.gauss(0, 0.0002)
            grad = 0.3 + rng.gauss(0, 0.03)
            if kind == "kl_blowup" and late:
                kl *= math.exp((s - 200) / 25)
            if kind == "nan_crash" and late:
                reward, grad, kl = 0.0, float("nan"), float("nan")
            data = {
                "critic/rewards/mean": reward,
                "actor/kl_loss": kl,
                "actor/ppo_kl": abs(rng.gauss(0.001, 0.0002)),
                "actor/grad_norm": grad,
                "actor/entropy": 0.7 + rng.gauss(0, 0.01),
                "actor/pg_clipfrac": abs(rng.gauss(0.002, 0.0003)),
                "response_length/mean": 500 + rng.gauss(0, 10),
                "response_length/clip_ratio": abs(rng.gauss(0.005, 0.001)),
                "timing_s/step": 60 + rng.gauss(0, 1),
                "timing_s/gen": 25 + rng.gauss(0, 0.5),
            }
            if s % 20 == 0:
                data["val-core/gsm8k/reward/mean@1"] = reward - 0.05
            fh.write(json.dumps({"step": s, "data": data}) + "\n")  # NaN stays a bare NaN


def builtin_anti_patterns(hp: Mapping[str, Any]) -> set[str]:
    """A fast stand-in for `advisor.static.check` (knowledge.md §2.4 anti-patterns) so remedy
    tests run without the static rules. Items are "rule:param", as static_anti_patterns gives."""
    out: set[str] = set()
    lr, kl, algo = hp.get("learning_rate"), hp.get("kl_loss_coef"), hp.get("algorithm")
    if isinstance(lr, (int, float)) and lr >= 5e-5:
        out.add("lr-sft-level:learning_rate")
    if kl == 0 and algo not in (None, "dapo"):
        out |= {"kl-zero-not-dapo:kl_loss_coef", "kl-zero-not-dapo:algorithm"}
    if isinstance(hp.get("n_epochs"), int) and hp["n_epochs"] >= 10:
        out.add("too-many-epochs:n_epochs")
    if hp.get("n_rollouts") == 1:
        out.add("single-rollout:n_rollouts")
    if isinstance(hp.get("max_length"), int) and hp["max_length"] >= 32768:
        out.add("max-length-32k:max_length")
    iu = hp.get("inference_gpu_memory_utilization")
    if isinstance(iu, (int, float)) and iu >= 0.95:
        out.add("inference-memory-095:inference_gpu_memory_utilization")
    if hp.get("tensor_model_parallel_size") == 8:
        out.add("tp-8:tensor_model_parallel_size")
    return out
