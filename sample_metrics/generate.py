"""Seeded generator of labelled RL fine-tuning runs (GSPO / GRPO / DAPO) for calibration.

    python sample_metrics/generate.py --out sample_metrics/generated --per-family 30
    python sample_metrics/generate.py --corpus   # rebuilds the committed sample_metrics/corpus

Each run is a family ("healthy" or a symptom id of contract.md) with one variant, drawn from a
seed: `make_run(family, seed, **knobs)` is a pure function of its arguments. See README.md in this
folder for the value ranges and the public runs they come from.
"""

from __future__ import annotations

import argparse
import math
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make `sample_metrics` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sample_metrics.runs import GeneratedRun

SYMPTOMS: tuple[str, ...] = ("P1", "P2", "P3", "KL0", "P4", "SLOW", "OOM", "P9", "P6", "NAN", "DIV")
FAMILIES: tuple[str, ...] = ("healthy", *SYMPTOMS)

# Variants per family; a run's variant is picked by seed (cycled, so a few seeds cover them all).
VARIANTS: dict[str, tuple[str, ...]] = {
    "healthy": (
        "steady", "noisy", "plateau", "slow-gain", "short", "on-policy", "gspo-clip",
        "dapo-kl0", "trl-no-kl", "saturated",
    ),
    "P1": ("flat", "stall", "tiny-lr"),
    "P2": ("sine", "square"),
    "P3": ("exp", "step"),
    "KL0": ("flat", "tiny-coef"),
    "P4": ("fast", "gradual"),
    "SLOW": ("gen-climb", "length-climb"),
    "OOM": ("memory-climb", "sudden"),
    "P9": ("rising", "from-start"),
    "P6": ("peak-decline",),
    "NAN": ("crash", "skipped-updates"),
    "DIV": ("entropy-blowup", "kl-blowup"),
}

# Co-occurring ids that are not wrong for a run of this family (the label's "acceptable").
ACCEPTABLE: dict[str, tuple[str, ...]] = {
    "healthy": (),
    "P1": ("KL0",),
    "P2": (),
    "P3": ("DIV",),
    "KL0": ("P1",),
    "P4": ("P1",),
    "SLOW": ("P9",),
    "OOM": (),
    "P9": ("P1", "SLOW"),
    "P6": (),
    "NAN": ("DIV", "P1", "P3"),
    "DIV": ("P3", "P9", "P1"),
}

# Metrics only verl logs / only TRL logs (contract.md metric table).
VERL_ONLY = ("ppo_kl", "prompt_truncation_rate", "rollout_time")
TRL_ONLY = ("zero_std_frac", "loss")

# Families whose symptom can only be seen in a given framework's metrics or in a console log.
_VERL_ONLY_FAMILIES = ("SLOW", "OOM")
_FORMATS = {"verl": ("verl-console", "verl-jsonl", "wandb-csv"), "trl": ("trl-state", "wandb-csv")}
_NICE_EVAL = (5, 10, 20, 25, 50, 100, 200, 250)

Series = dict[str, np.ndarray]  # canonical metric -> values, one per step
Knobs = dict[str, Any]
Rng = np.random.Generator


# ----------------------------------------------------------------------------- knobs


def _rng(family: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(family.encode())])


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _pick_eval_steps(rng: np.random.Generator, n_steps: int, dense: bool = False) -> int:
    # Guide: eval_steps ~ total steps / 10 to 20 (knowledge.md 2.1). `dense`: at least 14
    # evaluations, so an overfitting run keeps >= 5 of them after its validation peak.
    target = n_steps / rng.uniform(10, 20)
    if dense:
        target = n_steps / rng.uniform(14, 20)
        return max([v for v in _NICE_EVAL if v <= target] or [_NICE_EVAL[0]])
    return min(_NICE_EVAL, key=lambda v: abs(math.log(v / max(target, 1))))


def _default_knobs(family: str, variant: str, rng: np.random.Generator) -> dict[str, Any]:
    short_ok = family in ("OOM", "NAN")
    lo = 100 if short_ok else 200
    knobs: dict[str, Any] = {
        "n_steps": round(_log_uniform(rng, lo, 5000)),
        "noise": float(rng.uniform(0.01, 0.035)),
        "phi": float(rng.uniform(0.0, 0.8)),
        "strength": float(rng.uniform(0.6, 1.4)),
        "algorithm": str(rng.choice(["gspo", "grpo", "dapo"], p=[0.5, 0.3, 0.2])),
        "framework": "verl" if family in _VERL_ONLY_FAMILIES else str(
            rng.choice(["verl", "trl"], p=[0.65, 0.35])
        ),
        "first_step": 1,
    }
    if family == "healthy":
        knobs |= _healthy_knobs(variant, rng)
    if family == "P6":  # validation is the evidence: it must be sampled often enough
        knobs["dense_eval"] = True
    return knobs


def _healthy_knobs(variant: str, rng: np.random.Generator) -> dict[str, Any]:
    fixed: dict[str, dict[str, Any]] = {
        "noisy": {"noise": float(rng.uniform(0.05, 0.08)), "phi": float(rng.uniform(0.3, 0.8))},
        "short": {"n_steps": int(rng.integers(40, 140))},
        "on-policy": {"framework": "verl", "algorithm": str(rng.choice(["grpo", "gspo"]))},
        "gspo-clip": {"framework": "verl", "algorithm": "gspo"},
        "dapo-kl0": {"framework": "verl", "algorithm": "dapo"},
        "trl-no-kl": {"framework": "trl", "algorithm": "grpo"},
        "saturated": {"framework": "verl", "first_step": 101, "algorithm": "grpo"},
    }
    return fixed.get(variant, {})


def _hyper_parameters(k: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """Platform hyperparameters consistent with the knobs (knowledge.md 2.1 ranges)."""
    algo = k["algorithm"]
    kl = {"gspo": 0.001, "grpo": float(rng.choice([0.001, 0.01, 0.04])), "dapo": 0.0}[algo]
    batch = int(rng.choice([32, 64, 128, 256]))
    n_roll = int(rng.choice([4, 8, 8, 16]))
    max_len = int(rng.choice([2048, 4096, 8192]))
    steps_per_epoch = max(1, k["n_steps"] // int(rng.choice([1, 2, 3])))
    epochs = max(1, math.ceil((k["n_steps"] + k["first_step"] - 1) / steps_per_epoch))
    dense = bool(k.get("dense_eval", False))
    eval_steps = k.get("eval_steps") or _pick_eval_steps(rng, k["n_steps"], dense)
    return {
        "algorithm": algo,
        "kl_loss_coef": kl,
        "learning_rate": float(rng.choice([1e-6, 2e-6, 3e-6, 5e-6])),
        "lr_scheduler_type": str(rng.choice(["cosine", "linear", "constant"])),
        "lr_warmup_steps": -1,
        "n_epochs": min(epochs, 200),
        "batch_size": batch,
        "n_rollouts": n_roll,
        "ppo_mini_batch_size": int(min(batch * n_roll, rng.choice([8, 16, 32, 64]))),
        "max_length": max_len,
        "max_prompt_length": int(rng.choice([512, 1024])),
        "eval_steps": eval_steps,
        "save_steps": eval_steps * 2,
        "save_strategy": "steps",
        "save_total_limit": 3,
    }


# ----------------------------------------------------------------------------- signals


def _ar1(rng: np.random.Generator, n: int, sigma: float, phi: float) -> np.ndarray:
    """AR(1) noise with stationary std `sigma` (RL curves are autocorrelated, not white)."""
    from scipy.signal import lfilter

    z = rng.normal(0.0, sigma * math.sqrt(1 - phi * phi), n)
    out = lfilter([1.0], [1.0, -phi], z)
    return np.asarray(out, dtype=float)


def _lr_curve(hp: dict[str, Any], steps: np.ndarray, total: int) -> np.ndarray:
    warm = max(1, int(0.03 * total))  # lr_warmup_steps -1 = automatic: a few % of the run
    frac = np.clip(steps / warm, 0, 1)
    prog = np.clip((steps - warm) / max(1, total - warm), 0, 1)
    shape = {"cosine": 0.5 * (1 + np.cos(np.pi * prog)), "linear": 1 - prog}.get(
        hp["lr_scheduler_type"], np.ones_like(prog)
    )
    return hp["learning_rate"] * frac * np.maximum(shape, 0.0)


def _base_series(k: dict[str, Any], hp: dict[str, Any], rng: np.random.Generator,
                 steps: np.ndarray) -> dict[str, np.ndarray]:
    """A healthy run: rising reward, slowly growing KL, gently falling entropy."""
    n, t = len(steps), steps - steps[0] + 1.0
    total = int(steps[-1])
    r0, r_inf = float(rng.uniform(0.05, 0.4)), float(rng.uniform(0.6, 0.95))
    tau = float(rng.uniform(0.15, 0.5)) * n
    reward = r0 + (r_inf - r0) * (1 - np.exp(-t / tau))
    noise = _ar1(rng, n, k["noise"], k["phi"])
    # Group reward std of binary rewards ~ sqrt(p(1-p)) (GRPO advantage denominator).
    s: dict[str, np.ndarray] = {"reward_mean": reward}
    kl_inf = _log_uniform(rng, 0.005, 0.06)  # TRL unsloth: kl 0.02-0.06; verl kl_loss ~1e-3..5e-2
    s["kl_ref"] = kl_inf * (1 - np.exp(-t / (0.3 * n))) * np.exp(rng.normal(0, 0.12, n))
    ppo = _log_uniform(rng, 1e-4, 2e-3)  # verl PPO gsm8k: ppo_kl ~5e-4, signed
    s["ppo_kl"] = ppo + rng.normal(0, ppo, n)
    # GSPO clips ~100x more tokens than GRPO (metrics.md traps).
    gspo_high = k["algorithm"] == "gspo" and rng.random() < 0.5
    clip = float(rng.uniform(0.1, 0.3)) if gspo_high else _log_uniform(rng, 1e-3, 1e-2)
    s["pg_clipfrac"] = clip * np.exp(rng.normal(0, 0.2, n))
    g0 = _log_uniform(rng, 0.2, 3.0)  # TRL unsloth ~0.4; verl PPO 7B ~2.2
    s["grad_norm"] = g0 * (0.7 + 0.3 * np.exp(-t / n)) * np.exp(rng.normal(0, 0.2, n))
    e0, e_end = _log_uniform(rng, 0.15, 1.2), float(rng.uniform(0.45, 0.85))
    s["entropy"] = e0 * (e_end + (1 - e_end) * np.exp(-t / (0.5 * n))) * np.exp(
        _ar1(rng, n, 0.04, 0.6)
    )
    cap = hp["max_length"] - hp["max_prompt_length"]
    l0 = float(rng.uniform(100, 0.45 * cap))  # dstack PPO gsm8k: ~130 tokens
    drift = float(rng.uniform(0.8, 1.4))
    s["response_length"] = l0 * (1 + (drift - 1) * t / n) * np.exp(_ar1(rng, n, 0.03, 0.7))
    trunc0 = float(rng.uniform(0.0, 0.02))
    s["truncation_rate"] = np.clip(trunc0 * s["response_length"] / l0 + rng.normal(0, 0.003, n),
                                   0, 1)
    s["prompt_truncation_rate"] = np.zeros(n)
    s["lr"] = _lr_curve(hp, steps, total)
    step_t = float(rng.uniform(5, 120))  # TinyZero 0.5B: ~5.6 s; dstack 7B PPO: ~10.6 s
    gen_frac = float(rng.uniform(0.3, 0.55))
    scale = s["response_length"] / l0
    s["rollout_time"] = step_t * gen_frac * scale * np.exp(rng.normal(0, 0.05, n))
    s["step_time"] = s["rollout_time"] + step_t * (1 - gen_frac) * np.exp(rng.normal(0, 0.05, n))
    s["memory_gb"] = np.full(n, float(rng.uniform(30, 60))) + np.cumsum(
        rng.random(n) < 0.01
    ) * 0.25
    s["_noise"] = noise
    return s


def _finish(s: dict[str, np.ndarray], k: dict[str, Any], hp: dict[str, Any],
            rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Add noise to the reward, derive reward_std / zero_std_frac / loss, drop absent metrics."""
    noise = s.pop("_noise")
    s["_trend"] = np.clip(s["reward_mean"], 0, 1)  # the policy's quality, without batch noise
    s["reward_mean"] = np.clip(s["reward_mean"] + noise * s.pop("_noise_scale", 1.0), 0, 1)
    p = s["reward_mean"]
    s["reward_std"] = np.sqrt(np.clip(p * (1 - p), 0, None)) * rng.uniform(0.85, 1.0, len(p))
    g = hp["n_rollouts"]
    s["zero_std_frac"] = np.clip(p**g + (1 - p) ** g + rng.normal(0, 0.02, len(p)), 0, 1)
    s.setdefault("loss", hp["kl_loss_coef"] * s["kl_ref"] + rng.normal(0, 0.01, len(p)))
    if k["framework"] == "trl":
        for name in VERL_ONLY:
            s.pop(name, None)
    else:
        for name in TRL_ONLY:
            s.pop(name, None)
    if hp["kl_loss_coef"] == 0 and not k.get("log_zero_kl"):
        s.pop("kl_ref", None)  # verl use_kl_loss=False / TRL beta=0: the key is absent
    elif hp["kl_loss_coef"] == 0:
        s["kl_ref"] = np.zeros(len(p))
    return s


def _val_curve(s: dict[str, np.ndarray], steps: np.ndarray, eval_steps: int,
               rng: np.random.Generator, first_step: int) -> tuple[np.ndarray, np.ndarray]:
    """Validation every eval_steps and at step 0 (before training), tracking the train reward."""
    start = 0 if first_step == 1 else first_step - 1 + (-first_step + 1) % eval_steps
    vs = np.arange(start, int(steps[-1]) + 1, eval_steps)
    vs = vs[(vs == 0) | (vs >= steps[0])]
    # A fixed validation set sees the policy's trend, not the training batch's sampling noise.
    clean = s["_clean_reward"] if "_clean_reward" in s else s["_trend"]
    ref = np.interp(vs, steps, clean)
    gap = float(rng.uniform(0.0, 0.05))
    return vs, np.clip(ref - gap + rng.normal(0, 0.008, len(vs)), 0, 1)


# ----------------------------------------------------------------------------- symptoms


def _onset(rng: np.random.Generator, steps: np.ndarray, lo: float, hi: float) -> int:
    return int(steps[int(rng.uniform(lo, hi) * (len(steps) - 1))])


def _ramp(t: np.ndarray, width: float) -> np.ndarray:
    return np.clip(t / max(width, 1.0), 0, 1)


def _inject(family: str, variant: str, s: dict[str, np.ndarray], k: dict[str, Any],
            hp: dict[str, Any], rng: np.random.Generator, steps: np.ndarray) -> dict[str, Any]:
    """Apply the family's symptom in place; return {"onset_step", "ending", ...} facts."""
    fn = _INJECTORS.get(family)
    if fn is None:
        return {"onset_step": None}
    lr = hp["learning_rate"]
    facts = fn(variant, s, k, hp, rng, steps)
    if hp["learning_rate"] != lr and "lr" in s:  # the job's lr changed: log the one it ran with
        s["lr"] = _lr_curve(hp, steps, int(steps[-1]))
    return facts


def _p1(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    if variant == "stall":
        # Learns visibly (+0.1..0.25, well above the noise), then stops: onset is unambiguous.
        o = _onset(rng, steps, 0.15, 0.35)
        i = int(np.searchsorted(steps, o))
        start = float(rng.uniform(0.02, 0.15))
        level = start + float(rng.uniform(0.1, 0.25))
        s["reward_mean"] = np.concatenate([np.linspace(start, level, i), np.full(n - i, level)])
        s["grad_norm"][i:] *= float(rng.uniform(0.02, 0.1)) / k["strength"]
    elif variant == "flat":
        # The reward function (nearly) always returns 0: every group ties, advantages are 0,
        # so grad_norm is ~0 (TRL #3857; the rho run's grad_norm 0 once all groups tie).
        o, i = int(steps[0]), 0
        s["reward_mean"] = np.full(n, float(rng.uniform(0.005, 0.1)))
        s["grad_norm"] = float(rng.uniform(0.001, 0.02)) * np.exp(rng.normal(0, 0.3, n))
    else:  # tiny-lr: gradients are normal, but the policy barely moves: ppo_kl and kl_ref ~ 0
        o, i = int(steps[0]), 0
        s["reward_mean"] = np.full(n, float(rng.uniform(0.05, 0.3)))
        hp["learning_rate"] = float(rng.choice([5e-8, 1e-7, 2e-7]))
        s["lr"] = _lr_curve(hp, steps, int(steps[-1]))
        if hp["kl_loss_coef"] == 0:  # keep a KL series to show it
            hp["algorithm"], hp["kl_loss_coef"] = "grpo", 0.001
    after = slice(i, n)
    # P1 signature (knowledge.md 4): plateau + ppo_kl ~ 0 + grad_norm tiny. KL to the
    # reference grows ~ (parameter drift)^2: a policy that barely moves keeps it near 0.
    s["ppo_kl"][after] *= 0.01
    s["pg_clipfrac"][after] *= 0.05
    still = 0.02 if variant == "stall" else 0.002
    s["kl_ref"][after] = s["kl_ref"][i] + (s["kl_ref"][after] - s["kl_ref"][i]) * still
    s["_noise"] *= 0.6
    return {"onset_step": o}


def _p2(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    o = _onset(rng, steps, 0.2, 0.5)
    i = int(np.searchsorted(steps, o))
    period = float(rng.uniform(12, 50)) * (k.get("logging_steps", 1) ** 0.5)
    # Never below 0.1: a labelled oscillation must stand out of the noise (<= 0.035, AR).
    amp = float(rng.uniform(0.12, 0.25)) * float(np.clip(k["strength"], 0.8, 1.4))
    t = np.arange(n - i, dtype=float)
    wave = np.sin(2 * np.pi * t / period + rng.uniform(0, 2 * np.pi))
    if variant == "square":
        wave = np.tanh(3 * wave)
    level = s["reward_mean"][i]
    base = np.clip(level, amp + 0.02, 0.98 - amp)
    s["reward_mean"][i:] = base + amp * _ramp(t, 5) * wave
    s["grad_norm"][i:] *= 1 + 1.5 * np.abs(wave)
    s["ppo_kl"][i:] *= 1 + 3 * np.abs(wave)
    hp["learning_rate"] = float(rng.choice([1e-5, 2e-5, 5e-5]))
    return {"onset_step": o}


def _p3(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    o = _onset(rng, steps, 0.25, 0.6)
    i = int(np.searchsorted(steps, o))
    factor = 10 ** (float(rng.uniform(1.3, 2.5)) * float(np.clip(k["strength"], 0.8, 1.4)))
    t = np.arange(n - i, dtype=float)
    width = float(rng.uniform(0.05, 0.3)) * (n - i) if variant == "exp" else 3.0
    base_kl = max(float(np.median(s["kl_ref"][max(0, i - 20): i + 1])), 0.003)
    # An explosion ends far above healthy KL (public healthy runs stay <= ~0.06): >= 0.15.
    factor = max(factor, 0.15 / base_kl)
    grow = factor ** _ramp(t, width)
    s["kl_ref"][i:] = base_kl * grow * np.exp(rng.normal(0, 0.15, n - i))
    s["ppo_kl"][i:] *= np.sqrt(grow)
    s["grad_norm"][i:] *= grow**0.25
    s["reward_mean"][i:] -= float(rng.uniform(0.0, 0.08)) * _ramp(t, width)
    if hp["kl_loss_coef"] == 0:
        hp["kl_loss_coef"] = 0.001
    return {"onset_step": o}


def _kl0(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    level = float(rng.uniform(0.05, 0.4))
    s["reward_mean"] = np.full(n, level)
    s["kl_ref"] = _log_uniform(rng, 1e-7, 2e-5) * np.exp(rng.normal(0, 0.3, n))
    s["ppo_kl"] = rng.normal(0, 1e-6, n)
    s["grad_norm"] *= float(rng.uniform(0.05, 0.3))
    s["_noise"] *= 0.6
    if hp["algorithm"] == "dapo":
        hp["algorithm"] = "grpo"
    hp["kl_loss_coef"] = 1e-5 if variant == "tiny-coef" else max(hp["kl_loss_coef"], 0.001)
    return {"onset_step": int(steps[0])}


def _p4(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    o = _onset(rng, steps, 0.15, 0.5)
    i = int(np.searchsorted(steps, o))
    t = np.arange(n - i, dtype=float)
    floor = float(rng.uniform(0.01, 0.06)) / k["strength"]
    tau = float(rng.uniform(0.03, 0.08) if variant == "fast" else rng.uniform(0.1, 0.2)) * (n - i)
    drop = floor + (1 - floor) * np.exp(-t / max(tau, 2.0))
    s["entropy"][i:] = s["entropy"][i] * drop * np.exp(rng.normal(0, 0.05, n - i))
    # TinyZero: entropy 1.21 -> 0.005 while response length 181 -> ~35 tokens.
    shrink = float(rng.uniform(0.3, 0.7))
    s["response_length"][i:] *= shrink + (1 - shrink) * drop
    s["pg_clipfrac"][i:] *= drop
    s["reward_mean"][i:] = s["reward_mean"][i]  # learning stops once exploration is gone
    s["_noise"][i:] *= 0.5
    return {"onset_step": o}


def _slow(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    o = _onset(rng, steps, 0.2, 0.6)
    i = int(np.searchsorted(steps, o))
    t = np.arange(n - i, dtype=float)
    factor = max(3.0, float(rng.uniform(3, 8)) * k["strength"])  # gen must come to dominate
    grow = 1 + (factor - 1) * _ramp(t, float(rng.uniform(0.1, 0.5)) * (n - i))
    other = s["step_time"] - s["rollout_time"]
    s["rollout_time"][i:] *= grow
    if variant == "length-climb":
        s["response_length"][i:] *= 1 + (min(factor, 3.0) - 1) * (grow - 1) / (factor - 1)
    s["step_time"] = other + s["rollout_time"]
    return {"onset_step": o}


def _oom(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    last_i = int(rng.uniform(0.4, 0.95) * (n - 1))
    if variant == "memory-climb":
        start = int(last_i * rng.uniform(0.5, 0.9))
        s["memory_gb"][start:] += np.linspace(0, 78.5 - s["memory_gb"][start], n - start) * (
            (n - start) / max(last_i - start, 1)
        )
        s["memory_gb"] = np.minimum(s["memory_gb"], 79.2)
    s["response_length"][last_i] *= float(rng.uniform(1.2, 1.8))
    crash = int(steps[last_i])
    return {"onset_step": crash, "truncate_at": last_i + 1,
            "ending": {"kind": "oom", "step": crash + 1}}


def _p9(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    cap = hp["max_length"] - hp["max_prompt_length"]
    if variant == "from-start":
        o, i = int(steps[0]), 0
        width = 1.0
    else:
        o = _onset(rng, steps, 0.2, 0.55)
        i = int(np.searchsorted(steps, o))
        width = float(rng.uniform(0.05, 0.3)) * (n - i)
    t = np.arange(n - i, dtype=float)
    level = min(1.0, float(rng.uniform(0.2, 0.8)) * k["strength"] + 0.05)
    r = _ramp(t, width)
    s["truncation_rate"][i:] = np.clip(level * r + rng.normal(0, 0.02, n - i), 0, 1)
    lo = s["response_length"][i:]
    s["response_length"][i:] = lo + (cap * (0.6 + 0.4 * level) - lo) * r
    s["reward_mean"][i:] = s["reward_mean"][i] - 0.5 * s["reward_mean"][i] * level * r * 0.3
    return {"onset_step": o}


def _p6(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    o = _onset(rng, steps, 0.35, 0.6)
    i = int(np.searchsorted(steps, o))
    t = np.arange(n - i, dtype=float)
    clean = s["reward_mean"].copy()
    # Train reward keeps rising after the validation peak (verl #5038).
    clean[i:] = clean[i] + (0.99 - clean[i]) * (1 - np.exp(-t / (0.4 * (n - i))))
    s["reward_mean"] = clean
    # > 0.05: the dstack run's 0.904 -> 0.867 (0.037) is "mild overtraining at most".
    drop = float(rng.uniform(0.07, 0.2)) * float(np.clip(k["strength"], 0.8, 1.4))
    val_shape = clean.copy()
    val_shape[i:] = clean[i] - drop * (t / max(n - i - 1, 1)) ** float(rng.uniform(0.7, 1.3))
    s["_clean_reward"] = val_shape
    hp["n_epochs"] = int(rng.choice([8, 10, 15]))
    return {"onset_step": o}


def _nan(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    o = _onset(rng, steps, 0.2, 0.7) if n >= 150 else _onset(rng, steps, 0.3, 0.7)
    i = int(np.searchsorted(steps, o))
    out: dict[str, Any] = {"onset_step": o}
    if variant == "crash":
        # verl #747 / #2626: NaN KL and grad_norm, reward to 0, output garbage.
        for name in ("grad_norm", "kl_ref", "ppo_kl", "loss"):
            if name in s:
                s[name][i:] = np.nan
        t = np.arange(n - i, dtype=float)
        s["reward_mean"][i:] = s["reward_mean"][i] * np.exp(-t / float(rng.uniform(1, 5)))
        end = min(n, i + int(rng.integers(5, 40)))
        out["truncate_at"] = end
        if end < n:
            out["ending"] = {"kind": "traceback", "step": int(steps[end - 1]) + 1}
    else:
        # A NaN grad_norm means verl skipped that optimizer step; a run of them = no learning.
        mask = np.zeros(n, bool)
        j = i
        while j < n:
            run = int(rng.integers(3, 12))
            mask[j: j + run] = True
            j += run + int(rng.integers(0, 6))
        s["grad_norm"][mask] = np.nan
        s["loss"] = np.where(mask, np.nan, s.get("loss", np.zeros(n)))
        s["reward_mean"][i:] = s["reward_mean"][i]
    return out


def _div(variant: str, s: Series, k: Knobs, hp: Knobs, rng: Rng, steps: np.ndarray) -> Knobs:
    n = len(steps)
    o = _onset(rng, steps, 0.2, 0.6)
    i = int(np.searchsorted(steps, o))
    t = np.arange(n - i, dtype=float)
    fall = np.clip(t / float(rng.uniform(3, 20)), 0, 1)
    peak = s["reward_mean"][i]
    floor = peak * float(rng.uniform(0.0, 0.3))
    # rho collapse (TRL): reward 0.83 -> 0, entropy 0.2 -> 6-7, clipped_ratio -> 1.0.
    s["reward_mean"][i:] = peak + (floor - peak) * fall
    s["_noise"][i:] *= 0.3
    cap = hp["max_length"] - hp["max_prompt_length"]
    s["truncation_rate"][i:] = np.clip(s["truncation_rate"][i:] + fall * rng.uniform(0.6, 1.0),
                                       0, 1)
    s["response_length"][i:] += (cap - s["response_length"][i:]) * fall * 0.95
    if variant == "entropy-blowup":
        s["entropy"][i:] *= 1 + fall * float(rng.uniform(5, 30)) * k["strength"]
        s["grad_norm"][i:] *= np.where(fall >= 1, 0.05, 1 + 5 * fall)
        s["zero_std_frac"] = s.get("zero_std_frac", np.zeros(n))
    else:
        s["kl_ref"][i:] *= 1 + fall * float(rng.uniform(10, 100))
        s["grad_norm"][i:] *= 1 + fall * float(rng.uniform(3, 10))
        s["entropy"][i:] *= 1 + fall * float(rng.uniform(2, 6))
    hp["learning_rate"] = float(rng.choice([2e-5, 5e-5, 1e-4]))
    return {"onset_step": o}


_INJECTORS = {"P1": _p1, "P2": _p2, "P3": _p3, "KL0": _kl0, "P4": _p4, "SLOW": _slow,
              "OOM": _oom, "P9": _p9, "P6": _p6, "NAN": _nan, "DIV": _div}


def _healthy(variant: str, s: dict[str, np.ndarray], k: dict[str, Any], hp: dict[str, Any],
             rng: np.random.Generator, steps: np.ndarray) -> None:
    n, t = len(steps), np.arange(len(steps), dtype=float)
    if variant == "plateau":
        top = float(rng.uniform(0.85, 0.97))
        s["reward_mean"] = top - (top - s["reward_mean"][0]) * np.exp(-t / (0.06 * n))
    elif variant == "slow-gain":
        r0 = float(rng.uniform(0.1, 0.5))
        s["reward_mean"] = r0 + float(rng.uniform(0.08, 0.2)) * t / n
    elif variant == "on-policy":
        # One mini-batch, one PPO epoch: the update is on-policy, ppo_kl and clipfrac are 0.
        s["ppo_kl"] = np.zeros(n)
        s["pg_clipfrac"] = np.zeros(n)
        hp["ppo_mini_batch_size"] = hp["batch_size"] * hp["n_rollouts"]
    elif variant == "gspo-clip":
        s["pg_clipfrac"] = float(rng.uniform(0.15, 0.3)) * np.exp(rng.normal(0, 0.1, n))
    elif variant == "dapo-kl0":
        hp["kl_loss_coef"] = 0.0
        k["log_zero_kl"] = True
    elif variant == "trl-no-kl":
        hp["kl_loss_coef"] = 0.0
    elif variant == "saturated":
        # verl PPO gsm8k (dstack): reward ~0.94, entropy ~0.03, ppo_kl ~5e-4, grad_norm ~2.2.
        s["reward_mean"] = np.full(n, float(rng.uniform(0.9, 0.95)))
        s["entropy"] = float(rng.uniform(0.02, 0.05)) * np.exp(rng.normal(0, 0.1, n))
        s["grad_norm"] = float(rng.uniform(1.5, 3.0)) * np.exp(rng.normal(0, 0.12, n))
        s["pg_clipfrac"] = 0.01 * np.exp(rng.normal(0, 0.3, n))
        s["_noise"] *= 0.4


# ----------------------------------------------------------------------------- assembly


def make_run(family: str, seed: int, **knobs: Any) -> GeneratedRun:
    """Draw one labelled run. `knobs` override the drawn ones (n_steps, noise, phi, strength,
    algorithm, framework, fmt, variant, eval_steps, first_step, logging_steps, console_style)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
    rng = _rng(family, seed)
    variants = VARIANTS[family]
    variant = knobs.pop("variant", None) or variants[seed % len(variants)]
    k = _default_knobs(family, variant, rng) | knobs
    if k.get("fmt") and k["fmt"] not in _FORMATS[k["framework"]]:
        raise ValueError(f"format {k['fmt']!r} is not one {k['framework']} writes")
    if family in ("P9", "DIV", "P4") and k["framework"] == "trl":
        k.setdefault("logging_steps", int(rng.choice([1, 1, 5])))
    k.setdefault("logging_steps", int(rng.choice([1, 1, 5, 10])) if k["framework"] == "trl" else 1)
    hp = _hyper_parameters(k, rng)
    steps = np.arange(k["first_step"], k["first_step"] + k["n_steps"], dtype=np.int64)
    s = _base_series(k, hp, rng, steps)
    if family == "healthy":
        _healthy(variant, s, k, hp, rng, steps)
        facts: dict[str, Any] = {"onset_step": None}
    else:
        facts = _inject(family, variant, s, k, hp, rng, steps)
    return _assemble(family, variant, seed, k, hp, s, facts, rng, steps)


def _assemble(family: str, variant: str, seed: int, k: dict[str, Any], hp: dict[str, Any],
              s: dict[str, np.ndarray], facts: dict[str, Any], rng: np.random.Generator,
              steps: np.ndarray) -> GeneratedRun:
    cut = facts.get("truncate_at")
    s = _finish(s, k, hp, rng)
    vs, val = _val_curve(s, steps, hp["eval_steps"], rng, k["first_step"])
    s.pop("_clean_reward", None)
    s.pop("_trend", None)
    s = {name: _sig6(arr) for name, arr in s.items()}
    val = _sig6(val)
    if cut is not None:
        steps = steps[:cut]
        s = {name: arr[:cut] for name, arr in s.items()}
        keep = vs <= steps[-1]
        vs, val = vs[keep], val[keep]
    fmt = k.get("fmt") or _pick_format(family, k, rng, seed)
    style = k.get("console_style") or _pick_style(family, rng)
    run_id = f"{family.lower()}-{variant}-{fmt}-s{seed:04d}"
    label = {
        "run_id": run_id,
        "family": family,
        "variant": variant,
        "symptoms": [] if family == "healthy" else [family],
        "onset_step": facts["onset_step"],
        "acceptable": list(ACCEPTABLE[family]),
        "format": fmt,
        "framework": k["framework"],
        "eval_steps": hp["eval_steps"],
        "first_step": int(steps[0]),
        "last_step": int(steps[-1]),
        "knobs": {key: (round(v, 4) if isinstance(v, float) else v) for key, v in k.items()},
    }
    val_name = _pick_val_name(k["framework"], rng)
    return GeneratedRun(run_id=run_id, family=family, variant=variant, framework=k["framework"],
                        fmt=fmt, steps=steps, series=s, val_steps=vs, val=val, hp=hp,
                        label=label, knobs=k, ending=facts.get("ending"), console_style=style,
                        logging_steps=k["logging_steps"], val_name=val_name)


def _sig6(arr: np.ndarray) -> np.ndarray:
    # Loggers print float32-ish values; 6 significant digits keeps the corpus small.
    return np.array([float(f"{v:.6g}") for v in np.asarray(arr, dtype=float)])


def _pick_format(family: str, k: dict[str, Any], rng: np.random.Generator, seed: int) -> str:
    if family == "OOM":
        return "verl-console"  # only the console log carries the CUDA OOM traceback
    options = _FORMATS[k["framework"]]
    return options[(seed // len(VARIANTS[family])) % len(options)]


def _pick_style(family: str, rng: np.random.Generator) -> str:
    # verl <= 0.4 printed 3 decimals: an lr or a KL of 1e-4 reads 0.000. Keep that realism away
    # from the families whose evidence lives in such small numbers.
    styles = ["full", "np"] if family in ("P1", "P3", "KL0", "NAN") else ["full", "np", "3dec"]
    return str(rng.choice(styles))


def _pick_val_name(framework: str, rng: np.random.Generator) -> str:
    if framework == "trl":
        return "eval_reward"
    return str(rng.choice([
        "val-core/openai/gsm8k/reward/mean@1",
        "val-core/math_dapo/acc/mean@4",
        "val/test_score/openai/gsm8k",
    ], p=[0.6, 0.2, 0.2]))


# ----------------------------------------------------------------------------- corpus


def family_seeds(family: str, count: int, base_seed: int = 0) -> list[int]:
    return [base_seed + i for i in range(count)]


def corpus_knobs(family: str, seed: int, max_steps: int | None) -> dict[str, Any]:
    """Knobs a corpus run pins: its length, drawn from its own stream when `max_steps` caps it."""
    if max_steps is None:
        return {}
    rng = _rng(family + "/len", seed)
    lo = 100 if family in ("OOM", "NAN") else 200
    knobs: dict[str, Any] = {"n_steps": round(_log_uniform(rng, lo, max_steps))}
    if family == "healthy" and VARIANTS["healthy"][seed % len(VARIANTS["healthy"])] == "short":
        knobs["n_steps"] = int(rng.integers(40, 140))
    return knobs


def generate_corpus(out: Path, per_family: int, healthy: int | None = None, base_seed: int = 0,
                    max_steps: int | None = None, families: tuple[str, ...] = FAMILIES) -> int:
    """Write `per_family` runs of each symptom family and `healthy` healthy runs under `out`."""
    from sample_metrics.writers import write_run

    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for family in families:
        n = healthy if family == "healthy" and healthy is not None else per_family
        for seed in family_seeds(family, n, base_seed):
            run = make_run(family, seed, **corpus_knobs(family, seed, max_steps))
            write_run(run, out / run.run_id)
            count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("sample_metrics/generated"))
    ap.add_argument("--per-family", type=int, default=30)
    ap.add_argument("--healthy", type=int, default=None, help="healthy runs (default: per-family)")
    ap.add_argument("--seed", type=int, default=0, help="first seed of each family")
    ap.add_argument("--max-steps", type=int, default=None, help="cap run length (default 5000)")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--corpus", action="store_true",
                    help="rebuild the committed small corpus (sample_metrics/corpus)")
    a = ap.parse_args(argv)
    if a.corpus:
        return _rebuild_small_corpus()
    fams = tuple(f.strip() for f in a.families.split(",") if f.strip())
    n = generate_corpus(a.out, a.per_family, a.healthy, a.seed, a.max_steps, fams)
    print(f"wrote {n} runs to {a.out}")
    return 0


SMALL_CORPUS = {"per_family": 6, "healthy": 12, "base_seed": 0, "max_steps": 500}


def _rebuild_small_corpus() -> int:
    import shutil

    out = Path(__file__).resolve().parent / "corpus"
    if out.exists():
        shutil.rmtree(out)
    n = generate_corpus(out, SMALL_CORPUS["per_family"], SMALL_CORPUS["healthy"],
                        SMALL_CORPUS["base_seed"], SMALL_CORPUS["max_steps"])
    print(f"wrote {n} runs to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
