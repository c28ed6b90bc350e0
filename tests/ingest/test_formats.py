"""Every format reads the same 4-step run to the same canonical values.

The fixtures (tests/ingest/fixtures/) hold one run: reward 0.1..0.4, entropy 1.0..0.7,
grad_norm 0.5..0.8, response length 100..130, validation 0.25 at step 2 and 0.45 at step 4.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from advisor.ingest import load_run

FIX = Path(__file__).parent / "fixtures"
REWARD = [0.1, 0.2, 0.3, 0.4]
ENTROPY = [1.0, 0.9, 0.8, 0.7]
GRAD = [0.5, 0.6, 0.7, 0.8]
LENGTH = [100.0, 110.0, 120.0, 130.0]

ALL4 = ("reward_mean", "entropy", "grad_norm", "response_length")
STEPS = [1, 2, 3, 4]
# file -> (format, steps, canonical columns checked, has validation)
CASES = {
    "verl_console.log": ("verl-console", STEPS, ALL4, True),
    "verl_file_logger.jsonl": ("verl-jsonl", STEPS, ALL4, True),
    "flat.jsonl": ("jsonl", STEPS, ALL4, True),
    "wandb_history.csv": ("wandb-csv", STEPS, ALL4, True),
    "wandb_chart.csv": ("wandb-chart-csv", [1, 2, 3, 4], ("reward_mean",), False),
    "trainer_state.json": ("trl-state", STEPS, ALL4, True),
    "trl_console.log": ("trl-console", [2, 4, 6, 8], ALL4, True),
    "openrlhf.log": ("dict-console", STEPS, ALL4, False),
    "slime.log": ("dict-console", STEPS, ALL4, False),
    "roll.log": ("roll-console", STEPS, ("reward_mean", "grad_norm", "response_length"), False),
}  # fmt: skip
EXPECTED = {
    "reward_mean": REWARD,
    "entropy": ENTROPY,
    "grad_norm": GRAD,
    "response_length": LENGTH,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_format_reads_canonical_values(name: str) -> None:
    fmt, steps, columns, has_val = CASES[name]
    run = load_run(FIX / name)
    assert run.format == fmt
    assert run.frame["step"].dtype == pl.Int64
    assert run.frame["step"].to_list() == steps
    for col in columns:
        assert run.frame[col].dtype == pl.Float64
        assert run.frame[col].to_list() == pytest.approx(EXPECTED[col]), col
    if has_val:
        val = run.frame["val_reward"].to_list()
        assert val[1] == pytest.approx(0.25) and val[3] == pytest.approx(0.45)
        assert val[0] is None and val[2] is None


def test_originals_are_kept_under_their_own_names() -> None:
    run = load_run(FIX / "verl_console.log")
    for raw in ("actor/entropy", "critic/score/mean", "timing_s/step", "actor/grad_norm"):
        assert raw in run.frame.columns
    # canonical columns come first, after step
    assert run.frame.columns[0] == "step" and run.frame.columns[1] == "reward_mean"


def test_verl_console_config_hints_and_ending() -> None:
    run = load_run(FIX / "verl_console.log")
    assert run.config_hints["eval_steps"] == 2
    assert run.config_hints["n_rollouts"] == 8
    assert run.config_hints["algorithm"] == "grpo"
    assert run.config_hints["learning_rate"] == 1e-6
    assert run.config_hints["max_length"] == 512 + 1024
    assert run.config_hints["batch_size"] == 32
    assert run.ending is not None and run.ending.kind == "completed"
    assert run.ending.step == 4


def test_trl_state_hints() -> None:
    run = load_run(FIX / "trainer_state.json")
    assert run.config_hints["eval_steps"] == 2
    assert run.config_hints["logging_steps"] == 1
    assert run.ending is not None and run.ending.kind == "completed"


def test_trl_console_steps_from_progress_bar() -> None:
    run = load_run(FIX / "trl_console.log")
    assert run.config_hints["logging_steps"] == 2
    assert any("do not print the step" in w for w in run.warnings)
    assert run.ending is not None and run.ending.kind == "completed" and run.ending.step == 8


def test_nan_token_is_kept_as_nan() -> None:
    run = load_run(FIX / "log_history.json")
    g = run.frame["grad_norm"].to_list()
    assert math.isnan(g[0]) and g[1:] == pytest.approx(GRAD[1:])


def test_roll_truncation_count_becomes_rate_and_zero_entropy_missing() -> None:
    run = load_run(FIX / "roll.log")
    assert run.frame["truncation_rate"].to_list() == pytest.approx([2 / 16, 4 / 16, 6 / 16, 8 / 16])
    assert run.frame["entropy"].to_list()[:3] == pytest.approx(ENTROPY[:3])
    assert run.frame["entropy"].to_list()[3] is None


def test_wandb_chart_keeps_min_max_columns() -> None:
    run = load_run(FIX / "wandb_chart.csv")
    assert "run-7 - critic/rewards/mean__MIN" in run.frame.columns


def test_parquet(tmp_path: Path) -> None:
    p = tmp_path / "m.parquet"
    pl.DataFrame({"step": [3, 1, 2], "actor/entropy": [0.8, 1.0, 0.9]}).write_parquet(p)
    run = load_run(p)
    assert run.format == "parquet"
    assert run.frame["step"].to_list() == [1, 2, 3]
    assert run.frame["entropy"].to_list() == pytest.approx([1.0, 0.9, 0.8])


def test_mlflow_run_folder(tmp_path: Path) -> None:
    run_dir = tmp_path / "mlruns" / "0" / "abc123"
    (run_dir / "metrics" / "critic" / "rewards").mkdir(parents=True)
    (run_dir / "metrics" / "val-core" / "gsm8k" / "reward").mkdir(parents=True)
    (run_dir / "params").mkdir()
    (run_dir / "meta.yaml").write_text("run_id: abc123\nstatus: 3\n")
    lines = "".join(f"{1700000000 + s} {r} {s}\n" for s, r in zip(range(1, 5), REWARD, strict=True))
    (run_dir / "metrics" / "critic" / "rewards" / "mean").write_text(lines)
    (run_dir / "metrics" / "val-core" / "gsm8k" / "reward" / "mean_at_1").write_text(
        "1700000002 0.25 2\n1700000004 0.45 4\n"
    )
    (run_dir / "params" / "trainer.test_freq").write_text("2")
    for target in (run_dir, tmp_path / "mlruns", run_dir / "metrics"):
        run = load_run(target)
        assert run.format == "mlflow"
        assert run.frame["reward_mean"].to_list() == pytest.approx(REWARD)
        assert run.frame["val_reward"].to_list()[1] == pytest.approx(0.25)
        assert run.config_hints["eval_steps"] == 2
        assert run.ending is not None and run.ending.kind == "completed"


def test_trl_output_dir_uses_newest_checkpoint(tmp_path: Path) -> None:
    state = json.loads((FIX / "trainer_state.json").read_text())
    for n, keep in ((2, 2), (4, 4)):
        d = tmp_path / f"checkpoint-{n}"
        d.mkdir()
        part = dict(state, log_history=[e for e in state["log_history"] if e["step"] <= keep])
        (d / "trainer_state.json").write_text(json.dumps(part))
    (tmp_path / "README.md").write_text("# a model card, no metrics\n")
    run = load_run(tmp_path)
    assert run.frame["step"].to_list() == [1, 2, 3, 4]
    assert any("checkpoint-4" in w for w in run.warnings)


def test_verl_jsonl_key_first_seen_late_is_not_lost(tmp_path: Path) -> None:
    p = tmp_path / "late.jsonl"
    rows = [{"step": s, "data": {"critic/rewards/mean": 0.1}} for s in range(1, 301)]
    rows[250]["data"]["val-core/x/reward/mean@4"] = 0.7
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = load_run(p)
    assert run.steps == 300
    assert run.frame.filter(pl.col("step") == 251)["val_reward"].item() == pytest.approx(0.7)


def test_verl_v05_numpy_values_crlf_and_validation_dicts() -> None:
    run = load_run(FIX / "verl_v05_crlf.log")
    assert run.frame["step"].to_list() == [0, 1, 2, 3]
    assert run.frame["reward_mean"].to_list()[1:] == pytest.approx([0.1, 0.2, 0.3])
    assert run.frame["lr"].to_list()[1:] == pytest.approx([1e-6] * 3)  # full precision: kept
    # "Initial validation metrics" at step 0, "Final validation metrics" at the last step
    assert run.frame["val_reward"].to_list() == pytest.approx([0.12, None, None, 0.3])
    # verl's fit() prints the final validation at its last step and returns: the run completed
    assert run.ending is not None and run.ending.kind == "completed" and run.ending.step == 3


def test_trl_tty_log_steps_from_bar_and_eval_merged() -> None:
    run = load_run(FIX / "trl_tty.log")
    assert run.frame["step"].to_list() == [10, 20, 30]
    assert run.frame["val_reward"].to_list() == [None, 0.5, None]
    assert run.frame["kl_ref"].to_list() == pytest.approx([0.001] * 3)
    assert len(run.warnings) == 1  # the derived-step note, no false "resumed" warning
    assert run.ending is not None and run.ending.kind == "completed" and run.ending.step == 30


def test_folder_search_goes_into_subfolders(tmp_path: Path) -> None:
    logs = tmp_path / "wandb" / "run-20250101_000000-abc" / "files"
    logs.mkdir(parents=True)
    (logs / "output.log").write_bytes((FIX / "verl_console.log").read_bytes())
    (tmp_path / "notes.txt").write_text("no metrics here\n")
    run = load_run(tmp_path)
    assert run.steps == 4 and run.format == "verl-console"


def test_tsv_and_ray_dedup_suffix(tmp_path: Path) -> None:
    tsv = tmp_path / "m.tsv"
    tsv.write_text("step\treward\tentropy\n1\t0.1\t1.0\n2\t0.2\t0.9\n")
    assert load_run(tsv).frame["reward_mean"].to_list() == pytest.approx([0.1, 0.2])
    log = tmp_path / "ray.log"
    log.write_text(
        "(TaskRunner pid=1) step:1 - critic/score/mean:0.5 [repeated 2x across cluster]\n"
        "(TaskRunner pid=1) step:2 - critic/score/mean:0.6\n"
    )
    assert load_run(log).frame["reward_mean"].to_list() == pytest.approx([0.5, 0.6])


R2 = "critic/score/mean:0.2\n"


@pytest.mark.parametrize(
    ("name", "text", "steps"),
    [
        ("logger.log", "INFO:a:step:1 - critic/score/mean:0.1\nINFO:a:step:2 - " + R2, [1, 2]),
        ("issue.md", "```\n`step:1 - critic/score/mean:0.1`\n> step:2 - " + R2 + "```\n", [1, 2]),
        ("cols.json", '{"step": [1, 2], "critic/score/mean": [0.1, 0.2]}', [1, 2]),
        ("nostep.csv", "critic/score/mean,actor/entropy\n0.1,1.0\n0.2,0.9\n", [1, 2]),
    ],
)  # fmt: skip
def test_more_shapes_users_hand_over(
    tmp_path: Path, name: str, text: str, steps: list[int]
) -> None:
    p = tmp_path / name
    p.write_text(text)
    run = load_run(p)
    assert run.frame["step"].to_list() == steps
    assert run.frame["reward_mean"].to_list() == pytest.approx([0.1, 0.2])


def test_nested_jsonl_objects_become_slash_keys(tmp_path: Path) -> None:
    p = tmp_path / "nested.jsonl"
    p.write_text(
        '{"step": 1, "critic": {"score": {"mean": 0.1}}, "tags": [1]}\n'
        '{"step": 2, "critic": {"score": {"mean": 0.2}}, "tags": [2]}\n'
    )
    run = load_run(p)
    assert run.frame["reward_mean"].to_list() == pytest.approx([0.1, 0.2])
    assert "critic/score/mean" in run.frame.columns


def test_verl_hints_from_command_line_overrides(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text(
        "+ python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\\n"
        "    data.train_batch_size=128 data.max_prompt_length=1024 \\\n"
        "    data.max_response_length=2048 \\\n"
        "    actor_rollout_ref.actor.optim.lr=1e-6 actor_rollout_ref.rollout.n=5 \\\n"
        "    actor_rollout_ref.actor.ppo_mini_batch_size=128 \\\n"
        "    trainer.test_freq=5 trainer.total_epochs=2\n"
        "(TaskRunner pid=1) step:1 - critic/score/mean:0.1\n"
    )
    hints = load_run(p).config_hints
    assert hints["algorithm"] == "grpo" and hints["n_rollouts"] == 5
    assert hints["batch_size"] == 128 and hints["max_length"] == 3072
    # verl's mini-batch counts prompts (x rollout.n in its workers); the platform's, samples
    assert hints["ppo_mini_batch_size"] == 640 and hints["ppo_mini_batch_size_prompts"] == 128
    assert hints["learning_rate"] == 1e-6 and hints["eval_steps"] == 5


def test_tensorboard_csv_downloads_one_file_and_a_folder(tmp_path: Path) -> None:
    """TensorBoard's "Download CSV": the tag is only in the file name, slashes as underscores."""
    header = "Wall time,Step,Value\n"
    reward = "".join(f"{1.7e9 + s},{s},{0.1 * s}\n" for s in range(1, 11))
    kl = "".join(f"{1.7e9 + s},{s},{0.001 * s}\n" for s in range(3, 11))
    one = tmp_path / "run-grpo-tag-critic_rewards_mean.csv"
    one.write_text(header + reward, encoding="utf-8")
    run = load_run(one)
    assert run.format == "tensorboard-csv" and run.steps == 10
    assert run.frame["reward_mean"].to_list()[-1] == pytest.approx(1.0)
    (tmp_path / "run-grpo-tag-actor_ppo_kl.csv").write_text(header + kl, encoding="utf-8")
    both = load_run(tmp_path)
    assert both.steps == 10 and both.frame["step"].to_list() == list(range(1, 11))
    assert both.frame["ppo_kl"].null_count() == 2  # logged from step 3 on; missing stays null
    assert both.frame["reward_mean"].null_count() == 0


def test_slime_parts_of_one_iteration_merge_and_a_restart_is_still_one(tmp_path: Path) -> None:
    """slime prints an iteration as several dicts: rollout (reward), perf (lengths, truncation),
    step (training), eval. They make one row; the same part again for a step is a restart."""
    lines = []
    for n in range(6):
        lines += [
            f"(RolloutManager pid=2) rollout.py:455 - perf {n}: "
            f"{{'rollout/response_len/mean': {300 + n}.0, 'rollout/truncated_ratio': 0.01}}",
            f"(Actor pid=3) actor.py:301 - rollout {n}: {{'rollout/raw_reward': {0.1 * n}}}",
            f"(Actor pid=3) step {n}: {{'train/grad_norm': 0.2, 'train/kl_loss': 0.001}}",
        ]
        if n % 3 == 0:
            lines.append(
                f"rollout.py:402 - eval {n}: {{'eval/gsm8k': 0.5, "
                "'eval/gsm8k-truncated_ratio': 0.0}"
            )
    log = tmp_path / "slime.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = load_run(log)
    assert run.steps == 6 and not run.warnings
    f = run.frame
    assert f["reward_mean"].to_list() == pytest.approx([0.1 * n for n in range(6)])
    assert f["response_length"].to_list()[-1] == 305.0 and f["truncation_rate"].null_count() == 0
    assert f["val_reward"].drop_nulls().to_list() == [0.5, 0.5]  # not averaged with truncation
    resumed = tmp_path / "resumed.log"
    resumed.write_text("\n".join(lines + lines[-7:]) + "\n", encoding="utf-8")
    again = load_run(resumed)
    assert again.steps == 6 and any("twice" in w for w in again.warnings)


def test_a_superscript_digit_is_no_step_number(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "step:1 - critic/rewards/mean:0.4\nstep:\u00b2 - critic/rewards/mean:0.5\n"
        "step:2 - critic/rewards/mean:0.6\n",
        encoding="utf-8",
    )
    assert load_run(log).frame["step"].to_list() == [1, 2]


def test_verl_checkpoint_settings_become_hints() -> None:
    """save_freq -> save_steps; max_actor_ckpt_to_keep None keeps all (the largest limit)."""
    from advisor.ingest.hints import verl_hints

    keep_all = verl_hints({"trainer": {"save_freq": 10, "max_actor_ckpt_to_keep": None}})
    assert keep_all["save_steps"] == 10 and keep_all["save_total_limit"] == 200
    assert keep_all["save_strategy"] == "steps"
    assert (
        verl_hints({"trainer": {"save_freq": 5, "max_actor_ckpt_to_keep": 3}})["save_total_limit"]
        == 3
    )
    assert "save_total_limit" not in verl_hints({"trainer": {"save_freq": 5}})
