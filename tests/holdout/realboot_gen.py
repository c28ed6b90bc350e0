"""Real-anchored evaluation runs: healthy trends carrying noise resampled from real runs.

The noise comes from the healthy public runs in shared/real_runs, read with the project's own
reader: each canonical metric is split into a smooth trend and its residuals; a synthetic run is
a plausible healthy trend plus those residuals resampled in moving blocks (keeping their
autocorrelation, tails and the coupling of metrics at one source step), rescaled to the new
level. Sick runs get one symptom of knowledge.md section 4 at a labelled onset and strength.

    .venv/bin/python tests/holdout/realboot_gen.py --out DIR --n-healthy 200 --n-sick 100
    .venv/bin/python tests/holdout/realboot_gen.py --describe      # the residual bank
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
REAL = REPO.parent / "shared" / "real_runs"
# Healthy sources (real_labels.yaml) and the prompts behind one logged point (unsloth 1 x 6
# samples, dstack 256). Unlabelled: run-d looks healthy but its 25 points give 21 distinct
# blocks whose repeats show in a 500-step run; run-a has a 40-step truncation/entropy
# excursion, run-b/run-c collapse, run-e sits at reward ~0 with 80 % zero-std groups.
SOURCES = {
    "unsloth": ("labelled/trl-grpo-unsloth-llama31-8b-gsm8k/trainer_state.json", 1),
    "dstack": ("labelled/verl-ppo-gsm8k-dstack/verl_demo.log", 256),
}
# Additive residuals, standardised by their local RMS (the new run sets the scale) ...
Z_METRICS = ("reward_mean", "reward_std", "ppo_kl", "pg_clipfrac", "truncation_rate")
# ... and multiplicative ones (log ratio to the trend): their relative size carries over.
LOG_METRICS = ("grad_norm", "kl_ref", "entropy", "response_length", "step_time", "rollout_time")
SICK = ("P1", "P3", "P4", "P6", "P9", "NAN")
SHAPES = ("saturating", "slow", "early", "low", "noisy")
FORMATS = {"verl": ("verl-jsonl", "verl-console", "wandb-verl"), "trl": ("trl-state", "wandb-trl")}
FILES = {"verl-jsonl": "metrics.jsonl", "verl-console": "train.log", "wandb-verl":
         "wandb_export.csv", "trl-state": "trainer_state.json", "wandb-trl": "wandb_export.csv"}
ACCEPTABLE = {"P1": ["KL0"], "P3": ["DIV"], "P4": [], "P6": [], "P9": ["SLOW"],
              "NAN": ["DIV", "P1", "P3"]}
VAL_KEY = "val-core/openai/gsm8k/reward/mean@1"


# ----------------------------------------------------------------------------- residual bank
def _rolling(y: np.ndarray, half: int, fn: Any) -> np.ndarray:
    """fn over a centred window that shrinks at the ends (no padding invents values)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN window gives NaN
        return np.array([fn(y[max(0, i - half): i + half + 1]) for i in range(len(y))])


def trend_of(y: np.ndarray, centre: Any = np.nanmedian) -> np.ndarray:
    """Rolling median over a quarter of the run (robust to spikes; the wander at shorter
    scales stays in the residual), smoothed by a moving mean of half its width. NaN points
    are ignored (a window of only NaN takes the series median)."""
    half = max(2, len(y) // 8)
    med = _rolling(y, half, centre)
    return _rolling(np.where(np.isnan(med), np.nanmedian(y), med), max(1, half // 2), np.mean)


def residuals(y: np.ndarray, kind: str, skip: np.ndarray | None = None) -> np.ndarray:
    """Residuals of one real series: log ratio to the trend, or a locally standardised z.
    Points in `skip` (and missing ones) get residual 0 and stay out of the trend."""
    ok = np.isfinite(y) & (True if skip is None else ~skip)
    if kind == "log":
        # Near-zeros (grad_norm ~0.001 when unsloth's one-prompt batch scored alike) are
        # one-prompt-batch events: kept apart (Bank.alike), put back only into tiny batches.
        ok &= y > 0.15 * np.nanmedian(y)
        ly = np.log(np.where(ok, y, np.nan))
        return np.where(ok, ly - trend_of(ly), 0.0)
    # A one-prompt reward is skewed (mostly 0, at times 2.5): residuals around its median carry
    # a slow offset (the curve, not noise), and its MAD collapses (a lucky batch at 10 sigmas);
    # hence the rolling mean and the local RMS.
    r = np.where(ok, y, np.nan)
    r = r - trend_of(r, np.nanmean)
    glob = float(np.sqrt(np.nanmean(r**2))) or 1.0
    local = np.nan_to_num(np.sqrt(_rolling(r**2, max(4, len(y) // 12), np.nanmean)), nan=glob)
    return np.where(ok, np.clip(r / np.maximum(local, 0.3 * glob), -12.0, 12.0), 0.0)


@dataclass
class Bank:
    """Per source: its residual series by canonical metric, all aligned on its logged steps."""

    series: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    # step_time / its trend at the real validation + checkpoint steps: set at our eval steps
    eval_ratio: list[float] = field(default_factory=list)
    # one-prompt steps whose samples all scored alike: their share and grad_norm / median
    alike: tuple[float, list[float]] = (0.0, [])


def load_bank(real_dir: Path) -> Bank:
    """Read every healthy source with advisor.ingest.load_run and keep its residuals."""
    sys.path.insert(0, str(REPO))
    from advisor.ingest import load_run

    bank = Bank()
    for name, (rel, prompts) in SOURCES.items():
        frame = load_run(real_dir / rel).frame
        col = {c: frame[c].cast(float).fill_null(float("nan")).to_numpy() for c in frame.columns
               if c in (*Z_METRICS, *LOG_METRICS, "val_reward")}
        evals = np.isfinite(col.pop("val_reward", np.full(frame.height, np.nan)))
        got: dict[str, np.ndarray] = {}
        for metric, y in col.items():
            if np.isfinite(y).sum() < 20 or not np.nanstd(y) > 0:
                continue
            # validation+save steps' step_time spikes come at the eval period, which block
            # resampling would scatter: kept apart, put back at our eval steps
            skip = evals if metric == "step_time" and evals.any() else None
            got[metric] = residuals(y, "log" if metric in LOG_METRICS else "z", skip)
            if skip is not None:
                base = np.exp(trend_of(np.log(np.where(skip, np.nan, y))))
                bank.eval_ratio += (y[skip] / base[skip]).tolist()
            if metric == "grad_norm" and prompts == 1:
                low, med = y <= 0.15 * np.nanmedian(y), np.nanmedian(y)
                bank.alike = (float(low.mean()), (y[low] / med).tolist())
        bank.series[name] = got
    return bank


def describe(bank: Bank) -> None:
    """Print what each real residual looks like: spread, autocorrelation at lag 1 and 5, tails."""
    print("source   metric              n     std    ac1    ac5   kurt  max|r|")
    for src, ms in bank.series.items():
        for m, r in ms.items():
            c = r - r.mean()
            ac1, ac5 = (float(np.sum(c[k:] * c[:-k]) / np.sum(c * c)) for k in (1, 5))
            kurt = float(np.mean(c**4) / np.mean(c**2) ** 2)
            print(f"{src:8} {m:16} {len(r):4d} {np.std(r):7.3f} {ac1:6.2f} {ac5:6.2f} "
                  f"{kurt:6.1f} {np.max(np.abs(r)):7.2f}")


def block_index(m: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n indices into a length-m series made of moving blocks at random starts."""
    # blocks of 10-50 points keep the slow wander (ac at lag 5 up to ~0.45) a 5-step block cuts
    hi = max(4, min(50, m // 4))
    length = int(rng.integers(min(10, hi - 1), hi + 1))
    starts = rng.integers(0, m - length + 1, size=n // length + 1)
    return np.concatenate([np.arange(s, s + length) for s in starts])[:n]


class Noise:
    """Resampled residuals for one synthetic run. One block index per source, shared by its
    metrics, so a source step's grad_norm spike and reward dip stay together. An additive (z)
    residual from a source with fewer prompts per point is the scaled sum of k <= 8 independent
    streams (the central limit at work: same autocorrelation, tails thinned by k)."""

    def __init__(self, bank: Bank, n: int, rng: np.random.Generator, prompts: int) -> None:
        self.bank, self.n, self.rng, self.prompts = bank, n, rng, prompts
        self.primary = str(rng.choice(list(bank.series)))  # preferred for every metric it has
        self.index: dict[str, np.ndarray] = {}
        self.used: dict[str, str] = {}  # metric -> the source its residual came from

    def __call__(self, metric: str) -> np.ndarray:
        srcs = [s for s, ms in self.bank.series.items() if metric in ms]
        src = self.primary if self.primary in srcs else str(self.rng.choice(srcs))
        r, self.used[metric] = self.bank.series[src][metric], src
        if src not in self.index:
            self.index[src] = block_index(len(r), self.n, self.rng)
        out = r[self.index[src]]
        if metric in Z_METRICS:
            k = int(np.clip(self.prompts // SOURCES[src][1], 1, 8))
            for _ in range(k - 1):
                out = out + r[block_index(len(r), self.n, self.rng)]
            out = out / math.sqrt(k)
        return out


# ----------------------------------------------------------------------------- healthy run
@dataclass
class Run:
    run_id: str
    framework: str
    fmt: str
    steps: np.ndarray
    s: dict[str, np.ndarray]  # canonical series; "trend/<m>" the trend a residual rides on
    val_steps: np.ndarray
    val: np.ndarray
    hp: dict[str, Any]
    knobs: dict[str, Any]
    label: dict[str, Any] = field(default_factory=dict)


def _u(rng: np.random.Generator, lo: float, hi: float, log: bool = False) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))) if log else rng.uniform(lo, hi))


def reward_trend(shape: str, u: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Mean reward on a 0-1 scale for a healthy learning curve of the given shape."""
    def sat(r0: float, r1: float, tau: float) -> np.ndarray:
        return r0 + (r1 - r0) * (1 - np.exp(-u / tau)) / (1 - math.exp(-1 / tau))
    if shape == "slow":
        return _u(rng, 0.2, 0.7) + _u(rng, 0.04, 0.12) * u
    if shape == "early":
        return sat(_u(rng, 0.2, 0.5), _u(rng, 0.8, 0.95), _u(rng, 0.03, 0.07))
    if shape == "low":
        return sat(_u(rng, 0.04, 0.12), _u(rng, 0.18, 0.35), _u(rng, 0.08, 0.3))
    return sat(_u(rng, 0.1, 0.5), _u(rng, 0.6, 0.9), _u(rng, 0.15, 0.5))


def reward_of(p: np.ndarray, z: np.ndarray, knobs: dict[str, Any]) -> np.ndarray:
    """Logged reward: trend + real z residual at the binomial sampling sd of n_eff samples."""
    sd = knobs["reward_amp"] * np.sqrt(p * (1 - p) / knobs["n_eff"])
    return knobs["scale"] * np.clip(p + sd * z, 0.0, 1.0)


def lr_curve(hp: dict[str, Any], n: int) -> np.ndarray:
    t = np.arange(n, dtype=float)
    warm, u = np.minimum(1.0, (t + 1) / max(1, hp["lr_warmup_steps"])), t / max(1, n - 1)
    decay = {"constant": np.ones(n), "linear": 1 - u,
             "cosine": 0.5 * (1 + np.cos(math.pi * u))}[hp["lr_scheduler_type"]]
    return hp["learning_rate"] * warm * decay


def draw_hp(fw: str, n: int, rng: np.random.Generator, tiny: bool) -> dict[str, Any]:
    """Job hyperparameters; eval_steps 5-100, halved until the run holds 8 evaluations; a tiny
    batch is notebook-sized, as unsloth's 1 prompt x 6."""
    eval_steps = int(rng.integers(5, 101))
    while n < 8 * eval_steps and eval_steps > 5:
        eval_steps = max(5, eval_steps // 2)
    batch = int(rng.choice([1, 2, 4] if tiny else [16, 32, 64, 128, 256]))
    rollouts = int(rng.choice([4, 5, 8, 16]))
    prompt = int(rng.choice([512, 1024, 2048]))
    beta = float(rng.choice([0.0, 0.001, 0.01, 0.04] if fw == "trl" else [0.0, 0.001, 0.002]))
    return {
        "algorithm": str(rng.choice(["grpo", "dapo", "gspo"])), "kl_loss_coef": beta,
        "learning_rate": float(rng.choice([1e-6, 2e-6] if fw == "verl" else [1e-6, 5e-6, 1e-5])),
        "lr_scheduler_type": str(rng.choice(["constant", "cosine", "linear"])),
        "lr_warmup_steps": int(rng.choice([0, 10, 20])), "n_epochs": int(rng.integers(1, 6)),
        "batch_size": batch, "n_rollouts": rollouts,
        "ppo_mini_batch_size": batch * rollouts // int(rng.choice([1, 2, 4])),
        "max_length": prompt + int(rng.choice([2048, 4096, 8192])), "max_prompt_length": prompt,
        "eval_steps": eval_steps, "save_steps": 2 * eval_steps, "save_strategy": "steps",
        "save_total_limit": int(rng.choice([2, 3, 5])),
    }


def healthy_run(shape: str, bank: Bank, rng: np.random.Generator, n: int | None = None,
                need_kl: bool = False) -> Run:
    """A healthy run: trends by shape + real residuals at the new level."""
    fw = "verl" if rng.random() < 0.6 else "trl"
    fmt, n = str(rng.choice(FORMATS[fw])), n or round(_u(rng, 150, 3000, log=True))
    hp = draw_hp(fw, n, rng, tiny=shape == "noisy")
    if need_kl and not hp["kl_loss_coef"]:
        hp["kl_loss_coef"] = 0.001 if fw == "verl" else 0.04
    # Reward noise is sampling noise: batch_size prompts x n_rollouts samples, the samples of a
    # prompt correlated (design effect at intra-prompt correlation 0.5).
    g, noise, u = hp["n_rollouts"], Noise(bank, n, rng, hp["batch_size"]), np.linspace(0, 1, n)
    knobs = {"shape": shape, "n_steps": n, "scale": float(rng.choice([1.0, 1.0, 1.0, 2.0, 3.0])),
             "n_eff": round(hp["batch_size"] * g / (1 + 0.5 * (g - 1)), 2),
             "noise_source": noise.primary, "reward_amp": round(_u(rng, 0.8, 1.4), 2)}
    p = reward_trend(shape, u, rng)
    s = {"p": p, "z": noise("reward_mean"), "z_std": noise("reward_std")}
    s["reward_mean"] = reward_of(p, s["z"], knobs)
    _companions(s, hp, fw, u, noise, rng, knobs)
    if hp["batch_size"] <= 4:  # all samples of the batch alike: TRL's grad_norm falls to ~0
        share, ratio = bank.alike
        hit = rng.random(n) < share ** hp["batch_size"]
        s["grad_norm"][hit] = knobs["grad0"] * rng.choice(ratio, size=int(hit.sum()))
    val_steps, val = _validation(p, hp, fw, rng, knobs)
    at = val_steps[val_steps > 0] - 1  # validation (+ save) time lands on the step that runs it
    s["step_time"][at] *= rng.choice(bank.eval_ratio, size=len(at))
    return Run("", fw, fmt, np.arange(1, n + 1), s, val_steps, val, hp, knobs)


def _companions(s: dict[str, np.ndarray], hp: dict[str, Any], fw: str, u: np.ndarray,
                noise: Noise, rng: np.random.Generator, knobs: dict[str, Any]) -> None:
    """Entropy, grad_norm, KL, lengths, truncation, clip fraction, lr and timings."""
    def mult(metric: str, trend: np.ndarray) -> np.ndarray:
        s["trend/" + metric] = trend
        return trend * np.exp(_u(rng, 0.7, 1.3) * noise(metric))
    e0, g0, l0 = _u(rng, 0.15, 1.0), _u(rng, 0.05, 3.0, log=True), _u(rng, 80, 900, log=True)
    s["entropy"] = mult("entropy", e0 * (1 - _u(rng, 0, 0.45) * (1 - np.exp(-u / 0.3))))
    s["grad_norm"] = mult("grad_norm", g0 * (1 + _u(rng, -0.4, 0.4) * u))
    length = l0 * (1 + _u(rng, -0.3, 0.6) * u)
    s["response_length"] = np.minimum(mult("response_length", length),
                                      hp["max_length"] - hp["max_prompt_length"])
    base = _u(rng, 0.0, 0.025)
    s["truncation_rate"] = np.clip(base * (length / l0) ** 2 + max(0.6 * base, 0.002) *
                                   noise("truncation_rate"), 0.0, 1.0)
    if hp["kl_loss_coef"] > 0:  # KL to the reference grows from 0 and levels off
        k1, tk = _u(rng, 0.002, 0.08, log=True), _u(rng, 0.2, 1.0)
        s["kl_ref"] = mult("kl_ref", k1 * (1 - np.exp(-u / tk)) / (1 - math.exp(-1 / tk)) + 1e-5)
    clip = _u(rng, 0.001, 0.01) * (25 if hp["algorithm"] == "gspo" else 1)
    s["pg_clipfrac"] = np.maximum(0.0, clip * (1 + 0.5 * noise("pg_clipfrac")))
    if fw == "verl":
        s["ppo_kl"] = _u(rng, 1e-4, 2e-3, log=True) * (1 + 0.8 * noise("ppo_kl"))
    s["lr"] = lr_curve(hp, len(u))
    gen = _u(rng, 3, 60, log=True) * length / l0
    s["rollout_time"] = mult("rollout_time", gen)
    s["step_time"] = mult("step_time", gen * _u(rng, 1.7, 2.8))
    if noise.used["response_length"] != noise.used["rollout_time"]:
        # timings from another source lost the step's own length; in dstack they follow it
        # with an elasticity of ~0.5 (residual corr 0.28, log-sd 0.051 vs 0.031)
        own = (s["response_length"] / length) ** 0.5
        s["rollout_time"], s["step_time"] = s["rollout_time"] * own, s["step_time"] * own
    knobs.update(entropy0=round(e0, 3), grad0=round(g0, 3), len0=round(l0, 1),
                 trunc_base=round(base, 4))


def _validation(p: np.ndarray, hp: dict[str, Any], fw: str, rng: np.random.Generator,
                knobs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Eval every eval_steps (and at the last step) on a finite set: binomial, n 100-1000."""
    n, every = len(p), hp["eval_steps"]
    vs = np.arange(0 if fw == "verl" and rng.random() < 0.7 else every, n + 1, every)
    vs = vs if vs[-1] == n else np.append(vs, n)
    knobs.update(val_n=int(rng.integers(100, 1001)), val_off=round(_u(rng, -0.1, 0.03), 3))
    return vs, val_draw(p[np.maximum(vs - 1, 0)] + knobs["val_off"], knobs, rng)


def val_draw(pv: np.ndarray, knobs: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    n_val = knobs["val_n"]
    return knobs["scale"] * rng.binomial(n_val, np.clip(pv, 0.0, 1.0)) / n_val


# ----------------------------------------------------------------------------- symptoms
def _ramp(n: int, onset: int, frac: float) -> np.ndarray:
    """0 before onset, then rising linearly to 1 over `frac` of the remaining steps."""
    return np.clip((np.arange(n) - onset) / max(1.0, frac * (n - onset)), 0.0, 1.0)


def inject(run: Run, sym: str, onset: int, strength: float, rng: np.random.Generator) -> str:
    """Put one symptom into a healthy run at step index `onset`; returns the variant name."""
    s, n, k = run.s, len(run.steps), run.knobs
    if sym == "P6":  # validation falls 0.04-0.2 (x scale) from onset while the reward goes on
        run.hp["n_epochs"] = int(rng.integers(6, 16))
        after = run.val_steps > onset + 1
        frac = (run.val_steps[after] - onset - 1) / max(1, n - onset - 1)
        drop = (0.04 + 0.16 * strength) * frac ** _u(rng, 0.7, 1.3)
        run.val[after] = val_draw(s["p"][onset] + k["val_off"] - drop, k, rng)
        return "decline"
    if sym == "P3":  # reference KL x24..x316, exponentially (linear in log) from onset
        s["kl_ref"] *= (10 ** (1 + 1.5 * strength)) ** _ramp(n, onset, _u(rng, 0.1, 0.6))
        return "exp"
    if sym == "P4":  # entropy down to 1-14 % of its onset level, fast or gradual
        s["entropy"] *= (0.2 - 0.19 * strength) ** _ramp(n, onset, _u(rng, 0.15, 0.8))
        return "collapse"
    if sym == "P9":  # truncation +6..56 %, responses grow toward the cap, generation slows
        ramp = _ramp(n, onset, _u(rng, 0.1, 0.5))
        cap = run.hp["max_length"] - run.hp["max_prompt_length"]
        grow = np.maximum(1 + ramp * (0.9 * cap / s["response_length"] - 1) * strength, 1)
        s["response_length"] = np.minimum(s["response_length"] * grow, cap)
        s["rollout_time"], s["step_time"] = s["rollout_time"] * grow, s["step_time"] * grow
        s["truncation_rate"] = np.clip(s["truncation_rate"] + (0.06 + 0.5 * strength) * ramp, 0, 1)
        return "rising"
    return (_inject_nan if sym == "NAN" else _inject_p1)(run, onset, strength, rng)


def _inject_nan(run: Run, onset: int, strength: float, rng: np.random.Generator) -> str:
    """1-3 bursts of 3-11 skipped updates: grad_norm and the KLs non-finite."""
    at = onset
    for _ in range(int(rng.integers(1, 2 + int(2 * strength)))):
        length = int(rng.integers(3, 12))
        for m in [m for m in ("grad_norm", "ppo_kl", "kl_ref") if m in run.s]:
            run.s[m][at: at + length] = np.nan
        at = min(at + length + int(rng.integers(10, 60)), len(run.steps) - 4)
    return "skipped"


def _inject_p1(run: Run, onset: int, strength: float, rng: np.random.Generator) -> str:
    """Not converging, from the start (lr x0.1) or stalled after onset: the reward trend stops,
    grad_norm falls x10^-1..-2.5, the policy stops moving (ppo_kl ~ 0; reference KL, entropy
    and lengths frozen at their onset level, real noise kept)."""
    s, n = run.s, len(run.steps)
    before = np.arange(n) < onset
    s["p"] = np.where(before, s["p"], s["p"][onset])
    s["reward_mean"] = reward_of(s["p"], s["z"], run.knobs)
    ramp = _ramp(n, onset, _u(rng, 0.05, 0.3)) if onset else np.ones(n)
    s["grad_norm"] = s["grad_norm"] * 10 ** (-(1 + 1.5 * strength) * ramp)
    for m in [m for m in ("ppo_kl", "pg_clipfrac") if m in s]:
        s[m] = s[m] * 10 ** (-3 * ramp)
    for m in [m for m in ("kl_ref", "entropy", "response_length") if m in s]:
        trend = s["trend/" + m]
        s[m] = s[m] / trend * np.where(before, trend, trend[onset])
        if m == "response_length":  # generation time and truncation follow the length
            ratio = np.where(before, 1.0, trend[onset] / trend)
            s["rollout_time"], s["step_time"] = s["rollout_time"] * ratio, s["step_time"] * ratio
            s["truncation_rate"] = s["truncation_rate"] * ratio**2
    run.val = val_draw(s["p"][np.maximum(run.val_steps - 1, 0)] + run.knobs["val_off"],
                       run.knobs, rng)
    if not onset:
        run.hp["learning_rate"] *= 0.1  # the likeliest cause, as the job would show it
        s["lr"] = s["lr"] * 0.1
    return "stall" if onset else "flat"


# ----------------------------------------------------------------------------- writers
def _val_map(run: Run) -> dict[int, float]:  # validation step -> value
    return dict(zip(run.val_steps.tolist(), run.val.tolist(), strict=True))


def verl_rows(run: Run) -> list[tuple[int, dict[str, float]]]:
    """(step, {verl key: value}) in the order verl logs them; step 0 holds validation only."""
    s, vals = run.s, _val_map(run)
    rows: list[tuple[int, dict[str, float]]] = [(0, {VAL_KEY: vals[0]})] if 0 in vals else []
    mem = run.knobs.setdefault("memory_gb", round(30 + 40 * (run.hp["max_length"] / 10240), 3))
    for i, step in enumerate(run.steps.tolist()):
        reward = float(s["reward_mean"][i])
        row = {"actor/entropy": s["entropy"][i], "actor/pg_loss": -0.02 * reward,
               "actor/pg_clipfrac": s["pg_clipfrac"][i], "actor/ppo_kl": s["ppo_kl"][i],
               "actor/grad_norm": s["grad_norm"][i]}
        row |= {"actor/kl_loss": s["kl_ref"][i]} if "kl_ref" in s else {}
        row |= {"perf/max_memory_allocated_gb": mem, "actor/lr": s["lr"][i],
                "training/global_step": float(step), "critic/score/mean": reward,
                "critic/rewards/mean": reward, "response_length/mean": s["response_length"][i],
                "response_length/clip_ratio": s["truncation_rate"][i],
                "prompt_length/clip_ratio": 0.0}
        row |= {VAL_KEY: vals[step]} if step in vals else {}
        row |= {"timing_s/gen": s["rollout_time"][i],
                "timing_s/update_actor": 0.5 * (s["step_time"][i] - s["rollout_time"][i]),
                "timing_s/step": s["step_time"][i]}
        rows.append((step, {k: float(v) for k, v in row.items()}))
    return rows


def _num(v: float, style: str) -> str:
    if math.isnan(v):
        return "nan"
    if style == "3dec":  # verl <= 0.4 printed 3 decimals (an lr of 1e-6 reads 0.000)
        return f"{v:.3f}"
    return f"np.float64({v!r})" if style == "np" else repr(v)


def write_verl_console(run: Run, path: Path) -> None:
    pre, style = "\x1b[36m(TaskRunner pid=14640)\x1b[0m ", run.knobs["number_style"]
    lines = ["2026-01-12 07:03:43,653\tINFO worker.py:1879 -- Connected to Ray cluster."]
    lines += [pre + f"step:{st} - " + " - ".join(f"{k}:{_num(v, style)}" for k, v in r.items())
              for st, r in verl_rows(run)]
    lines += ["", "-" * 42, f"Job 'raysubmit_{run.run_id[-8:]}' succeeded", "-" * 42]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_verl_jsonl(run: Run, path: Path) -> None:
    path.write_text("".join(json.dumps({"step": st, "data": row}) + "\n"
                            for st, row in verl_rows(run)), encoding="utf-8")


def trl_entries(run: Run) -> list[dict[str, Any]]:
    """TRL log_history: train entries averaged over logging_steps, eval entries after them."""
    s, every, old = run.s, run.knobs["logging_steps"], run.knobs["trl_old_keys"]
    scale, per_epoch = run.knobs["scale"], max(1, len(run.steps) // run.hp["n_epochs"])
    p = np.clip(s["reward_mean"] / scale, 0, 1)
    samples = run.hp["batch_size"] * run.hp["n_rollouts"]
    vals, out, tokens = _val_map(run), [], 0.0
    for end in range(every - 1, len(run.steps), every):
        sl, step = slice(end - every + 1, end + 1), int(run.steps[end])

        def mean(m: str, sl: slice = sl) -> float:
            return float(np.mean(s[m][sl]))
        tokens += float(np.sum(s["response_length"][sl] + 300)) * samples
        e: dict[str, Any] = {"loss": mean("loss"), "grad_norm": mean("grad_norm"),
                             "learning_rate": float(s["lr"][end])}
        # early-2025 TRL (unsloth's file): completion_length, no entropy / clipped ratio
        e |= {"completion_length": mean("response_length")} if old else {
            "num_tokens": tokens, "completions/mean_length": mean("response_length"),
            "completions/clipped_ratio": mean("truncation_rate")}
        e |= {"rewards/accuracy_reward/mean": mean("reward_mean"), "reward": mean("reward_mean"),
              "reward_std": mean("reward_std")} | ({"kl": mean("kl_ref")} if "kl_ref" in s else {})
        if not old:
            e |= {"frac_reward_zero_std": mean("zero_std_frac"), "entropy": mean("entropy"),
                  "clip_ratio/region_mean": mean("pg_clipfrac")}
        out.append(e | {"epoch": round(step / per_epoch, 4), "step": step})
        for vs in [v for v in vals if v and step - every < v <= step]:
            sd = float(scale * math.sqrt(p[vs - 1] * (1 - p[vs - 1])))
            out.append({"eval_loss": 0.0, "eval_reward": vals[vs], "eval_reward_std": sd,
                        "eval_runtime": 40.0, "epoch": round(vs / per_epoch, 4), "step": vs})
    return out


def write_trl_state(run: Run, path: Path) -> None:
    hist, last = trl_entries(run), int(run.steps[-1])
    state = {"best_metric": None, "epoch": hist[-1]["epoch"], "eval_steps": run.hp["eval_steps"],
             "global_step": last, "is_world_process_zero": True, "log_history": hist,
             "logging_steps": run.knobs["logging_steps"], "max_steps": last,
             "num_train_epochs": run.hp["n_epochs"], "save_steps": run.hp["save_steps"],
             "total_flos": 0.0, "train_batch_size": run.hp["batch_size"]}
    path.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")  # NaN stays bare NaN


def write_wandb(run: Run, path: Path) -> None:
    """W&B history export. TRL: `_step` counts log calls, the step is train/global_step."""
    if run.framework == "verl":
        rows = [{"_step": st, **row} for st, row in verl_rows(run)]
    else:
        rows = [{"_step": i, "train/global_step": e["step"], "train/epoch": e["epoch"]} |
                {("eval/" + k[5:] if k.startswith("eval_") else "train/" + k): v
                 for k, v in e.items() if k not in ("step", "epoch")}
                for i, e in enumerate(trl_entries(run))]
    keys = sorted({k for r in rows for k in r if not k.startswith("_")})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["_step", "_runtime", "_timestamp", *keys])
    for i, r in enumerate(rows):  # W&B writes NaN as NaN, a missing value as an empty cell
        w.writerow([r["_step"], round(12.5 * (i + 1), 3), 1767225600 + 12.5 * (i + 1), *[
            "" if c is None else "NaN" if c != c else repr(c) for c in map(r.get, keys)]])
    path.write_text(buf.getvalue(), encoding="utf-8")


WRITERS = {"verl-jsonl": write_verl_jsonl, "verl-console": write_verl_console,
           "wandb-verl": write_wandb, "wandb-trl": write_wandb, "trl-state": write_trl_state}


def job_yaml(run: Run) -> str:
    """The platform job file, laid out as the judge set's job.yaml."""
    data = [f"  - type: {kind}\n    data_source_type: file_id\n    file_name: ./data/{f}.jsonl"
            for kind, f in (("training", "train"), ("validation", "val"))]
    hp = [f"    {k}: {v}" for k, v in run.hp.items()]
    return "\n".join([f"# real-noise job for {run.run_id}", f"job_name: {run.run_id}",
                      "workspace_dir: ./", "model: qwen3.5-9b", "mode: reinforcement",
                      "datasets:", *data, "training:", "  hyper_parameters:", *hp,
                      "  resources:", "    charge_type: mtu_postpaid", "    mtu_spec_code: MTU4",
                      "    mtu_capacity: 24"]) + "\n"


def write_run(run: Run, out: Path) -> None:
    d, name = out / run.run_id, FILES[run.fmt]
    d.mkdir(parents=True, exist_ok=True)
    WRITERS[run.fmt](run, d / name)
    (d / "job.yaml").write_text(job_yaml(run), encoding="utf-8")
    first = 0 if run.framework == "verl" and 0 in run.val_steps else int(run.steps[0])
    label = {"run_id": run.run_id, "generator": "tests/holdout/realboot_gen.py",
             **run.label, "eval_steps": run.hp["eval_steps"], "format": run.fmt,
             "metrics_file": name, "first_step": first, "last_step": int(run.steps[-1]),
             "ending": "ok", "knobs": run.knobs}
    (d / "label.json").write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------- the set
def finish(run: Run, rng: np.random.Generator) -> Run:
    """Format knobs and the TRL-only series (reward_std, zero-std groups, loss)."""
    s, scale, g, b = run.s, run.knobs["scale"], run.hp["n_rollouts"], run.hp["batch_size"]
    p = np.clip(s["reward_mean"] / scale, 0, 1)
    s["reward_std"] = scale * np.sqrt(p * (1 - p)) * np.exp(0.05 * s["z_std"])
    s["zero_std_frac"] = rng.binomial(b, np.clip(s["p"] ** g + (1 - s["p"]) ** g, 0, 1)) / b
    s["loss"] = run.hp["kl_loss_coef"] * s.get("kl_ref", 0 * p) + 0.002 * rng.standard_t(4, len(p))
    run.knobs["number_style"] = str(rng.choice(["full", "np", "3dec"], p=[0.5, 0.3, 0.2]))
    run.knobs["logging_steps"] = int(rng.choice([1, 1, 5, 10])) if run.framework == "trl" else 1
    run.knobs["trl_old_keys"] = bool(run.framework == "trl" and not run.label["symptoms"]
                                     and rng.random() < 0.25)
    return run


def make_healthy(i: int, seed: int, bank: Bank) -> Run:
    shape, rng = SHAPES[i % len(SHAPES)], np.random.default_rng([seed, i])
    run = healthy_run(shape, bank, rng)
    run.run_id = f"h-{shape}-{run.fmt}-{seed}{i:04d}"
    run.label = {"symptoms": [], "onset_step": None, "acceptable": [], "family": "healthy",
                 "variant": shape, "strength": None}
    return finish(run, rng)


def make_sick(i: int, seed: int, bank: Bank) -> Run:
    sym, rng = SICK[i % len(SICK)], np.random.default_rng([seed, 100000 + i])
    shape = str(rng.choice(["saturating", "slow"] if sym == "P6" else SHAPES[:4]))
    n = round(_u(rng, 300, 3000, log=True))
    run = healthy_run(shape, bank, rng, n=n, need_kl=sym == "P3")
    warm = max(3 * run.hp["eval_steps"], 30)  # the advisor's warm-up (engine.py)
    onset = int(warm + _u(rng, 0.1, 0.5) * (n - warm))
    if sym == "P6":  # at least 4 evaluations after the onset
        onset = min(onset, n - 4 * run.hp["eval_steps"])
    if sym == "P1" and rng.random() < 0.4:
        onset = 0
    strength = round(_u(rng, 0.25, 1.0), 3)
    variant = inject(run, sym, onset, strength, rng)
    run.run_id = f"{sym.lower()}-{variant}-{run.fmt}-{seed}{i:04d}"
    run.label = {"symptoms": [sym], "onset_step": int(run.steps[onset]),
                 "acceptable": ACCEPTABLE[sym], "family": sym, "variant": variant,
                 "strength": strength}
    return finish(run, rng)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="corpus directory (without it: --describe)")
    for flag, default in (("--n-healthy", 200), ("--n-sick", 100), ("--seed", 4242)):
        ap.add_argument(flag, type=int, default=default)
    ap.add_argument("--real-dir", type=Path, default=REAL)
    ap.add_argument("--describe", action="store_true", help="print the residual bank and stop")
    a = ap.parse_args(argv)
    bank = load_bank(a.real_dir)
    if a.describe or a.out is None:
        return describe(bank)
    for i in range(a.n_healthy):
        write_run(make_healthy(i, a.seed, bank), a.out)
    for i in range(a.n_sick):
        write_run(make_sick(i, a.seed, bank), a.out)
    print(f"{a.n_healthy + a.n_sick} runs in {a.out} ({a.n_healthy} healthy, {a.n_sick} sick)")


if __name__ == "__main__":
    main()
