"""advisor.cost: the share, steps and hours of each kind of waste, and their price."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor import cost
from advisor.types import Diagnosis, InputError


def test_steps_stand_for_their_gap_to_the_previous_log() -> None:
    s = cost.Steps.of([10, 20, 30, 50], [2.0, None, 4.0, 2.0])
    assert s.weight.tolist() == [10.0, 10.0, 10.0, 20.0]  # the first log: steps since the start
    assert s.step_seconds().tolist() == [2.0, 2.0, 4.0, 2.0]  # a missing time: the median
    assert cost.Steps.of([1, 3, 5]).weight.tolist() == [1.0, 2.0, 2.0]  # no more than there were
    assert cost.Steps.of([0, 10, 20]).weight.tolist() == [1.0, 10.0, 10.0]
    assert cost.Steps.of([100, 110, 120]).weight.tolist() == [10.0, 10.0, 10.0]  # a usual gap


def test_wasted_of_a_share_by_hand() -> None:
    # 4 steps of 10 s, 30 s, 10 s, 10 s; half of the first two wasted, none of the rest
    s = cost.Steps.of([1, 2, 3, 4], [10.0, 30.0, 10.0, 10.0])
    got = cost.wasted(s, [0.5, 0.5, 0.0, 0.0])
    assert got is not None
    assert got["steps"] == pytest.approx(1.0)
    assert got["hours"] == pytest.approx(20 / 3600)
    assert got["share"] == pytest.approx(20 / 60)  # of the compute, not of the steps
    assert got["of_run"] == pytest.approx(20 / 60)
    window = cost.wasted(s, [1.0, 1.0, 1.0, 1.0], lo=3, hi=4)
    assert window is not None
    assert window["share"] == 1.0 and window["of_run"] == pytest.approx(20 / 60)


def test_wasted_without_step_times_is_in_steps() -> None:
    s = cost.Steps.of([1, 2, 3, 4])
    got = cost.wasted(s, [1.0, 0.0, None, 1.0])
    assert got is not None
    assert math.isnan(got["hours"])
    assert got["steps"] == 2.0
    assert got["share"] == pytest.approx(2 / 3)  # of the steps that logged it
    assert got["of_run"] == pytest.approx(2 / 4)


def test_wasted_is_none_where_nothing_was_logged() -> None:
    s = cost.Steps.of([1, 2, 3])
    assert cost.wasted(s, [None, None, None]) is None
    assert cost.wasted(s, [1.0, 1.0, 1.0], lo=10) is None


shares = st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(
    shares=shares,
    gaps=st.lists(st.integers(1, 50), min_size=60, max_size=60),
    secs=st.lists(st.one_of(st.none(), st.floats(0.01, 1e4)), min_size=60, max_size=60),
    lo=st.integers(0, 500),
    span=st.integers(0, 3000),
)
def test_shares_stay_in_their_bounds(shares, gaps, secs, lo, span) -> None:
    n = len(shares)
    steps = [sum(gaps[: i + 1]) for i in range(n)]
    s = cost.Steps.of(steps, secs[:n])
    got = cost.wasted(s, shares, lo, lo + span)
    if got is None:
        return
    assert 0.0 <= got["share"] <= 1.0 + 1e-9
    assert 0.0 <= got["of_run"] <= got["share"] + 1e-9  # the same waste over a longer span
    assert 0.0 <= got["steps"] <= float(s.weight.sum()) + 1e-9
    if not math.isnan(got["hours"]):
        assert got["hours"] <= got["run_hours"] + 1e-9


@settings(max_examples=100, deadline=None)
@given(
    share=st.floats(0, 1),
    n=st.integers(1, 80),
    secs=st.lists(st.floats(0.01, 1e4), min_size=80, max_size=80),
)
def test_a_constant_share_is_that_share(share, n, secs) -> None:
    s = cost.Steps.of(list(range(1, n + 1)), secs[:n])
    got = cost.wasted(s, [share] * n)
    assert got is not None
    assert got["share"] == pytest.approx(share, abs=1e-9)
    assert got["of_run"] == pytest.approx(share, abs=1e-9)
    assert got["steps"] == pytest.approx(share * n)


@settings(max_examples=100, deadline=None)
@given(
    shares=st.lists(st.floats(0, 1), min_size=1, max_size=40),
    secs=st.lists(st.floats(0.01, 1e3), min_size=40, max_size=40),
    scale=st.floats(0.01, 100),
)
def test_shares_do_not_depend_on_the_clock_unit(shares, secs, scale) -> None:
    n = len(shares)
    a = cost.wasted(cost.Steps.of(list(range(n)), secs[:n]), shares)
    b = cost.wasted(cost.Steps.of(list(range(n)), [x * scale for x in secs[:n]]), shares)
    assert a is not None and b is not None
    assert b["share"] == pytest.approx(a["share"], rel=1e-6, abs=1e-9)
    assert b["hours"] == pytest.approx(a["hours"] * scale, rel=1e-6, abs=1e-12)


def test_the_job_gives_the_gpu_count_only_when_it_set_it() -> None:
    hp = {"n_gpus_rollout": 8, "nnodes_rollout": 1, "n_gpus_training": 8, "nnodes_training": 2}
    assert cost.gpus_of_job(hp, {}, "platform") is None  # all defaults: not known
    said = {"n_gpus_training": "file", "nnodes_training": "file", "n_gpus_rollout": "file"}
    assert cost.gpus_of_job(hp, said, "platform") == 24  # the guide's 8 + 2 x 8
    assert cost.gpus_of_job(hp, said, "verl") == 16  # rollout shares the trainer's GPUs
    assert cost.gpus_of_job(hp, said, "trl") is None  # accelerate's, not the job's


def _cost() -> dict:
    entry = {
        "kind": "zero_gradient", "finding": "WASTE", "what": cost.WHAT["zero_gradient"],
        "unit": "steps", "window": [1, 10], "share": 0.5, "of_run": 0.5, "steps": 5.0,
        "hours": 0.5, "gpu_hours": None, "cost": None,
    }  # fmt: skip
    return {"entries": [entry], "run_steps": 10.0, "run_hours": 1.0, "gpus": None,
            "gpus_from": None, "gpu_hour_price": None, "currency": None}  # fmt: skip


def test_priced_multiplies_hours_by_gpus_and_price() -> None:
    got = cost.priced(_cost(), gpus=8, gpus_from="--gpus", price=2.5, currency="EUR")
    e = got["entries"][0]
    assert e["gpu_hours"] == 4.0 and e["cost"] == 10.0
    assert got["currency"] == "EUR" and got["gpus_from"] == "--gpus"
    assert cost.priced(_cost(), price=2.5)["entries"][0]["cost"] is None  # no GPU count
    assert cost.priced(_cost(), gpus=2, price=1.0)["currency"] == "USD"


def test_with_price_refuses_what_cannot_price() -> None:
    d = Diagnosis(cost=_cost())
    bad = [
        ((0, None, None), "--gpus"),
        ((None, -1.0, None), "--gpu-hour-price"),
        ((None, math.nan, None), "--gpu-hour-price"),
        ((None, 1.0, " "), "--currency"),
    ]
    for args, flag in bad:
        with pytest.raises(InputError, match=flag):
            cost.with_price(d, *args)
    assert cost.with_price(Diagnosis(), 8, 2.0, None).cost is None  # nothing wasted: no price
    assert cost.with_price(d, 4, 1.0, None).cost["entries"][0]["cost"] == 2.0


def test_a_window_counts_no_step_before_its_start() -> None:
    # logs every 2 steps: the log at step 701 stands for 700 and 701, the window starts at 701
    s = cost.Steps.of(list(range(1, 1600, 2)))
    got = cost.wasted(s, [1.0] * len(s.step), lo=701, hi=1599)
    assert got is not None and got["steps"] == 1599 - 701 + 1
