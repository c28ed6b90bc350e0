"""Shapes public full curves come in (issue 27), each on a small file written in that shape.

The files public runs were measured on live beside the labelled sets (shared/real_runs/full);
these copies keep their layout, not their bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.ingest import load_run, mostly_text
from advisor.types import InputError


def _verl_steps(n: int, start: int = 1) -> bytes:
    return b"".join(
        b"(TaskRunner pid=7) step:%d - actor/entropy:0.%d - critic/score/mean:0.%d - "
        b"actor/grad_norm:0.5 - response_length/mean:%d.0\n" % (s, 9 - s % 9, s % 9, 100 + s)
        for s in range(start, start + n)
    )


def test_stray_nul_bytes_in_a_console_log_are_replaced_and_reported(tmp_path: Path) -> None:
    # a verl console log whose device line ends in two NUL bytes (as an NPU driver prints it)
    p = tmp_path / "train.log"
    p.write_bytes(b"(WorkerDict pid=9) device: Ascend910B\x00\x00\n" + _verl_steps(30))
    run = load_run(p)
    assert run.frame["step"].to_list() == list(range(1, 31))
    assert any(f"{p}:1: NUL bytes were replaced" in w for w in run.warnings)
    assert p.read_bytes().count(b"\x00") == 2  # the input is never changed


def test_nul_inside_a_step_line_costs_that_value_only(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    lines = _verl_steps(20).split(b"\n")
    lines[4] = lines[4].replace(b"response_length/mean:105.0", b"response_length/mean:10\x005.0")
    p.write_bytes(b"\n".join(lines))
    run = load_run(p)
    assert run.steps == 20 and any("NUL bytes" in w for w in run.warnings)


def test_invalid_utf8_in_a_text_log_is_replaced_and_reported(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_bytes(b"loading \xc3\x28 shards \xff\n" + _verl_steps(12))
    run = load_run(p)
    assert run.steps == 12
    assert any("not UTF-8 were replaced" in w for w in run.warnings)


def test_binary_files_are_still_refused(tmp_path: Path) -> None:
    p = tmp_path / "model.bin"
    p.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(InputError, match="binary"):
        load_run(p)
    assert not mostly_text(b"\x00" * 10 + b"abc" * 10)
    assert mostly_text(b"abc def\n" * 200 + b"\x00\x00")


# A table of the user's own, as TRL / Unsloth users paste one into an issue: the keys one space
# apart, TRL's names shortened, rows left out with `...`.
_ELIDED_TABLE = """\
Training with max_completion_length=512:

Step loss grad_norm reward_mean clipped_ratio mean_length
1 0.0123 0.45 0.12 0.97 511.2
2 0.0101 0.41 0.10 0.98 511.6
...
10 0.0087 0.39 0.11 0.99 512.0
"""


def test_whitespace_table_with_elided_rows_reads_every_row_shown(tmp_path: Path) -> None:
    p = tmp_path / "issue.txt"
    p.write_text(_ELIDED_TABLE)
    run = load_run(p)
    assert run.frame["step"].to_list() == [1, 2, 10]
    assert run.frame["truncation_rate"].to_list() == [0.97, 0.98, 0.99]
    assert run.frame["response_length"].to_list()[-1] == 512.0
    assert run.frame["reward_mean"].to_list() == [0.12, 0.10, 0.11]
    assert any("left out ('...') after step 2" in w for w in run.warnings)
    assert "completions/clipped_ratio" in run.frame.columns  # the user's dialect: TRL's key


def test_markdown_table_with_an_elided_row(tmp_path: Path) -> None:
    p = tmp_path / "issue.md"
    p.write_text(
        "| Step | Training Loss | reward | reward_std | completion_length | kl |\n"
        "|---|---|---|---|---|---|\n"
        "| 1 | 0.000000 | 0.100000 | 0.200000 | 300.000000 | 0.000000 |\n"
        "| 2 | 0.000000 | 0.150000 | 0.210000 | 310.000000 | 0.000100 |\n"
        "| ... | ... | ... | ... | ... | ... |\n"
        "| 250 | 0.001000 | 0.900000 | 0.300000 | 180.000000 | 0.030000 |\n"
    )
    run = load_run(p)
    assert run.frame["step"].to_list() == [1, 2, 250]
    assert run.frame["kl_ref"].to_list()[-1] == pytest.approx(0.03)
    assert any("left out" in w for w in run.warnings)


def test_a_table_without_elision_says_nothing_of_it(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    p.write_text("Step loss reward_mean\n1 0.1 0.2\n2 0.1 0.3\n3 0.1 0.4\n")
    run = load_run(p)
    assert run.steps == 3 and not any("left out" in w for w in run.warnings)


def _ppo_dict(i: int, episode: int) -> str:
    # TRL PPOTrainer's console dict: no step, `episode` counts the samples trained on so far
    kl, ent, rlhf, score = 6 + 0.1 * i, 114 - i, 2 + 0.1 * i, 2.3 + 0.1 * i
    tok, epoch = 1.11 - 0.01 * i, 0.01 * i
    return (
        f"{{'eps': 1, 'objective/kl': {kl:.2f}, 'objective/entropy': {ent:.1f}, "
        f"'objective/non_score_reward': -0.34, 'objective/rlhf_reward': {rlhf:.2f}, "
        f"'objective/scores': {score:.2f}, 'policy/approxkl_avg': 0.0027, "
        "'policy/clipfrac_avg': 0.009, 'loss/policy_avg': -0.003, 'loss/value_avg': 0.34, "
        f"'val/clipfrac_avg': 0.004, 'policy/entropy_avg': {tok:.3f}, 'val/ratio': 0.96, "
        f"'val/ratio_var': 5.6e-05, 'val/num_eos_tokens': 0, 'lr': 9.2e-06, "
        f"'episode': {episode}, 'epoch': {epoch:.2f}}}"
    )


def test_trl_ppo_trainer_vocabulary_and_steps_from_episodes(tmp_path: Path) -> None:
    p = tmp_path / "ppo.log"
    p.write_text("\n".join(_ppo_dict(i, 96 + 16 * i) for i in range(6)) + "\n")
    run = load_run(p)
    assert run.frame["step"].to_list() == [6, 7, 8, 9, 10, 11]  # episode / 16
    f = run.frame
    assert f["reward_mean"][0] == pytest.approx(2.0)  # objective/rlhf_reward
    assert f["entropy"][0] == pytest.approx(1.11)  # per token, not objective/entropy (114)
    assert f["kl_ref"][0] == pytest.approx(6.0)
    assert f["ppo_kl"][0] == pytest.approx(0.0027)
    assert f["pg_clipfrac"][0] == pytest.approx(0.009)
    assert f["vf_loss"][0] == pytest.approx(0.34) and f["loss"][0] == pytest.approx(-0.003)
    assert run.config_hints["adv_estimator"] == "gae"
    assert any("episode count / 16" in w for w in run.warnings)


def test_epoch_only_dicts_say_they_count_epochs(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text(
        "".join(f"{{'loss': 0.{i}, 'grad_norm': 0.5, 'reward': 0.{i}, 'epoch': {i / 4:.2f}}}\n"
                for i in range(1, 5))
    )
    run = load_run(p)
    assert run.steps == 4
    assert any("count epochs 0.25-1.0, numbered 1-4" in w for w in run.warnings)


_OOM_EXCERPT = """\
I get this after a few minutes:

Traceback (most recent call last):
  File "train.py", line 10, in <module>
    trainer.train()
  File "/x/trl/trainer/grpo_trainer.py", line 900, in _generate
    out = model.generate(**inputs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total \
capacity of 79.15 GiB of which 1.02 GiB is free.
"""


def test_an_ending_without_any_metric_line_is_a_run_of_no_steps(tmp_path: Path) -> None:
    p = tmp_path / "issue.txt"
    p.write_text(_OOM_EXCERPT)
    run = load_run(p)
    assert run.steps == 0 and run.ending is not None and run.ending.kind == "oom"
    assert run.ending.line == 8 and "OutOfMemoryError" in (run.ending.message or "")
    assert any("no metric line, only how the run ended (oom" in w for w in run.warnings)


@pytest.mark.parametrize(
    ("tail", "kind"),
    [
        ("/bin/bash: line 1:  4242 Killed                  python train.py\n", "killed"),
        ("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n"
         "ValueError: call_one requires exactly 1 actor, but mesh has 8\n", "traceback"),
    ],
)
def test_other_endings_without_metrics(tmp_path: Path, tail: str, kind: str) -> None:
    p = tmp_path / "tail.log"
    p.write_text("loading model...\n" + tail)
    run = load_run(p)
    assert run.steps == 0 and run.ending is not None and run.ending.kind == kind


def test_the_cli_reports_the_ending_instead_of_refusing(tmp_path: Path) -> None:
    from advisor.cli import main

    p = tmp_path / "issue.txt"
    p.write_text(_OOM_EXCERPT)
    out = tmp_path / "report.json"
    assert main(["diagnose", str(p), "--format", "json", "--output", str(out)]) == 1
    import json

    data = json.loads(out.read_text())
    assert data["run"]["ending"]["kind"] == "oom" and data["run"]["steps"] == 0
    assert [f["id"] for f in data["findings"]] == ["OOM"]
    nothing = tmp_path / "chat.txt"
    nothing.write_text("hello\nno metrics and no ending here\n")
    assert main(["diagnose", str(nothing)]) == 2


def test_prose_that_tells_of_a_crash_is_no_ending(tmp_path: Path) -> None:
    p = tmp_path / "SOURCE.md"
    p.write_text(
        "# a run\n\n- The log then ends in a crash at the checkpoint save: `OSError: No space "
        "left on device`. This is an infrastructure failure.\n- The run ran out of memory "
        "once, the author says.\n"
    )
    with pytest.raises(InputError, match="expected training metrics"):
        load_run(p)


def _trl_dict(step: int) -> str:
    return (
        f"{{'loss': 0.0{step}, 'grad_norm': 0.{step + 1}, 'learning_rate': 1e-06, "
        f"'completions/mean_length': {500 + step}.0, 'completions/clipped_ratio': 0.9{step}, "
        f"'reward': 0.{step}, 'reward_std': 0.2, 'frac_reward_zero_std': 0.5, "
        f"'entropy': 0.{9 - step}, 'epoch': 0.0{step}}}"
    )


def _hard_wrap(line: str, width: int) -> list[str]:
    return [line[i : i + width] for i in range(0, len(line), width)]


def test_trl_dicts_hard_wrapped_by_a_terminal_are_joined(tmp_path: Path) -> None:
    lines: list[str] = ["Starting training"]
    for s in range(1, 6):
        lines.append(f"{s * 20}%|##        | {s}/5 [00:0{s}<00:10, 1.2s/it]")
        lines += _hard_wrap(_trl_dict(s), 97)  # 4 pieces a dict, cut mid-key and mid-number
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    run = load_run(p)
    assert run.steps == 5
    assert run.frame["loss"].to_list() == pytest.approx([0.01, 0.02, 0.03, 0.04, 0.05])
    assert run.frame["truncation_rate"].to_list()[0] == pytest.approx(0.91)
    assert any("5 metric record(s) broken over several lines" in w for w in run.warnings)


def test_a_verl_step_line_broken_mid_key_by_an_issue_tracker(tmp_path: Path) -> None:
    step3 = (
        "(TaskRunner pid=7) step:3 - actor/entropy:0.6 - actor/ppo_kl:0.0\n"
        "00 - c\n"
        "ritic/score/mean:0.3 - actor/grad_norm:0.5 - response_length/mean:103.0\n"
    )
    p = tmp_path / "issue.txt"
    p.write_bytes(_verl_steps(2) + step3.encode() + _verl_steps(3, start=4))
    run = load_run(p)
    assert run.frame["step"].to_list() == [1, 2, 3, 4, 5, 6]
    row = run.frame.filter(run.frame["step"] == 3)
    assert row["reward_mean"].to_list() == [0.3] and row["ppo_kl"].to_list() == [0.0]
    assert any(":3: 1 metric record(s) broken" in w for w in run.warnings)


def test_pieces_that_do_not_make_one_record_are_left_alone(tmp_path: Path) -> None:
    # a step line followed by a line of its own that merely looks like a piece
    p = tmp_path / "train.log"
    p.write_bytes(_verl_steps(3) + b"done - ok\n" + _verl_steps(2, start=4))
    run = load_run(p)
    assert run.steps == 5 and not any("broken over" in w for w in run.warnings)


def _kernel_log(n: int) -> str:
    """Kaggle's kernel log of a TRL run: stream records, bars redrawn with \\r and coloured,
    a dict split between two records."""
    import json

    recs: list[dict[str, object]] = [
        {"stream_name": "stderr", "time": 1.5, "data": "\x1b[34m\x1b[1mwandb\x1b[0m: disabled\n"}
    ]
    for s in range(1, n + 1):
        bar = "".join(f"\r\x1b[32m{k:3d}%|\x1b[0m{'#' * (k // 10)}| {s}/{n} [00:0{s}<00:10]"
                      for k in range(0, 101, 25))
        recs.append({"stream_name": "stderr", "time": 2.0 * s, "data": bar})
        d = _trl_dict(s % 9 + 1).replace("'epoch': ", f"'step_hint': {s}, 'epoch': ")
        cut = len(d) // 2
        recs.append({"stream_name": "stdout", "time": 2.0 * s + 0.1, "data": "\n" + d[:cut]})
        recs.append({"stream_name": "stdout", "time": 2.0 * s + 0.2, "data": d[cut:] + "\n"})
    return json.dumps(recs, indent=1)


def test_a_kaggle_kernel_log_is_read_through_its_strings(tmp_path: Path) -> None:
    p = tmp_path / "kernel.log"
    text = _kernel_log(12)
    assert text.count("[") - text.count("]") > 64  # colour codes: deep by a bracket count
    p.write_text(text)
    run = load_run(p)
    assert run.steps == 12 and run.frame["step"].to_list() == list(range(1, 13))
    assert run.frame["truncation_rate"].to_list()[0] == pytest.approx(0.92)
    assert any("notebook kernel log (37 stream records)" in w for w in run.warnings)
    assert not list(tmp_path.glob("*.log"))[1:]  # nothing left beside the input


def test_a_kernel_log_without_output_text_is_one_clear_line(tmp_path: Path) -> None:
    p = tmp_path / "kernel.json"
    p.write_text('[{"stream_name": "stdout", "time": 1.0, "data": ""}]')
    with pytest.raises(InputError, match="no output text"):
        load_run(p)


def test_minimind_step_lines(tmp_path: Path) -> None:
    p = tmp_path / "grpo.log"
    lines = ["Model Params: 30.03M", "past_key_values should not be None"]
    for e in (1, 2):
        for i in range(1, 4):
            lines.append(
                f"Epoch:[{e}/2]({i}/3), Reward: -1.{e}{i}00, KL_ref: -0.0010, Adv Std: 0.9258, "
                f"Adv Mean: -0.0000, Actor Loss: 0.0000, Avg Response Len: 27{i}.38, "
                "Learning Rate: 0.00000030"
            )
    p.write_text("\n".join(lines) + "\n")
    run = load_run(p)
    assert run.format == "minimind-console"
    assert run.frame["step"].to_list() == [1, 2, 3, 4, 5, 6]  # (epoch - 1) x 3 + i
    assert run.frame["reward_mean"].to_list()[3] == pytest.approx(-1.21)
    assert run.frame["response_length"][0] == pytest.approx(271.38)
    assert run.frame["lr"][0] == pytest.approx(3e-7) and "Adv Std" in run.frame.columns


def test_a_dict_with_the_bar_redrawn_after_it_on_its_line_is_read(tmp_path: Path) -> None:
    # nohup output: stdout's dict has no newline before stderr's bar redraws (\r ...)
    lines = []
    for s in range(1, 5):
        marks = range(20 * s - 19, 20 * s + 1)
        bars = "".join(f"\r{k}/80 [00:0{s}<00:10, 60.1s/it]" for k in marks)
        lines.append(_trl_dict(s) + bars)
    p = tmp_path / "grpo.log"
    p.write_text("\n".join(lines) + "\n")
    run = load_run(p)
    assert run.steps == 4
    assert run.frame["loss"].to_list() == pytest.approx([0.01, 0.02, 0.03, 0.04])
