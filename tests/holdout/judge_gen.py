"""Independent judge generator of labelled RL fine-tuning runs (verl / TRL shapes).

Written for the unseen evaluation of rl-advisor (issue 4: judged "on runs it has never seen")
from knowledge.md, metrics.md and what real verl/TRL logs look like; it shares no code with
the project's generators, and no threshold was tuned on one of its runs.

    .venv/bin/python tests/holdout/judge_gen.py --out /tmp/judge/set --healthy 150 --sick 154 --seed 91000

Model of a run: progress follows the cumulative learning rate (warm-up, cosine/linear decay), so
a run slows as lr decays; the reward is r0 + rise * shape(progress) with heavy-tailed AR(1)
batch noise whose size shrinks near 0/1 (binomial-like); entropy eases, KL grows and levels,
response length may grow (long CoT) and rollout time follows the generated tokens; validation
is a noisy re-measurement on a held-out set of size N every eval_steps.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SICK = ("P1", "P2", "P3", "KL0", "P4", "SLOW", "OOM", "P9", "P6", "NAN", "DIV")
SICK_VARIANTS = {
    "P1": ("lr-tiny", "const-reward", "stall"),
    "P2": ("sine", "regime", "irregular"),
    "P3": ("exp", "step"),
    "KL0": ("pinned", "pinned-trl"),
    "P4": ("fast", "gradual"),
    "SLOW": ("climb", "jump"),
    "OOM": ("sudden", "climb", "host"),
    "P9": ("rising", "from-start"),
    "P6": ("decline", "decline-late"),
    "NAN": ("skipped", "crash"),
    "DIV": ("entropy", "kl", "length", "gradnorm"),
}
ACCEPT = {
    "P1": ("KL0",), "P2": (), "P3": ("DIV",), "KL0": ("P1",), "P4": ("P1",), "SLOW": (),
    "OOM": (), "P9": ("P1", "DIV"), "P6": (), "NAN": ("DIV", "P1", "P3"),
    "DIV": ("P3", "P9", "P1", "NAN", "P4"),
    # (P9 below: a truncation share of 30 %+ cuts the reward too, which is DIV's own definition)
}
HEALTHY_VARIANTS = (
    "noisy", "early-plateau", "slow-steady", "curriculum", "sawtooth", "spiky", "resumed",
    "dapo-dyn-logged", "dapo-dyn-nolog", "length-growth", "single-nan", "saturated", "threedec",
    "on-policy", "val-noisy", "entropy-ease", "kl-growth", "lr-warmup", "cosine-tail",
    "node-hiccup", "short", "gspo-clip", "trl-nokl", "low-plateau", "signed-reward",
)
FORMATS = ("verl-console", "verl-jsonl", "wandb-verl", "trl-state", "wandb-trl")
FMT_WEIGHTS = (0.34, 0.24, 0.14, 0.22, 0.06)
FILE_OF = {"verl-console": "train.log", "verl-jsonl": "metrics.jsonl",
           "wandb-verl": "wandb_export.csv", "trl-state": "trainer_state.json",
           "wandb-trl": "wandb_export.csv"}
VERL_FORMATS = ("verl-console", "verl-jsonl", "wandb-verl")


# ----------------------------------------------------------------------------- noise helpers


def ar_t(rng: np.random.Generator, n: int, phi: float, df: float) -> np.ndarray:
    """Unit-variance AR(1) with Student-t innovations (heavy tails, autocorrelation)."""
    e = rng.standard_t(df, n) / math.sqrt(df / (df - 2))
    x = np.empty(n)
    x[0] = e[0]
    c = math.sqrt(1 - phi * phi)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + c * e[i]
    return x


def lognoise(rng: np.random.Generator, n: int, sd: float, phi: float = 0.3) -> np.ndarray:
    return np.exp(sd * ar_t(rng, n, phi, 6.0))


def smoothstep(t: np.ndarray, a: float, width: float) -> np.ndarray:
    """0 before a, 1 after a + width, smooth in between."""
    x = np.clip((t - a) / max(width, 1e-9), 0, 1)
    return x * x * (3 - 2 * x)


# ----------------------------------------------------------------------------- the run


@dataclass
class Run:
    run_id: str
    kind: str  # "healthy" or a symptom id
    variant: str
    seed: int
    fmt: str
    n: int
    eval_steps: int
    algo: str
    hp: dict[str, Any]
    rng: np.random.Generator
    s: dict[str, np.ndarray] = field(default_factory=dict)
    val: dict[int, float] = field(default_factory=dict)
    onset: int | None = None
    strength: float | None = None
    ending: str = "ok"  # ok | oom | oom-host | nan-crash | preempt
    number_style: str = "full"
    logging_steps: int = 1
    first_step: int = 1
    resume_at: int | None = None  # console: steps resume_at+1.. repeated after a restart
    kl_logged: bool = True
    on_policy: bool = False
    gen_batches_logged: bool = False
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def fw(self) -> str:
        return "verl" if self.fmt in VERL_FORMATS else "trl"

    @property
    def t(self) -> np.ndarray:
        return np.arange(1, self.n + 1, dtype=float)


def pick_hp(r: Run) -> None:
    rng = r.rng
    algo = r.algo
    if algo == "dapo":
        kl = 0.0
    elif algo == "grpo":
        kl = float(rng.choice([0.001, 0.005, 0.01, 0.02, 0.04]))
    else:
        kl = float(rng.choice([0.0005, 0.001, 0.002]))
    if r.fw == "trl" and rng.random() < 0.35:
        kl = 0.0  # TRL's default beta 0
    lr = float(rng.choice([1e-6, 2e-6, 3e-6, 5e-6, 7e-6]))
    batch = int(rng.choice([32, 64, 128, 256, 512]))
    n_roll = int(rng.choice([4, 8, 8, 16]))
    # the platform counts the mini-batch in samples (ppo_mini_batch_size <= batch_size x
    # n_rollouts, knowledge.md 2.3): on-policy (one mini-batch) only when it holds them all
    mini = int(rng.choice([batch * n_roll // 16, batch * n_roll // 8, batch * n_roll // 4,
                           batch * n_roll]))
    prompt = int(rng.choice([512, 1024, 2048]))
    max_len = int(rng.choice([2048, 4096, 8192, 16384]))
    n_ep = int(rng.integers(1, 9))
    save = r.eval_steps * int(rng.integers(2, 4))
    r.hp = {
        "algorithm": algo, "kl_loss_coef": kl, "learning_rate": lr,
        "lr_scheduler_type": str(rng.choice(["cosine", "constant", "linear"])),
        "lr_warmup_steps": int(rng.choice([-1, 0, 10, 20, max(1, r.n // 20)])),
        "n_epochs": n_ep, "batch_size": batch, "n_rollouts": n_roll,
        "ppo_mini_batch_size": mini, "max_length": max_len + prompt,
        "max_prompt_length": prompt, "eval_steps": r.eval_steps, "save_steps": save,
        "save_strategy": "steps", "save_total_limit": int(rng.choice([2, 3, 5])),
    }
    r.on_policy = mini == batch * n_roll
    r.kl_logged = kl > 0


def lr_curve(r: Run) -> np.ndarray:
    hp, t, n = r.hp, r.t, r.n
    w = hp["lr_warmup_steps"]
    w = max(1, int(0.03 * n)) if w == -1 else w
    warm = np.minimum(1.0, t / max(w, 1)) if w > 0 else np.ones_like(t)
    frac = np.clip((t - w) / max(n - w, 1), 0, 1)
    kind = hp["lr_scheduler_type"]
    floor = r.notes.get("lr_floor", 0.0)
    if kind == "cosine":
        dec = floor + (1 - floor) * 0.5 * (1 + np.cos(np.pi * frac))
    elif kind == "linear":
        dec = floor + (1 - floor) * (1 - frac)
    else:
        dec = np.ones_like(t)
    return hp["learning_rate"] * warm * dec


def shape_fn(kind: str, u: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if kind == "logistic":
        c, w = rng.uniform(0.1, 0.5), rng.uniform(0.04, 0.15)
        f = 1 / (1 + np.exp(-(u - c) / w))
    elif kind == "saturating":
        tau = rng.uniform(0.08, 0.35)
        f = 1 - np.exp(-u / tau)
    elif kind == "early":
        tau = rng.uniform(0.015, 0.05)
        f = 1 - np.exp(-u / tau)
    elif kind == "linear":
        f = u.copy()
    else:  # power
        f = u ** rng.uniform(0.3, 0.7)
    f = f - f[0]
    return f / max(f[-1], 1e-9)


def base(r: Run, shape: str | None = None, rise: tuple[float, float] = (0.15, 0.6),
         sigma: tuple[float, float] = (0.012, 0.06)) -> None:
    """The healthy skeleton every run starts from."""
    rng, n, _t = r.rng, r.n, r.t
    lr = lr_curve(r)
    cum = np.cumsum(lr)
    u = cum / cum[-1]
    shape = shape or str(rng.choice(["logistic", "saturating", "linear", "power", "early"]))
    g = shape_fn(shape, u, rng)
    r0 = rng.uniform(0.05, 0.45)
    rise_v = min(rng.uniform(*rise), 0.97 - r0)
    p = r0 + rise_v * g
    sd = rng.uniform(*sigma)
    phi = rng.uniform(0.0, 0.75)
    df = rng.uniform(3.0, 8.0)
    width = 0.3 + 0.7 * np.sqrt(np.clip(4 * p * (1 - p), 0, 1))
    reward = np.clip(p + sd * width * ar_t(rng, n, phi, df), 0, 1)
    r.notes.update(shape=shape, r0=round(r0, 3), rise=round(rise_v, 3), sigma=round(sd, 4),
                   phi=round(phi, 3), df=round(df, 2))
    s = r.s
    s["p"] = p  # the underlying success rate (not written)
    s["g"] = g
    s["lr"] = lr
    s["reward"] = reward
    s["reward_std"] = np.sqrt(np.clip(reward * (1 - reward), 0, None)) * rng.uniform(0.75, 0.95) \
        * lognoise(rng, n, 0.05)
    z0 = rng.uniform(0.08, 0.3)
    s["zstd"] = np.clip(z0 + 0.65 * (2 * reward - 1) ** 2 + 0.03 * ar_t(rng, n, 0.3, 6), 0, 1)
    e0 = rng.uniform(0.25, 1.6)
    d = rng.uniform(-0.1, 0.4)
    s["entropy"] = e0 * (1 - d * g) * lognoise(rng, n, rng.uniform(0.02, 0.07), 0.5)
    r.notes["entropy0"] = round(e0, 3)
    if r.kl_logged:
        level = float(np.exp(rng.uniform(np.log(0.002), np.log(0.05))))
        tau = rng.uniform(0.05, 0.4)
        grow = 1 - np.exp(-u / tau)
        s["kl"] = np.maximum(level * grow * lognoise(rng, n, 0.12, 0.6), 1e-7)
        s["kl"][0] = abs(rng.normal(0, 1e-5))
    lrr = lr / r.hp["learning_rate"]
    if r.on_policy:
        s["ppo_kl"] = rng.normal(0, 2e-9, n)
        s["clipfrac"] = np.zeros(n)
    else:
        q = float(np.exp(rng.uniform(np.log(1e-4), np.log(2e-3))))
        s["ppo_kl"] = q * (0.2 + 0.8 * lrr) * lognoise(rng, n, 0.4) * np.where(
            rng.random(n) < 0.15, -0.5, 1.0)
        cf = rng.uniform(0.06, 0.3) if r.algo == "gspo" else rng.uniform(5e-4, 0.012)
        s["clipfrac"] = cf * (0.3 + 0.7 * lrr) * lognoise(rng, n, 0.25)
    g0 = float(np.exp(rng.uniform(np.log(0.05), np.log(3.0))))
    s["grad_norm"] = g0 * (1 - rng.uniform(0, 0.4) * g) * lognoise(rng, n, rng.uniform(0.1, 0.3))
    s["loss"] = rng.normal(0, 0.03, n) + 0.01 * ar_t(rng, n, 0.5, 5)
    len0 = float(np.exp(rng.uniform(np.log(120), np.log(1500))))
    gamma = rng.uniform(0.7, 1.5)
    s["resp_len"] = len0 * (1 + (gamma - 1) * g) * lognoise(rng, n, 0.04, 0.5)
    r.notes["len0"] = round(len0)
    cap = r.hp["max_length"] - r.hp["max_prompt_length"]
    need = 3.0 * float(s["resp_len"].max())
    while cap < need:  # healthy runs get a max_length that fits their responses
        r.hp["max_length"] *= 2
        cap = r.hp["max_length"] - r.hp["max_prompt_length"]
    recompute_trunc(r)
    tok_s = rng.uniform(1500, 9000)  # rollout tokens/s of the cluster
    r.notes["tok_s"] = round(tok_s)
    recompute_time(r)
    s["mem"] = rng.uniform(22, 68) + 0.3 * np.cumsum(rng.random(n) < 0.01) \
        + rng.normal(0, 0.05, n)
    s["prompt_len"] = rng.uniform(80, 0.5 * r.hp["max_prompt_length"]) * lognoise(rng, n, 0.05)
    if r.algo == "dapo":
        s["gen_batches"] = np.ones(n)
    make_val(r)


def recompute_trunc(r: Run) -> None:
    s = r.s
    cap = r.hp["max_length"] - r.hp["max_prompt_length"]
    sig = 0.55
    z = (np.log(cap) - np.log(s["resp_len"]) + sig * sig / 2) / sig
    from scipy.stats import norm

    base_tr = norm.sf(z)
    # a floor of odd long answers (loops, repeated text) that real runs show even with room
    floor = r.notes.setdefault("trunc_floor", float(r.rng.choice([0.0, 0.002, 0.005, 0.01, 0.02])))
    s["trunc"] = np.clip(base_tr + floor * lognoise(r.rng, r.n, 0.5, 0.3), 0, 1)


def recompute_time(r: Run, mult: np.ndarray | None = None) -> None:
    s, rng, n = r.s, r.rng, r.n
    toks = s["resp_len"] * r.hp["batch_size"] * r.hp["n_rollouts"]
    gen = toks / r.notes["tok_s"] / 8 + 4.0
    if "gen_batches" in s:
        gen = gen * s["gen_batches"]
    if mult is not None:
        gen = gen * mult
    if "gen_noise" not in s:
        s["gen_noise"] = lognoise(rng, n, 0.06, 0.4)
    s["gen_time"] = gen * s["gen_noise"]
    s["step_time"] = s["gen_time"] + toks / r.notes["tok_s"] / 12 + rng.uniform(3, 12)


def make_val(r: Run, p_val: np.ndarray | None = None, nval: int | None = None) -> None:
    rng = r.rng
    nval = nval or r.notes.get("val_n_force") or int(rng.choice([128, 200, 500, 1319, 3000]))
    off = r.notes.setdefault("val_off", float(rng.uniform(-0.15, 0.04)))
    p = r.s["p"] if p_val is None else p_val
    steps = list(range(r.eval_steps, r.n + 1, r.eval_steps))
    if r.n not in steps:
        steps.append(r.n)
    if r.fw == "verl":
        steps = [0, *steps]
    r.val = {}
    r.notes["val_n"] = nval
    for st in steps:
        pv = float(np.clip(p[max(st - 1, 0)] + off, 0.01, 0.99))
        r.val[st] = float(np.clip(pv + rng.normal(0, math.sqrt(pv * (1 - pv) / nval)), 0, 1))


# ----------------------------------------------------------------------------- healthy variants


def healthy(r: Run) -> None:
    v, rng = r.variant, r.rng
    if v == "noisy":
        base(r, sigma=(0.07, 0.14))
        r.s["reward"] = np.clip(r.s["p"] + rng.uniform(0.07, 0.14) * ar_t(rng, r.n, rng.uniform(0.5, 0.9), 3.0), 0, 1)
    elif v == "early-plateau":
        base(r, shape="early", rise=(0.3, 0.6))
    elif v == "slow-steady":
        base(r, shape="linear", rise=(0.05, 0.15), sigma=(0.02, 0.05))
    elif v == "low-plateau":
        base(r, shape="early", rise=(0.05, 0.15))
    elif v == "curriculum":
        base(r, shape="saturating")
        stages = int(rng.integers(2, 4))
        cuts = sorted(rng.uniform(0.25, 0.85, stages - 1) * r.n)
        p = r.s["p"].copy()
        for c in cuts:
            drop = rng.uniform(0.08, 0.25)
            w = rng.uniform(3, 15)
            rec = rng.uniform(0.05, 0.2) * r.n
            dip = smoothstep(r.t, c, w) * (1 - 0.8 * smoothstep(r.t, c + w, rec))
            p = p - drop * dip
        bump(r, p)
        r.notes["cuts"] = [int(c) for c in cuts]
    elif v == "sawtooth":
        base(r)
        ep = int(rng.integers(3, 9))
        period = r.n / ep
        if period < 30:
            ep = max(2, r.n // 40)
            period = r.n / ep
        amp = rng.uniform(0.04, 0.15)
        phase = (r.t % period) / period
        bump(r, r.s["p"] + amp * (0.5 - phase))
        r.hp["n_epochs"] = ep
        r.notes["period"] = round(period, 1)
    elif v == "spiky":
        base(r)
        spikes(r, int(rng.integers(3, 9)))
    elif v == "resumed":
        base(r)
        if r.fmt == "verl-console":
            r.resume_at = int(rng.uniform(0.3, 0.7) * r.n)
        elif r.fmt == "verl-jsonl":
            r.first_step = int(rng.uniform(0.2, 0.5) * r.n)
    elif v in ("dapo-dyn-logged", "dapo-dyn-nolog"):
        base(r, shape="saturating", rise=(0.4, 0.6))
        zs = r.s["zstd"]
        mean_rounds = 1 / np.clip(1 - zs, 0.25, 1)
        nb = np.maximum(1, np.round(mean_rounds * rng.uniform(0.8, 1.2, r.n)))
        if v == "dapo-dyn-nolog":  # keep the growth modest when the rounds are not logged
            nb = 1 + (nb - 1) * 0.4
        r.s["gen_batches"] = nb
        r.gen_batches_logged = v == "dapo-dyn-logged"
        recompute_time(r)
    elif v == "length-growth":
        base(r)
        gamma = rng.uniform(2.0, 3.5)
        r.s["resp_len"] = r.s["resp_len"] * (1 + (gamma - 1) * smoothstep(r.t, 0.1 * r.n, 0.7 * r.n))
        cap = r.hp["max_length"] - r.hp["max_prompt_length"]
        while cap < 3.0 * r.s["resp_len"].max():
            r.hp["max_length"] *= 2
            cap = r.hp["max_length"] - r.hp["max_prompt_length"]
        r.s["entropy"] *= 1 + rng.uniform(0, 0.3) * smoothstep(r.t, 0.1 * r.n, 0.7 * r.n)
        recompute_trunc(r)
        recompute_time(r)
    elif v == "single-nan":
        base(r)
        i = int(rng.uniform(0.2, 0.9) * r.n)
        r.s[str(rng.choice(["grad_norm", "grad_norm", "loss"]))][i] = np.nan
        r.notes["nan_at"] = i + 1
    elif v == "saturated":
        base(r, shape="early", rise=(0.5, 0.6))
        r.s["p"] = np.minimum(r.s["p"], 0.99)
        p = 0.94 + 0.05 * r.s["g"]
        bump(r, p, sd=0.015)
        r.s["zstd"] = np.clip(0.85 + 0.1 * r.s["g"] + 0.02 * ar_t(rng, r.n, 0.3, 6), 0, 1)
        r.s["grad_norm"] *= 1 - 0.75 * r.s["g"]
        r.s["reward_std"] = np.sqrt(r.s["reward"] * (1 - r.s["reward"])) * 0.5
    elif v == "threedec":
        base(r)
        r.number_style = "3dec"
    elif v == "on-policy":
        r.hp["ppo_mini_batch_size"] = r.hp["batch_size"] * r.hp["n_rollouts"]
        r.on_policy = True
        base(r)
    elif v == "val-noisy":
        base(r, shape="early")
        nval = 100
        r.val = {st: float(np.clip(v0 + rng.normal(0, 0.045), 0, 1)) for st, v0 in r.val.items()}
        r.notes["val_n"] = nval
    elif v == "entropy-ease":
        base(r)
        r.s["entropy"] = r.s["entropy"][0:1] * (1 - rng.uniform(0.4, 0.6) * r.s["g"]) \
            * lognoise(rng, r.n, 0.05, 0.5)
    elif v == "kl-growth":
        r.algo = "grpo"
        r.hp["algorithm"] = "grpo"
        r.hp["kl_loss_coef"] = 0.001
        r.kl_logged = True
        base(r)
        lvl = rng.uniform(0.05, 0.2)
        r.s["kl"] = np.maximum(lvl * smoothstep(r.t, 0, rng.uniform(0.2, 0.6) * r.n)
                               * lognoise(r.rng, r.n, 0.1, 0.6), 1e-6)
    elif v == "lr-warmup":
        r.hp["lr_warmup_steps"] = int(rng.uniform(0.08, 0.2) * r.n)
        r.hp["lr_scheduler_type"] = "cosine"
        base(r, shape="logistic")
    elif v == "cosine-tail":
        r.hp["lr_scheduler_type"] = "cosine"
        r.notes["lr_floor"] = 0.0
        base(r, shape="saturating")
        lrr = r.s["lr"] / r.hp["learning_rate"]
        if not r.on_policy:  # policy change per step ~ lr: ppo_kl ~ lr^2 fades at the tail
            r.s["ppo_kl"] = np.abs(r.s["ppo_kl"]) * lrr ** 2 / (0.2 + 0.8 * lrr)
            r.s["clipfrac"] = r.s["clipfrac"] * lrr
    elif v == "node-hiccup":
        base(r)
        a = int(rng.uniform(0.3, 0.6) * r.n)
        w = int(rng.integers(10, 30))
        m = np.ones(r.n)
        m[a:a + w] = rng.uniform(1.8, 3.0)
        recompute_time(r, m)
        r.notes["hiccup"] = [a + 1, a + w]
    elif v == "short":
        base(r)
    elif v == "gspo-clip":
        r.algo = "gspo"
        r.hp["algorithm"] = "gspo"
        r.hp["kl_loss_coef"] = 0.001 if r.fw == "verl" else r.hp["kl_loss_coef"]
        r.kl_logged = r.hp["kl_loss_coef"] > 0
        base(r)
    elif v == "trl-nokl":
        r.hp["kl_loss_coef"] = 0.0
        r.kl_logged = False
        base(r)
    elif v == "signed-reward":
        base(r)
        r.notes["reward_affine"] = [2.0, -1.0]  # reward in [-1, 1] (format penalty style)
    else:
        raise ValueError(v)


def bump(r: Run, p: np.ndarray, sd: float | None = None) -> None:
    """Replace the underlying success rate, keep the run's noise recipe."""
    rng = r.rng
    p = np.clip(p, 0.0, 0.995)
    sd = sd if sd is not None else r.notes["sigma"]
    width = 0.3 + 0.7 * np.sqrt(np.clip(4 * p * (1 - p), 0, 1))
    r.s["p"] = p
    r.s["reward"] = np.clip(p + sd * width * ar_t(rng, r.n, r.notes["phi"], r.notes["df"]), 0, 1)
    r.s["zstd"] = np.clip(0.15 + 0.65 * (2 * r.s["reward"] - 1) ** 2
                          + 0.03 * ar_t(rng, r.n, 0.3, 6), 0, 1)
    r.s["reward_std"] = np.sqrt(np.clip(r.s["reward"] * (1 - r.s["reward"]), 0, None)) * 0.85
    make_val(r)


def spikes(r: Run, k: int) -> None:
    rng = r.rng
    for _ in range(k):
        i = int(rng.integers(5, r.n - 1))
        key = str(rng.choice(["grad_norm", "kl", "entropy", "gen_time", "reward", "ppo_kl"]))
        if key not in r.s:
            continue
        if key == "reward":
            r.s[key][i] *= rng.uniform(0.3, 0.7)
        else:
            r.s[key][i] *= rng.uniform(3, 12)
    r.notes["spikes"] = k


# ----------------------------------------------------------------------------- symptoms


def onset_for(r: Run, lo: float = 0.3, hi: float = 0.65) -> int:
    warm = max(30, 3 * r.eval_steps)
    a = max(int(lo * r.n), warm + 20)
    b = max(int(hi * r.n), a + 1)
    return int(r.rng.integers(a, b))


def sick(r: Run) -> None:
    k, v, rng = r.kind, r.variant, r.rng
    st = r.strength = float(rng.uniform(0, 1))
    t, n = r.t, r.n
    if k == "P1":
        if v == "lr-tiny":
            r.hp["learning_rate"] = 1e-8
            base(r, rise=(0.0, 0.01))
            r.onset = 1
            r.s["ppo_kl"] = np.abs(r.s["ppo_kl"]) * 0 + (5e-5 * (1 - st) + 1e-7) \
                * lognoise(rng, n, 0.3)
            r.s["grad_norm"] *= 1.0  # gradients are fine, the step is tiny
            if "kl" in r.s:
                r.s["kl"] = 1e-6 * lognoise(rng, n, 0.3) * (1 + t / n)
            r.s["clipfrac"] *= 0.01
        elif v == "const-reward":
            base(r)
            r.onset = 1
            c = float(rng.choice([0.0, 0.0, 1.0, 0.1]))
            lvl = 0.01 * (1 - st)  # weak: a few samples still score differently
            r.s["reward"] = np.clip(c + np.abs(rng.normal(0, lvl, n)) * (1 if c < 0.5 else -1), 0, 1)
            r.s["p"] = r.s["reward"]
            r.s["reward_std"] = np.abs(rng.normal(0, lvl, n))
            r.s["zstd"] = np.clip(1 - np.abs(rng.normal(0, 0.02 + 0.1 * (1 - st), n)), 0, 1)
            r.s["grad_norm"] = r.s["grad_norm"] * (0.002 + 0.05 * (1 - st))
            if "kl" in r.s:
                r.s["kl"] = r.s["kl"] * 0.01
            r.s["ppo_kl"] *= 0.01
            make_val(r)
        else:  # stall: learns, then the gradient vanishes at a low reward
            base(r, shape="saturating", rise=(0.1, 0.25))
            a = onset_for(r)
            r.onset = a
            f = 0.15 - 0.13 * st  # grad_norm ratio after the stall
            ramp = smoothstep(t, a, 20)
            r.s["grad_norm"] *= 1 - (1 - f) * ramp
            r.s["ppo_kl"] *= 1 - (1 - f * 0.1) * ramp
            r.s["clipfrac"] *= 1 - 0.99 * ramp
            p = r.s["p"].copy()
            p[a:] = p[a]
            bump(r, p)
            if "kl" in r.s:
                r.s["kl"][a:] = r.s["kl"][a] * lognoise(rng, n - a, 0.05)
    elif k == "P2":
        base(r, rise=(0.1, 0.4))
        a = onset_for(r)
        r.onset = a
        pp = r.s["p"]
        sd = r.notes["sigma"] * float(np.mean(0.3 + 0.7 * np.sqrt(np.clip(4 * pp * (1 - pp), 0, 1))))
        amp = sd * (2.0 + 6 * st) + 0.05 * st ** 2
        period = rng.uniform(16, 80)
        ph = np.zeros(n)
        if v == "sine":
            ph = np.sin(2 * np.pi * (t - a) / period)
        elif v == "regime":
            ph = np.sign(np.sin(2 * np.pi * (t - a) / period))
        else:
            x = 0.0
            state = 1.0
            for i in range(n):
                if rng.random() < 2 / period:
                    state = -state
                x = 0.7 * x + 0.3 * state
                ph[i] = x
        env = smoothstep(t, a, period / 2)
        p = np.clip(r.s["p"] + amp * ph * env - amp * 0.2 * env, 0.02, 0.98)
        bump(r, p)
        r.s["grad_norm"] *= 1 + 0.5 * env * np.abs(ph)
        r.notes.update(amp=round(amp, 3), period=round(period, 1))
    elif k == "P3":
        r.algo = str(rng.choice(["grpo", "gspo"]))
        r.hp["algorithm"] = r.algo
        if r.hp["kl_loss_coef"] == 0:
            r.hp["kl_loss_coef"] = 0.001
        r.kl_logged = True
        base(r)
        a = onset_for(r)
        r.onset = a
        top = 0.12 + 3.0 * st ** 2
        lvl = float(np.median(r.s["kl"][max(0, a - 30):a]))
        if v == "exp":
            w = rng.uniform(20, 80)
            grow = np.exp(np.log(max(top / lvl, 1.0)) * smoothstep(t, a, w))
        else:
            grow = 1 + (top / lvl - 1) * smoothstep(t, a, 4)
        r.s["kl"] = r.s["kl"] * grow
        r.s["ppo_kl"] = r.s["ppo_kl"] * (1 + (grow - 1) * 0.05)
        r.s["grad_norm"] *= 1 + 0.5 * (grow > 2)
        r.notes["kl_top"] = round(top, 3)
    elif k == "KL0":
        r.algo = str(rng.choice(["grpo", "gspo"]))
        r.hp["algorithm"] = r.algo
        if v == "pinned-trl" and r.fw != "trl":
            r.variant = v = "pinned"
        r.hp["kl_loss_coef"] = float(rng.choice([0.5, 1.0, 2.0, 5.0]))
        r.kl_logged = True
        base(r, rise=(0.0, 0.02 + 0.05 * (1 - st)))
        r.onset = 1
        r.s["kl"] = (2e-5 * (1 - st) + 2e-7) * lognoise(rng, n, 0.3) * (1 + 0.5 * t / n)
        r.s["ppo_kl"] *= 0.1
    elif k == "P4":
        base(r)
        a = onset_for(r)
        r.onset = a
        ratio = 0.25 - 0.2 * st
        w = rng.uniform(10, 40) if v == "fast" else rng.uniform(80, 200)
        w = min(w, 0.5 * (n - a))  # collapsed well before the run ends
        drop = 1 - (1 - ratio) * smoothstep(t, a, w)
        e0 = float(np.median(r.s["entropy"][:a]))
        r.s["entropy"] = e0 * drop * lognoise(rng, n, 0.05, 0.5)
        r.s["resp_len"] *= 1 - 0.4 * (1 - drop)
        recompute_trunc(r)
        recompute_time(r)
        p = r.s["p"].copy()
        p[a:] = np.minimum(p[a:], p[a] + 0.02)
        bump(r, p)
        r.notes["ratio"] = round(ratio, 3)
    elif k == "SLOW":
        base(r)
        a = onset_for(r)
        r.onset = a
        f = 1.35 + 2.5 * st
        w = rng.uniform(60, 200) if v == "climb" else rng.uniform(1, 5)
        w = min(w, 0.5 * (n - a))
        recompute_time(r, 1 + (f - 1) * smoothstep(t, a, w))
        r.notes["factor"] = round(f, 2)
    elif k == "OOM":
        base(r)
        r.ending = "oom-host" if v == "host" else "oom"
        cut = int(rng.uniform(0.4, 0.95) * n)
        if v == "climb":
            a = int(cut * rng.uniform(0.4, 0.8))
            r.s["mem"] = r.s["mem"] + (78.5 - r.s["mem"][a]) * smoothstep(t, a, cut - a)
            r.s["resp_len"] *= 1 + 0.6 * smoothstep(t, a, cut - a)
            recompute_trunc(r)
            recompute_time(r)
        truncate(r, cut)
        r.onset = cut
    elif k == "P9":
        base(r)
        cap = r.hp["max_length"] - r.hp["max_prompt_length"]
        target = 0.12 + 0.5 * st
        sig = 0.55
        from scipy.stats import norm

        # the mean length at which the cut share is `target`
        len_t = cap / math.exp(norm.isf(target) * sig - sig * sig / 2)
        if v == "from-start":
            r.onset = 1
            r.s["resp_len"] = len_t * lognoise(rng, n, 0.04, 0.5) * (1 + 0.05 * r.s["g"])
        else:
            a = onset_for(r)
            r.onset = a
            w = rng.uniform(20, 100)
            lo = r.s["resp_len"]
            r.s["resp_len"] = lo + (len_t - lo) * smoothstep(t, a - w * 0.5, w)
            # labelled onset: where the cut share first exceeds 10 %
        recompute_trunc(r)
        r.s["trunc"] = np.clip(r.s["trunc"] + rng.normal(0, 0.015, n), 0, 1)
        if v != "from-start":
            over = np.flatnonzero(r.s["trunc"] > 0.1)
            r.onset = int(over[0]) + 1 if len(over) else r.onset
        recompute_time(r)
        p = r.s["p"] * (1 - 0.5 * r.s["trunc"])
        bump(r, p)
        r.notes["trunc_target"] = round(target, 3)
    elif k == "P6":
        base(r, shape="saturating", rise=(0.3, 0.5))
        a = onset_for(r, 0.35, 0.6) if v == "decline" else onset_for(r, 0.55, 0.7)
        r.onset = a
        drop = 0.04 + 0.16 * st
        pv = r.s["p"].copy()
        pv = np.where(t > a, pv[a - 1] - drop * smoothstep(t, a, rng.uniform(0.3, 0.6) * (n - a))
                      + 0 * pv, pv)
        r.notes["val_drop"] = round(drop, 3)
        r.notes["val_n_force"] = int(rng.choice([500, 1319, 3000]))
        make_val(r, pv)
        # the training reward keeps rising a little (memorising)
        p = r.s["p"] + 0.05 * smoothstep(t, a, n - a)
        keep_val, keep_n = dict(r.val), r.notes["val_n"]
        bump(r, p)
        r.val, r.notes["val_n"] = keep_val, keep_n
    elif k == "NAN":
        base(r)
        a = onset_for(r, 0.3, 0.8)
        r.onset = a
        cnt = 2 + int(8 * st)
        if v == "skipped":
            idx = [a - 1]
            while len(idx) < cnt:
                idx.append(idx[-1] + int(rng.integers(1, 6)))
            idx = [i for i in idx if i < n]
            for i in idx:
                r.s["grad_norm"][i] = np.nan
                if rng.random() < 0.5:
                    r.s["loss"][i] = np.nan
            r.notes["nan_steps"] = [i + 1 for i in idx]
        else:
            r.s["grad_norm"][: a - 1] *= 1  # a clean run, then a short blow-up and NaN
            ramp = smoothstep(t, a - 10, 8)
            r.s["grad_norm"] *= 1 + 20 * ramp
            end = min(n, a - 1 + max(1, cnt // 2))
            for key in ("grad_norm", "loss", "kl", "entropy"):
                if key in r.s:
                    r.s[key][a - 1:end] = np.nan
            r.ending = "nan-crash"
            truncate(r, end)
            r.onset = a
    elif k == "DIV":
        base(r, rise=(0.3, 0.6))
        # the collapse comes after the reward has risen (there is a peak to fall from)
        warm = max(30, 3 * r.eval_steps)
        ok = np.flatnonzero((r.s["g"] > 0.45) & (t > warm + 20) & (t < 0.8 * n))
        a = int(ok[int(rng.integers(0, max(1, len(ok) // 2)))]) + 1 if len(ok) else onset_for(r)
        r.onset = a
        w = rng.uniform(3, 40)
        c = smoothstep(t, a, w)
        keep = 0.5 * (1 - st)  # how much of the rise survives (weak: half of it)
        p = r.s["p"].copy()
        r0, lvl = p[0], p[a - 1]
        target = r0 + (lvl - r0) * keep - r0 * 0.8 * st
        p = np.where(t >= a, lvl + (target - lvl) * c, p)
        bump(r, np.clip(p, 0.005, 1))
        if v == "entropy":
            r.s["entropy"] *= 1 + (2 + 8 * st) * c
        elif v == "kl" and not r.kl_logged:
            r.variant = "entropy"
            r.s["entropy"] *= 1 + (2 + 8 * st) * c
        elif v == "kl":
            r.s["kl"] = r.s["kl"] + (0.1 + 2 * st) * c * lognoise(rng, n, 0.2)
        elif v == "length":
            cap = r.hp["max_length"] - r.hp["max_prompt_length"]
            r.s["resp_len"] = r.s["resp_len"] + (0.95 * cap - r.s["resp_len"]) * c * (0.6 + 0.4 * st)
            recompute_trunc(r)
            recompute_time(r)
        else:
            r.variant = "gradnorm"
            r.s["grad_norm"] *= 1 + (3 + 20 * st) * c
    else:
        raise ValueError(k)


def truncate(r: Run, cut: int) -> None:
    """The run died at step `cut`."""
    r.n = cut
    for key in list(r.s):
        r.s[key] = r.s[key][:cut]
    r.val = {k: v for k, v in r.val.items() if k <= cut}


# ----------------------------------------------------------------------------- writers

VAL_KEYS = ("val-core/openai/gsm8k/reward/mean@1", "validation/data/reward/mean@1",
            "val-core/math_dapo/acc/mean@8", "val/test_score/openai/gsm8k",
            "val-core/deepscaler/reward/mean@4")


def reward_out(r: Run, x: np.ndarray) -> np.ndarray:
    a, b = r.notes.get("reward_affine", [1.0, 0.0])
    return a * x + b


def verl_rows(r: Run, rng: np.random.Generator) -> list[tuple[int, dict[str, float]]]:
    s = r.s
    vkey = VAL_KEYS[r.seed % len(VAL_KEYS)]
    rows = []
    cap = r.hp["max_length"] - r.hp["max_prompt_length"]
    tot_tokens = 0.0
    for i in range(r.n):
        step = i + 1
        row: dict[str, float] = {}
        L = float(s["resp_len"][i])
        row["global_seqlen/mean"] = round(L * 40 + 3000)
        row["actor/entropy"] = s["entropy"][i]
        if r.kl_logged:
            row["actor/kl_loss"] = s["kl"][i]
            row["actor/kl_coef"] = r.hp["kl_loss_coef"]
        row["actor/pg_loss"] = s["loss"][i]
        row["actor/pg_clipfrac"] = s["clipfrac"][i]
        row["actor/ppo_kl"] = s["ppo_kl"][i]
        row["actor/pg_clipfrac_lower"] = s["clipfrac"][i] * 0.05
        row["actor/grad_norm"] = s["grad_norm"][i]
        row["perf/mfu/actor"] = rng.uniform(0.05, 0.4)
        row["perf/max_memory_allocated_gb"] = s["mem"][i]
        row["perf/max_memory_reserved_gb"] = s["mem"][i] + 9.5
        row["perf/cpu_memory_used_gb"] = 60 + rng.normal(0, 1)
        row["actor/lr"] = s["lr"][i]
        row["training/global_step"] = step
        row["training/epoch"] = int(step * r.hp["n_epochs"] / max(r.n, 1))
        rew = reward_out(r, s["reward"][i:i + 1])[0]
        row["critic/score/mean"] = rew
        row["critic/score/max"] = reward_out(r, np.array([1.0]))[0]
        row["critic/score/min"] = reward_out(r, np.array([0.0]))[0]
        row["critic/rewards/mean"] = rew
        row["critic/rewards/max"] = row["critic/score/max"]
        row["critic/rewards/min"] = row["critic/score/min"]
        row["critic/advantages/mean"] = rng.normal(0, 1e-3)
        row["critic/advantages/max"] = rng.uniform(1, 3)
        row["critic/advantages/min"] = -rng.uniform(1, 3)
        row["response_length/mean"] = L
        row["response_length/max"] = float(min(cap, L * rng.uniform(2.5, 4)))
        row["response_length/min"] = float(max(1, L * rng.uniform(0.05, 0.3)))
        row["response_length/clip_ratio"] = s["trunc"][i]
        row["prompt_length/mean"] = s["prompt_len"][i]
        row["prompt_length/max"] = float(min(r.hp["max_prompt_length"], s["prompt_len"][i] * 2.2))
        row["prompt_length/min"] = float(s["prompt_len"][i] * 0.4)
        row["prompt_length/clip_ratio"] = 0.0
        if "gen_batches" in s and r.gen_batches_logged:
            row["train/num_gen_batches"] = float(s["gen_batches"][i])
        row["timing_s/gen"] = s["gen_time"][i]
        row["timing_s/reward"] = rng.uniform(0.5, 3)
        row["timing_s/old_log_prob"] = s["gen_time"][i] * 0.15
        if r.kl_logged:
            row["timing_s/ref"] = s["gen_time"][i] * 0.14
        row["timing_s/adv"] = rng.uniform(0.01, 0.1)
        row["timing_s/update_actor"] = s["step_time"][i] - s["gen_time"][i]
        row["timing_s/step"] = s["step_time"][i] + s["gen_time"][i] * 0.3
        row["timing_per_token_ms/gen"] = s["gen_time"][i] * 1000 / max(L * r.hp["batch_size"] * r.hp["n_rollouts"], 1)
        tok = L * r.hp["batch_size"] * r.hp["n_rollouts"]
        tot_tokens += tok
        row["perf/total_num_tokens"] = tok
        row["perf/time_per_step"] = row["timing_s/step"]
        row["perf/throughput"] = tok / row["timing_s/step"] / 8
        if step in r.val:
            row[vkey] = reward_out(r, np.array([r.val[step]]))[0]
        rows.append((step, row))
    return rows


def fmt_num(x: float, style: str, is_int: bool = False) -> str:
    if x != x:
        return "np.float64(nan)" if style == "np" else "nan"
    if style == "3dec":
        return f"{x:.3f}"
    if style == "np":
        return f"np.int64({int(x)})" if is_int else f"np.float64({float(x)!r})"
    return str(int(x)) if is_int else repr(float(x))


INT_KEYS = {"training/global_step", "training/epoch", "global_seqlen/mean",
            "train/num_gen_batches"}


def console_line(step: int, row: dict[str, float], style: str) -> str:
    return f"step:{step} - " + " - ".join(
        f"{k}:{fmt_num(v, style, k in INT_KEYS)}" for k, v in row.items())


def write_console(r: Run, path: Path) -> None:
    rng = np.random.default_rng(r.seed + 17)
    pid = 1000 + r.seed % 60000
    colour = rng.random() < 0.6
    pre = f"\x1b[36m(TaskRunner pid={pid})\x1b[0m " if colour else f"(TaskRunner pid={pid}) "
    style = r.number_style
    vkey = VAL_KEYS[r.seed % len(VAL_KEYS)]
    hp = r.hp
    head = [
        "2025-10-02 09:14:31,225\tINFO worker.py:1832 -- Started a local Ray instance. "
        "View the dashboard at 127.0.0.1:8265",
        pre + "TaskRunner hostname: node-0, PID: " + str(pid),
        pre + "{'actor_rollout_ref': {'actor': {'optim': {'lr': " + repr(hp["learning_rate"])
        + ", 'lr_warmup_steps': " + str(hp["lr_warmup_steps"]) + "}, 'ppo_mini_batch_size': "
        + str(max(1, hp["ppo_mini_batch_size"] // hp["n_rollouts"])) + ", 'use_kl_loss': " + str(r.kl_logged)
        + ", 'kl_loss_coef': " + repr(hp["kl_loss_coef"]) + "}, 'rollout': {'n': "
        + str(hp["n_rollouts"]) + "}},",
        pre + " 'data': {'train_batch_size': " + str(hp["batch_size"])
        + ", 'max_prompt_length': " + str(hp["max_prompt_length"]) + ", 'max_response_length': "
        + str(hp["max_length"] - hp["max_prompt_length"]) + "},",
        pre + " 'trainer': {'total_epochs': " + str(hp["n_epochs"]) + ", 'test_freq': "
        + str(r.eval_steps) + ", 'save_freq': " + str(hp["save_steps"]) + "}}",
        pre + "Size of train dataloader: 120, Size of val dataloader: 1",
        pre + f"Total training steps: {r.n if r.ending == 'ok' else int(r.n * 1.3)}",
    ]
    rows = verl_rows(r, rng)
    lines = list(head)

    def val_block(step: int) -> None:
        lines.append(pre + "test_gen_batch meta info: {'eos_token_id': 151645, "
                     "'pad_token_id': 151643, 'recompute_log_prob': False, 'do_sample': False, "
                     "'validate': True}")
        lines.append(pre + "validation generation end")
        lines.append(pre + "[prompt] <|im_start|>user\nWhat is 12 * 7?<|im_end|>")
        lines.append(pre + "[response] 12 * 7 = 84. #### 84")
        lines.append(pre + "[ground_truth] 84")
        lines.append(pre + f"[score] {float(rng.integers(0, 2))}")

    if 0 in r.val:
        val_block(0)
        lines.append(pre + f"step:0 - {vkey}:{fmt_num(reward_out(r, np.array([r.val[0]]))[0], style)}")
    crash_rows = []
    if r.resume_at is not None:  # the first attempt ran past the checkpoint, then died
        extra = int(rng.integers(3, max(4, r.eval_steps * 2)))
        crash_rows = [(st, dict(row)) for st, row in rows[r.resume_at:r.resume_at + extra]]
        for _, row in crash_rows:
            for key in ("critic/rewards/mean", "critic/score/mean", "actor/entropy",
                        "actor/grad_norm", "timing_s/gen"):
                row[key] = row[key] * float(rng.uniform(0.97, 1.03))
    for step, row in rows:
        if r.resume_at is not None and step == r.resume_at + 1:
            for st, crow in crash_rows:
                lines.append(pre + console_line(st, crow, style))
            lines.append("(raylet) A worker died or was killed while executing a task by an "
                         "unexpected system error.")
            lines.append("*** SIGTERM received at time=1759400000 on cpu 3 ***")
            lines.extend(head[:2])
            lines.append(pre + f"Load from checkpoint folder: checkpoints/global_step_{r.resume_at}")
            lines.append(pre + f"Setting global step to {r.resume_at}")
            if r.resume_at in r.val:
                val_block(r.resume_at)
                lines.append(pre + f"step:{r.resume_at} - {vkey}:"
                             f"{fmt_num(reward_out(r, np.array([r.val[r.resume_at]]))[0], style)}")
        if step in r.val:
            val_block(step)
        lines.append(pre + console_line(step, row, style))
        if step % hp["save_steps"] == 0:
            lines.append(pre + f"local_global_step_folder: checkpoints/global_step_{step}")
        if step % 25 == 0:
            lines.append(f"Training Progress:  {100 * step // max(r.n, 1)}%|###       | "
                         f"{step}/{r.n} [{step * 41 // 60:02d}:{step % 60:02d}<12:00, 41.2s/it]")
        if rng.random() < 0.01:
            lines.append("(WorkerDict pid=2231) WARNING 10-02 09:30:11 [scheduler.py:1754] "
                         "Sequence group 7 is preempted by PreemptionMode.RECOMPUTE mode")
    lines.extend(ending_lines(r, pre, vkey))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def ending_lines(r: Run, pre: str, vkey: str) -> list[str]:
    if r.ending == "oom":
        return [
            "Error executing job with overrides: ['algorithm.adv_estimator=grpo', "
            "'trainer.total_epochs=3']",
            "Traceback (most recent call last):",
            '  File "/opt/verl/verl/trainer/main_ppo.py", line 42, in main',
            "    run_ppo(config)",
            "ray.exceptions.RayTaskError(OutOfMemoryError): \x1b[36mray::TaskRunner.run()\x1b[39m "
            "(pid=" + str(1000 + r.seed % 60000) + ", ip=10.0.0.3)",
            '  File "/opt/verl/verl/workers/actor/dp_actor.py", line 388, in update_policy',
            "    loss.backward()",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.63 GiB. GPU 2 has a "
            "total capacity of 79.10 GiB of which 2.21 GiB is free. Including non-PyTorch memory, "
            "this process has 76.88 GiB memory in use.",
        ]
    if r.ending == "oom-host":
        return [
            "(raylet) [2025-10-02 11:02:45,001 E 4412 4412] (raylet) node_manager.cc:3069: 1 "
            "Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due "
            "to other reasons at node (ID: 3c6f..., IP: 10.0.0.3) over the last time period.",
            "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on "
            "memory. Memory on the node (IP: 10.0.0.3) where the task was running was "
            "1007.21GB / 1007.52GB (0.999692), which exceeds the memory usage threshold of 0.95.",
        ]
    if r.ending == "nan-crash":
        return [
            "Error executing job with overrides: []",
            "Traceback (most recent call last):",
            '  File "/opt/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", line 301',
            "RuntimeError: CUDA error: device-side assert triggered",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        ]
    last = r.val.get(r.n)
    tail = [pre + f"Final validation metrics: {{'{vkey}': {last!r}}}"] if last is not None else []
    return [*tail, pre + "Training Progress: 100%|##########| done"]


def write_jsonl(r: Run, path: Path) -> None:
    rng = np.random.default_rng(r.seed + 17)
    vkey = VAL_KEYS[r.seed % len(VAL_KEYS)]
    out = []
    if 0 in r.val and r.first_step == 1:
        out.append(json.dumps({"step": 0, "data": {vkey: reward_out(r, np.array([r.val[0]]))[0]}}))
    for step, row in verl_rows(r, rng):
        if step < r.first_step:
            continue
        if step == r.first_step and r.first_step > 1 and (step - 1) in r.val:
            out.append(json.dumps({"step": step - 1,
                                   "data": {vkey: reward_out(r, np.array([r.val[step - 1]]))[0]}}))
        out.append(json.dumps({"step": step, "data": {k: float(v) for k, v in row.items()}}))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def write_wandb_verl(r: Run, path: Path) -> None:
    rng = np.random.default_rng(r.seed + 17)
    vkey = VAL_KEYS[r.seed % len(VAL_KEYS)]
    rows = verl_rows(r, rng)
    keys = sorted({k for _, row in rows for k in row} | ({vkey} if r.val else set()))
    head = ["_step", "_runtime", "_timestamp", *keys]
    lines = [",".join(head)]
    t0 = 1.7594e9 + r.seed
    if 0 in r.val:
        lines.append(",".join(["0", "12.5", f"{t0:.3f}"]
                              + [repr(float(reward_out(r, np.array([r.val[0]]))[0])) if k == vkey else ""
                                 for k in keys]))
    run_t = 30.0
    for step, row in rows:
        run_t += row["timing_s/step"]
        cells = [str(step), f"{run_t:.2f}", f"{t0 + run_t:.3f}"]
        for k in keys:
            v = row.get(k)
            cells.append("" if v is None else ("NaN" if v != v else repr(float(v))))
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def trl_history(r: Run) -> list[dict[str, Any]]:
    s, k = r.s, r.logging_steps
    hist: list[dict[str, Any]] = []
    rf = "accuracy_reward"
    ntok = 0
    for j in range(0, r.n, k):
        sl = slice(j, min(r.n, j + k))
        step = sl.stop

        def m(key: str, sl: slice = sl) -> float:
            return float(np.mean(s[key][sl]))

        ntok += int(np.sum(s["resp_len"][sl] + s["prompt_len"][sl]) * r.hp["batch_size"])
        e: dict[str, Any] = {
            "loss": m("loss"),
            "grad_norm": float(s["grad_norm"][sl.stop - 1]),
            "learning_rate": float(s["lr"][sl.stop - 1]),
            "num_tokens": float(ntok),
            "completions/mean_length": m("resp_len"),
            "completions/min_length": m("resp_len") * 0.2,
            "completions/max_length": min(m("resp_len") * 3, r.hp["max_length"] - r.hp["max_prompt_length"]),
            "completions/clipped_ratio": m("trunc"),
            "completions/mean_terminated_length": m("resp_len") * (1 - m("trunc")),
            f"rewards/{rf}/mean": float(reward_out(r, np.array([m("reward")]))[0]),
            f"rewards/{rf}/std": m("reward_std"),
            "reward": float(reward_out(r, np.array([m("reward")]))[0]),
            "reward_std": m("reward_std"),
            "frac_reward_zero_std": m("zstd"),
        }
        if r.kl_logged:
            e["kl"] = m("kl")
        e["entropy"] = m("entropy")
        e["clip_ratio/low_mean"] = m("clipfrac") * 0.5
        e["clip_ratio/low_min"] = 0.0
        e["clip_ratio/high_mean"] = m("clipfrac") * 0.5
        e["clip_ratio/high_max"] = m("clipfrac") * 2
        e["clip_ratio/region_mean"] = m("clipfrac")
        e["epoch"] = round(step / r.n * r.hp["n_epochs"], 5)
        e["step"] = step
        hist.append(e)
        for vs in sorted(x for x in r.val if j < x <= step):
            hist.append({"eval_loss": 0.0, "eval_reward": float(reward_out(r, np.array([r.val[vs]]))[0]),
                         "eval_reward_std": 0.4, "eval_runtime": 85.2,
                         "eval_samples_per_second": 3.1, "eval_steps_per_second": 0.2,
                         "epoch": e["epoch"], "step": vs})
    if r.ending == "ok":
        hist.append({"epoch": hist[-1]["epoch"], "step": r.n, "total_flos": 0.0,
                     "train_loss": float(np.nanmean(s["loss"])), "train_runtime": 36000.5,
                     "train_samples_per_second": 0.9, "train_steps_per_second": 0.01})
    return hist


def write_trl_state(r: Run, path: Path) -> None:
    hist = trl_history(r)
    state = {"best_global_step": None, "best_metric": None, "best_model_checkpoint": None,
             "epoch": hist[-1]["epoch"], "eval_steps": r.eval_steps, "global_step": r.n,
             "is_hyper_param_search": False, "is_local_process_zero": True,
             "is_world_process_zero": True, "log_history": hist,
             "logging_steps": r.logging_steps, "max_steps": r.n,
             "num_input_tokens_seen": 0, "num_train_epochs": r.hp["n_epochs"],
             "save_steps": r.hp["save_steps"], "stateful_callbacks": {},
             "total_flos": 0.0, "train_batch_size": r.hp["batch_size"], "trial_name": None,
             "trial_params": None}
    path.write_text(json.dumps(state, indent=2), encoding="utf-8")


def write_wandb_trl(r: Run, path: Path) -> None:
    rows = []
    for i, e in enumerate(trl_history(r)):
        row: dict[str, Any] = {"_step": i, "train/global_step": e["step"],
                               "train/epoch": e["epoch"]}
        for key, v in e.items():
            if key in ("step", "epoch"):
                continue
            row[("eval/" + key[5:]) if key.startswith("eval_") else ("train/" + key)] = v
        rows.append(row)
    keys = ["_step", *sorted({k for row in rows for k in row} - {"_step"})]
    lines = [",".join(keys)]
    for row in rows:
        cells = []
        for k in keys:
            v = row.get(k)
            cells.append("" if v is None else ("NaN" if v != v else repr(v)))
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


WRITERS = {"verl-console": write_console, "verl-jsonl": write_jsonl,
           "wandb-verl": write_wandb_verl, "trl-state": write_trl_state,
           "wandb-trl": write_wandb_trl}


def job_yaml(r: Run) -> str:
    hp = r.hp
    lines = [f"# judge job for {r.run_id}", f"job_name: {r.run_id}", "workspace_dir: ./",
             "model: qwen3.5-9b", "mode: reinforcement", "datasets:",
             "  - type: training", "    data_source_type: file_id",
             "    file_name: ./data/train.jsonl", "  - type: validation",
             "    data_source_type: file_id", "    file_name: ./data/val.jsonl",
             "training:", "  hyper_parameters:"]
    for key, v in hp.items():
        lines.append(f"    {key}: {v if not isinstance(v, float) else repr(v)}")
    lines += ["  resources:", "    charge_type: mtu_postpaid", "    mtu_spec_code: MTU4",
              "    mtu_capacity: 24"]
    return "\n".join(lines) + "\n"


def plain(v: Any) -> Any:
    if isinstance(v, (float, np.floating)):
        return round(float(v), 6)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


# ----------------------------------------------------------------------------- plan


def make(kind: str, variant: str, seed: int) -> Run:
    rng = np.random.default_rng(seed)
    fmt = str(rng.choice(FORMATS, p=FMT_WEIGHTS))
    if kind == "SLOW" or variant in ("node-hiccup", "dapo-dyn-logged", "dapo-dyn-nolog",
                                     "threedec", "on-policy"):
        fmt = str(rng.choice(VERL_FORMATS))
    if variant == "threedec":
        fmt = "verl-console"
    if kind == "OOM":
        fmt = "verl-console"
    if variant == "resumed":
        fmt = str(rng.choice(["verl-console", "verl-jsonl"]))
    if variant in ("trl-nokl", "pinned-trl"):
        fmt = str(rng.choice(["trl-state", "wandb-trl"]))
    if kind == "KL0" and variant == "pinned" and fmt in ("trl-state", "wandb-trl"):
        fmt = "verl-jsonl"
    eval_steps = int(rng.choice([5, 10, 10, 20, 25, 50])) if rng.random() < 0.7 \
        else int(rng.integers(5, 51))
    if variant == "short":
        n = int(rng.integers(120, 220))
    elif kind == "healthy":
        n = int(np.exp(rng.uniform(np.log(120), np.log(3000))))
    else:
        n = int(np.exp(rng.uniform(np.log(max(160, 6 * eval_steps + 80)), np.log(3000))))
    algo = str(rng.choice(["grpo", "gspo", "dapo"], p=[0.4, 0.35, 0.25]))
    if variant.startswith("dapo"):
        algo = "dapo"
    run_id = f"{'h' if kind == 'healthy' else kind.lower()}-{variant}-{fmt}-{seed}"
    r = Run(run_id, kind, variant, seed, fmt, n, eval_steps, algo, {}, rng)
    pick_hp(r)
    if r.fw == "trl":
        r.logging_steps = int(rng.choice([1, 1, 1, 5, 10]))
    if fmt == "verl-console":
        r.number_style = str(rng.choice(["full", "np", "3dec"], p=[0.5, 0.3, 0.2]))
    if kind == "healthy":
        healthy(r)
    else:
        sick(r)
    r.run_id = f"{'h' if kind == 'healthy' else kind.lower()}-{r.variant}-{r.fmt}-{seed}"
    return r


def write(r: Run, out: Path) -> Path:
    d = out / r.run_id
    d.mkdir(parents=True, exist_ok=True)
    mf = FILE_OF[r.fmt]
    WRITERS[r.fmt](r, d / mf)
    (d / "job.yaml").write_text(job_yaml(r), encoding="utf-8")
    label = {
        "run_id": r.run_id, "generator": "/tmp/judge/gen.py",
        "symptoms": [] if r.kind == "healthy" else [r.kind],
        "onset_step": r.onset, "acceptable": list(ACCEPT.get(r.kind, ())),
        "family": r.kind, "variant": r.variant, "eval_steps": r.eval_steps, "format": r.fmt,
        "metrics_file": mf, "first_step": r.first_step, "last_step": r.n, "ending": r.ending,
        "strength": None if r.strength is None else round(r.strength, 3),
        "knobs": {"algorithm": r.algo, "n_steps": r.n, "seed": r.seed,
                  "number_style": r.number_style, "logging_steps": r.logging_steps,
                  "resume_at": r.resume_at, "on_policy": r.on_policy,
                  "kl_logged": r.kl_logged,
                  **{k: plain(v) for k, v in r.notes.items()}},
    }
    (d / "label.json").write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    return d


def plan(n_healthy: int, n_sick: int, seed0: int) -> list[tuple[str, str, int]]:
    out = []
    for i in range(n_healthy):
        out.append(("healthy", HEALTHY_VARIANTS[i % len(HEALTHY_VARIANTS)], seed0 + i))
    for i in range(n_sick):
        k = SICK[i % len(SICK)]
        vs = SICK_VARIANTS[k]
        out.append((k, vs[(i // len(SICK)) % len(vs)], seed0 + 5000 + i))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--healthy", type=int, default=150)
    ap.add_argument("--sick", type=int, default=154)
    ap.add_argument("--seed", type=int, default=91000)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    for kind, variant, seed in plan(a.healthy, a.sick, a.seed):
        write(make(kind, variant, seed), a.out)
    print(f"{a.healthy + a.sick} runs -> {a.out}")


if __name__ == "__main__":
    main()
