"""The holdout generator is sound, and the advisor clears generous floors on fresh holdout runs."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import holdout_gen as gen
import score


@pytest.mark.parametrize("kind", [gen.HEALTHY, *gen.SYMPTOMS])
def test_every_family_writes_a_labelled_run(kind: str, tmp_path: Path) -> None:
    healthy = gen.HEALTHY_VARIANTS + gen.EXTRA_HEALTHY
    variants = healthy if kind == gen.HEALTHY else gen.VARIANTS[kind]
    for i, variant in enumerate(variants):
        run = gen.make_run(kind, variant, seed=300 + i, max_steps=400)
        d = gen.write_run(run, tmp_path)
        label = json.loads((d / "label.json").read_text())
        assert (d / label["metrics_file"]).stat().st_size > 0
        assert "hyper_parameters:" in (d / "job.yaml").read_text()
        assert label["symptoms"] == ([] if kind == gen.HEALTHY else [kind])
        if kind != gen.HEALTHY:
            assert label["first_step"] <= label["onset_step"] <= label["last_step"]


@pytest.mark.parametrize("seed", range(6))
def test_healthy_runs_hold_no_nan_and_no_truncation(seed: int) -> None:
    for variant in gen.HEALTHY_VARIANTS:
        run = gen.make_run(gen.HEALTHY, variant, seed=seed * 31 + 1, max_steps=600)
        for name, values in run.series.items():
            assert not np.isnan(values).any(), (variant, name)
        if "truncation_rate" in run.series:
            assert run.series["truncation_rate"].max() < 0.1, variant


def test_injected_symptoms_move_the_metric_the_guide_names() -> None:
    # A check on the generator itself: each injection is visible at its onset.
    p3 = gen.make_run("P3", "exp", seed=11, max_steps=800)
    i = int(np.searchsorted(p3.steps, p3.onset_step))
    assert np.nanmean(p3.series["kl_ref"][-20:]) > 5 * np.nanmean(p3.series["kl_ref"][:i])
    p4 = gen.make_run("P4", "fast", seed=12, max_steps=800)
    i = int(np.searchsorted(p4.steps, p4.onset_step))
    assert p4.series["entropy"][-10:].mean() < 0.3 * p4.series["entropy"][i]
    oom = gen.make_run("OOM", "memory-climb", seed=13, max_steps=800)
    assert oom.steps[-1] == oom.onset_step and oom.ending == "oom"


def test_scorer_counts_tp_fp_fn() -> None:
    def res(symptoms: list[str], fired: list[tuple[str, str]], acc: tuple[str, ...] = ()):
        label = {"symptoms": symptoms, "acceptable": list(acc), "onset_step": 100,
                 "eval_steps": 10, "family": symptoms[0] if symptoms else "healthy"}
        r = score.Result(Path("x"), label)
        r.findings = [{"id": i, "severity": s, "onset_step": 110} for i, s in fired]
        return r

    figs = score.score([
        res(["P3"], [("P3", "error"), ("DIV", "warning")], ("DIV",)),  # TP, DIV acceptable
        res(["P3"], [("P3", "info")]),  # info is advice: a miss
        res([], [("P2", "warning")]),  # healthy false alarm
        res([], [("P1", "info")]),  # info on healthy: not an alarm
    ])
    assert (figs.tp["P3"], figs.fn["P3"], figs.fp["DIV"], figs.fp["P2"]) == (1, 1, 0, 1)
    assert (figs.healthy, figs.healthy_alarmed) == (2, 1)
    assert math.isclose(figs.onset_err["P3"][0], 1.0)


@pytest.mark.slow
def test_advisor_clears_generous_floors_on_fresh_runs(tmp_path: Path) -> None:
    # 22 unseen runs (8 healthy, 14 symptomatic), short enough to judge fast.
    gen.generate(tmp_path, n=22, seed0=91_000, max_steps=500)
    results = score.judge_all(tmp_path, use_api=True, workers=1)
    figs = score.score(results)
    assert figs.errors == 0
    tp = sum(figs.tp.values())
    fn = sum(figs.fn.values())
    fp = sum(figs.fp.values())
    assert tp / (tp + fn) >= 0.6, score.render(figs, results, tmp_path, "test")
    assert tp / (tp + fp) >= 0.6, score.render(figs, results, tmp_path, "test")
    assert figs.healthy_alarmed <= 3, score.render(figs, results, tmp_path, "test")


@pytest.mark.parametrize("seed", [3, 8, 21])
def test_trl_log_history_is_in_step_order(seed: int, tmp_path: Path) -> None:
    # an evaluation at step s is logged at s: inside a logging chunk it precedes the chunk's entry
    run = gen.make_run("P6", "peak-decline", seed=seed, fmt="trl-state", max_steps=600)
    run.spec.log_every = 10
    d = gen.write_run(run, tmp_path)
    hist = json.loads((d / "trainer_state.json").read_text())["log_history"]
    steps = [e["step"] for e in hist]
    assert steps == sorted(steps)
    assert any("eval_reward" in e for e in hist)
