"""A generated run, the one object the generator makes and the writers write, with the names
its canonical series take in verl's and TRL's logs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import polars as pl

VERL_NAMES: dict[str, str] = {
    "reward_mean": "critic/rewards/mean",
    "ppo_kl": "actor/ppo_kl",
    "kl_ref": "actor/kl_loss",
    "grad_norm": "actor/grad_norm",
    "entropy": "actor/entropy",
    "truncation_rate": "response_length/clip_ratio",
    "prompt_truncation_rate": "prompt_length/clip_ratio",
    "response_length": "response_length/mean",
    "pg_clipfrac": "actor/pg_clipfrac",
    "lr": "actor/lr",
    "step_time": "timing_s/step",
    "rollout_time": "timing_s/gen",
    "memory_gb": "perf/max_memory_allocated_gb",
}

TRL_NAMES: dict[str, str] = {
    "reward_mean": "reward",
    "reward_std": "reward_std",
    "kl_ref": "kl",
    "grad_norm": "grad_norm",
    "entropy": "entropy",
    "truncation_rate": "completions/clipped_ratio",
    "response_length": "completions/mean_length",
    "pg_clipfrac": "clip_ratio/region_mean",
    "lr": "learning_rate",
    "step_time": "step_time",
    "zero_std_frac": "frac_reward_zero_std",
    "loss": "loss",
}


@dataclass
class GeneratedRun:
    """One synthetic run: canonical series, its platform hyperparameters and its label."""

    run_id: str
    family: str
    variant: str
    framework: str  # "verl" | "trl"
    fmt: str  # "verl-console" | "verl-jsonl" | "wandb-csv" | "trl-state"
    steps: np.ndarray  # optimizer steps, int
    series: dict[str, np.ndarray]  # canonical name (+ "memory_gb") -> float array, NaN = absent
    val_steps: np.ndarray  # steps with a validation point (0 included)
    val: np.ndarray
    hp: dict[str, Any]
    label: dict[str, Any]
    knobs: dict[str, Any]
    ending: dict[str, Any] | None = None  # {"kind": "oom", "step": N} when the run crashed
    console_style: str = "full"  # "full" | "np" | "3dec"
    logging_steps: int = 1  # TRL averages train logs over this many steps
    val_name: str = "val-core/openai/gsm8k/reward/mean@1"
    extras: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def frame(self) -> pl.DataFrame:
        """Canonical frame (one row per step) plus the verl names of the same columns."""
        import polars as pl

        cols: dict[str, Any] = {"step": self.steps.astype(np.int64)}
        for name, arr in self.series.items():
            cols[name] = arr
        val = np.full(len(self.steps), np.nan)
        idx = np.searchsorted(self.steps, self.val_steps)
        last = len(self.steps) - 1
        ok = (idx <= last) & (self.steps[np.minimum(idx, last)] == self.val_steps)
        val[idx[ok]] = self.val[ok]
        cols["val_reward"] = val
        for name, arr in list(cols.items()):
            if name in VERL_NAMES and VERL_NAMES[name] not in cols:
                cols[VERL_NAMES[name]] = arr
        return pl.DataFrame(cols).with_columns(pl.col(pl.Float64).fill_nan(None))
