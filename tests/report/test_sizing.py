"""Steps sized to the fault and escalated over the run history (rulebook `size`, --previous).

The real rulebook's P1, DIV, KL0 and NAN actions against the facts a run shows; the history
rounds as `advisor.history` reads them."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_helpers import HP, finding

from advisor import remedy
from advisor.engine import load_symptom_rules
from advisor.history import Round
from advisor.types import Evidence

RULES = load_symptom_rules()


def plan(fid: str, hp: dict[str, Any], facts: dict[str, Any], history=(), evidence=None):
    f = finding(fid)
    if evidence is not None:
        f = replace(f, evidence=evidence)
    return remedy.plan([f], hp, RULES, facts=facts, history=history)


def job(**values: Any) -> dict[str, Any]:
    return {**HP, **values}


def lr_of(res) -> float:
    return res.patch.hyper_parameters["learning_rate"]


# ------------------------------------------------------------------------------ first step
@pytest.mark.parametrize(
    ("kl", "factor"),
    [
        (1e-6, 100.0),  # nothing moved: the bound, x100
        (1e-4, 10.0),  # sqrt(0.01 / 1e-4)
        (0.05, None),  # the policy moves: the rule's own x1.5..x2
    ],
)
def test_p1_step_from_the_kl_the_run_made(kl: float, factor: float | None) -> None:
    res = plan("P1", job(learning_rate=1e-6), {"kl_ref_median": kl})
    (c,) = res.patch.changes
    if factor is None:
        assert 1.5 <= c.factor <= 2.0 and "sized" not in (c.note or "")
    else:
        assert c.factor == pytest.approx(factor) and "kl_ref_median" in c.note


def test_p1_without_kl_sizes_from_entropy() -> None:
    res = plan("P1", job(learning_rate=1e-6), {"entropy_moved": 0.001})
    (c,) = res.patch.changes
    assert c.factor == pytest.approx(50.0) and "entropy_moved" in c.note


def test_div_collapse_in_the_first_steps_cuts_the_rate_a_hundredfold() -> None:
    res = plan("DIV", job(learning_rate=0.5), {"collapse_frac": 0.01})
    (c,) = res.patch.changes
    assert (c.param, c.to) == ("learning_rate", pytest.approx(0.005))
    late = plan("DIV", job(learning_rate=0.5), {"collapse_frac": 0.9})
    assert late.patch.changes[0].factor == pytest.approx(0.5)  # the guide's x0.5


def test_kl0_step_replays_the_adaptive_kl_controller() -> None:
    """Ziegler et al. 2019: x(1 + 0.1 x clip(KL/target - 1, +-0.2)) a step; KL 0.0015 against
    0.01 for 200 steps is x0.98^200."""
    res = plan("KL0", job(kl_loss_coef=10.0), {"kl_ref_series": [0.0015] * 200})
    (c,) = res.patch.changes
    assert c.param == "kl_loss_coef"
    assert c.to == pytest.approx(10.0 * 0.98**200, rel=0.05)
    short = plan("KL0", job(kl_loss_coef=10.0), {"kl_ref_series": [0.0015] * 20})
    assert short.patch.changes[0].factor == pytest.approx(0.1)  # the guide's x0.1 at least


def test_sized_step_never_leaves_its_bounds() -> None:
    for fid, param, fact, value in [
        ("P1", "learning_rate", "kl_ref_median", 0.0),
        ("DIV", "learning_rate", "collapse_frac", 1e-9),
        ("KL0", "kl_loss_coef", "kl_ref_series", [0.0] * 10_000),
    ]:
        hp = job(**{param: 0.5})
        (c,) = plan(fid, hp, {fact: value}).patch.changes
        size = next(x.size for x in RULES.by_id[fid].action.changes if x.size)
        lo, hi = sorted(size.bounds)
        assert lo <= c.to / 0.5 <= hi * (1 + 1e-9)


# ------------------------------------------------------------------------------ right knob
def _evidence(*pairs: tuple[str, str]) -> list[Evidence]:
    return [
        Evidence(metric=m, detector=d, window=(120, 200), statistic={}, effect_size=1.0,
                 summary=f"{m} {d}")
        for d, m in pairs
    ]  # fmt: skip


def test_nan_in_the_reward_alone_is_the_reward_functions() -> None:
    res = plan("NAN", job(), {}, evidence=_evidence(("nonfinite", "reward_mean")))
    assert res.patch.kind == "none" or not res.patch.changes
    (f,) = res.findings
    assert f.action.kind == "fallback" and "reward function" in f.action.advice
    assert "learning_rate" not in res.patch.hyper_parameters or (
        res.patch.hyper_parameters["learning_rate"] == HP["learning_rate"]
    )


def test_nan_in_the_gradient_still_lowers_the_rate() -> None:
    ev = _evidence(("nonfinite", "reward_mean"), ("nonfinite", "grad_norm"))
    res = plan("NAN", job(), {}, evidence=ev)
    assert res.patch.kind == "primary" and res.patch.changes[0].param == "learning_rate"


def test_div_falls_back_to_gspo_never_to_a_larger_kl_coefficient() -> None:
    fb = RULES.by_id["DIV"].fallback
    assert fb is not None and all(c.param != "kl_loss_coef" for c in fb.changes)


def test_the_dapo_switch_shown_drops_the_kl_term() -> None:
    res = plan("KL0", job(kl_loss_coef=10.0), {"kl_ref_series": [0.0015] * 200})
    (f,) = res.findings
    shown = {c.param: c.to for c in f.fallback.changes}
    assert shown == {"algorithm": "dapo", "kl_loss_coef": 0.0}


# ------------------------------------------------------------------------------ history
def test_a_failed_raise_is_escalated_not_abandoned() -> None:
    """lr 5e-7 -> x100 -> still nothing moves: the next step is x100 again at most (x100^2
    held by the bound), not the fallback 'check the reward function'."""
    history = [Round({"learning_rate": 5e-7})]
    res = plan("P1", job(learning_rate=5e-5), {"kl_ref_median": 1e-6}, history)
    assert res.patch.kind == "primary"
    (c,) = res.patch.changes
    assert c.to == pytest.approx(5e-3) and "escalated" in c.note


def test_a_raise_is_squared_when_the_evidence_says_less() -> None:
    """x1.5 did not cure and the run still moves too little: x1.5^2 at least."""
    history = [Round({"learning_rate": 2e-6})]
    res = plan("P1", job(learning_rate=3e-6), {"kl_ref_median": 0.004}, history)
    (c,) = res.patch.changes
    assert c.factor == pytest.approx(2.25, rel=0.02)


def test_a_raise_that_made_the_policy_move_falls_back() -> None:
    """Past the top of the healthy KL band (0.06) a policy that still learns nothing is not
    held by the rate: the fallback (the reward function, the data)."""
    history = [Round({"learning_rate": 2e-6})]
    res = plan("P1", job(learning_rate=4e-6), {"kl_ref_median": 0.1}, history)
    (f,) = res.findings
    assert f.action.kind == "fallback" and "reward function" in f.action.advice


def test_a_raise_inside_the_healthy_band_goes_on() -> None:
    """KL 0.01 after a x100 raise, nothing learnt: the band's low end is no proof the rate is
    right for this task (its healthy KL may be far higher): the raise goes on, squared."""
    history = [Round({"learning_rate": 5e-7})]
    res = plan("P1", job(learning_rate=5e-5), {"kl_ref_median": 0.01}, history)
    (c,) = res.patch.changes
    assert c.param == "learning_rate" and c.to == pytest.approx(5e-3)


def test_no_ping_pong_after_a_fallback_round() -> None:
    """Round 1 raised the lr, round 2 (a fallback) lowered beta: round 3 goes on with the lr."""
    history = [
        Round({"learning_rate": 5e-7, "kl_loss_coef": 0.1}),
        Round({"learning_rate": 5e-5, "kl_loss_coef": 0.1}),
    ]
    hp = job(learning_rate=5e-5, kl_loss_coef=0.01)
    res = plan("P1", hp, {"kl_ref_median": 1e-6}, history)
    (c,) = res.patch.changes
    assert c.param == "learning_rate" and c.to == pytest.approx(5e-3)


def test_a_cut_after_an_overshoot_is_bracketed() -> None:
    """1e-4 too low (P1), 5e-3 collapsed (DIV now, by x0.01 evidence): the cut lands between
    them at their geometric middle rather than at 5e-5, below what was already too low."""
    history = [Round({"learning_rate": 1e-4}, advised={"learning_rate": 1})]
    res = plan("DIV", job(learning_rate=5e-3), {"collapse_frac": 1e-5}, history)
    (c,) = res.patch.changes
    assert 1e-4 < c.to < 5e-3 and "bracketed" in c.note
    assert c.to == pytest.approx(math.sqrt(1e-4 * 5e-3), rel=0.02)


def test_a_tight_bracket_spends_the_knob() -> None:
    history = [
        Round({"learning_rate": 1e-5}, advised={"learning_rate": 1}),
        Round({"learning_rate": 1.1e-5}, advised={"learning_rate": -1}),
    ]
    res = plan("P1", job(learning_rate=1.05e-5), {"kl_ref_median": 1e-6}, history)
    (f,) = res.findings
    assert f.action.kind == "fallback"


@settings(max_examples=200, deadline=None)
@given(
    low=st.floats(1e-8, 1e-2),
    ratio=st.floats(1.3, 1e4),
    where=st.floats(0.01, 0.99),
    kl=st.floats(1e-9, 1.0),
    up=st.booleans(),
)
def test_bracketing_never_leaves_too_low_too_high(low, ratio, where, kl, up) -> None:
    """Whatever the evidence says, the step stays strictly between the highest value shown
    too low and the lowest shown too high."""
    high = low * ratio
    now = low * ratio**where
    history = [
        Round({"learning_rate": low}, advised={"learning_rate": 1}),
        Round({"learning_rate": high}, advised={"learning_rate": -1}),
    ]
    if up:
        res = plan("P1", job(learning_rate=now), {"kl_ref_median": kl}, history)
    else:
        res = plan("DIV", job(learning_rate=now), {"collapse_frac": min(1.0, kl)}, history)
    (f,) = res.findings
    if f.action.kind == "primary" and f.action.changes:
        new = f.action.changes[0].to
        assert low * (1 - 1e-3) < new < high * (1 + 1e-3)


@settings(max_examples=60, deadline=None)
@given(first=st.floats(1.5, 9.0), rounds=st.integers(1, 4))
def test_failing_steps_grow_geometrically(first: float, rounds: int) -> None:
    """Each raise that did not cure (the policy still not moving) is followed by one whose
    factor is at least its square, up to the bound x100."""
    lr = 1e-7
    history: list[Round] = []
    factor = first
    for _ in range(rounds):
        history.append(Round({"learning_rate": lr}))
        lr = lr * factor
        # the run still asks for x1.6 (KL 0.0039 against 0.01): not yet moving enough
        res = plan("P1", job(learning_rate=lr), {"kl_ref_median": 0.0039}, history)
        (c,) = res.patch.changes
        assert c.factor >= min(100.0, factor**2) * (1 - 0.03)
        factor = c.factor


# ------------------------------------------------------------------------------ sampling
@pytest.mark.parametrize("fid", ["DIV", "P9", "P1", "DAPO-ZSTD"])
@pytest.mark.parametrize(
    ("framework", "key"),
    [("trl", "temperature"), ("verl", "actor_rollout_ref.rollout.temperature"), ("platform", None)],
)
def test_near_greedy_sampling_names_the_temperature(fid, framework, key) -> None:
    from advisor.dialect import Speaker

    speaker = Speaker(framework, HP, {}, {})
    res = remedy.plan([finding(fid)], job(), RULES, facts={"temperature": 0.1}, speaker=speaker)
    (g,) = res.findings
    assert g.action.kind == "primary" and "temperature" in g.action.advice
    if key is None:  # the platform's job has no such field: advice, no patch
        assert not res.patch.changes
    else:
        (c,) = res.patch.changes
        assert (c.param, c.from_, c.to) == ("temperature", 0.1, 1.0)
        assert speaker.settings(res.patch.changes) == {key: 1.0}
        assert speaker.override_args(res.patch.changes) == (
            f"--{key} 1" if framework == "trl" else f"{key}=1"
        )


def test_a_temperature_in_the_healthy_band_keeps_the_rules_own_action() -> None:
    res = plan("P9", job(), {"temperature": 0.7})
    assert res.patch.changes[0].param == "max_length"


def test_rules_id_shows_the_sizing_and_what_goes_first(capsys) -> None:
    from advisor.cli import main

    assert main(["rules", "P1"]) == 0
    out = capsys.readouterr().out
    assert "## Step size" in out and "x1.5 and x100" in out and "kl_ref_median" in out
    assert "## Goes first" in out and "temperature is below 0.5" in out
    assert main(["rules", "NAN"]) == 0
    assert "nonfinite:reward_mean or stopped:reward_mean" in capsys.readouterr().out


def test_an_info_finding_is_never_the_one_change() -> None:
    """A run with nothing at warning or above is healthy at its settings: DAPO-ZSTD's switch
    (which collapsed a saturating live run's entropy) is a next step to consider, no patch."""
    res = remedy.plan([finding("DAPO-ZSTD", severity="info")], job(), RULES)
    assert res.patch.kind == "none" and not res.patch.changes
    assert any("consider" in s for s in res.next_steps)


# ------------------------------------------------------------------------------ group size
@pytest.mark.parametrize(
    ("framework", "settings"),
    [
        # TRL counts prompts per step through num_generations: the accumulation grows with it
        ("trl", {"num_generations": 8, "gradient_accumulation_steps": 4}),
        # verl's data.train_batch_size counts prompts already
        ("verl", {"actor_rollout_ref.rollout.n": 8}),
    ],
)
def test_groups_of_two_raise_the_samples_a_prompt_and_keep_the_prompts(framework, settings) -> None:
    from advisor.dialect import Speaker

    facts = {"gradient_accumulation_steps": 1} if framework == "trl" else {}
    speaker = Speaker(framework, job(n_rollouts=2), facts, {})
    res = remedy.plan(
        [finding("P1")], job(n_rollouts=2), RULES, facts={"n_rollouts": 2}, speaker=speaker
    )
    (c,) = res.patch.changes
    assert (c.param, c.from_, c.to) == ("n_rollouts", 2, 8)
    assert speaker.settings(res.patch.changes) == settings


def test_the_group_size_is_read_from_the_job_when_the_log_has_none() -> None:
    res = plan("P1", job(n_rollouts=2), {})
    assert res.patch.changes[0].param == "n_rollouts"


@pytest.mark.parametrize("n", [4, 8, 16])
def test_groups_the_guide_allows_keep_the_learning_rate_step(n: int) -> None:
    res = plan("P1", job(n_rollouts=n, learning_rate=1e-6), {"n_rollouts": n})
    assert res.patch.changes[0].param == "learning_rate"


# ------------------------------------------------------------------------------ thrown back
def test_a_policy_thrown_off_and_back_cuts_the_rate_not_raises_it() -> None:
    """P1 on a run whose first updates broke its entropy and which drifted back to its start:
    a larger rate would repeat the throw, so the rate goes down an order of magnitude."""
    res = plan("P1", job(learning_rate=0.05), {"thrown_back": 0.02, "kl_ref_median": 0.12})
    (c,) = res.patch.changes
    assert (c.param, c.to) == ("learning_rate", pytest.approx(0.005))
    calm = plan("P1", job(learning_rate=1e-6), {"kl_ref_median": 1e-6})
    assert calm.patch.changes[0].to > 1e-6


# ------------------------------------------------------------------------------ on-policy TRL
@pytest.mark.parametrize(
    ("facts", "switched"),
    [
        ({}, False),  # TRL's defaults: each batch used up within its step, the ratio is 1
        ({"gradient_accumulation_steps": 4, "steps_per_generation": 2}, False),
        ({"num_iterations": 2}, True),  # each batch trained on twice: the clip acts
        ({"gradient_accumulation_steps": 2, "steps_per_generation": 4}, True),
    ],
)
def test_clip_higher_in_trl_only_where_the_clip_acts(facts, switched) -> None:
    """P4's switch to DAPO is Clip-Higher alone in TRL (its loss is DAPO's already): on an
    on-policy run it changes nothing, so the fallback (more samples a prompt) goes."""
    from advisor.dialect import Speaker

    hp = job(algorithm="grpo", kl_loss_coef=0.0)
    speaker = Speaker("trl", hp, {"loss_type": "dapo", **facts}, {})
    res = remedy.plan([finding("P4")], hp, RULES, speaker=speaker)
    (g,) = res.findings
    settings = speaker.settings(res.patch.changes)
    if switched:
        assert g.action.kind == "primary" and settings["epsilon_high"] == 0.28
    else:
        assert g.action.kind == "fallback" and "num_generations" in settings
        assert any("ratio is exactly 1" in n for n in res.patch.notes)
