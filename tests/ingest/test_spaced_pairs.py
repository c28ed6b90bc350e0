"""Metrics pasted as `key: value` pairs, several on a line 3+ spaces apart, without a step:
each group of such lines is one step; prose with colons is not read."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.ingest import load_run
from advisor.types import InputError

FIX = Path(__file__).parent / "fixtures"


def test_groups_of_pair_lines_are_steps() -> None:
    run = load_run(FIX / "trl_spaced_pairs.txt")
    assert run.format == "pairs-console"
    assert run.frame["step"].to_list() == [1, 2, 3]
    assert run.frame["reward_mean"].to_list() == pytest.approx([0.4, 0.45, 0.375])
    assert run.frame["truncation_rate"].to_list() == pytest.approx([0.25, 0.375, 0.5])
    assert run.frame["response_length"].to_list() == pytest.approx([198.5, 211, 230.25])
    # a key that is no metric name is kept under its own name
    assert run.frame["mean_terminated_length"].to_list() == pytest.approx([150, 161, 170])
    assert "Note" not in run.frame.columns and "Time" not in run.frame.columns
    assert any("print no step" in w for w in run.warnings)


def test_a_printed_step_numbers_the_groups(tmp_path: Path) -> None:
    log = tmp_path / "metrics.txt"
    log.write_text(
        "step: 10   loss: 0.31   reward: 0.2   grad_norm: 0.5\n"
        "step: 20   loss: 0.29   reward: 0.25   grad_norm: 0.45\n"
    )
    run = load_run(log)
    assert run.frame["step"].to_list() == [10, 20]
    assert run.frame["reward_mean"].to_list() == pytest.approx([0.2, 0.25])


def test_prose_with_colons_is_no_metrics(tmp_path: Path) -> None:
    log = tmp_path / "notes.txt"
    log.write_text(
        "Summary of the run\n"
        "Status: 1   Time: 5   Node: 3\n"
        "it printed loss=0.31 and reward=0.12 at the end\n"
        "thanks\n"
    )
    with pytest.raises(InputError) as err:
        load_run(log)
    text = str(err.value)
    assert f"{log}:3: expected training metrics" in text
    assert "line 3 is the nearest: 2 key/value pair(s), 2 of them metric names" in text
    assert "\n" not in text


def test_nothing_near_names_line_one(tmp_path: Path) -> None:
    log = tmp_path / "notes.txt"
    log.write_text("hello\nnothing here\n")
    with pytest.raises(InputError, match=r"notes\.txt:1: expected training metrics"):
        load_run(log)


def test_an_argument_quoted_in_markdown_is_a_number(tmp_path: Path) -> None:
    log = tmp_path / "issue.md"
    log.write_text(
        "The config set `max_completion_length=512` and **beta=0.04**:\n\n"
        "completions/clipped_ratio: 0.5   reward: 0.1   loss: 0.01\n"
    )
    hints = load_run(log).config_hints
    assert hints["max_response_length"] == 512 and hints["kl_loss_coef"] == 0.04
