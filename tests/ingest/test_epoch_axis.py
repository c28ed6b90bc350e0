"""Logs whose records print an epoch and no step keep epochs as their axis: the records are
numbered 1..N in order (what the detectors work on) and the report and JSON speak in epochs.
The shapes: TRL console dicts without a progress bar (and PPOTrainer's without `episode`),
JSON / JSONL / CSV records with `epoch` and no step field, a notebook table headed `Epoch`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from epoch_logs import collapse_log
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.ingest import load_run


def _dicts(epochs: list[float]) -> str:
    return "".join(
        f"{{'loss': 0.01, 'grad_norm': 0.5, 'reward': 0.{i % 9 + 1}, 'epoch': {e}}}\n"
        for i, e in enumerate(epochs)
    )


def test_trl_dicts_without_a_step_keep_their_epochs(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text(_dicts([0.25, 0.5, 0.75, 1.0]))
    run = load_run(p)
    assert run.frame["step"].to_list() == [1, 2, 3, 4]  # the detectors' axis: the records
    assert run.epochs == {1: 0.25, 2: 0.5, 3: 0.75, 4: 1.0}
    assert run.info().to_dict()["axis"] == {
        "unit": "epoch",
        "epochs": {"1": 0.25, "2": 0.5, "3": 0.75, "4": 1.0},
    }


def test_ppo_trainer_dicts_without_episode_count_epochs(tmp_path: Path) -> None:
    p = tmp_path / "ppo.log"
    p.write_text(
        "".join(
            f"{{'objective/kl': 0.{i}, 'objective/scores': 1.{i}, 'policy/entropy_avg': 0.9, "
            f"'loss/policy_avg': -0.01, 'lr': 1e-05, 'epoch': {i / 10}}}\n"
            for i in range(1, 6)
        )
    )
    run = load_run(p)
    assert run.epochs == {i: i / 10 for i in range(1, 6)}


def test_a_log_with_steps_says_nothing_of_an_axis(tmp_path: Path) -> None:
    p = tmp_path / "train.jsonl"
    p.write_text(
        "".join(json.dumps({"step": s, "reward": 0.1, "epoch": s / 4}) + "\n" for s in range(1, 6))
    )
    run = load_run(p)
    assert run.epochs is None
    assert "axis" not in run.info().to_dict()  # the contract's run block as it was


def test_jsonl_csv_and_trainer_state_records_without_a_step(tmp_path: Path) -> None:
    want = {i: i / 4 for i in range(1, 9)}
    jl = tmp_path / "m.jsonl"
    jl.write_text(
        "".join(
            json.dumps({"loss": 0.1, "reward": 0.1 * i, "epoch": i / 4}) + "\n" for i in range(1, 9)
        )
    )
    csv = tmp_path / "m.csv"
    csv.write_text("epoch,loss,reward\n" + "".join(f"{i / 4},0.1,{0.1 * i}\n" for i in range(1, 9)))
    state = tmp_path / "trainer_state.json"
    state.write_text(
        json.dumps(
            {"log_history": [{"loss": 0.1, "reward": 0.1 * i, "epoch": i / 4} for i in range(1, 9)]}
        )
    )
    for p in (jl, csv, state):
        assert load_run(p).epochs == want, p.name


def test_a_notebook_table_headed_epoch_is_said_in_epochs(tmp_path: Path) -> None:
    p = tmp_path / "nb.md"
    p.write_text(
        "| Epoch | Training Loss | Validation Loss |\n|---|---|---|\n"
        + "".join(f"| {i} | 0.{i} | 0.{i + 1} |\n" for i in range(1, 6))
    )
    assert load_run(p).epochs == {i: float(i) for i in range(1, 6)}


def test_epochs_that_do_not_rise_leave_the_steps_alone(tmp_path: Path) -> None:
    # two runs pasted one after the other: epochs 0.5, 1.0, then 0.5, 1.0 again
    p = tmp_path / "train.log"
    p.write_text(_dicts([0.5, 1.0, 0.5, 1.0]))
    run = load_run(p)
    assert run.epochs is None and "axis" not in run.info().to_dict()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=400), min_size=2, max_size=30))
def test_every_record_maps_to_the_epoch_it_printed(gaps: list[int]) -> None:
    import tempfile

    epochs, e = [], 0
    for g in gaps:  # rising epochs, some equal steps apart and some not
        e += g
        epochs.append(round(e / 100, 2))
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "train.log"
        p.write_text(_dicts(epochs))
        run = load_run(p)
    assert run.frame["step"].to_list() == list(range(1, len(epochs) + 1))
    assert run.epochs == {i + 1: e for i, e in enumerate(epochs)}


def test_diagnose_says_onsets_in_epochs_through_the_entry_point(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    collapse_log(p)
    cmd = [sys.executable, "-m", "advisor", "diagnose", str(p), "--fail-on", "never"]
    out = subprocess.run([*cmd, "--format", "json"], capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    assert d["run"]["axis"]["unit"] == "epoch" and d["run"]["axis"]["epochs"]["40"] == 1.0
    p4 = next(f for f in d["findings"] if f["id"] == "P4")
    assert p4["onset_epoch"] == d["run"]["axis"]["epochs"][str(p4["onset_step"])]
    md = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert f"onset at epoch {p4['onset_epoch']:g} (record {p4['onset_step']})" in md
    assert "the log counts epochs, not steps" in md
    assert "epoch" not in d["unread_keys"]  # read: it is the axis
    html = subprocess.run([*cmd, "--format", "html"], capture_output=True, text=True, check=True)
    assert f"onset at epoch {p4['onset_epoch']:g} (record {p4['onset_step']})" in html.stdout
    assert list(tmp_path.iterdir()) == [p]  # nothing left beside the input
