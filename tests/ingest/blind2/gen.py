"""Blind test corpus for rl-advisor's metric readers.

Writes files the way the real trainers write them and a manifest (expected.json) holding, for
each case, the TRUE number of logged training steps, first/last step, the canonical metrics that
must be present, or that the input is unusable (exit 2, one line on stderr).
"""

from __future__ import annotations

import gzip  # noqa: F401  (kept: no trainer writes gzip, so no gzip case)
import json
import math
import os
import random
import struct
from pathlib import Path

OUT = Path(__file__).resolve().parent / "cases"
OUT.mkdir(exist_ok=True)
MANIFEST: dict[str, dict] = {}
R = random.Random(7)


def expect(
    name: str,
    steps: int | None,
    first: int | None,
    last: int | None,
    metrics: list[str],
    note: str = "",
    error: bool = False,
) -> None:
    MANIFEST[name] = {
        "steps": steps,
        "first": first,
        "last": last,
        "metrics": metrics,
        "note": note,
        "error": error,
    }


def curve(step: int, n: int, lo: float, hi: float, noise: float = 0.02) -> float:
    return lo + (hi - lo) * (1 - math.exp(-3 * step / max(n, 1))) + R.gauss(0, noise)


# ------------------------------------------------------------------ verl metric dicts
def verl_train_metrics(
    step: int,
    n: int,
    *,
    old: bool = False,
    gae: bool = False,
    kl_loss: bool = True,
    rewards_key: bool = True,
) -> dict:
    score = curve(step, n, 0.15, 0.7)
    resp = 380 + 120 * math.sin(step / 9) + R.gauss(0, 10)
    m: dict = {}
    m["training/global_step"] = step
    m["training/epoch"] = step // 50
    for k in ("min", "max", "minmax_diff", "balanced_min", "balanced_max", "mean"):
        m[f"global_seqlen/{k}"] = R.randint(200000, 300000)
    ent_key = "actor/entropy_loss" if old else "actor/entropy"
    m[ent_key] = max(0.05, 0.6 - step * 0.002 + R.gauss(0, 0.01))
    if kl_loss:
        m["actor/kl_loss"] = abs(0.001 * step + R.gauss(0, 0.0005))
        m["actor/kl_coef"] = 0.001
    m["actor/pg_loss"] = R.gauss(0, 0.02)
    m["actor/pg_clipfrac"] = abs(0.003 + R.gauss(0, 0.001))
    m["actor/ppo_kl"] = abs(R.gauss(0, 0.0004))
    m["actor/pg_clipfrac_lower"] = 0.0
    m["actor/grad_norm"] = abs(0.25 + R.gauss(0, 0.05))
    m["perf/mfu/actor"] = 0.21
    m["perf/max_memory_allocated_gb"] = 41.7
    m["perf/max_memory_reserved_gb"] = 58.2
    m["perf/cpu_memory_used_gb"] = 112.5
    m["actor/lr"] = 1e-06
    if gae:
        m["critic/vf_loss"] = abs(R.gauss(0.05, 0.01))
        m["critic/vf_clipfrac"] = 0.0
        m["critic/vpred_mean"] = R.gauss(0.1, 0.05)
        m["critic/grad_norm"] = abs(R.gauss(3.0, 1.0))  # trap: not the actor's grad_norm
        m["critic/lr"] = 1e-05
    m["critic/score/mean"] = score
    m["critic/score/max"] = 1.0
    m["critic/score/min"] = 0.0
    if rewards_key:
        m["critic/rewards/mean"] = score - 0.001
        m["critic/rewards/max"] = 1.0
        m["critic/rewards/min"] = 0.0
    m["critic/advantages/mean"] = R.gauss(0, 0.01)
    m["critic/advantages/max"] = 2.4
    m["critic/advantages/min"] = -2.1
    m["critic/returns/mean"] = R.gauss(0, 0.01)
    m["critic/returns/max"] = 2.4
    m["critic/returns/min"] = -2.1
    if gae:
        m["critic/values/mean"] = R.gauss(0.2, 0.1)
        m["critic/values/max"] = 1.1
        m["critic/values/min"] = -0.4
        m["critic/vf_explained_var"] = R.uniform(-0.2, 0.6)
    m["response_length/mean"] = resp
    m["response_length/max"] = 1024.0
    m["response_length/min"] = 31.0
    m["response_length/clip_ratio"] = max(0.0, 0.02 + R.gauss(0, 0.01))
    if not old:
        m["response_length_non_aborted/mean"] = resp
        m["response_length_non_aborted/max"] = 1024.0
        m["response_length_non_aborted/min"] = 31.0
        m["response_length_non_aborted/clip_ratio"] = m["response_length/clip_ratio"]
        m["response/aborted_ratio"] = 0.0
    m["prompt_length/mean"] = 104.3
    m["prompt_length/max"] = 212.0
    m["prompt_length/min"] = 60.0
    m["prompt_length/clip_ratio"] = 0.0
    m["timing_s/gen"] = 40 + R.random() * 5
    m["timing_s/reward"] = 0.4
    m["timing_s/old_log_prob"] = 6.1
    m["timing_s/ref"] = 5.8
    m["timing_s/adv"] = 0.1
    m["timing_s/update_actor"] = 20.3
    m["timing_s/step"] = m["timing_s/gen"] + 33
    m["timing_per_token_ms/gen"] = 0.031
    m["timing_per_token_ms/update_actor"] = 0.017
    m["perf/total_num_tokens"] = 1234567
    m["perf/time_per_step"] = m["timing_s/step"]
    m["perf/throughput"] = 2233.3
    return m


def val_metrics_new(
    step: int, n: int, datasets=("openai/gsm8k",), at: int = 1, metric: str = "reward"
) -> dict:
    v = {}
    for ds in datasets:
        val = curve(step, n, 0.2, 0.65, 0.01)
        v[f"val-core/{ds}/{metric}/mean@{at}"] = val
        if at > 1:
            v[f"val-aux/{ds}/{metric}/std@{at}"] = 0.1
            v[f"val-aux/{ds}/{metric}/best@{at}/mean"] = min(1, val + 0.2)
            v[f"val-aux/{ds}/{metric}/best@{at}/std"] = 0.05
            v[f"val-aux/{ds}/{metric}/maj@{at}/mean"] = val + 0.05
    return v


def fmt_3dec(k: str, v) -> str:
    return f"{k}:{v:.3f}"


def fmt_np(k: str, v) -> str:
    """pprint.pformat of numpy 2 scalars: np.float64(...), np.int64(...); python ints/floats bare."""
    if isinstance(v, bool):
        return f"{k}:{v}"
    if isinstance(v, int):
        if k.startswith("training/"):
            return f"{k}:{v}"
        return f"{k}:np.int64({v})"
    if isinstance(v, float):
        if math.isnan(v):
            return f"{k}:np.float64(nan)"
        if math.isinf(v):
            return f"{k}:np.float64({'inf' if v > 0 else '-inf'})"
        if k == "actor/lr":
            return f"{k}:{v!r}"  # the scheduler's lr is a plain python float
        return f"{k}:np.float64({v!r})"
    return f"{k}:{v}"


def step_line(step: int, m: dict, fmt=fmt_np) -> str:
    return " - ".join([f"step:{step}"] + [fmt(k, v) for k, v in m.items()])


VERL_NEW_CANON = [
    "reward_mean",
    "ppo_kl",
    "kl_ref",
    "grad_norm",
    "entropy",
    "truncation_rate",
    "prompt_truncation_rate",
    "response_length",
    "pg_clipfrac",
    "lr",
    "step_time",
    "rollout_time",
]

STARTUP = [
    "2025-06-12 10:01:12,381\tINFO worker.py:1832 -- Started a local Ray instance. View the dashboard at 127.0.0.1:8265",
    "{'actor_rollout_ref': {'actor': {'optim': {'lr': 1e-06}, 'ppo_mini_batch_size': 256}}, 'trainer': {'total_epochs': 15}}",
    "Using dataset class: RLHFDataset",
    "dataset len: 7473",
    "filter dataset len: 7473",
    "Size of train dataloader: 29, Size of val dataloader: 1",
    "Total training steps: 435",
]


def wrap_ray(line: str, who: str = "TaskRunner pid=2345", ansi: bool = True) -> str:
    if ansi:
        return f"\x1b[36m({who})\x1b[0m {line}"
    return f"({who}) {line}"


def write(name: str, text: str | bytes, newline: str = "\n") -> Path:
    p = OUT / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        with open(p, "w", encoding="utf-8", newline="") as f:
            f.write(text.replace("\n", newline))
    return p


# ------------------------------------------------------------------ verl console cases
def v01_verl_v03_3dec() -> None:
    """verl up to v0.4: 3 decimals, val/test_score/<ds>, entropy held in actor/entropy_loss,
    PPO with a critic (critic/grad_norm is a trap), val before train at step 0, test_freq 10."""
    n = 40
    lines = list(STARTUP)
    lines.append("Initial validation metrics: {'val/test_score/openai/gsm8k': 0.2100}")
    lines.append(step_line(0, {"val/test_score/openai/gsm8k": 0.21}, fmt_3dec))
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n, old=True, gae=True, kl_loss=False)
        if s % 10 == 0:
            m["val/test_score/openai/gsm8k"] = curve(s, n, 0.2, 0.6)
        lines.append(step_line(s, m, fmt_3dec))
        if s % 7 == 0:
            lines.append(
                "INFO 06-12 10:20:01 model_runner.py:1771] Graph capturing finished in 11 secs."
            )
    write("v01_verl_v03_3dec.log", "\n".join(lines) + "\n")
    expect(
        "v01_verl_v03_3dec.log",
        n,
        1,
        n,
        [
            "reward_mean",
            "ppo_kl",
            "grad_norm",
            "entropy",
            "truncation_rate",
            "response_length",
            "pg_clipfrac",
            "val_reward",
            "step_time",
            "rollout_time",
        ],
        "3-decimal verl; entropy as actor/entropy_loss (metrics.md: held the entropy up to v0.4)",
    )


def v02_verl_ray_ansi_np() -> None:
    n = 60
    out = [wrap_ray(x) for x in STARTUP]
    v0 = val_metrics_new(0, n)
    out.append(wrap_ray("Initial validation metrics: " + repr({k: v for k, v in v0.items()})))
    out.append(wrap_ray(step_line(0, v0)))
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n)
        if s % 10 == 0:
            m.update(val_metrics_new(s, n))
            m["timing_s/testing"] = 31.2
        out.append(wrap_ray(step_line(s, m)))
        if s % 5 == 0:
            out.append(
                wrap_ray(
                    "INFO 06-12 10:30:02 [block_pool.py:316] Successfully reset prefix cache",
                    "WorkerDict pid=3456, ip=10.0.0.2",
                )
            )
            out.append(
                "\x1b[33m(raylet)\x1b[0m [2025-06-12 10:30:03,001 E 2211 2211] (raylet) file_system_monitor.cc:116: /tmp/ray is over 95% full"
            )
    out.append(wrap_ray("Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': 0.61}"))
    write("v02_verl_ray_ansi_np.log", "\n".join(out) + "\n")
    expect(
        "v02_verl_ray_ansi_np.log",
        n,
        1,
        n,
        [*VERL_NEW_CANON, "val_reward"],
        "verl v0.5+ console, Ray ANSI prefix, np.float64 values, step 0 val-only",
    )


def v03_verl_repeated() -> None:
    n = 35
    out = []
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n)
        out.append(wrap_ray(step_line(s, m), ansi=False))
        out.append(
            wrap_ray(
                "kl_loss_coef=0.001 actor/grad_norm check ok step:%d" % s,
                "WorkerDict pid=3456, ip=10.0.0.2",
                ansi=False,
            )
            + " [repeated 3x across cluster]"
        )
        out.append(
            "(WorkerDict pid=3457, ip=10.0.0.3) INFO 06-12 10:30:02 [gpu_model_runner.py:1800] "
            "Memory profiling takes 3.1 seconds [repeated 7x across cluster] (Ray deduplicates logs by default. "
            "Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see "
            "https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication for more options.)"
        )
    write("v03_verl_repeated.log", "\n".join(out) + "\n")
    expect(
        "v03_verl_repeated.log",
        n,
        1,
        n,
        VERL_NEW_CANON,
        "worker lines with [repeated Nx across cluster] that even contain 'step:%d'",
    )


def v04_verl_wrapped() -> None:
    """A console copied from a terminal that hard-wrapped lines at 200 columns."""
    n = 30
    out = []
    for s in range(1, n + 1):
        line = wrap_ray(step_line(s, verl_train_metrics(s, n)), ansi=False)
        out.extend(line[i : i + 200] for i in range(0, len(line), 200))
    write("v04_verl_wrapped.log", "\n".join(out) + "\n")
    expect(
        "v04_verl_wrapped.log",
        n,
        1,
        n,
        VERL_NEW_CANON,
        "step lines hard-wrapped at 200 columns (continuations have no prefix)",
    )


def v05_verl_crlf() -> None:
    n = 25
    out = list(STARTUP)
    for s in range(1, n + 1):
        out.append(step_line(s, verl_train_metrics(s, n), fmt_np))
    write("v05_verl_crlf.log", "\n".join(out) + "\n", newline="\r\n")
    expect("v05_verl_crlf.log", n, 1, n, VERL_NEW_CANON, "Windows CRLF line ends")


def v06_verl_resume() -> None:
    """Run crashes after step 60 (checkpoint at 50); resumed: val at step 50, then 51..100."""
    n = 100
    out = [wrap_ray(x) for x in STARTUP]
    out.append(wrap_ray(step_line(0, val_metrics_new(0, n))))
    for s in range(1, 61):
        out.append(wrap_ray(step_line(s, verl_train_metrics(s, n))))
    out += [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/site-packages/ray/_private/worker.py", line 2771, in get',
        "ray.exceptions.RayTaskError(OutOfMemoryError): \x1b[36mray::WorkerDict.actor_rollout_generate_sequences()\x1b[39m",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "",
        "==== resubmitted ====",
    ]
    out += [wrap_ray(x, "TaskRunner pid=9911") for x in STARTUP]
    out.append(
        wrap_ray(
            "Load from checkpoint folder: checkpoints/gsm8k/qwen/global_step_50",
            "TaskRunner pid=9911",
        )
    )
    out.append(wrap_ray("Setting global step to 50", "TaskRunner pid=9911"))
    out.append(wrap_ray(step_line(50, val_metrics_new(50, n)), "TaskRunner pid=9911"))
    for s in range(51, n + 1):
        out.append(wrap_ray(step_line(s, verl_train_metrics(s, n)), "TaskRunner pid=9911"))
    write("v06_verl_resume.log", "\n".join(out) + "\n")
    expect(
        "v06_verl_resume.log",
        n,
        1,
        n,
        [*VERL_NEW_CANON, "val_reward", "grad_norm"],
        "two runs in one log: 1..60 crash, resume from 50: 51..100 (51..60 re-logged)",
    )


def v07_verl_separate_val_lines() -> None:
    """A fork that logs validation on its own line at the same step as the train line."""
    n = 50
    out = []
    for s in range(1, n + 1):
        out.append(step_line(s, verl_train_metrics(s, n)))
        if s % 10 == 0:
            out.append(step_line(s, val_metrics_new(s, n, at=4)))
    write("v07_verl_separate_val_lines.log", "\n".join(out) + "\n")
    expect(
        "v07_verl_separate_val_lines.log",
        n,
        1,
        n,
        [*VERL_NEW_CANON, "val_reward"],
        "validation-only lines at the same step as a training line",
    )


def v08_verl_nan_inf() -> None:
    n = 30
    out = []
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n)
        if s >= 22:
            m["actor/grad_norm"] = float("nan")
            m["actor/kl_loss"] = float("inf") if s % 2 else float("nan")
            m["actor/entropy"] = float("nan")
        out.append(wrap_ray(step_line(s, m)))
    write("v08_verl_nan_inf.log", "\n".join(out) + "\n")
    expect(
        "v08_verl_nan_inf.log",
        n,
        1,
        n,
        VERL_NEW_CANON,
        "np.float64(nan)/np.float64(inf) from step 22 on",
    )


def v09_verl_score_only_acc() -> None:
    """GRPO without critic/rewards (no in-reward KL) and val-core/<ds>/acc/mean@16."""
    n = 45
    out = []
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n, rewards_key=False)
        if s % 15 == 0:
            m.update(val_metrics_new(s, n, datasets=("aime24",), at=16, metric="acc"))
        out.append(wrap_ray(step_line(s, m), "TaskRunner pid=77, ip=172.16.0.9"))
    write("v09_verl_score_only_acc.log", "\n".join(out) + "\n")
    expect(
        "v09_verl_score_only_acc.log",
        n,
        1,
        n,
        [*VERL_NEW_CANON, "val_reward"],
        "critic/score/mean only; val-core/aime24/acc/mean@16",
    )


def v10_verl_scinote() -> None:
    n = 20
    out = []
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n)
        m["actor/ppo_kl"] = 3.2e-07 * s
        m["actor/grad_norm"] = 1.5e05 if s == 12 else 2.5e-1
        m["actor/kl_loss"] = 1.0e-10
        m["actor/lr"] = 9.999e-07
        out.append(step_line(s, m))
    write("v10_verl_scinote.log", "\n".join(out) + "\n")
    expect(
        "v10_verl_scinote.log",
        n,
        1,
        n,
        VERL_NEW_CANON,
        "scientific notation: np.float64(3.2e-07), lr 9.999e-07",
    )


def v11_verl_bom() -> None:
    n = 15
    out = [step_line(s, verl_train_metrics(s, n)) for s in range(1, n + 1)]
    write("v11_verl_bom.log", "\ufeff" + "\n".join(out) + "\n")
    expect("v11_verl_bom.log", n, 1, n, VERL_NEW_CANON, "UTF-8 BOM, first line is step:1")


def v12_verl_multi_val_ds() -> None:
    n = 40
    out = []
    for s in range(0, n + 1):
        m = {} if s == 0 else verl_train_metrics(s, n)
        if s % 20 == 0:
            m.update(val_metrics_new(s, n, datasets=("openai/gsm8k", "lighteval/MATH"), at=1))
            m.update(
                {
                    "val-aux/num_turns/min": 2,
                    "val-aux/num_turns/max": 2,
                    "val-aux/num_turns/mean": 2.0,
                }
            )
        out.append(wrap_ray(step_line(s, m)))
    write("v12_verl_multi_val_ds.log", "\n".join(out) + "\n")
    expect(
        "v12_verl_multi_val_ds.log",
        n,
        1,
        n,
        [*VERL_NEW_CANON, "val_reward"],
        "two validation data sets; step 0 val-only",
    )


def v13_verl_k8s_timestamps() -> None:
    """`kubectl logs --timestamps`: each line starts with an RFC3339 timestamp."""
    n = 30
    out = []
    t = 1718186400
    for s in range(1, n + 1):
        ts = f"2025-06-12T10:{s // 60:02d}:{s % 60:02d}.{R.randint(0, 999999):06d}Z"
        out.append(ts + " " + wrap_ray(step_line(s, verl_train_metrics(s, n)), ansi=False))
        t += 60
    write("v13_verl_k8s_timestamps.log", "\n".join(out) + "\n")
    expect("v13_verl_k8s_timestamps.log", n, 1, n, VERL_NEW_CANON, "kubectl --timestamps prefix")


def v14_verl_tee_progress() -> None:
    """verl's own tqdm 'Training Progress' bar written with \\r into the same file."""
    n = 30
    buf = []
    for s in range(1, n + 1):
        buf.append(
            f"\rTraining Progress:   {int(100 * (s - 1) / n)}%|##        | {s - 1}/{n} [00:{s:02d}<01:00, 73.1s/it]"
        )
        buf.append("\n" + wrap_ray(step_line(s, verl_train_metrics(s, n)), ansi=False) + "\n")
    buf.append(f"\rTraining Progress: 100%|##########| {n}/{n} [36:32<00:00, 73.1s/it]\n")
    write("v14_verl_tee_progress.log", "".join(buf))
    expect(
        "v14_verl_tee_progress.log",
        n,
        1,
        n,
        VERL_NEW_CANON,
        "tqdm Training Progress bar with \\r between step lines",
    )


def v15_verl_main_task_v02() -> None:
    """verl 0.2: (main_task pid=...) prefix, timing/* names, critic/kl (in-reward KL)."""
    n = 20
    out = []
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n, old=True, kl_loss=False)
        m = {k.replace("timing_s/", "timing/"): v for k, v in m.items()}
        m["critic/kl"] = 0.002 * s
        m["critic/kl_coeff"] = 0.001
        out.append(wrap_ray(step_line(s, m, fmt_3dec), "main_task pid=1043", ansi=True))
    write("v15_verl_main_task_v02.log", "\n".join(out) + "\n")
    expect(
        "v15_verl_main_task_v02.log",
        n,
        1,
        n,
        [
            "reward_mean",
            "ppo_kl",
            "grad_norm",
            "entropy",
            "truncation_rate",
            "response_length",
            "pg_clipfrac",
            "step_time",
            "rollout_time",
            "kl_ref",
        ],
        "verl 0.2 names: timing/step, timing/gen, critic/kl (metrics.md: kl_ref up to v0.3)",
    )


# ------------------------------------------------------------------ verl file logger
def j01_verl_file_logger() -> None:
    n = 80
    lines = [json.dumps({"step": 0, "data": val_metrics_new(0, n)})]
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n)
        if s % 20 == 0:
            m.update(val_metrics_new(s, n))
        if s == 70:
            m["actor/grad_norm"] = float("nan")
        lines.append(json.dumps({"step": s, "data": m}))
    write("j01_verl_file_logger.jsonl", "\n".join(lines) + "\n")
    expect(
        "j01_verl_file_logger.jsonl",
        n,
        1,
        n,
        [*VERL_NEW_CANON, "val_reward"],
        "{'step','data'}; step 0 val-only; a bare NaN token",
    )


def j02_verl_file_logger_partial() -> None:
    n = 45
    lines = []
    for s in range(1, n + 1):
        lines.append(
            json.dumps({"step": s, "elapsed_seconds": 73.1 * s, "data": verl_train_metrics(s, 200)})
        )
    partial = json.dumps(
        {"step": n + 1, "elapsed_seconds": 1.0, "data": verl_train_metrics(n + 1, 200)}
    )
    write(
        "j02_verl_file_logger_partial.jsonl", "\n".join(lines) + "\n" + partial[: len(partial) // 3]
    )
    expect(
        "j02_verl_file_logger_partial.jsonl",
        n,
        1,
        n,
        VERL_NEW_CANON,
        "elapsed_seconds field; trailing partial line (killed mid-write)",
    )


def j03_verl_jsonl_concat_resume() -> None:
    n = 100
    lines = []
    for s in range(1, 61):
        lines.append(json.dumps({"step": s, "data": verl_train_metrics(s, n)}))
    for s in range(51, n + 1):
        lines.append(json.dumps({"step": s, "data": verl_train_metrics(s, n)}))
    write("j03_verl_jsonl_concat_resume.jsonl", "\n".join(lines) + "\n")
    expect(
        "j03_verl_jsonl_concat_resume.jsonl",
        n,
        1,
        n,
        VERL_NEW_CANON,
        "two file-logger files concatenated (resume from step 50): steps restart at 51",
    )


def j04_flat_jsonl_crlf_bom() -> None:
    n = 33
    lines = []
    for s in range(1, n + 1):
        d = {"step": s}
        d.update(verl_train_metrics(s, n))
        lines.append(json.dumps(d))
    write("j04_flat_jsonl_crlf_bom.jsonl", "\ufeff" + "\n".join(lines) + "\n", newline="\r\n")
    expect(
        "j04_flat_jsonl_crlf_bom.jsonl",
        n,
        1,
        n,
        VERL_NEW_CANON,
        "flat {step, key: value} JSONL with BOM and CRLF",
    )


# ------------------------------------------------------------------ TRL
def trl_train_entry(step: int, n: int, *, beta: bool = True, epoch_per_step: float = 0.002) -> dict:
    rew = curve(step, n, 0.2, 1.4, 0.05)
    e = {
        "clip_ratio/high_max": 0.0,
        "clip_ratio/high_mean": 0.0,
        "clip_ratio/low_mean": 0.0,
        "clip_ratio/low_min": 0.0,
        "clip_ratio/region_mean": abs(R.gauss(0.001, 0.0005)),
        "completions/clipped_ratio": max(0.0, 0.1 + R.gauss(0, 0.03)),
        "completions/max_length": 512.0,
        "completions/max_terminated_length": 498.0,
        "completions/mean_length": 210 + R.gauss(0, 10),
        "completions/mean_terminated_length": 190.2,
        "completions/min_length": 40.0,
        "completions/min_terminated_length": 40.0,
        "entropy": max(0.05, 0.7 - 0.001 * step),
        "epoch": round(step * epoch_per_step, 4),
        "frac_reward_zero_std": max(0.0, 0.2 + R.gauss(0, 0.05)),
        "grad_norm": abs(R.gauss(0.4, 0.1)),
        "learning_rate": 1e-06 * (1 - step / (n + 1)),
        "loss": R.gauss(0.0, 0.01),
        "num_tokens": 150000.0 * step,
        "reward": rew,
        "reward_std": 0.35,
        "rewards/accuracy_reward/mean": rew * 0.7,
        "rewards/accuracy_reward/std": 0.4,
        "rewards/format_reward/mean": rew * 0.3,
        "rewards/format_reward/std": 0.2,
        "step": step,
    }
    if beta:
        e["kl"] = abs(0.0005 * step + R.gauss(0, 0.001))
    return e


def trl_eval_entry(step: int, n: int, epoch: float) -> dict:
    return {
        "epoch": epoch,
        "eval_completions/mean_length": 205.0,
        "eval_loss": 0.0012,
        "eval_reward": curve(step, n, 0.3, 1.2, 0.02),
        "eval_reward_std": 0.3,
        "eval_rewards/accuracy_reward/mean": 0.5,
        "eval_runtime": 81.2,
        "eval_samples_per_second": 3.1,
        "eval_steps_per_second": 0.2,
        "step": step,
    }


TRL_CANON = [
    "reward_mean",
    "reward_std",
    "kl_ref",
    "grad_norm",
    "entropy",
    "truncation_rate",
    "response_length",
    "pg_clipfrac",
    "lr",
    "zero_std_frac",
]


def trainer_state(
    log_history: list,
    global_step: int,
    max_steps: int,
    logging_steps: int,
    eval_steps: int,
    save_steps: int,
) -> str:
    st = {
        "best_global_step": None,
        "best_metric": None,
        "best_model_checkpoint": None,
        "epoch": log_history[-1].get("epoch", 0.0) if log_history else 0.0,
        "eval_steps": eval_steps,
        "global_step": global_step,
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
        "log_history": log_history,
        "logging_steps": logging_steps,
        "max_steps": max_steps,
        "num_input_tokens_seen": 0,
        "num_train_epochs": 1,
        "save_steps": save_steps,
        "stateful_callbacks": {
            "TrainerControl": {
                "args": {
                    "should_epoch_stop": False,
                    "should_evaluate": False,
                    "should_log": False,
                    "should_save": True,
                    "should_training_stop": False,
                },
                "attributes": {},
            }
        },
        "total_flos": 0.0,
        "train_batch_size": 8,
        "trial_name": None,
        "trial_params": None,
    }
    # transformers: json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True) + "\n"
    return json.dumps(st, indent=2, sort_keys=True) + "\n"


def t01_trainer_state_grpo() -> None:
    n, ls, es = 300, 10, 50
    hist = []
    for s in range(ls, n + 1, ls):
        hist.append(trl_train_entry(s, n))
        if s % es == 0:
            hist.append(trl_eval_entry(s, n, hist[-1]["epoch"]))
    write("t01_run/checkpoint-300/trainer_state.json", trainer_state(hist, 300, 1000, ls, es, 100))
    expect(
        "t01_run/checkpoint-300/trainer_state.json",
        30,
        10,
        300,
        [*TRL_CANON, "val_reward"],
        "GRPO trainer_state at a checkpoint, logging_steps=10, eval every 50",
    )


def t02_trainer_state_eval_on_start_nan() -> None:
    n = 120
    hist = [trl_eval_entry(0, n, 0.0)]
    for s in range(1, n + 1):
        e = trl_train_entry(s, n)
        if s in (77, 78):
            e["grad_norm"] = float("nan")
        if s == 79:
            e["kl"] = float("inf")
        hist.append(e)
        if s % 40 == 0:
            hist.append(trl_eval_entry(s, n, e["epoch"]))
    hist.append(
        {
            "epoch": hist[-1]["epoch"],
            "step": n,
            "total_flos": 0.0,
            "train_loss": 0.0021,
            "train_runtime": 9876.5,
            "train_samples_per_second": 0.8,
            "train_steps_per_second": 0.012,
        }
    )
    write("t02_trainer_state_eval_on_start.json", trainer_state(hist, n, n, 1, 40, 500))
    expect(
        "t02_trainer_state_eval_on_start.json",
        n,
        1,
        n,
        [*TRL_CANON, "val_reward"],
        "eval_on_start (eval at step 0); NaN/Infinity tokens; final train_runtime entry",
    )


def t03_trl_console() -> None:
    """transformers ProgressCallback: tqdm bar with \\r, str(dict) via tqdm.write, an eval bar."""
    n, ls, es = 200, 10, 50
    buf = ["  0%|          | 0/200 [00:00<?, ?it/s]"]
    for s in range(1, n + 1):
        pct = int(100 * s / n)
        buf.append(
            f"\r{pct:3d}%|{'#' * (pct // 10):<10}| {s}/{n} [{s // 60:02d}:{s % 60:02d}<10:00, 3.00s/it]"
        )
        if s % ls == 0:
            e = trl_train_entry(s, n)
            e.pop("step")
            e["epoch"] = round(e["epoch"], 2)
            if s == 150:
                e["grad_norm"] = float("nan")
            buf.append("\r" + " " * 60 + "\r" + str(e) + "\n")
        if s % es == 0:
            buf.append("\n")
            for j in range(0, 26, 5):
                buf.append(
                    f"\r{int(100 * j / 25):3d}%|{'#' * (j * 10 // 25):<10}| {j}/25 [00:{j:02d}<00:10,  2.40it/s]"
                )
            ev = trl_eval_entry(s, n, round(s * 0.002, 2))
            ev.pop("step")
            buf.append("\r" + " " * 60 + "\r" + str(ev) + "\n")
    buf.append(
        "\r"
        + str(
            {
                "train_runtime": 2011.3,
                "train_samples_per_second": 0.796,
                "train_steps_per_second": 0.099,
                "train_loss": 0.0023,
                "epoch": 0.4,
            }
        )
        + "\n"
    )
    buf.append(f"\r100%|##########| {n}/{n} [33:31<00:00, 10.06s/it]\n")
    write("t03_trl_console.log", "".join(buf))
    expect(
        "t03_trl_console.log",
        20,
        10,
        200,
        [*TRL_CANON, "val_reward"],
        "TRL console, 20 train dicts at 10..200, eval bars 0..25/25 between; nan in a dict",
    )


def t04_trl_console_resume() -> None:
    """Run 1 logs 10..120 then dies; resumed from checkpoint-100, logs 110..300."""
    n, ls = 300, 10
    buf = []
    for s in range(1, 121):
        buf.append(
            f"\r{int(100 * s / n):3d}%|#         | {s}/{n} [00:{s % 60:02d}<10:00, 3.00s/it]"
        )
        if s % ls == 0:
            e = trl_train_entry(s, n)
            e.pop("step")
            buf.append("\r" + str(e) + "\n")
    buf.append(
        '\nTraceback (most recent call last):\n  File "train_grpo.py", line 88, in <module>\n'
        "    trainer.train()\ntorch.OutOfMemoryError: CUDA out of memory.\n"
    )
    buf.append("Loading checkpoint shards: 100%|##########| 4/4 [00:03<00:00,  1.20it/s]\n")
    buf.append(
        "***** Running training *****\n  Num examples = 7,473\n  Total optimization steps = 300\n"
        "  Continuing training from checkpoint, will skip to saved global_step\n"
        "  Continuing training from epoch 0\n  Continuing training from global step 100\n"
    )
    for s in range(101, n + 1):
        buf.append(
            f"\r{int(100 * s / n):3d}%|###       | {s}/{n} [00:{s % 60:02d}<10:00, 3.00s/it]"
        )
        if s % ls == 0:
            e = trl_train_entry(s, n)
            e.pop("step")
            buf.append("\r" + str(e) + "\n")
    write("t04_trl_console_resume.log", "".join(buf))
    expect(
        "t04_trl_console_resume.log",
        30,
        10,
        300,
        TRL_CANON,
        "TRL console with a resume from step 100 (110, 120 logged twice)",
    )


def t05_trl_checkpoints_dir() -> None:
    """An output dir with checkpoint-500 and checkpoint-1000 (string sort picks 500)."""
    n = 1000
    hist = []
    for s in range(5, n + 1, 5):
        hist.append(trl_train_entry(s, n, beta=False))
        if s in (500, 1000):
            for _c in (500, 1000):
                pass
        if s == 500:
            write(
                "t05_out/checkpoint-500/trainer_state.json",
                trainer_state(list(hist), 500, 1000, 5, 100, 500),
            )
    write(
        "t05_out/checkpoint-1000/trainer_state.json",
        trainer_state(list(hist), 1000, 1000, 5, 100, 500),
    )
    (OUT / "t05_out/runs").mkdir(parents=True, exist_ok=True)
    write(
        "t05_out/README.md",
        "---\nlibrary_name: transformers\ntags:\n- trl\n- grpo\n---\n# Model card\n",
    )
    write("t05_out/training_args.bin", b"\x80\x04\x95\x00")
    metrics = [m for m in TRL_CANON if m != "kl_ref"]
    expect(
        "t05_out",
        200,
        5,
        1000,
        metrics,
        "output dir: latest is checkpoint-1000 (numeric), not checkpoint-500 (string order); beta=0: no kl",
    )


def _trl_bar_run(steps, n, ls, clear: str) -> list[str]:
    buf = []
    for s in steps:
        buf.append(
            f"\r{int(100 * s / n):3d}%|#         | {s}/{n} [00:{s % 60:02d}<10:00, 3.00s/it]"
        )
        if s % ls == 0:
            e = trl_train_entry(s, n)
            e.pop("step")
            buf.append(clear + str(e) + "\n")
    return buf


def t04b_trl_console_resume_tqdm_write() -> None:
    """As t04, but dicts written the way tqdm.write does (clear bar with spaces first)."""
    n, ls = 300, 10
    clear = "\r" + " " * 60 + "\r"
    buf = _trl_bar_run(range(1, 121), n, ls, clear)
    buf.append(
        '\nTraceback (most recent call last):\n  File "train_grpo.py", line 88, in <module>\n'
        "    trainer.train()\ntorch.OutOfMemoryError: CUDA out of memory.\n"
    )
    buf.append(
        "***** Running training *****\n  Num examples = 7,473\n  Total optimization steps = 300\n"
        "  Continuing training from checkpoint, will skip to saved global_step\n"
        "  Continuing training from epoch 0\n  Continuing training from global step 100\n"
    )
    buf += _trl_bar_run(range(101, n + 1), n, ls, clear)
    write("t04b_trl_console_resume_tqdm_write.log", "".join(buf))
    expect(
        "t04b_trl_console_resume_tqdm_write.log",
        30,
        10,
        300,
        TRL_CANON,
        "TRL console resumed from step 100; tqdm.write clearing",
    )


def t04c_trl_console_plain_cr() -> None:
    """No resume; the dict follows a bare \\r after the bar (no clearing spaces)."""
    n, ls = 100, 10
    buf = _trl_bar_run(range(1, n + 1), n, ls, "\r")
    write("t04c_trl_console_plain_cr.log", "".join(buf))
    expect("t04c_trl_console_plain_cr.log", 10, 10, 100, TRL_CANON, "bar then \\r{dict}")


# ------------------------------------------------------------------ W&B exports
def csv_cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    s = str(v)
    return '"' + s.replace('"', '""') + '"' if ("," in s or '"' in s) else s


def write_csv(
    name: str, header: list[str], rows: list[list], bom: bool = False, newline="\n"
) -> None:
    text = ",".join(csv_cell(h) for h in header) + "\n"
    for r in rows:
        text += ",".join(csv_cell(v) for v in r) + "\n"
    write(name, ("\ufeff" if bom else "") + text, newline=newline)


def w01_wandb_history_verl() -> None:
    """`run.history().to_csv(path)`: pandas index column first, keys sorted, empty cells."""
    n = 100
    rows_d = [dict(val_metrics_new(0, n), _step=0)]
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n)
        if s % 25 == 0:
            m.update(val_metrics_new(s, n))
        m["_step"] = s
        rows_d.append(m)
    keys = sorted({k for d in rows_d for k in d} | {"_runtime", "_timestamp"})
    rows = []
    for i, d in enumerate(rows_d):
        d["_runtime"] = 73.2 * i + 11.5
        d["_timestamp"] = 1718186400.123 + 73.2 * i
        rows.append([i] + [d.get(k) if d.get(k) is not None else None for k in keys])
    # pandas writes NaN as empty by default
    text = "," + ",".join(keys) + "\n"
    for r in rows:
        text += (
            ",".join("" if v is None else (repr(v) if isinstance(v, float) else str(v)) for v in r)
            + "\n"
        )
    write("w01_wandb_history_verl.csv", text)
    expect(
        "w01_wandb_history_verl.csv",
        n,
        1,
        n,
        [*VERL_NEW_CANON, "val_reward"],
        "pandas to_csv of run.history(): unnamed index column, _step 0 has only val columns",
    )


def w02_wandb_chart_export() -> None:
    n = 150
    run = "grpo-qwen2.5-7b-lr1e-6-bs256"
    header = [
        "Step",
        f"{run} - critic/rewards/mean",
        f"{run} - critic/rewards/mean__MIN",
        f"{run} - critic/rewards/mean__MAX",
    ]
    rows = []
    for s in range(1, n + 1):
        v = curve(s, n, 0.1, 0.7)
        rows.append([s, v, v, v])
    write_csv("w02_wandb_chart_export.csv", header, rows)
    expect(
        "w02_wandb_chart_export.csv",
        n,
        1,
        n,
        ["reward_mean"],
        "W&B panel export: '<run> - metric' with __MIN/__MAX",
    )


def w03_wandb_trl_history() -> None:
    """TRL via W&B: train/* and eval/* keys; _step counts log calls, train/global_step is the step."""
    n, ls, es = 300, 5, 50
    rows_d = []
    wstep = 0
    for s in range(ls, n + 1, ls):
        e = trl_train_entry(s, n)
        d = {f"train/{k}": v for k, v in e.items() if k != "step"}
        d["train/global_step"] = s
        d["_step"] = wstep
        wstep += 1
        rows_d.append(d)
        if s % es == 0:
            ev = trl_eval_entry(s, n, e["epoch"])
            d = {("eval/" + k[5:]): v for k, v in ev.items() if k.startswith("eval_")}
            d["train/epoch"] = e["epoch"]
            d["train/global_step"] = s
            d["_step"] = wstep
            wstep += 1
            rows_d.append(d)
    keys = ["_step", "_runtime", "_timestamp", *sorted({k for d in rows_d for k in d} - {"_step"})]
    rows = []
    for i, d in enumerate(rows_d):
        d["_runtime"] = 40.0 * i
        d["_timestamp"] = 1.7181864e9 + 40 * i
        rows.append([d.get(k) for k in keys])
    write_csv("w03_wandb_trl_history.csv", keys, rows)
    expect(
        "w03_wandb_trl_history.csv",
        60,
        5,
        300,
        [*TRL_CANON, "val_reward"],
        "_step (log-call counter, 0..65) differs from train/global_step (5..300)",
    )


def w04_wandb_nan_inf_bom_crlf() -> None:
    n = 40
    keys = [
        "_step",
        "actor/entropy",
        "actor/grad_norm",
        "actor/kl_loss",
        "actor/lr",
        "actor/pg_clipfrac",
        "actor/ppo_kl",
        "critic/rewards/mean",
        "response_length/clip_ratio",
        "response_length/mean",
        "timing_s/gen",
        "timing_s/step",
    ]
    rows = []
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n)
        if s > 30:
            m["actor/grad_norm"] = float("nan")
            m["actor/kl_loss"] = float("inf")
        if s == 5:
            m["actor/entropy"] = None  # an empty cell
        rows.append([s] + [m.get(k) for k in keys[1:]])
    write_csv("w04_wandb_nan_inf_bom_crlf.csv", keys, rows, bom=True, newline="\r\n")
    expect(
        "w04_wandb_nan_inf_bom_crlf.csv",
        n,
        1,
        n,
        [
            "entropy",
            "grad_norm",
            "kl_ref",
            "lr",
            "pg_clipfrac",
            "ppo_kl",
            "reward_mean",
            "truncation_rate",
            "response_length",
            "rollout_time",
            "step_time",
        ],
        "BOM, CRLF, NaN and inf strings, one empty cell",
    )


def w05_wandb_openrlhf_history() -> None:
    """OpenRLHF logs train/<key> plus train/global_step through W&B."""
    n = 80
    keys = [
        "_step",
        "_runtime",
        "train/actor_lr",
        "train/global_step",
        "train/kl",
        "train/policy_loss",
        "train/ppo_clip_ratio",
        "train/entropy_loss",
        "train/actor_grad_norm",
        "train/response_length",
        "train/reward",
        "train/return",
        "train/total_length",
        "train/truncated_rate",
    ]
    rows = []
    for s in range(1, n + 1):
        rows.append(
            [
                s - 1,
                60.0 * s,
                5e-07,
                s,
                0.001 * s,
                R.gauss(0, 0.02),
                0.002,
                0.9 - 0.003 * s,
                abs(R.gauss(0.3, 0.05)),
                300.0 + s,
                curve(s, n, -0.5, 0.6),
                0.1,
                450.0,
                0.03,
            ]
        )
    write_csv("w05_wandb_openrlhf_history.csv", keys, rows)
    expect(
        "w05_wandb_openrlhf_history.csv",
        n,
        1,
        n,
        ["reward_mean", "kl_ref", "lr", "response_length"],
        "OpenRLHF W&B history; _step starts at 0, train/global_step at 1",
    )


# ------------------------------------------------------------------ other frameworks
def r01_roll_metrics_tag() -> None:
    n = 40
    out = []
    for s in range(0, n):
        m = {
            "critic/score/mean": curve(s, n, 0.1, 0.6),
            "critic/score/max": 1.0,
            "critic/score/min": 0.0,
            "critic/rewards/mean": curve(s, n, 0.1, 0.6),
            "critic/advantages/mean": 0.0,
            "actor/kl_loss": 0.0005 * s,
            "actor/ppo_ratio_clipfrac": 0.002,
            "actor/pg_loss": 0.01,
            "critic/entropy/mean": 0.5,
            "actor_train/grad_norm": 0.3,
            "token/response_length/mean": 500.0 + s,
            "token/total_response_length/clip": 3.0,
            "system/batch_size": 128,
            "time/step_train": 30.0,
            "time/step_generate": 45.0,
        }
        if s % 10 == 0:
            m["val_correct/all/mean"] = curve(s, n, 0.2, 0.5)
        line = (
            f"[2025-06-12 10:{s:02d}:00] [rlvr_pipeline.py (412)] [INFO] [DRIVER 0 / 1][PID 5521] "
            f"metrics_tag: {json.dumps({'step': s, 'metrics': m})}"
        )
        out.append(wrap_ray(line, "RLVRPipeline pid=5521", ansi=False))
    write("r01_roll_metrics_tag.log", "\n".join(out) + "\n")
    expect(
        "r01_roll_metrics_tag.log",
        n,
        0,
        n - 1,
        [
            "reward_mean",
            "kl_ref",
            "pg_clipfrac",
            "entropy",
            "grad_norm",
            "response_length",
            "val_reward",
        ],
        "ROLL StdoutTracker, steps start at 0 (ROLL's global_step starts at 0)",
    )


def s01_slime_console() -> None:
    n = 30
    out = []
    for s in range(n):
        rollout = {
            "rollout/raw_reward": curve(s, n, 0.1, 0.6),
            "rollout/response_len/mean": 800.0 + s,
            "rollout/truncated_ratio": 0.05,
            "rollout/zero_std/count_0": 3,
        }
        train = {
            "train/kl_loss": 0.001 * s,
            "train/pg_clipfrac": 0.003,
            "train/entropy_loss": 0.4,
            "train/grad_norm": 0.2,
            "train/pg_loss": 0.0,
            "train/lr-pg": 1e-06,
            "train/step": s,
        }
        out.append(f"[2025-06-12 10:{s:02d}:01] rollout.py:212 - rollout {s}: {rollout}")
        out.append(f"[2025-06-12 10:{s:02d}:30] model.py:540 - step {s}: {train}")
        out.append(
            f"[2025-06-12 10:{s:02d}:31] train.py:91 - perf {s}: {{'perf/step_time': 88.1, 'perf/train_time': 30.2}}"
        )
    write("s01_slime_console.log", "\n".join(out) + "\n")
    expect(
        "s01_slime_console.log",
        n,
        0,
        n - 1,
        [
            "reward_mean",
            "kl_ref",
            "pg_clipfrac",
            "entropy",
            "grad_norm",
            "response_length",
            "truncation_rate",
        ],
        "slime: 'rollout N: {...}', 'step N: {...}', 'perf N: {...}' python-dict lines",
    )


def m01_mlflow_file_store() -> None:
    n = 50
    run = OUT / "m01_mlruns/428113961257063845/6f1c2b7e0c8e4d9a9b1f0a2e3c4d5e6f"
    (run / "params").mkdir(parents=True, exist_ok=True)
    (run / "tags").mkdir(parents=True, exist_ok=True)
    (run / "artifacts").mkdir(parents=True, exist_ok=True)
    (run.parent / "meta.yaml").write_text(
        "artifact_location: file:///work/mlruns/428113961257063845\ncreation_time: 1718186400000\n"
        "experiment_id: '428113961257063845'\nlast_update_time: 1718186400000\nlifecycle_stage: active\nname: verl_grpo\n"
    )
    (run / "meta.yaml").write_text(
        "artifact_uri: file:///work/mlruns/428113961257063845/6f1c2b7e0c8e4d9a9b1f0a2e3c4d5e6f/artifacts\n"
        "end_time: null\nentry_point_name: ''\nexperiment_id: '428113961257063845'\nlifecycle_stage: active\n"
        "run_id: 6f1c2b7e0c8e4d9a9b1f0a2e3c4d5e6f\nrun_name: qwen_gsm8k\nsource_name: ''\nsource_type: 4\n"
        "source_version: ''\nstart_time: 1718186400000\nstatus: 1\ntags: []\nuser_id: root\n"
    )
    (run / "params" / "actor_rollout_ref/actor/optim/lr").parent.mkdir(parents=True, exist_ok=True)
    (run / "params" / "actor_rollout_ref/actor/optim/lr").write_text("1e-06")
    (run / "tags" / "mlflow.runName").write_text("qwen_gsm8k")
    series: dict[str, list[str]] = {}
    for s in range(0, n + 1):
        m = val_metrics_new(s, n) if s % 10 == 0 else {}
        if s > 0:
            m.update(verl_train_metrics(s, n))
        for k, v in m.items():
            k = k.replace("@", "_at_")
            series.setdefault(k, []).append(f"{1718186400000 + 60000 * s} {float(v)!r} {s}")
    for k, lines in series.items():
        p = run / "metrics" / k
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("\n".join(lines) + "\n")
    expect(
        "m01_mlruns/428113961257063845/6f1c2b7e0c8e4d9a9b1f0a2e3c4d5e6f",
        n,
        1,
        n,
        [*VERL_NEW_CANON, "val_reward"],
        "MLflow file store run dir; '/' keys as nested dirs, '@' -> '_at_'",
    )
    expect("m01_mlruns", n, 1, n, [*VERL_NEW_CANON, "val_reward"], "MLflow store root with one run")


def masked_crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(x: int) -> bytes:
    out = bytearray()
    while True:
        b = x & 0x7F
        x >>= 7
        if x:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num: int, wt: int, payload: bytes) -> bytes:
    return _varint((num << 3) | wt) + payload


def tb_event(
    wall: float,
    step: int,
    tag: str | None = None,
    value: float | None = None,
    file_version: str | None = None,
) -> bytes:
    ev = _field(1, 1, struct.pack("<d", wall))
    if step:
        ev += _field(2, 0, _varint(step))
    if file_version:
        fv = file_version.encode()
        ev += _field(3, 2, _varint(len(fv)) + fv)
    if tag is not None:
        t = tag.encode()
        val = _field(1, 2, _varint(len(t)) + t) + _field(2, 5, struct.pack("<f", value))
        summ = _field(1, 2, _varint(len(val)) + val)
        ev += _field(5, 2, _varint(len(summ)) + summ)
    return ev


def tf_record(data: bytes) -> bytes:
    ln = struct.pack("<Q", len(data))
    return ln + struct.pack("<I", masked_crc32c(ln)) + data + struct.pack("<I", masked_crc32c(data))


def b01_tensorboard_events() -> None:
    n = 40
    d = OUT / "b01_tensorboard_log/verl_grpo/qwen_gsm8k"
    d.mkdir(parents=True, exist_ok=True)
    buf = tf_record(tb_event(1718186400.0, 0, file_version="brain.Event:2"))
    for s in range(1, n + 1):
        for k, v in verl_train_metrics(s, n).items():
            buf += tf_record(tb_event(1718186400.0 + 60 * s, s, k, float(v)))
    (d / "events.out.tfevents.1718186400.node-0.2345.0").write_bytes(buf)
    expect(
        "b01_tensorboard_log/verl_grpo/qwen_gsm8k",
        n,
        1,
        n,
        VERL_NEW_CANON,
        "hand-written TFRecord events (torch SummaryWriter layout); tensorboard not installed -> "
        "acceptable: exit 2 naming the [tensorboard] extra",
    )


def p01_parquet() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 64
    rows = []
    for s in range(1, n + 1):
        m = verl_train_metrics(s, n)
        if s % 16 == 0:
            m.update(val_metrics_new(s, n))
        m["_step"] = s
        rows.append(m)
    keys = sorted({k for r in rows for k in r})
    table = pa.table(
        {
            k: [None if r.get(k) is None else float(r[k]) if k != "_step" else r[k] for r in rows]
            for k in keys
        }
    )
    pq.write_table(table, OUT / "p01_wandb_history.parquet")
    expect(
        "p01_wandb_history.parquet",
        n,
        1,
        n,
        [*VERL_NEW_CANON, "val_reward"],
        "W&B-style history parquet with _step and nulls",
    )


# ------------------------------------------------------------------ unusable inputs
def errors() -> None:
    write("e01_empty.log", "")
    expect("e01_empty.log", None, None, None, [], "empty file", error=True)
    write("e02_binary.bin", bytes(R.randrange(256) for _ in range(4096)))
    expect("e02_binary.bin", None, None, None, [], "random bytes", error=True)
    n = 50
    hist = [trl_train_entry(s, n) for s in range(1, n + 1)]
    full = trainer_state(hist, n, n, 1, 10, 10)
    write("e03_truncated_trainer_state.json", full[: len(full) // 2])
    expect(
        "e03_truncated_trainer_state.json",
        None,
        None,
        None,
        [],
        "trainer_state.json cut in half (disk full while saving); exit 2 or a salvage, never a traceback",
        error=True,
    )
    expect("e04_does_not_exist.log", None, None, None, [], "missing path", error=True)
    (OUT / "e05_empty_dir").mkdir(exist_ok=True)
    expect("e05_empty_dir", None, None, None, [], "empty directory", error=True)
    write(
        "e06_crashed_before_step1.log",
        "\n".join(wrap_ray(x) for x in STARTUP)
        + '\nTraceback (most recent call last):\n  File "main_ppo.py", line 64, in main\n'
        "ValueError: max_prompt_length too small\n",
    )
    expect(
        "e06_crashed_before_step1.log",
        0,
        None,
        None,
        [],
        "verl crashed before step 1: no metrics, a run of no steps whose ending is reported",
    )
    write(
        "e07_not_utf8.log", "step:1 - critic/score/mean:0.5 - actor/entropy:0.4\n".encode("utf-16")
    )
    expect(
        "e07_not_utf8.log",
        1,
        1,
        1,
        ["reward_mean", "entropy"],
        "UTF-16 (PowerShell `>` redirect): reading it is fine",
    )


def main() -> None:
    for fn in [
        v01_verl_v03_3dec,
        v02_verl_ray_ansi_np,
        v03_verl_repeated,
        v04_verl_wrapped,
        v05_verl_crlf,
        v06_verl_resume,
        v07_verl_separate_val_lines,
        v08_verl_nan_inf,
        v09_verl_score_only_acc,
        v10_verl_scinote,
        v11_verl_bom,
        v12_verl_multi_val_ds,
        v13_verl_k8s_timestamps,
        v14_verl_tee_progress,
        v15_verl_main_task_v02,
        j01_verl_file_logger,
        j02_verl_file_logger_partial,
        j03_verl_jsonl_concat_resume,
        j04_flat_jsonl_crlf_bom,
        t01_trainer_state_grpo,
        t02_trainer_state_eval_on_start_nan,
        t03_trl_console,
        t04_trl_console_resume,
        t04b_trl_console_resume_tqdm_write,
        t04c_trl_console_plain_cr,
        t05_trl_checkpoints_dir,
        w01_wandb_history_verl,
        w02_wandb_chart_export,
        w03_wandb_trl_history,
        w04_wandb_nan_inf_bom_crlf,
        w05_wandb_openrlhf_history,
        r01_roll_metrics_tag,
        s01_slime_console,
        m01_mlflow_file_store,
        b01_tensorboard_events,
        p01_parquet,
        errors,
    ]:
        fn()
    (OUT.parent / "expected.json").write_text(json.dumps(MANIFEST, indent=1))
    print(len(MANIFEST), "cases")


if __name__ == "__main__":
    os.chdir(OUT.parent)
    main()
