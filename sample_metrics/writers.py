"""Write a GeneratedRun in the formats users have: verl console, verl JSONL, W&B CSV, TRL state.

Layouts follow shared/spec/metrics.md and the public runs in shared/real_runs/labelled/ (facts
only): verl `step:N - key:value` lines behind a Ray `(TaskRunner pid=...)` prefix with ANSI codes,
the verl file logger's `{"step": N, "data": {...}}`, a W&B history export with `_step`, and TRL's
`trainer_state.json` whose `log_history` entries average `logging_steps` steps.
"""

from __future__ import annotations

import csv
import io
import json
import math
import pprint
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from sample_metrics.runs import TRL_NAMES, VERL_NAMES, GeneratedRun

_METRICS_FILE = {
    "verl-console": "train.log",
    "verl-jsonl": "metrics.jsonl",
    "wandb-csv": "wandb_history.csv",
    "trl-state": "trainer_state.json",
}

_ESC_CYAN, _ESC_RESET, _ESC_GREEN = "\x1b[36m", "\x1b[0m", "\x1b[32m"


def metrics_filename(fmt: str) -> str:
    return _METRICS_FILE[fmt]


# ----------------------------------------------------------------------------- rows


def verl_rows(run: GeneratedRun) -> Iterator[tuple[int, dict[str, float]]]:
    """(step, {verl key: value}) in log order: validation-only at step 0, then one per step."""
    vals = dict(zip(run.val_steps.tolist(), run.val.tolist(), strict=True))
    if 0 in vals:
        yield 0, {run.val_name: vals[0]}
    s = run.series
    for i, step in enumerate(run.steps.tolist()):
        row: dict[str, float] = {}
        for name in ("entropy", "pg_clipfrac", "ppo_kl", "grad_norm", "kl_ref", "memory_gb", "lr"):
            if name in s:
                row[VERL_NAMES[name]] = float(s[name][i])
        row["actor/pg_loss"] = float(-0.02 * s["reward_mean"][i] + 0.01 * math.sin(step))
        row["critic/score/mean"] = float(s["reward_mean"][i])
        row["critic/rewards/mean"] = float(s["reward_mean"][i])
        rl = float(s["response_length"][i])
        row["response_length/mean"] = rl
        row["response_length/clip_ratio"] = float(s["truncation_rate"][i])
        row["prompt_length/clip_ratio"] = float(s.get("prompt_truncation_rate", [0.0] * (i + 1))[i])
        if step in vals:
            row[run.val_name] = vals[step]
        row["timing_s/gen"] = float(s["rollout_time"][i])
        row["timing_s/update_actor"] = float((s["step_time"][i] - s["rollout_time"][i]) * 0.6)
        row["timing_s/step"] = float(s["step_time"][i])
        yield step, row


def trl_entries(run: GeneratedRun) -> list[dict[str, Any]]:
    """TRL log_history: train entries averaged over logging_steps, then eval entries."""
    s, steps, every = run.series, run.steps, max(1, run.logging_steps)
    out: list[dict[str, Any]] = []
    per_epoch = max(1, math.ceil(len(steps) / max(1, run.hp["n_epochs"])))
    vals = dict(zip(run.val_steps.tolist(), run.val.tolist(), strict=True))
    for end in range(every - 1, len(steps), every):
        lo = end - every + 1
        step = int(steps[end])
        entry: dict[str, Any] = {}
        for name, key in TRL_NAMES.items():
            if name not in s:
                continue
            window = s[name][lo: end + 1]
            entry[key] = float(window[-1] if name == "lr" else np.mean(window))
        entry["epoch"] = round(step / per_epoch, 4)
        entry["step"] = step
        out.append(entry)
        for vstep in [v for v in vals if v != 0 and step - every < v <= step]:
            out.append({"eval_reward": vals[vstep], "eval_loss": 0.0,
                        "epoch": round(vstep / per_epoch, 4), "step": vstep})
    return out


# ----------------------------------------------------------------------------- formats


def _fmt_value(v: float, style: str) -> str:
    if style == "3dec":
        return "nan" if math.isnan(v) else f"{v:.3f}"
    text = repr(float(v))
    return f"np.float64({text})" if style == "np" else text


def _prefix(pid: int) -> str:
    return f"{_ESC_CYAN}(TaskRunner pid={pid}){_ESC_RESET} "


def _config_dump(run: GeneratedRun, pid: int) -> list[str]:
    hp = run.hp
    adv = {"gspo": "grpo", "grpo": "grpo", "dapo": "grpo"}[hp["algorithm"]]
    conf = {
        "actor_rollout_ref": {
            "actor": {
                "optim": {"lr": hp["learning_rate"]},
                # verl counts prompts (its workers multiply by rollout.n); the job file, samples
                "ppo_mini_batch_size": max(1, hp["ppo_mini_batch_size"] // hp["n_rollouts"]),
                "use_kl_loss": hp["kl_loss_coef"] > 0,
                "kl_loss_coef": hp["kl_loss_coef"],
                "policy_loss": {"loss_mode": "gspo" if hp["algorithm"] == "gspo" else "vanilla"},
                "clip_ratio_high": 0.28 if hp["algorithm"] == "dapo" else 0.2,
            },
            "rollout": {"n": hp["n_rollouts"]},
        },
        "algorithm": {"adv_estimator": adv},
        "data": {
            "train_batch_size": hp["batch_size"],
            "max_prompt_length": hp["max_prompt_length"],
            "max_response_length": hp["max_length"] - hp["max_prompt_length"],
        },
        "trainer": {"test_freq": hp["eval_steps"], "save_freq": hp["save_steps"],
                    "total_epochs": hp["n_epochs"]},
    }
    return [_prefix(pid) + line for line in pprint.pformat(conf, width=90).splitlines()]


def write_verl_console(run: GeneratedRun, path: Path) -> None:
    rng = np.random.default_rng(len(run.steps) * 7919 + int(run.steps[0]))
    pid = int(rng.integers(1000, 60000))
    worker = f"{_ESC_CYAN}(WorkerDict pid={pid + 17}, ip=10.0.0.{int(rng.integers(2, 250))})"
    lines = [
        "Job submission server address: http://localhost:8265",
        "",
        f"Job 'raysubmit_{run.run_id[:8]}' submitted successfully",
        "2026-01-12 07:03:43,653\tINFO worker.py:1879 -- Connected to Ray cluster.",
        *_config_dump(run, pid),
    ]
    total = int(run.steps[-1])
    save = run.hp["save_steps"]
    for step, row in verl_rows(run):
        if step and rng.random() < 0.3:
            lines.append(_prefix(pid) + f"[score] {float(rng.choice([0.0, 1.0]))}")
        if step and step % save == 0:
            lines.append(f"{worker}{_ESC_RESET} [rank-0]: Saving model to "
                         f"/checkpoints/global_step_{step}/actor/model_world_size_8_rank_0.pt"
                         f"{_ESC_GREEN} [repeated 7x across cluster]{_ESC_RESET}")
        body = " - ".join(f"{k}:{_fmt_value(v, run.console_style)}" for k, v in row.items())
        lines.append(_prefix(pid) + f"step:{step} - {body}")
        if step and rng.random() < 0.2:
            lines.append(f"Training Progress:  {100 * step // total}%| | {step}/{total} "
                         f"[00:11<1:05:35, 11.78s/it]")
    lines += _ending_lines(run, pid, worker)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _ending_lines(run: GeneratedRun, pid: int, worker: str) -> list[str]:
    end = run.ending
    if end is None:
        return ["", "-" * 42, f"Job 'raysubmit_{run.run_id[:8]}' succeeded", "-" * 42]
    tb = [
        f"{worker}{_ESC_RESET} Traceback (most recent call last):",
        f'{worker}{_ESC_RESET}   File "/opt/verl/verl/trainer/ppo/ray_trainer.py", line 1032, '
        "in fit",
    ]
    if end["kind"] == "oom":
        alloc = 1.5 + (run.steps[-1] % 7) * 0.25
        msg = (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {alloc:.2f} GiB. "
               "GPU 0 has a total capacity of 79.15 GiB of which 612.00 MiB is free. "
               "Including non-PyTorch memory, this process has 78.53 GiB memory in use.")
        if run.variant == "sudden":
            msg = "RuntimeError: CUDA out of memory. Tried to allocate 2.31 GiB"
        tb.append(f"{worker}{_ESC_RESET} {msg}")
        tb.append(_prefix(pid) + "ray.exceptions.RayTaskError(OutOfMemoryError): "
                  "ray::WorkerDict.actor_rollout_update_actor()")
    else:
        tb.append(f"{worker}{_ESC_RESET} RuntimeError: probability tensor contains either "
                  "`inf`, `nan` or element < 0")
    return [*tb, "", "-" * 42, f"Job 'raysubmit_{run.run_id[:8]}' failed", "-" * 42]


def write_verl_jsonl(run: GeneratedRun, path: Path) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for step, row in verl_rows(run):
            fh.write(json.dumps({"step": step, "data": row}) + "\n")


def write_wandb_csv(run: GeneratedRun, path: Path) -> None:
    if run.framework == "trl":
        rows = _trl_wandb_rows(run)
    else:
        rows = [{"_step": step, **row} for step, row in verl_rows(run)]
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    keys = ["_step", "_runtime", "_timestamp", *sorted(k for k in keys if not k.startswith("_"))]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    w.writeheader()
    for i, r in enumerate(rows):
        r = dict(r)
        r["_runtime"] = round(12.5 * (i + 1), 3)
        r["_timestamp"] = 1767225600 + round(12.5 * (i + 1), 3)
        w.writerow({k: _csv_cell(r.get(k)) for k in keys})
    path.write_text(buf.getvalue(), encoding="utf-8")


def _csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return repr(v) if isinstance(v, float) else str(v)


def _trl_wandb_rows(run: GeneratedRun) -> list[dict[str, Any]]:
    # transformers' W&B callback logs without an explicit step: `_step` counts log calls and the
    # optimizer step is in `train/global_step`.
    rows = []
    for i, e in enumerate(trl_entries(run)):
        row: dict[str, Any] = {"_step": i, "train/global_step": e["step"]}
        for k, v in e.items():
            if k in ("step",):
                continue
            if k.startswith("eval_"):
                row["eval/" + k[5:]] = v
            else:
                row["train/" + k] = v
        rows.append(row)
    return rows


def write_trl_state(run: GeneratedRun, path: Path) -> None:
    hist = trl_entries(run)
    last = int(run.steps[-1])
    if run.ending is None and zlib.crc32(run.run_id.encode()) % 2:
        # The output dir's own trainer_state.json ends with the Trainer's run summary.
        losses = [e["loss"] for e in hist if "loss" in e and not math.isnan(e["loss"])]
        hist.append({"epoch": hist[-1]["epoch"], "step": last, "total_flos": 0.0,
                     "train_loss": float(np.mean(losses)) if losses else 0.0,
                     "train_runtime": round(12.5 * last, 3),
                     "train_samples_per_second": 2.56, "train_steps_per_second": 0.08})
    state = {
        "best_metric": None,
        "best_model_checkpoint": None,
        "epoch": hist[-1]["epoch"] if hist else 0.0,
        "eval_steps": run.hp["eval_steps"],
        "global_step": last,
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
        "log_history": hist,
        "logging_steps": run.logging_steps,
        "max_steps": last,
        "num_train_epochs": run.hp["n_epochs"],
        "save_steps": run.hp["save_steps"],
        "train_batch_size": run.hp["batch_size"],
    }
    # json writes NaN as a bare NaN token, as transformers does.
    path.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")


_WRITERS = {
    "verl-console": write_verl_console,
    "verl-jsonl": write_verl_jsonl,
    "wandb-csv": write_wandb_csv,
    "trl-state": write_trl_state,
}


def job_yaml(run: GeneratedRun) -> str:
    """The platform job config (the seed's YAML layout) with the run's hyperparameters."""
    model = "qwen3.5-9b"
    hp_lines = "\n".join(f"    {k}: {_yaml_scalar(v)}" for k, v in run.hp.items())
    return f"""# synthetic job for {run.run_id} (sample_metrics/generate.py)
job_name: "{run.run_id}"
workspace_dir: "./"
model: "{model}"
mode: "reinforcement"
datasets:
  - type: "training"
    data_source_type: "file_id"
    file_name: "./data/train.jsonl"
  - type: "validation"
    data_source_type: "file_id"
    file_name: "./data/validation.jsonl"
training:
  hyper_parameters:
{hp_lines}
  resources:
    charge_type: "mtu_postpaid"
    mtu_spec_code: "MTU4"
    mtu_capacity: 24
"""


def _yaml_scalar(v: Any) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if v != 0 else "0.0"
    return str(v)


def write_run(run: GeneratedRun, out_dir: Path) -> Path:
    """Write the metrics file, job.yaml and label.json of one run into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics = out_dir / metrics_filename(run.fmt)
    _WRITERS[run.fmt](run, metrics)
    (out_dir / "job.yaml").write_text(job_yaml(run), encoding="utf-8")
    label = dict(run.label, metrics_file=metrics.name)
    (out_dir / "label.json").write_text(json.dumps(label, indent=2, sort_keys=True) + "\n",
                                        encoding="utf-8")
    return metrics
