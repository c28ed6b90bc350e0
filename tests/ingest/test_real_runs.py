"""Every file of the public runs in shared/real_runs (and its full/ curves) is read: step counts as
SOURCE.md says.

CI has the shared folder at ../shared relative to the repo; the test skips cleanly without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.ingest import load_run
from advisor.types import InputError

REAL = (Path(__file__).resolve().parents[2] / ".." / "shared" / "real_runs").resolve()
if not REAL.is_dir():
    REAL = Path("/work/shared/real_runs")
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_runs not available")

# path -> (format, steps, first step, last step, canonical metrics that must be present)
EXPECTED = {
    "labelled/verl-ppo-gsm8k-dstack/verl_demo.log": (
        "verl-console", 335, 101, 435, ("reward_mean", "entropy", "val_reward", "grad_norm")),
    "labelled/verl-tinyzero-ppo-qwen05b-countdown-crash/part-of-logs.md": (
        "verl-console", 17, 383, 399, ("reward_mean", "entropy", "response_length")),
    "labelled/trl-grpo-rho-qwen25-7b-collapse-s43/train.log": (
        "trl-console", 40, 5, 200, ("reward_mean", "entropy", "truncation_rate", "zero_std_frac")),
    "labelled/trl-grpo-unsloth-llama31-8b-gsm8k/trainer_state.json": (
        "trl-state", 250, 1, 250, ("reward_mean", "kl_ref", "response_length")),
    "labelled/trl-grpo-lifelong-qwen7b-truncation-plateau/training_metrics_history.json": (
        "trl-log-history", 500, 1, 500, ("reward_mean", "entropy", "truncation_rate")),
    "unlabelled/run-a/train.log": ("trl-console", 40, 5, 200, ("reward_mean", "entropy")),
    "unlabelled/run-b/train.log": ("trl-console", 40, 5, 200, ("reward_mean", "entropy")),
    "unlabelled/run-c/step_logs.json": ("trl-log-history", 40, 5, 200, ("reward_mean", "entropy")),
    "unlabelled/run-d/trainer_state.json": ("trl-state", 25, 10, 250, ("reward_mean", "kl_ref")),
    "unlabelled/run-e/training_metrics_history.json": (
        "trl-log-history", 500, 1, 500, ("reward_mean", "entropy")),
    "unlabelled/run-f/issue_excerpt.txt": (  # step 0 is the validation before training
        "verl-console", 3, 1, 7, ("reward_mean", "kl_ref", "entropy", "val_reward")),
    # ms-swift's dict pasted without its braces: the step from 'global_step/max_steps'
    "public2/msswift-grpo-qwen3-8b-zero-grad-issue5571/issue_excerpt.txt": (
        "swift-console", 1, 5, 5, ("reward_mean", "reward_std", "kl_ref", "grad_norm",
                                   "zero_std_frac", "truncation_rate", "response_length", "lr")),
    # transformers' notebook table as GitHub pastes it (two tables, the second cut in row 2)
    "public2/trl-grpo-kl-nan-table-openr1-issue704/issue_excerpt.txt": (
        "notebook-table", 4, 1, 4, ("reward_mean", "reward_std", "kl_ref", "loss",
                                    "truncation_rate", "response_length")),
    # TRL console dicts in a Markdown fence, logged every ~10 steps (4 dicts)
    "public2/trl-grpo-qwen25vl3b-aokvqa-truncation/run_terminal.md": (
        "trl-console", 4, 10, 40, ("reward_mean", "entropy", "grad_norm", "truncation_rate")),
    # 3 dicts, the third cut after its first keys: no reward, so it is no step
    "public2/trl-grpo-tinylora-coder-clipfrac-issue4/issue_excerpt.txt": (
        "trl-console", 2, 1, 2, ("reward_mean", "entropy", "grad_norm", "truncation_rate")),
    # two Unsloth runs one after the other (20 + 27 dicts, no step in them): numbered 1..47;
    # the last dict is broken over two lines (line 626) and joined back
    "public2/trl-grpo-unsloth-qwen3-4b-nan-gradnorm/train_grpo.log": (
        "trl-console", 47, 1, 47, ("reward_mean", "grad_norm", "kl_ref", "truncation_rate")),
    # one verl step, cut before response_length/clip_ratio
    "public2/verl-grpo-resp-clip-high-issue7412/issue_excerpt.txt": (
        "verl-console", 1, 34, 34, ("reward_mean", "entropy", "grad_norm", "kl_ref")),
    # the public full curves (shared/real_runs/full, labelled in sample_metrics/full_labels.yaml)
    "full/minimind-grpo-30m-gsm8k-r1-rules/r1_main.log": (
        "minimind-console", 500, 1, 500, ('reward_mean', 'kl_ref', 'response_length')),
    "full/minimind-grpo-30m-rm-reward-flat/grpo.log": (
        "minimind-console", 9751, 1, 9751, ('reward_mean', 'kl_ref', 'response_length')),
    "full/trl-grpo-qwen25-3b-hotpotqa-kl-drift/grpo.log": (
        "trl-console", 93, 20, 1860, ('reward_mean', 'kl_ref', 'grad_norm', 'response_length')),
    "full/trl-grpo-qwen25-3b-hotpotqa-v2-sighup/grpo_v2.log": (
        "trl-console", 46, 20, 920, ('reward_mean', 'kl_ref', 'grad_norm', 'response_length')),
    "full/trl-grpo-qwen25-3b-hotpotqa-v3/grpo_v3.log": (
        "trl-console", 46, 20, 920, ('reward_mean', 'kl_ref', 'grad_norm', 'response_length')),
    "full/trl-grpo-qwen25vl3b-aokvqa-warmup-collapse/run_terminal.md": (
        "trl-console", 49, 10, 490, ('reward_mean', 'entropy', 'grad_norm', 'truncation_rate',
                                     'response_length')),
    "full/trl-grpo-qwen35-9b-gsm8k-learns-s44/train.log": (
        "trl-console", 200, 1, 200, ('reward_mean', 'kl_ref', 'grad_norm', 'response_length')),
    "full/trl-grpo-qwen35-9b-gsm8k-one-step-spike-s43/train.log": (
        "trl-console", 200, 1, 200, ('reward_mean', 'kl_ref', 'grad_norm', 'response_length')),
    "full/trl-grpo-rho-qwen25-7b-healthy-rho3-s43/train.log": (
        "trl-console", 40, 5, 200, ('reward_mean', 'entropy', 'grad_norm', 'truncation_rate',
                                     'response_length')),
    "full/trl-grpo-rho-qwen25-7b-late-collapse-s42/train.log": (
        "trl-console", 40, 5, 200, ('reward_mean', 'entropy', 'grad_norm', 'truncation_rate',
                                     'response_length')),
    "full/trl-grpo-rho-qwen25-7b-late-truncation-rho150-s44/train.log": (
        "trl-console", 40, 5, 200, ('reward_mean', 'entropy', 'grad_norm', 'truncation_rate',
                                     'response_length')),
    "full/trl-grpo-rho-qwen25-7b-reward-collapse-rho050-s43/train.log": (
        "trl-console", 40, 5, 200, ('reward_mean', 'entropy', 'grad_norm', 'truncation_rate',
                                     'response_length')),
}  # fmt: skip
# files without per-step metrics: a clear InputError, never a traceback
NO_METRICS = {"SOURCE.md", "eval.log"}


def _all_files() -> list[str]:
    if not REAL.is_dir():
        return []
    return sorted(str(p.relative_to(REAL)) for p in REAL.rglob("*") if p.is_file())


@pytest.mark.parametrize("rel", _all_files())
def test_every_file_is_read(rel: str) -> None:
    path = REAL / rel
    if path.name in NO_METRICS:
        with pytest.raises(InputError, match=r"expected"):
            load_run(path)
        return
    assert rel in EXPECTED, f"new file in real_runs, add its expectation: {rel}"
    fmt, steps, first, last, metrics = EXPECTED[rel]
    run = load_run(path)
    info = run.info()
    assert (run.format, info.steps, info.first_step, info.last_step) == (fmt, steps, first, last)
    for m in metrics:
        assert m in run.frame.columns and run.frame[m].drop_nulls().len() > 0, m


def test_verl_dstack_validation_points_and_config() -> None:
    run = load_run(REAL / "labelled/verl-ppo-gsm8k-dstack/verl_demo.log")
    assert run.frame["val_reward"].drop_nulls().len() == 34
    assert run.config_hints["eval_steps"] == 10
    assert run.config_hints["adv_estimator"] == "gae"
    assert "algorithm" not in run.config_hints  # gae is not a platform algorithm
    assert run.config_hints["learning_rate"] == 1e-6
    # use_kl_loss: False -> the KL loss did not run, whatever kl_loss_coef says
    assert run.config_hints["kl_loss_coef"] == 0.0
    assert run.config_hints["kl_loss_coef_configured"] == 0.001
    assert run.config_hints["max_length"] == 512 + 256
    assert run.ending is not None and run.ending.kind == "completed"
    # 3-decimal log: actor/lr reads 0.000 and must not become lr = 0
    assert "lr" not in run.frame.columns


def test_tinyzero_disk_full_after_last_step() -> None:
    run = load_run(REAL / "labelled/verl-tinyzero-ppo-qwen05b-countdown-crash/part-of-logs.md")
    assert run.ending is not None
    assert run.ending.kind == "disk_full" and run.ending.step == 399
    assert "No space left on device" in run.ending.message


def test_trl_console_collapse_values() -> None:
    run = load_run(REAL / "labelled/trl-grpo-rho-qwen25-7b-collapse-s43/train.log")
    assert run.config_hints["logging_steps"] == 5
    assert run.frame["truncation_rate"].to_list()[-1] == 1.0
    assert any("do not print the step" in w for w in run.warnings)


@pytest.mark.parametrize(
    "folder", ["labelled/trl-grpo-rho-qwen25-7b-collapse-s43", "unlabelled/run-d"]
)
def test_run_folder_finds_the_metrics(folder: str) -> None:
    run = load_run(REAL / folder)
    assert run.steps in (40, 25)
