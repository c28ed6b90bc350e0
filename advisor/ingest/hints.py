"""What a run says about its own config, mapped onto the platform's hyperparameter names.

Only values the run printed are reported; nothing is invented. Names that are not platform
hyperparameters (verl's adv_estimator, TRL's logging_steps ...) keep their own key so that the
config layer can show them without mistaking them for a setting.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, TypeGuard

_ALGORITHMS = {"grpo": "grpo", "gspo": "gspo", "dapo": "dapo"}

# verl's algorithm.adv_estimator values (verl.trainer.ppo.core_algos.AdvantageEstimator) -> the
# algorithm the run is, as the report says it, and the platform algorithm whose per-algorithm
# thresholds fit it: GRPO's for the group-relative estimators that are GRPO (also vectorised, or
# with pass@k advantages); none for the others (a critic's GAE, RLOO, REINFORCE++, ReMax, OPO,
# GPG): every threshold that depends on the algorithm takes its algorithm-neutral `default`
# (rulebook/symptoms.yaml). An estimator not listed is said by its name, with no thresholds.
ESTIMATORS: dict[str, tuple[str, str | None]] = {
    "gae": ("PPO with a critic (GAE advantages)", None),
    "grpo": ("GRPO", "grpo"),
    "grpo_vectorized": ("GRPO", "grpo"),
    "grpo_passk": ("GRPO with pass@k advantages", "grpo"),
    "rloo": ("RLOO (a leave-one-out baseline)", None),
    "rloo_vectorized": ("RLOO (a leave-one-out baseline)", None),
    "reinforce_plus_plus": ("REINFORCE++", None),
    "reinforce_plus_plus_baseline": ("REINFORCE++ with a group baseline", None),
    "remax": ("ReMax (a greedy baseline)", None),
    "opo": ("OPO (an on-policy optimal baseline)", None),
    "gpg": ("GPG (group policy gradient)", None),
}


def estimator_of(name: Any) -> tuple[str, str | None] | None:
    """(what the run is, the platform algorithm whose thresholds fit it) of a verl
    adv_estimator; None for no estimator. An unlisted one is said by its own name."""
    if not isinstance(name, str) or not name:
        return None
    return ESTIMATORS.get(name, (f"adv_estimator {name}", None))


def _get(cfg: Mapping[str, Any], dotted: str) -> Any:
    node: Any = cfg
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _first(cfg: Mapping[str, Any], *paths: str) -> Any:
    for p in paths:
        v = _get(cfg, p)
        if v is not None:
            return v
    return None


def _positive(v: object) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and v > 0


def verl_hints(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """verl's printed config (nested dict of `pprint(OmegaConf.to_container(config))`)."""
    actor = "actor_rollout_ref.actor"
    out: dict[str, Any] = {}
    test_freq = _get(cfg, "trainer.test_freq")
    if _positive(test_freq):
        out["eval_steps"] = int(test_freq)
    save_freq = _get(cfg, "trainer.save_freq")
    if _positive(save_freq):
        out["save_steps"] = int(save_freq)
        out["save_strategy"] = "steps"
        keep = _get(cfg, "trainer.max_actor_ckpt_to_keep")
        trainer = cfg.get("trainer")
        trainer = trainer if isinstance(trainer, Mapping) else {}
        if _positive(keep):
            out["save_total_limit"] = int(keep)
        elif "max_actor_ckpt_to_keep" in trainer and keep is None:
            # verl's None keeps every checkpoint: the platform's largest limit says the same
            out["save_total_limit"] = 200
    n = _first(cfg, "actor_rollout_ref.rollout.n", "rollout.n")
    if _positive(n):
        out["n_rollouts"] = int(n)
    lr = _first(cfg, f"{actor}.optim.lr", "actor.optim.lr")
    if isinstance(lr, int | float):
        out["learning_rate"] = float(lr)
    kl = _first(cfg, f"{actor}.kl_loss_coef", "actor.kl_loss_coef")
    if isinstance(kl, int | float) and not isinstance(kl, bool):
        out["kl_loss_coef"] = float(kl)
        if _get(cfg, f"{actor}.use_kl_loss") is False:
            # verl ignores the coefficient when the KL loss is off: what ran had none
            out["kl_loss_coef"] = 0.0
            out["kl_loss_coef_configured"] = float(kl)
    for key, paths in {
        "batch_size": ("data.train_batch_size",),
        "ppo_mini_batch_size": (f"{actor}.ppo_mini_batch_size", "actor.ppo_mini_batch_size"),
        "max_prompt_length": ("data.max_prompt_length",),
        "n_epochs": ("trainer.total_epochs",),
        "max_response_length": ("data.max_response_length",),
        "ppo_epochs": (f"{actor}.ppo_epochs",),
        "total_training_steps": ("trainer.total_training_steps",),
    }.items():
        v = _first(cfg, *paths)
        if _positive(v):
            out[key] = int(v)
    if "ppo_mini_batch_size" in out and "n_rollouts" in out:
        # verl counts its mini-batch in prompts and multiplies it by rollout.n (fsdp/megatron
        # workers); the platform's ppo_mini_batch_size counts samples (<= batch_size x
        # n_rollouts). Taken as printed, every on-policy verl run (mini == train_batch_size)
        # would read as n_rollouts updates per step. verl's own figure is kept beside it.
        out["ppo_mini_batch_size_prompts"] = out["ppo_mini_batch_size"]
        out["ppo_mini_batch_size"] *= out["n_rollouts"]
    if "max_prompt_length" in out and "max_response_length" in out:
        out["max_length"] = out["max_prompt_length"] + out["max_response_length"]
    out.update(_algorithm(cfg, actor))
    for key, path in {
        "use_kl_loss": f"{actor}.use_kl_loss",
        "loss_agg_mode": f"{actor}.loss_agg_mode",
        "clip_ratio_low": f"{actor}.clip_ratio_low",
        "clip_ratio_high": f"{actor}.clip_ratio_high",
        "entropy_coeff": f"{actor}.entropy_coeff",
        "temperature": "actor_rollout_ref.rollout.temperature",
        "use_kl_in_reward": "algorithm.use_kl_in_reward",
    }.items():
        v = _get(cfg, path)
        if v is not None:
            out[key] = v
    return out


def _algorithm(cfg: Mapping[str, Any], actor: str) -> dict[str, Any]:
    """algorithm only when the config names one of the platform's (gspo, grpo, dapo)."""
    out: dict[str, Any] = {}
    est = _get(cfg, "algorithm.adv_estimator")
    if isinstance(est, str):
        out["adv_estimator"] = est
    mode = _first(cfg, f"{actor}.policy_loss.loss_mode", f"{actor}.loss_mode")
    if isinstance(mode, str):
        out["policy_loss_mode"] = mode
    dynamic = _get(cfg, "algorithm.filter_groups.enable")
    low, high = _get(cfg, f"{actor}.clip_ratio_low"), _get(cfg, f"{actor}.clip_ratio_high")
    clip_higher = isinstance(low, int | float) and isinstance(high, int | float) and high > low
    if mode == "gspo":
        out["algorithm"] = "gspo"
    elif est == "grpo" and dynamic is True and clip_higher:
        out["algorithm"] = "dapo"  # DAPO = GRPO + Clip-Higher + dynamic sampling (knowledge.md 3)
    elif isinstance(est, str) and est in _ALGORITHMS:
        out["algorithm"] = _ALGORITHMS[est]
    elif isinstance(est, str) and est in ESTIMATORS and ESTIMATORS[est][1] is not None:
        out["algorithm"] = ESTIMATORS[est][1]  # GRPO vectorised, or with pass@k advantages
    return out


def trl_state_hints(state: Mapping[str, Any], has_eval: bool) -> dict[str, Any]:
    """transformers' trainer_state.json top-level fields."""
    out: dict[str, Any] = {}
    for key in ("logging_steps", "max_steps", "save_steps", "train_batch_size"):
        v = state.get(key)
        if _positive(v):
            out[key] = int(v)
    ev = state.get("eval_steps")
    if has_eval and _positive(ev):
        out["eval_steps"] = int(ev)
    return out


# TrainingArguments / GRPOConfig fields printed as `name=value` -> platform (or own) key
TRL_ARGS: dict[str, str] = {
    "learning_rate": "learning_rate",
    "num_generations": "n_rollouts",
    "logging_steps": "logging_steps",
    "eval_steps": "eval_steps",
    "save_steps": "save_steps",
    "max_steps": "max_steps",
    "beta": "kl_loss_coef",
    "max_prompt_length": "max_prompt_length",
    "max_completion_length": "max_response_length",
    "loss_type": "loss_type",
    "importance_sampling_level": "importance_sampling_level",
    "epsilon": "epsilon",
    "epsilon_high": "epsilon_high",
    "per_device_train_batch_size": "per_device_train_batch_size",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
}


def trl_arg_hints(args: Mapping[str, str]) -> dict[str, Any]:
    """TRL arguments seen as text (`num_generations=4`) -> typed hints."""
    out: dict[str, Any] = {}
    typed: dict[str, Any] = {}  # by TRL's names, for the algorithm
    for name, raw in args.items():
        # an argument quoted in Markdown or ending a sentence (`max_steps=500`, **beta=0**:)
        raw = raw.strip("`*").rstrip(".,;:").strip("`*")
        if raw.strip("'\"") in ("None", "null", ""):
            continue  # an argument left unset says nothing
        key = TRL_ARGS[name]
        value: Any = raw.strip("'\"")
        try:
            num = float(value)
            value = int(num) if num.is_integer() and "." not in raw and "e" not in raw else num
        except ValueError:
            pass
        out[key] = typed[name] = value
    if isinstance(out.get("kl_loss_coef"), int):
        out["kl_loss_coef"] = float(out["kl_loss_coef"])
    if "max_prompt_length" in out and "max_response_length" in out:
        with contextlib.suppress(TypeError, ValueError):
            out["max_length"] = int(out["max_prompt_length"]) + int(out["max_response_length"])
    for eps in ("epsilon", "epsilon_high"):  # floats, as GRPOConfig holds them
        if isinstance(typed.get(eps), int):
            typed[eps] = out[eps] = float(typed[eps])
    algorithm = trl_algorithm(typed)
    if algorithm is not None:
        out["algorithm"] = algorithm
    return out


def trl_algorithm(args: Mapping[str, Any]) -> str | None:
    """The guide's algorithm of TRL arguments (GRPOConfig names, typed values): GSPO is TRL's
    sequence-level importance sampling; Clip-Higher (epsilon_high above epsilon) marks DAPO
    (knowledge.md §3); TRL arguments without either are GRPO's. TRL's `loss_type: dapo` (its
    default) is DAPO's token-level normalisation alone, not the algorithm."""
    if "num_generations" not in args and "beta" not in args:
        return None  # not a GRPO config: nothing said about the algorithm
    if args.get("importance_sampling_level") == "sequence":
        return "gspo"
    eps, high = args.get("epsilon", 0.2), args.get("epsilon_high")
    if isinstance(eps, float) and isinstance(high, float) and high > eps:
        return "dapo"
    return "grpo"
