"""Blind ingestion holdout: training logs written the way real trainers write them.

    .venv/bin/python tests/ingest/blind/make_blind.py OUT_DIR [--seed 7]

Every case goes to OUT_DIR/<case>/data/<input> (a file or a run directory) with
OUT_DIR/<case>/expected.json beside `data/`, never inside it, so a directory input holds only
what the trainer left. expected.json carries the exact step count, the first and last step, the
canonical metrics that must be present (and those that must be absent), spot-check values read
back from the very tokens written, the true learning rate, and, per check, the reason when the
spec (contract.md, metrics.md) leaves the right answer open.

The formats follow the trainers' own writers (looked up in their public sources): verl's
`concat_dict_to_str` (3 decimals up to v0.4, `pprint.pformat` later, numpy 2 reprs) behind Ray
actor prefixes, verl's FileLogger (compact JSON, NaN written as null), transformers'
ProgressCallback (`str(logs)`, floats as `.4g` strings since 4.5x) amid tqdm, trainer_state.json
(`json.dumps(indent=2, sort_keys=True)`), W&B exports, MLflow's file store, OpenRLHF's
`Global step N: {...}`, slime's `rollout/perf/step/eval N: {...}`, ROLL's `metrics_tag:`.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import pprint
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

Row = dict[str, float | int]
Series = dict[int, Row]  # step -> framework key -> value
Fmt = Callable[[float | int], str]

AMBIG_STEP0 = ("contract.md/metrics.md say verl's pre-training validation is its own line at "
               "step 0 but not whether that line is a row of the run")
AMBIG_CUT = "the spec is silent on whether a final line cut mid-write still counts as a step"
AMBIG_NOSTEP = ("transformers' console dicts carry no step: with logging_steps > 1 the step "
                "comes only from the tqdm counter, which the spec does not mention")
AMBIG_ENCODING = "the spec says nothing about text encodings (PowerShell writes UTF-16)"
AMBIG_NOT_LISTED = "this file kind is not among the inputs contract.md/README list"
AMBIG_MLROOT = ("contract.md: METRICS is a file or a run directory; an mlruns root holding one "
                "run is neither")
ALL_CHECKS = ("load", "steps", "first_step", "last_step", "metrics_present", "metrics_absent",
              "spots", "lr_hint")
AMBIG_WANDB_TRL = ("contract.md names `_step` as the W&B history step column, but for a TRL run "
                   "`_step` counts wandb.log calls and the trainer step is train/global_step")


# ----------------------------------------------------------------------------- expectations
@dataclass
class Case:
    """One input and what a correct reader must make of it."""

    name: str
    family: str
    input: str
    steps: list[int]
    present: list[str]
    spots: list[dict[str, object]] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    lr_true: float | None = None
    ambiguous: dict[str, str] = field(default_factory=dict)
    notes: str = ""
    requires: str | None = None  # an optional module the reader needs for this format

    def spot(self, step: int, metric: str, token: str) -> None:
        """Record the value a reader must find, parsed back from the token written."""
        self.spots.append({"step": step, "metric": metric, "value": token_value(token)})

    def to_json(self) -> dict[str, object]:
        steps = sorted(set(self.steps))
        return {
            "case": self.name, "family": self.family, "input": self.input,
            "steps": len(steps), "first_step": steps[0], "last_step": steps[-1],
            "metrics_present": sorted(set(self.present)), "metrics_absent": self.absent,
            "spots": self.spots, "lr_true": self.lr_true, "ambiguous": self.ambiguous,
            "notes": self.notes, "requires": self.requires,
        }


def token_value(token: str) -> float | str:
    """The number a log token stands for; non-finite values as strings JSON can hold."""
    tok = token.strip().strip("'\"")
    if tok.startswith("np.") and tok.endswith(")"):
        tok = tok[tok.index("(") + 1:-1]
    value = float(tok)
    return value if math.isfinite(value) else str(value)


# ----------------------------------------------------------------------------- value formats
def fmt3(v: float | int) -> str:
    """verl up to v0.4: f'{v:.3f}' for every number."""
    return f"{v:.3f}"


def fmt_repr(v: float | int) -> str:
    """verl v0.5 with plain Python numbers: pprint.pformat."""
    return pprint.pformat(v)


def fmt_np(v: float | int) -> str:
    """verl v0.5+ under numpy 2: reductions return numpy scalars, whose repr is np.float64(x)."""
    return f"np.int64({v})" if isinstance(v, int) else f"np.float64({v!r})"


def g4(v: float | int) -> str:
    """transformers >= 4.5x ProgressCallback: floats shown as f'{v:.4g}' strings."""
    return f"{v:.4g}"


# ----------------------------------------------------------------------------- simulators
def _curve(t: float, start: float, end: float, rate: float = 3.0) -> float:
    return end + (start - end) * math.exp(-rate * t)


def verl_series(rng: random.Random, steps: list[int], test_freq: int, datasets: list[str],
                lr: float = 1e-6, val_key: str = "val-core/{ds}/reward/mean@1",
                modern: bool = True) -> Series:
    """verl GRPO metrics per step, in the order verl's fit loop fills its metrics dict."""
    last = steps[-1]
    out: Series = {}
    for s in steps:
        t = s / max(last, 1)
        score = min(1.0, max(0.0, _curve(t, 0.15, 0.72) + rng.gauss(0, 0.03)))
        row: Row = {}
        if modern:
            row |= {"training/global_step": s, "training/epoch": s // 58}
        row |= {
            "actor/entropy": _curve(t, 1.1, 0.35, 1.5) + rng.gauss(0, 0.01),
            "actor/pg_loss": rng.gauss(0, 0.02),
            "actor/pg_clipfrac": abs(rng.gauss(0.002, 0.001)),
            "actor/ppo_kl": rng.gauss(0, 3e-4),
            "actor/pg_clipfrac_lower": 0.0,
            "actor/kl_loss": 0.001 + 0.03 * t + abs(rng.gauss(0, 0.002)),
            "actor/kl_coef": 0.001,
            "actor/grad_norm": abs(rng.gauss(0.25, 0.06)),
            "perf/mfu/actor": 0.31 + rng.gauss(0, 0.01),
            "perf/max_memory_allocated_gb": 41.0 + rng.random() * 3,
            "perf/max_memory_reserved_gb": 60.0 + rng.random() * 3,
            "actor/lr": lr,
        }
        if s % test_freq == 0 or s == last:
            row |= {val_key.format(ds=ds): round(score * 0.9 - 0.05 * i + rng.gauss(0, 0.02), 4)
                    for i, ds in enumerate(datasets)}
        row |= _verl_data_metrics(rng, t, score)
        out[s] = row
    return out


def _verl_data_metrics(rng: random.Random, t: float, score: float) -> Row:
    resp = 280 + 420 * t + rng.gauss(0, 15)
    gen = 38 + 30 * t + rng.random() * 4
    row: Row = {
        "critic/score/mean": score, "critic/score/max": 1.0, "critic/score/min": 0.0,
        # rewards differ from score (overlong penalty), so the two must not be confused
        "critic/rewards/mean": score - 0.02 - 0.03 * rng.random(),
        "critic/rewards/max": 1.0, "critic/rewards/min": -0.5,
        "critic/advantages/mean": rng.gauss(0, 0.01), "critic/advantages/max": 2.4,
        "critic/advantages/min": -2.4, "critic/returns/mean": rng.gauss(0, 0.01),
        "response_length/mean": resp, "response_length/max": 1024.0,
        "response_length/min": 21.0, "response_length/clip_ratio": 0.01 + 0.06 * t,
        "prompt_length/mean": 104.5, "prompt_length/max": 231.0, "prompt_length/min": 43.0,
        "prompt_length/clip_ratio": 0.0,
        "timing_s/gen": gen, "timing_s/reward": 0.9, "timing_s/old_log_prob": 6.1,
        "timing_s/ref": 5.8, "timing_s/adv": 0.05, "timing_s/update_actor": 19.0 + rng.random(),
    }
    row["timing_s/step"] = gen + 32.0 + rng.random()
    row |= {"timing_per_token_ms/gen": 0.041, "perf/total_num_tokens": int(resp * 1024),
            "perf/time_per_step": row["timing_s/step"], "perf/throughput": 1200.0 + rng.random()}
    return row


def trl_series(rng: random.Random, steps: list[int], lr: float, beta: float) -> Series:
    """TRL GRPOTrainer log dicts in the order Trainer.log builds them (loss, grad_norm, lr...)."""
    last = steps[-1]
    out: Series = {}
    for s in steps:
        t = s / last
        reward = min(2.0, max(0.0, _curve(t, 0.3, 1.6) + rng.gauss(0, 0.06)))
        row: Row = {"loss": rng.gauss(0.0, 0.01), "grad_norm": abs(rng.gauss(0.4, 0.1)),
                    "learning_rate": lr * (1 - (s - 1) / last), "num_tokens": float(s * 41234),
                    "completions/mean_length": 190 + 250 * t + rng.gauss(0, 8),
                    "completions/min_length": 30.0, "completions/max_length": 512.0,
                    "completions/clipped_ratio": 0.02 + 0.1 * t,
                    "rewards/accuracy_reward/mean": reward * 0.6,
                    "rewards/accuracy_reward/std": 0.45,
                    "rewards/format_reward/mean": reward * 0.4,
                    "rewards/format_reward/std": 0.3,
                    "reward": reward, "reward_std": 0.5 + rng.gauss(0, 0.03),
                    "frac_reward_zero_std": 0.1 + 0.3 * t}
        if beta > 0:
            row["kl"] = 0.0005 + 0.01 * t + abs(rng.gauss(0, 5e-4))
        row |= {"entropy": _curve(t, 0.9, 0.3, 1.2) + rng.gauss(0, 0.01),
                "clip_ratio/low_mean": 0.0, "clip_ratio/low_min": 0.0,
                "clip_ratio/high_mean": 0.0, "clip_ratio/high_max": 0.0,
                "clip_ratio/region_mean": abs(rng.gauss(0.001, 5e-4)),
                "epoch": round(s / last, 4)}
        out[s] = row
    return out


def trl_eval(rng: random.Random, step: int, last: int) -> Row:
    t = step / last
    return {"eval_loss": 0.0, "eval_reward": round(_curve(t, 0.25, 1.4) + rng.gauss(0, 0.05), 4),
            "eval_reward_std": 0.55, "eval_completions/mean_length": 200 + 200 * t,
            "eval_runtime": 31.4, "eval_samples_per_second": 3.18,
            "eval_steps_per_second": 0.41, "epoch": round(t, 4)}


def trl_summary(step: int) -> Row:
    return {"train_runtime": 5400.2, "train_samples_per_second": 0.95,
            "train_steps_per_second": 0.12, "total_flos": 0.0, "train_loss": 0.0031, "epoch": 1.0}


# ----------------------------------------------------------------------------- verl console
GSM8K_RESPONSE = ["Let me solve this step by step.",
                  "Step 1: Janet's ducks lay 16 eggs per day.",
                  "Step 2: She eats 3 - 4 are baked, so 16 - 3 - 4 = 9 eggs are sold.",
                  "#### 18"]


def ray(actor: str, pid: int, ansi: bool) -> str:
    """Ray's per-line actor prefix; colour codes when the driver's stdout was a terminal."""
    tag = f"({actor} pid={pid})"
    return f"\x1b[36m{tag}\x1b[0m " if ansi else f"{tag} "


def verl_step_line(step: int, row: Row, fmt: Fmt) -> str:
    return " - ".join([f"step:{step}"] + [f"{k}:{fmt(v)}" for k, v in row.items()])


def verl_config_dump(lr: float, total: int, test_freq: int) -> str:
    """The resolved config verl pprints at start (a nested dict, wrapped by pprint)."""
    cfg = {"actor_rollout_ref": {
        "actor": {"clip_ratio": 0.2, "entropy_coeff": 0, "kl_loss_coef": 0.001,
                  "kl_loss_type": "low_var_kl", "optim": {"lr": lr, "lr_warmup_steps": -1,
                                                          "weight_decay": 0.01},
                  "ppo_epochs": 1, "ppo_mini_batch_size": 256, "use_kl_loss": True},
        "rollout": {"n": 8, "name": "vllm", "temperature": 1.0, "response_length": 1024,
                    "gpu_memory_utilization": 0.6}},
        "algorithm": {"adv_estimator": "grpo", "kl_ctrl": {"kl_coef": 0.001}},
        "data": {"max_prompt_length": 512, "max_response_length": 1024,
                 "train_batch_size": 1024, "train_files": "~/data/gsm8k/train.parquet"},
        "trainer": {"logger": ["console"], "test_freq": test_freq, "total_epochs": 15,
                    "total_training_steps": total, "val_before_train": False}}
    return pprint.pformat(cfg, width=100)


def verl_preamble(pid: int, ansi: bool, lr: float, total: int, test_freq: int) -> list[str]:
    p = ray("TaskRunner", pid, ansi)
    w = ray("WorkerDict", pid + 517, ansi)
    lines = ["2025-06-01 10:00:01,234\tINFO worker.py:1832 -- Started a local Ray instance. "
             "View the dashboard at \x1b[1m\x1b[32m127.0.0.1:8265 \x1b[39m\x1b[22m",
             f"{p}TaskRunner hostname: gpu-node-3, PID: {pid}"]
    lines += [p + ln for ln in verl_config_dump(lr, total, test_freq).splitlines()]
    lines += [f"{p}Using dataset class: RLHFDataset", f"{p}dataset len: 7473",
              f"{p}Size of train dataloader: 7, Size of val dataloader: 1",
              f"{p}Total training steps: {total}",
              f"{w}[W601 10:01:12.345678 ProcessGroupNCCL.cpp:4561] Warning: using GPU 0 to "
              "perform barrier as devices used by this process are currently unknown.",
              f"{w}INFO 06-01 10:02:03 [gpu_model_runner.py:1450] Model loading took 0.93 GiB "
              "and 2.104 seconds",
              f"{p}Checkpoint tracker file does not exist: /root/checkpoints/verl_grpo/"
              "qwen2_5_0_5b/latest_checkpointed_iteration.txt",
              f"{p}Training from scratch"]
    return lines


def verl_noise(step: int, total: int, p: str, w: str, rng: random.Random) -> list[str]:
    """What else a verl driver prints between two step lines."""
    lines = [f"{p}Training Progress: {100 * step // total:3d}%|{'█' * (10 * step // total):10s}"
             f"| {step}/{total} [{step // 2:02d}:{step % 60:02d}<12:00, 71.2s/it]"]
    if rng.random() < 0.15:
        lines.append(f"{w}/usr/local/lib/python3.10/dist-packages/torch/distributed/fsdp/"
                     "_state_dict_utils.py:773: UserWarning: When using ``NO_SHARD`` for "
                     "``ShardingStrategy``, full_state_dict will be returned.")
        lines.append(f"{w}  warnings.warn(")
    return lines


def verl_validation_print(p: str) -> list[str]:
    """The sample verl prints after each validation: prompt, response, score."""
    text = ["validation generation end",
            "[prompt] system\nYou are a helpful assistant.\nuser\nJanet's ducks lay 16 eggs",
            "[response] " + "\n".join(GSM8K_RESPONSE), "[ground_truth] 18", "[score] 1.0"]
    # Ray prefixes every physical line an actor prints
    return [p + ln for ln in "\n".join(text).splitlines()]


def pprint_metrics(p: str, label: str, vals: Row, fmt: Fmt) -> list[str]:
    """pprint(f'{label}: {metrics}'): a long str wraps into quoted pieces."""
    shown = "{" + ", ".join(f"'{k}': {fmt(v)}" for k, v in vals.items()) + "}"
    text = pprint.pformat(f"{label}: {shown}", width=80)
    return [p + ln for ln in text.splitlines()]


def final_validation_line(p: str, series: Series, last: int, fmt: Fmt) -> list[str]:
    vals = {k: v for k, v in series[last].items() if k.startswith(("val-", "val/"))}
    return pprint_metrics(p, "Final validation metrics", vals, fmt)


def verl_console_text(rng: random.Random, series: Series, *, pid: int, ansi: bool, fmt: Fmt,
                      lr: float, total: int, test_freq: int, final_line: bool = True) -> list[str]:
    p, w = ray("TaskRunner", pid, ansi), ray("WorkerDict", pid + 517, ansi)
    lines = verl_preamble(pid, ansi, lr, total, test_freq)
    steps = sorted(series)
    for s in steps:
        if any(k.startswith(("val-", "val/")) for k in series[s]):
            lines += verl_validation_print(p)
        lines.append(p + verl_step_line(s, series[s], fmt))
        lines += verl_noise(s, total, p, w, rng)
    if final_line:
        lines += final_validation_line(p, series, steps[-1], fmt)
    return lines


# ----------------------------------------------------------------------------- helpers
def write_lines(path: Path, lines: list[str], eol: str = "\n", cut: int | None = None) -> None:
    """Write a log; `cut` drops that many trailing characters (a copy taken mid-write)."""
    text = eol.join(lines) + eol
    if cut:
        text = text[:-cut]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def pick(rng: random.Random, steps: list[int], k: int) -> list[int]:
    return sorted(rng.sample(steps, min(k, len(steps))))


def spot_rows(case: Case, rng: random.Random, series: Series, mapping: dict[str, str],
              fmt: Fmt, k: int = 3, steps: list[int] | None = None) -> None:
    """Spot-check `k` steps for every canonical metric of `mapping` (canonical -> raw key)."""
    pool = steps if steps is not None else sorted(series)
    for canon, raw in mapping.items():
        have = [s for s in pool if raw in series[s]]
        for s in pick(rng, have, k):
            case.spot(s, canon, fmt(series[s][raw]))


VERL_MAP = {"reward_mean": "critic/rewards/mean", "entropy": "actor/entropy",
            "grad_norm": "actor/grad_norm", "kl_ref": "actor/kl_loss", "ppo_kl": "actor/ppo_kl",
            "truncation_rate": "response_length/clip_ratio",
            "prompt_truncation_rate": "prompt_length/clip_ratio",
            "response_length": "response_length/mean", "pg_clipfrac": "actor/pg_clipfrac",
            "step_time": "timing_s/step", "rollout_time": "timing_s/gen"}
VERL_PRESENT = [*VERL_MAP, "val_reward", "lr"]
VERL_3DEC_PRESENT = [*VERL_MAP, "val_reward"]
TRL_MAP = {"reward_mean": "reward", "reward_std": "reward_std", "grad_norm": "grad_norm",
           "entropy": "entropy", "truncation_rate": "completions/clipped_ratio",
           "response_length": "completions/mean_length", "pg_clipfrac": "clip_ratio/region_mean",
           "zero_std_frac": "frac_reward_zero_std", "lr": "learning_rate"}


def poison(series: Series, step: int, key: str, value: float) -> None:
    series[step][key] = value


# ----------------------------------------------------------------------------- verl cases
def case_verl_v03_3dec(out: Path, rng: random.Random) -> Case:
    """verl v0.3: 3 decimals (lr prints 0.000), val/test_score, Ray `main_task`, 37 steps."""
    steps = list(range(1, 38))
    lr = 1e-6
    series = verl_series(rng, steps, 10, ["openai/gsm8k"], lr, "val/test_score/{ds}",
                         modern=False)
    lines = verl_console_text(rng, series, pid=40211, ansi=False, fmt=fmt3, lr=lr, total=37,
                              test_freq=10, final_line=False)
    lines = [ln.replace("(TaskRunner ", "(main_task ") for ln in lines]
    write_lines(out / "data" / "verl_v03.log", lines)
    case = Case("verl_v03_3dec", "verl-console", "verl_v03.log", steps, VERL_3DEC_PRESENT,
                absent=["lr"], lr_true=lr,
                notes="3-decimal values; actor/lr prints 0.000, which is no learning rate")
    spot_rows(case, rng, series, VERL_MAP, fmt3)
    for s in (10, 20, 37):
        case.spot(s, "val_reward", fmt3(series[s]["val/test_score/openai/gsm8k"]))
    return case


def case_verl_v05_np_ansi(out: Path, rng: random.Random) -> Case:
    """verl >= v0.5 with numpy 2: np.float64(...) values, ANSI Ray prefixes, nan and inf."""
    steps = list(range(1, 121))
    lr = 2e-6
    series = verl_series(rng, steps, 20, ["openai/gsm8k"], lr)
    poison(series, 77, "actor/grad_norm", float("nan"))
    poison(series, 78, "actor/grad_norm", float("nan"))
    poison(series, 91, "actor/ppo_kl", float("inf"))
    lines = verl_console_text(rng, series, pid=2817, ansi=True, fmt=fmt_np, lr=lr, total=120,
                              test_freq=20)
    write_lines(out / "data" / "train_grpo.log", lines)
    case = Case("verl_v05_np_ansi", "verl-console", "train_grpo.log", steps, VERL_PRESENT,
                lr_true=lr, notes="config dump, tqdm, warnings, validation samples, Final line")
    spot_rows(case, rng, series, VERL_MAP, fmt_np)
    for s, m, k in ((77, "grad_norm", "actor/grad_norm"), (91, "ppo_kl", "actor/ppo_kl"),
                    (120, "val_reward", "val-core/openai/gsm8k/reward/mean@1"),
                    (60, "val_reward", "val-core/openai/gsm8k/reward/mean@1")):
        case.spot(s, m, fmt_np(series[s][k]))
    return case


def case_verl_step0_two_datasets(out: Path, rng: random.Random) -> Case:
    """verl v0.4 full precision, val_before_train (step 0 line), two validation data sets."""
    steps = list(range(1, 61))
    lr = 1e-6
    dss = ["openai/gsm8k", "lighteval/MATH"]
    series = verl_series(rng, steps, 15, dss, lr, modern=False)
    init = {f"val-core/{ds}/reward/mean@1": round(0.2 - 0.05 * i, 4) for i, ds in enumerate(dss)}
    p = ray("TaskRunner", 9120, False)
    lines = verl_console_text(rng, series, pid=9120, ansi=False, fmt=fmt_repr, lr=lr, total=60,
                              test_freq=15)
    head = pprint_metrics(p, "Initial validation metrics", init, fmt_repr)
    head.append(p + verl_step_line(0, init, fmt_repr))
    at = next(i for i, ln in enumerate(lines) if "Training from scratch" in ln) + 1
    write_lines(out / "data" / "run.log", lines[:at] + head + lines[at:])
    case = Case("verl_step0_two_datasets", "verl-console", "run.log", [0, *steps], VERL_PRESENT,
                lr_true=lr, ambiguous={"steps": AMBIG_STEP0, "first_step": AMBIG_STEP0})
    spot_rows(case, rng, series, {k: VERL_MAP[k] for k in ("reward_mean", "entropy")}, fmt_repr)
    return case


def case_verl_resumed_crash(out: Path, rng: random.Random) -> Case:
    """A run that died of OOM at step 64 and was relaunched from global_step_50 to 150."""
    lr = 1e-6
    first = verl_series(rng, list(range(1, 65)), 25, ["openai/gsm8k"], lr)
    second = verl_series(rng, list(range(51, 151)), 25, ["openai/gsm8k"], lr)
    lines = verl_console_text(rng, first, pid=3001, ansi=False, fmt=fmt_repr, lr=lr, total=150,
                              test_freq=25, final_line=False)
    w = ray("WorkerDict", 3518, False)
    lines += [f"{w}Traceback (most recent call last):",
              f'{w}  File "/workspace/verl/verl/workers/fsdp_workers.py", line 612, in '
              "update_actor",
              f"{w}    metrics = self.actor.update_policy(data=data)",
              f"{w}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
              "has a total capacity of 79.15 GiB of which 1.02 GiB is free.",
              "ray.exceptions.RayTaskError(OutOfMemoryError): ray::TaskRunner.run() "
              "(pid=3001, ip=10.0.0.3)", ""]
    again = verl_console_text(rng, second, pid=5120, ansi=False, fmt=fmt_repr, lr=lr, total=150,
                              test_freq=25)
    p = ray("TaskRunner", 5120, False)
    resume = [f"{p}Load from checkpoint folder: /root/checkpoints/verl_grpo/qwen/global_step_50",
              f"{p}Setting global step to 50",
              f"{p}Resuming from /root/checkpoints/verl_grpo/qwen/global_step_50"]
    again = [ln for ln in again if "Training from scratch" not in ln]
    at = next(i for i, ln in enumerate(again) if "Total training steps" in ln) + 1
    write_lines(out / "data" / "resumed.log", lines + again[:at] + resume + again[at:])
    case = Case("verl_resumed_crash", "verl-console", "resumed.log", list(range(1, 151)),
                VERL_PRESENT, lr_true=lr, notes="steps 51..64 logged twice; values not checked")
    spot_rows(case, rng, first, VERL_MAP, fmt_repr, k=1, steps=list(range(1, 51)))
    spot_rows(case, rng, second, VERL_MAP, fmt_repr, k=1, steps=list(range(65, 151)))
    return case


def case_verl_crlf_1003(out: Path, rng: random.Random) -> Case:
    """A long v0.4 run (1003 steps, 3 decimals) saved with Windows line endings."""
    steps = list(range(1, 1004))
    lr = 5e-7
    series = verl_series(rng, steps, 100, ["openai/gsm8k"], lr, modern=False)
    lines = verl_console_text(rng, series, pid=771, ansi=False, fmt=fmt3, lr=lr, total=1003,
                              test_freq=100)
    write_lines(out / "data" / "verl_win.log", lines, eol="\r\n")
    case = Case("verl_crlf_1003", "verl-console", "verl_win.log", steps, VERL_3DEC_PRESENT,
                absent=["lr"], lr_true=lr)
    spot_rows(case, rng, series, VERL_MAP, fmt3, k=2)
    case.spot(1003, "val_reward", fmt3(series[1003]["val-core/openai/gsm8k/reward/mean@1"]))
    return case


def case_verl_cut_tail(out: Path, rng: random.Random) -> Case:
    """A log copied while being written: the last step line stops mid-value."""
    steps = list(range(1, 89))
    lr = 1e-6
    series = verl_series(rng, steps, 30, ["openai/gsm8k"], lr)
    lines = verl_console_text(rng, series, pid=604, ansi=False, fmt=fmt_repr, lr=lr, total=300,
                              test_freq=30, final_line=False)
    last = next(i for i in range(len(lines) - 1, -1, -1) if " step:88 - " in lines[i])
    text = lines[last]
    keep = text[: text.index("actor/pg_loss:") + len("actor/pg_loss:") + 4]
    write_lines(out / "data" / "partial.log", [*lines[:last], keep], cut=1)
    case = Case("verl_cut_tail", "verl-console", "partial.log", steps, VERL_PRESENT, lr_true=lr,
                ambiguous={"steps": AMBIG_CUT, "last_step": AMBIG_CUT})
    spot_rows(case, rng, series, VERL_MAP, fmt_repr, k=2, steps=list(range(1, 88)))
    case.spot(88, "entropy", fmt_repr(series[88]["actor/entropy"]))
    return case


def _issue_block(lines: list[str]) -> str:
    return "```text\n" + "\n".join(lines) + "\n```"


def case_verl_markdown_issue(out: Path, rng: random.Random) -> Case:
    """A GitHub issue: prose, a pasted excerpt (steps 25..41) in a fence, a YAML fence."""
    steps = list(range(1, 60))
    series = verl_series(rng, steps, 10, ["openai/gsm8k"], 1e-6)
    p = ray("TaskRunner", 912, False)
    w = ray("WorkerDict", 1429, False)
    excerpt: list[str] = []
    for s in range(25, 42):
        excerpt.append(p + verl_step_line(s, series[s], fmt_repr))
        if s == 33:
            excerpt.append(f"{w}WARNING 06-02 03:14:07 [scheduler.py:1754] Sequence group 1181 "
                           "is preempted by PreemptionMode.RECOMPUTE mode")
    md = ["### System Info", "", "- verl 0.4.1, vllm 0.8.5.post1, torch 2.6.0, 8x H100", "",
          "### Describe the bug", "",
          "After step:30 the reward collapses and entropy goes up. Log from step 25 on:", "",
          _issue_block(excerpt), "", "Config (the rest is the gsm8k example):", "",
          "```yaml", "actor_rollout_ref:", "  actor:", "    optim:", "      lr: 1e-6",
          "    use_kl_loss: true", "```", "", "### Expected behavior", "",
          "Reward keeps improving, as in step 1 - 24.", ""]
    write_lines(out / "data" / "issue_1234.md", md)
    kept = list(range(25, 42))
    case = Case("verl_markdown_issue", "verl-console(markdown)", "issue_1234.md", kept,
                VERL_PRESENT, lr_true=1e-6)
    sub = {s: series[s] for s in kept}
    spot_rows(case, rng, sub, {k: VERL_MAP[k] for k in ("reward_mean", "grad_norm")}, fmt_repr)
    case.spot(30, "val_reward", fmt_repr(series[30]["val-core/openai/gsm8k/reward/mean@1"]))
    return case


def case_verl_markdown_quote(out: Path, rng: random.Random) -> Case:
    """A reply quoting a log: every line starts with '> ' (GitHub quote), 3 decimals."""
    steps = list(range(1, 13))
    series = verl_series(rng, steps, 100, ["openai/gsm8k"], 1e-6, modern=False)
    p = ray("TaskRunner", 77, False)
    quoted = ["> " + p + verl_step_line(s, series[s], fmt3) for s in steps]
    md = ["@maintainer here is what I see on main:", "", *quoted, "",
          "Is a grad_norm this small expected with `ppo_mini_batch_size=256`?"]
    write_lines(out / "data" / "reply.md", md)
    case = Case("verl_markdown_quote", "verl-console(markdown)", "reply.md", steps,
                VERL_3DEC_PRESENT, absent=["lr"], lr_true=1e-6)
    spot_rows(case, rng, series, {k: VERL_MAP[k] for k in ("reward_mean", "kl_ref")}, fmt3)
    return case


def case_verl_val_at_n(out: Path, rng: random.Random) -> Case:
    """Validation with n=4 samples: mean@4 beside best@4/mean and maj@4/mean (v0.4+ names)."""
    steps = list(range(1, 46))
    series = verl_series(rng, steps, 15, ["openai/gsm8k"], 1e-6,
                         val_key="val-core/{ds}/reward/mean@4")
    for s in (15, 30, 45):
        mean = series[s]["val-core/openai/gsm8k/reward/mean@4"]
        extra = {"val-aux/openai/gsm8k/reward/std@4": 0.31,
                 "val-core/openai/gsm8k/reward/best@4/mean": round(min(1.0, mean + 0.2), 4),
                 "val-core/openai/gsm8k/reward/best@4/std": 0.05,
                 "val-core/openai/gsm8k/reward/maj@4/mean": round(mean + 0.05, 4),
                 "val-aux/num_turns/min": 2}
        series[s] = {**series[s], **extra}
    lines = verl_console_text(rng, series, pid=1201, ansi=False, fmt=fmt_repr, lr=1e-6,
                              total=45, test_freq=15)
    write_lines(out / "data" / "val_n4.log", lines)
    case = Case("verl_val_at_n", "verl-console", "val_n4.log", steps, VERL_PRESENT,
                lr_true=1e-6, notes="contract: val_reward is val-core/<data>/reward/mean@N")
    for s in (15, 30, 45):
        case.spot(s, "val_reward", fmt_repr(series[s]["val-core/openai/gsm8k/reward/mean@4"]))
    return case


def case_wandb_history_jsonl(out: Path, rng: random.Random) -> Case:
    """A W&B run folder's files/wandb-history.jsonl: `_step`, `_runtime`, verl names."""
    steps = list(range(1, 65))
    series = verl_series(rng, steps, 16, ["openai/gsm8k"], 1e-6)
    lines = [json.dumps({**series[s], "_step": s, "_runtime": 70.5 * s,
                         "_timestamp": 1748771001.2 + 70.5 * s}) for s in steps]
    write_lines(out / "data" / "wandb-history.jsonl", lines)
    case = Case("wandb_history_jsonl", "jsonl(wandb)", "wandb-history.jsonl", steps,
                VERL_PRESENT, lr_true=1e-6)
    spot_rows(case, rng, series, VERL_MAP, repr, k=1)
    return case


# ----------------------------------------------------------------------------- verl JSONL
def _compact(obj: object) -> str:
    """orjson-like compact JSON; orjson writes NaN and +-inf as null."""
    def clean(v: object) -> object:
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        return None if isinstance(v, float) and not math.isfinite(v) else v
    return json.dumps(clean(obj), separators=(",", ":"))


def case_verl_filelogger_cut(out: Path, rng: random.Random) -> Case:
    """verl FileLogger JSONL (200 steps), a NaN (-> null), the last record cut mid-write."""
    steps = list(range(1, 201))
    series = verl_series(rng, steps, 25, ["openai/gsm8k"], 1e-6)
    poison(series, 150, "actor/grad_norm", float("nan"))
    lines = [_compact({"step": s, "data": series[s]}) for s in steps]
    lines.append(_compact({"step": 201, "data": series[200]})[:57])
    path = out / "data" / "verl_grpo_gsm8k" / "qwen2_5_3b.jsonl"
    write_lines(path, lines, cut=1)
    case = Case("verl_filelogger_cut", "verl-jsonl", "verl_grpo_gsm8k/qwen2_5_3b.jsonl", steps,
                VERL_PRESENT, lr_true=1e-6, notes="step 201 is a cut record (invalid JSON)")
    spot_rows(case, rng, series, VERL_MAP, repr)
    case.spot(175, "val_reward", repr(series[175]["val-core/openai/gsm8k/reward/mean@1"]))
    return case


def case_verl_filelogger_resumed(out: Path, rng: random.Random) -> Case:
    """FileLogger opens its file with 'wb': after a resume from step 50 it holds 51..130."""
    steps = list(range(51, 131))
    series = verl_series(rng, steps, 20, ["openai/gsm8k"], 3e-6)
    write_lines(out / "data" / "exp.jsonl", [_compact({"step": s, "data": series[s]})
                                             for s in steps])
    case = Case("verl_filelogger_resumed", "verl-jsonl", "exp.jsonl", steps, VERL_PRESENT,
                lr_true=3e-6)
    spot_rows(case, rng, series, VERL_MAP, repr, k=2)
    return case


# ----------------------------------------------------------------------------- flat JSONL
def case_flat_jsonl_canonical(out: Path, rng: random.Random) -> Case:
    """A user's own JSONL in canonical names; NaN/Infinity bare; val records on own lines."""
    steps = list(range(1, 38))
    lines = []
    case = Case("flat_jsonl_canonical", "jsonl", "metrics.jsonl", steps,
                ["reward_mean", "entropy", "grad_norm", "kl_ref", "val_reward",
                 "response_length"])
    for s in steps:
        rec = {"step": s, "reward_mean": round(0.1 + s / 50 + rng.gauss(0, 0.01), 5),
               "entropy": round(1.0 - s / 80, 5), "grad_norm": round(abs(rng.gauss(0.3, 0.05)), 5),
               "kl_ref": round(0.001 * s, 5), "response_length": 300 + 5 * s}
        if s == 19:
            rec["grad_norm"] = float("nan")
        if s == 33:
            rec["kl_ref"] = float("inf")
        lines.append(json.dumps(rec))
        if s % 9 == 0:
            val = round(0.2 + s / 60, 4)
            lines.append(json.dumps({"step": s, "val_reward": val}))
            case.spot(s, "val_reward", repr(val))
        if s in (5, 19, 33, 37):
            for m in ("reward_mean", "grad_norm", "kl_ref"):
                case.spot(s, m, repr(rec[m]))
    write_lines(out / "data" / "metrics.jsonl", lines)
    return case


def case_flat_jsonl_trl_callback(out: Path, rng: random.Random) -> Case:
    """TRL on_log dicts dumped by a user callback: train and eval records share steps."""
    steps = list(range(1, 51))
    series = trl_series(rng, steps, 1e-6, beta=0.04)
    lines = []
    for s in steps:
        lines.append(json.dumps({**series[s], "step": s}))
        if s % 10 == 0:
            lines.append(json.dumps({**trl_eval(rng, s, 50), "step": s}))
    write_lines(out / "data" / "trl_logs.jsonl", lines)
    case = Case("flat_jsonl_trl_callback", "jsonl", "trl_logs.jsonl", steps,
                [*TRL_MAP, "kl_ref", "val_reward"], lr_true=1e-6)
    spot_rows(case, rng, series, {**TRL_MAP, "kl_ref": "kl"}, repr, k=2)
    return case


# ----------------------------------------------------------------------------- W&B exports
def _csv(rows: list[list[object]], eol: str = "\n", bom: bool = False) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator=eol)
    writer.writerows(rows)
    return (("\ufeff" if bom else "") + buf.getvalue()).encode("utf-8")


def _cell(v: object) -> object:
    """pandas.to_csv: NaN as an empty cell, inf as 'inf', floats as their shortest repr."""
    if isinstance(v, float) and math.isnan(v):
        return ""
    return v


def case_wandb_history_verl(out: Path, rng: random.Random) -> Case:
    """run.history().to_csv(): unnamed index column, _step/_runtime/_timestamp, sorted keys."""
    steps = list(range(1, 301))
    series = verl_series(rng, steps, 50, ["openai/gsm8k"], 1e-6)
    poison(series, 222, "actor/ppo_kl", float("inf"))
    keys = sorted({k for r in series.values() for k in r} | {"_runtime", "_timestamp", "_step"})
    rows: list[list[object]] = [["", *keys]]
    for i, s in enumerate(steps):
        row = {**series[s], "_step": s, "_runtime": 71.3 * s, "_timestamp": 1.7487e9 + 71.3 * s}
        rows.append([i, *[_cell(row.get(k, float("nan"))) for k in keys]])
    (out / "data").mkdir(parents=True)
    (out / "data" / "wandb_export.csv").write_bytes(_csv(rows))
    case = Case("wandb_history_verl", "csv(wandb history)", "wandb_export.csv", steps,
                VERL_PRESENT, lr_true=1e-6)
    spot_rows(case, rng, series, VERL_MAP, repr, k=2)
    case.spot(222, "ppo_kl", "inf")
    case.spot(250, "val_reward", repr(series[250]["val-core/openai/gsm8k/reward/mean@1"]))
    return case


def case_wandb_history_trl(out: Path, rng: random.Random) -> Case:
    """A TRL run's W&B history: rewrite_logs prefixes, `_step` counts log calls."""
    steps = list(range(1, 81))
    series = trl_series(rng, steps, 1e-6, beta=0.0)
    recs: list[dict[str, object]] = []
    for s in steps:
        recs.append({**{f"train/{k}": v for k, v in series[s].items()}, "train/global_step": s})
        if s % 20 == 0:
            ev = trl_eval(rng, s, 80)
            recs.append({**{("eval/" + k[5:] if k.startswith("eval_") else "train/" + k): v
                            for k, v in ev.items()}, "train/global_step": s})
    keys = sorted({k for r in recs for k in r} | {"_step", "_runtime", "_timestamp"})
    rows: list[list[object]] = [keys]
    for i, r in enumerate(recs):
        r = {**r, "_step": i, "_runtime": 40.0 * i, "_timestamp": 1.75e9 + 40 * i}
        rows.append([_cell(r.get(k, float("nan"))) for k in keys])
    (out / "data").mkdir(parents=True)
    (out / "data" / "history.csv").write_bytes(_csv(rows))
    case = Case("wandb_history_trl", "csv(wandb history)", "history.csv", steps,
                [*TRL_MAP, "val_reward"], absent=["kl_ref"], lr_true=1e-6,
                ambiguous={"steps": AMBIG_WANDB_TRL, "first_step": AMBIG_WANDB_TRL,
                           "last_step": AMBIG_WANDB_TRL, "spots": AMBIG_WANDB_TRL})
    spot_rows(case, rng, series, TRL_MAP, repr, k=2)
    return case


def case_wandb_chart(out: Path, rng: random.Random) -> Case:
    """A W&B chart export: Step + `<run> - <metric>` with __MIN/__MAX companions."""
    steps = list(range(1, 101, 3))
    run = "qwen2.5-7b-grpo-lr1e-6"
    cols = ["Step", f"{run} - critic/rewards/mean", f"{run} - critic/rewards/mean__MIN",
            f"{run} - critic/rewards/mean__MAX"]
    rows: list[list[object]] = [cols]
    case = Case("wandb_chart", "csv(wandb chart)", "wandb_chart.csv", steps, ["reward_mean"])
    for s in steps:
        v = round(0.2 + s / 200 + rng.gauss(0, 0.01), 6)
        rows.append([s, v, round(v - 0.05, 6), round(v + 0.05, 6)])
        if s in (1, 52, 100):
            case.spot(s, "reward_mean", repr(v))
    (out / "data").mkdir(parents=True)
    (out / "data" / "wandb_chart.csv").write_bytes(_csv(rows))
    return case


def case_wandb_chart_excel(out: Path, rng: random.Random) -> Case:
    """A two-series chart export resaved by Excel on Windows: BOM, CRLF, 37 rows."""
    steps = list(range(1, 38))
    run = "verl-grpo-run3"
    metrics = ["actor/entropy", "actor/kl_loss"]
    cols = ["Step"] + [f"{run} - {m}{suf}" for m in metrics for suf in ("", "__MIN", "__MAX")]
    rows: list[list[object]] = [cols]
    case = Case("wandb_chart_excel", "csv(wandb chart)", "chart.csv", steps,
                ["entropy", "kl_ref"])
    for s in steps:
        ent, kl = round(0.9 - s / 100, 6), round(0.001 * s, 6)
        rows.append([s, ent, ent, ent, kl, kl, kl])
        if s in (2, 37):
            case.spot(s, "entropy", repr(ent))
            case.spot(s, "kl_ref", repr(kl))
    (out / "data").mkdir(parents=True)
    (out / "data" / "chart.csv").write_bytes(_csv(rows, eol="\r\n", bom=True))
    return case


# ----------------------------------------------------------------------------- TRL state
def trl_history(rng: random.Random, last: int, logging: int, eval_every: int, lr: float,
                beta: float, nan_at: int | None = None) -> tuple[list[dict[str, object]], Series]:
    """log_history as Trainer builds it: train every `logging`, eval, the end-of-train summary."""
    all_steps = list(range(1, last + 1))
    series = trl_series(rng, all_steps, lr, beta)
    hist: list[dict[str, object]] = []
    for s in all_steps:
        if s % logging == 0:
            if s == nan_at:
                series[s]["grad_norm"] = float("nan")
            hist.append({**series[s], "step": s})
        if eval_every and (s % eval_every == 0 or s == last):
            hist.append({**trl_eval(rng, s, last), "step": s})
    hist.append({**trl_summary(last), "step": last})
    return hist, series


def trainer_state(hist: list[dict[str, object]], last: int, logging: int, eval_every: int,
                  save: int) -> str:
    state = {"best_global_step": None, "best_metric": None, "best_model_checkpoint": None,
             "epoch": 1.0, "eval_steps": eval_every or 500, "global_step": last,
             "is_hyper_param_search": False, "is_local_process_zero": True,
             "is_world_process_zero": True, "log_history": hist, "logging_steps": logging,
             "max_steps": last, "num_input_tokens_seen": 0, "num_train_epochs": 1,
             "save_steps": save, "stateful_callbacks": {"TrainerControl": {
                 "args": {"should_epoch_stop": False, "should_evaluate": False,
                          "should_log": False, "should_save": True,
                          "should_training_stop": True}, "attributes": {}}},
             "total_flos": 0.0, "train_batch_size": 8, "trial_name": None, "trial_params": None}
    return json.dumps(state, indent=2, sort_keys=True) + "\n"


def logged_steps(hist: list[dict[str, object]]) -> list[int]:
    """Steps carrying a train or eval metric (the summary alone does not make a step)."""
    return sorted({int(h["step"]) for h in hist if "loss" in h or "eval_reward" in h})


def case_trl_state_grpo(out: Path, rng: random.Random) -> Case:
    """trainer_state.json of a GRPO run: logging_steps=1, eval every 25, a NaN grad_norm."""
    hist, series = trl_history(rng, 100, 1, 25, 1e-6, beta=0.04, nan_at=64)
    path = out / "data" / "trainer_state.json"
    path.parent.mkdir(parents=True)
    path.write_text(trainer_state(hist, 100, 1, 25, 50))
    case = Case("trl_state_grpo", "trl-state", "trainer_state.json", logged_steps(hist),
                [*TRL_MAP, "kl_ref", "val_reward"], lr_true=1e-6)
    spot_rows(case, rng, series, {**TRL_MAP, "kl_ref": "kl"}, repr, k=2)
    case.spot(64, "grad_norm", "nan")
    for h in hist:
        if "eval_reward" in h and h["step"] in (50, 100):
            case.spot(int(h["step"]), "val_reward", repr(h["eval_reward"]))
    return case


def case_trl_state_beta0_odd(out: Path, rng: random.Random) -> Case:
    """logging_steps=5 of 37 steps, eval every 10 plus the end-of-training eval at 37, beta 0."""
    hist, series = trl_history(rng, 37, 5, 10, 3e-6, beta=0.0)
    path = out / "data" / "trainer_state.json"
    path.parent.mkdir(parents=True)
    path.write_text(trainer_state(hist, 37, 5, 10, 500))
    case = Case("trl_state_beta0_odd", "trl-state", "trainer_state.json", logged_steps(hist),
                [*TRL_MAP, "val_reward"], absent=["kl_ref"], lr_true=3e-6,
                notes="steps 5..35 train; 37 carries only eval_reward (+ summary)")
    spot_rows(case, rng, series, TRL_MAP, repr, k=2, steps=list(range(5, 36, 5)))
    end = next(h for h in hist if h["step"] == 37 and "eval_reward" in h)
    case.spot(37, "val_reward", repr(end["eval_reward"]))
    return case


def case_trl_log_history_bare(out: Path, rng: random.Random) -> Case:
    """A bare log_history list a user json.dump'ed: unsorted keys, one line, logging_steps 2."""
    hist, series = trl_history(rng, 64, 2, 16, 1e-6, beta=0.02)
    path = out / "data" / "log_history.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(hist))
    case = Case("trl_log_history_bare", "trl-log-history", "log_history.json",
                logged_steps(hist), [*TRL_MAP, "kl_ref", "val_reward"], lr_true=1e-6)
    spot_rows(case, rng, series, TRL_MAP, repr, k=2, steps=list(range(2, 65, 2)))
    return case


def case_trl_output_dir(out: Path, rng: random.Random) -> Case:
    """An output dir with checkpoint-800/900/1000 (lexical order lies), copied without mtimes."""
    hist, series = trl_history(rng, 1000, 1, 0, 1e-6, beta=0.04)
    root = out / "data" / "grpo-qwen-out"
    for ck in (800, 900, 1000):
        d = root / f"checkpoint-{ck}"
        d.mkdir(parents=True)
        # the end-of-training summary is logged after the last save: in no checkpoint
        part = [h for h in hist if int(h["step"]) <= ck and "loss" in h]
        (d / "trainer_state.json").write_text(trainer_state(part, ck, 1, 0, 100))
        (d / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"],
                                                   "hidden_size": 896}, indent=2))
        (d / "training_args.bin").write_bytes(b"PK\x03\x04 not a real pickle")
        (d / "rng_state.pth").write_bytes(b"\x80\x02}q\x00.")
    (root / "README.md").write_text("---\nlibrary_name: transformers\ntags: [trl, grpo]\n---\n")
    # a copy without -p: the oldest checkpoint looks newest on disk
    os.utime(root / "checkpoint-900", (2_000_000_000, 2_000_000_000))
    case = Case("trl_output_dir", "trl-state(dir)", "grpo-qwen-out", list(range(1, 1001)),
                [*TRL_MAP, "kl_ref"], lr_true=1e-6)
    spot_rows(case, rng, series, TRL_MAP, repr, k=1, steps=list(range(901, 1001)))
    case.spot(1000, "reward_mean", repr(series[1000]["reward"]))
    return case


# ----------------------------------------------------------------------------- TRL console
def tqdm_bar(n: int, total: int, width: int = 10) -> str:
    filled = "█" * (width * n // total)
    return (f"{100 * n // total:3d}%|{filled:{width}s}| {n}/{total} "
            f"[{n // 6:02d}:{n * 10 % 60:02d}<10:00, 11.97s/it]")


def trl_console_lines(rng: random.Random, series: Series, total: int, logging: int,
                      eval_every: int, fmt: Callable[[Row], str]) -> str:
    """Console text of Trainer + ProgressCallback as captured from a non-tty stdout."""
    text = [f"\r  0%|          | 0/{total} [00:00<?, ?it/s]"]
    for s in range(1, total + 1):
        text.append("\r" + tqdm_bar(s, total))
        if s % logging == 0:
            text.append("\r" + " " * 60 + "\r" + fmt(series[s]) + "\n")
        if eval_every and s % eval_every == 0:
            text.append("\n")
            text += ["\r" + tqdm_bar(k, 8, 10).replace("11.97s/it", "3.80s/it") for k in
                     range(1, 9)]
            text.append("\r" + " " * 60 + "\r" + fmt(trl_eval(rng, s, total)) + "\n")
    text.append("\r" + " " * 60 + "\r" + fmt(trl_summary(total)) + "\n")
    text.append("\r" + tqdm_bar(total, total) + "\n")
    return "".join(text)


def dict_g4(row: Row) -> str:
    return str({k: (g4(v) if isinstance(v, float) else v) for k, v in row.items()
                if k != "total_flos"})


def dict_raw(row: Row) -> str:
    return str({k: v for k, v in row.items() if k != "total_flos"})


def case_trl_console_new(out: Path, rng: random.Random) -> Case:
    """transformers >= 4.5x: values as '.4g' strings, eval progress bars (8/8) between."""
    series = trl_series(rng, list(range(1, 46)), 1e-6, beta=0.04)
    body = trl_console_lines(rng, series, 45, 1, 15, dict_g4)
    head = ("INFO 06-01 09:58:12 [__init__.py:239] Automatically detected platform cuda.\n"
            "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]\n"
            "wandb: Tracking run with wandb version 0.19.1\n")
    (out / "data").mkdir(parents=True)
    (out / "data" / "grpo_stdout.log").write_text(head + body)
    case = Case("trl_console_new", "trl-console", "grpo_stdout.log", list(range(1, 46)),
                [*TRL_MAP, "kl_ref", "val_reward"], lr_true=1e-6)
    spot_rows(case, rng, series, {**TRL_MAP, "kl_ref": "kl"}, g4, k=2)
    return case


def case_trl_console_old_crlf(out: Path, rng: random.Random) -> Case:
    """transformers 4.4x on Windows: raw float reprs, CRLF, UserWarnings interleaved."""
    series = trl_series(rng, list(range(1, 31)), 5e-7, beta=0.04)
    body = trl_console_lines(rng, series, 30, 1, 0, dict_raw)
    warn = ("C:\\Users\\me\\miniconda3\\Lib\\site-packages\\torch\\utils\\checkpoint.py:86: "
            "UserWarning: None of the inputs have requires_grad=True. Gradients will be None\n"
            "  warnings.warn(\n")
    parts = body.split("\n")
    parts.insert(3, warn.rstrip("\n"))
    text = "\n".join(parts).replace("\n", "\r\n")
    (out / "data").mkdir(parents=True)
    (out / "data" / "train_win.log").write_bytes(text.encode("utf-8"))
    case = Case("trl_console_old_crlf", "trl-console", "train_win.log", list(range(1, 31)),
                [*TRL_MAP, "kl_ref"], lr_true=5e-7)
    spot_rows(case, rng, series, {**TRL_MAP, "kl_ref": "kl"}, repr, k=2)
    return case


def case_trl_console_logging5(out: Path, rng: random.Random) -> Case:
    """logging_steps=5 of 40: the step is only in the tqdm counter before each dict."""
    series = trl_series(rng, list(range(1, 41)), 1e-6, beta=0.0)
    body = trl_console_lines(rng, series, 40, 5, 0, dict_g4)
    (out / "data").mkdir(parents=True)
    (out / "data" / "out.log").write_text(body)
    steps = list(range(5, 41, 5))
    case = Case("trl_console_logging5", "trl-console", "out.log", steps, list(TRL_MAP),
                absent=["kl_ref"], lr_true=1e-6,
                ambiguous={"first_step": AMBIG_NOSTEP, "last_step": AMBIG_NOSTEP,
                           "spots": AMBIG_NOSTEP})
    spot_rows(case, rng, series, TRL_MAP, g4, k=2, steps=steps)
    return case


def case_trl_console_resumed(out: Path, rng: random.Random) -> Case:
    """resume_from_checkpoint=checkpoint-50: tqdm restarts at 50/100, logs cover 51..100."""
    series = trl_series(rng, list(range(1, 101)), 1e-6, beta=0.04)
    body = trl_console_lines(rng, series, 100, 1, 25, dict_g4)
    # the resumed session's bar opens at 50/100 (tqdm initial=50); its first log is step 51
    start = body.index("\r" + tqdm_bar(51, 100))
    head = ("  Continuing training from checkpoint, will skip to saved global_step\n"
            "  Continuing training from epoch 0\n  Continuing training from global step 50\n"
            "  Will skip the first 0 epochs then the first 400 batches in the first epoch.\n")
    (out / "data").mkdir(parents=True)
    (out / "data" / "resume.log").write_text(head + "\r" + tqdm_bar(50, 100) + body[start:])
    steps = list(range(51, 101))
    case = Case("trl_console_resumed", "trl-console", "resume.log", steps,
                [*TRL_MAP, "kl_ref", "val_reward"], lr_true=1e-6,
                ambiguous={"first_step": AMBIG_NOSTEP, "last_step": AMBIG_NOSTEP,
                           "spots": AMBIG_NOSTEP})
    spot_rows(case, rng, series, TRL_MAP, g4, k=1, steps=steps)
    return case


def case_trl_printer_no_tqdm(out: Path, rng: random.Random) -> Case:
    """disable_tqdm=True: PrinterCallback prints bare dicts, no counter; logging_steps=1."""
    series = trl_series(rng, list(range(1, 34)), 1e-6, beta=0.04)
    lines = [dict_g4(series[s]) for s in range(1, 34)]
    lines.insert(10, dict_g4(trl_eval(rng, 10, 33)))
    lines.append(dict_g4(trl_summary(33)))
    write_lines(out / "data" / "printer.log", lines)
    case = Case("trl_printer_no_tqdm", "trl-console", "printer.log", list(range(1, 34)),
                [*TRL_MAP, "kl_ref", "val_reward"], lr_true=1e-6,
                ambiguous={"first_step": AMBIG_NOSTEP, "last_step": AMBIG_NOSTEP,
                           "spots": AMBIG_NOSTEP})
    spot_rows(case, rng, series, TRL_MAP, g4, k=1)
    return case


# ----------------------------------------------------------------------------- others
def case_openrlhf(out: Path, rng: random.Random) -> Case:
    """OpenRLHF: `Global step N: {...}` via its vLLM-style logger, `Eval at step N: {...}`."""
    steps = list(range(1, 71))
    case = Case("openrlhf_console", "openrlhf", "openrlhf.log", steps,
                ["reward_mean", "kl_ref", "grad_norm", "entropy", "pg_clipfrac",
                 "response_length", "truncation_rate", "val_reward"])
    pfx = "(TrainingActor pid=4242) "
    lines = [pfx + "INFO 06-01 10:00:00 train_ppo_ray.py:88] Start training"]
    for s in steps:
        t = s / 70
        st = {"policy_loss": rng.gauss(0, 0.02), "actor_lr": 5e-7, "ppo_clip_ratio": 0.0012,
              "ppo_kl": rng.gauss(0, 1e-4), "entropy_loss": 0.8 - 0.4 * t,
              "actor_grad_norm": abs(rng.gauss(0.3, 0.05)), "kl": 0.001 + 0.01 * t,
              "reward": 0.2 + 0.5 * t + rng.gauss(0, 0.02), "return": 0.2 + 0.5 * t,
              "response_length": 400.0 + 100 * t, "total_length": 520.0 + 100 * t,
              "rollout/response_length_mean": 400.0 + 100 * t,
              "rollout/truncated_rate": 0.02 + 0.01 * t, "timing/generation": 50.2,
              "timing/step_total": 88.1}
        if s == 44:
            st["actor_grad_norm"] = float("nan")
        lines.append(f"{pfx}INFO 06-01 10:{s % 60:02d}:03 ppo_trainer.py:721] "
                     f"Global step {s}: {st}")
        if s % 10 == 0:
            ev = {"eval_gsm8k_pass1": round(0.3 + 0.4 * t, 4), "eval_gsm8k_pass8": 0.8}
            lines.append(f"{pfx}INFO 06-01 10:{s % 60:02d}:09 ppo_trainer.py:655] Eval at step "
                         f"{s}: {ev}")
            if s in (30, 70):
                case.spot(s, "val_reward", repr(ev["eval_gsm8k_pass1"]))
        if s in (3, 44, 69):
            for m, k in (("reward_mean", "reward"), ("grad_norm", "actor_grad_norm"),
                         ("entropy", "entropy_loss"), ("kl_ref", "kl")):
                case.spot(s, m, repr(st[k]))
    write_lines(out / "data" / "openrlhf.log", lines)
    return case


def case_slime(out: Path, rng: random.Random) -> Case:
    """slime: rollout ids from 0; rollout/perf/step/eval lines each carry part of a step."""
    steps = list(range(0, 50))
    case = Case("slime_console", "slime", "slime.log", steps,
                ["reward_mean", "entropy", "grad_norm", "kl_ref", "pg_clipfrac",
                 "response_length", "truncation_rate", "val_reward"])
    tr, ro = "(MegatronTrainRayActor pid=3131) ", "(RolloutManager pid=2020) "
    lines = [f"{ro}[2025-09-01 10:00:00] sglang_rollout.py:120 - Launch 8 SGLang engines"]
    for s in steps:
        t = s / 49
        if s % 10 == 0:
            ev = {"eval/gsm8k": round(0.4 + 0.3 * t, 4), "eval/gsm8k-truncated_ratio": 0.0}
            lines.append(f"{ro}[2025-09-01 10:{s:02d}:00] rollout.py:402 - eval {s}: {ev}")
            case.spot(s, "val_reward", repr(ev["eval/gsm8k"]))
        perf = {"rollout/response_len/mean": 350.0 + 200 * t, "rollout/response_len/max": 2048,
                "rollout/truncated_ratio": 0.01 + 0.02 * t, "perf/rollout_time": 61.5}
        # the actor averages each train_data field: raw_reward, rewards, truncated, ...
        roll = {"rollout/response_lengths": 350.0 + 200 * t, "rollout/rewards": 0.0,
                "rollout/raw_reward": 0.3 + 0.4 * t + rng.gauss(0, 0.02),
                "rollout/truncated": 0.01 + 0.02 * t, "rollout/log_probs": -0.41,
                "rollout/ref_log_probs": -0.42, "rollout/advantages": 0.0,
                "rollout/returns": 0.0}
        train = {"train/loss": rng.gauss(0, 0.01), "train/pg_loss": rng.gauss(0, 0.01),
                 "train/entropy_loss": 0.7 - 0.3 * t, "train/pg_clipfrac": 0.002,
                 "train/ppo_kl": 0.0, "train/kl_loss": 0.001 * s,
                 "train/grad_norm": abs(rng.gauss(0.2, 0.03)), "train/lr-pg_0": 1e-6}
        lines += [f"{ro}[2025-09-01 10:{s:02d}:01] rollout.py:455 - perf {s}: {perf}",
                  f"{tr}[2025-09-01 10:{s:02d}:02] actor.py:301 - rollout {s}: {roll}",
                  f"{tr}step {s}: {train}",
                  f"{tr}[2025-09-01 10:{s:02d}:40] actor.py:350 - perf {s}: "
                  f"{{'perf/actor_train_time': 30.2, 'perf/train_time': 35.0}}"]
        if s in (0, 25, 49):
            for m, d, k in (("reward_mean", roll, "rollout/raw_reward"),
                            ("entropy", train, "train/entropy_loss"),
                            ("grad_norm", train, "train/grad_norm"),
                            ("response_length", perf, "rollout/response_len/mean")):
                case.spot(s, m, repr(d[k]))
    write_lines(out / "data" / "slime.log", lines)
    return case


def case_roll(out: Path, rng: random.Random) -> Case:
    """ROLL's StdoutTracker: `metrics_tag: {json}` through its logger, steps from 0, NaN."""
    steps = list(range(0, 80))
    case = Case("roll_console", "roll", "roll.log", steps,
                ["reward_mean", "kl_ref", "grad_norm", "pg_clipfrac", "response_length",
                 "truncation_rate", "val_reward"])
    lines = ["[2025-06-01 12:00:00] [rlvr_pipeline.py (201)] [INFO] create tracker stdout, "
             "kwargs: {}"]
    for s in steps:
        t = s / 79
        m = {"critic/score/mean": 0.3 + 0.4 * t + rng.gauss(0, 0.02), "critic/score/max": 1.0,
             "actor/kl_loss": 0.001 + 0.01 * t, "actor/ppo_ratio_clipfrac": 0.003,
             "actor_train/grad_norm": abs(rng.gauss(0.3, 0.05)),
             "token/response_length/mean": 500.0 + 100 * t,
             "token/total_response_length/clip": float(8 + s // 10), "system/batch_size": 512,
             "time/step_total": 90.0}
        if s == 51:
            m["actor_train/grad_norm"] = float("nan")
        if s % 20 == 0:
            m["val_correct/all/mean"] = round(0.35 + 0.3 * t, 4)
            case.spot(s, "val_reward", repr(m["val_correct/all/mean"]))
        lines.append(f"[2025-06-01 12:{s % 60:02d}:00] [rlvr_pipeline.py (412)] [INFO] "
                     f"metrics_tag: {json.dumps({'step': s, 'metrics': m})}")
        if s in (0, 51, 79):
            case.spot(s, "reward_mean", repr(m["critic/score/mean"]))
            case.spot(s, "grad_norm", repr(m["actor_train/grad_norm"]))
            case.spot(s, "truncation_rate", repr(m["token/total_response_length/clip"] / 512))
    write_lines(out / "data" / "roll.log", lines)
    return case


def case_parquet_verl(out: Path, rng: random.Random) -> Case:
    """A Parquet table of a verl run (1003 steps, `step` column, nulls between validations)."""
    steps = list(range(1, 1004))
    series = verl_series(rng, steps, 100, ["openai/gsm8k"], 1e-6)
    keys = list(dict.fromkeys(k for r in series.values() for k in r))
    data = {"step": steps} | {k: [float(series[s][k]) if k in series[s] else None
                                  for s in steps] for k in keys}
    (out / "data").mkdir(parents=True)
    pl.DataFrame(data).write_parquet(out / "data" / "run.parquet")
    case = Case("parquet_verl", "parquet", "run.parquet", steps, VERL_PRESENT, lr_true=1e-6)
    spot_rows(case, rng, series, VERL_MAP, repr, k=2)
    return case


def case_parquet_wandb_step(out: Path, rng: random.Random) -> Case:
    """W&B history as Parquet: `_step` plus `_runtime`, verl names, 37 rows."""
    steps = list(range(1, 38))
    series = verl_series(rng, steps, 10, ["openai/gsm8k"], 1e-6)
    keys = list(dict.fromkeys(k for r in series.values() for k in r))
    data = {"_step": steps, "_runtime": [71.0 * s for s in steps]}
    data |= {k: [float(series[s][k]) if k in series[s] else None for s in steps] for k in keys}
    (out / "data").mkdir(parents=True)
    pl.DataFrame(data).write_parquet(out / "data" / "history.parquet")
    case = Case("parquet_wandb_step", "parquet", "history.parquet", steps, VERL_PRESENT,
                lr_true=1e-6)
    spot_rows(case, rng, series, VERL_MAP, repr, k=1)
    return case


def case_mlflow(out: Path, rng: random.Random) -> Case:
    """MLflow file store run folder: metrics/<key path> of `ts value step`, '@' -> '_at_'."""
    steps = list(range(1, 91))
    series = verl_series(rng, steps, 30, ["openai/gsm8k"], 1e-6)
    poison(series, 45, "actor/grad_norm", float("nan"))
    exp = out / "data" / "mlruns" / "283749187"
    run = exp / "9f1c2d3e4b5a69788796a5b4c3d2e1f0"
    (exp).mkdir(parents=True)
    (exp / "meta.yaml").write_text(
        f"artifact_location: file://{exp}\ncreation_time: 1748771000000\nexperiment_id: "
        "'283749187'\nlast_update_time: 1748771000000\nlifecycle_stage: active\n"
        "name: verl_grpo_gsm8k\n")
    for sub in ("artifacts", "params/actor_rollout_ref/actor/optim", "tags"):
        (run / sub).mkdir(parents=True, exist_ok=True)
    (run / "meta.yaml").write_text(
        f"artifact_uri: file://{run}/artifacts\nend_time: null\nentry_point_name: ''\n"
        "experiment_id: '283749187'\nlifecycle_stage: active\nrun_id: "
        f"{run.name}\nrun_name: qwen2.5-3b-grpo\nrun_uuid: {run.name}\nsource_name: ''\n"
        "source_type: 4\nsource_version: ''\nstart_time: 1748771001000\nstatus: 1\ntags: []\n"
        "user_id: root\n")
    (run / "params/actor_rollout_ref/actor/optim/lr").write_text("1e-06")
    (run / "tags" / "mlflow.runName").write_text("qwen2.5-3b-grpo")
    for key in dict.fromkeys(k for r in series.values() for k in r):
        path = run / "metrics" / key.replace("@", "_at_")
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [f"{1748771001000 + 71000 * s} {float(series[s][key])} {s}"
                for s in steps if key in series[s]]
        path.write_text("\n".join(rows) + "\n")
    case = Case("mlflow_run", "mlflow", f"mlruns/283749187/{run.name}", steps, VERL_PRESENT,
                lr_true=1e-6)
    spot_rows(case, rng, series, VERL_MAP, lambda v: str(float(v)), k=2)
    case.spot(45, "grad_norm", "nan")
    case.spot(90, "val_reward", str(series[90]["val-core/openai/gsm8k/reward/mean@1"]))
    return case


# ----------------------------------------------------------------------------- more mess
def case_verl_slurm_label(out: Path, rng: random.Random) -> Case:
    """`srun --label` prefixes every line with the task rank ('0: ') before Ray's prefix."""
    steps = list(range(1, 41))
    series = verl_series(rng, steps, 20, ["openai/gsm8k"], 1e-6)
    lines = verl_console_text(rng, series, pid=6001, ansi=False, fmt=fmt_np, lr=1e-6, total=40,
                              test_freq=20)
    write_lines(out / "data" / "slurm-88231.out", ["0: " + ln for ln in lines])
    case = Case("verl_slurm_label", "verl-console", "slurm-88231.out", steps, VERL_PRESENT,
                lr_true=1e-6)
    spot_rows(case, rng, series, VERL_MAP, fmt_np, k=1)
    return case


def case_verl_k8s_timestamps(out: Path, rng: random.Random) -> Case:
    """`kubectl logs --timestamps`: an RFC 3339 timestamp opens every line."""
    steps = list(range(1, 52))
    series = verl_series(rng, steps, 25, ["openai/gsm8k"], 1e-6)
    lines = verl_console_text(rng, series, pid=88, ansi=True, fmt=fmt_repr, lr=1e-6, total=51,
                              test_freq=25)
    stamped = [f"2025-06-01T10:{i // 60 % 60:02d}:{i % 60:02d}.{i:09d}Z {ln}"
               for i, ln in enumerate(lines)]
    write_lines(out / "data" / "ray-head.log", stamped)
    case = Case("verl_k8s_timestamps", "verl-console", "ray-head.log", steps, VERL_PRESENT,
                lr_true=1e-6)
    spot_rows(case, rng, series, VERL_MAP, fmt_repr, k=1)
    return case


def case_verl_np_mixed(out: Path, rng: random.Random) -> Case:
    """numpy 2 reprs of several dtypes in one line: np.float32, np.int64, plain int and float."""
    steps = list(range(1, 26))
    series = verl_series(rng, steps, 5, ["openai/gsm8k"], 1e-6)
    poison(series, 13, "actor/pg_loss", float("-inf"))

    def fmt(v: float | int) -> str:
        if isinstance(v, int):
            return repr(v)
        return f"np.float32({v!r})" if abs(v) > 100 else fmt_np(v)

    lines = verl_console_text(rng, series, pid=31, ansi=False, fmt=fmt, lr=1e-6, total=25,
                              test_freq=5)
    write_lines(out / "data" / "mixed.log", lines)
    case = Case("verl_np_mixed", "verl-console", "mixed.log", steps,
                [*VERL_PRESENT, "actor/pg_loss"], lr_true=1e-6)
    spot_rows(case, rng, series, VERL_MAP, fmt, k=2)
    case.spot(13, "actor/pg_loss", fmt(series[13]["actor/pg_loss"]))
    return case


def case_trl_console_powershell(out: Path, rng: random.Random) -> Case:
    """`python train.py > log.txt` in Windows PowerShell 5: UTF-16 LE with a BOM, CRLF."""
    series = trl_series(rng, list(range(1, 21)), 1e-6, beta=0.04)
    body = trl_console_lines(rng, series, 20, 1, 10, dict_g4).replace("\n", "\r\n")
    (out / "data").mkdir(parents=True)
    (out / "data" / "log.txt").write_bytes(body.encode("utf-16"))
    case = Case("trl_console_powershell", "trl-console", "log.txt", list(range(1, 21)),
                [*TRL_MAP, "kl_ref", "val_reward"], lr_true=1e-6,
                ambiguous=dict.fromkeys(ALL_CHECKS, AMBIG_ENCODING))
    spot_rows(case, rng, series, TRL_MAP, g4, k=1)
    return case


def case_json_list_verl(out: Path, rng: random.Random) -> Case:
    """A user's json.dump(history, indent=2): a list of step dicts in verl names."""
    steps = list(range(1, 31))
    series = verl_series(rng, steps, 10, ["openai/gsm8k"], 1e-6)
    (out / "data").mkdir(parents=True)
    (out / "data" / "history.json").write_text(
        json.dumps([{"step": s, **series[s]} for s in steps], indent=2))
    case = Case("json_list_verl", "json(list)", "history.json", steps, VERL_PRESENT,
                lr_true=1e-6, ambiguous=dict.fromkeys(ALL_CHECKS, AMBIG_NOT_LISTED))
    spot_rows(case, rng, series, VERL_MAP, repr, k=1)
    return case


def case_tensorboard_csv(out: Path, rng: random.Random) -> Case:
    """TensorBoard's "Download CSV": Wall time,Step,Value; the tag lives in the file name."""
    steps = list(range(1, 58))
    rows: list[list[object]] = [["Wall time", "Step", "Value"]]
    case = Case("tensorboard_csv", "csv(tensorboard)",
                "run-qwen_grpo-tag-critic_rewards_mean.csv", steps, ["reward_mean"],
                ambiguous=dict.fromkeys(ALL_CHECKS, AMBIG_NOT_LISTED))
    for s in steps:
        v = 0.2 + s / 100 + rng.gauss(0, 0.01)
        rows.append([1748771001.5 + 70 * s, s, v])
        if s in (1, 57):
            case.spot(s, "reward_mean", repr(v))
    (out / "data").mkdir(parents=True)
    (out / "data" / case.input).write_bytes(_csv(rows))
    return case


def case_mlflow_root(out: Path, rng: random.Random) -> Case:
    """The whole mlruns/ folder (Default experiment 0 empty, one run, a .trash dir)."""
    case = case_mlflow(out, rng)
    root = out / "data" / "mlruns"
    (root / "0").mkdir()
    (root / "0" / "meta.yaml").write_text(
        f"artifact_location: file://{root}/0\nexperiment_id: '0'\nlifecycle_stage: active\n"
        "name: Default\n")
    (root / ".trash").mkdir()
    case.name, case.input = "mlflow_root", "mlruns"
    case.ambiguous = dict.fromkeys(ALL_CHECKS, AMBIG_MLROOT)
    return case


# TensorBoard event files: TFRecord framing around Event protos, written by hand (no tensorboard)
def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data: bytes) -> bytes:
    crc = _crc32c(data)
    return ((((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF).to_bytes(4, "little")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(tag: int, payload: bytes) -> bytes:
    return _varint(tag) + _varint(len(payload)) + payload


def _event(wall: float, step: int, scalars: dict[str, float] | None = None) -> bytes:
    """Event{wall_time=1, step=2, file_version=3 | summary=5{value{tag=1, simple_value=2}}}."""
    import struct

    msg = b"\x09" + struct.pack("<d", wall) + b"\x10" + _varint(step)
    if scalars is None:
        return msg + _field(0x1A, b"brain.Event:2")
    values = b"".join(_field(0x0A, _field(0x0A, k.encode()) + b"\x15" + struct.pack("<f", v))
                      for k, v in scalars.items())
    return msg + _field(0x2A, values)


def write_events(path: Path, series: Series) -> None:
    records = [_event(1748771000.0, 0)]
    records += [_event(1748771000.0 + 70 * s, s, {k: float(v) for k, v in row.items()})
                for s, row in series.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        for rec in records:
            head = len(rec).to_bytes(8, "little")
            fh.write(head + _masked_crc(head) + rec + _masked_crc(rec))


def f32(v: float | int) -> str:
    """What a float32 simple_value holds, as a token."""
    import struct

    return repr(struct.unpack("<f", struct.pack("<f", float(v)))[0])


def case_tensorboard_events(out: Path, rng: random.Random) -> Case:
    """verl's TensorBoard backend: one scalar per key per step (needs the tensorboard extra)."""
    steps = list(range(1, 31))
    series = verl_series(rng, steps, 10, ["openai/gsm8k"], 1e-6)
    keep = ("critic/rewards/mean", "actor/entropy", "actor/grad_norm", "actor/kl_loss",
            "response_length/mean", "val-core/openai/gsm8k/reward/mean@1")
    series = {s: {k: v for k, v in row.items() if k in keep} for s, row in series.items()}
    write_events(out / "data" / "tensorboard_log" / "verl_grpo" / "qwen" /
                 "events.out.tfevents.1748771000.gpu-node-3.2817.0", series)
    case = Case("tensorboard_events", "tensorboard", "tensorboard_log/verl_grpo/qwen", steps,
                ["reward_mean", "entropy", "grad_norm", "kl_ref", "response_length",
                 "val_reward"], requires="tensorboard")
    spot_rows(case, rng, series, {k: VERL_MAP[k] for k in ("reward_mean", "entropy")}, f32, k=2)
    return case


def case_trl_dir_with_runs(out: Path, rng: random.Random) -> Case:
    """A TRL output dir as report_to=tensorboard leaves it: runs/<date>/events by checkpoints."""
    hist, series = trl_history(rng, 60, 1, 20, 1e-6, beta=0.04)
    root = out / "data" / "qwen-grpo"
    for ck in (40, 60):
        d = root / f"checkpoint-{ck}"
        d.mkdir(parents=True)
        part = [h for h in hist if int(h["step"]) <= ck and ("loss" in h or "eval_reward" in h)]
        (d / "trainer_state.json").write_text(trainer_state(part, ck, 1, 20, 20))
    tb = {s: {f"train/{k}": v for k, v in series[s].items()} for s in range(1, 61)}
    write_events(root / "runs" / "Jun01_10-00-00_gpu-node-3" /
                 "events.out.tfevents.1748771000.gpu-node-3.4242.0", tb)
    case = Case("trl_dir_with_runs", "trl-state(dir)", "qwen-grpo", list(range(1, 61)),
                [*TRL_MAP, "kl_ref", "val_reward"], lr_true=1e-6,
                notes="checkpoints hold the run; the events file must not break or replace it")
    spot_rows(case, rng, series, TRL_MAP, repr, k=1)
    return case


CASES: dict[str, Callable[[Path, random.Random], Case]] = {
    "verl_v03_3dec": case_verl_v03_3dec,
    "verl_v05_np_ansi": case_verl_v05_np_ansi,
    "verl_step0_two_datasets": case_verl_step0_two_datasets,
    "verl_resumed_crash": case_verl_resumed_crash,
    "verl_crlf_1003": case_verl_crlf_1003,
    "verl_cut_tail": case_verl_cut_tail,
    "verl_markdown_issue": case_verl_markdown_issue,
    "verl_markdown_quote": case_verl_markdown_quote,
    "verl_val_at_n": case_verl_val_at_n,
    "verl_filelogger_cut": case_verl_filelogger_cut,
    "verl_filelogger_resumed": case_verl_filelogger_resumed,
    "flat_jsonl_canonical": case_flat_jsonl_canonical,
    "flat_jsonl_trl_callback": case_flat_jsonl_trl_callback,
    "wandb_history_verl": case_wandb_history_verl,
    "wandb_history_trl": case_wandb_history_trl,
    "wandb_history_jsonl": case_wandb_history_jsonl,
    "wandb_chart": case_wandb_chart,
    "wandb_chart_excel": case_wandb_chart_excel,
    "trl_state_grpo": case_trl_state_grpo,
    "trl_state_beta0_odd": case_trl_state_beta0_odd,
    "trl_log_history_bare": case_trl_log_history_bare,
    "trl_output_dir": case_trl_output_dir,
    "trl_console_new": case_trl_console_new,
    "trl_console_old_crlf": case_trl_console_old_crlf,
    "trl_console_logging5": case_trl_console_logging5,
    "openrlhf_console": case_openrlhf,
    "slime_console": case_slime,
    "roll_console": case_roll,
    "parquet_verl": case_parquet_verl,
    "parquet_wandb_step": case_parquet_wandb_step,
    "mlflow_run": case_mlflow,
    "mlflow_root": case_mlflow_root,
    "verl_slurm_label": case_verl_slurm_label,
    "verl_k8s_timestamps": case_verl_k8s_timestamps,
    "verl_np_mixed": case_verl_np_mixed,
    "trl_console_powershell": case_trl_console_powershell,
    "json_list_verl": case_json_list_verl,
    "tensorboard_csv": case_tensorboard_csv,
    "tensorboard_events": case_tensorboard_events,
    "trl_dir_with_runs": case_trl_dir_with_runs,
    "trl_console_resumed": case_trl_console_resumed,
    "trl_printer_no_tqdm": case_trl_printer_no_tqdm,
}


def make_case(name: str, out_dir: Path, seed: int) -> dict[str, object]:
    """Write one case under out_dir/<name>/ and return its expected.json content."""
    case_dir = out_dir / name
    # one RNG per case: adding a case never changes another case's numbers
    rng = random.Random(f"{seed}:{name}")
    expected = CASES[name](case_dir, rng).to_json()
    (case_dir / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    return expected


def make_all(out_dir: Path, seed: int = 7) -> dict[str, dict[str, object]]:
    return {name: make_case(name, out_dir, seed) for name in CASES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, exp in make_all(args.out_dir, args.seed).items():
        print(f"{name:28s} {exp['input']}  steps={exp['steps']} "
              f"[{exp['first_step']}..{exp['last_step']}]")


if __name__ == "__main__":
    main()
