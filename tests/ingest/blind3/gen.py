"""Third blind reader round (issue 3): the newest trainer outputs (2025-2026), and the messiest.

Usage: python gen.py OUT_DIR

Writes OUT_DIR/<case>/<input> (a file or a run directory) for every case and OUT_DIR/expected.json
with, per case: the input's relative path, the exact number of training steps, the first and last
step, canonical metrics that must be present (and some that must be absent: a reader never
invents them), spot values [step, canonical, value] ("nan"/"inf" for non-finite ones), or
`error: true` when the input is unusable (the CLI must exit 2 with a one-line error).

Written without reading advisor/ingest/. Where each format fact comes from (all public):
- verl console: verl/utils/logger/aggregate_logger.py (LocalLogger: "step:N - k:v - ..."), and a
  real 2025 GRPO run report (a verl fork's benchmark markdown) whose tail is reproduced in shape:
  "(TaskRunner pid=132393) wandb: Run history:" sparklines, "wandb: Run summary:", pprint'ed
  "Final validation metrics", an unprefixed "Training Progress: 100%|...|" line, and a summary line
  with a checkpoint path and "[repeated 7x across cluster]" glued on. Its key set (timing_s/
  generate_sequences, timing_s/reshard, timing_s/start_profile, perf/total_num_tokens,
  training/global_step, training/epoch, timing_per_token_ms/*) is used here.
- numpy 2 reprs: a user's verl log parser notes that actor/* values print as np.float64(...)
  (reduce_metrics' np.mean) while critic/* and training/* are bare floats.
- tqdm bar glued to the step line ("...81.49s/it]step:2 - ..."): verl's LocalLogger shares its
  stream with tqdm, which ends a bar with "]" and no newline (several public verl log parsers).
- DAPO: volcengine/verl recipe/dapo/dapo_ray_trainer.py: prints "num_prompt_in_batch=.. <
  prompt_bsz=.." and "num_gen_batches=N. Keep generating..." between steps, logs
  train/num_gen_batches, raises "num_gen_batches=.. >= max_num_gen_batches=.." when data are too
  hard; validation names val-core/<ds>/acc/... when the reward returns `acc`, else reward; the
  val-before-train metrics are logged at the step loaded from the checkpoint, training resumes at
  that step + 1.
- verl MLflow: verl/utils/tracking.py defaults MLFLOW_TRACKING_URI to sqlite:////tmp/mlruns.db
  and maps '@' to '_at_'; MLflow's SQL store keeps a NaN as value 0 with is_nan=1 and +-inf as
  +-1.7976931348623157e308 (mlflow/store/tracking/sqlalchemy_store.py).
- trackio: gradio-app/trackio sqlite_storage.py (one <project>.db, table metrics(id, timestamp,
  run_name, step, metrics JSON), configs table); transformers' TrackioCallback logs
  rewrite_logs(logs) + "train/global_step" WITHOUT a step, so trackio's step counts log calls,
  and drops train_runtime/train_loss/total_flos from the final log.
- TRL GRPOTrainer: print_prompt_completions_sample (rich Panel titled "Step N" with a table of
  prompt, completion, one column per reward, Advantage; 2 decimals); transformers
  ProgressCallback writes str(logs) with epoch rounded to 2 through tqdm.write.
- torchrun --tee: every line is stamped "[default<local_rank>]:" (cannot be turned off);
  DeepSpeed prints "[date] [INFO] [logging.py:NNN:log_dist] [Rank 0] step=N, skipped=0,
  lr=[...], mom=[...]"; PyTorch C++ warnings print as "[rank1]:[W...]".
- W&B (wandb-core, 2025): a run folder holds files/output.log (the console), wandb-summary.json
  (last values only, `_step`), config.yaml, wandb-metadata.json, and the history only inside the
  binary run-<id>.wandb.
"""

from __future__ import annotations

import json
import math
import random
import sqlite3
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

SEED = 20250917
Row = dict[str, tuple[float | int, str]]  # key -> (value, how it prints: np | py | int)
MANIFEST: dict[str, dict[str, Any]] = {}

VERL_CANON = [
    "reward_mean", "entropy", "ppo_kl", "kl_ref", "grad_norm", "pg_clipfrac", "lr",
    "truncation_rate", "prompt_truncation_rate", "response_length", "step_time", "rollout_time",
]
TRL_CANON = [
    "reward_mean", "reward_std", "entropy", "grad_norm", "lr", "truncation_rate",
    "response_length", "pg_clipfrac", "zero_std_frac",
]


# ------------------------------------------------------------------------------------ helpers
def expect(name: str, inp: str, steps: list[int] | None, metrics: list[str], note: str,
           *, absent: tuple[str, ...] = (), spots: list[list[Any]] | None = None,
           error: bool = False) -> None:
    """Record what a correct reader must make of one case."""
    MANIFEST[name] = {
        "input": f"{name}/{inp}",
        "steps": None if steps is None else len(steps),
        "first": None if not steps else steps[0],
        "last": None if not steps else steps[-1],
        "metrics": sorted(metrics),
        "absent": sorted(absent),
        "spots": spots or [],
        "error": error,
        "note": note,
    }


def curve(t: float, start: float, end: float, rng: random.Random, noise: float) -> float:
    """A saturating learning curve with noise."""
    return start + (end - start) * (1 - math.exp(-3 * t)) + rng.gauss(0, noise)


def num(v: float | int, kind: str) -> str:
    """How one value prints in a verl step line."""
    if kind == "int":
        return str(int(v))
    return f"np.float64({float(v)!r})" if kind == "np" else repr(float(v))


def spot_value(v: float) -> float | str:
    if math.isnan(v):
        return "nan"
    return ("inf" if v > 0 else "-inf") if math.isinf(v) else v


def spots(rows: dict[int, Row], mapping: dict[str, str], rng: random.Random,
          steps: list[int], k: int = 3) -> list[list[Any]]:
    """Spot checks: `k` random steps, every canonical of `mapping` (canonical -> raw key)."""
    out: list[list[Any]] = []
    for s in sorted(rng.sample(steps, min(k, len(steps)))):
        for canon, raw in mapping.items():
            if raw in rows[s]:
                out.append([s, canon, spot_value(float(rows[s][raw][0]))])
    return out


def write(path: Path, text: str | bytes, eol: str = "\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.replace("\n", eol).encode()
    path.write_bytes(text)


# --------------------------------------------------------------------------- verl metrics
def verl_row(rng: random.Random, step: int, total: int, *, kl_loss: bool = True,
             actor: bool = True, critic: bool = False, overlong: bool = False) -> Row:
    """One verl step's metrics in the order ray_trainer.fit fills them (2025 key set)."""
    t = step / total
    score = min(1.0, max(0.0, curve(t, 0.12, 0.74, rng, 0.03)))
    resp = 600 - 320 * t + rng.gauss(0, 15)
    r: Row = {}
    for k in ("max", "min", "minmax_diff", "balanced_max", "balanced_min", "mean"):
        r[f"global_seqlen/{k}"] = (rng.randint(180000, 215000), "int")
    r["actor/entropy"] = (max(0.04, 0.62 - 0.45 * t + rng.gauss(0, 0.01)), "py")
    if critic:
        r["critic/vf_loss"] = (abs(rng.gauss(0.08, 0.02)), "np")
        r["critic/vf_clipfrac"] = (abs(rng.gauss(0.01, 0.004)), "np")
        r["critic/vpred_mean"] = (rng.gauss(0.3, 0.05), "np")
        r["critic/grad_norm"] = (abs(rng.gauss(9.0, 2.0)), "np")  # not the actor's grad_norm
        r["critic/lr"] = (1e-05, "np")
    if actor:
        r["actor/pg_loss"] = (rng.gauss(0, 0.015), "np")
        r["actor/pg_clipfrac"] = (abs(rng.gauss(0.002, 0.0008)), "np")
        r["actor/ppo_kl"] = (abs(rng.gauss(0.0, 0.0004)), "np")
        r["actor/pg_clipfrac_lower"] = (0.0, "np")
        if kl_loss:
            r["actor/kl_loss"] = (0.0005 + 0.012 * t + abs(rng.gauss(0, 0.0008)), "np")
            r["actor/kl_coef"] = (0.001, "np")
        r["actor/grad_norm"] = (abs(rng.gauss(0.12, 0.03)), "np")
        r["perf/mfu/actor"] = (abs(rng.gauss(0.33, 0.02)), "np")
        r["perf/max_memory_allocated_gb"] = (77.04508, "np")
        r["perf/max_memory_reserved_gb"] = (109.53125, "np")
        r["perf/cpu_memory_used_gb"] = (abs(rng.gauss(87.7, 1.5)), "np")
        r["actor/lr"] = (1e-06, "np")
    r["training/global_step"] = (step, "int")
    r["training/epoch"] = (step // 8, "int")
    penalty = 0.05 * t if overlong else 0.0
    for k, v in (("mean", score), ("max", 1.0), ("min", 0.0)):
        r[f"critic/score/{k}"] = (v, "py")
    for k, v in (("mean", score - penalty), ("max", 1.0), ("min", -penalty if overlong else 0.0)):
        r[f"critic/rewards/{k}"] = (v, "py")
    for k, v in (("mean", rng.gauss(0, 0.002)), ("max", 1.78885), ("min", -1.78885)):
        r[f"critic/advantages/{k}"] = (v, "py")
        r[f"critic/returns/{k}"] = (v, "py")
    r["response_length/mean"] = (resp, "py")
    r["response_length/max"] = (1024.0, "py")
    r["response_length/min"] = (float(rng.randint(40, 90)), "py")
    r["response_length/clip_ratio"] = (max(0.0, 0.03 - 0.025 * t + rng.gauss(0, 0.003)), "py")
    r["prompt_length/mean"] = (92.0 + rng.gauss(0, 2), "py")
    r["prompt_length/max"] = (173.0, "py")
    r["prompt_length/min"] = (55.0, "py")
    r["prompt_length/clip_ratio"] = (0.0, "py")
    gen = abs(rng.gauss(33.0, 3.0))
    step_time = gen + abs(rng.gauss(80.0, 6.0))
    for k, v in (("generate_sequences", gen * 0.8), ("reshard", 1.2), ("gen", gen),
                 ("reward", 0.84), ("old_log_prob", 8.25), ("ref", 8.74), ("adv", 0.12),
                 ("update_actor", 29.1), ("step", step_time), ("start_profile", 0.00011),
                 ("stop_profile", 7e-05)):
        r[f"timing_s/{k}"] = (v + (rng.random() * 0.01 if k not in ("step", "gen") else 0), "py")
    for k in ("gen", "ref", "update_actor", "adv"):
        r[f"timing_per_token_ms/{k}"] = (abs(rng.gauss(0.01, 0.003)), "py")
    r["perf/total_num_tokens"] = (rng.randint(1500000, 1700000), "int")
    r["perf/time_per_step"] = (step_time, "py")
    r["perf/throughput"] = (abs(rng.gauss(1811.0, 60.0)), "py")
    return r


def verl_val(rng: random.Random, t: float, sources: list[str], n: int,
             variables: tuple[str, ...] = ("reward",), core: str = "reward") -> Row:
    """verl's process_validation_metrics names: val-core for the core variable's mean/maj/best at
    the largest n, val-aux for the rest (std, worst, smaller n, other variables)."""
    out: Row = {}
    ks = [2 ** i for i in range(1, int(math.log2(n)) + 1)] if n > 1 else []
    for src in sources:
        base = min(1.0, max(0.0, curve(t, 0.18, 0.7, rng, 0.02)))
        for var in variables:
            names = [f"mean@{n}"] + ([f"std@{n}"] if n > 1 else [])
            for k in ks:
                names += [f"best@{k}/mean", f"best@{k}/std", f"worst@{k}/mean", f"worst@{k}/std",
                          f"maj@{k}/mean", f"maj@{k}/std"]
            for name in names:
                is_core = var == core and name.split("/")[0] in (
                    f"mean@{n}", f"best@{n}", f"maj@{n}")
                sec = "val-core" if is_core else "val-aux"
                v = base if name.startswith("mean") else abs(base + rng.gauss(0, 0.05))
                out[f"{sec}/{src}/{var}/{name}"] = (v, "np")
    return out


def verl_line(step: int, row: Row) -> str:
    return " - ".join([f"step:{step}"] + [f"{k}:{num(v, kind)}" for k, (v, kind) in row.items()])


def ray(line: str, who: str = "TaskRunner pid=132393") -> str:
    return f"({who}) {line}"


def pprint_dict_lines(label: str, vals: Row, who: str) -> list[str]:
    """pprint(f'{label}: {dict}') of a long string: quoted pieces, one per output line."""
    text = f"{label}: {{" + ", ".join(f"'{k}': {num(v, kind)}" for k, (v, kind) in
                                      vals.items()) + "}"
    pieces = textwrap.wrap(text, 75, drop_whitespace=False) or [text]
    lines = [f"({pieces[0]!r}" if len(pieces) > 1 else f"{pieces[0]!r}"]
    lines += [f" {p!r}" for p in pieces[1:]]
    lines[-1] += ")" if len(pieces) > 1 else ""
    return [ray(x, who) for x in lines]


SPARK = "▁▂▃▄▅▆▇█"


def wandb_tail(rows: dict[int, Row], who: str, rng: random.Random) -> list[str]:
    """What wandb.finish() prints at the end of a verl run: sparklines, then the last values."""
    keys = sorted({k for r in rows.values() for k in r})
    width = max(len(k) for k in keys)
    out = [ray("wandb:" + " " * 80, who), ray("wandb: ", who), ray("wandb: Run history:", who)]
    for k in keys:
        out.append(ray(f"wandb: {k:>{width}} " + "".join(rng.choice(SPARK) for _ in range(40)),
                       who))
    out += [ray("wandb: ", who), ray("wandb: Run summary:", who)]
    for k in keys:  # the last value each key had, as W&B rounds it
        v = next(r[k][0] for _, r in sorted(rows.items(), reverse=True) if k in r)
        out.append(ray(f"wandb: {k:>{width}} {float(v):.5g}", who))
    out[-1] += (" /workspace/verl/checkpoints/verl_grpo_example_gsm8k/qwen2.5_7b_function_rm/"
                "global_step_105/actor/extra_state_world_size_8_rank_0.pt [repeated 7x across "
                "cluster]")
    out += [ray("wandb: ", who),
            ray("wandb: 🚀 View run qwen2.5_7b_function_rm at: https://wandb.ai/team/"
                "verl_grpo_example_gsm8k/runs/6icl7pbz", who),
            ray("wandb: ⭐️ View project at: https://wandb.ai/team/verl_grpo_example_gsm8k", who),
            ray("wandb: Synced 5 W&B file(s), 0 media file(s), 2 artifact file(s) and 0 other "
                "file(s)", who),
            ray("wandb: Find logs at: ./wandb/run-20250714_091502-6icl7pbz/logs", who)]
    return out


RAY_START = [
    "2025-07-14 09:14:51,201\tINFO worker.py:1888 -- Started a local Ray instance. View the "
    "dashboard at \x1b[1m\x1b[32m127.0.0.1:8265 \x1b[39m\x1b[22m",
    ray("TaskRunner hostname: gpu-node-07, PID: 132393"),
    ray("{'actor_rollout_ref': {'actor': {'checkpoint': {'load_contents': ['model',"),
    ray("                                                                 'optimizer',"),
    ray("                                                                 'extra']},"),
    ray("                                 'clip_ratio': 0.2,"),
    ray("                                 'optim': {'lr': 1e-06,"),
    ray("                                           'lr_warmup_steps': -1,"),
    ray("                                           'total_training_steps': -1},"),
    ray("                                 'ppo_mini_batch_size': 256,"),
    ray("                                 'use_kl_loss': True},"),
    ray("                       'rollout': {'n': 5, 'name': 'vllm'}},"),
    ray(" 'trainer': {'logger': ['console', 'wandb'], 'test_freq': 5, 'total_epochs': 15}}"),
    ray("Using dataset class: RLHFDataset"),
    ray("dataset len: 7473"),
    ray("Size of train dataloader: 7, Size of val dataloader: 1"),
    ray("Total training steps: 105"),
    "(WorkerDict pid=133021) INFO 07-14 09:15:40 [gpu_model_runner.py:1892] Model loading took "
    "14.2487 GiB and 5.108146 seconds",
    "(WorkerDict pid=133021) INFO 07-14 09:15:52 [kv_cache_utils.py:716] GPU KV cache size: "
    "1,284,544 tokens [repeated 7x across cluster]",
    ray("wandb: Currently logged in as: rl-team to https://api.wandb.ai. Use `wandb login "
        "--relogin` to force relogin"),
    ray("wandb: Tracking run with wandb version 0.21.0"),
    ray("wandb: Run data is saved locally in /workspace/verl/wandb/run-20250714_091502-6icl7pbz"),
    ray("wandb: Run `wandb offline` to turn off syncing."),
    ray("wandb: Syncing run qwen2.5_7b_function_rm"),
    ray("Checkpoint tracker file does not exist: /workspace/verl/checkpoints/verl_grpo_example_"
        "gsm8k/qwen2.5_7b_function_rm/latest_checkpointed_iteration.txt"),
    ray("Training from scratch"),
]


def math_verify_traceback() -> list[str]:
    """A non-fatal worker traceback (the reward's math checker timing out), mid-run."""
    who = "WorkerDict pid=133027"
    return [ray(x, who) for x in (
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.10/dist-packages/math_verify/grader.py", line 810, in '
        "verify",
        "    return timeout(timeout_seconds=timeout_seconds)(compare_single_extraction)(g, t)",
        '  File "/usr/local/lib/python3.10/dist-packages/math_verify/utils.py", line 49, in '
        "wrapper",
        '    raise TimeoutException("Operation timed out!")',
        "math_verify.errors.TimeoutException: Operation timed out!",
        "step:41 ERROR:math_verify.grader:Timeout during comparison",
    )]


# ------------------------------------------------------------------------------ verl cases
def case_verl_wandb_tail(root: Path, rng: random.Random) -> None:
    """verl 2025 GRPO under Ray, console + wandb: 105 steps, val every 5, W&B's final block."""
    total, who = 105, "TaskRunner pid=132393"
    rows: dict[int, Row] = {}
    lines = list(RAY_START)
    v0 = verl_val(rng, 0.0, ["openai/gsm8k"], 1)
    lines += pprint_dict_lines("Initial validation metrics", v0, who)
    lines.append(ray(verl_line(0, v0), who))
    for s in range(1, total + 1):
        row = verl_row(rng, s, total)
        if s % 5 == 0 or s == total:
            lines.append(ray("validation generation end", who))
            lines += [ray(x, who) for x in (  # the sample _validate prints, line by line
                "[prompt] system", "You are a helpful assistant.", "user",
                "Janet has 3 apples...", "[response] Step 1: 3 + 2 = 5. #### 5",
                "[ground_truth] 5", "[score] 1.0")]
            row.update(verl_val(rng, s / total, ["openai/gsm8k"], 1))
            row["timing_s/testing"] = (abs(rng.gauss(16.6, 2.0)), "py")
        if s % 20 == 0:
            row["timing_s/save_checkpoint"] = (abs(rng.gauss(17.9, 1.0)), "py")
        rows[s] = row
        if s == 41:
            lines += math_verify_traceback()
        lines.append(ray(verl_line(s, row), who))
        if s % 10 == 0:
            lines.append(f"Training Progress: {100 * s // total:3d}%|{'█' * (s * 10 // total):<10}"
                         f"| {s}/{total} [{s * 83 // 3600}:{s * 83 // 60 % 60:02d}:00<1:10:00, "
                         f"83.13s/it]")
    last_val = {k: v for k, v in rows[total].items() if k.startswith("val-")}
    lines += pprint_dict_lines("Final validation metrics", last_val, who)
    lines.append(f"Training Progress: 100%|██████████| {total}/{total} [2:25:28<00:00, 83.13s/it]")
    lines += wandb_tail(rows, who, rng)
    write(root / "verl_wandb_tail" / "train_grpo_qwen7b.log", "\n".join(lines) + "\n")
    mapping = {"reward_mean": "critic/rewards/mean", "entropy": "actor/entropy",
               "grad_norm": "actor/grad_norm", "response_length": "response_length/mean",
               "step_time": "timing_s/step", "rollout_time": "timing_s/gen"}
    steps = list(range(1, total + 1))
    sp = spots(rows, mapping, rng, steps)
    sp.append([100, "val_reward",
               rows[100]["val-core/openai/gsm8k/reward/mean@1"][0]])
    expect("verl_wandb_tail", "train_grpo_qwen7b.log", steps, [*VERL_CANON, "val_reward"],
           "Ray-prefixed verl 2025 console, step 0 validation only, a worker traceback with "
           "'step:41' in it, W&B Run history/summary (every key with a value) at the end",
           spots=sp)


def dapo_preamble(who: str) -> list[str]:
    return [ray(x, who) for x in (
        "Using dataset class: RLHFDataset",
        "dataset len: 17917",
        "Total training steps: 400",
        "Load from checkpoint folder: /ckpts/DAPO/DAPO-Qwen2.5-7b-MATH/global_step_200",
        "Setting global step to 200",
        "Resuming from /ckpts/DAPO/DAPO-Qwen2.5-7b-MATH/global_step_200",
    )]


def case_verl_dapo_resumed(root: Path, rng: random.Random) -> None:
    """The DAPO recipe resumed from global_step_200 (val at 200, then 201..), crashed by OOM."""
    who, total, first, last = "TaskRunner pid=88412", 400, 201, 263
    lines = dapo_preamble(who)
    v = verl_val(rng, 0.5, ["math_dapo"], 32, ("score", "acc", "reward"), core="acc")
    lines += pprint_dict_lines("Initial validation metrics", v, who)
    lines.append(ray(verl_line(200, v), who))
    lines.append(f"Training Progress:  50%|█████     | 200/{total} [00:00<?, ?it/s]")
    rows: dict[int, Row] = {}
    for s in range(first, last + 1):
        gens = rng.choice([1, 1, 2, 2, 3])
        kept = rng.randint(300, 500)
        for g in range(1, gens):
            lines.append(ray(f"num_prompt_in_batch={kept} < prompt_bsz=512", who))
            lines.append(ray(f"num_gen_batches={g}. Keep generating...", who))
            kept += rng.randint(150, 300)
        row = verl_row(rng, s, total, kl_loss=False, overlong=True)
        if s % 20 == 0:
            row.update(verl_val(rng, s / total, ["math_dapo"], 32, ("score", "acc", "reward"),
                                core="acc"))
        row["train/num_gen_batches"] = (gens, "int")
        rows[s] = row
        lines.append(ray(verl_line(s, row), who))
    lines += [ray(x, who) for x in (
        "Error executing job with overrides: ['data.train_batch_size=512', "
        "'actor_rollout_ref.rollout.n=16', 'trainer.resume_mode=auto']",
        "Traceback (most recent call last):",
        '  File "/workspace/verl/recipe/dapo/main_dapo.py", line 182, in run',
        "    trainer.fit()",
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_update_"
        "actor() (pid=88990, ip=10.0.3.7)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB. GPU 3 has a "
        "total capacity of 79.19 GiB of which 5.21 GiB is free.",
    )]
    write(root / "verl_dapo_resumed" / "dapo_qwen7b_resume.log", "\n".join(lines) + "\n")
    steps = list(range(first, last + 1))
    mapping = {"reward_mean": "critic/rewards/mean", "gen_batches": "train/num_gen_batches",
               "ppo_kl": "actor/ppo_kl", "truncation_rate": "response_length/clip_ratio"}
    canon = [c for c in VERL_CANON if c != "kl_ref"] + ["val_reward", "gen_batches"]
    expect("verl_dapo_resumed", "dapo_qwen7b_resume.log", steps, canon,
           "DAPO resumed from global_step_200: step 200 holds only the validation; 'Keep "
           "generating' lines between steps; no KL at all (use_kl_loss=False); ends in an OOM",
           absent=("kl_ref",), spots=spots(rows, mapping, rng, steps))


SOURCES = ["aime24", "aime25", "amc23", "HuggingFaceH4/MATH-500", "lighteval/MATH", "minerva",
           "olympiadbench", "gsm8k", "svamp", "asdiv", "mawps", "tabmwp", "gaokao2023en",
           "college_math", "cn_middle_school", "sat_math", "mmlu_stem", "carp_en",
           "openai/gsm8k", "theoremqa", "gpqa_diamond", "livecodebench", "humaneval",
           "mbpp"]


def case_verl_long_lines(root: Path, rng: random.Random) -> None:
    """97 steps; every 10th line carries 24 data sources x n=16 validation (~90 KB a line);
    a NaN and an inf grad_norm (numpy 2 reprs)."""
    total, who = 97, "TaskRunner pid=5120"
    lines = [ray("Size of train dataloader: 97, Size of val dataloader: 24", who)]
    rows: dict[int, Row] = {}
    for s in range(1, total + 1):
        row = verl_row(rng, s, total)
        row["training/rollout_probs_diff_max"] = (abs(rng.gauss(0.6, 0.1)), "py")
        row["training/rollout_probs_diff_mean"] = (abs(rng.gauss(0.002, 0.0005)), "py")
        row["rollout_corr/training_ppl"] = (abs(rng.gauss(1.77, 0.05)), "np")
        if s == 33:
            row["actor/grad_norm"] = (float("nan"), "np")
        if s == 34:
            row["actor/grad_norm"] = (float("inf"), "np")
        if s % 10 == 0 or s == total:
            row.update(verl_val(rng, s / total, SOURCES, 16, ("reward", "score")))
        rows[s] = row
        lines.append(ray(verl_line(s, row), who))
    write(root / "verl_long_lines" / "grpo_24_benchmarks.log", "\n".join(lines) + "\n")
    steps = list(range(1, total + 1))
    mapping = {"grad_norm": "actor/grad_norm", "kl_ref": "actor/kl_loss",
               "lr": "actor/lr", "entropy": "actor/entropy"}
    sp = spots(rows, mapping, rng, steps, k=2)
    sp += [[33, "grad_norm", "nan"], [34, "grad_norm", "inf"]]
    expect("verl_long_lines", "grpo_24_benchmarks.log", steps, [*VERL_CANON, "val_reward"],
           "validation lines of ~90 KB (24 data sources, some with '/', n=16), NaN/inf grad_norm",
           spots=sp)


def case_verl_ppo_critic_warmup(root: Path, rng: random.Random) -> None:
    """PPO with a critic and critic_warmup=5 (no actor update, so no actor/* but entropy, on
    steps 1-5); CRLF; the copy stops inside step 51's first key."""
    total, who = 120, "TaskRunner pid=7311"
    lines: list[str] = [ray("Total training steps: 120", who)]
    rows: dict[int, Row] = {}
    for s in range(1, 51):
        row = verl_row(rng, s, total, critic=True, actor=s > 5)
        rows[s] = row
        lines.append(ray(verl_line(s, row), who))
    text = "\n".join(lines) + "\n" + ray("step:51 - global_seql", who)
    write(root / "verl_ppo_critic_warmup" / "ppo_gae_copy.log", text, eol="\r\n")
    steps = list(range(1, 51))
    mapping = {"grad_norm": "actor/grad_norm", "lr": "actor/lr", "entropy": "actor/entropy",
               "reward_mean": "critic/rewards/mean"}
    sp = spots(rows, mapping, rng, list(range(6, 51)))
    sp.append([3, "entropy", rows[3]["actor/entropy"][0]])
    expect("verl_ppo_critic_warmup", "ppo_gae_copy.log", steps, VERL_CANON,
           "critic warmup: steps 1-5 have critic/grad_norm and critic/lr but no actor/*; those "
           "are not the actor's grad_norm/lr. CRLF. A last line cut before any value: no step",
           spots=sp)


def case_wandb_core_run_dir(root: Path, rng: random.Random) -> None:
    """A wandb-core run folder: the history is only in the binary .wandb; the console (verl
    without Ray's prefix, each step glued to tqdm's bar) is files/output.log."""
    total = 48
    run = root / "wandb_core_run_dir" / "run-20250911_140233-k3x9a1qz"
    rows: dict[int, Row] = {}
    out = ["Using dataset class: RLHFDataset", "Total training steps: 48"]
    bar = ""
    for s in range(1, total + 1):
        row = verl_row(rng, s, total)
        if s % 12 == 0:
            row.update(verl_val(rng, s / total, ["openai/gsm8k"], 1))
        rows[s] = row
        done = s - 1
        bar = (f"Training Progress: {100 * done // total:3d}%|{'█' * (done * 10 // total):<10}| "
               f"{done}/{total} [{done * 41 // 60:02d}:{done * 41 % 60:02d}<32:07, 41.01s/it]")
        if done == 0:
            bar = f"Training Progress:   0%|          | 0/{total} [00:00<?, ?it/s]"
        out.append(bar + verl_line(s, row))
    write(run / "files" / "output.log", "\n".join(out) + "\n")
    last = rows[total]
    summary = {k: v for k, (v, _) in last.items()}
    summary.update({"_step": total, "_runtime": 1990.4, "_timestamp": 1757601743.1,
                    "_wandb": {"runtime": 1990}})
    write(run / "files" / "wandb-summary.json", json.dumps(summary))
    write(run / "files" / "config.yaml",
          "_wandb:\n  value:\n    cli_version: 0.21.3\n    python_version: 3.10.12\n"
          "actor_rollout_ref:\n  value:\n    actor:\n      optim:\n        lr: 1.0e-06\n"
          "      ppo_mini_batch_size: 256\n    rollout:\n      n: 5\n"
          "trainer:\n  value:\n    total_epochs: 15\n    test_freq: 12\n")
    write(run / "files" / "wandb-metadata.json",
          json.dumps({"os": "Linux-5.15.0-119-generic-x86_64-with-glibc2.35",
                      "python": "CPython 3.10.12", "program": "-m verl.trainer.main_ppo",
                      "gpu": "NVIDIA H100 80GB HBM3", "gpu_count": 8}, indent=2))
    write(run / "files" / "requirements.txt", "verl==0.5.0\nvllm==0.10.1\ntorch==2.7.1\n")
    write(run / "logs" / "debug.log", "2025-09-11 14:02:33,120 INFO    MainThread:9 "
          "[wandb_setup.py:_flush():81] Current SDK version is 0.21.3\n")
    write(run / "logs" / "debug-internal.log", '{"time":"2025-09-11T14:02:33.5","level":"INFO",'
          '"msg":"stream: starting","core version":"0.21.3"}\n')
    write(run / "run-k3x9a1qz.wandb", b":W&B\x00\x01\x00\x00" + rng.randbytes(6000))
    steps = list(range(1, total + 1))
    mapping = {"reward_mean": "critic/rewards/mean", "entropy": "actor/entropy",
               "truncation_rate": "response_length/clip_ratio"}
    expect("wandb_core_run_dir", "run-20250911_140233-k3x9a1qz", steps,
           [*VERL_CANON, "val_reward"],
           "W&B run folder without a history file: read files/output.log, not the one-row "
           "wandb-summary.json; step lines glued after tqdm's bar", spots=spots(rows, mapping, rng,
                                                                                steps))


def case_wandb_core_summary_only(root: Path, rng: random.Random) -> None:
    """The same folder with console capture off: only last values; no series to read."""
    run = root / "wandb_core_summary_only" / "offline-run-20250911_140233-p0q1r2s3"
    row = verl_row(rng, 48, 48)
    summary: dict[str, Any] = {k: v for k, (v, _) in row.items()}
    summary.update({"_step": 48, "_runtime": 1990.4, "_wandb": {"runtime": 1990}})
    write(run / "files" / "wandb-summary.json", json.dumps(summary))
    write(run / "files" / "config.yaml", "_wandb:\n  value:\n    cli_version: 0.21.3\n")
    write(run / "run-p0q1r2s3.wandb", b":W&B\x00\x01\x00\x00" + rng.randbytes(3000))
    expect("wandb_core_summary_only", "offline-run-20250911_140233-p0q1r2s3", None, [],
           "W&B folder with console='off': wandb-summary.json holds one row of last values "
           "(no history); the series is only in the binary .wandb: unusable, exit 2",
           error=True)


def case_dapo_too_hard(root: Path, rng: random.Random) -> None:
    """DAPO dying before its first step: every generation batch filtered out."""
    who = "TaskRunner pid=4410"
    lines = [ray(x, who) for x in ("Total training steps: 400", "Training from scratch")]
    for g in range(1, 10):
        lines.append(ray(f"num_prompt_in_batch={rng.randint(2, 30) * g} < prompt_bsz=512", who))
        lines.append(ray(f"num_gen_batches={g}. Keep generating...", who))
    lines += [ray(x, who) for x in (
        "Traceback (most recent call last):",
        '  File "/workspace/verl/recipe/dapo/dapo_ray_trainer.py", line 260, in fit',
        "ValueError: num_gen_batches=10 >= max_num_gen_batches=10. Generated too many. Please "
        "check if your data are too difficult. You could also try set max_num_gen_batches=0 to "
        "enable endless trials.",
    )]
    write(root / "dapo_too_hard" / "dapo.log", "\n".join(lines) + "\n")
    expect("dapo_too_hard", "dapo.log", [], [],
           "DAPO crashed before step 1 (num_gen_batches lines only): no metrics, a run of no "
           "steps whose ending (the traceback) is reported")


# ---------------------------------------------------------------------------- MLflow sqlite
MLFLOW_SCHEMA = """
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY);
CREATE TABLE experiments (experiment_id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(256) NOT NULL
  UNIQUE, artifact_location VARCHAR(256), lifecycle_stage VARCHAR(32), creation_time BIGINT,
  last_update_time BIGINT);
CREATE TABLE runs (run_uuid VARCHAR(32) NOT NULL PRIMARY KEY, name VARCHAR(250), source_type
  VARCHAR(20), source_name VARCHAR(500), entry_point_name VARCHAR(50), user_id VARCHAR(256),
  status VARCHAR(9), start_time BIGINT, end_time BIGINT, deleted_time BIGINT, source_version
  VARCHAR(50), lifecycle_stage VARCHAR(20), artifact_uri VARCHAR(200), experiment_id INTEGER
  REFERENCES experiments(experiment_id));
CREATE TABLE metrics (key VARCHAR(250) NOT NULL, value FLOAT NOT NULL, timestamp BIGINT NOT NULL,
  run_uuid VARCHAR(32) NOT NULL REFERENCES runs(run_uuid), step BIGINT DEFAULT '0' NOT NULL,
  is_nan BOOLEAN DEFAULT '0' NOT NULL, PRIMARY KEY (key, timestamp, step, run_uuid, value,
  is_nan));
CREATE TABLE latest_metrics (key VARCHAR(250) NOT NULL, value FLOAT NOT NULL, timestamp BIGINT,
  step BIGINT NOT NULL, is_nan BOOLEAN NOT NULL, run_uuid VARCHAR(32) NOT NULL, PRIMARY KEY (key,
  run_uuid));
CREATE TABLE params (key VARCHAR(250) NOT NULL, value VARCHAR(8000) NOT NULL, run_uuid
  VARCHAR(32) NOT NULL, PRIMARY KEY (key, run_uuid));
CREATE TABLE tags (key VARCHAR(250) NOT NULL, value VARCHAR(8000), run_uuid VARCHAR(32) NOT
  NULL, PRIMARY KEY (key, run_uuid));
"""


def _mlflow_value(v: float) -> tuple[float, int]:
    """MLflow's SQL store: NaN -> (0, is_nan), +-inf -> +-float max."""
    if math.isnan(v):
        return 0.0, 1
    if math.isinf(v):
        return math.copysign(1.7976931348623157e308, v), 0
    return v, 0


def case_mlflow_sqlite_verl(root: Path, rng: random.Random) -> None:
    """verl with trainer.logger=['mlflow'] and its default sqlite:////tmp/mlruns.db."""
    total, run_id = 60, "9f2c1e0b7a4d4c1e8b5f3a2d1c0e9f8a"
    db = root / "mlflow_sqlite_verl" / "mlruns.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.executescript(MLFLOW_SCHEMA)
    t0 = 1757600000000
    con.execute("INSERT INTO alembic_version VALUES ('1b5f0d9ad7c1')")
    con.execute("INSERT INTO experiments VALUES (0, 'Default', 'mlflow-artifacts:/0', 'active', "
                "?, ?)", (t0, t0))
    con.execute("INSERT INTO experiments VALUES (1, 'verl_grpo_example_gsm8k', "
                "'mlflow-artifacts:/1', 'active', ?, ?)", (t0, t0))
    con.execute("INSERT INTO runs VALUES (?, 'qwen2_7b_function_rm', 'UNKNOWN', '', '', 'root', "
                "'FAILED', ?, ?, NULL, '', 'active', ?, 1)",
                (run_id, t0, t0 + 3600000, f"mlflow-artifacts:/1/{run_id}/artifacts"))
    con.executemany("INSERT INTO params VALUES (?, ?, ?)", [
        ("actor_rollout_ref/actor/optim/lr", "1e-06", run_id),
        ("actor_rollout_ref/rollout/n", "5", run_id),
        ("trainer/logger/list_len", "2", run_id), ("trainer/logger/0", "console", run_id),
        ("trainer/logger/1", "mlflow", run_id)])
    rows: dict[int, Row] = {0: verl_val(rng, 0.0, ["openai/gsm8k"], 1)}
    for s in range(1, total + 1):
        row = verl_row(rng, s, total)
        if s % 10 == 0:
            row.update(verl_val(rng, s / total, ["openai/gsm8k"], 1))
        if s == 27:
            row["actor/grad_norm"] = (float("nan"), "np")
        rows[s] = row
    data = []
    for s, row in rows.items():
        for k, (v, _) in row.items():
            val, is_nan = _mlflow_value(float(v))
            data.append((k.replace("@", "_at_"), val, t0 + s * 60000, run_id, s, is_nan))
    con.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?)", data)
    latest = {d[0]: d for d in data}
    con.executemany("INSERT INTO latest_metrics VALUES (?, ?, ?, ?, ?, ?)",
                    [(k, d[1], d[2], d[4], d[5], run_id) for k, d in latest.items()])
    con.commit()
    con.close()
    steps = list(range(1, total + 1))
    mapping = {"reward_mean": "critic/rewards/mean", "kl_ref": "actor/kl_loss",
               "val_reward": "val-core/openai/gsm8k/reward/mean@1"}
    sp = spots(rows, mapping, rng, steps)
    sp += [[27, "grad_norm", "nan"], [30, "val_reward",
                                      rows[30]["val-core/openai/gsm8k/reward/mean@1"][0]]]
    expect("mlflow_sqlite_verl", "mlruns.db", steps, [*VERL_CANON, "val_reward"],
           "MLflow SQL store (verl's default URI): '@' as '_at_', NaN as value 0 + is_nan, a "
           "step-0 validation, an empty Default experiment", spots=sp)


# ------------------------------------------------------------------------------- TRL
def trl_logs(rng: random.Random, step: int, total: int, *, beta: float, lr0: float) -> dict:
    """TRL GRPOTrainer's log dict (2025 names) in the order Trainer.log + GRPO.log build it."""
    t = step / total
    acc = min(1.0, max(0.0, curve(t, 0.2, 0.72, rng, 0.04)))
    fmt = min(1.0, max(0.0, curve(t, 0.5, 0.95, rng, 0.03)))
    length = 420 - 150 * t + rng.gauss(0, 12)
    d: dict[str, Any] = {
        "loss": round(rng.gauss(0.0, 0.01), 4),
        "grad_norm": abs(rng.gauss(0.35, 0.08)),
        "learning_rate": lr0 * (1 - (step - 1) / total),
        "num_tokens": float(step * 61440 + rng.randint(0, 5000)),
        "completions/mean_length": length,
        "completions/min_length": float(rng.randint(40, 90)),
        "completions/max_length": 1024.0,
        "completions/clipped_ratio": max(0.0, 0.06 - 0.05 * t + rng.gauss(0, 0.005)),
        "completions/mean_terminated_length": length - 20,
        "completions/min_terminated_length": 41.0,
        "completions/max_terminated_length": 1001.0,
        "rewards/accuracy_reward/mean": acc,
        "rewards/accuracy_reward/std": abs(rng.gauss(0.4, 0.03)),
        "rewards/format_reward/mean": fmt,
        "rewards/format_reward/std": abs(rng.gauss(0.2, 0.03)),
        "reward": acc + fmt,
        "reward_std": abs(rng.gauss(0.45, 0.04)),
        "frac_reward_zero_std": min(1.0, max(0.0, 0.1 + 0.3 * t + rng.gauss(0, 0.03))),
    }
    if beta > 0:
        d["kl"] = 0.0004 + 0.01 * t + abs(rng.gauss(0, 0.0005))
    d["entropy"] = max(0.05, 0.7 - 0.4 * t + rng.gauss(0, 0.01))
    d.update({"clip_ratio/low_mean": 0.0, "clip_ratio/low_min": 0.0,
              "clip_ratio/high_mean": abs(rng.gauss(0.001, 0.0004)), "clip_ratio/high_max": 0.004,
              "clip_ratio/region_mean": abs(rng.gauss(0.0012, 0.0004))})
    return d


def trl_eval(rng: random.Random, step: int, total: int) -> dict:
    acc = min(1.0, max(0.0, curve(step / total, 0.22, 0.68, rng, 0.02)))
    return {"eval_loss": round(rng.gauss(0, 0.005), 4), "eval_num_tokens": float(step * 61440),
            "eval_completions/mean_length": 390.0 - step, "eval_rewards/accuracy_reward/mean": acc,
            "eval_reward": acc + 0.9, "eval_reward_std": 0.41, "eval_runtime": 40.12,
            "eval_samples_per_second": 6.38, "eval_steps_per_second": 0.2}


def tbar(done: int, total: int, rate: float = 52.23) -> str:
    pct = 100 * done // total
    fill = "█" * (done * 10 // total)
    el = int(done * rate)
    rest = int((total - done) * rate)
    eta = f"{rest // 60:02d}:{rest % 60:02d}" if done else "?"
    return (f"{pct:3d}%|{fill:<10}| {done}/{total} [{el // 60:02d}:{el % 60:02d}<{eta}, "
            f"{rate:.2f}s/it]" if done else f"  0%|          | 0/{total} [00:00<?, ?it/s]")


def case_trl_torchrun_deepspeed(root: Path, rng: random.Random) -> None:
    """accelerate/torchrun --tee 3 with DeepSpeed ZeRO-2, 2 GPUs, logging_steps=1, 60 steps."""
    total, lr0 = 60, 1e-06
    p0, p1 = "[default0]:", "[default1]:"
    ds = "[INFO] [logging.py:107:log_dist] [Rank 0]"
    lines = [
        "W0902 10:57:58.412000 2231 torch/distributed/run.py:766] ",
        "W0902 10:57:58.412000 2231 torch/distributed/run.py:766] *****************************",
        "W0902 10:57:58.412000 2231 torch/distributed/run.py:766] Setting OMP_NUM_THREADS "
        "environment variable for each process to be 1 in default, to avoid your system being "
        "overloaded, please further tune the variable for optimal performance in your "
        "application as needed.",
        f"{p0}[2025-09-02 10:58:04,118] [INFO] [real_accelerator.py:260:get_accelerator] "
        "Setting ds_accelerator to cuda (auto detect)",
        f"{p1}[2025-09-02 10:58:04,121] [INFO] [real_accelerator.py:260:get_accelerator] "
        "Setting ds_accelerator to cuda (auto detect)",
        f"{p1}[rank1]:[W902 10:58:31.552108144 ProcessGroupNCCL.cpp:4715] [PG ID 0 PG GUID 0 "
        "Rank 1]  using GPU 1 as device used by this process is currently unknown. This can "
        "potentially cause a hang if this rank to GPU mapping is incorrect.",
        f"{p0}[2025-09-02 10:58:40,907] {ds} DeepSpeed Final Optimizer = AdamW",
        f"{p0}[2025-09-02 10:58:40,907] {ds} step=0, skipped=0, lr=[{lr0}], mom=[(0.9, 0.999)]",
        f"{p0}{{'train_batch_size': 16, 'gradient_accumulation_steps': 4}}",
    ]
    rows: dict[int, dict] = {}
    evals: dict[int, float] = {}
    clear = "\r" + " " * 60 + "\r"  # tqdm.write clears the bar before the dict
    for s in range(1, total + 1):
        logs = trl_logs(rng, s, total, beta=0.04, lr0=lr0)
        logs["epoch"] = round(s / total, 2)
        rows[s] = logs
        if s % 10 == 0:  # DeepSpeed's steps_per_print=10, inside engine.step()
            lines.append(f"{p0}[2025-09-02 11:{s // 2:02d}:17,552] {ds} step={s}, skipped=0, "
                         f"lr=[{logs['learning_rate']!r}], mom=[(0.9, 0.999)]")
        # the stderr chunk (bar at s/60, no newline) and the stdout dict, each stamped
        lines.append(f"{p0}\r{tbar(s, total)}{clear}{p0}{logs!r}")
        if s % 20 == 0:
            ev = trl_eval(rng, s, total)
            ev["epoch"] = round(s / total, 2)
            evals[s] = ev["eval_reward"]
            bars = "".join(f"\r{tbar(i, 8, 5.01)}" for i in range(0, 9))
            lines.append(f"{p0}{bars}{clear}{p0}{ev!r}")
            lines.append(f"{p1}[rank1]:[W902 11:{s // 2:02d}:40.1 reducer.cpp:1400] Warning: find_"
                         "unused_parameters=True was specified in DDP constructor, but did not "
                         "find any unused parameters in the forward pass.")
    lines.append(f"{p0}\r{tbar(total, total)}")
    lines.append(f"{p0}{{'train_runtime': 3134.2, 'train_samples_per_second': 0.306, "
                 f"'train_steps_per_second': 0.019, 'train_loss': 0.00123, 'epoch': 1.0}}")
    write(root / "trl_torchrun_deepspeed" / "grpo_2gpu.out", "\n".join(lines) + "\n")
    steps = list(range(1, total + 1))
    mapping = {"reward_mean": "reward", "kl_ref": "kl", "lr": "learning_rate",
               "pg_clipfrac": "clip_ratio/region_mean"}
    sp = [[s, c, float(rows[s][k])] for s in sorted(rng.sample(steps, 3))
          for c, k in mapping.items()]
    sp.append([40, "val_reward", evals[40]])
    expect("trl_torchrun_deepspeed", "grpo_2gpu.out", steps,
           [*TRL_CANON, "kl_ref", "val_reward", "loss"],
           "torchrun --tee: '[default0]:' on every line, tqdm chunks glued before the dicts, "
           "DeepSpeed 'step=N, skipped=0, lr=[..]' lines, '[rank1]:' warnings, eval bars 8/8",
           spots=sp)


def rich_panel(step: int, samples: list[tuple[str, str, float, float]]) -> list[str]:
    """TRL's print_prompt_completions_sample as rich renders it at 80 columns without a TTY."""
    widths = [20, 30, 11, 9]
    heads = ["Prompt", "Completion", "accuracy_r…", "Advantage"]

    def row(cells: list[list[str]], left: str, mid: str, right: str) -> list[str]:
        h = max(len(c) for c in cells)
        return [f"│ {left}" + mid.join(f" {(c[i] if i < len(c) else ''):<{w}} "
                                         for c, w in zip(cells, widths, strict=True)) + f"{right} │"
                for i in range(h)]

    inner = sum(widths) + 3 * len(widths) + 1
    out = [f"╭{'─' * ((inner + 1) // 2 - 4)} Step {step} {'─' * (inner - (inner + 1) // 2 - 3)}╮"]
    out.append("│ ┏" + "┳".join("━" * (w + 2) for w in widths) + "┓ │")
    out += row([[h] for h in heads], "┃", "┃", "┃")
    out.append("│ ┡" + "╇".join("━" * (w + 2) for w in widths) + "┩ │")
    for i, (prompt, comp, rew, adv) in enumerate(samples):
        cells = [textwrap.wrap(prompt, widths[0]), textwrap.wrap(comp, widths[1]),
                 [f"{rew:>{widths[2]}.2f}"], [f"{adv:>{widths[3]}.2f}"]]
        out += row(cells, "│", "│", "│")
        if i < len(samples) - 1:
            out.append("│ ├" + "┼".join("─" * (w + 2) for w in widths) + "┤ │")
    out.append("│ └" + "┴".join("─" * (w + 2) for w in widths) + "┘ │")
    out.append(f"╰{'─' * (len(out[1]) - 2)}╯")
    return out


COMPLETIONS = [
    ("Natalia sold clips to 48 of her friends in April, and then half as many in May.",
     "Step 1: In April she sold 48 clips. Step 2: In May she sold 48/2 = 24. Step 3: 48 + 24 = "
     "72. <answer>72</answer>"),
    ("Weng earns $12 an hour for babysitting. Yesterday she did 50 minutes.",
     '{"name": "calculator", "arguments": {"expression": "12 * 50 / 60"}} -> 10.0 '
     "<answer>10</answer>"),
    ("James writes a 3-page letter to 2 friends twice a week. How many pages a year?",
     "{'loss': 0.5} is not the answer; step:12 of the plan: 3*2*2*52 = 624 <answer>624</answer>"),
]


def case_trl_rich_completions(root: Path, rng: random.Random) -> None:
    """GRPO with log_completions=True, beta=0 (no kl), logging_steps=2 of 40: a rich 'Step N'
    panel after each dict, its completions full of 'Step 1:' and dict-like text."""
    total, lr0 = 40, 5e-07
    out = ["INFO 09-14 16:20:11 [__init__.py:241] Automatically detected platform cuda.",
           "/usr/local/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py:712: UserWarning: "
           "The `max_prompt_length` argument is deprecated",
           "  warnings.warn("]
    text = "\r" + tbar(0, total, 31.6)
    rows: dict[int, dict] = {}
    for s in range(1, total + 1):
        text += "\r" + tbar(s, total, 31.6)
        if s % 2:
            continue
        logs = trl_logs(rng, s, total, beta=0.0, lr0=lr0)
        logs["sampling/sampling_logp_difference/mean"] = abs(rng.gauss(0.01, 0.002))
        logs["sampling/importance_sampling_ratio/min"] = abs(rng.gauss(0.9, 0.02))
        logs["epoch"] = round(s / total * 0.25, 2)
        rows[s] = logs
        text += "\r" + " " * 70 + "\r" + repr(logs) + "\n" + "\r" + tbar(s, total, 31.6)
        samples = [(p, c, float(rng.choice([0.0, 1.0])), rng.gauss(0, 0.9))
                   for p, c in COMPLETIONS]
        text += "\n".join(rich_panel(s, samples)) + "\n"
    text += "\r" + tbar(total, total, 31.6) + "\n"
    text += repr({"train_runtime": 1266.5, "train_samples_per_second": 1.01,
                  "train_steps_per_second": 0.032, "train_loss": 0.0004, "epoch": 0.25}) + "\n"
    write(root / "trl_rich_completions" / "grpo_log_completions.txt", "\n".join(out) + "\n" + text)
    steps = list(range(2, total + 1, 2))
    mapping = {"reward_mean": "reward", "entropy": "entropy",
               "truncation_rate": "completions/clipped_ratio", "zero_std_frac":
               "frac_reward_zero_std"}
    sp = [[s, c, float(rows[s][k])] for s in sorted(rng.sample(steps, 3))
          for c, k in mapping.items()]
    expect("trl_rich_completions", "grpo_log_completions.txt", steps, [*TRL_CANON, "loss"],
           "rich prompt/completion panels titled 'Step N' after each log; completions contain "
           "'Step 1:', 'step:12' and a dict; beta=0 so no kl", absent=("kl_ref",), spots=sp)


TRACKIO_SCHEMA = """
CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL,
  run_name TEXT NOT NULL, step INTEGER NOT NULL, metrics TEXT NOT NULL);
CREATE INDEX idx_metrics_run_step ON metrics(run_name, step);
CREATE TABLE configs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_name TEXT NOT NULL,
  config TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE(run_name));
"""


def rewrite_logs(d: dict) -> dict:
    """transformers' rewrite_logs: eval_ -> eval/, test_ -> test/, the rest under train/."""
    out = {}
    for k, v in d.items():
        if k.startswith("eval_"):
            out["eval/" + k[5:]] = v
        elif k.startswith("test_"):
            out["test/" + k[5:]] = v
        else:
            out["train/" + k] = v
    return out


def case_trackio_trl(root: Path, rng: random.Random) -> None:
    """TRL GRPO with report_to='trackio': logging_steps=5 of 150, eval every 50; trackio's
    `step` counts log calls, the trainer's step is train/global_step."""
    total, lr0 = 150, 1e-06
    db = root / "trackio_trl" / "grpo-qwen3-gsm8k.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.executescript(TRACKIO_SCHEMA)
    run = "Qwen3-1.7B-GRPO"
    con.execute("INSERT INTO configs (run_name, config, created_at) VALUES (?, ?, ?)",
                (run, json.dumps({"learning_rate": lr0, "beta": 0.04, "num_generations": 8,
                                  "logging_steps": 5, "_Created": "2025-10-02T09:00:00"}),
                 "2025-10-02T09:00:00"))
    calls: list[dict] = []
    rows: dict[int, dict] = {}
    for s in range(5, total + 1, 5):
        logs = trl_logs(rng, s, total, beta=0.04, lr0=lr0)
        logs["epoch"] = s / total
        rows[s] = logs
        calls.append({**rewrite_logs(logs), "train/global_step": s})
        if s % 50 == 0:
            ev = trl_eval(rng, s, total)
            ev["epoch"] = s / total
            rows[s]["_eval_reward"] = ev["eval_reward"]
            calls.append({**rewrite_logs(ev), "train/global_step": s})
    calls.append({"train/epoch": 1.0, "train/global_step": total})
    con.executemany("INSERT INTO metrics (timestamp, run_name, step, metrics) VALUES (?,?,?,?)",
                    [(f"2025-10-02T09:{i // 60:02d}:{i % 60:02d}.{i:06d}", run, i, json.dumps(c))
                     for i, c in enumerate(calls)])
    con.commit()
    con.close()
    steps = list(range(5, total + 1, 5))
    mapping = {"reward_mean": "reward", "grad_norm": "grad_norm", "kl_ref": "kl",
               "response_length": "completions/mean_length"}
    sp = [[s, c, float(rows[s][k])] for s in sorted(rng.sample(steps, 3))
          for c, k in mapping.items()]
    sp.append([100, "val_reward", rows[100]["_eval_reward"]])
    expect("trackio_trl", "grpo-qwen3-gsm8k.db", steps,
           [*TRL_CANON, "kl_ref", "val_reward", "loss"],
           "trackio SQLite project db: metrics JSON per log call, train/ and eval/ prefixes, "
           "the trainer step in train/global_step (trackio's own step counts calls)", spots=sp)


def case_trackio_empty(root: Path, rng: random.Random) -> None:
    """A trackio db whose run died before its first log: tables, a config, no metrics."""
    db = root / "trackio_empty" / "grpo-qwen3-gsm8k.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.executescript(TRACKIO_SCHEMA)
    con.execute("INSERT INTO configs (run_name, config, created_at) VALUES ('r', '{}', 'now')")
    con.commit()
    con.close()
    expect("trackio_empty", "grpo-qwen3-gsm8k.db", None, [],
           "trackio db without a single metrics row: exit 2", error=True)


CASES: list[Callable[[Path, random.Random], None]] = [
    case_verl_wandb_tail,
    case_verl_dapo_resumed,
    case_verl_long_lines,
    case_verl_ppo_critic_warmup,
    case_wandb_core_run_dir,
    case_wandb_core_summary_only,
    case_dapo_too_hard,
    case_mlflow_sqlite_verl,
    case_trl_torchrun_deepspeed,
    case_trl_rich_completions,
    case_trackio_trl,
    case_trackio_empty,
]
CASE_NAMES = [fn.__name__.removeprefix("case_") for fn in CASES]


def make_all(out: Path, seed: int = SEED) -> dict[str, dict[str, Any]]:
    """Write every case under `out` and out/expected.json; return the manifest."""
    MANIFEST.clear()
    out.mkdir(parents=True, exist_ok=True)
    for fn in CASES:
        fn(out, random.Random(f"{seed}-{fn.__name__}"))
    (out / "expected.json").write_text(json.dumps(MANIFEST, indent=1))
    return dict(MANIFEST)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: gen.py OUT_DIR (the directory the cases and expected.json go to)",
              file=sys.stderr)
        return 2
    manifest = make_all(Path(argv[0]))
    print(f"{len(manifest)} cases written to {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
