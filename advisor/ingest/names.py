"""Framework metric keys -> the canonical vocabulary of contract.md.

One table for every framework of `docs/metrics.md` (verl, TRL, OpenRLHF, ROLL, slime,
NeMo-RL, AReaL). Each canonical name lists its raw keys best first: when a run logs several
(verl's critic/rewards/mean and critic/score/mean), the first present wins. Validation keys that
carry a dataset name (val-core/<ds>/reward/mean@N ...) are matched by pattern and averaged.

`canonical_name` and `canonicalize` sit on the online hot path (one call per logged step), so
lookups are cached per raw key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

# canonical -> raw keys, best first. Sources: contract.md "Metric names", metrics.md table.
ALIASES: dict[str, tuple[str, ...]] = {
    "reward_mean": (
        "critic/rewards/mean",  # verl: after the in-reward KL penalty
        "critic/score/mean",  # verl, ROLL: raw score
        "reward",  # TRL, OpenRLHF
        "rollout/reward_mean",  # OpenRLHF
        "rollout/raw_reward",  # slime
        "train/reward",  # NeMo-RL (and TRL through W&B)
        "ppo_actor/task_reward/avg",  # AReaL
        "objective/rlhf_reward",  # TRL PPOTrainer: score minus the KL penalty
        "objective/scores",  # TRL PPOTrainer: the reward model's score
        "Reward",  # MiniMind
    ),
    "reward_std": ("critic/rewards/std", "critic/score/std", "reward_std", "train/reward_std"),
    "ppo_kl": ("actor/ppo_kl", "policy/approxkl_avg"),  # TRL PPOTrainer: approx KL old/new
    "vf_loss": ("critic/vf_loss", "loss/value_avg"),  # a PPO critic (verl, TRL PPOTrainer)
    "critic_grad_norm": ("critic/grad_norm",),
    "kl_ref": (
        "actor/kl_loss",  # verl, ROLL
        "kl",  # TRL (only when beta > 0), OpenRLHF
        "actor/reward_kl_penalty",  # verl in-reward KL
        "critic/kl",  # verl <= v0.3, ROLL
        "train/kl_loss",  # slime
        "train/kl_penalty",  # NeMo-RL
        "ppo_actor/kl_rewards/avg",  # AReaL
        "objective/kl",  # TRL PPO
        "KL_ref",  # MiniMind
        "train/kl",  # TRL through W&B
    ),
    "grad_norm": (
        "actor/grad_norm",
        "grad_norm",
        "actor_grad_norm",  # OpenRLHF
        "actor_train/grad_norm",  # ROLL
        "train/grad_norm",  # slime, NeMo-RL, TRL through W&B
        "ppo_actor/update/grad_norm",  # AReaL
    ),
    "entropy": (
        "actor/entropy",
        "entropy",  # TRL
        "entropy/mean",  # ms-swift's GRPO (log_entropy; with entropy/max, /min)
        "actor/entropy_loss",  # verl <= v0.4 held the entropy value here
        "entropy_loss",  # OpenRLHF
        "critic/entropy/mean",  # ROLL (0 when not measured: see ZERO_MEANS_MISSING)
        "train/entropy_loss",  # slime
        "train/approx_entropy",  # NeMo-RL
        "ppo_actor/update/entropy/avg",  # AReaL
        "policy/entropy_avg",  # TRL PPOTrainer: per token
        "objective/entropy",  # TRL PPOTrainer: per sequence (summed over its tokens)
        "train/entropy",  # TRL through W&B
    ),
    "truncation_rate": (
        "response_length/clip_ratio",
        "completions/clipped_ratio",
        "rollout/truncated_rate",  # OpenRLHF
        "rollout/truncated_ratio",  # slime
        "train/truncation_rate",  # NeMo-RL
        "ppo_actor/no_eos_ratios/avg",  # AReaL
        "train/completions/clipped_ratio",
    ),
    "prompt_truncation_rate": ("prompt_length/clip_ratio",),
    "gen_batches": ("train/num_gen_batches",),  # verl's DAPO recipe (dynamic sampling)
    "response_length": (
        "response_length/mean",
        "completions/mean_length",
        "completion_length",  # TRL before completions/*
        "rollout/response_length_mean",  # OpenRLHF
        "train/response_length",  # OpenRLHF's status["response_length"] through W&B
        "token/response_length/mean",  # ROLL
        "rollout/response_len/mean",  # slime
        "train/mean_gen_tokens_per_sample",  # NeMo-RL
        "train/completions/mean_length",
        "train/completion_length",
        "Avg Response Len",  # MiniMind's GRPO
        "Avg Len",  # MiniMind's R1-style GRPO
    ),
    "pg_clipfrac": (
        "actor/pg_clipfrac",
        "clip_ratio/region_mean",  # TRL
        "clip_ratio",  # older TRL
        "ppo_clip_ratio",  # OpenRLHF
        "actor/ppo_ratio_clipfrac",  # ROLL
        "train/pg_clipfrac",  # slime
        "ppo_actor/update/clip_ratio/avg",  # AReaL
        "policy/clipfrac_avg",  # TRL PPOTrainer
        "train/clip_ratio/region_mean",
    ),
    "lr": (
        "actor/lr",
        "actor/lr(1e-4)",  # early verl prints the rate in units of 1e-4 (see SCALED)
        "learning_rate",
        "lr",
        "train/lr",
        "train/learning_rate",
        "actor_lr",
        "Learning Rate",  # MiniMind
        "LR",  # MiniMind's R1-style GRPO
    ),
    "step_time": (
        "timing_s/step",
        "timing/step",
        "step_time",
        "train/step_time",
        "tqdm/s_per_it",  # transformers' progress bar, read from a console log
    ),
    "rollout_time": ("timing_s/gen", "timing/gen"),
    "zero_std_frac": ("frac_reward_zero_std", "train/frac_reward_zero_std"),
    "loss": (
        "loss",
        "train/loss",
        "actor/pg_loss",
        "policy_loss",
        "train/pg_loss",
        "loss/policy_avg",  # TRL PPOTrainer
        "Actor Loss",  # MiniMind
    ),
    # what the remedy sizes and words advice with (advisor.runfacts), not symptom metrics
    "terminated_length": (
        "completions/mean_terminated_length",  # TRL: length of the answers that finished
        "train/completions/mean_terminated_length",
    ),
    "clip_low": ("clip_ratio/low_mean", "train/clip_ratio/low_mean"),  # TRL
    "clip_high": ("clip_ratio/high_mean", "train/clip_ratio/high_mean"),  # TRL
    "memory_gb": ("perf/max_memory_allocated_gb",),  # verl, per step
    "rollout_probs_diff": ("training/rollout_probs_diff_mean",),  # verl: train/rollout gap
    "aborted_ratio": ("response/aborted_ratio",),  # verl: rollouts aborted before their end
}

# A row whose only values are an evaluation's is no training step (verl validates at step 0
# before training, TRL's eval_on_start): it is kept, but not counted as a step.
_EVAL_PREFIXES = ("val-", "val/", "val_", "eval_", "eval/", "eval-", "validation/", "test/")
_NEUTRAL_KEYS = frozenset(
    {"step", "epoch", "_step", "_runtime", "_timestamp", "timestamp", "", "Unnamed: 0", "index"}
)  # "": the index column of a W&B / pandas CSV export


def is_eval_key(name: str) -> bool:
    """A key an evaluation writes (val-core/..., eval_loss, val_reward ...)."""
    return name.startswith(_EVAL_PREFIXES)


def is_training_key(name: str) -> bool:
    """Neither an evaluation's key nor a step/time field."""
    return name not in _NEUTRAL_KEYS and not is_eval_key(name)


def is_training_record(keys: Iterable[str]) -> bool:
    """Some key of the record (with a value) is a training one."""
    return any(map(is_training_key, keys))


# KL to the reference that is a penalty inside the reward (PPO with a critic: verl's
# algorithm.use_kl_in_reward, AReaL's kl_rewards), not a term of the loss: its yardstick is
# not the KL loss's (the engine reads which kl_ref alias a run's column came from).
KL_IN_REWARD: frozenset[str] = frozenset(
    {"actor/reward_kl_penalty", "critic/kl", "ppo_actor/kl_rewards/avg"}
)

# Keys whose exact 0 means "not measured" (ROLL logs entropy 0 when it skipped it).
ZERO_MEANS_MISSING: frozenset[str] = frozenset({"critic/entropy/mean"})

# Keys printed in a unit of their own: the value times the factor is the canonical metric
# (early verl logs `actor/lr(1e-4):0.010` for a learning rate of 1e-6).
SCALED: dict[str, float] = {"actor/lr(1e-4)": 1e-4}

# ROLL logs truncation as a count; the rate is count / batch size.
ROLL_TRUNCATION_COUNT = "token/total_response_length/clip"
ROLL_BATCH_SIZE = "system/batch_size"
# ROLL: groups whose rewards are all equal, split in two ratios; their sum is zero_std_frac.
ROLL_ZERO_STD_PARTS = ("group/all_correct_groups_ratio", "group/all_incorrect_groups_ratio")

# Validation: exact keys (a single number per evaluation), best first.
VAL_EXACT: tuple[str, ...] = (
    "validation/data/reward/mean@1",
    "eval_reward",  # TRL
    "eval/reward",  # TRL through W&B
    "val_correct/all/mean",  # ROLL
    "validation/accuracy",  # NeMo-RL
    "eval-rollout/reward",  # AReaL
)
# Validation keys with a dataset name; group 1 is the dataset, group 2 a preference rank.
_VAL_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"^val-core/(.+)/(reward|acc|score)/mean@(\d+)$"),  # verl >= v0.4
    re.compile(r"^val/test_score/(.*)$"),  # verl <= v0.3
    re.compile(r"^validation/(.+)/(reward|acc|score)/mean@(\d+)$"),
    re.compile(r"^eval_(.+)_pass1$"),  # OpenRLHF
)
# slime logs eval/<dataset>; TRL through W&B logs eval/<metric>: these are TRL's, not datasets.
_TRL_EVAL_NAMES = frozenset(
    {
        "loss", "runtime", "samples_per_second", "steps_per_second", "reward_std", "kl",
        "entropy", "epoch", "num_tokens", "frac_reward_zero_std", "completion_length",
        "step_time", "grad_norm", "learning_rate",
    }
)  # fmt: skip
# slime logs beside eval/<dataset> its companions eval/<dataset>-truncated_ratio, -response_len...
_SLIME_EVAL_EXTRA = re.compile(r"-(?:truncated|response|len|time|tokens)")
_VAR_RANK = {"reward": 0, "acc": 1, "score": 2}

_RAW_TO_CANON: dict[str, tuple[str, int]] = {
    raw: (canon, rank) for canon, raws in ALIASES.items() for rank, raw in enumerate(raws)
}
CANONICAL_SET = frozenset(ALIASES) | {"val_reward"}


@lru_cache(maxsize=8192)
def _lookup(raw: str) -> tuple[str, int] | None:
    """(canonical, rank) for a raw key; rank orders the keys of one canonical, lower is better."""
    hit = _RAW_TO_CANON.get(raw)
    if hit is not None:
        return hit
    if raw in CANONICAL_SET:
        return raw, -1  # already canonical (e.g. a flat JSONL written by this tool)
    val = val_rank(raw)
    if val is not None:
        return "val_reward", val
    if raw == ROLL_TRUNCATION_COUNT:
        return "truncation_rate", 50
    for prefix in ("train/", "train_"):  # TRL through W&B / TensorBoard: train/<TRL key>
        if raw.startswith(prefix):
            inner = _RAW_TO_CANON.get(raw[len(prefix) :])
            if inner is not None:
                return inner[0], inner[1] + 100
    return None


def lookup(raw: str) -> tuple[str, int] | None:
    """(canonical name, rank among that name's keys: lower wins) for a raw key, or None."""
    return _lookup(raw)


@lru_cache(maxsize=8192)
def val_rank(raw: str) -> int | None:
    """Preference rank if `raw` is a validation reward key, else None (lower is better)."""
    if raw in VAL_EXACT:
        return VAL_EXACT.index(raw)
    for i, pat in enumerate(_VAL_PATTERNS):
        m = pat.match(raw)
        if m:
            var_rank = _VAR_RANK.get(m.group(2), 0) if m.re.groups >= 2 else 0
            return 10 + 10 * i + var_rank
    name = raw[5:]
    if (
        raw.startswith("eval/")
        and "/" not in name
        and name not in _TRL_EVAL_NAMES
        and not _SLIME_EVAL_EXTRA.search(name)
    ):
        return 60  # slime eval/<dataset>
    return None


def val_dataset(raw: str) -> str:
    """The dataset part of a validation key (the key itself when it names none)."""
    for pat in _VAL_PATTERNS:
        m = pat.match(raw)
        if m:
            return m.group(1)
    return raw[5:] if raw.startswith("eval/") else raw


def canonical_name(raw_key: str) -> str | None:
    """The canonical name (contract.md) of a framework metric key, or None if it has none."""
    hit = _lookup(raw_key)
    return hit[0] if hit else None


def val_groups(keys: Iterable[str]) -> tuple[list[str], list[list[str]]]:
    """The validation keys that make up val_reward: exact keys (eval_reward ...) best first,
    and one group per dataset of the keyed patterns, best key first.

    val_reward is the first present exact key, else the mean over datasets of each dataset's
    best present key (reward beats acc/score, the largest mean@N wins).
    """
    ranked = [(r, k) for k in keys if (r := val_rank(k)) is not None]
    exact = [k for _, k in sorted((r, k) for r, k in ranked if r < 10)]
    groups: dict[str, list[tuple[int, int, str]]] = {}
    for r, k in ranked:
        if r < 10:
            continue
        n = re.search(r"@(\d+)$", k)
        groups.setdefault(val_dataset(k), []).append((r, -int(n.group(1)) if n else 0, k))
    return exact, [[c[2] for c in sorted(g)] for g in groups.values()]


def select_val_keys(keys: Iterable[str]) -> list[str]:
    """The best exact validation key, else the best key of each dataset (see val_groups)."""
    exact, groups = val_groups(keys)
    return exact[:1] if exact else [g[0] for g in groups]


def val_reward(metrics: Mapping[str, float | None]) -> float | None:
    """val_reward of one raw record (the frame computes the same per row)."""
    present = {k: v for k, v in metrics.items() if v is not None}
    exact, groups = val_groups(present)
    if exact:
        return float(present[exact[0]])  # type: ignore[arg-type]
    vals = [float(present[g[0]]) for g in groups]  # type: ignore[arg-type]
    return math.fsum(vals) / len(vals) if vals else None


def canonicalize(metrics: Mapping[str, float | None]) -> dict[str, float | None]:
    """Raw framework metrics -> canonical ones (best key per name; val_reward a mean over datasets).

    Keys without a canonical name are dropped here; readers keep them in the frame.
    """
    best: dict[str, tuple[int, float | None]] = {}
    has_val = False
    for key, value in metrics.items():
        hit = _lookup(key)
        if hit is None:
            continue
        canon, rank = hit
        if canon == "val_reward" and rank >= 0:
            has_val = True
            continue
        if key in ZERO_MEANS_MISSING and value == 0:
            value = None
        if key in SCALED and value is not None:
            value = value * SCALED[key]
        if key == ROLL_TRUNCATION_COUNT:
            value = _roll_rate(value, metrics.get(ROLL_BATCH_SIZE))
        old = best.get(canon)
        # a present value beats a missing one; among present ones the better-ranked key wins
        if old is None or (value is not None and (old[1] is None or rank < old[0])):
            best[canon] = (rank, value)
    out = {canon: value for canon, (_, value) in best.items()}
    if has_val and out.get("val_reward") is None:
        value = val_reward(metrics)
        if value is not None:
            out["val_reward"] = value
    if "zero_std_frac" not in out:
        parts = [metrics.get(p) for p in ROLL_ZERO_STD_PARTS]
        if all(p is not None for p in parts):
            out["zero_std_frac"] = float(parts[0]) + float(parts[1])  # type: ignore[arg-type]
    return out


def _roll_rate(count: float | None, batch: float | None) -> float | None:
    if count is None or batch is None or batch == 0:
        return None
    return float(count) / float(batch)
