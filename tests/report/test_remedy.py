"""Remedy: factor from strength, clamping, couplings, fallback, one variable at a time."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from report_helpers import builtin_anti_patterns, finding, rule_actions

from advisor import checkpoints, remedy, sizing
from advisor.book.symptoms import ChangeSpec


def plan(findings: list, hp: dict[str, Any], rules: Any, previous: dict | None = None):
    return remedy.plan(findings, hp, rules, previous, check=builtin_anti_patterns)


@pytest.mark.parametrize(
    ("strength", "factor"), [(0.0, 1.5), (0.5, 1.75), (1.0, 2.0), (0.3, 1.65), (7.0, 2.0)]
)
def test_factor_follows_strength(strength: float, factor: float) -> None:
    spec = ChangeSpec(param="lr", op="multiply", range=(1.5, 2.0))
    assert sizing.choose_amount(spec, strength) == factor


def test_p1_patch_raises_lr_by_the_strength_factor(rules, hp) -> None:
    res = plan([finding("P1", strength=1.0)], hp, rules)
    (c,) = res.patch.changes
    assert (c.param, c.from_, c.to, c.factor) == ("learning_rate", 2e-6, 4e-6, 2.0)
    assert res.patch.kind == "primary" and res.patch.from_finding == "P1"
    assert res.patch.hyper_parameters["learning_rate"] == 4e-6
    assert res.findings[0].fallback.advice == "check the reward function and the data"


@pytest.mark.parametrize(
    ("lr", "expected"), [(2e-6, 4e-6), (5e-6, 7e-6), (7e-6, 1.4e-5), (9e-6, 1.8e-5)]
)
def test_a_raise_stops_at_the_top_of_the_models_range(rules, hp, lr, expected) -> None:
    """x2 from below the cap stops at it (the patched job passes validate's C304); a value
    already above it is the user's and the guide's action applies to it unchanged."""
    hp["learning_rate"] = lr
    res = remedy.plan(
        [finding("P1", strength=1.0)], hp, rules, check=builtin_anti_patterns,
        caps={"learning_rate": 7e-6},
    )  # fmt: skip
    (c,) = res.patch.changes
    assert c.to == pytest.approx(expected)
    assert ("capped" in (c.note or "")) == (lr == 5e-6)


def test_p6_subtracts_epochs_and_clamps_at_one(rules, hp) -> None:
    hp["n_epochs"] = 2
    res = plan([finding("P6", strength=1.0)], hp, rules)
    (c,) = res.patch.changes
    assert (c.param, c.to) == ("n_epochs", 1)
    assert "clamped" in c.note


def test_at_bound_goes_to_fallback(rules, hp) -> None:
    hp.update(n_epochs=1, save_strategy="epoch")
    res = plan([finding("P6")], hp, rules)
    assert res.patch.kind == "fallback"
    assert res.patch.changes[0].param == "save_strategy"
    assert any("already at 1" in n for n in res.patch.notes)


def test_anti_pattern_goes_to_fallback(rules, hp) -> None:
    hp["learning_rate"] = 4e-5  # x1.5 would reach 6e-5 >= 5e-5, an SFT-level lr
    res = plan([finding("P1", strength=0.0)], hp, rules)
    assert res.patch.kind == "fallback"
    assert res.patch.changes == []
    assert any("anti-pattern" in n for n in res.patch.notes)
    assert res.patch.hyper_parameters["learning_rate"] == 4e-5


def test_already_tried_goes_to_fallback(rules, hp) -> None:
    previous = {**hp, "learning_rate": 1e-6}  # the last job already raised lr 1e-6 -> 2e-6
    res = plan([finding("P1")], hp, rules, previous)
    assert res.patch.kind == "fallback"
    assert any("previous job already changed learning_rate" in n for n in res.patch.notes)
    lowered = {**hp, "learning_rate": 4e-6}  # lr went down last time: raising it is new
    assert plan([finding("P1")], hp, rules, lowered).patch.kind == "primary"


def test_two_parameter_row_changes_one_and_lists_the_other(rules, hp) -> None:
    res = plan([finding("P2")], hp, rules)
    assert [c.param for c in res.patch.changes] == ["learning_rate"]
    assert res.patch.hyper_parameters["batch_size"] == hp["batch_size"]
    assert "batch_size" in res.next_steps[0] and "128" in res.next_steps[0]
    assert any("one variable at a time" in n for n in res.patch.notes)


def test_top_priority_wins_and_others_are_next_steps_in_order(rules, hp) -> None:
    fs = [finding("P9", "warning", 40), finding("P3", "error", 20), finding("P6", "warning", 30)]
    res = plan(fs, hp, rules)
    assert res.patch.from_finding == "P3"
    assert [f.id for f in res.findings] == ["P3", "P6", "P9"]
    later = [s for s in res.next_steps if s.startswith("Then")]
    assert [s.split()[1] for s in later] == ["P6", "P9"]
    assert {c.param for c in res.patch.changes} == {"kl_loss_coef"}


def test_same_priority_breaks_ties_by_severity(rules, hp) -> None:
    res = plan([finding("P9", "warning", 10), finding("P3", "error", 10)], hp, rules)
    assert res.patch.from_finding == "P3"


def test_dapo_switch_sets_kl_zero_and_says_so(rules, hp) -> None:
    res = plan([finding("P4")], hp, rules)
    params = {c.param: c.to for c in res.patch.changes}
    assert params == {"algorithm": "dapo", "kl_loss_coef": 0.0}
    assert any("DAPO" in n for n in res.patch.notes)


def test_dapo_already_goes_to_fallback(rules, hp) -> None:
    hp["algorithm"] = "dapo"
    res = plan([finding("P4")], hp, rules)
    assert res.patch.kind == "fallback" and res.patch.changes[0].param == "n_rollouts"


def test_coupling_repaired_when_rollouts_drop(rules, hp) -> None:
    hp.update(batch_size=4, n_rollouts=8, ppo_mini_batch_size=32)
    res = plan([finding("SLOW")], hp, rules)
    patched = res.patch.hyper_parameters
    assert patched["n_rollouts"] == 4
    assert patched["ppo_mini_batch_size"] <= patched["batch_size"] * patched["n_rollouts"]
    assert any(c.param == "ppo_mini_batch_size" and "coupling" in c.note for c in res.patch.changes)


def test_max_length_cut_keeps_room_for_response(rules, hp) -> None:
    hp.update(ppo_mini_batch_size=1, max_length=3000, max_prompt_length=2048)
    res = plan([finding("OOM")], hp, rules)  # mini-batch 1 cannot halve: fallback max_length
    patched = res.patch.hyper_parameters
    assert res.patch.kind == "fallback"
    assert patched["max_prompt_length"] < patched["max_length"]


def test_no_findings_no_patch(rules, hp) -> None:
    res = plan([], hp, rules)
    assert res.patch.kind == "none" and res.patch.changes == [] and res.next_steps == []


def test_unknown_parameter_is_not_invented(rules) -> None:
    res = plan([finding("P1")], {"algorithm": "gspo"}, rules)
    assert res.patch.hyper_parameters.get("learning_rate") is None
    assert res.patch.kind == "fallback"


def test_finding_action_used_without_rulebook(hp) -> None:
    from advisor.types import Action, Change

    f = replace(
        finding("P3"),
        action=Action(
            advice="kl up", changes=[Change(param="kl_loss_coef", op="multiply", factor=5.0)]
        ),
    )
    res = plan([f], hp, None)
    assert res.patch.changes[0].to == pytest.approx(0.005)


@pytest.mark.parametrize(
    ("hp_update", "best_kept", "publish"),
    [
        ({"save_steps": 100, "save_total_limit": 3}, False, 300),  # best at 150, never saved
        ({"save_steps": 50, "save_total_limit": 5}, True, 150),
        ({"save_steps": 50, "save_total_limit": 1}, False, 300),
    ],
)
def test_checkpoint_advice(hp, hp_update, best_kept, publish) -> None:
    hp.update(hp_update)
    val = [(s, 0.5 + (0.2 if s == 150 else 0.01 * s / 50)) for s in range(50, 301, 50)]
    out = checkpoints.checkpoint_advice(val, hp, last_step=300)
    assert out["best_step"] == 150
    assert out["best_kept"] is best_kept
    assert out["publish_step"] == publish


def test_checkpoint_epoch_needs_samples(hp) -> None:
    hp["save_strategy"] = "epoch"
    assert checkpoints.checkpoint_advice([(10, 0.3)], hp, 20)["best_kept"] is None
    out = checkpoints.checkpoint_advice([(10, 0.3), (20, 0.2)], hp, 20, training_samples=640)
    assert out["kept_steps"] == [10, 20] and out["publish_step"] == 10


def test_step_zero_validation_is_the_base_model(hp) -> None:
    only_base = checkpoints.checkpoint_advice([(0, 0.5)], hp, last_step=10)
    assert "base model" in only_base["advice"] and "best_step" not in only_base
    worse = checkpoints.checkpoint_advice([(0, 0.5), (50, 0.4), (100, 0.45)], hp, last_step=100)
    assert worse["best_step"] == 100 and "did not improve" in worse["advice"]


def test_one_next_step_per_rule(rules, hp) -> None:
    fs = [
        finding("P3", priority=10),
        finding("P9", "warning", 40, onset=100),
        finding("P9", "warning", 40, onset=300),
    ]
    res = plan(fs, hp, rules)
    assert sum(s.startswith("Then P9") for s in res.next_steps) == 1


def test_no_publish_when_every_kept_checkpoint_collapsed(hp) -> None:
    hp.update(save_steps=40, save_total_limit=3)
    val = [(20, 0.4), (40, 0.5), (60, 0.56), (80, 0.3), (120, 0.12), (160, 0.11), (200, 0.12)]
    out = checkpoints.checkpoint_advice(val, hp, last_step=200)
    assert out["best_step"] == 60 and out["publish_step"] is None
    assert "none is worth publishing" in out["advice"]


def test_pushing_further_into_an_existing_anti_pattern_is_blocked(rules, hp) -> None:
    hp["learning_rate"] = 6e-5  # already SFT-level: raising it more is wrong
    res = plan([finding("P1")], hp, rules)
    assert res.patch.kind == "fallback"
    assert any("further into" in n for n in res.patch.notes)


def test_moving_back_out_of_an_anti_pattern_goes_on_until_it_clears(rules, hp) -> None:
    """Halving an lr of 1e-4 gives 5e-5, still SFT level: the patch goes on to the value the
    static rule suggests (in the guide's range), so the patched job passes validate."""
    hp["learning_rate"] = 1e-4
    res = plan([finding("P2")], hp, rules)
    assert res.patch.kind == "primary"
    (change,) = res.patch.changes
    assert 1e-6 <= change.to <= 7e-6 and "5e-05 would still be flagged" in change.note
    assert not builtin_anti_patterns(res.patch.hyper_parameters)


def test_too_many_epochs_lowered_to_the_first_count_that_clears(rules, hp) -> None:
    hp["n_epochs"] = 15  # P6 takes 1 to 2 epochs off: 13 is still >= 10
    res = plan([finding("P6")], hp, rules)
    assert res.patch.hyper_parameters["n_epochs"] == 9
    ok = {**hp, "n_epochs": 12}  # 12 -> 10 still flagged, 9 clears it
    assert plan([finding("P6")], ok, rules).patch.hyper_parameters["n_epochs"] == 9
    fine = {**hp, "n_epochs": 5}  # nothing flagged: the rule's own step
    assert plan([finding("P6")], fine, rules).patch.hyper_parameters["n_epochs"] in (3, 4)


def test_real_static_rules_are_the_anti_pattern_source(rules, hp) -> None:
    hp["learning_rate"] = 3e-5  # the config rulebook flags this as SFT-level
    res = remedy.plan([finding("P1")], hp, rules)  # default check: advisor.static
    assert res.patch.kind == "fallback" and res.patch.hyper_parameters["learning_rate"] == 3e-5


def test_a_later_finding_covered_by_the_patch_says_so(rules, hp) -> None:
    hp["algorithm"] = "grpo"
    rules.by_id["DAPO-ENT"] = rule_actions(
        action={
            "advice": "consider dapo",
            "changes": [{"param": "algorithm", "op": "set", "value": "dapo"}],
        },
        fallback=None,
    )
    res = plan([finding("P4", priority=20), finding("DAPO-ENT", "info", 90)], hp, rules)
    assert res.next_steps[-1] == "Then DAPO-ENT (dapo-ent-name, info): covered by the change above."


def test_a_part_at_its_bound_does_not_take_the_one_change(rules, hp) -> None:
    hp["learning_rate"] = 0.0  # P2's lr x0.5 is a no-op; its batch_size x2 is the change
    res = plan([finding("P2")], hp, rules)
    assert [c.param for c in res.patch.changes] == ["batch_size"]
    assert res.patch.kind == "primary"


def test_a_crashed_run_did_not_save_its_last_step(hp) -> None:
    hp.update(save_steps=10, save_total_limit=3)
    val = [(80, 0.70), (85, 0.774), (90, 0.771)]
    done = checkpoints.checkpoint_advice(val, hp, last_step=92)
    crashed = checkpoints.checkpoint_advice(val, hp, last_step=92, completed=False)
    assert done["kept_steps"] == [80, 90, 92] and crashed["kept_steps"] == [70, 80, 90]
    assert "final step" not in crashed["advice"]


@pytest.mark.parametrize(
    ("coef", "kind"), [(1e-3, "primary"), (5e-5, "primary"), (1e-5, "fallback")]
)
def test_kl0_does_not_lower_a_coefficient_that_already_weighs_nothing(hp, coef, kind) -> None:
    """The shipped rulebook's KL0: x0.1 only while kl_loss_coef >= 5e-5 (a tenth of the guide's
    lowest advised 0.0005); below it the fallback (switch to DAPO) is the patch."""
    from advisor.engine import load_symptom_rules

    hp["kl_loss_coef"] = coef
    res = plan([finding("KL0")], hp, load_symptom_rules())
    assert res.patch.kind == kind
    if kind == "fallback":
        assert res.patch.changes[0].param == "algorithm"
        assert any("kl_loss_coef is already 1e-05, below 5e-05" in n for n in res.patch.notes)
    else:
        assert res.patch.hyper_parameters["kl_loss_coef"] == pytest.approx(coef * 0.1)


def test_a_raise_of_zero_goes_to_the_guides_value(rules, hp) -> None:
    """P3 raises kl_loss_coef x5 to x10: from 0 (no KL term) it is set to the value the
    static rule flagging KL 0 suggests instead of staying 0."""
    from advisor.engine import load_symptom_rules

    hp["kl_loss_coef"] = 0.0
    res = plan([finding("P3")], hp, load_symptom_rules())
    (p3,) = res.findings
    assert p3.action is not None and p3.action.kind == "primary"
    (change,) = p3.action.changes
    assert (change.param, change.from_, change.to) == ("kl_loss_coef", 0.0, 0.001)


def test_without_a_job_file_a_change_is_not_carried_into_range(rules, hp) -> None:
    hp["learning_rate"] = 1e-4  # a LoRA run's lr, say: without the job, x0.5 as the rule says
    res = remedy.plan([finding("P2")], hp, rules, check=builtin_anti_patterns, into_range=False)
    assert res.patch.hyper_parameters["learning_rate"] == 5e-5


def test_the_fallback_applied_is_sized_as_the_one_shown(hp) -> None:
    # A fallback raising max_length is sized from the run's finished answers (TRL's
    # completions/mean_terminated_length) whether it is applied or only shown.
    from advisor.types import Action, Change

    raise_cap = Action(
        advice="raise max_length",
        changes=[Change(param="max_length", op="add", factor=2048.0)],
    )
    facts = {"terminated_length": 300.0, "response_cap": 8192}
    f = replace(
        finding("P6"),
        action=Action(
            advice="fewer epochs",
            changes=[Change(param="n_epochs", op="add", factor=-1.0)],
        ),
        fallback=raise_cap,
    )
    shown = remedy.plan([f], hp, None, check=builtin_anti_patterns, facts=facts)
    assert [c.to for c in shown.findings[0].fallback.changes] == [8192 + 512]
    hp["n_epochs"] = 1  # the primary is at its bound: the fallback is applied
    applied = remedy.plan([f], hp, None, check=builtin_anti_patterns, facts=facts)
    assert applied.patch.kind == "fallback"
    assert [c.to for c in applied.patch.changes] == [8192 + 512]
