"""The sidecar's line parsing and `tail -F` following (no engine needed)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.integrations.follow import (
    Follower,
    LineParser,
    parse_json_line,
    parse_payload,
    resolve_log,
)
from advisor.types import InputError


def parse_verl_line(line: str) -> tuple[int, dict[str, float | None]] | None:
    """One console line through a fresh parser (the console reader's state machine)."""
    records = LineParser().feed(line)
    assert len(records) <= 1
    return records[0] if records else None


VERL_CASES = [
    # (line, step, {key: value})
    (
        "\x1b[36m(TaskRunner pid=14640)\x1b[0m step:101 - actor/entropy_loss:0.035 - "
        "critic/rewards/mean:0.804",
        101,
        {"actor/entropy_loss": 0.035, "critic/rewards/mean": 0.804},
    ),
    (
        "(TaskRunner pid=1) step:7 - actor/lr:np.float64(1e-06) - actor/grad_norm:nan - "
        "val-core/openai/gsm8k/reward/mean@1:np.float64(0.5)",
        7,
        {"actor/lr": 1e-6, "actor/grad_norm": math.nan, "val-core/openai/gsm8k/reward/mean@1": 0.5},
    ),
    ("step:0 - val/test_score/gsm8k:0.25", 0, {"val/test_score/gsm8k": 0.25}),
    ("step:3 - timing_s/step:np.int64(12)", 3, {"timing_s/step": 12.0}),
]


@pytest.mark.parametrize(("line", "step", "expected"), VERL_CASES)
def test_verl_console_lines_parse(line: str, step: int, expected: dict[str, float]) -> None:
    hit = parse_verl_line(line)
    assert hit is not None
    assert hit[0] == step
    assert hit[1].keys() == expected.keys()
    for key, value in expected.items():
        got = hit[1][key]
        assert got is not None
        assert (math.isnan(got) and math.isnan(value)) or got == pytest.approx(value)


@pytest.mark.parametrize(
    "line",
    [
        "Janet's ducks lay 16 eggs per day.",
        "(TaskRunner pid=1) 'step': 3,",
        "Training Progress: 10%|#  | step:abc",
        "",
    ],
)
def test_other_lines_are_not_metrics(line: str) -> None:
    assert parse_verl_line(line) is None
    assert parse_json_line(line) is None


def test_jsonl_records_nested_and_flat() -> None:
    assert parse_json_line('{"step": 4, "data": {"actor/ppo_kl": 0.1, "x": NaN}}') == (
        4,
        {"actor/ppo_kl": 0.1, "x": pytest.approx(math.nan, nan_ok=True)},
    )
    assert parse_json_line('{"_step": 2, "reward": 0.5}') == (2, {"reward": 0.5})
    assert parse_json_line('{"step": true, "reward": 0.5}') is None
    assert parse_json_line('{"no_step": 1}') is None
    assert parse_json_line("[1, 2]") is None
    assert parse_json_line('{"step": 1, "broken": ') is None


@settings(max_examples=30, deadline=None)
@given(
    step=st.integers(0, 10**7),
    values=st.dictionaries(
        st.from_regex(r"[a-z_]{1,8}(/[a-z_@0-9]{1,8}){0,3}", fullmatch=True),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        min_size=1,
        max_size=8,
    ),
)
def test_verl_line_round_trip(step: int, values: dict[str, float]) -> None:
    line = f"(TaskRunner pid=9) step:{step} - " + " - ".join(
        f"{k}:{v!r}" for k, v in values.items()
    )
    hit = parse_verl_line(line)
    assert hit is not None and hit[0] == step
    assert hit[1] == pytest.approx(values)


def test_payload_values_as_the_reader_converts_them() -> None:
    got = parse_payload("a:1 - b: np.float64(2.5) - c:tensor(3.0) - d:True - :4 - e - f:nan")
    assert got.keys() == {"a", "b", "c", "d", "f"}
    assert (got["a"], got["b"], got["c"], got["d"]) == (1.0, 2.5, 3.0, None)
    assert got["f"] is not None and math.isnan(got["f"])


def test_parser_keeps_its_first_format_and_scans_endings() -> None:
    p = LineParser()
    assert p.feed('{"step": 1, "data": {"a": 1}}') == [(1, {"a": 1})]
    assert p.format == "verl-jsonl"
    assert p.ending() is None
    p.feed("Job 'raysubmit_x' succeeded")
    ending = p.ending()
    assert ending is not None and ending.kind == "completed"
    assert p.feed('{"step": 2, "data": {"a": 2}}') == [(2, {"a": 2})]
    assert p.ending() is None  # metrics came after the status line: not the end


def test_parser_reads_verl_config_dump_and_validation_dicts() -> None:
    p = LineParser()
    lines = [
        "(TaskRunner pid=1) {'actor_rollout_ref': {'actor': {'optim': {'lr': 1e-06},",
        "(TaskRunner pid=1)                                 'ppo_mini_batch_size': 64}},",
        "(TaskRunner pid=1)  'trainer': {'test_freq': 5, 'total_epochs': 2}}",
        "(TaskRunner pid=1) Initial validation metrics: {'val-core/gsm8k/reward/mean@1': 0.25}",
        "(TaskRunner pid=1) step:1 - critic/rewards/mean:0.1 - actor/lr:1e-06",
    ]
    records = [r for line in lines for r in p.feed(line)]
    assert p.hints()["eval_steps"] == 5 and p.hints()["learning_rate"] == 1e-6
    assert records == [
        (0, {"val-core/gsm8k/reward/mean@1": 0.25}),
        (1, {"critic/rewards/mean": 0.1, "actor/lr": 1e-6}),
    ]
    assert p.format == "verl-console"


def test_step_dict_lines_of_other_frameworks() -> None:
    p = LineParser()
    assert p.feed("Global step 7: {'reward': 0.5, 'kl': 0.01}") == [
        (7, {"reward": 0.5, "kl": 0.01})
    ]
    assert p.feed("{'loss': 0.1, 'reward': 0.2, 'epoch': 0.1}") == []  # TRL: no step on it


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)


def test_follower_buffers_partial_lines(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    f = Follower(log)
    assert f.poll() == []  # not there yet: waits, as tail -F does
    _append(log, "step:1 - a:1\nstep:2 - a")
    assert f.poll() == ["step:1 - a:1"]
    assert f.poll() == []
    _append(log, ":2\n")
    assert f.poll() == ["step:2 - a:2"]
    _append(log, "tail without newline")
    assert f.poll() == []
    assert f.flush_partial() == ["tail without newline"]
    f.close()


def test_follower_survives_rotation_and_truncation(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    _append(log, "one\ntwo\n")
    f = Follower(log)
    assert f.poll() == ["one", "two"]
    # rotation: the old file gets its last line, then moves away; a new file starts
    _append(log, "three\n")
    os.rename(log, tmp_path / "train.log.1")
    _append(log, "fresh\n")
    assert f.poll() == ["three", "fresh"]
    # truncation (copytruncate): same inode, smaller size -> read from the start
    with log.open("w", encoding="utf-8") as fh:
        fh.write("new\n")
    assert f.poll() == ["new"]
    f.close()


def test_resolve_log_picks_a_log_in_a_run_directory(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("x")
    with pytest.raises(InputError, match="expected a log file"):
        resolve_log(tmp_path)
    (tmp_path / "metrics.jsonl").write_text("")
    assert resolve_log(tmp_path) == tmp_path / "metrics.jsonl"
    assert resolve_log(tmp_path / "x.log") == tmp_path / "x.log"  # not yet written: waited for
    with pytest.raises(InputError, match="neither the file nor its directory"):
        resolve_log(tmp_path / "nope" / "x.log")


def _bar(n: int, total: int) -> str:
    """tqdm clearing its bar to let a log line through (what the reader counts as a mark)."""
    return f" {100 * n // total}%|##  | {n}/{total} [00:01<00:03, 1.0it/s]\r" + " " * 30 + "\r"


def test_trl_console_dicts_wait_for_their_step() -> None:
    p = LineParser()
    assert p.feed("{'loss': 0.1, 'reward': 0.2, 'epoch': 0.1}") == []  # no step known yet
    assert p.feed(_bar(5, 20)) == [(5, {"loss": 0.1, "reward": 0.2, "epoch": 0.1})]
    # an evaluation takes the step of the training log before it
    assert p.feed("{'eval_reward': 0.3, 'epoch': 0.1}") == [(5, {"eval_reward": 0.3, "epoch": 0.1})]
    assert p.feed("{'loss': 0.1, 'reward': 0.25, 'epoch': 0.2}") == []
    assert p.feed(_bar(10, 20)) == [(10, {"loss": 0.1, "reward": 0.25, "epoch": 0.2})]
    assert p.format == "trl-console"
    assert p.hints() == {"logging_steps": 5, "max_steps": 20}
    assert p.feed("{'loss': 0.1, 'reward': 0.3, 'epoch': 0.3}") == []
    # the log ends before the bar told the third entry's step: the cadence so far (3 x 5)
    assert p.finish() == [(15, {"loss": 0.1, "reward": 0.3, "epoch": 0.3})]
    assert "progress bar" in p.notes()[0]


def test_trl_console_printed_logging_steps_number_at_once() -> None:
    p = LineParser()
    p.feed("TrainingArguments(logging_steps=4, learning_rate=1e-06, num_generations=8)")
    assert p.feed("{'loss': 0.1, 'reward': 0.2}") == [(4, {"loss": 0.1, "reward": 0.2})]
    assert p.feed("{'loss': 0.1, 'reward': 0.3}") == [(8, {"loss": 0.1, "reward": 0.3})]
