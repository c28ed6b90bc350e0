"""An independent, seeded generator of labelled RL fine-tuning runs (the holdout corpus).

Written from docs/knowledge.md section 4, docs/metrics.md (names, files, traps,
issue threads) and the value ranges of shared/real_runs/labelled, WITHOUT reading
sample_metrics/generate.py or the detectors' thresholds: it is the judge, not a copy of the
corpus the rulebook was tuned on. Its choices therefore differ on purpose: eval_steps is drawn
from 5..100 independent of the run length, symptoms come at weak-but-real strengths, reward
scales are not always [0, 1], healthy runs carry isolated spikes, restart-lr sawtooths, and
3-decimal verl logs.

    python tests/holdout/holdout_gen.py --out /tmp/holdout --n 150 --seed 7000

Each run directory holds the metrics (one of: verl console `train.log`, verl file-logger
`metrics.jsonl`, W&B export `wandb_history.csv`, TRL `trainer_state.json`), a platform
`job.yaml` (training.hyper_parameters) and `label.json` (symptoms, onset_step, acceptable,
eval_steps, format, metrics_file, knobs), the shape `advisor/harness.py` reads too.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SYMPTOMS = ("P1", "P2", "P3", "KL0", "P4", "SLOW", "OOM", "P9", "P6", "NAN", "DIV")
HEALTHY = "healthy"
# Drawn only when named (--healthy-variants): the default cycle, and so the corpora of
# tests/holdout/README.md, stay as they were.
EXTRA_HEALTHY = ("length-growth", "saturating")

HEALTHY_VARIANTS = (
    "steady", "noisy", "plateau", "slow", "sawtooth", "saturated", "gspo-clip", "onpolicy",
    "trl-nokl", "short", "long", "sparse", "missing", "threedec", "spiky", "converged-lowkl",
)
VARIANTS: dict[str, tuple[str, ...]] = {
    "P1": ("flat", "stall", "const-reward"),
    "P2": ("sine", "square", "irregular"),
    "P3": ("exp", "step"),
    "KL0": ("flat", "trl"),
    "P4": ("fast", "gradual"),
    "SLOW": ("gen-climb", "gen-jump", "length-climb"),
    "OOM": ("memory-climb", "sudden"),
    "P9": ("rising", "from-start"),
    "P6": ("peak-decline",),
    "NAN": ("crash", "skipped"),
    "DIV": ("entropy-blowup", "kl-blowup"),
}
# Co-occurring ids that are not wrong (the same failure seen by another rule).
ACCEPTABLE: dict[str, tuple[str, ...]] = {
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
    "DIV": ("P3", "P9", "P1", "NAN"),
}
# Formats each family can be written in: OOM needs a log that survives the crash (the
# console traceback, or the JSONL with memory at the cap); TRL has no rollout timing.
FORMATS = ("verl-console", "verl-jsonl", "wandb-csv", "trl-state", "trl-wandb-csv")
FAMILY_FORMATS: dict[str, tuple[str, ...]] = {
    "OOM": ("verl-console", "verl-console", "verl-jsonl"),
    "SLOW": ("verl-console", "verl-jsonl", "wandb-csv"),
}
# Symptom strength range: 0.25 = weak but real. `--strength 0 0.25` probes detection limits.
STRENGTH = (0.25, 1.0)
# verl console number style forced for every console run (None: drawn); "3dec" = verl <= 0.4.
NUMBER_STYLE: str | None = None
FILE_OF = {
    "verl-console": "train.log",
    "verl-jsonl": "metrics.jsonl",
    "wandb-csv": "wandb_history.csv",
    "trl-state": "trainer_state.json",
    "trl-wandb-csv": "wandb_export.csv",
}
TRL_FORMATS = ("trl-state", "trl-wandb-csv")


@dataclass
class Spec:
    kind: str  # HEALTHY or a symptom id
    variant: str
    seed: int
    fmt: str
    n_steps: int
    eval_steps: int
    algorithm: str
    noise: float
    phi: float
    strength: float
    first_step: int = 1
    log_every: int = 1  # sparse logging: only every k-th step survives
    number_style: str = "full"  # verl console: full | np | 3dec

    @property
    def framework(self) -> str:
        return "trl" if self.fmt in TRL_FORMATS else "verl"


@dataclass
class SynthRun:
    spec: Spec
    steps: np.ndarray
    series: dict[str, np.ndarray]  # canonical name -> values (NaN = not logged at that step)
    val: dict[int, float]  # validation reward by step (0 = before training)
    hp: dict[str, Any]
    symptoms: list[str]
    onset_step: int | None
    ending: str = "ok"  # ok | oom | nan-crash
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        s = self.spec
        return f"{s.kind.lower()}-{s.variant}-{s.fmt}-h{s.seed:05d}"


# ----------------------------------------------------------------------------- noise


def ar1(rng: np.random.Generator, n: int, sigma: float, phi: float) -> np.ndarray:
    """Stationary AR(1) noise of standard deviation sigma (RL curves are autocorrelated)."""
    e = rng.normal(0.0, sigma * math.sqrt(max(1e-9, 1 - phi * phi)), n)
    out = np.empty(n)
    out[0] = rng.normal(0.0, sigma)
    for i in range(1, n):
        out[i] = phi * out[i - 1] + e[i]
    return out


def lognoise(rng: np.random.Generator, n: int, sigma: float, phi: float = 0.5) -> np.ndarray:
    return np.exp(ar1(rng, n, sigma, phi))


def ramp(t: np.ndarray, onset: int, width: float) -> np.ndarray:
    """0 before onset, rising smoothly to 1 over `width` steps after it."""
    x = np.clip((t - onset) / max(width, 1.0), 0.0, None)
    return 1.0 - np.exp(-3.0 * x)


# ----------------------------------------------------------------------------- the spec


def draw_spec(
    kind: str, variant: str, seed: int, fmt: str | None = None, max_steps: int = 5000
) -> Spec:
    rng = np.random.default_rng([seed, 17])
    if fmt is None:
        choices = FAMILY_FORMATS.get(kind, FORMATS)
        fmt = choices[seed % len(choices)]
    if kind == HEALTHY and variant == "trl-nokl" and fmt not in TRL_FORMATS:
        fmt = "trl-state"
    if kind == HEALTHY and variant == "converged-lowkl" and fmt in TRL_FORMATS:
        fmt = "verl-jsonl"  # ppo_kl is verl's
    if kind == HEALTHY and variant in ("onpolicy", "threedec"):
        fmt = "verl-console" if variant == "threedec" else fmt
        fmt = "verl-jsonl" if fmt in TRL_FORMATS else fmt
    if kind == "OOM" and variant == "sudden":
        fmt = "verl-console"  # without a memory ramp only the traceback tells
    if kind == "KL0" and variant == "trl":
        fmt = "trl-state"
    if kind == "KL0" and variant != "trl" and fmt in TRL_FORMATS:
        fmt = "verl-jsonl"
    # Length: mostly 150..1500, some long ones up to 5,000 (log-uniform).
    n_steps = round(math.exp(rng.uniform(math.log(120), math.log(1800))))
    if rng.random() < 0.12 or (kind == HEALTHY and variant == "long"):
        n_steps = int(rng.integers(3000, 5001))
    n_steps = min(n_steps, max_steps)
    eval_steps = int(rng.choice([5, 10, 10, 20, 25, 25, 50, 50, 100]))
    # The guide's warm-up is 3 x eval_steps; keep at least ~2 warm-ups of judged data.
    while eval_steps > 5 and n_steps < 8 * eval_steps:
        eval_steps = max(5, eval_steps // 2)
    if kind == "P6":  # enough validation points to see a peak and a decline
        while eval_steps > 5 and n_steps < 16 * eval_steps:
            eval_steps = max(5, eval_steps // 2)
        n_steps = max(n_steps, 16 * eval_steps)
    if kind == HEALTHY and variant == "short":
        eval_steps = int(rng.choice([20, 25, 50]))
        n_steps = int(rng.integers(20, 3 * eval_steps - 5))
    algorithm = str(rng.choice(["gspo", "gspo", "grpo", "dapo"]))
    if kind == HEALTHY and variant == "gspo-clip":
        algorithm = "gspo"
    if kind in ("KL0", "P3") and algorithm == "dapo":
        algorithm = "grpo"  # both need a KL term that is meant to act
    noise = float(rng.uniform(0.01, 0.04))
    phi = float(rng.uniform(0.0, 0.8))
    if kind == HEALTHY and variant == "noisy":
        noise, phi = float(rng.uniform(0.06, 0.10)), float(rng.uniform(0.5, 0.9))
    strength = float(rng.uniform(*STRENGTH))
    spec = Spec(kind, variant, seed, fmt, n_steps, eval_steps, algorithm, noise, phi, strength)
    if kind == HEALTHY and variant == "sparse":
        spec.log_every = 10
        spec.n_steps = max(spec.n_steps, 400)
    if fmt in TRL_FORMATS:
        spec.log_every = int(rng.choice([1, 1, 5, 10])) if spec.log_every == 1 else spec.log_every
    if fmt == "verl-console":
        spec.number_style = str(rng.choice(["full", "np"]))
        if kind == HEALTHY and variant == "threedec":
            spec.number_style = "3dec"
        spec.number_style = NUMBER_STYLE or spec.number_style
    if kind == HEALTHY and variant == "steady" and rng.random() < 0.4 and fmt not in TRL_FORMATS:
        spec.first_step = 101  # a resumed run, as the public verl PPO log
    return spec


def draw_hp(spec: Spec, rng: np.random.Generator) -> dict[str, Any]:
    algo = spec.algorithm
    kl = {"gspo": 0.001, "grpo": float(rng.choice([0.001, 0.01, 0.04])), "dapo": 0.0}[algo]
    batch = int(rng.choice([32, 64, 128, 256]))
    n_roll = int(rng.choice([4, 8, 8, 16]))
    mini = int(rng.choice([8, 16, 32, 64]))
    max_len = int(rng.choice([4096, 8192, 8192, 16384]))
    hp: dict[str, Any] = {
        "algorithm": algo,
        "kl_loss_coef": kl,
        "learning_rate": float(rng.choice([1e-6, 2e-6, 3e-6, 5e-6, 7e-6])),
        "lr_scheduler_type": str(rng.choice(["cosine", "linear", "constant"])),
        "lr_warmup_steps": -1,
        "n_epochs": int(rng.integers(1, 5)),
        "batch_size": batch,
        "n_rollouts": n_roll,
        "ppo_mini_batch_size": min(mini, batch * n_roll),
        "max_length": max_len,
        "max_prompt_length": int(rng.choice([1024, 2048])),
        "eval_steps": spec.eval_steps,
        "save_steps": spec.eval_steps * int(rng.choice([2, 3])),
        "save_strategy": "steps",
        "save_total_limit": int(rng.choice([2, 3, 5])),
    }
    return hp


# ----------------------------------------------------------------------------- healthy base


def lr_schedule(hp: dict[str, Any], t: np.ndarray, n: int, sawtooth: bool) -> np.ndarray:
    base = hp["learning_rate"]
    warm = max(1, int(0.05 * n))
    frac = np.clip((t - t[0]) / max(1, n - 1), 0, 1)
    kind = hp["lr_scheduler_type"]
    if sawtooth:  # cosine with restarts: the lr jumps back up every quarter
        period = max(10, n // 4)
        frac = ((t - t[0]) % period) / period
        kind = "cosine"
    if kind == "cosine":
        lr = base * 0.5 * (1 + np.cos(np.pi * frac))
    elif kind == "linear":
        lr = base * (1 - frac)
    else:
        lr = np.full(len(t), base)
    return np.where(t - t[0] < warm, base * (t - t[0] + 1) / warm, lr)


def healthy_base(spec: Spec, rng: np.random.Generator, hp: dict[str, Any]) -> dict[str, Any]:
    n = spec.n_steps
    t = np.arange(spec.first_step, spec.first_step + n)
    x = (t - t[0]).astype(float)
    v = spec.variant if spec.kind == HEALTHY else ""
    # Reward probability p: a saturating learning curve (binary-reward tasks, GSM8K-like).
    p0 = rng.uniform(0.05, 0.5)
    gain = rng.uniform(0.15, 0.45)
    tau = rng.uniform(0.15, 0.6) * n
    if v == "plateau":  # converged early to a high plateau
        p0, gain, tau = rng.uniform(0.3, 0.6), 0.0, rng.uniform(0.03, 0.08) * n
        gain = rng.uniform(0.85, 0.96) - p0
    if v == "slow":  # slow but steady: a small linear gain, noise of the same size
        gain, tau = rng.uniform(0.05, 0.12), 1e9
    if v == "saturated":
        p0, gain = rng.uniform(0.93, 0.99), 0.0
    if v == "saturating":  # learns the task: rises early to 0.95-0.99 and stays
        p0, tau = rng.uniform(0.3, 0.5), rng.uniform(0.05, 0.2) * n
        gain = rng.uniform(0.95, 0.99) - p0
    if v == "converged-lowkl":  # rose, then converged; a small lr keeps ppo_kl ~1e-4
        p0, tau = rng.uniform(0.1, 0.4), rng.uniform(0.05, 0.15) * n
        gain = rng.uniform(0.8, 0.95) - p0
    p = p0 + gain * (1 - np.exp(-x / tau)) if tau < 1e8 else p0 + gain * x / max(1, n - 1)
    p = np.clip(p + ar1(rng, n, spec.noise, spec.phi), 0.0, 1.0)
    if v == "saturated":
        p = np.clip(p, 0, 1.0)
    n_roll = hp["n_rollouts"]
    s: dict[str, np.ndarray] = {"p": p}
    s["zero_std_frac"] = np.clip(p**n_roll + (1 - p) ** n_roll + rng.normal(0, 0.02, n), 0, 1)
    # Reward scale: not always [0, 1] (multi-component rewards as the Unsloth recipe: 0..2+).
    scale, offset = (1.0, 0.0)
    if rng.random() < 0.25 and v not in ("saturated",):
        scale, offset = float(rng.choice([2.0, 3.0, 2.0])), float(rng.choice([0.0, -0.5]))
    s["reward_mean"] = scale * p + offset
    s["reward_std"] = scale * np.sqrt(np.clip(p * (1 - p), 0, None)) * rng.uniform(0.9, 1.1)
    # Reference KL: grows smoothly from 0 (trap: an infinite ratio on a healthy run).
    kl_final = {"gspo": rng.uniform(0.002, 0.03), "grpo": rng.uniform(0.005, 0.06),
                "dapo": rng.uniform(0.003, 0.05)}[spec.algorithm]
    s["kl_ref"] = kl_final * (1 - np.exp(-x / rng.uniform(0.1, 0.5) / n)) * lognoise(rng, n, 0.12)
    s["ppo_kl"] = rng.uniform(2e-4, 2e-3) * rng.normal(0.4, 1.0, n)  # signed, as verl logs it
    if v == "converged-lowkl":
        s["ppo_kl"] = rng.uniform(1e-4, 3e-4) * rng.normal(0.5, 1.0, n)
    g0 = rng.uniform(0.2, 3.0)
    s["grad_norm"] = g0 * lognoise(rng, n, 0.18 if v != "noisy" else 0.35)
    if v == "saturated":
        s["grad_norm"] *= rng.uniform(0.1, 0.3)
    e0 = rng.uniform(0.3, 1.4)
    s["entropy"] = e0 * (1 - rng.uniform(0.15, 0.55) * (1 - np.exp(-x / (0.4 * n))))
    s["entropy"] *= lognoise(rng, n, 0.04)
    cap = hp["max_length"] - hp["max_prompt_length"]
    l0 = rng.uniform(150, min(1200, 0.35 * cap))
    s["response_length"] = l0 * (1 + rng.uniform(-0.2, 0.5) * x / max(1, n - 1))
    s["response_length"] *= lognoise(rng, n, 0.03)
    s["truncation_rate"] = np.clip(rng.uniform(0, 0.02) + rng.normal(0, 0.004, n), 0, 1)
    clip = {"gspo": rng.uniform(0.1, 0.3), "grpo": rng.uniform(5e-4, 5e-3),
            "dapo": rng.uniform(1e-3, 1e-2)}[spec.algorithm]
    s["pg_clipfrac"] = np.clip(clip * lognoise(rng, n, 0.1), 0, 1)
    s["lr"] = lr_schedule(hp, t, n, sawtooth=(v == "sawtooth"))
    st0 = rng.uniform(15, 120)
    s["step_time"] = st0 * lognoise(rng, n, 0.06, 0.3)
    gen_frac = rng.uniform(0.35, 0.6)
    s["rollout_time"] = gen_frac * s["step_time"] * lognoise(rng, n, 0.04)
    s["memory"] = rng.uniform(25, 62) + np.cumsum(rng.random(n) < 0.01) * 0.3
    s["pg_loss"] = rng.normal(0, 0.02, n)
    if v == "length-growth":
        _length_growth(s, rng, x, n, cap)
    if v == "saturating":
        # all-correct groups carry no advantage: the gradient shrinks with the informative
        # share 1 - zero_std_frac (GRPO), relative to the warm-up's
        share = np.clip(1 - s["zero_std_frac"], 0.02, 1)
        s["grad_norm"] = s["grad_norm"] * share / share[: max(5, n // 20)].mean()
        s["ppo_kl"] = s["ppo_kl"] * share
    if v == "spiky" or (spec.kind == HEALTHY and rng.random() < 0.3):
        for i in rng.choice(n, size=max(1, n // 300), replace=False):
            s["grad_norm"][i] *= rng.uniform(3, 8)  # isolated spikes: a hard batch
        for i in range(hp["save_steps"] - 1, n, hp["save_steps"]):
            s["step_time"][i] *= rng.uniform(1.5, 3.0)  # checkpoint saves stall a step
    if spec.kind == HEALTHY and v == "onpolicy":
        s["ppo_kl"][:] = 0.0
        s["pg_clipfrac"][:] = 0.0
        hp["ppo_mini_batch_size"] = hp["batch_size"] * hp["n_rollouts"]
    if hp["kl_loss_coef"] == 0 and spec.algorithm == "dapo":
        # DAPO without a KL term: verl logs kl_loss 0, or not at all
        s["kl_ref"] = np.zeros(n)
        if rng.random() < 0.5:
            del s["kl_ref"]
    return {"t": t, "x": x, "s": s, "scale": scale, "offset": offset, "cap": cap}


def _length_growth(s: dict, rng: np.random.Generator, x: np.ndarray, n: int, cap: int) -> None:
    """Healthy long-CoT emergence (R1-Zero-style runs, knowledge.md §3 "long chain-of-thought"):
    responses grow x2-4 over the run, generation time with them, entropy eases up a little."""
    grow = rng.uniform(2.0, 4.0)
    r = 1 / (1 + np.exp(-(x / max(1, n - 1) - rng.uniform(0.3, 0.6)) * 10))
    factor = 1 + (grow - 1) * r
    s["response_length"] = np.minimum(s["response_length"] * factor, 0.8 * cap)
    gen_before = s["rollout_time"].copy()
    s["rollout_time"] = gen_before * factor**0.9
    s["step_time"] = s["step_time"] + s["rollout_time"] - gen_before
    s["entropy"] = s["entropy"] * (1 + 0.3 * r)


def make_val(spec: Spec, rng: np.random.Generator, t: np.ndarray, p: np.ndarray,
             scale: float, offset: float) -> dict[int, float]:
    """Validation every eval_steps (and at step 0): a smoothed train curve, a small gap."""
    gap = rng.uniform(-0.1, 0.03)
    k = max(1, spec.eval_steps // 2)
    smooth = np.convolve(np.pad(p, (k, k), mode="edge"), np.ones(2 * k + 1) / (2 * k + 1), "valid")
    out = {0: float(scale * np.clip(p[0] + gap + rng.normal(0, 0.01), 0, 1) + offset)}
    for i, step in enumerate(t):
        if step % spec.eval_steps == 0:
            val = np.clip(smooth[i] + gap + rng.normal(0, 0.012), 0, 1)
            out[int(step)] = float(scale * val + offset)
    return out


# ----------------------------------------------------------------------------- symptoms


def pick_onset(spec: Spec, rng: np.random.Generator, t: np.ndarray) -> int:
    n = len(t)
    lo = max(int(0.2 * n), 3 * spec.eval_steps + 10)
    hi = max(lo + 1, int(0.7 * n))
    return int(t[0] + rng.integers(lo, hi))


def inject(run: dict[str, Any], spec: Spec, rng: np.random.Generator, hp: dict[str, Any]) -> dict:
    """Apply the symptom; returns onset, ending, truncate-at and notes."""
    return INJECTORS[spec.kind](run, spec, rng, hp)


def _freeze_after(arr: np.ndarray, idx: int, rng: np.random.Generator, sd: float) -> None:
    arr[idx:] = arr[idx] + ar1(rng, len(arr) - idx, sd, 0.5)


def inj_p1(run, spec, rng, hp):
    s, t, n = run["s"], run["t"], spec.n_steps
    st = spec.strength
    if spec.variant in ("flat", "const-reward"):
        onset_i = 0
        level = rng.uniform(0.02, 0.5)
        if spec.variant == "const-reward":  # the reward function returns a constant
            level = float(rng.choice([0.0, 1.0]))
            s["p"][:] = level
            s["reward_std"][:] = 0.0
            s["zero_std_frac"][:] = 1.0
        else:
            s["p"][:] = np.clip(level + ar1(rng, n, spec.noise * 0.7, spec.phi), 0, 1)
            s["reward_std"] = np.sqrt(s["p"] * (1 - s["p"])) * run["scale"]
        s["reward_mean"] = run["scale"] * s["p"] + run["offset"]
    else:  # stall: learns, then stops
        onset_i = pick_onset(spec, rng, t) - int(t[0])
        _freeze_after(s["p"], onset_i, rng, spec.noise * 0.7)
        s["p"] = np.clip(s["p"], 0, 1)
        s["reward_mean"] = run["scale"] * s["p"] + run["offset"]
    # The guide's signature: grad_norm tiny and ppo_kl ~ 0 after the onset. Weak = 0.1 x.
    factor = 10 ** (-1.0 - 1.5 * st)
    g = s["grad_norm"]
    g[onset_i:] = g[onset_i:] * factor
    s["ppo_kl"][onset_i:] = s["ppo_kl"][onset_i:] * factor * 0.1
    if "kl_ref" in s:  # the policy stops moving: the KL to the reference freezes
        kl = s["kl_ref"]
        kl[onset_i:] = kl[onset_i] * (1 + 0.01 * rng.normal(0, 1, n - onset_i))
        if onset_i == 0:
            s["kl_ref"] = np.abs(rng.normal(0, 1e-6, n))
    s["pg_clipfrac"][onset_i:] *= factor
    s["entropy"][onset_i:] = s["entropy"][onset_i] * lognoise(rng, n - onset_i, 0.02)
    return {"onset": int(t[onset_i]), "notes": {"grad_factor": factor}}


def inj_p2(run, spec, rng, hp):
    s, t, n = run["s"], run["t"], spec.n_steps
    on = pick_onset(spec, rng, t)
    i0 = on - int(t[0])
    amp = 0.05 + 0.17 * spec.strength  # weak ~0.09: about 3x the usual noise
    # at least 4 logged points per period: TRL averages logging_steps, a faster swing aliases
    period = rng.uniform(max(10, 4 * spec.log_every), max(60, 8 * spec.log_every))
    ph = 2 * np.pi * (t[i0:] - on) / period
    if spec.variant == "sine":
        wave = np.sin(ph)
    elif spec.variant == "square":
        wave = np.sign(np.sin(ph))
    else:  # irregular swings: random periods
        wave = np.sin(np.cumsum(2 * np.pi / rng.uniform(8, 50, n - i0)))
    env = ramp(t[i0:].astype(float), on, period)
    s["p"][i0:] = np.clip(s["p"][i0:] - amp * 0.3 + amp * wave * env, 0, 1)
    s["reward_mean"] = run["scale"] * s["p"] + run["offset"]
    s["grad_norm"][i0:] *= 1 + 0.8 * spec.strength * (1 + wave) * env
    s["ppo_kl"][i0:] *= 1 + 2 * spec.strength * (1 + wave) * env
    hp["learning_rate"] = float(rng.choice([1e-5, 2e-5, 3e-5]))
    s["lr"] = lr_schedule(hp, t, n, False)
    return {"onset": on, "notes": {"amplitude": amp, "period": period}}


def inj_p3(run, spec, rng, hp):
    s, t, n = run["s"], run["t"], spec.n_steps
    on = pick_onset(spec, rng, t)
    i0 = on - int(t[0])
    factor = 10 ** (0.9 + 1.6 * spec.strength)  # weak: x8; strong: x300
    width = rng.uniform(10, max(12, 0.25 * (n - i0)))
    base = max(s["kl_ref"][i0], 0.004)
    if spec.variant == "exp":
        grow = np.exp(np.log(factor) * np.clip((t[i0:] - on) / width, 0, 1))
    else:
        grow = np.where(t[i0:] - on < width / 3, 1 + (factor - 1) * 0.3,
                        np.where(t[i0:] - on < 2 * width / 3, 1 + (factor - 1) * 0.6, factor))
    s["kl_ref"][i0:] = base * grow * lognoise(rng, n - i0, 0.1)
    s["ppo_kl"][i0:] = np.abs(s["ppo_kl"][i0:]) * np.sqrt(grow) + 1e-4 * np.sqrt(grow)
    s["grad_norm"][i0:] *= grow ** 0.25
    s["p"][i0:] -= rng.uniform(0, 0.06) * np.clip((t[i0:] - on) / width, 0, 1)
    s["reward_mean"] = run["scale"] * s["p"] + run["offset"]
    return {"onset": on, "notes": {"kl_factor": factor, "width": width}}


def inj_kl0(run, spec, rng, hp):
    s, t, n = run["s"], run["t"], spec.n_steps
    if hp["kl_loss_coef"] == 0:
        hp["kl_loss_coef"] = 0.001
    s["kl_ref"] = np.abs(rng.normal(0, 10 ** rng.uniform(-8, -5.5), n))
    s["ppo_kl"] = rng.normal(0, 10 ** rng.uniform(-8, -6), n)
    level = rng.uniform(0.05, 0.6)  # not learning
    s["p"] = np.clip(level + ar1(rng, n, spec.noise, spec.phi), 0, 1)
    s["reward_mean"] = run["scale"] * s["p"] + run["offset"]
    s["entropy"][:] = s["entropy"][0] * lognoise(rng, n, 0.03)
    return {"onset": int(t[0]), "notes": {}}


def inj_p4(run, spec, rng, hp):
    s, t, n = run["s"], run["t"], spec.n_steps
    on = pick_onset(spec, rng, t)
    i0 = on - int(t[0])
    floor = 0.01 + 0.2 * (1 - spec.strength)  # weak: entropy to ~16 % of onset
    width = rng.uniform(5, 20) if spec.variant == "fast" else rng.uniform(0.15, 0.4) * (n - i0)
    r = ramp(t[i0:].astype(float), on, width)
    e_on = s["entropy"][i0]
    s["entropy"][i0:] = e_on * (1 - (1 - floor) * r) * lognoise(rng, n - i0, 0.05)
    s["response_length"][i0:] *= 1 - rng.uniform(0.2, 0.6) * r
    _freeze_after(s["p"], i0, rng, spec.noise * 0.6)
    s["p"] = np.clip(s["p"], 0, 1)
    s["reward_mean"] = run["scale"] * s["p"] + run["offset"]
    return {"onset": on, "notes": {"entropy_floor": floor, "width": width}}


def inj_slow(run, spec, rng, hp):
    s, t, n = run["s"], run["t"], spec.n_steps
    on = pick_onset(spec, rng, t)
    i0 = on - int(t[0])
    factor = 2.5 + 5.5 * spec.strength  # rollout time x2.5..x8
    width = 3 if spec.variant == "gen-jump" else rng.uniform(0.1, 0.3) * (n - i0)
    r = ramp(t[i0:].astype(float), on, width)
    gen_before = s["rollout_time"][i0:].copy()
    s["rollout_time"][i0:] = gen_before * (1 + (factor - 1) * r)
    s["step_time"][i0:] += s["rollout_time"][i0:] - gen_before
    if spec.variant == "length-climb":
        s["response_length"][i0:] *= 1 + (factor - 1) * 0.5 * r
        s["response_length"] = np.minimum(s["response_length"], run["cap"])
    return {"onset": on, "notes": {"gen_factor": factor}}


def inj_oom(run, spec, rng, hp):
    s, t, n = run["s"], run["t"], spec.n_steps
    on = pick_onset(spec, rng, t)
    i0 = on - int(t[0])
    if spec.variant == "memory-climb":
        start = max(0, i0 - int(rng.integers(20, 80)))
        s["memory"][start:] = np.linspace(s["memory"][start], rng.uniform(77.5, 79.6), n - start)
    return {"onset": on, "ending": "oom", "cut": i0 + 1, "notes": {}}


def inj_p9(run, spec, rng, hp):
    s, t, n = run["s"], run["t"], spec.n_steps
    top = 0.12 + 0.85 * spec.strength  # weak: 12-20 % of responses cut
    cap = run["cap"]
    if spec.variant == "from-start":
        on, i0 = int(t[0]), 0
        r = np.ones(n)
    else:
        on = pick_onset(spec, rng, t)
        i0 = on - int(t[0])
        r = np.zeros(n)
        r[i0:] = ramp(t[i0:].astype(float), on, rng.uniform(10, 0.3 * (n - i0) + 11))
    s["truncation_rate"] = np.clip(s["truncation_rate"] + top * r + rng.normal(0, 0.02, n) * r,
                                   0, 1)
    s["response_length"] = s["response_length"] * (1 - r) + r * cap * (0.6 + 0.38 * top)
    s["response_length"] *= lognoise(rng, n, 0.02)
    if spec.variant == "from-start":
        _freeze_after(s["p"], 0, rng, spec.noise)
        s["p"] = np.clip(s["p"], 0, 1)
        s["reward_mean"] = run["scale"] * s["p"] + run["offset"]
    return {"onset": on, "notes": {"truncation": top}}


def inj_p6(run, spec, rng, hp):
    t, _n = run["t"], spec.n_steps
    on = pick_onset(spec, rng, t)
    on = int(round(on / spec.eval_steps) * spec.eval_steps)
    hp["n_epochs"] = int(rng.integers(6, 16))
    drop = 0.04 + 0.16 * spec.strength  # validation falls 0.04..0.2 below its peak
    return {"onset": on, "notes": {"val_drop": drop}}


def inj_nan(run, spec, rng, hp):
    s, t, n = run["s"], run["t"], spec.n_steps
    on = pick_onset(spec, rng, t)
    i0 = on - int(t[0])
    if spec.variant == "crash":
        cut = min(n, i0 + int(rng.integers(1, 12)))
        for k in ("grad_norm", "kl_ref", "ppo_kl", "pg_loss", "entropy"):
            if k in s:
                s[k][i0:] = np.nan
        s["p"][i0:] = s["p"][i0:] * rng.uniform(0, 0.1)
        s["reward_mean"] = run["scale"] * s["p"] + run["offset"]
        return {"onset": on, "ending": "nan-crash", "cut": cut, "notes": {}}
    n_runs = 1 + round(4 * spec.strength)
    pos = on
    starts = []
    for _ in range(n_runs):
        length = int(rng.integers(3, 12))
        i = pos - int(t[0])
        if i + length >= n:
            break
        s["grad_norm"][i:i + length] = np.nan
        s["p"][i:i + length] = s["p"][i - 1]  # a skipped update freezes the policy
        starts.append(pos)
        pos += length + int(rng.integers(5, 60))
    s["reward_mean"] = run["scale"] * s["p"] + run["offset"]
    return {"onset": on, "notes": {"nan_runs": starts}}


def inj_div(run, spec, rng, hp):
    s, t, n = run["s"], run["t"], spec.n_steps
    on = pick_onset(spec, rng, t)
    i0 = on - int(t[0])
    width = rng.uniform(3, 30)
    r = ramp(t[i0:].astype(float), on, width)
    keep = rng.uniform(0.0, 0.3)
    peak = s["p"][: i0 + 1].max()
    s["p"][i0:] = s["p"][i0:] * (1 - r) + r * (peak * keep + ar1(rng, n - i0, 0.01, 0.5))
    s["p"] = np.clip(s["p"], 0, 1)
    s["reward_mean"] = run["scale"] * s["p"] + run["offset"]
    if spec.variant == "entropy-blowup":
        s["entropy"][i0:] *= 1 + (rng.uniform(4, 29) * spec.strength + 2) * r
    else:
        if "kl_ref" not in s:  # DAPO logs no KL: the blow-up shows in ppo_kl only
            s["kl_ref"] = np.zeros(n)
        kl0 = max(s["kl_ref"][i0], 0.005)
        s["kl_ref"][i0:] = s["kl_ref"][i0:] * (1 - r) + r * kl0 * rng.uniform(10, 100)
        s["ppo_kl"][i0:] = np.abs(s["ppo_kl"][i0:]) + r * rng.uniform(0.01, 0.1)
    s["truncation_rate"][i0:] = np.clip(s["truncation_rate"][i0:] + r * rng.uniform(0.5, 0.95),
                                        0, 1)
    s["response_length"][i0:] = s["response_length"][i0:] * (1 - r) + r * run["cap"] * 0.97
    s["grad_norm"][i0:] *= 1 + r * rng.uniform(2, 10)
    s["zero_std_frac"][i0:] = np.clip(s["zero_std_frac"][i0:] * (1 - r) + r, 0, 1)
    hp["learning_rate"] = float(rng.choice([2e-5, 5e-5, 1e-4]))
    s["lr"] = lr_schedule(hp, t, n, False)
    return {"onset": on, "notes": {"keep": keep}}


INJECTORS: dict[str, Callable[..., dict]] = {
    "P1": inj_p1, "P2": inj_p2, "P3": inj_p3, "KL0": inj_kl0, "P4": inj_p4, "SLOW": inj_slow,
    "OOM": inj_oom, "P9": inj_p9, "P6": inj_p6, "NAN": inj_nan, "DIV": inj_div,
}


def p6_val(val: dict[int, float], onset: int, drop: float, t_end: int, scale: float) -> None:
    """Overfitting: validation peaks at the onset, then falls `drop` while train keeps rising."""
    peak = max(v for k, v in val.items() if k <= onset)
    for k in sorted(val):
        if k > onset:
            frac = min(1.0, (k - onset) / max(1, (t_end - onset) * 0.6))
            val[k] = min(val[k], peak) - scale * drop * frac


# ----------------------------------------------------------------------------- assemble


def make_run(
    kind: str, variant: str, seed: int, fmt: str | None = None, max_steps: int = 5000
) -> SynthRun:
    spec = draw_spec(kind, variant, seed, fmt, max_steps)
    rng = np.random.default_rng([seed, 99])
    hp = draw_hp(spec, rng)
    if kind == HEALTHY and variant == "onpolicy":
        hp["algorithm"] = spec.algorithm
    if kind == HEALTHY and variant == "converged-lowkl":
        hp["learning_rate"] = 1e-6
    base = healthy_base(spec, rng, hp)
    t, s = base["t"], base["s"]
    info: dict[str, Any] = {"onset": None, "notes": {}}
    if kind != HEALTHY:
        info = inject(base, spec, rng, hp)
    val = make_val(spec, rng, t, s["p"], base["scale"], base["offset"])
    if kind == "P6":
        # train reward keeps rising through the decline
        i0 = info["onset"] - int(t[0])
        s["p"][i0:] = np.clip(s["p"][i0:] + np.linspace(0, 0.08, len(t) - i0), 0, 1)
        s["reward_mean"] = base["scale"] * s["p"] + base["offset"]
        p6_val(val, info["onset"], info["notes"]["val_drop"], int(t[-1]), base["scale"])
    cut = info.get("cut")
    if cut is not None:
        t = t[:cut]
        s = {k: v[:cut] for k, v in s.items()}
        val = {k: v for k, v in val.items() if k <= t[-1]}
    s.pop("p", None)
    if kind == HEALTHY and variant == "missing":
        for k in ("entropy", "kl_ref", "ppo_kl", "pg_clipfrac", "rollout_time", "step_time",
                  "memory", "truncation_rate", "zero_std_frac"):
            s.pop(k, None)
        val = {}
    if kind == HEALTHY and variant == "trl-nokl":
        s.pop("kl_ref", None)
        hp["kl_loss_coef"] = 0.0
    if spec.log_every > 1 and spec.fmt not in TRL_FORMATS:
        keep = (t % spec.log_every) == 0
        t = t[keep]
        s = {k: v[keep] for k, v in s.items()}
    symptoms = [] if kind == HEALTHY else [kind]
    onset = info["onset"]
    info["notes"].update(reward_scale=base["scale"], reward_offset=base["offset"])
    run = SynthRun(spec, t, s, val, hp, symptoms, onset, info.get("ending", "ok"), info["notes"])
    return run


# ----------------------------------------------------------------------------- writers

VERL_KEYS = {
    "reward_mean": "critic/rewards/mean",
    "reward_std": "critic/rewards/std",
    "ppo_kl": "actor/ppo_kl",
    "kl_ref": "actor/kl_loss",
    "grad_norm": "actor/grad_norm",
    "entropy": "actor/entropy",
    "truncation_rate": "response_length/clip_ratio",
    "response_length": "response_length/mean",
    "pg_clipfrac": "actor/pg_clipfrac",
    "lr": "actor/lr",
    "step_time": "timing_s/step",
    "rollout_time": "timing_s/gen",
    "memory": "perf/max_memory_allocated_gb",
    "pg_loss": "actor/pg_loss",
}
TRL_KEYS = {
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
    "pg_loss": "loss",
}
VAL_KEYS = (
    "val-core/openai/gsm8k/reward/mean@1",
    "val-core/math_dapo/acc/mean@4",
    "val/test_score/openai/gsm8k",
)


def _verl_rows(run: SynthRun) -> list[tuple[int, dict[str, float]]]:
    rng = np.random.default_rng([run.spec.seed, 5])
    vkey = VAL_KEYS[run.spec.seed % len(VAL_KEYS)]
    rows = []
    for i, step in enumerate(run.steps):
        row = {VERL_KEYS[k]: float(v[i]) for k, v in run.series.items() if k in VERL_KEYS}
        if "reward_mean" in run.series:
            row["critic/score/mean"] = row["critic/rewards/mean"]
        row["response_length/max"] = float(run.hp["max_length"] - run.hp["max_prompt_length"])
        row["prompt_length/clip_ratio"] = 0.0
        row["training/global_step"] = float(step)
        row["perf/throughput"] = float(rng.uniform(300, 3000))
        if int(step) in run.val:
            row[vkey] = run.val[int(step)]
        rows.append((int(step), row))
    return rows


def _num(x: float, style: str) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "nan" if style != "np" else "np.float64(nan)"
    if style == "3dec":
        return f"{x:.3f}"
    if style == "np":
        return f"np.float64({x!r})"
    return repr(float(x))


def write_verl_console(run: SynthRun, path: Path) -> None:
    pre = f"\x1b[36m(TaskRunner pid={10000 + run.spec.seed % 50000})\x1b[0m "
    vkey = VAL_KEYS[run.spec.seed % len(VAL_KEYS)]
    style = run.spec.number_style
    lines = [pre + "{'actor_rollout_ref': {'actor': {'optim': {'lr': "
             f"{run.hp['learning_rate']!r}}}, 'kl_loss_coef': {run.hp['kl_loss_coef']!r}}},"]
    lines.append(pre + f" 'trainer': {{'test_freq': {run.spec.eval_steps}, "
                 f"'save_freq': {run.hp['save_steps']}}}}}")
    if 0 in run.val and run.spec.first_step == 1:
        lines.append(pre + f"step:0 - {vkey}:{_num(run.val[0], style)}")
    for step, row in _verl_rows(run):
        if step % run.spec.eval_steps == 0:
            lines.append(pre + "validation generation end")
        body = " - ".join(f"{k}:{_num(v, style)}" for k, v in row.items())
        lines.append(pre + f"step:{step} - {body}")
        if step % run.hp["save_steps"] == 0:
            lines.append(pre + f"local_global_step_folder: checkpoints/global_step_{step}")
        if step % 37 == 0:
            lines.append(f"Training Progress: {step}it [{step * 20}s]")
    lines.extend(_ending_lines(run, pre))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _ending_lines(run: SynthRun, pre: str) -> list[str]:
    if run.ending == "oom":
        return [
            pre + "Traceback (most recent call last):",
            pre + '  File "verl/workers/fsdp_workers.py", line 612, in update_actor',
            pre + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.25 GiB. "
            "GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.",
            "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_update_actor()",
        ]
    if run.ending == "nan-crash":
        return [
            pre + "Traceback (most recent call last):",
            pre + '  File "vllm/model_executor/layers/sampler.py", line 301, in _sample',
            pre + "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        ]
    return [f"Job 'raysubmit_{run.spec.seed:08d}' succeeded"]


def write_verl_jsonl(run: SynthRun, path: Path) -> None:
    vkey = VAL_KEYS[run.spec.seed % len(VAL_KEYS)]
    out = []
    if 0 in run.val and run.spec.first_step == 1:
        out.append(json.dumps({"step": 0, "data": {vkey: run.val[0]}}))
    for step, row in _verl_rows(run):
        data = {k: (None if math.isnan(v) else v) for k, v in row.items()}
        # verl's file logger writes NaN as the bare token (json.dumps default)
        data = {k: (v if v is not None else float("nan")) for k, v in data.items()}
        out.append(json.dumps({"step": step, "data": data}))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def write_wandb_csv(run: SynthRun, path: Path) -> None:
    rows = _verl_rows(run)
    keys: list[str] = []
    for _, row in rows:
        keys.extend(k for k in row if k not in keys)
    head = ["_step", "_runtime", "_timestamp", *keys]
    lines = [",".join(head)]
    t0 = 1_760_000_000 + run.spec.seed
    for step, row in rows:
        cells = [str(step), f"{step * 30.0:.1f}", f"{t0 + step * 30.0:.1f}"]
        cells += ["NaN" if k in row and math.isnan(row[k]) else (repr(row[k]) if k in row else "")
                  for k in keys]
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _trl_history(run: SynthRun) -> list[dict[str, Any]]:
    """TRL's log_history: one entry per logging_steps (means over them), eval entries apart."""
    k = run.spec.log_every
    hist: list[dict[str, Any]] = []
    steps = run.steps
    n_total = max(1, int(steps[-1]))
    for j in range(0, len(steps), k):
        chunk = slice(j, min(len(steps), j + k))
        step = int(steps[chunk][-1])
        entry: dict[str, Any] = {}
        for name, key in TRL_KEYS.items():
            if name in run.series:
                vals = run.series[name][chunk]
                entry[key] = float(np.mean(vals)) if name != "lr" else float(vals[-1])
        entry["epoch"] = round(step / n_total * run.hp["n_epochs"], 4)
        entry["step"] = step
        # Trainer order: an evaluation at step s is logged at s, so one inside the chunk comes
        # before the chunk's training entry, one at its last step right after it.
        evals = sorted(v for v in run.val if int(steps[chunk][0]) <= v <= step)
        for vs in evals:
            if vs < step:
                hist.append({"eval_reward": run.val[vs], "eval_loss": 0.0,
                             "epoch": entry["epoch"], "step": vs})
        hist.append(entry)
        if evals and evals[-1] == step:
            hist.append({"eval_reward": run.val[step], "eval_loss": 0.0,
                         "epoch": entry["epoch"], "step": step})
    return hist


def write_trl_state(run: SynthRun, path: Path) -> None:
    hist = _trl_history(run)
    steps, n_total, k = run.steps, max(1, int(run.steps[-1])), run.spec.log_every
    state = {
        "best_metric": None, "epoch": hist[-1]["epoch"], "eval_steps": run.spec.eval_steps,
        "global_step": int(steps[-1]), "logging_steps": k, "max_steps": n_total,
        "num_train_epochs": run.hp["n_epochs"], "save_steps": run.hp["save_steps"],
        "log_history": hist, "train_batch_size": run.hp["batch_size"],
    }
    # json writes NaN as the bare token NaN, as transformers does
    path.write_text(json.dumps(state, indent=2), encoding="utf-8")


def write_trl_wandb_csv(run: SynthRun, path: Path) -> None:
    """transformers' W&B callback: train/ and eval/ prefixes, `_step` counts log calls and
    train/global_step is the optimizer step."""
    rows = []
    for i, e in enumerate(_trl_history(run)):
        row = {"_step": i, "train/global_step": e["step"], "train/epoch": e["epoch"]}
        for key, v in e.items():
            if key in ("step", "epoch"):
                continue
            row["eval/" + key[5:] if key.startswith("eval_") else "train/" + key] = v
        rows.append(row)
    keys: list[str] = []
    for row in rows:
        keys.extend(k for k in row if k not in keys)
    lines = [",".join(keys)]
    for row in rows:
        cells = []
        for k in keys:
            v = row.get(k)
            cells.append("" if v is None else ("NaN" if v != v else repr(v)))
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


WRITERS = {
    "verl-console": write_verl_console,
    "verl-jsonl": write_verl_jsonl,
    "wandb-csv": write_wandb_csv,
    "trl-state": write_trl_state,
    "trl-wandb-csv": write_trl_wandb_csv,
}


def job_yaml(run: SynthRun) -> str:
    lines = [
        f"# holdout job for {run.run_id} (tests/holdout/holdout_gen.py)",
        f"job_name: \"{run.run_id}\"",
        "workspace_dir: \"./\"",
        "model: \"qwen3.5-9b\"",
        "mode: \"reinforcement\"",
        "datasets:",
        "  - type: \"training\"",
        "    data_source_type: \"file_id\"",
        "    file_name: \"./data/train.jsonl\"",
        "training:",
        "  hyper_parameters:",
    ]
    for key, value in run.hp.items():
        text = json.dumps(value) if isinstance(value, str) else repr(value)
        lines.append(f"    {key}: {text}")
    lines += ["  resources:", "    charge_type: \"mtu_postpaid\"", "    mtu_spec_code: \"MTU4\"",
              "    mtu_capacity: 24"]
    return "\n".join(lines) + "\n"


def write_run(run: SynthRun, out_dir: Path) -> Path:
    d = out_dir / run.run_id
    d.mkdir(parents=True, exist_ok=True)
    metrics = FILE_OF[run.spec.fmt]
    WRITERS[run.spec.fmt](run, d / metrics)
    (d / "job.yaml").write_text(job_yaml(run), encoding="utf-8")
    s = run.spec
    label = {
        "run_id": run.run_id,
        "generator": "tests/holdout/holdout_gen.py",
        "symptoms": run.symptoms,
        "onset_step": run.onset_step,
        "acceptable": list(ACCEPTABLE.get(s.kind, ())),
        "family": s.kind if s.kind != HEALTHY else "healthy",
        "variant": s.variant,
        "eval_steps": s.eval_steps,
        "format": s.fmt,
        "metrics_file": metrics,
        "first_step": int(run.steps[0]),
        "last_step": int(run.steps[-1]),
        "ending": run.ending,
        "knobs": {"algorithm": s.algorithm, "n_steps": s.n_steps, "noise": round(s.noise, 4),
                  "phi": round(s.phi, 3), "strength": round(s.strength, 3),
                  "log_every": s.log_every, "number_style": s.number_style,
                  "seed": s.seed, **{k: _plain(v) for k, v in run.notes.items()}},
    }
    (d / "label.json").write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    return d


def _plain(v: Any) -> Any:
    if isinstance(v, float | np.floating):
        return round(float(v), 6)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    return v


# ----------------------------------------------------------------------------- corpus


def plan(
    n: int, seed0: int, healthy_share: float = 0.35, families: tuple[str, ...] = SYMPTOMS,
    healthy_variants: tuple[str, ...] = HEALTHY_VARIANTS,
) -> list[tuple[str, str, int]]:
    """(kind, variant, seed) for n runs: ~35 % healthy (each variant), the rest over symptoms."""
    n_healthy = round(n * healthy_share)
    out = []
    hv = healthy_variants
    for i in range(n_healthy):
        out.append((HEALTHY, hv[i % len(hv)], seed0 + i))
    i = 0
    while len(out) < n:
        kind = families[i % len(families)]
        variants = VARIANTS[kind]
        out.append((kind, variants[(i // len(families)) % len(variants)], seed0 + n_healthy + i))
        i += 1
    return out


def generate(
    out: Path, n: int = 150, seed0: int = 7000, max_steps: int = 5000, healthy_share: float = 0.35,
    families: tuple[str, ...] = SYMPTOMS, fmt: str | None = None,
    healthy_variants: tuple[str, ...] = HEALTHY_VARIANTS,
) -> list[Path]:
    return [
        write_run(make_run(k, v, s, fmt=fmt, max_steps=max_steps), out)
        for k, v, s in plan(n, seed0, healthy_share, families, healthy_variants)
    ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--seed", type=int, default=7000)
    ap.add_argument("--max-steps", type=int, default=5000, help="cap run length")
    ap.add_argument("--healthy-share", type=float, default=0.35, help="1.0: healthy runs only")
    ap.add_argument("--strength", type=float, nargs=2, default=[0.25, 1.0], metavar=("LO", "HI"))
    ap.add_argument("--families", default=",".join(SYMPTOMS), help="symptom ids, comma-separated")
    ap.add_argument("--format", choices=FORMATS, help="write every run in this format")
    ap.add_argument("--healthy-variants", help="comma-separated (default: all but "
                    + ", ".join(EXTRA_HEALTHY) + ")")
    ap.add_argument("--number-style", choices=("full", "np", "3dec"), help="verl console numbers")
    a = ap.parse_args(argv)
    global STRENGTH, NUMBER_STYLE
    STRENGTH = (a.strength[0], a.strength[1])
    NUMBER_STYLE = a.number_style
    fams = tuple(f.strip().upper() for f in a.families.split(",") if f.strip())
    hv = HEALTHY_VARIANTS
    if a.healthy_variants:
        hv = tuple(v.strip() for v in a.healthy_variants.split(",") if v.strip())
        unknown = set(hv) - set(HEALTHY_VARIANTS) - set(EXTRA_HEALTHY)
        if unknown:
            ap.error(f"unknown healthy variants: {sorted(unknown)}")
    dirs = generate(a.out, a.n, a.seed, a.max_steps, a.healthy_share, fams, a.format, hv)
    print(f"{len(dirs)} runs written to {a.out}")


if __name__ == "__main__":
    main()
