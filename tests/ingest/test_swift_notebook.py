"""ms-swift console dicts, transformers' notebook metrics table, and what a missing value means.

The fixtures hold the 4-step run of test_formats.py (reward 0.1..0.4, entropy 1.0..0.7,
grad_norm 0.5..0.8, response length 100..130, validation 0.25 at step 2 and 0.45 at step 4):
`swift_console.log` as `swift rlhf --rlhf_type grpo` prints it, `swift_pasted.txt` its dicts
pasted without braces, `notebook_table.{md,txt,html}` the notebook table as GitHub pastes it,
as a browser copies it (tabs) and as transformers renders it.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.ingest import load_run
from advisor.ingest.notebook import table_key
from advisor.integrations.follow import metrics_of
from advisor.types import InputError

FIX = Path(__file__).parent / "fixtures"
EXPECTED = {
    "reward_mean": [0.1, 0.2, 0.3, 0.4],
    "entropy": [1.0, 0.9, 0.8, 0.7],
    "grad_norm": [0.5, 0.6, 0.7, 0.8],
    "response_length": [100.0, 110.0, 120.0, 130.0],
    "kl_ref": [0.0012] * 4,
    "loss": [0.0123] * 4,
}
# fixture -> (format, raw columns that must be kept)
CASES = {
    "swift_console.log": ("swift-console", ("entropy/mean", "memory(GiB)", "train_speed(iter/s)")),
    "swift_pasted.txt": ("swift-console", ("entropy/mean", "rewards/AccuracyORM/mean")),
    "notebook_table.md": ("notebook-table", ("completions/mean_length", "eval_reward_std")),
    "notebook_table.txt": ("notebook-table", ("rewards/accuracy_reward/mean", "eval_loss")),
    "notebook_table.html": ("notebook-table", ("completions/mean_length", "eval_reward")),
}  # fmt: skip
SWIFT_STEP = (
    "{{'loss': 0.01, 'grad_norm': 0.5, 'learning_rate': 1e-06, 'reward': {reward}, "
    "'reward_std': 0.3, 'kl': {kl}, 'epoch': 0.1, 'global_step/max_steps': '{step}/40', "
    "'percentage': '2.50%', 'elapsed_time': '31s', 'remaining_time': '20m 9s', "
    "'memory(GiB)': 41.2, 'train_speed(iter/s)': 0.032}}"
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("name", sorted(CASES))
def test_reads_the_run_and_keeps_the_originals(name: str) -> None:
    fmt, originals = CASES[name]
    run = load_run(FIX / name)
    assert run.format == fmt
    assert run.frame["step"].to_list() == [1, 2, 3, 4]
    for col, values in EXPECTED.items():
        assert run.frame[col].to_list() == pytest.approx(values), col
    assert run.frame["val_reward"].to_list()[1::2] == pytest.approx([0.25, 0.45])
    assert run.frame["val_reward"].to_list()[0::2] == [None, None]
    for raw in originals:
        assert raw in run.frame.columns, raw
    assert run.warnings == []
    assert run.config_hints["eval_steps"] == 2


def test_swift_step_and_total_come_from_its_progress_field() -> None:
    run = load_run(FIX / "swift_console.log")
    assert run.config_hints["max_steps"] == 4
    assert run.ending is not None and run.ending.kind == "completed" and run.ending.step == 4
    assert "global_step/max_steps" not in run.frame.columns  # text: its numbers are the step


def test_swift_dicts_number_themselves_wherever_they_start(tmp_path: Path) -> None:
    # a resumed run: no progress bar, steps from 21; logging every 5 steps
    lines = [SWIFT_STEP.format(step=s, reward=s / 100, kl=0.001) for s in (25, 30, 35)]
    run = load_run(_write(tmp_path, "swift.log", "\n".join(lines) + "\n"))
    assert run.format == "swift-console"
    assert run.frame["step"].to_list() == [25, 30, 35]
    assert run.config_hints["max_steps"] == 40
    assert not any("do not print the step" in w for w in run.warnings)


def test_swift_megatron_iteration_field_numbers_the_step(tmp_path: Path) -> None:
    line = (
        "{'loss': 0.02, 'grad_norm': 0.4, 'reward': 0.5, 'learning_rate': 1e-06, "
        "'iteration': '{n}/100', 'elapsed_time': '1m', 'remaining_time': '9m', "
        "'memory(GiB)': 50.1, 'train_speed(s/it)': 6.1}"
    )
    text = "\n".join(line.replace("{n}", str(n)) for n in (1, 2, 3)) + "\n"
    run = load_run(_write(tmp_path, "megatron.log", text))
    assert run.format == "swift-console"
    assert run.frame["step"].to_list() == [1, 2, 3]


def test_swift_follower_numbers_lines_as_the_reader() -> None:
    lines = (FIX / "swift_console.log").read_text(encoding="utf-8").splitlines()
    records = metrics_of(lines)
    assert [s for s, _ in records][:3] == [1, 2, 2]
    assert records[0][1]["entropy/mean"] == pytest.approx(1.0)


def test_unrelated_quoted_pairs_are_no_metrics(tmp_path: Path) -> None:
    text = "the dict keys were 'a': 1, 'b': 2, 'c': 3 in my script\n'name': 'x', 'model': 'y'\n"
    with pytest.raises(InputError, match="expected training metrics"):
        load_run(_write(tmp_path, "prose.txt", text))


@pytest.mark.parametrize(
    ("title", "key"),
    [
        ("Training Loss", "loss"),
        ("Validation Loss", "eval_loss"),
        ("Reward", "eval_reward"),
        ("Reward Std", "eval_reward_std"),
        ("Completions/mean Length", "eval_completions/mean_length"),
        ("completions / clipped_ratio", "completions/clipped_ratio"),
        ("rewards / format_reward / mean", "rewards/format_reward/mean"),
        ("reward_std", "reward_std"),
        ("kl", "kl"),
    ],
)
def test_table_titles_map_back_to_keys(title: str, key: str) -> None:
    assert table_key(title) == key


def test_table_no_log_is_null_and_nan_is_nan(tmp_path: Path) -> None:
    text = (
        "| Step | Training Loss | reward | kl | entropy |\n"
        "|---:|---:|---:|---:|---:|\n"
        "| 10 | -0.283600 | 13.437500 | nan | 0 |\n"
        "| 20 | -0.149100 | 6.931818 | nan | No Log |\n"
        "| 30 | -0.110500 | 6.250000 | inf | No Log |\n"
    )
    run = load_run(_write(tmp_path, "t.md", text))
    assert run.format == "notebook-table"
    assert run.frame["step"].to_list() == [10, 20, 30]
    kl = run.frame["kl_ref"].to_list()
    assert math.isnan(kl[0]) and math.isnan(kl[1]) and kl[2] == math.inf
    assert run.frame["entropy"].to_list() == [0.0, None, None]
    assert run.config_hints["logging_steps"] == 10


def test_table_aligned_with_spaces(tmp_path: Path) -> None:
    text = (
        "Step  Training Loss  Validation Loss  Reward\n"
        "5     0.120000       No Log           No Log\n"
        "10    0.110000       0.300000         0.510000\n"
    )
    run = load_run(_write(tmp_path, "t.txt", text))
    assert run.frame["loss"].to_list() == pytest.approx([0.12, 0.11])
    assert run.frame["val_reward"].to_list() == [None, pytest.approx(0.51)]


def test_table_counted_in_epochs_says_so(tmp_path: Path) -> None:
    text = "Epoch | Training Loss | Validation Loss\n-- | -- | --\n1 | 0.5 | 0.6\n2 | 0.4 | 0.55\n"
    run = load_run(_write(tmp_path, "t.md", text))
    assert run.frame["step"].to_list() == [1, 2]
    assert any("epochs" in w for w in run.warnings)


def test_two_pastes_of_one_table_are_merged_and_a_cut_end_dropped(tmp_path: Path) -> None:
    text = (
        "Step | Training Loss | reward\n-- | -- | --\n1 | 0.1 | 1.0\n2 | 0.2 | 2.0\n\n"
        "Step | Training Loss | reward | kl\n-- | -- | -- | --\n1 | 0.1 | 1.0 | 0.01\n2 | 0.2 | 2."
    )
    run = load_run(_write(tmp_path, "t.md", text))
    assert run.frame["step"].to_list() == [1, 2]
    assert run.frame["reward_mean"].to_list() == pytest.approx([1.0, 2.0])
    assert run.frame["kl_ref"].to_list() == [pytest.approx(0.01), None]
    assert any(":9: a table row is cut short" in w for w in run.warnings)


def test_table_without_numbers_is_a_clear_error(tmp_path: Path) -> None:
    text = "| Step | Description |\n|---|---|\n| 1 | load the model |\n| 2 | train |\n"
    with pytest.raises(InputError, match=r"t\.md: a metrics table .* no number"):
        load_run(_write(tmp_path, "t.md", text))


# --- missing values: a value that stands for NaN is NaN, an absent key stays absent ---------


def test_trl_console_none_and_nan_strings_are_nan(tmp_path: Path) -> None:
    # transformers >= 5 prints floats as strings; a metric TRL averaged to None prints None
    lines = [
        "{'loss': '0.01', 'grad_norm': '0.5', 'learning_rate': '1e-06', 'reward': '0.1', "
        "'kl': '0.001', 'epoch': '0.1'}",
        "{'loss': '0.01', 'grad_norm': 'nan', 'learning_rate': '1e-06', 'reward': None, "
        "'kl': 'nan', 'epoch': '0.2'}",
        "{'loss': '0.01', 'grad_norm': '0.5', 'learning_rate': '1e-06', 'reward': 'None', "
        "'epoch': None}",
    ]
    run = load_run(_write(tmp_path, "trl.log", "\n".join(lines) + "\n"))
    reward = run.frame["reward_mean"].to_list()
    assert reward[0] == pytest.approx(0.1) and math.isnan(reward[1]) and math.isnan(reward[2])
    assert math.isnan(run.frame["grad_norm"][1])
    kl = run.frame["kl_ref"].to_list()
    assert math.isnan(kl[1]) and kl[2] is None  # not printed at step 3: absent, not NaN
    assert run.frame["epoch"].to_list()[2] is None  # a counter's None is no evidence


def test_swift_none_is_nan(tmp_path: Path) -> None:
    text = SWIFT_STEP.format(step=5, reward="None", kl="0.0") + "\n"
    run = load_run(_write(tmp_path, "swift.log", text))
    assert math.isnan(run.frame["reward_mean"][0])


def test_dict_console_and_roll_nulls_are_nan(tmp_path: Path) -> None:
    openrlhf = "Global step 1: {'reward': None, 'kl': 0.01, 'policy_loss': 0.2}\n"
    run = load_run(_write(tmp_path, "o.log", openrlhf))
    assert math.isnan(run.frame["reward_mean"][0])
    roll = 'metrics_tag: {"step": 1, "metrics": {"critic/score/mean": null, "actor/kl_loss": 1}}\n'
    run = load_run(_write(tmp_path, "r.log", roll))
    assert math.isnan(run.frame["reward_mean"][0])


def _state(entries: list[dict[str, object]]) -> str:
    return json.dumps({"global_step": 30, "max_steps": 30, "log_history": entries})


def test_trainer_state_null_of_a_present_key_is_nan(tmp_path: Path) -> None:
    entries = [
        {"loss": 0.1, "grad_norm": 0.5, "reward": 0.2, "kl": 0.01, "epoch": 0.1, "step": 10},
        {"loss": 0.1, "grad_norm": None, "reward": None, "kl": float("nan"), "epoch": None,
         "step": 20},
        # num_iterations > 1: an entry with only the optimisation keys (reward, kl absent)
        {"loss": 0.1, "grad_norm": 0.4, "learning_rate": 1e-6, "epoch": 0.3, "step": 30},
    ]  # fmt: skip
    run = load_run(_write(tmp_path, "trainer_state.json", _state(entries)))
    reward, kl, grad = (run.frame[c].to_list() for c in ("reward_mean", "kl_ref", "grad_norm"))
    assert reward[0] == pytest.approx(0.2) and math.isnan(reward[1]) and reward[2] is None
    assert math.isnan(kl[1]) and kl[2] is None
    assert math.isnan(grad[1]) and grad[2] == pytest.approx(0.4)
    assert run.frame["epoch"].to_list()[1] is None


def test_log_history_list_null_is_nan_and_null_step_is_numbered(tmp_path: Path) -> None:
    entries = [{"reward": 0.1, "step": 1}, {"reward": None, "step": None}]
    run = load_run(_write(tmp_path, "history.json", json.dumps(entries)))
    assert run.frame["step"].to_list() == [1, 2]
    assert math.isnan(run.frame["reward_mean"][1])


def test_jsonl_null_stays_null(tmp_path: Path) -> None:
    text = '{"step": 1, "reward": 0.1, "kl": 0.01}\n{"step": 2, "reward": null, "kl": 0.01}\n'
    run = load_run(_write(tmp_path, "m.jsonl", text))
    assert run.frame["reward_mean"].to_list() == [pytest.approx(0.1), None]


# --- mutated input: only InputError ------------------------------------------------------


def _mutate(data: str, drop: int, cuts: list[int], junk: str) -> str:
    lines = data.split("\n")
    if drop < len(lines):
        del lines[drop]
    text = "\n".join(lines)
    for c in sorted(cuts, reverse=True):
        c %= max(1, len(text))
        text = text[:c] + junk + text[c + len(junk) // 2 :]
    return text


_JUNK = st.sampled_from(
    ["", "|", " | ", "\t", "No Log", "nan", "None", "'", "': ", "{", "}", "<td>", "</tr>",
     "'global_step/max_steps': '9/3'", "/", "-- | --", "\n", "Step | Training Loss\n", "é\x00"]
)  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(sorted(CASES)),
    drop=st.integers(min_value=0, max_value=40),
    cuts=st.lists(st.integers(min_value=0, max_value=6000), max_size=5),
    junk=_JUNK,
)
def test_mutated_fixtures_raise_only_input_error(
    tmp_path: Path, name: str, drop: int, cuts: list[int], junk: str
) -> None:
    text = _mutate((FIX / name).read_text(encoding="utf-8"), drop, cuts, junk)
    p = tmp_path / ("m_" + name)
    p.write_text(text, encoding="utf-8")
    try:
        run = load_run(p)
    except InputError as err:
        assert "\n" not in str(err) and str(p) in str(err)
        return
    assert run.frame["step"].is_sorted() and run.frame["step"].n_unique() == run.frame.height


_CELL = st.one_of(
    st.sampled_from(["No Log", "No log", "nan", "-nan", "inf", "", "0", "1e-06", "x", "|"]),
    st.floats(allow_nan=True).map(repr),
    st.text(max_size=6),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sep=st.sampled_from([" | ", "\t", "  "]),
    titles=st.lists(
        st.sampled_from(["Training Loss", "reward", "kl", "Reward", "a / b", "x"]),
        min_size=1,
        max_size=5,
    ),
    rows=st.lists(
        st.tuples(st.integers(min_value=-3, max_value=10**12), st.lists(_CELL, max_size=6)),
        max_size=6,
    ),
)
def test_generated_tables_raise_only_input_error(
    tmp_path: Path, sep: str, titles: list[str], rows: list[tuple[int, list[str]]]
) -> None:
    lines = [sep.join(["Step", *titles])]
    lines += [sep.join([str(step), *cells]) for step, cells in rows]
    p = _write(tmp_path, "table.txt", "\n".join(lines))
    with contextlib.suppress(InputError):
        run = load_run(p)
        assert run.frame["step"].is_sorted()


def test_the_rest_of_a_wrapped_dict_is_no_braceless_dict(tmp_path: Path) -> None:
    # a terminal wrapped one TRL dict over two lines: the second starts mid-pair, so it is no
    # braceless dict of its own; joined to the first piece it is the whole second dict
    text = (
        "{'loss': 0.0, 'grad_norm': 0.5, 'reward': 0.1, 'epoch': 0.1}\n"
        "{'loss': 0.0, 'grad_norm': 0.4, 'completions/max_terminated_length\n"
        "': 578.0, 'rewards/a/mean': 0.0, 'reward': -4.875, 'reward_std': 3.3, 'epoch': 0.2}\n"
    )
    run = load_run(_write(tmp_path, "trl.log", text))
    assert run.frame["reward_mean"].to_list() == pytest.approx([0.1, -4.875])
    assert any(":2: 1 metric record(s) broken" in w for w in run.warnings)
