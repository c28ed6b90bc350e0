"""`diagnose --previous` through the real entry point: repeated, each kind of earlier run it
accepts (job file, run directory, rl-advisor-run.json, a JSON report), and refusals.

The run diagnosed is the live-fire range's lr-tiny (a real TRL run at lr 5e-7 that did not
move: KL ~ 1e-6); `--set learning_rate=...` stands for the rounds that followed it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.cli import main

RUN = Path(__file__).resolve().parents[1] / "livefire" / "runs" / "lr-tiny"


def diagnose(capsys, *args: str) -> tuple[int, dict]:
    code = main(["diagnose", str(RUN), "--format", "json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def lr_change(d: dict) -> dict:
    (c,) = [c for c in d["patch"]["changes"] if c["param"] == "learning_rate"]
    return c


def test_first_round_is_sized_from_the_kl_the_run_made(capsys) -> None:
    _, d = diagnose(capsys)
    c = lr_change(d)
    assert c["from"] == 5e-7 and c["to"] >= 4.5e-5  # x~100, not x1.5
    assert "kl_ref_median" in c["note"]
    assert d["history"] == []


def test_repeated_previous_escalates_the_same_knob(tmp_path, capsys) -> None:
    trl = "num_generations: 8\nmax_completion_length: 48\nper_device_train_batch_size: 64\n"
    r0 = tmp_path / "r0.yaml"  # `trl grpo --config` files, as the TRL callback writes them
    r0.write_text(f"learning_rate: 5.0e-7\nbeta: 0.1\n{trl}")
    r1 = tmp_path / "r1.yaml"
    r1.write_text(f"learning_rate: 5.0e-5\nbeta: 0.01\n{trl}")  # a fallback round: beta
    code, d = diagnose(
        capsys, "--set", "learning_rate=5e-5", "--set", "beta=0.01",
        "--previous", str(r0), "--previous", str(r1),
    )  # fmt: skip
    assert code == 1
    c = lr_change(d)
    assert c["to"] == pytest.approx(5e-3) and "escalated" in c["note"]
    assert [h["source"] for h in d["history"]] == [str(r0), str(r1)]
    assert d["history"][0]["hyper_parameters"] == {"learning_rate": 5e-7, "kl_loss_coef": 0.1}
    assert d["history"][1]["hyper_parameters"] == {}  # the run at hand's settings


def test_a_run_directory_and_its_report_are_a_round(tmp_path, capsys) -> None:
    """The round-0 folder: its rl-advisor-run.json gives the settings, its JSON report what
    was advised (a raise: 5e-7 is too low), which brackets the next cut."""
    folder = tmp_path / "round0"
    folder.mkdir()
    shutil.copy(RUN / "rl-advisor-run.json", folder)
    _, d0 = diagnose(capsys)
    (folder / "rl-advisor-report.json").write_text(json.dumps(d0))
    _, d = diagnose(capsys, "--set", "learning_rate=5e-5", "--previous", str(folder))
    (h,) = d["history"]
    assert h["advised"] == {"learning_rate": "raise"} and h["healthy"] is False
    assert h["hyper_parameters"]["learning_rate"] == 5e-7


def test_the_run_record_alone_is_read_without_defaults(capsys) -> None:
    _, d = diagnose(
        capsys, "--set", "learning_rate=5e-5", "--previous", str(RUN / "rl-advisor-run.json")
    )
    (h,) = d["history"]
    # what the record holds, never a platform default (save_steps 100, lr 2e-6)
    assert h["hyper_parameters"] == {"learning_rate": 5e-7}


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p / "missing.yaml", "no such file"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "without a job file"),
        (lambda p: (p / "x.json").write_text("{not json") and p / "x.json", "not valid JSON"),
        (lambda p: (p / "y.json").write_text('{"a": 1}') and p / "y.json", "neither"),
        (lambda p: (p / "z.yaml").write_text("foo: 1\n") and p / "z.yaml", "z.yaml"),
        (
            lambda p: (p / "r.json").write_text('{"hints": {"foo": 1}}') and p / "r.json",
            "no hyperparameter",
        ),
    ],
)
def test_unreadable_previous_exits_2_with_one_line(tmp_path, capsys, make, expected) -> None:
    bad = make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["diagnose", str(RUN), "--previous", str(bad), "--format", "json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    err = captured.err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert "--previous" in err and str(bad.name) in err and expected in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(allow_nan=True),
    st.text(max_size=8), st.lists(st.integers(), max_size=3),
)  # fmt: skip
_KEYS = st.sampled_from(
    ["learning_rate", "kl_loss_coef", "n_rollouts", "beta", "foo", "status", "patch"]
)


@settings(max_examples=150, deadline=None)
@given(
    shape=st.sampled_from(["hints", "report", "plain"]),
    body=st.dictionaries(_KEYS, _VALUES, max_size=5),
)
def test_a_previous_record_is_read_or_refused_in_one_line(tmp_path_factory, shape, body) -> None:
    """Any JSON an earlier run's record may hold: a Round of guide settings only, or an
    InputError naming the file; never another exception, never a default."""
    from advisor.history import read_round
    from advisor.static import rulebook
    from advisor.types import InputError

    doc: dict = {"plain": body, "hints": {"hints": body}}.get(shape) or {
        "schema_version": 1, "status": "issues", "hyper_parameters": body,
        "patch": {"changes": [{"param": "learning_rate", "from": 1e-6, "to": 2e-6}]},
    }  # fmt: skip
    path = tmp_path_factory.mktemp("prev") / "rl-advisor-run.json"
    path.write_text(json.dumps(doc))
    try:
        r = read_round(path)
    except InputError as err:
        assert str(path) in str(err) and "\n" not in str(err)
        return
    assert r.hp and set(r.hp) <= set(rulebook().hyper_parameters)
    assert all(r.hp[k] == body[k] for k in r.hp)


def test_near_greedy_sampling_patches_the_temperature(tmp_path, capsys) -> None:
    """A `trl grpo --config` file sampling at 0.1: the patch written from it raises the
    temperature (a TRL setting, no guide hyperparameter) and the ready flag says so."""
    job = tmp_path / "job.yaml"
    job.write_text(
        "learning_rate: 5.0e-7\nbeta: 0.1\nnum_generations: 8\nmax_completion_length: 48\n"
        "per_device_train_batch_size: 64\ntemperature: 0.1\n"
    )
    patched = tmp_path / "next.yaml"
    code = main([
        "diagnose", str(RUN), "--config", str(job), "--patched-config", str(patched),
        "--format", "json",
    ])  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert code == 1
    (c,) = d["patch"]["changes"]
    assert (c["param"], c["from"], c["to"], c["assumed"]) == ("temperature", 0.1, 1.0, False)
    assert d["patch"]["override_args"] == "--temperature 1"
    text = patched.read_text()
    assert "temperature: 1.0" in text and "learning_rate: 5.0e-7" in text
