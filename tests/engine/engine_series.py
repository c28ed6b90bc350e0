"""Small deterministic series for the engine tests: a healthy base run and one modifier per
symptom (our own fixtures, independent of the synthetic corpus generator)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

HP: dict[str, Any] = {
    "algorithm": "grpo",
    "kl_loss_coef": 0.04,
    "learning_rate": 2e-6,
    "batch_size": 64,
    "n_rollouts": 8,
    "ppo_mini_batch_size": 16,
    "max_length": 4096,
    "max_prompt_length": 1024,
    "eval_steps": 20,
    "n_epochs": 2,
}


def base(n: int = 400, seed: int = 0, noise: float = 0.02) -> dict[str, np.ndarray]:
    """A healthy run: reward rising to a plateau, KL growing and levelling off, entropy easing."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1, dtype=float)
    reward = 0.2 + 0.6 * (1 - np.exp(-t / (0.3 * n))) + rng.normal(0, noise, n)
    p = np.clip(reward, 0.01, 0.99)
    return {
        "reward_mean": reward,
        "reward_std": np.sqrt(p * (1 - p)),
        "kl_ref": 0.03 * (1 - np.exp(-t / (0.3 * n))) * np.exp(rng.normal(0, 0.1, n)),
        "ppo_kl": 5e-4 + rng.normal(0, 3e-4, n),
        "grad_norm": 0.5 * np.exp(rng.normal(0, 0.15, n)),
        "entropy": 0.8 * (0.6 + 0.4 * np.exp(-t / (0.5 * n))) * np.exp(rng.normal(0, 0.03, n)),
        "truncation_rate": np.clip(0.01 + rng.normal(0, 0.004, n), 0, 1),
        "response_length": 600 * np.exp(rng.normal(0, 0.03, n)),
        "rollout_time": 30 * np.exp(rng.normal(0, 0.05, n)),
        "zero_std_frac": np.clip(p**8 + (1 - p) ** 8 + rng.normal(0, 0.02, n), 0, 1),
        "val_reward": np.full(n, np.nan),
    }


def with_val(s: dict[str, np.ndarray], every: int, shape: np.ndarray | None = None) -> None:
    """Validation every `every` steps, tracking the train reward (or `shape`)."""
    ref = shape if shape is not None else s["reward_mean"]
    rng = np.random.default_rng(7)
    idx = np.arange(every - 1, len(ref), every)
    s["val_reward"][idx] = ref[idx] - 0.02 + rng.normal(0, 0.005, len(idx))


def rows(s: dict[str, np.ndarray], first: int = 1) -> Iterator[tuple[int, dict[str, Any]]]:
    """(step, {metric: value}) rows; NaN in val_reward means "not logged at this step"."""
    n = len(next(iter(s.values())))
    for i in range(n):
        row: dict[str, Any] = {}
        for k, v in s.items():
            x = float(v[i])
            if k == "val_reward" and np.isnan(x):
                continue
            row[k] = x
        yield first + i, row


# ----------------------------------------------------------------------------- symptom cases
ONSET = 200  # where each injected symptom starts (n = 400, eval_steps 20: warm-up 60)


def _ramp(n: int, width: float) -> np.ndarray:
    t = np.arange(n - ONSET, dtype=float)
    return np.clip(t / width, 0, 1)


def p1(s: dict[str, np.ndarray]) -> None:
    n = len(s["reward_mean"])
    rng = np.random.default_rng(1)
    s["reward_mean"] = 0.15 + rng.normal(0, 0.01, n)
    s["ppo_kl"] = rng.normal(0, 2e-6, n)
    s["grad_norm"] = 0.01 * np.exp(rng.normal(0, 0.1, n))
    s["kl_ref"] = 2e-5 * np.exp(rng.normal(0, 0.1, n))


def p2(s: dict[str, np.ndarray]) -> None:
    n = len(s["reward_mean"])
    t = np.arange(n - ONSET, dtype=float)
    s["reward_mean"][ONSET:] = 0.5 + 0.2 * np.sin(2 * np.pi * t / 24)


def p3(s: dict[str, np.ndarray]) -> None:
    n = len(s["kl_ref"])
    s["kl_ref"][ONSET:] = s["kl_ref"][ONSET] * 200 ** _ramp(n, 60)


def kl0(s: dict[str, np.ndarray]) -> None:
    n = len(s["reward_mean"])
    rng = np.random.default_rng(2)
    s["reward_mean"] = 0.2 + rng.normal(0, 0.01, n)
    s["kl_ref"] = 5e-6 * np.exp(rng.normal(0, 0.2, n))


def p4(s: dict[str, np.ndarray]) -> None:
    n = len(s["entropy"])
    s["entropy"][ONSET:] *= 0.03 + 0.97 * np.exp(-np.arange(n - ONSET) / 15)


def slow(s: dict[str, np.ndarray]) -> None:
    n = len(s["rollout_time"])
    s["rollout_time"][ONSET:] *= 1 + 3 * _ramp(n, 40)


def p9(s: dict[str, np.ndarray]) -> None:
    n = len(s["truncation_rate"])
    s["truncation_rate"][ONSET:] = 0.01 + 0.4 * _ramp(n, 30)


def p6(s: dict[str, np.ndarray]) -> None:
    n = len(s["reward_mean"])
    shape = s["reward_mean"].copy()
    # A fall of ~0.25 (about 6 of this series' noise sigmas): P6 discounts the excess the best
    # of n noisy evaluations has anyway, so a 3-sigma dip is no longer a decline (issue 4).
    shape[ONSET:] = shape[ONSET] - 0.25 * np.arange(n - ONSET) / (n - ONSET)
    with_val(s, 20, shape)


def nan(s: dict[str, np.ndarray]) -> None:
    s["grad_norm"][ONSET : ONSET + 12] = np.nan


def div(s: dict[str, np.ndarray]) -> None:
    n = len(s["reward_mean"])
    fall = _ramp(n, 8)
    s["reward_mean"][ONSET:] = s["reward_mean"][ONSET] * (1 - 0.9 * fall)
    s["entropy"][ONSET:] *= 1 + 15 * fall
    s["truncation_rate"][ONSET:] = 0.9 * fall


def dapo_long(s: dict[str, np.ndarray]) -> None:
    s["response_length"][ONSET:] = 5000.0


def dapo_zstd(s: dict[str, np.ndarray]) -> None:
    s["zero_std_frac"][ONSET:] = 0.7


def dapo_ent(s: dict[str, np.ndarray]) -> None:
    n = len(s["entropy"])
    s["entropy"][ONSET:] = s["entropy"][ONSET] * (1 - 0.6 * np.arange(n - ONSET) / (n - ONSET))


def ref(s: dict[str, np.ndarray]) -> None:
    """KL ~1 nat a token from step 1, never growing: the reference is another model."""
    n = len(s["kl_ref"])
    s["kl_ref"] = 1.0 * np.exp(np.random.default_rng(4).normal(0, 0.05, n))


def waste(s: dict[str, np.ndarray]) -> None:
    """Every other step with a gradient of exactly 0 (its groups all scored alike)."""
    s["grad_norm"][ONSET::2] = 0.0


# id -> (modifier, extra hyperparameters, tolerance on the onset in steps or None)
CASES: dict[str, tuple[Callable[[dict[str, np.ndarray]], None], dict[str, Any], int | None]] = {
    "P1": (p1, {}, None),
    "P2": (p2, {}, 40),
    "P3": (p3, {}, 40),
    "KL0": (kl0, {}, None),
    "P4": (p4, {}, 40),
    "SLOW": (slow, {}, 40),
    "P9": (p9, {}, 40),
    "P6": (p6, {}, 40),
    "NAN": (nan, {}, 40),
    "DIV": (div, {}, 40),
    "DAPO-LONG": (dapo_long, {}, 40),
    "DAPO-ZSTD": (dapo_zstd, {}, 40),
    "DAPO-ENT": (dapo_ent, {}, None),
    "REF": (ref, {}, None),  # from step 1, not ONSET
    "WASTE": (waste, {}, 40),
}
