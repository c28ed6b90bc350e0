"""Symptoms judged from the first steps: no part of a run is assumed healthy (knowledge.md §4
"How to judge": the wait is for judging a trend). Degenerate collapses, a cap that cuts every
response, steady KL multiplication, metrics that stop being logged, PPO's critic."""

from __future__ import annotations

import numpy as np
import polars as pl
from engine_series import HP, base

from advisor.engine import judge_run, load_symptom_rules
from advisor.remedy import plan as _plan
from advisor.types import Run


def plan(findings: list, hp: dict):
    return _plan(findings, hp, load_symptom_rules())


def _judge(s: dict[str, np.ndarray], hp: dict | None = None, drop: dict[str, int] | None = None):
    n = len(s["reward_mean"])
    cols = {"step": np.arange(1, n + 1), **s}
    frame = pl.DataFrame(cols).with_columns(pl.col("val_reward").fill_nan(None))
    for name, from_row in (drop or {}).items():  # not logged from this row on (null)
        frame = frame.with_columns(
            pl.when(pl.int_range(pl.len()) >= from_row).then(None).otherwise(pl.col(name))
            .alias(name)
        )
    return judge_run(Run(frame=frame, source="t", format="t"), hp or HP)


def _active(j) -> dict[str, object]:
    return {f.id: f for f in j.findings if f.severity.rank >= 1}


def test_degenerate_collapse_from_step_3_is_divergence_not_a_short_cap() -> None:
    # lr far too large: by step 3 reward 0, entropy 0, grad_norm 0, every completion at the cap
    s = base(300)
    s["reward_mean"][:2], s["reward_mean"][2:] = 0.15, 0.0
    s["reward_std"][2:] = 0.0
    s["entropy"][2:] = 0.0
    s["grad_norm"][2:] = 0.0
    s["zero_std_frac"][2:] = 1.0
    s["truncation_rate"][2:] = 1.0
    s["response_length"][2:] = 3072.0
    j = _judge(s)
    active = _active(j)
    assert "DIV" in active and active["DIV"].onset_step <= 2 * HP["eval_steps"]
    top = plan(list(active.values()), HP).patch
    assert top.from_finding == "DIV"  # not P9's bigger cap


def test_every_response_cut_from_step_1_puts_the_cap_first() -> None:
    # clipped_ratio 1.0 from step 1 and a KL that explodes: while responses are cut, the
    # rewards are wrong, so the cap goes first (P9 is urgent past half the responses cut)
    s = base(300)
    s["truncation_rate"][:] = 1.0
    s["kl_ref"][150:] *= np.exp(np.linspace(0, 6, 150))
    j = _judge(s)
    active = _active(j)
    assert {"P9", "P3"} <= set(active)
    assert plan(list(active.values()), HP).patch.from_finding == "P9"


def test_steady_kl_multiplication_is_an_explosion() -> None:
    # x60 over the run at a constant rate: never accelerating, and below the level rule's 0.5
    s = base(400)
    t = np.arange(400)
    wiggle = np.exp(np.random.default_rng(1).normal(0, 0.05, 400))
    s["kl_ref"] = 0.004 * np.exp(t * np.log(60) / 400) * wiggle
    j = _judge(s)
    assert "P3" in _active(j)


def test_healthy_kl_that_levels_off_is_no_explosion() -> None:
    for seed in range(5):
        assert "P3" not in _active(_judge(base(400, seed=seed)))


def test_a_reward_that_stops_being_logged_is_nan() -> None:
    # NaN written as JSON null: the reward and grad_norm vanish for the last 40 % of the run
    s = base(300)
    j = _judge(s, drop={"reward_mean": 180, "grad_norm": 180})
    nan = _active(j).get("NAN")
    assert nan is not None and any(e.detector == "stopped" for e in nan.evidence)
    assert 170 <= nan.onset_step <= 200


def test_sparse_logging_is_not_a_metric_that_stopped() -> None:
    # TRL logs every 10 steps (blocks of 10 see one point or none), and with num_iterations > 1
    # some entries carry only the optimisation keys: gaps, not a metric that stopped
    s = base(300)
    n = len(s["reward_mean"])
    cols = {"step": np.arange(1, n + 1), **s}
    frame = pl.DataFrame(cols).with_columns(pl.col("val_reward").fill_nan(None))
    every = pl.int_range(pl.len()) % 10 == 9
    frame = frame.with_columns(
        [pl.when(every).then(pl.col(c)).otherwise(None).alias(c) for c in s if c != "val_reward"]
    )
    j = judge_run(Run(frame=frame, source="t", format="t"), HP)
    assert "NAN" not in _active(j)


def test_ppo_critic_nan_at_step_1_is_nan() -> None:
    s = base(60)
    s["vf_loss"] = np.full(60, np.nan)
    s["critic_grad_norm"] = np.full(60, np.nan)
    j = _judge(s)
    nan = _active(j).get("NAN")
    assert nan is not None and nan.onset_step == 1
    assert j.status == "issues"
