"""Property: any valid job + any rule action -> the patched job is valid and coupled."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from report_helpers import SPECS, builtin_anti_patterns, finding, make_rules

from advisor import remedy, sizing
from advisor.book.symptoms import ChangeSpec
from advisor.sizing import valid_ranges

BOUNDS = valid_ranges()[0]

RULES = make_rules()


@st.composite
def jobs(draw: st.DrawFn) -> dict:
    bs = draw(st.integers(1, 1024))
    nr = draw(st.integers(1, 64))
    ml = draw(st.integers(2, 131_072))
    return {
        "algorithm": draw(st.sampled_from(["gspo", "grpo", "dapo"])),
        "kl_loss_coef": draw(st.floats(0, 10)),
        "learning_rate": draw(st.floats(0, 1e-4)),
        "n_epochs": draw(st.integers(1, 200)),
        "batch_size": bs,
        "n_rollouts": nr,
        "ppo_mini_batch_size": draw(st.integers(1, bs * nr)),
        "max_length": ml,
        "max_prompt_length": draw(st.integers(1, ml - 1)),
        "save_strategy": draw(st.sampled_from(["steps", "epoch", "no"])),
        "n_gpus_training": 8,
        "tensor_model_parallel_size": draw(st.sampled_from([1, 2, 4, 8])),
        "pipeline_model_parallel_size": 1,
    }


def valid(hp: dict) -> bool:
    for k, v in hp.items():
        if k in BOUNDS and not (BOUNDS[k][0] <= v <= BOUNDS[k][1]):
            return False
    return (
        hp["ppo_mini_batch_size"] <= hp["batch_size"] * hp["n_rollouts"]
        and hp["max_prompt_length"] < hp["max_length"]
        and hp["n_gpus_training"]
        >= hp["tensor_model_parallel_size"] * hp["pipeline_model_parallel_size"]
    )


@settings(max_examples=150, deadline=None)
@given(
    hp=jobs(),
    ids=st.lists(st.sampled_from(sorted(SPECS)), min_size=1, max_size=4, unique=True),
    strength=st.floats(0, 1),
)
def test_patched_job_stays_valid(hp: dict, ids: list[str], strength: float) -> None:
    res = remedy.plan(
        [finding(i, strength=strength) for i in ids], hp, RULES, check=builtin_anti_patterns
    )
    patched = res.patch.hyper_parameters
    assert valid(patched)
    changed = {c.param for c in res.patch.changes}
    assert {k for k in hp if patched[k] != hp[k]} <= changed
    # a patch never introduces an anti-pattern the job did not already have
    assert builtin_anti_patterns(patched) <= builtin_anti_patterns(hp)


@settings(max_examples=100, deadline=None)
@given(lo=st.floats(-4096, 4096), width=st.floats(0, 4096), s=st.floats(0, 1))
def test_amount_stays_in_range(lo: float, width: float, s: float) -> None:
    spec = ChangeSpec(param="max_length", op="add", range=(lo, lo + width))
    amount = sizing.choose_amount(spec, s)
    tol = abs(lo) * 0.05 + abs(width) * 0.05 + 0.5  # 2 significant digits or whole units
    assert lo - tol <= amount <= lo + width + tol


@settings(max_examples=40, deadline=None)
@given(hp=jobs(), fid=st.sampled_from(sorted(SPECS)), strength=st.floats(0, 1))
def test_no_new_static_warning_with_the_real_rules(hp: dict, fid: str, strength: float) -> None:
    # The config rulebook (advisor.static) is the anti-pattern source in production.
    res = remedy.plan([finding(fid, strength=strength)], hp, RULES)
    before = remedy.static_anti_patterns(hp)
    after = remedy.static_anti_patterns(res.patch.hyper_parameters)
    assert {x.split(":")[0] for x in after - before} <= {x.split(":")[0] for x in before}
