"""Long real curves judged as their shapes say (issue 27): the warm-up capped by the logged
run, a collapse finished inside the warm-up, in-reward KL, a reference model that does not
match, the compute wasted on zero-gradient steps and groups that score alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from engine_series import HP, base
from test_engine_detectors import _pts_series

from advisor.detectors import DETECTORS
from advisor.engine import Monitor, judge_run
from advisor.types import Run


def _run(s: dict[str, np.ndarray], first: int = 1, every: int = 1) -> Run:
    n = len(next(iter(s.values())))
    cols: dict[str, object] = {"step": np.arange(first, first + n * every, every)}
    cols.update(s)
    frame = pl.DataFrame(cols)
    if "val_reward" in frame.columns:
        frame = frame.with_columns(pl.col("val_reward").fill_nan(None))
    return Run(frame=frame, source="t", format="t")


# ----------------------------------------------------------------------------- warm-up cap
def test_the_warm_up_is_capped_by_the_logged_run() -> None:
    hp = {**HP, "eval_steps": 300}  # a verl agent run validating every 300 steps
    assert Monitor(hp).warmup_steps == 900  # the run's length unknown: the guide's wait
    mon = Monitor(hp, expected_steps=192)
    assert mon.warmup_steps == 96  # half of 192
    assert any("capped at 96 steps" in a and "900" in a for a in mon.assumptions)
    assert Monitor(hp, expected_steps=699).warmup_steps == 350
    # never below the rulebook's minimum, and a wait inside the guide's cadence is left alone
    assert Monitor(hp, expected_steps=40).warmup_steps == 30
    assert Monitor({**HP, "eval_steps": 50}, expected_steps=448).warmup_steps == 150
    assert not any("capped" in a for a in Monitor(HP, expected_steps=400).assumptions)


def test_a_run_that_learns_over_192_steps_is_judged_not_insufficient() -> None:
    s = base(192, seed=5)
    j = judge_run(_run(s), {**HP, "eval_steps": 300})
    # the warm-up ends on a block boundary (16-step blocks) at half the run
    assert j.status == "healthy" and 96 <= j.warmup_steps <= 112
    assert any(f"capped at {j.warmup_steps} steps" in a for a in j.assumptions)


# ----------------------------------------------------------------------------- collapse in warm-up
def vlm_collapse(seed: int = 0, logs: int = 3) -> dict[str, np.ndarray]:
    """The shape of a TRL VLM GRPO run logged every 10 steps (10-490): entropy 0.96 -> 0.1 and
    completion length 53 -> 2-5 tokens over the first `logs` logs (within ~100 steps), then
    entropy 0.02-0.08 and grad_norm exactly 0 on 40 of the 49 logs."""
    rng = np.random.default_rng(seed)
    n = 49
    t = np.arange(n, dtype=float)
    fall = np.clip(t / logs, 0, 1)
    entropy = np.where(t <= logs, 0.96 * (0.1 / 0.96) ** fall, rng.uniform(0.02, 0.08, n))
    length = np.where(t <= logs, 53 * (3.5 / 53) ** fall, rng.uniform(2, 5, n))
    grad = 0.05 * np.exp(rng.normal(0, 0.3, n))
    zero = rng.permutation(np.arange(8, n))[:40]
    grad[zero] = 0.0
    reward = np.clip(0.55 + rng.normal(0, 0.05, n), 0, 1)
    return {
        "reward_mean": reward,
        "reward_std": np.where(grad == 0, 0.0, 0.2),
        "entropy": entropy,
        "response_length": length,
        "grad_norm": grad,
        "zero_std_frac": np.where(grad == 0, 1.0, 0.75),
        "kl_ref": 1e-3 * (1 + t),
    }


def test_a_collapse_finished_inside_the_warm_up_is_p4() -> None:
    for logs in (2, 3, 5, 9):
        for seed in range(3):
            run = _run(vlm_collapse(seed, logs), first=10, every=10)
            j = judge_run(run, {"algorithm": "grpo"})
            p4 = [f for f in j.findings if f.id == "P4"]
            assert p4 and p4[0].severity.value == "warning", (logs, seed, j.findings)
            assert p4[0].onset_step <= 130


def test_low_steady_entropy_from_the_start_is_no_collapse() -> None:
    """A low but steady entropy (0.03, a healthy verl PPO run resumed at step 101) with short
    answers and zero-gradient steps has not fallen from its start."""
    for seed in range(3):
        s = vlm_collapse(seed, 3)
        rng = np.random.default_rng(seed)
        s["entropy"] = 0.03 * np.exp(rng.normal(0, 0.1, len(s["entropy"])))
        s["response_length"] = rng.uniform(2, 5, len(s["entropy"]))
        j = judge_run(_run(s, first=10, every=10), {"algorithm": "grpo"})
        assert "P4" not in {f.id for f in j.findings}


# ----------------------------------------------------------------------------- REF
def test_high_from_start_tells_a_mismatched_reference_from_a_drift() -> None:
    hfs = DETECTORS["high_from_start"]
    p = {"value": 0.1, "max_ratio": 3.0, "k": 3, "m": 4}
    flat = [[0.95, 1.02, 0.98], [1.01, 0.97, 1.0], [0.99, 1.03, 1.0], [0.96, 1.0, 1.04]]
    ev = hfs(_pts_series(flat), p)
    assert ev is not None and ev.statistic["first"] == 0.95 and ev.window[0] == 1
    drift = [[0.0, 0.01, 0.05], [0.1, 0.2, 0.3], [0.5, 0.8, 1.0], [1.0, 1.0, 1.1]]
    assert hfs(_pts_series(drift), p) is None  # grew from 0: the first point is the start
    grows = [[0.5, 0.5, 0.5], [0.9, 1.0, 1.1], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]
    assert hfs(_pts_series(grows), p) is None  # multiplied from its first level: P3's


def _kl_run(kl: np.ndarray, first: int = 1) -> Run:
    s = base(len(kl), seed=2)
    s["kl_ref"] = kl
    return _run(s, first=first)


def test_kl_near_one_from_the_first_step_is_ref_not_p3() -> None:
    rng = np.random.default_rng(3)
    for algo in ("grpo", "gspo", None):
        kl = 1.0 + rng.normal(0, 0.05, 300)
        hp = {k: v for k, v in HP.items() if k != "algorithm"}
        hp.update({"algorithm": algo} if algo else {})
        j = judge_run(_kl_run(kl), hp)
        ids = {f.id: f for f in j.findings}
        assert "REF" in ids and "P3" not in ids, (algo, list(ids))
        assert ids["REF"].severity.value == "error" and ids["REF"].onset_step <= 30
    # a log that starts late (a resumed run) does not show the run's first KL
    j = judge_run(_kl_run(1.0 + rng.normal(0, 0.05, 300), first=400), HP)
    assert "REF" not in {f.id for f in j.findings}


def test_a_kl_that_explodes_from_zero_is_still_p3() -> None:
    kl = base(300, seed=1)["kl_ref"]
    kl[150:] = kl[150] * 200 ** np.clip(np.arange(150) / 60, 0, 1)
    j = judge_run(_kl_run(kl), HP)
    ids = {f.id for f in j.findings}
    assert "P3" in ids and "REF" not in ids


# ----------------------------------------------------------------------------- in-reward KL
PPO_HP = {"kl_loss_coef": 0.001, "learning_rate": 1e-6, "eval_steps": 10}  # verl PPO, a critic


def _ppo_kl(seed: int, top: float = 0.32, n: int = 435) -> dict[str, np.ndarray]:
    """A verl PPO baseline's in-reward KL: critic/kl rising from ~0 to `top` over the run, ever
    faster (the KL loss's yardstick calls that an explosion: P3)."""
    rng = np.random.default_rng(seed)
    s = base(n, seed=seed)
    t = np.arange(1, n + 1, dtype=float)
    s["kl_ref"] = (top * (t / n) ** 3 + 1e-4) * np.exp(rng.normal(0, 0.1, n))
    return s


def test_in_reward_kl_is_not_judged_by_the_kl_loss_yardstick() -> None:
    seeds = range(3)
    loss = [judge_run(_run(_ppo_kl(seed)), PPO_HP) for seed in seeds]
    assert all("P3" in {f.id for f in j.findings} for j in loss)  # the loss's yardstick: P3
    for seed in seeds:
        by_fact = judge_run(_run(_ppo_kl(seed)), {**PPO_HP, "use_kl_in_reward": True})
        s = _ppo_kl(seed)
        s["critic/kl"] = s["kl_ref"]  # verl <= 0.3's in-reward name, as the reader keeps it
        by_name = judge_run(_run(s), PPO_HP)
        for j in (by_fact, by_name):
            assert "P3" not in {f.id for f in j.findings}
            assert any("inside the reward" in a for a in j.assumptions)


def test_in_reward_kl_past_one_nat_a_token_is_still_p3() -> None:
    s = _ppo_kl(0, top=3.0)
    s["critic/kl"] = s["kl_ref"]
    j = judge_run(_run(s), PPO_HP)
    assert "P3" in {f.id for f in j.findings}


def test_a_kl_loss_beside_an_in_reward_kl_keeps_the_loss_yardstick() -> None:
    s = _ppo_kl(1)
    s["actor/kl_loss"] = s["kl_ref"]
    s["actor/reward_kl_penalty"] = s["kl_ref"] / 2
    j = judge_run(_run(s), PPO_HP)
    assert "P3" in {f.id for f in j.findings}


# ----------------------------------------------------------------------------- wasted rollouts
def _waste(j) -> dict:
    f = next(f for f in j.findings if f.id == "WASTE")
    return {e.metric: e for e in f.evidence}


def test_zero_gradient_steps_are_a_finding_with_their_share_and_difficulty() -> None:
    run = _run(vlm_collapse(0, 3), first=10, every=10)
    ev = _waste(judge_run(run, {"algorithm": "grpo"}))
    g = ev["grad_zero"]
    assert 0.7 <= g.statistic["share"] <= 1.0  # 40 of the 49 logs, most of them in the episode
    assert g.statistic["difficulty"] == "mixed" and "% of the logged steps" in g.summary
    assert "gradient of exactly 0" in g.summary and "compute" in g.summary


def test_uniform_groups_tell_too_hard_from_too_easy_by_the_reward() -> None:
    for reward, want in ((0.05, "too_hard"), (0.95, "too_easy")):
        s = base(300, seed=4)
        s["reward_mean"] = np.clip(reward + np.random.default_rng(1).normal(0, 0.01, 300), 0, 1)
        s["zero_std_frac"][:] = 0.9
        ev = _waste(judge_run(_run(s), HP))["zero_std_frac"]
        assert ev.statistic["difficulty"] == want, ev.summary
        assert abs(ev.statistic["share"] - 0.9) < 1e-9
        assert want.replace("_", " ") in ev.summary


def test_a_reward_off_the_unit_scale_says_difficulty_unknown() -> None:
    s = base(300, seed=4)
    s["reward_mean"] = s["reward_mean"] * 5  # a sum of rewards, not a success rate
    s["zero_std_frac"][:] = 0.9
    ev = _waste(judge_run(_run(s), HP))["zero_std_frac"]
    assert ev.statistic["difficulty"] == "unknown" and "not on a 0..1 scale" in ev.summary


def test_few_uniform_groups_and_no_zero_gradient_are_no_waste() -> None:
    j = judge_run(_run(base(300, seed=4)), HP)
    assert "WASTE" not in {f.id for f in j.findings}


# ----------------------------------------------------------------------------- P1, KL ~0 signed
def _flat_rm_run(seed: int, kl: np.ndarray) -> Run:
    """A reward model's score flat at -1.8 over 2,000 steps (a policy that does not move), no
    gradient or ppo_kl logged: MiniMind's GRPO log's columns."""
    rng = np.random.default_rng(seed)
    n = len(kl)
    return _run(
        {
            "reward_mean": -1.8 + rng.normal(0, 0.3, n),
            "kl_ref": kl,
            "response_length": 210 * np.exp(rng.normal(0, 0.3, n)),
            "lr": np.full(n, 3e-7),
        }
    )


def test_a_signed_kl_averaging_zero_on_a_flat_reward_is_p1() -> None:
    for seed in range(3):
        rng = np.random.default_rng(seed + 10)
        kl = np.round(rng.normal(0, 0.002, 2000), 4)  # k1 estimates around 0, 4 decimals
        j = judge_run(_flat_rm_run(seed, kl), {})
        p1 = [f for f in j.findings if f.id == "P1"]
        assert p1 and any(e.metric == "kl_ref" for e in p1[0].evidence), j.findings


def test_a_kl_that_grows_on_a_flat_reward_is_not_that_evidence() -> None:
    t = np.arange(2000, dtype=float)
    kl = 0.03 * (1 - np.exp(-t / 400)) + 1e-4
    j = judge_run(_flat_rm_run(0, kl), {})
    for f in j.findings:
        assert not any(e.metric == "kl_ref" and e.detector == "below" for e in f.evidence)


# ----------------------------------------------------------------------------- a real shape
FIXTURES = Path(__file__).parent / "fixtures"


def test_a_verl_ppo_baseline_in_reward_kl_is_not_p3() -> None:
    """critic/kl 0 -> 0.32 over 435 steps of a maintainers' PPO baseline (fixtures/README.md):
    in the reward, no explosion; the same curve as a KL loss is judged by the loss's yardstick."""
    from advisor.ingest import load_run

    src = FIXTURES / "verl_ppo_in_reward_kl.csv"
    run = load_run(src)
    assert run.frame["kl_ref"].max() > 0.3
    j = judge_run(run, {"eval_steps": 10})
    assert "P3" not in {f.id for f in j.findings}
    as_loss = run.frame.rename({"critic/kl": "actor/kl_loss"})
    j = judge_run(Run(frame=as_loss, source=str(src), format="csv"), {"eval_steps": 10})
    assert "P3" in {f.id for f in j.findings}


def test_observe_reads_an_in_reward_kl_by_its_name_as_diagnose_does() -> None:
    from advisor import Advisor

    rows = _run(_ppo_kl(0)).frame.to_dicts()
    judged = {}
    for name in ("critic/kl", "actor/kl_loss"):
        adv = Advisor(hyper_parameters=PPO_HP)
        for r in rows:
            step = r.pop("step")
            r[name] = r.pop("kl_ref")
            r["critic/rewards/mean"] = r.pop("reward_mean")
            adv.observe(step, r)
            r["kl_ref"], r["reward_mean"] = r.pop(name), r.pop("critic/rewards/mean")
            r["step"] = step
        adv.close()
        judged[name] = {f.id for f in adv.findings}
    assert "P3" not in judged["critic/kl"] and "P3" in judged["actor/kl_loss"]


def test_a_trl_vlm_run_that_collapsed_inside_its_warm_up_is_p4() -> None:
    """The real shape of item 1 (fixtures/README.md): P4 from the first points, the zero-gradient
    steps' share as WASTE, and no alarm beyond those its label allows (P1, DIV)."""
    from advisor.ingest import load_run

    j = judge_run(load_run(FIXTURES / "trl_vlm_grpo_warmup_collapse.csv"), {})
    ids = {f.id: f for f in j.findings}
    assert ids["P4"].severity.value == "warning" and ids["P4"].onset_step <= 150
    alarms = {i for i, f in ids.items() if f.severity.rank >= 1}
    assert alarms <= {"P4", "P1", "DIV"}
    share = next(e for e in ids["WASTE"].evidence if e.metric == "grad_zero").statistic["share"]
    assert share >= 0.8
