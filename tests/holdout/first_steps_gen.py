"""Runs whose symptom is there from the first steps, and healthy runs that look like them.

The guide's wait of eval_steps x 3 is for judging a trend; nothing says those steps are
healthy. This generator draws what a warm-up-as-baseline judge misses, each with a healthy
look-alike, written as verl file-logger JSONL (NaN as JSON null, as pandas and orjson write
it) or as a TRL trainer_state.json (NaN as null, TRL's None):

- P2: the reward oscillates from step 1 (period 1.5-6 eval_steps, peak-to-peak 0.25-0.45 on a
  0..1 reward, 1.5-5 x the per-step noise); look-alike: AR(1) noise, phi up to 0.8.
- DIV: a collapse inside the warm-up (reward to ~0 with entropy x5-30 or every response at
  the cap, from step 0.3-1.5 x eval_steps); look-alike: a fast early rise.
- DIV (degenerate): lr far too large, by step 3 reward 0, entropy 0, grad_norm 0, every
  completion at the cap; look-alike: a converged run, reward 0.97, entropy low but live.
- NAN: reward, KL and grad_norm written as null for the last 20-50 % of the run while the
  other metrics go on; look-alike: TRL logging every 10 steps (gaps, not silence).
- P3: KL multiplying at a steady rate, x30-200 over the run, never accelerating; look-alike:
  KL growing from 0 and levelling off at 0.01-0.06.
- P9: every completion cut from step 1 (clipped_ratio 0.9-1.0); look-alike: 1-4 % cut.

    .venv/bin/python tests/holdout/first_steps_gen.py --out DIR --per-family 20 --seed 5
    .venv/bin/rl-advisor harness DIR --no-real -j 2 --table
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

FAMILIES = ("P2", "DIV", "DIV-degenerate", "NAN", "P3", "P9")


def _ar(rng: np.random.Generator, n: int, sd: float, phi: float) -> np.ndarray:
    z = rng.standard_normal(n) * sd * math.sqrt(1 - phi * phi)
    e = np.zeros(n)
    for k in range(n):
        e[k] = (phi * e[k - 1] if k else 0.0) + z[k]
    return e


def _healthy(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    t = np.arange(1, n + 1, dtype=float)
    lo, hi = rng.uniform(0.1, 0.4), rng.uniform(0.55, 0.9)
    tau = rng.uniform(0.1, 0.5) * n
    rise = 1 - np.exp(-t / tau)
    reward = lo + (hi - lo) * rise + _ar(rng, n, rng.uniform(0.03, 0.07), rng.uniform(0, 0.7))
    p = np.clip(reward, 0.01, 0.99)
    cap = float(rng.choice([1024, 2048, 4096]))
    length = cap * rng.uniform(0.2, 0.4) * np.exp(rng.normal(0, 0.04, n))
    return {
        "reward_mean": np.clip(reward, 0, 1),
        "reward_std": np.sqrt(p * (1 - p)),
        "entropy": rng.uniform(0.3, 0.9) * (0.6 + 0.4 * np.exp(-t / n))
        * np.exp(rng.normal(0, 0.04, n)),
        "grad_norm": rng.uniform(0.1, 0.6) * np.exp(rng.normal(0, 0.2, n)),
        "kl_ref": rng.uniform(0.01, 0.06) * (1 - np.exp(-t / (rng.uniform(0.15, 0.4) * n)))
        * np.exp(rng.normal(0, 0.1, n)) + 1e-5,
        "ppo_kl": np.abs(rng.normal(8e-4, 3e-4, n)),
        "truncation_rate": np.clip(rng.uniform(0.005, 0.04) + rng.normal(0, 0.005, n), 0, 1),
        "response_length": np.minimum(length, cap),
        "zero_std_frac": np.clip(p**8 + (1 - p) ** 8 + rng.normal(0, 0.02, n), 0, 1),
        "_cap": np.full(n, cap),
    }


def _sick(fam: str, s: dict[str, np.ndarray], rng: np.random.Generator, ev: int) -> int:
    """Apply the family's symptom in place; return its onset step."""
    n = len(s["reward_mean"])
    t = np.arange(1, n + 1, dtype=float)
    cap = float(s["_cap"][0])
    if fam == "P2":
        period = rng.uniform(1.5, 6) * ev
        p2p = rng.uniform(0.25, 0.45)
        s["reward_mean"] = np.clip(
            s["reward_mean"] + p2p / 2 * np.sin(2 * math.pi * t / period + rng.uniform(0, 6.3)),
            0, 1,
        )
        return 1
    if fam == "DIV":
        at = max(3, int(rng.uniform(0.3, 1.5) * ev))
        s["reward_mean"][at:] = np.abs(rng.normal(0.01, 0.01, n - at))
        s["zero_std_frac"][at:] = np.clip(rng.normal(0.97, 0.02, n - at), 0, 1)
        if rng.random() < 0.6:
            s["entropy"][at:] *= rng.uniform(5, 30)
        else:
            s["truncation_rate"][at:] = np.clip(rng.normal(0.97, 0.02, n - at), 0, 1)
            s["response_length"][at:] = cap
        return at + 1
    if fam == "DIV-degenerate":
        at = 2
        for k, v in (("reward_mean", 0.0), ("reward_std", 0.0), ("entropy", 0.0),
                     ("grad_norm", 0.0), ("zero_std_frac", 1.0), ("truncation_rate", 1.0)):
            s[k][at:] = v
        s["response_length"][at:] = cap
        return at + 1
    if fam == "NAN":
        at = int(n * rng.uniform(0.5, 0.8))
        for k in ("reward_mean", "reward_std", "kl_ref", "grad_norm"):
            s[k][at:] = np.nan
        return at + 1
    if fam == "P3":
        growth = math.log(rng.uniform(30, 200)) / n
        s["kl_ref"] = rng.uniform(0.002, 0.01) * np.exp(growth * t) * np.exp(rng.normal(0, 0.08, n))
        return 1
    if fam == "P9":
        s["truncation_rate"] = np.clip(rng.uniform(0.9, 1.0) + rng.normal(0, 0.01, n), 0, 1)
        s["response_length"] = np.full(n, cap) * np.exp(-np.abs(rng.normal(0, 0.005, n)))
        return 1
    raise ValueError(fam)


def _lookalike(fam: str, s: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    n = len(s["reward_mean"])
    t = np.arange(1, n + 1, dtype=float)
    if fam == "P2":
        wander = _ar(rng, n, 0.04, rng.uniform(0.5, 0.8))
        s["reward_mean"] = np.clip(s["reward_mean"] + wander, 0, 1)
    elif fam == "DIV":  # a fast early rise
        s["reward_mean"] = np.clip(0.05 + 0.8 * (1 - np.exp(-t / rng.uniform(5, 15)))
                                   + rng.normal(0, 0.04, n), 0, 1)
    elif fam == "DIV-degenerate":  # converged: reward near the top, entropy low but live
        s["reward_mean"] = np.clip(0.97 + rng.normal(0, 0.01, n), 0, 1)
        s["entropy"] = rng.uniform(0.03, 0.08) * np.exp(rng.normal(0, 0.1, n))
        s["zero_std_frac"] = np.clip(rng.normal(0.8, 0.05, n), 0, 1)
        s["grad_norm"] *= 0.3
    elif fam == "P3":  # KL from 0 levelling off higher than usual
        s["kl_ref"] = rng.uniform(0.03, 0.08) * (1 - np.exp(-t / (rng.uniform(0.1, 0.3) * n))) \
            * np.exp(rng.normal(0, 0.1, n)) + 1e-5


def _write_verl(path: Path, s: dict[str, np.ndarray]) -> None:
    names = {"reward_mean": "critic/rewards/mean", "reward_std": "critic/rewards/std",
             "entropy": "actor/entropy", "grad_norm": "actor/grad_norm", "kl_ref": "actor/kl_loss",
             "ppo_kl": "actor/ppo_kl", "truncation_rate": "response_length/clip_ratio",
             "response_length": "response_length/mean"}
    n = len(s["reward_mean"])
    with path.open("w") as f:
        for i in range(n):
            data = {raw: (None if math.isnan(float(s[k][i])) else float(s[k][i]))
                    for k, raw in names.items()}
            data["timing_s/gen"] = 30.0
            f.write(json.dumps({"step": i + 1, "data": data}) + "\n")


def _write_trl(path: Path, s: dict[str, np.ndarray], every: int) -> None:
    names = {"reward_mean": "reward", "reward_std": "reward_std", "entropy": "entropy",
             "grad_norm": "grad_norm", "kl_ref": "kl",
             "truncation_rate": "completions/clipped_ratio",
             "response_length": "completions/mean_length", "zero_std_frac": "frac_reward_zero_std"}
    n = len(s["reward_mean"])
    hist: list[dict[str, Any]] = []
    for i in range(every - 1, n, every):
        row: dict[str, Any] = {"step": i + 1, "epoch": round((i + 1) / n, 4), "learning_rate": 1e-6,
                               "loss": 0.01}
        for k, raw in names.items():
            v = float(s[k][i])
            row[raw] = None if math.isnan(v) else v
        hist.append(row)
    path.write_text(json.dumps({"global_step": n, "max_steps": n, "log_history": hist}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--per-family", type=int, default=20)
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    for fam in FAMILIES:
        for i in range(a.per_family):
            for sick in (True, False):
                ev = int(rng.choice([5, 10, 20, 25]))
                n = int(rng.integers(max(200, 12 * ev), max(401, 30 * ev)))
                s = _healthy(rng, n)
                onset = _sick(fam, s, rng, ev) if sick else None
                if not sick:
                    _lookalike(fam, s, rng)
                trl = rng.random() < 0.4
                every = 10 if (fam == "NAN" and not sick and trl) else 1
                name = f"{'sick' if sick else 'calm'}-{fam.lower()}-{a.seed}-{i:03d}"
                d = a.out / name
                d.mkdir(parents=True, exist_ok=True)
                metrics = "trainer_state.json" if trl else "metrics.jsonl"
                if trl:
                    _write_trl(d / metrics, s, every)
                else:
                    _write_verl(d / metrics, s)
                sym = "DIV" if fam.startswith("DIV") else fam
                label = {
                    "run_id": name, "family": fam if sick else f"healthy-{fam.lower()}",
                    "symptoms": [sym] if sick else [],
                    # a collapse pins responses at the cap, cuts them or floors the entropy:
                    # those findings are consequences, fair beside DIV
                    "acceptable": ["P9", "P4", "P1"] if sym == "DIV" and sick else [],
                    "onset_step": onset, "eval_steps": ev, "first_step": 1, "last_step": n,
                    "metrics_file": metrics, "format": "trl-state" if trl else "verl-jsonl",
                }
                (d / "label.json").write_text(json.dumps(label, indent=1))
                algo = "grpo"
                (d / "job.yaml").write_text(
                    "training:\n  hyper_parameters:\n"
                    f"    algorithm: {algo}\n    kl_loss_coef: 0.04\n    learning_rate: 1e-6\n"
                    f"    eval_steps: {ev}\n    batch_size: 128\n    n_rollouts: 8\n"
                    f"    ppo_mini_batch_size: 32\n    max_length: {int(s['_cap'][0]) + 1024}\n"
                    "    max_prompt_length: 1024\n"
                )
    print(f"wrote {len(FAMILIES) * a.per_family * 2} runs to {a.out}")


if __name__ == "__main__":
    main()
