"""Verdicts that match the run's outcome, through the real entry point on the live-fire range
(real TRL runs, tests/livefire/runs) and on engine series: a prior-based config rule that the
run overrules, a flat reward that one noisy block does not clear."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from advisor.cli import main
from advisor.engine import judge_run
from advisor.types import Run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from engine_series import HP, base, p1

RUNS = Path(__file__).resolve().parents[1] / "livefire" / "runs"


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    main(["diagnose", *args, "--format", "json", "--fail-on", "never"])
    return json.loads(capsys.readouterr().out)


def _config(d: dict, rid: str) -> dict:
    return next(c for c in d["config_findings"] if c["id"] == rid)


def test_a_healthy_run_overrules_the_sft_level_lr_prior(capsys) -> None:
    # sane: lr 5e-3 on a 2-layer model learns 0.16 -> 0.86. C201's prior (an SFT-level lr
    # diverges) is answered by the run: info, says why, suggests no value (5e-6 leaves it flat).
    d = _json(capsys, str(RUNS / "sane" / "trainer_state.json"))
    assert d["status"] == "healthy"
    c201 = _config(d, "C201")
    assert c201["severity"] == "info" and c201["suggested"] is None
    assert "overrules the prior" in c201["message"] and "DIV" in c201["message"]
    # an unrelated rule (no checkpoint is saved) is no prior: it keeps its severity
    assert _config(d, "C607")["severity"] == "warning"


def test_a_run_that_diverged_keeps_the_prior_as_an_error(capsys) -> None:
    # lr-huge-clip: lr 0.5, the policy collapses at step 11 (DIV): the prior stands.
    d = _json(capsys, str(RUNS / "lr-huge-clip" / "trainer_state.json"))
    c201 = _config(d, "C201")
    assert c201["severity"] == "error" and c201["suggested"] is not None
    assert "overrules" not in c201["message"]


def _judge(s: dict[str, np.ndarray]):
    n = len(s["reward_mean"])
    cols = {k: v for k, v in s.items() if k != "val_reward"}
    frame = pl.DataFrame({"step": np.arange(1, n + 1), **cols})
    return judge_run(Run(frame=frame, source="t", format="t"), HP)


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("at", [100, 200, 300])
@pytest.mark.parametrize("grad", ["tiny", "healthy"])
def test_one_noisy_block_does_not_clear_a_flat_reward(seed: int, at: int, grad: str) -> None:
    # A reward flat at 0.15 for all 400 steps (P1), with one block of 10 steps 0.08 higher:
    # the block lifts the run-wide peak for good, but is no rise and no peak to fall from.
    # With a tiny gradient (the vanished-gradient branch) and with a healthy one (the
    # never-rose branch, as a TRL run without ppo_kl shows it).
    s = base(400, seed)
    g = s["grad_norm"].copy()
    p1(s)
    if grad == "healthy":
        s["grad_norm"] = g
    rng = np.random.default_rng(seed + 100)
    s["reward_mean"][at : at + 10] += 0.08 + rng.normal(0, 0.03, 10)
    j = _judge(s)
    p1s = [f for f in j.findings if f.id == "P1"]
    assert len(p1s) == 1 and p1s[0].cleared_step is None and p1s[0].severity.value == "error"
    assert j.status == "issues"


def test_a_rise_that_holds_still_clears_it() -> None:
    # The same flat reward, rising for good to 0.6 from step 250: P1 ends (a recovery).
    s = base(400, 0)
    p1(s)
    s["reward_mean"][250:] += np.clip(np.arange(150) / 30, 0, 1) * 0.45
    s["grad_norm"][250:] = 0.4
    j = _judge(s)
    p1s = [f for f in j.findings if f.id == "P1"]
    assert p1s and p1s[-1].cleared_step is not None and p1s[-1].cleared_step > 250


VARIANTS = Path(__file__).resolve().parents[1] / "livefire" / "variants"


def _alarms(d: dict) -> set[str]:
    return {f["id"] for f in d["findings"] if f["severity"] in ("warning", "error")}


def test_beta_one_is_kl0_not_healthy(capsys) -> None:
    # beta 1: the reward flat at 0.30 from step 60, KL steady, entropy at its start
    d = _json(capsys, str(VARIANTS / "beta-one" / "trainer_state.json"))
    assert d["status"] == "issues" and "KL0" in _alarms(d)
    assert d["patch"]["from_finding"] == "KL0"
    assert [(c["param"], c["to"]) for c in d["patch"]["changes"]] == [("kl_loss_coef", 0.1)]


def test_lr_5e_6_flat_at_the_random_level_is_p1(capsys) -> None:
    # KL grew past 1e-4 (KL0 passed), but the reward never left the random policy's level
    d = _json(capsys, str(VARIANTS / "lr-5e-6" / "trainer_state.json"))
    assert d["status"] == "issues" and "P1" in _alarms(d)
    assert d["patch"]["from_finding"] == "P1"
    assert d["patch"]["changes"][0]["param"] == "learning_rate"


@pytest.mark.parametrize("case", ["cap-8", "temp-0.7", "lr-1e-2"])
def test_runs_that_learn_are_healthy_with_no_change(capsys, case: str) -> None:
    # cap-8: KL rises to 1.7 with the reward (0.13 -> 0.97) and most groups end all correct:
    # no P3 error, and no DAPO switch handed over as the change
    d = _json(capsys, str(VARIANTS / case / "trainer_state.json"))
    assert d["status"] == "healthy" and not _alarms(d)
    assert d["patch"] is None or not d["patch"]["changes"]
    assert _config(d, "C201")["severity"] == "info"


def test_a_healthy_run_with_info_findings_reads_healthy(capsys) -> None:
    # cap-8 ends with info findings (uniform groups, entropy easing, a passed truncation):
    # the verdict line says healthy, with nothing to change, not "the one thing to do"
    main(["diagnose", str(VARIANTS / "cap-8" / "trainer_state.json"), "--fail-on", "never"])
    out = capsys.readouterr().out
    assert "**Verdict:** Healthy: no warning or error" in out
    assert "nothing to change in this run" in out and "one thing to do" not in out
