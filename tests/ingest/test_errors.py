"""Bad input: a one-line InputError naming the file, or a warning; never a traceback."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.ingest import load_run
from advisor.types import InputError

FIX = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "empty file"),
        (b"\n\n   \n", "empty file"),
        (bytes(range(256)) * 8, "binary"),
        (b"hello world\nnothing to see here\n", "expected training metrics"),
        (b'{"a": 1,\n "b": [1, 2\n', "expected a JSON document"),
        (b'{"model": "x", "seed": 1}', "without per-step metrics"),
        (b"step,reward\n", "expected metric rows"),
        (b"a,b\n1,2\n", "expected training metrics|step column"),
    ],
)
def test_unusable_files_give_one_clear_line(tmp_path: Path, content: bytes, match: str) -> None:
    p = tmp_path / "m.txt"
    p.write_bytes(content)
    with pytest.raises(InputError, match=match) as err:
        load_run(p)
    assert str(p) in str(err.value) and "\n" not in str(err.value)


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_run(tmp_path / "nope.log")
    (tmp_path / "notes.txt").write_text("nothing here\n")
    with pytest.raises(InputError, match="found none readable"):
        load_run(tmp_path)


def test_non_utf8_bytes_are_replaced_with_a_warning(tmp_path: Path) -> None:
    text = (FIX / "verl_console.log").read_bytes().replace(b"Loading", b"Load\xff\xfeing")
    p = tmp_path / "bad.log"
    p.write_bytes(text)
    run = load_run(p)
    assert run.steps == 4
    assert any("not UTF-8" in w for w in run.warnings)


def test_truncated_last_jsonl_line_is_dropped_with_a_warning(tmp_path: Path) -> None:
    text = (FIX / "verl_file_logger.jsonl").read_text()
    p = tmp_path / "cut.jsonl"
    p.write_text(text + '{"step": 5, "data": {"critic/rewards/mean": 0.')
    run = load_run(p)
    assert run.steps == 4
    assert any("cut off" in w for w in run.warnings)


def test_truncated_last_verl_line_keeps_the_complete_pairs(tmp_path: Path) -> None:
    p = tmp_path / "cut.log"
    p.write_text(
        "\n".join(
            [
                "step:1 - critic/rewards/mean:0.1 - actor/entropy:0.5",
                "step:2 - critic/rewards/mean:0.2 - actor/entropy:0.",
            ]
        )
    )
    run = load_run(p)
    assert run.frame["reward_mean"].to_list() == pytest.approx([0.1, 0.2])


def test_nan_and_inf_are_kept(tmp_path: Path) -> None:
    p = tmp_path / "nan.log"
    p.write_text(
        "\n".join(
            [
                "step:1 - actor/grad_norm:nan - actor/kl_loss:inf",
                "step:2 - actor/grad_norm:1.0 - actor/kl_loss:-inf",
            ]
        )
    )
    run = load_run(p)
    g, k = run.frame["grad_norm"].to_list(), run.frame["kl_ref"].to_list()
    assert g[0] != g[0] and g[1] == 1.0
    assert k == [float("inf"), float("-inf")]


def test_resumed_run_keeps_later_values_and_says_so(tmp_path: Path) -> None:
    lines = [f"step:{s} - critic/rewards/mean:0.{s % 10}" for s in range(1, 121)]
    lines += [f"step:{s} - critic/rewards/mean:0.9" for s in range(101, 131)]
    p = tmp_path / "resumed.log"
    p.write_text("\n".join(lines) + "\n")
    run = load_run(p)
    assert run.steps == 130
    assert run.frame.filter(run.frame["step"] == 110)["reward_mean"].item() == 0.9
    assert run.frame.filter(run.frame["step"] == 100)["reward_mean"].item() == 0.0
    assert any(
        "steps 101-120 appear twice" in w and "resumed at step 100" in w for w in run.warnings
    )


def test_restarted_counter_is_reported(tmp_path: Path) -> None:
    rows = [{"step": s, "reward": 0.1} for s in (1, 2, 3)] + [
        {"step": s, "reward": 0.5} for s in (1, 2)
    ]
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = load_run(p)
    # a restart from scratch: the earlier attempt is dropped from step 1 on, not mixed in
    assert run.frame["reward_mean"].to_list() == [0.5, 0.5]
    assert any("restarted" in w for w in run.warnings)


def test_resume_that_ends_before_the_first_attempt_drops_the_abandoned_steps(
    tmp_path: Path,
) -> None:
    lines = [f"step:{s} - critic/rewards/mean:0.1" for s in range(1, 121)]
    lines += ["step:110 - val-core/x/reward/mean@1:0.7"]  # validation of the first attempt
    lines += [f"step:{s} - critic/rewards/mean:0.9" for s in range(101, 111)]
    p = tmp_path / "resumed.log"
    p.write_text("\n".join(lines) + "\n")
    run = load_run(p)
    # the trainer went back to step 100: the first attempt's 101..120 are gone
    assert run.frame["step"].to_list() == list(range(1, 111))
    assert run.frame["reward_mean"].to_list()[-10:] == [0.9] * 10
    assert run.frame["val_reward"].drop_nulls().len() == 0


def test_validation_line_at_same_step_is_merged_silently(tmp_path: Path) -> None:
    p = tmp_path / "v.log"
    p.write_text(
        "\n".join(
            [
                "step:0 - val/test_score/gsm8k:0.1",
                "step:1 - critic/rewards/mean:0.2",
                "step:1 - val-core/gsm8k/reward/mean@1:0.3",
            ]
        )
    )
    run = load_run(p)
    assert run.frame["step"].to_list() == [0, 1]
    assert run.frame["val_reward"].to_list() == pytest.approx([0.1, 0.3])
    assert run.warnings == []


_FIXTURES = sorted(p.name for p in FIX.iterdir())


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(_FIXTURES),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=4),
    junk=st.binary(max_size=40),
    drop_line=st.integers(min_value=0, max_value=60),
)
def test_mangled_files_never_raise_anything_but_input_error(
    tmp_path: Path, name: str, cuts: list[int], junk: bytes, drop_line: int
) -> None:
    data = (FIX / name).read_bytes()
    lines = data.split(b"\n")
    if drop_line < len(lines):
        del lines[drop_line]
    data = b"\n".join(lines)
    for c in sorted(cuts, reverse=True):
        c %= max(1, len(data))
        data = data[:c] + junk + data[c + len(junk) // 2 :]
    p = tmp_path / ("m_" + name)
    p.write_bytes(data)
    try:
        run = load_run(p)
    except InputError as err:
        assert "\n" not in str(err)
        return
    assert run.frame["step"].is_sorted()
    assert run.frame["step"].n_unique() == run.frame.height


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=300))
def test_arbitrary_text_never_raises_anything_but_input_error(tmp_path: Path, text: str) -> None:
    p = tmp_path / "t.log"
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    with contextlib.suppress(InputError):
        load_run(p)


@pytest.mark.parametrize(
    ("tail", "kind", "message"),
    [
        (
            "(TaskRunner pid=7) Traceback (most recent call last):\n"
            '(TaskRunner pid=7)   File "x.py", line 1, in <module>\n'
            "(TaskRunner pid=7) torch.OutOfMemoryError: CUDA out of memory. Tried 2 GiB\n",
            "oom",
            "torch.OutOfMemoryError",
        ),
        (
            "[rank3]: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n",
            "nccl",
            "NCCL",
        ),
        ("bash: line 1: 4242 Killed python3 -m verl.trainer.main_ppo\n", "killed", "Killed"),
        ("Traceback (most recent call last):\nValueError: bad batch\n", "traceback", "ValueError"),
        ("Job 'raysubmit_1' failed\n", "failed", "failed"),
    ],
)
def test_run_endings(tmp_path: Path, tail: str, kind: str, message: str) -> None:
    p = tmp_path / "end.log"
    p.write_text(
        "(TaskRunner pid=7) step:1 - critic/score/mean:0.1\n"
        "(WorkerDict pid=8) CUDA out of memory warning, retrying\n"
        "(TaskRunner pid=7) step:2 - critic/score/mean:0.2\n" + tail
    )
    ending = load_run(p).ending
    assert ending is not None and ending.kind == kind and ending.step == 2
    assert message in ending.message and ending.line is not None and ending.line > 3
