"""Real-anchored evaluation runs: healthy trends carrying noise resampled from real runs.

Our other generators draw noise the way we imagine it. Here the noise comes from the healthy
public runs in shared/real_runs (read with the project's own reader): each canonical metric is
split into a smooth trend (rolling median, then a moving mean) and its residuals; a synthetic
run gets a plausible healthy trend plus those residuals resampled by moving blocks (which keeps
their autocorrelation, heavy tails and the cross-metric coupling of one source step), rescaled
to the new level. Sick runs are such healthy runs with one symptom of knowledge.md section 4
injected at a labelled onset and strength.

    .venv/bin/python tests/holdout/realboot_gen.py --out /tmp/rb/set --n-healthy 200 \
        --n-sick 100 --seed 4242
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
# Healthy sources: two per real_labels.yaml; run-d judged healthy from its curves (reward
# 0.43 -> 1.5, kl smooth to ~0.02, grad_norm 0.1-0.6). run-a (a 40-step truncation/entropy
# excursion), run-b/run-c (collapses) and run-e (reward ~0 with 80 % zero-std groups) are not.
# With each: prompts behind one logged point (unsloth 1 x 6 samples per step; run-d 1 prompt,
# 10-step averages; dstack 256 prompts), to bring one-prompt tails to a bigger batch.
SOURCES = {
    "unsloth": ("labelled/trl-grpo-unsloth-llama31-8b-gsm8k/trainer_state.json", 1),
    "dstack": ("labelled/verl-ppo-gsm8k-dstack/verl_demo.log", 256),
    "run-d": ("unlabelled/run-d/trainer_state.json", 10),
}
# Additive residuals, standardised by a local robust scale (the new run sets the scale) ...
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
    return np.array([fn(y[max(0, i - half): i + half + 1]) for i in range(len(y))])


def trend_of(y: np.ndarray) -> np.ndarray:
    """Rolling median over a quarter of the run (robust to spikes; the wander at shorter
    scales stays in the residual) smoothed by a moving mean of half its width; NaN
    points are ignored (a window of only NaN takes the series median)."""
    half = max(2, len(y) // 8)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = _rolling(y, half, np.nanmedian)
        med = np.where(np.isnan(med), np.nanmedian(y), med)
        return _rolling(med, max(1, half // 2), np.mean)


def residuals(y: np.ndarray, kind: str, skip: np.ndarray | None = None) -> np.ndarray:
    """Residuals of one real series: log ratio to the trend, or a locally standardised z.
    Points in `skip` (and missing ones) get residual 0 and stay out of the trend."""
    ok = np.isfinite(y) & (True if skip is None else ~skip)
    if kind == "log":
        # Near-zeros (grad_norm ~0.001 when unsloth's one-prompt batch scored alike) are
        # one-prompt-batch events, impossible at our 16+ prompts: left out as missing.
        ok &= y > 0.15 * np.nanmedian(y)
        ly = np.log(np.where(ok, y, np.nan))
        return np.where(ok, ly - trend_of(ly), 0.0)
    yy = np.where(ok, y, np.nan)
    r = yy - trend_of(yy)
    # local RMS, not MAD: on discrete one-prompt rewards (mostly 0, now and then 2.5) a MAD
    # collapses and would blow a single lucky batch up to a 10-sigma outlier
    glob = float(np.sqrt(np.nanmean(r**2))) or 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        local = np.sqrt(_rolling(r**2, max(4, len(y) // 12), np.nanmean))
    z = r / np.maximum(np.nan_to_num(local, nan=glob), 0.3 * glob)
    return np.where(ok, np.clip(z, -12.0, 12.0), 0.0)


@dataclass
class Bank:
    """Per source: its residual series by canonical metric, all aligned on its logged steps."""

    series: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    prompts: dict[str, int] = field(default_factory=dict)
    # step_time / its trend at the real validation + checkpoint steps: set at our eval steps
    eval_ratio: list[float] = field(default_factory=list)

    def sources_with(self, metric: str) -> list[str]:
        return [s for s, m in self.series.items() if metric in m]


def load_bank(real_dir: Path) -> Bank:
    """Read every healthy source with advisor.ingest.load_run and keep its residuals."""
    sys.path.insert(0, str(REPO))
    from advisor.ingest import load_run

    bank = Bank()
    for name, (rel, prompts) in SOURCES.items():
        bank.prompts[name] = prompts
        frame = load_run(real_dir / rel).frame
        col = {c: frame[c].cast(float).fill_null(float("nan")).to_numpy() for c in frame.columns
               if c in (*Z_METRICS, *LOG_METRICS, "val_reward")}
        evals = np.isfinite(col.get("val_reward", np.full(frame.height, np.nan)))
        got: dict[str, np.ndarray] = {}
        for metric, y in col.items():
            if metric != "val_reward" and np.isfinite(y).sum() >= 20 and np.nanstd(y) > 0:
                kind = "log" if metric in LOG_METRICS else "z"
                # the validation+save steps' step_time spikes come at their eval period, which
                # block resampling would scatter: kept apart and put back at our eval steps
                skip = evals if metric == "step_time" else None
                got[metric] = residuals(y, kind, skip)
                if skip is not None and skip.any():
                    base = np.exp(trend_of(np.log(np.where(skip, np.nan, y))))
                    bank.eval_ratio += (y[skip] / base[skip]).tolist()
        bank.series[name] = got
    return bank


def describe(bank: Bank) -> None:
    """Print what each real residual looks like: spread, lag-1 autocorrelation, tails."""
    print(f"{'source':8} {'metric':16} {'n':>4} {'std':>7} {'ac1':>6} {'ac5':>6} {'kurt':>6} "
          f"{'max|r|':>7}")
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
        self.primary = str(rng.choice(list(bank.series)))
        self.index: dict[str, np.ndarray] = {}

    def __call__(self, metric: str) -> np.ndarray:
        srcs = self.bank.sources_with(metric)
        src = self.primary if self.primary in srcs else str(self.rng.choice(srcs))
        r = self.bank.series[src][metric]
        if src not in self.index:
            self.index[src] = block_index(len(r), self.n, self.rng)
        out = r[self.index[src]]
        if metric in Z_METRICS:
            k = int(np.clip(self.prompts // self.bank.prompts[src], 1, 8))
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
    s: dict[str, np.ndarray]
    val_steps: np.ndarray
    val: np.ndarray
    hp: dict[str, Any]
    knobs: dict[str, Any]
    label: dict[str, Any] = field(default_factory=dict)


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _logu(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def reward_trend(shape: str, u: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Mean reward on a 0-1 scale for a healthy learning curve of the given shape."""
    def sat(r0: float, r1: float, tau: float) -> np.ndarray:
        return r0 + (r1 - r0) * (1 - np.exp(-u / tau)) / (1 - math.exp(-1 / tau))
    if shape == "slow":
        r0 = _u(rng, 0.2, 0.7)
        return r0 + _u(rng, 0.04, 0.12) * u
    if shape == "early":
        return sat(_u(rng, 0.2, 0.5), _u(rng, 0.8, 0.95), _u(rng, 0.03, 0.07))
    if shape == "low":
        return sat(_u(rng, 0.04, 0.12), _u(rng, 0.18, 0.35), _u(rng, 0.08, 0.3))
    return sat(_u(rng, 0.1, 0.5), _u(rng, 0.6, 0.9), _u(rng, 0.15, 0.5))


def lr_curve(hp: dict[str, Any], n: int) -> np.ndarray:
    t = np.arange(n, dtype=float)
    warm = np.minimum(1.0, (t + 1) / max(1, hp["lr_warmup_steps"]))
    u = t / max(1, n - 1)
    decay = {"constant": np.ones(n), "linear": 1 - u,
             "cosine": 0.5 * (1 + np.cos(math.pi * u))}[hp["lr_scheduler_type"]]
    return hp["learning_rate"] * warm * decay


def draw_hp(fw: str, n: int, rng: np.random.Generator) -> dict[str, Any]:
    """Job hyperparameters; eval_steps 5-100, halved until the run holds 8 evaluations."""
    eval_steps = int(rng.integers(5, 101))
    while n < 8 * eval_steps and eval_steps > 5:
        eval_steps = max(5, eval_steps // 2)
    batch = int(rng.choice([16, 32, 64, 128, 256]))
    rollouts = int(rng.choice([4, 5, 8, 16]))
    prompt = int(rng.choice([512, 1024, 2048]))
    beta = float(rng.choice([0.0, 0.001, 0.01, 0.04])) if fw == "trl" else \
        float(rng.choice([0.0, 0.001, 0.002]))
    return {
        "algorithm": str(rng.choice(["grpo", "dapo", "gspo"])), "kl_loss_coef": beta,
        "learning_rate": float(rng.choice([1e-6, 2e-6]) if fw == "verl" else
                               rng.choice([1e-6, 5e-6, 1e-5])),
        "lr_scheduler_type": str(rng.choice(["constant", "cosine", "linear"])),
        "lr_warmup_steps": int(rng.choice([0, 10, 20])), "n_epochs": int(rng.integers(1, 6)),
        "batch_size": batch, "n_rollouts": rollouts,
        "ppo_mini_batch_size": batch * rollouts // int(rng.choice([1, 2, 4])),
        "max_length": prompt + int(rng.choice([2048, 4096, 8192])), "max_prompt_length": prompt,
        "eval_steps": eval_steps, "save_steps": 2 * eval_steps, "save_strategy": "steps",
        "save_total_limit": int(rng.choice([2, 3, 5])),
    }


def healthy_run(run_id: str, shape: str, bank: Bank, rng: np.random.Generator,
                n: int | None = None) -> Run:
    """A healthy run: trends by shape + real residuals at the new level."""
    fw = "verl" if rng.random() < 0.6 else "trl"
    fmt = str(rng.choice(FORMATS[fw]))
    n = n or round(_logu(rng, 150, 3000))
    hp = draw_hp(fw, n, rng)
    scale = float(rng.choice([1.0, 1.0, 1.0, 2.0, 3.0]))
    # Reward noise is sampling noise: batch_size prompts x n_rollouts samples, the samples of a
    # prompt correlated (design effect, rho 0.5); "noisy" runs have tiny batches (TRL recipes).
    if shape == "noisy":  # a notebook-sized batch, as unsloth's 1 prompt x 6
        hp["batch_size"] = int(rng.choice([1, 2, 4]))
        hp["ppo_mini_batch_size"] = hp["batch_size"] * hp["n_rollouts"]
    noise, u = Noise(bank, n, rng, hp["batch_size"]), np.linspace(0.0, 1.0, n)
    g = hp["n_rollouts"]
    n_eff = hp["batch_size"] * g / (1 + 0.5 * (g - 1))
    p = reward_trend(shape, u, rng)
    amp = _u(rng, 0.8, 1.4)
    knobs = {"shape": shape, "n_steps": n, "scale": scale, "n_eff": round(n_eff, 1),
             "noise_source": noise.primary, "reward_amp": round(amp, 2)}
    s: dict[str, np.ndarray] = {"p": p}
    s["reward_mean"] = scale * np.clip(p + amp * np.sqrt(p * (1 - p) / n_eff) *
                                       noise("reward_mean"), 0.0, 1.0)
    _companions(s, hp, fw, u, noise, rng, knobs)
    val_steps, val = _validation(p, hp, fw, scale, rng, knobs)
    at = val_steps[val_steps > 0] - 1  # validation (+ save) time lands on the step that runs it
    s["step_time"][at] *= rng.choice(bank.eval_ratio, size=len(at))
    steps = np.arange(1, n + 1)
    run = Run(run_id, fw, fmt, steps, s, val_steps, val, hp, knobs)
    return run


def _companions(s: dict[str, np.ndarray], hp: dict[str, Any], fw: str, u: np.ndarray,
                noise: Noise, rng: np.random.Generator, knobs: dict[str, Any]) -> None:
    """Entropy, grad_norm, KL, lengths, truncation, clip fraction, lr and timings."""
    def mult(metric: str, trend: np.ndarray) -> np.ndarray:
        return trend * np.exp(_u(rng, 0.7, 1.3) * noise(metric))
    e0, g0, l0 = _u(rng, 0.15, 1.0), _logu(rng, 0.05, 3.0), _logu(rng, 80, 900)
    s["entropy"] = mult("entropy", e0 * (1 - _u(rng, 0, 0.45) * (1 - np.exp(-u / 0.3))))
    s["grad_norm"] = mult("grad_norm", g0 * (1 + _u(rng, -0.4, 0.4) * u))
    length = l0 * (1 + _u(rng, -0.3, 0.6) * u)
    s["response_length"] = np.minimum(mult("response_length", length),
                                      hp["max_length"] - hp["max_prompt_length"])
    base = _u(rng, 0.0, 0.025)
    s["truncation_rate"] = np.clip(base * (length / l0) ** 2 + max(0.6 * base, 0.002) *
                                   noise("truncation_rate"), 0.0, 1.0)
    if hp["kl_loss_coef"] > 0:
        k1, tk = _logu(rng, 0.002, 0.08), _u(rng, 0.2, 1.0)
        s["kl_ref"] = mult("kl_ref", k1 * (1 - np.exp(-u / tk)) / (1 - math.exp(-1 / tk)) + 1e-5)
    clip = _u(rng, 0.001, 0.01) * (25 if hp["algorithm"] == "gspo" else 1)
    s["pg_clipfrac"] = np.maximum(0.0, clip * (1 + 0.5 * noise("pg_clipfrac")))
    if fw == "verl":
        kl = _logu(rng, 1e-4, 2e-3)
        s["ppo_kl"] = kl * (1 + 0.8 * noise("ppo_kl"))
    s["lr"] = lr_curve(hp, len(u))
    gen = _logu(rng, 3, 60) * length / l0
    s["rollout_time"] = mult("rollout_time", gen)
    s["step_time"] = mult("step_time", gen * _u(rng, 1.7, 2.8))
    knobs.update(entropy0=round(e0, 3), grad0=round(g0, 3), len0=round(l0, 1),
                 trunc_base=round(base, 4))


def _validation(p: np.ndarray, hp: dict[str, Any], fw: str, scale: float,
                rng: np.random.Generator, knobs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Eval every eval_steps (and at the last step) on a finite set: binomial, n 100-1000."""
    n, every = len(p), hp["eval_steps"]
    first = 0 if fw == "verl" and rng.random() < 0.7 else every
    vs = np.arange(first, n + 1, every)
    if vs[-1] != n:
        vs = np.append(vs, n)
    n_val, off = int(rng.integers(100, 1001)), _u(rng, -0.1, 0.03)
    knobs.update(val_n=n_val, val_off=round(off, 3))
    pv = np.clip(p[np.maximum(vs - 1, 0)] + off, 0.0, 1.0)
    return vs, val_draw(pv, n_val, scale, rng)


def val_draw(pv: np.ndarray, n_val: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    return scale * rng.binomial(n_val, np.clip(pv, 0.0, 1.0)) / n_val


# ----------------------------------------------------------------------------- symptoms


def _ramp(n: int, onset: int, frac: float) -> np.ndarray:
    """0 before onset, then rising linearly to 1 over `frac` of the remaining steps."""
    t = np.arange(n) - onset
    return np.clip(t / max(1.0, frac * (n - onset)), 0.0, 1.0)


def inject(run: Run, sym: str, onset: int, strength: float, rng: np.random.Generator) -> str:
    """Put one symptom into a healthy run at step index `onset`; returns the variant name."""
    s, n = run.s, len(run.steps)
    if sym == "P6":
        run.hp["n_epochs"] = int(rng.integers(6, 16))
        drop = (0.04 + 0.16 * strength) * run.knobs["scale"]
        after = run.val_steps > onset + 1
        frac = (run.val_steps[after] - onset - 1) / max(1, n - onset - 1)
        p_on = s["p"][onset] + run.knobs["val_off"]
        pv = np.clip(p_on - drop / run.knobs["scale"] * frac ** _u(rng, 0.7, 1.3), 0, 1)
        run.val[after] = val_draw(pv, run.knobs["val_n"], run.knobs["scale"], rng)
        return "decline"
    if sym == "P3":
        factor = 10 ** (1 + 1.5 * strength)
        ramp = _ramp(n, onset, _u(rng, 0.5, 1.0))
        s["kl_ref"] = s["kl_ref"] * factor ** ramp
        return "exp"
    if sym == "P4":
        end = 0.2 - 0.19 * strength
        s["entropy"] = s["entropy"] * end ** _ramp(n, onset, _u(rng, 0.15, 0.8))
        return "collapse"
    if sym == "P9":
        top = 0.06 + 0.5 * strength
        ramp = _ramp(n, onset, _u(rng, 0.1, 0.5))
        cap = run.hp["max_length"] - run.hp["max_prompt_length"]
        grow = 1 + ramp * (0.9 * cap / np.maximum(s["response_length"], 1) - 1) * strength
        s["response_length"] = np.minimum(s["response_length"] * np.maximum(grow, 1), cap)
        s["rollout_time"] = s["rollout_time"] * np.maximum(grow, 1)
        s["step_time"] = s["step_time"] * np.maximum(grow, 1)
        s["truncation_rate"] = np.clip(s["truncation_rate"] + top * ramp, 0, 1)
        return "rising"
    if sym == "NAN":
        return _inject_nan(run, onset, strength, rng)
    return _inject_p1(run, onset, strength, rng)


def _inject_nan(run: Run, onset: int, strength: float, rng: np.random.Generator) -> str:
    """Bursts of skipped updates: grad_norm (and the KLs, the loss) non-finite."""
    n, at = len(run.steps), onset
    for _ in range(int(rng.integers(1, 2 + int(2 * strength)))):
        length = int(rng.integers(3, 12))
        for m in ("grad_norm", "ppo_kl", "kl_ref"):
            if m in run.s:
                run.s[m][at: at + length] = np.nan
        at += length + int(rng.integers(10, 60))
        if at >= n - 3:
            break
    return "skipped"


def _inject_p1(run: Run, onset: int, strength: float, rng: np.random.Generator) -> str:
    """Not converging: the reward trend stops (from the start, or stalls after onset) while
    grad_norm falls x10^-1..-2.5 and the policy stops moving (ppo_kl, kl ~ 0)."""
    s, n = run.s, len(run.steps)
    ramp = _ramp(n, onset, _u(rng, 0.05, 0.3)) if onset else np.ones(n)
    p = s["p"]
    flat = np.where(np.arange(n) < onset, p, p[onset])
    amp = run.knobs["reward_amp"]
    noise = (s["reward_mean"] / run.knobs["scale"] - p) / np.maximum(
        amp * np.sqrt(p * (1 - p) / run.knobs["n_eff"]), 1e-9)
    sd = amp * np.sqrt(flat * (1 - flat) / run.knobs["n_eff"])
    s["reward_mean"] = run.knobs["scale"] * np.clip(flat + sd * noise, 0, 1)
    s["p"] = flat
    shrink = 10 ** (-(1 + 1.5 * strength) * ramp)
    s["grad_norm"] = s["grad_norm"] * shrink
    for m in ("ppo_kl", "pg_clipfrac"):
        if m in s:
            s[m] = s[m] * 10 ** (-3 * ramp)
    if "kl_ref" in s:
        s["kl_ref"] = np.where(ramp > 0, s["kl_ref"][onset] * 10 ** (-3 * ramp), s["kl_ref"])
    s["entropy"] = np.where(np.arange(n) < onset, s["entropy"], s["entropy"][onset] *
                            s["entropy"] / np.maximum(_smooth(s["entropy"]), 1e-12))
    run.val = val_draw(np.clip(flat[np.maximum(run.val_steps - 1, 0)] + run.knobs["val_off"],
                               0, 1), run.knobs["val_n"], run.knobs["scale"], rng)
    if not onset:
        run.hp["learning_rate"] *= 0.1  # the likeliest cause, as the job would show it
        s["lr"] = s["lr"] * 0.1
    return "stall" if onset else "flat"


def _smooth(y: np.ndarray) -> np.ndarray:
    k = max(3, len(y) // 20)
    return np.convolve(np.pad(y, k, mode="edge"), np.ones(2 * k + 1) / (2 * k + 1), "valid")


# ----------------------------------------------------------------------------- writers


def _val_map(run: Run) -> dict[int, float]:
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
        if "kl_ref" in s:
            row["actor/kl_loss"] = s["kl_ref"][i]
        row |= {"perf/max_memory_allocated_gb": mem, "actor/lr": s["lr"][i],
                "training/global_step": float(step), "critic/score/mean": reward,
                "critic/rewards/mean": reward, "response_length/mean": s["response_length"][i],
                "response_length/clip_ratio": s["truncation_rate"][i],
                "prompt_length/clip_ratio": 0.0}
        if step in vals:
            row[VAL_KEY] = vals[step]
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
    pid = 1000 + int(run.knobs["n_steps"]) * 7 % 50000
    pre = f"\x1b[36m(TaskRunner pid={pid})\x1b[0m "
    style = run.knobs["number_style"]
    hp = run.hp
    conf = {"actor_rollout_ref": {"actor": {"optim": {"lr": hp["learning_rate"]},
                                            "kl_loss_coef": hp["kl_loss_coef"]},
                                  "rollout": {"n": hp["n_rollouts"]}},
            "trainer": {"test_freq": hp["eval_steps"]}}
    lines = ["2026-01-12 07:03:43,653\tINFO worker.py:1879 -- Connected to Ray cluster.",
             pre + repr(conf)]
    for step, row in verl_rows(run):
        body = " - ".join(f"{k}:{_num(v, style)}" for k, v in row.items())
        lines.append(pre + f"step:{step} - {body}")
    lines += ["", "-" * 42, f"Job 'raysubmit_{run.run_id[-8:]}' succeeded", "-" * 42]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_verl_jsonl(run: Run, path: Path) -> None:
    path.write_text("".join(json.dumps({"step": st, "data": row}) + "\n"
                            for st, row in verl_rows(run)), encoding="utf-8")


def trl_entries(run: Run) -> list[dict[str, Any]]:
    """TRL log_history: train entries averaged over logging_steps, eval entries after them."""
    s, every, old = run.s, run.knobs["logging_steps"], run.knobs["trl_old_keys"]
    g, scale = run.hp["n_rollouts"], run.knobs["scale"]
    p = np.clip(s["reward_mean"] / scale, 0, 1)
    per_epoch = max(1, len(run.steps) // run.hp["n_epochs"])
    vals, out, tokens = _val_map(run), [], 0.0
    for end in range(every - 1, len(run.steps), every):
        sl = slice(end - every + 1, end + 1)
        step = int(run.steps[end])
        tokens += float(np.sum(s["response_length"][sl] + 300) * run.hp["batch_size"] * g)
        e: dict[str, Any] = {"loss": float(np.mean(s["loss"][sl])),
                             "grad_norm": float(np.mean(s["grad_norm"][sl])),
                             "learning_rate": float(s["lr"][end])}
        def mean(m: str, sl: slice = sl) -> float:
            return float(np.mean(s[m][sl]))
        if old:
            e["completion_length"] = mean("response_length")
        else:
            e |= {"num_tokens": tokens, "completions/mean_length": mean("response_length"),
                  "completions/clipped_ratio": mean("truncation_rate")}
        e |= {"rewards/accuracy_reward/mean": mean("reward_mean"), "reward": mean("reward_mean"),
              "reward_std": mean("reward_std")}
        if not old:
            e["frac_reward_zero_std"] = mean("zero_std_frac")
        if "kl_ref" in s:
            e["kl"] = mean("kl_ref")
        if not old:
            e |= {"entropy": mean("entropy"), "clip_ratio/region_mean": mean("pg_clipfrac")}
        e |= {"epoch": round(step / per_epoch, 4), "step": step}
        out.append(e)
        for vs in [v for v in vals if v and step - every < v <= step]:
            out.append({"eval_loss": 0.0, "eval_reward": vals[vs],
                        "eval_reward_std": float(scale * math.sqrt(max(p[vs - 1] * (1 - p[vs - 1]),
                                                                          0.0))),
                        "eval_runtime": 40.0, "epoch": round(vs / per_epoch, 4), "step": vs})
    return out


def write_trl_state(run: Run, path: Path) -> None:
    hist, last = trl_entries(run), int(run.steps[-1])
    state = {"best_metric": None, "best_model_checkpoint": None, "epoch": hist[-1]["epoch"],
             "eval_steps": run.hp["eval_steps"], "global_step": last,
             "is_hyper_param_search": False, "is_local_process_zero": True,
             "is_world_process_zero": True, "log_history": hist,
             "logging_steps": run.knobs["logging_steps"], "max_steps": last,
             "num_input_tokens_seen": 0, "num_train_epochs": run.hp["n_epochs"],
             "save_steps": run.hp["save_steps"], "total_flos": 0.0,
             "train_batch_size": run.hp["batch_size"], "trial_name": None, "trial_params": None}
    path.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")  # NaN stays bare NaN


def write_wandb(run: Run, path: Path) -> None:
    """W&B history export. TRL: `_step` counts log calls, the step is train/global_step."""
    if run.framework == "verl":
        rows = [{"_step": st, **row} for st, row in verl_rows(run)]
    else:
        rows = []
        for i, e in enumerate(trl_entries(run)):
            row: dict[str, Any] = {"_step": i, "train/global_step": e["step"],
                                   "train/epoch": e["epoch"]}
            for k, v in e.items():
                if k not in ("step", "epoch"):
                    row["eval/" + k[5:] if k.startswith("eval_") else "train/" + k] = v
            rows.append(row)
    keys = sorted({k for r in rows for k in r if not k.startswith("_")})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["_step", "_runtime", "_timestamp", *keys])
    for i, r in enumerate(rows):
        cells = [r.get(k) for k in keys]
        w.writerow([r["_step"], round(12.5 * (i + 1), 3), 1767225600 + 12.5 * (i + 1),
                    *["" if c is None else "NaN" if c != c else repr(c) for c in cells]])
    path.write_text(buf.getvalue(), encoding="utf-8")


WRITERS = {"verl-jsonl": write_verl_jsonl, "verl-console": write_verl_console,
           "wandb-verl": write_wandb, "wandb-trl": write_wandb, "trl-state": write_trl_state}


def job_yaml(run: Run) -> str:
    hp = "\n".join(f"    {k}: {v}" for k, v in run.hp.items())
    return f"""# real-noise job for {run.run_id}
job_name: {run.run_id}
workspace_dir: ./
model: qwen3.5-9b
mode: reinforcement
datasets:
  - type: training
    data_source_type: file_id
    file_name: ./data/train.jsonl
  - type: validation
    data_source_type: file_id
    file_name: ./data/val.jsonl
training:
  hyper_parameters:
{hp}
  resources:
    charge_type: mtu_postpaid
    mtu_spec_code: MTU4
    mtu_capacity: 24
"""


def write_run(run: Run, out: Path) -> None:
    d = out / run.run_id
    d.mkdir(parents=True, exist_ok=True)
    name = FILES[run.fmt]
    WRITERS[run.fmt](run, d / name)
    (d / "job.yaml").write_text(job_yaml(run), encoding="utf-8")
    first = 0 if run.fmt != "trl-state" and run.framework == "verl" and 0 in run.val_steps \
        else int(run.steps[0])
    label = {"run_id": run.run_id, "generator": "tests/holdout/realboot_gen.py",
             **run.label, "eval_steps": run.hp["eval_steps"], "format": run.fmt,
             "metrics_file": name, "first_step": first, "last_step": int(run.steps[-1]),
             "ending": "ok", "knobs": run.knobs}
    (d / "label.json").write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------- the set


def finish(run: Run, rng: np.random.Generator) -> Run:
    """Format knobs and the TRL-only series (reward_std, zero-std groups, loss)."""
    s, scale, g = run.s, run.knobs["scale"], run.hp["n_rollouts"]
    p = np.clip(s["reward_mean"] / scale, 0, 1)
    s["reward_std"] = scale * np.sqrt(p * (1 - p)) * np.exp(0.1 * np.tanh(rng.normal(size=len(p))))
    all_same = np.clip(s["p"] ** g + (1 - s["p"]) ** g, 0, 1)
    s["zero_std_frac"] = rng.binomial(run.hp["batch_size"], all_same) / run.hp["batch_size"]
    s["loss"] = run.hp["kl_loss_coef"] * s.get("kl_ref", np.zeros(len(p))) + \
        0.002 * rng.standard_t(4, size=len(p))
    run.knobs["number_style"] = str(rng.choice(["full", "np", "3dec"], p=[0.5, 0.3, 0.2]))
    run.knobs["logging_steps"] = int(rng.choice([1, 1, 5, 10])) if run.framework == "trl" else 1
    run.knobs["trl_old_keys"] = bool(run.framework == "trl" and not run.label["symptoms"]
                                     and rng.random() < 0.25)
    return run


def make_healthy(i: int, seed: int, bank: Bank) -> Run:
    rng = np.random.default_rng([seed, i])
    shape = SHAPES[i % len(SHAPES)]
    run = healthy_run("", shape, bank, rng)
    run.run_id = f"h-{shape}-{run.fmt}-{seed}{i:04d}"
    run.label = {"symptoms": [], "onset_step": None, "acceptable": [], "family": "healthy",
                 "variant": shape, "strength": None}
    return finish(run, rng)


def make_sick(i: int, seed: int, bank: Bank) -> Run:
    rng = np.random.default_rng([seed, 100000 + i])
    sym = SICK[i % len(SICK)]
    shape = str(rng.choice(["saturating", "slow"] if sym == "P6" else SHAPES[:4]))
    n = round(_logu(rng, 300, 3000))
    run = healthy_run("", shape, bank, rng, n=n)
    if sym == "P3" and "kl_ref" not in run.s:  # P3 needs a logged reference KL
        run.hp["kl_loss_coef"] = 0.001 if run.framework == "verl" else 0.04
        run.s["kl_ref"] = _logu(rng, 0.002, 0.05) * np.exp(0.3 * rng.standard_t(5, size=n)) * \
            np.sqrt(np.linspace(0.02, 1, n))
    warm = max(3 * run.hp["eval_steps"], 30)
    onset = int(warm + _u(rng, 0.1, 0.5) * (n - warm))
    if sym == "P6":
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
    ap.add_argument("--out", type=Path)
    ap.add_argument("--n-healthy", type=int, default=200)
    ap.add_argument("--n-sick", type=int, default=100)
    ap.add_argument("--seed", type=int, default=4242)
    ap.add_argument("--real-dir", type=Path, default=REAL)
    ap.add_argument("--describe", action="store_true", help="print the residual bank and stop")
    a = ap.parse_args(argv)
    bank = load_bank(a.real_dir)
    if a.describe or a.out is None:
        describe(bank)
        return
    runs = [make_healthy(i, a.seed, bank) for i in range(a.n_healthy)]
    runs += [make_sick(i, a.seed, bank) for i in range(a.n_sick)]
    for run in runs:
        write_run(run, a.out)
    print(f"{len(runs)} runs in {a.out} ({a.n_healthy} healthy, {a.n_sick} sick)")


if __name__ == "__main__":
    main()
