"""Early verl (late 2024) validates under `test_score/<data>` outside its loop and under
`val/test_score/<data>` inside it: the shape of the maintainers' GSM8K PPO baselines
(eric-haibin-lin/verl-data, full_labels.yaml), written small here."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.ingest import load_run

_RAY = "\x1b[36m(main_task pid=54569)\x1b[0m "


def _step(s: int, val: float | None = None) -> str:
    tail = f" - val/test_score/openai/gsm8k:{val:.3f}" if val is not None else ""
    return (
        f"{_RAY}step:{s} - timing/gen:17.455 - critic/kl:0.{s:03d} - critic/kl_coeff:0.001 - "
        f"actor/entropy_loss:0.{500 - s:03d} - actor/pg_loss:-0.011 - actor/grad_norm:2.2 - "
        f"critic/score/mean:0.{100 + s:03d} - response_length/mean:270.5{tail}\n"
    )


def test_validation_outside_the_loop_joins_the_loop_s_series(tmp_path: Path) -> None:
    lines = [f"{_RAY}\"Initial validation metrics: {{'test_score/openai/gsm8k': 0.0007}}\"\n"]
    lines.append(f"{_RAY}step:0 - test_score/openai/gsm8k:0.001\n")  # gemma's: a step line
    lines += [_step(s, 0.1 * (s // 10) if s % 10 == 9 else None) for s in range(0, 40)]
    lines.append(f"{_RAY}\"Final validation metrics: {{'test_score/openai/gsm8k': 0.5686}}\"\n")
    p = tmp_path / "train.log"
    p.write_text("".join(lines))
    run = load_run(p)
    assert run.frame["step"].to_list() == list(range(40))
    assert not [w for w in run.warnings if "appear twice" in w]  # no restart, no resume
    assert "test_score/openai/gsm8k" not in run.frame.columns
    val = dict(zip(run.frame["step"], run.frame["val_reward"], strict=True))
    assert val[0] is not None and val[39] == 0.5686 and val[19] == 0.1
    assert run.ending is not None and run.ending.kind == "completed"


def _dump(prefix: str) -> list[str]:
    return [
        f"{prefix}{{'actor_rollout_ref': {{'actor': {{'clip_ratio': 0.2,\n",
        f"{prefix}                                 'optim': {{'lr': 1e-06}},\n",
        f"{prefix}                                 'ppo_mini_batch_size': 64}}}},\n",
        f"{prefix} 'algorithm': {{'adv_estimator': 'gae',\n",
        f"{prefix}               'kl_ctrl': {{'kl_coef': 0.001, 'type': 'fixed'}}}},\n",
        f"{prefix} 'data': {{'train_batch_size': 256}},\n",
        f"{prefix} 'trainer': {{'experiment_name': 'gemma2b_function_rm',\n",
        f"{prefix}             'test_freq': 10,\n",
        f"{prefix}             'total_epochs': 15}}}}\n",
    ]


def test_a_config_dump_outlives_other_writers_lines(tmp_path: Path) -> None:
    # the shape of the maintainers' resp256 baseline: a not-yet-named process's "(pid=N) "
    # prefix glued to the end of a dump line, its own line next; and a wrapper's unprefixed
    # lines between the dump's (the gemma-2 baseline's "commit:" and blank lines)
    lines = _dump(_RAY)
    lines[6] = lines[6].rstrip("\n") + "\x1b[36m(pid=934604)\x1b[0m \n"
    lines.insert(7, "\x1b[36m(pid=934604)\x1b[0m libgomp: Invalid value for OMP_NUM_THREADS\n")
    lines.insert(3, "commit:\n\n\n")
    lines += [_step(s) for s in range(1, 31)]
    p = tmp_path / "train.log"
    p.write_text("".join(lines))
    hints = load_run(p).config_hints
    assert hints["learning_rate"] == 1e-06 and hints["adv_estimator"] == "gae"
    assert hints["n_epochs"] == 15 and hints["eval_steps"] == 10


def test_the_rate_in_units_of_1e4_is_read_as_the_learning_rate(tmp_path: Path) -> None:
    """The same baselines print `actor/lr(1e-4):0.010` for a learning rate of 1e-6."""
    p = tmp_path / "train.log"
    p.write_text("".join(_step(s).replace(" - timing", " - actor/lr(1e-4):0.010 - timing")
                         for s in range(0, 30)))  # fmt: skip
    run = load_run(p)
    assert run.frame["lr"].to_list() == pytest.approx([1e-6] * 30, rel=1e-12)
    assert "actor/lr(1e-4)" in run.frame.columns  # the printed key stays, as every key does
