"""The generator: seeded, labelled, realistic ranges, and the four file formats."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sample_metrics.generate import ACCEPTABLE, FAMILIES, SYMPTOMS, VARIANTS, make_run
from sample_metrics.writers import trl_entries, verl_rows, write_run


def test_same_seed_same_run() -> None:
    a, b = make_run("P3", 7), make_run("P3", 7)
    assert a.run_id == b.run_id
    for name in a.series:
        np.testing.assert_array_equal(a.series[name], b.series[name])


def test_different_seeds_differ() -> None:
    a, b = make_run("healthy", 0, variant="steady"), make_run("healthy", 10, variant="steady")
    assert not np.array_equal(a.series["reward_mean"][:50], b.series["reward_mean"][:50])


@pytest.mark.parametrize("family", FAMILIES)
def test_label_matches_family(family: str) -> None:
    run = make_run(family, 1)
    lab = run.label
    assert lab["symptoms"] == ([] if family == "healthy" else [family])
    assert lab["acceptable"] == list(ACCEPTABLE[family])
    assert family not in lab["acceptable"]
    if family == "healthy":
        assert lab["onset_step"] is None
    else:
        assert lab["first_step"] <= lab["onset_step"] <= lab["last_step"]


def test_every_variant_is_reachable_by_seed() -> None:
    for family, variants in VARIANTS.items():
        seen = {make_run(family, s, n_steps=200).variant for s in range(len(variants))}
        assert seen == set(variants), family


@given(family=st.sampled_from(FAMILIES), seed=st.integers(0, 10_000))
@settings(max_examples=25, deadline=None)
def test_values_stay_in_their_ranges(family: str, seed: int) -> None:
    run = make_run(family, seed, n_steps=250)
    s = run.series
    assert np.all(np.diff(run.steps) == 1)
    for name in ("reward_mean", "truncation_rate"):
        finite = s[name][np.isfinite(s[name])]
        assert finite.min() >= 0 and finite.max() <= 1, name
    assert np.all(s["entropy"] > 0)
    assert np.all(np.isfinite(run.val)) and run.val.min() >= 0 and run.val.max() <= 1
    if family != "NAN":
        for name, arr in s.items():
            assert np.all(np.isfinite(arr)), name


def test_symptom_changes_the_series_after_onset() -> None:
    # The injected symptom is visible: compare the same seed's metric before and after onset.
    p3 = make_run("P3", 2)
    o = int(np.searchsorted(p3.steps, p3.label["onset_step"]))
    assert np.median(p3.series["kl_ref"][o + 30:]) > 5 * np.median(p3.series["kl_ref"][:o])
    p4 = make_run("P4", 2)
    o = int(np.searchsorted(p4.steps, p4.label["onset_step"]))
    assert np.median(p4.series["entropy"][-20:]) < 0.15 * p4.series["entropy"][o]
    p9 = make_run("P9", 0, variant="rising")
    assert np.median(p9.series["truncation_rate"][-20:]) > 0.15


def test_p6_validation_falls_while_training_reward_rises() -> None:
    run = make_run("P6", 0)
    onset = run.label["onset_step"]
    after = run.val_steps > onset
    assert run.val[after][-1] < np.interp(onset, run.val_steps, run.val) - 0.03
    train = run.series["reward_mean"]
    assert train[-10:].mean() > train[: len(run.steps) // 2].mean()


def test_verl_has_no_trl_only_metrics_and_back() -> None:
    v = make_run("healthy", 0, framework="verl", variant="steady")
    t = make_run("healthy", 0, framework="trl", variant="steady")
    assert "zero_std_frac" not in v.series and "ppo_kl" in v.series
    assert "ppo_kl" not in t.series and "zero_std_frac" in t.series


def test_kl_absent_when_coef_zero_unless_logged_as_zero() -> None:
    trl = make_run("healthy", 0, variant="trl-no-kl")
    assert trl.hp["kl_loss_coef"] == 0 and "kl_ref" not in trl.series
    dapo = make_run("healthy", 0, variant="dapo-kl0")
    assert dapo.hp["kl_loss_coef"] == 0 and np.all(dapo.series["kl_ref"] == 0)


def _write(run, tmp_path: Path) -> tuple[Path, dict]:  # type: ignore[no-untyped-def]
    metrics = write_run(run, tmp_path / run.run_id)
    label = json.loads((tmp_path / run.run_id / "label.json").read_text())
    return metrics, label


def test_console_log_has_prefix_ansi_validation_and_ending(tmp_path: Path) -> None:
    run = make_run("OOM", 0)
    metrics, label = _write(run, tmp_path)
    text = metrics.read_text()
    assert "\x1b[36m(TaskRunner pid=" in text
    assert "step:0 - " + run.val_name in text
    assert "CUDA out of memory" in text
    assert label["metrics_file"] == "train.log"
    last = [ln for ln in text.splitlines() if " step:" in ln][-1]
    assert f"step:{label['last_step']} " in last


def test_jsonl_records(tmp_path: Path) -> None:
    run = make_run("P2", 0, fmt="verl-jsonl", framework="verl")
    metrics, _ = _write(run, tmp_path)
    recs = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert recs[0]["step"] == 0 and list(recs[0]["data"]) == [run.val_name]
    assert recs[1]["step"] == run.steps[0] and "critic/rewards/mean" in recs[1]["data"]
    assert len(recs) == len(run.steps) + 1


def test_wandb_csv_verl_and_trl(tmp_path: Path) -> None:
    v = make_run("P3", 0, fmt="wandb-csv", framework="verl")
    rows = list(csv.DictReader(_write(v, tmp_path)[0].open()))
    assert rows[1]["_step"] == str(v.steps[0]) and rows[1]["actor/kl_loss"]
    t = make_run("P3", 0, fmt="wandb-csv", framework="trl", logging_steps=5)
    rows = list(csv.DictReader(_write(t, tmp_path)[0].open()))
    train = [r for r in rows if r["train/reward"]]
    assert [int(r["train/global_step"]) for r in train[:2]] == [int(t.steps[4]), int(t.steps[9])]


def test_trl_state_averages_and_writes_nan(tmp_path: Path) -> None:
    run = make_run("NAN", 0, framework="trl", fmt="trl-state", variant="crash", logging_steps=1)
    metrics, _ = _write(run, tmp_path)
    raw = metrics.read_text()
    assert "NaN" in raw
    state = json.loads(raw)
    train = [e for e in state["log_history"] if "reward" in e]
    assert any(math.isnan(e["grad_norm"]) for e in train)
    assert state["logging_steps"] == 1
    avg = make_run("healthy", 3, framework="trl", logging_steps=10, variant="steady")
    entries = [e for e in trl_entries(avg) if "reward" in e]
    assert entries[0]["step"] == avg.steps[9]
    assert entries[0]["reward"] == pytest.approx(avg.series["reward_mean"][:10].mean())
    evals = [e for e in trl_entries(avg) if "eval_reward" in e]
    assert evals and all(e["step"] % avg.hp["eval_steps"] == 0 for e in evals)


def test_resumed_run_starts_late() -> None:
    run = make_run("healthy", 0, variant="saturated")
    steps = [s for s, _ in verl_rows(run)]
    assert steps[0] == 101 or (steps[0] > 100 and steps[1] == 101)


def test_job_yaml_carries_the_hyperparameters(tmp_path: Path) -> None:
    from ruamel.yaml import YAML

    run = make_run("P6", 1)
    _write(run, tmp_path)
    doc = YAML(typ="safe").load((tmp_path / run.run_id / "job.yaml").read_text())
    assert doc["training"]["hyper_parameters"] == run.hp
    assert run.hp["n_epochs"] >= 8  # the cause P6 points at


def test_symptom_ids_are_the_contracts() -> None:
    assert set(SYMPTOMS) == {"P1", "P2", "P3", "KL0", "P4", "SLOW", "OOM", "P9", "P6", "NAN", "DIV"}


def test_committed_corpus_is_the_generators_output(tmp_path: Path) -> None:
    # One run per family: the committed corpus must be what `generate.py --corpus` writes.
    from sample_metrics.generate import SMALL_CORPUS, corpus_knobs

    corpus = Path(__file__).resolve().parents[2] / "sample_metrics" / "corpus"
    assert len(list(corpus.glob("*/label.json"))) == (
        SMALL_CORPUS["per_family"] * len(SYMPTOMS) + SMALL_CORPUS["healthy"]
    )
    for family in FAMILIES:
        run = make_run(family, 1, **corpus_knobs(family, 1, SMALL_CORPUS["max_steps"]))
        write_run(run, tmp_path / run.run_id)
        for f in sorted((tmp_path / run.run_id).iterdir()):
            committed = corpus / run.run_id / f.name
            assert committed.read_bytes() == f.read_bytes(), f"stale: {committed}"


@given(seed=st.integers(0, 10_000), n_steps=st.integers(200, 5000))
@settings(max_examples=20, deadline=None)
def test_p6_keeps_evaluations_after_the_peak(seed: int, n_steps: int) -> None:
    run = make_run("P6", seed, n_steps=n_steps)
    assert (run.val_steps > run.label["onset_step"]).sum() >= 4


@given(family=st.sampled_from(FAMILIES), seed=st.integers(0, 10_000),
       n_steps=st.integers(100, 600), fmt=st.sampled_from(["verl-console", "verl-jsonl",
                                                             "wandb-csv", "trl-state"]))
@settings(max_examples=30, deadline=None)
def test_every_family_writes_in_every_format(tmp_path_factory: pytest.TempPathFactory,
                                             family: str, seed: int, n_steps: int,
                                             fmt: str) -> None:
    framework = "trl" if fmt == "trl-state" else "verl"
    if family in ("SLOW", "OOM") and framework == "trl":
        framework = "verl"
        fmt = "verl-console"
    run = make_run(family, seed, n_steps=n_steps, fmt=fmt, framework=framework)
    out = tmp_path_factory.mktemp("w")
    metrics = write_run(run, out / run.run_id)
    text = metrics.read_text()
    if fmt == "verl-jsonl":
        assert len([json.loads(x) for x in text.splitlines()]) >= len(run.steps)
    elif fmt == "wandb-csv":
        assert len(list(csv.DictReader(text.splitlines()))) >= len(run.steps) // run.logging_steps
    elif fmt == "trl-state":
        assert json.loads(text)["global_step"] == run.label["last_step"]
    else:
        assert text.count(" step:") >= len(run.steps)


def test_unknown_family_and_mismatched_format_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown family"):
        make_run("P5", 0)
    with pytest.raises(ValueError, match="not one verl writes"):
        make_run("P1", 0, framework="verl", fmt="trl-state")
