"""TRL / transformers console dicts numbered by the progress bar drawn next to them, and the
bar's rate read as the step's time (step_time, kept raw as tqdm/s_per_it)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from advisor.ingest import load_run

FIX = Path(__file__).parent / "fixtures"


def test_screen_copy_dicts_take_the_bar_drawn_under_them() -> None:
    # tqdm clears its bar, writes the dict and draws the bar again under it: a copy of the
    # screen shows each dict above its own step's bar, the first one with no bar before it
    run = load_run(FIX / "trl_screen_copy.md")
    assert run.format == "trl-console"
    assert run.frame["step"].to_list() == [5, 10, 15]
    assert run.config_hints["logging_steps"] == 5
    assert run.config_hints["max_steps"] == 500
    assert any("next to each log line" in w for w in run.warnings)


def test_bar_rate_is_the_step_time_bold_or_not() -> None:
    run = load_run(FIX / "trl_screen_copy.md")
    assert run.frame["tqdm/s_per_it"].to_list() == pytest.approx([26.06, 26.10, 27.71])
    assert run.frame["step_time"].to_list() == pytest.approx([26.06, 26.10, 27.71])


def test_glued_bars_and_a_dict_before_the_bar_moved() -> None:
    # a loop printing its own dicts (stdout) while tqdm draws on stderr: each dict follows the
    # bar of the step before it, the first one comes before any position; it/s is inverted
    run = load_run(FIX / "trl_glued_bars.log")
    assert run.frame["step"].to_list() == [1, 2, 3, 4]
    loss = run.frame["loss"].to_list()
    assert math.isnan(loss[2]) and loss[3] == pytest.approx(0.41)
    times = run.frame["step_time"].to_list()
    assert times[:3] == pytest.approx([1.0, 1 / 1.2, 0.8]) and times[3] is None
    assert run.config_hints["logging_steps"] == 1


def test_rates_of_a_plain_bar_log() -> None:
    run = load_run(FIX / "trl_console.log")
    assert run.frame["step"].to_list() == [2, 4, 6, 8]
    assert run.frame["step_time"].to_list() == pytest.approx([1.0] * 4)


def test_single_dict_above_its_bar(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "{'loss': -0.0, 'grad_norm': 0.2, 'learning_rate': 2e-07, 'reward': 0.04, 'kl': 0.0, "
        "'epoch': 0.0}\n"
        "  0%|          | 1/1000 [03:10<52:50:00, 190.50s/it]\n"
    )
    run = load_run(log)
    assert run.frame["step"].to_list() == [1]
    assert run.frame["step_time"].to_list() == pytest.approx([190.5])
    assert run.config_hints["max_steps"] == 1000


def test_logged_step_time_wins_over_the_bar(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "  0%|          | 1/50 [00:20<16:20, 20.00s/it]\n"
        "{'loss': 0.1, 'reward': 0.2, 'step_time': 18.5, 'epoch': 0.02}\n"
        "  4%|▍         | 2/50 [00:40<16:00, 20.00s/it]\n"
        "{'loss': 0.1, 'reward': 0.3, 'step_time': 19.5, 'epoch': 0.04}\n"
    )
    run = load_run(log)
    assert run.frame["step"].to_list() == [1, 2]
    assert run.frame["step_time"].to_list() == pytest.approx([18.5, 19.5])
    assert run.frame["tqdm/s_per_it"].to_list() == pytest.approx([20.0, 20.0])
