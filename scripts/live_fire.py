"""Live-fire range: real TRL `GRPOTrainer` runs on CPU, each with one cause set in its config.

    .venv/bin/pip install -e '.[livefire]'           # torch (CPU) + trl, not the default install
    .venv/bin/python scripts/live_fire.py            # every case -> tests/livefire/runs/<case>/
    .venv/bin/python scripts/live_fire.py --case sane --out /tmp/lf
    .venv/bin/python scripts/live_fire.py --case lr-tiny --seed 1235 --set learning_rate=5e-3
    .venv/bin/python scripts/live_fire.py --case lr-tiny --config next.yaml --out /tmp/lf

`--seed` seeds the model's weights, the prompts and GRPOConfig's `seed`. `--set KEY=VALUE`
changes a setting and wins over the case's own value of the same key (said on stdout).
`--config FILE` trains from a `trl grpo --config` YAML (the callback's `rl-advisor-job.yaml`
or a patch of it) instead of the base settings and the case's overrides; the case then gives
only the reward function (scripts/closed_loop.py applies the advice this way).

The model is a 2-layer Qwen2 of hidden size 64 with random weights, its tokenizer a word-level
`tokenizers` vocabulary of 13 symbols built here: nothing comes from a hub (HF_HUB_OFFLINE=1).
The task is copying a digit: the prompt is `d =`; a finished completion whose first token is
`d` earns 1.0, any other finished one 0.1, one cut at the cap 0 (no answer). The tokens after
the first are free, as a reasoning chain the reward does not read, so a healthy run keeps most
of its entropy. A random policy scores ~0.16; the sane run climbs to ~0.85 in 200 steps.

Each case runs in its own process (so a crash is a real crash, with TRL's own traceback) with the
advisor's `AdvisorCallback` attached (trained inside `reporting`, so a run that raises is
reported too), and leaves in its directory what such a run leaves: the console as TRL prints it
(`train.log`, stdout and stderr together), `trainer_state.json` when training returned, and
what the callback writes (`rl-advisor-run.json`, `rl-advisor-report.md` / `.json`, plots).
`label.json` (what the cause implies, hand-written) is kept when the directory is rewritten.
`--refresh RUN_DIR...` rewrites the callback's reports of recorded runs as today's code writes
them, by replaying their trainer_state.json through the callback (no training).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "livefire" / "runs"
KEEP = {"label.json"}  # hand-written: survives a regeneration

DIGITS = [str(d) for d in range(10)]
VOCAB = ["<pad>", "<eos>", *DIGITS, "="]
SEED = 1234

# The sane run's settings; every case changes one thing (its `overrides`) or the reward.
BASE: dict[str, Any] = {
    "learning_rate": 5e-3,
    "lr_scheduler_type": "constant",
    "max_steps": 200,
    "per_device_train_batch_size": 64,  # completions per step: 8 prompts x 8 generations
    "num_generations": 8,
    "max_completion_length": 48,
    "beta": 0.1,  # holds the free tokens near the reference (0.04, GRPO's usual, lets them drift)
    "max_grad_norm": 1.0,
    "temperature": 1.0,
    "logging_steps": 1,
    "eval_strategy": "steps",
    "eval_steps": 20,
    "per_device_eval_batch_size": 32,
    "save_strategy": "no",
    "report_to": "none",
    "seed": SEED,
    "bf16": False,
    "gradient_checkpointing": False,
    "use_cpu": True,
    "dataloader_num_workers": 0,
}


@dataclass(frozen=True)
class Case:
    """One cause: the config it changes and the reward it trains on."""

    name: str
    cause: str
    overrides: dict[str, Any] = field(default_factory=dict)
    reward: str = "copy"  # copy | nan_from | raise_at
    reward_step: int | None = None  # the step the broken reward starts at
    cure: dict[str, Any] = field(default_factory=dict)  # a change known to cure it ({}: healthy)
    healthy: bool = False  # a variant that must stay healthy with no change advised


CASES: tuple[Case, ...] = (
    Case("sane", "healthy settings for this task", healthy=True),
    Case(
        "lr-tiny",
        "learning_rate 5e-7 (1e-4 x sane)",
        {"learning_rate": 5e-7},
        cure={"learning_rate": 5e-3},
    ),
    Case(
        "lr-huge-clip",
        "learning_rate 0.5 (100 x sane), gradients clipped at norm 1",
        {"learning_rate": 0.5, "max_grad_norm": 1.0},
        cure={"learning_rate": 5e-3},
    ),
    Case(
        "lr-huge-noclip",
        "learning_rate 0.5 (100 x sane), no clipping (max_grad_norm 1e9)",
        {"learning_rate": 0.5, "max_grad_norm": 1e9},
        cure={"learning_rate": 5e-3},
    ),
    Case(
        "cap-tiny",
        "max_completion_length 1: every completion cut",
        {"max_completion_length": 1},
        cure={"max_completion_length": 48},
    ),
    Case(
        "beta-huge",
        "beta 10 (100 x sane): the KL penalty outweighs the reward",
        {"beta": 10.0},
        cure={"beta": 0.1},
    ),
    Case(
        "beta-zero",
        "beta 0: no reference model, no KL term (on this task entropy falls to ~0.3 x its start)",
        {"beta": 0.0},
        cure={"beta": 0.1},
    ),
    Case(
        "reward-nan",
        "the reward function returns NaN from step 120",
        reward="nan_from",
        reward_step=120,
    ),
    Case(
        "reward-raise", "the reward function raises at step 100", reward="raise_at", reward_step=100
    ),
    # Second magnitudes of the knobs the advice touches, and causes of other kinds.
    Case(
        "lr-low10",
        "learning_rate 5e-4 (0.1 x sane)",
        {"learning_rate": 5e-4},
        cure={"learning_rate": 5e-3},
    ),
    Case(
        "lr-low1000",
        "learning_rate 5e-6 (1e-3 x sane)",
        {"learning_rate": 5e-6},
        cure={"learning_rate": 5e-3},
    ),
    Case(
        "lr-high",
        "learning_rate 0.05 (10 x sane), gradients clipped at norm 1",
        {"learning_rate": 0.05},
        cure={"learning_rate": 5e-3},
    ),
    Case("beta-high", "beta 1 (10 x sane)", {"beta": 1.0}, cure={"beta": 0.1}),
    Case(
        "gen-two",
        "num_generations 2: groups of two (8 prompts a step, 16 completions)",
        {"num_generations": 2, "per_device_train_batch_size": 16},
        cure={"num_generations": 8, "per_device_train_batch_size": 64},
    ),
    Case(
        "cap-short",
        "max_completion_length 4: about 3 in 4 random completions cut",
        {"max_completion_length": 4},
        cure={"max_completion_length": 48},
    ),
    Case(
        "temp-low",
        "temperature 0.1: near-greedy sampling, a group's answers alike",
        {"temperature": 0.1},
        cure={"temperature": 1.0},
    ),
    # Healthy variants: other settings inside the healthy band, other losses.
    Case(
        "gspo",
        "GSPO: importance_sampling_level sequence",
        {"importance_sampling_level": "sequence"},
        healthy=True,
    ),
    Case(
        "loss-grpo", "loss_type grpo (per-sequence token mean)", {"loss_type": "grpo"}, healthy=True
    ),
    Case("lr-half", "learning_rate 2.5e-3 (0.5 x sane)", {"learning_rate": 2.5e-3}, healthy=True),
    Case("beta-half", "beta 0.05 (0.5 x sane)", {"beta": 0.05}, healthy=True),
    Case("temp-07", "temperature 0.7", {"temperature": 0.7}, healthy=True),
)
BY_NAME = {c.name: c for c in CASES}


# ----------------------------------------------------------------------------- the task


EOS_ID = VOCAB.index("<eos>")


def target_of(prompt: str) -> str:
    """The digit a prompt `d =` asks for."""
    return prompt.split()[0]


def copy_reward(prompt: str, completion_ids: list[int]) -> float:
    """0 for a completion cut at the cap (no end token: no answer), 1.0 for one whose first
    token is the prompt's digit, 0.1 for any other finished, non-empty completion. The tokens
    after the first are free, like a reasoning chain the reward does not read."""
    if EOS_ID not in completion_ids or completion_ids[0] == EOS_ID:
        return 0.0
    return 1.0 if VOCAB[completion_ids[0]] == target_of(prompt) else 0.1


def make_reward(case: Case) -> Callable[..., list[float]]:
    """The reward function of a case (TRL passes `completion_ids` and `trainer_state`)."""

    def copy_digit(
        prompts: list[str], completions: list[str], completion_ids: list[list[int]], **kw: Any
    ) -> list[float]:
        step = int(getattr(kw.get("trainer_state"), "global_step", 0) or 0)
        if case.reward_step is not None and step >= case.reward_step:
            if case.reward == "raise_at":
                raise ValueError(f"reward service returned HTTP 500 at step {step}")
            if case.reward == "nan_from":
                return [float("nan")] * len(prompts)
        return [copy_reward(p, ids) for p, ids in zip(prompts, completion_ids, strict=True)]

    return copy_digit


def build_tokenizer() -> Any:
    """A word-level tokenizer over the task's 13 symbols, built in memory."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({s: i for i, s in enumerate(VOCAB)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    fast.padding_side = "left"
    return fast


def build_model(tokenizer: Any, seed: int = SEED) -> Any:
    """A 2-layer Qwen2 of hidden size 64 with random weights (seeded)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=len(VOCAB),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def build_datasets(n_train: int, n_eval: int = 32, seed: int = SEED) -> tuple[Any, Any]:
    import random

    from datasets import Dataset

    rng = random.Random(seed)
    train = [{"prompt": f"{rng.choice(DIGITS)} ="} for _ in range(n_train)]
    evals = [{"prompt": f"{DIGITS[i % 10]} ="} for i in range(n_eval)]
    return Dataset.from_list(train), Dataset.from_list(evals)


# ----------------------------------------------------------------------------- one run


def settings_of(
    case: Case,
    sets: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    seed: int | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The GRPOConfig arguments a run trains with (without output_dir), and what was said
    about them: the base settings and the case's overrides, or the `config` file's own
    arguments when one is given; then `sets`, which win over both; then the seed."""
    said: list[str] = []
    settings = dict(config) if config is not None else {**BASE, **case.overrides}
    for key, value in (sets or {}).items():
        if config is None and key in case.overrides and case.overrides[key] != value:
            said.append(
                f"--set {key}={value!r} replaces the case's own {key}={case.overrides[key]!r}"
            )
        settings[key] = value
    if seed is not None:
        settings["seed"] = seed
    settings.setdefault("seed", SEED)
    settings.pop("output_dir", None)
    return settings, said


def run_case(case: Case, out_dir: Path, settings: dict[str, Any]) -> None:
    """Train one case in this process with `settings` (settings_of), writing into `out_dir`."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from trl import GRPOConfig, GRPOTrainer

    from advisor.integrations.transformers import AdvisorCallback, reporting

    settings = {**settings, "output_dir": str(out_dir)}
    seed = int(settings["seed"])
    prompts_per_step = settings["per_device_train_batch_size"] // settings["num_generations"]
    train, evals = build_datasets(settings["max_steps"] * prompts_per_step, seed=seed)
    tokenizer = build_tokenizer()
    # TRL builds the reference model from the policy's path: save the random model locally
    # (outside the output dir: no weights in the fixtures) and hand GRPOTrainer that path;
    # the folder goes when the run ends, however it ends.
    model_dir = Path(tempfile.mkdtemp(prefix="livefire-model-"))
    try:
        build_model(tokenizer, seed).save_pretrained(model_dir)
        tokenizer.save_pretrained(model_dir)
        trainer = GRPOTrainer(
            model=str(model_dir),
            reward_funcs=make_reward(case),
            args=GRPOConfig(**settings),
            train_dataset=train,
            eval_dataset=evals,
            processing_class=tokenizer,
            callbacks=[AdvisorCallback()],
        )
        with reporting(trainer):  # docs/online.md: a run that raises still gets its report
            trainer.train()
        trainer.save_state()  # output_dir/trainer_state.json, as a finished run leaves it
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)


REPORTS = ("rl-advisor-report.md", "rl-advisor-report.json")


def replay_reports(run_dir: Path, out_dir: Path) -> Path:
    """The reports AdvisorCallback writes for the run recorded in `run_dir`, by today's code,
    into `out_dir`: its trainer_state.json log replayed through the callback as the Trainer
    called it, with the arguments the run had (its rl-advisor-run.json). No training."""
    from types import SimpleNamespace

    from advisor.integrations.transformers import RUN_FILE, AdvisorCallback

    known = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    settings = {**known["training_arguments"], "output_dir": str(out_dir)}
    args = SimpleNamespace(**settings)
    entries = json.loads((run_dir / "trainer_state.json").read_text(encoding="utf-8"))[
        "log_history"
    ]
    cb = AdvisorCallback()
    state = SimpleNamespace(
        max_steps=settings["max_steps"], global_step=0, is_world_process_zero=True
    )
    cb.on_train_begin(args, state, SimpleNamespace(should_training_stop=False))
    for i, entry in enumerate(entries):
        if "train_runtime" in entry:
            continue
        state.global_step = entry["step"]
        nxt = entries[i + 1] if i + 1 < len(entries) else {}
        evaluates = nxt.get("step") == entry["step"] and any(k.startswith("eval_") for k in nxt)
        control = SimpleNamespace(
            should_evaluate=evaluates and "loss" in entry, should_training_stop=False
        )
        cb.on_log(args, state, control, logs={k: v for k, v in entry.items() if k != "step"})
        if any(k.startswith("eval_") for k in entry):
            cb.on_evaluate(args, state, control)
    cb.on_train_end(args, state, SimpleNamespace(should_training_stop=False))
    return out_dir / REPORTS[0]


def refresh(run_dir: Path) -> bool:
    """Rewrite the callback's reports (and plots) recorded in `run_dir` as today's code writes
    them; False (nothing touched) for a run that left no trainer_state.json (a crash)."""
    if not (run_dir / "trainer_state.json").is_file():
        return False
    with tempfile.TemporaryDirectory(prefix="livefire-refresh-") as tmp:
        replay_reports(run_dir, Path(tmp))
        for old in run_dir.glob("report-*.png"):
            old.unlink()
        for made in Path(tmp).iterdir():
            if made.name in REPORTS or (made.name.startswith("report-") and made.suffix == ".png"):
                shutil.copyfile(made, run_dir / made.name)
    return True


def _clear(out_dir: Path) -> None:
    """Empty a case directory but for the hand-written label."""
    if not out_dir.exists():
        return
    for p in sorted(out_dir.rglob("*"), reverse=True):
        if p.relative_to(out_dir).parts[0] in KEEP:
            continue
        p.unlink() if p.is_file() or p.is_symlink() else p.rmdir()


def spawn(
    case: Case,
    out_dir: Path,
    sets: Sequence[str] = (),
    seed: int | None = None,
    config: Path | None = None,
) -> tuple[int, float]:
    """Run one case in a child process, its console captured as `train.log`."""
    _clear(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, __file__, "--child", case.name, "--out", str(out_dir)]
    for kv in sets:
        cmd += ["--set", kv]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    if config is not None:
        cmd += ["--config", str(config)]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
    }
    t0 = time.monotonic()
    with open(out_dir / "train.log", "wb") as log:
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    return rc, time.monotonic() - t0


def _parse_set(kv: str) -> tuple[str, Any]:
    key, sep, raw = kv.partition("=")
    if not sep or not key:
        raise SystemExit(f"live_fire.py: --set {kv!r}: expected KEY=VALUE")
    try:
        return key, json.loads(raw)
    except ValueError:
        return key, raw


def read_config(path: Path) -> dict[str, Any]:
    """A `trl grpo --config` YAML as a mapping (exit 2 with one line when it is not one)."""
    from ruamel.yaml import YAML, YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    except (OSError, YAMLError, UnicodeDecodeError) as err:
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        what = getattr(err, "problem", None) or str(err).strip().splitlines()[0]
        print(f"live_fire.py: --config {path}{where}: not a readable YAML file ({what})",
              file=sys.stderr)  # fmt: skip
        raise SystemExit(2) from None
    if not isinstance(data, dict):
        print(
            f"live_fire.py: --config {path}: expected a mapping of GRPOConfig arguments",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return {str(k): v for k, v in data.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=sorted(BY_NAME), help="Only these cases.")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Parent of the case dirs.")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Change a setting (JSON value); wins over the case's own value.",
    )
    ap.add_argument(
        "--seed",
        type=int,
        default=None,
        help=f"Seed of the weights, prompts and training (default {SEED}, or the config's seed).",
    )
    ap.add_argument(
        "--config",
        type=Path,
        default=None,
        help="Train from this trl grpo --config YAML instead of the case's settings.",
    )
    ap.add_argument(
        "--refresh",
        nargs="+",
        type=Path,
        metavar="RUN_DIR",
        help="Rewrite the callback's reports in these recorded runs as today's code writes "
        "them (no training).",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)  # internal: train one case here
    ns = ap.parse_args(argv)
    if ns.refresh:
        for d in ns.refresh:
            said = "refreshed" if refresh(d) else "skipped (no trainer_state.json: a crash)"
            print(f"{d}: {said}")
        return 0
    sets = dict(_parse_set(kv) for kv in ns.set)
    config = read_config(ns.config) if ns.config is not None else None
    if ns.child:
        settings, _ = settings_of(BY_NAME[ns.child], sets, config, ns.seed)
        run_case(BY_NAME[ns.child], ns.out, settings)
        return 0
    config_path = ns.config.resolve() if ns.config is not None else None
    for name in ns.case or [c.name for c in CASES]:
        _, said = settings_of(BY_NAME[name], sets, config, ns.seed)
        for line in said:
            print(f"{name}: {line}", flush=True)
        rc, secs = spawn(BY_NAME[name], ns.out / name, ns.set, ns.seed, config_path)
        print(f"{name}: exit {rc}, {secs:.0f} s -> {ns.out / name}", flush=True)
        if BY_NAME[name].reward != "raise_at" and rc != 0:
            print(f"{name}: failed unexpectedly; see {ns.out / name / 'train.log'}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
