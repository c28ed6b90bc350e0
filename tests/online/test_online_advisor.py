"""Advisor's own contract: names, partial records, order, values, safety classes, report, memory."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.ingest import load_run
from advisor.ingest.names import ALIASES, canonical_name, canonicalize
from advisor.online import Advisor, _Thinned
from advisor.types import CANONICAL_METRICS, Finding, InputError, RunEnding

from .conftest import corpus_runs, ids, replay, rows

pytestmark = pytest.mark.usefixtures("corpus_available")


def _run(prefix: str, fmt: str = "verl-jsonl") -> Path:
    runs = [p for p in corpus_runs() if p.name.startswith(prefix) and fmt in p.name]
    if not runs:
        pytest.skip(f"no {prefix} {fmt} run in the corpus")
    return runs[0]


def test_raw_and_canonical_names_judge_alike() -> None:
    path = _run("p3")
    run = load_run(path)
    canon = set(CANONICAL_METRICS) | {"val_reward"}
    raw_adv = Advisor.from_config(path / "job.yaml", hints=run.config_hints)
    can_adv = Advisor.from_config(path / "job.yaml", hints=run.config_hints)
    for step, m in rows(run):
        raw_adv.observe(step, {k: v for k, v in m.items() if k not in canon})
        can_adv.observe(step, {k: v for k, v in m.items() if k in canon})
    assert ids(raw_adv.findings) == ids(can_adv.findings) != []
    assert raw_adv.run_info().metrics == can_adv.run_info().metrics
    assert "reward_mean" in raw_adv.run_info().metrics


def test_records_of_one_step_held_with_partial_are_judged_as_one_row() -> None:
    path = _run("p6")
    run = load_run(path)
    whole = Advisor.from_config(path / "job.yaml", hints=run.config_hints)
    split = Advisor.from_config(path / "job.yaml", hints=run.config_hints)
    for step, m in rows(run):
        whole.observe(step, m)
        val = {k: v for k, v in m.items() if canonical_name(k) == "val_reward"}
        train = {k: v for k, v in m.items() if k not in val}
        split.observe(step, train, partial=bool(val))
        if val:
            split.observe(step, val)
    for adv in (whole, split):
        adv.close()
    assert [(f.id, f.onset_step) for f in split.findings] == [
        (f.id, f.onset_step) for f in whole.findings
    ]
    assert "P6" in ids(whole.findings)
    assert split.run_info().warnings == [] and split.steps == whole.steps


def test_partial_record_is_judged_at_flush_or_close() -> None:
    adv = Advisor(hyper_parameters={"eval_steps": 5})
    adv.observe(1, {"reward": 0.1}, partial=True)
    assert adv.steps == 0
    adv.flush()
    assert adv.steps == 1 and adv.last_step == 1
    adv.observe(2, {"reward": 0.2}, partial=True)
    adv.close()
    assert adv.steps == 2


def test_repeated_and_backward_steps_are_ignored_with_a_warning() -> None:
    adv = Advisor(hyper_parameters={"eval_steps": 5})
    for s in range(1, 11):
        adv.observe(s, {"critic/rewards/mean": 0.1 * s})
    assert adv.observe(10, {"critic/rewards/mean": 9.0}) == []
    assert adv.observe(3, {"critic/rewards/mean": 9.0}) == []
    warnings = adv.run_info().warnings
    assert len(warnings) == 2
    assert "step 10 was logged again" in warnings[0]
    assert "step 3 arrived after step 10" in warnings[1]
    assert adv.steps == 10 and adv.run_info().last_step == 10


def test_values_of_any_numeric_kind_and_non_numbers() -> None:
    adv = Advisor()
    adv.observe(np.int64(1), {"reward": np.float32(0.5), "text": "hello", "hist": [1, 2]})
    adv.observe(2.0, {"reward": math.nan, "kl": float("inf"), "grad_norm": None})
    assert adv.steps == 2
    assert adv.run_info().metrics == ["reward_mean", "kl_ref"]
    for bad in ("x", 1.5, math.inf, None):
        with pytest.raises(InputError, match="step must be an integer"):
            adv.observe(bad, {})  # type: ignore[arg-type]
    with pytest.raises(InputError, match="mapping"):
        adv.observe(3, [("reward", 1.0)])  # type: ignore[arg-type]


def test_explicit_hyper_parameters_are_used_as_set_values() -> None:
    hp = {"learning_rate": 2e-6, "algorithm": "dapo", "eval_steps": 7, "kl_loss_coef": 0.0}
    adv = Advisor(hyper_parameters=hp)
    assert {k: adv.hyper_parameters[k] for k in hp} == hp
    adv.observe(1, {"reward": 0.1})
    assert adv.warmup_steps is not None and adv.warmup_steps >= 3 * 7


def test_close_is_idempotent_and_ends_observing() -> None:
    adv = Advisor()
    adv.observe(1, {"reward": 0.1})
    adv.close()
    assert adv.close() == []
    with pytest.raises(RuntimeError):
        adv.observe(2, {"reward": 0.1})


def test_from_config_fails_early_on_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        Advisor.from_config(tmp_path / "nope.yaml")


def test_on_finding_callback_and_return_value_agree() -> None:
    path = _run("div")
    run = load_run(path)
    seen: list[Finding] = []
    adv = Advisor.from_config(path / "job.yaml", hints=run.config_hints, on_finding=seen.append)
    returned: list[Finding] = []
    for step, m in rows(run):
        returned += adv.observe(step, m)
    returned += adv.close(run.ending)
    assert [f.id for f in seen] == [f.id for f in returned] != []
    assert all(f.action is not None for f in returned if f.id != "NAN") or returned


def test_only_safe_actions_are_applied_automatically() -> None:
    applied: list[tuple[str, str]] = []
    with pytest.raises(ValueError, match="apply"):
        Advisor(auto_apply=True)
    path = _run("div")
    run = load_run(path)
    adv = Advisor.from_config(
        path / "job.yaml",
        hints=run.config_hints,
        auto_apply=True,
        apply=lambda f, a: applied.append((f.id, a.safety)),
    )
    for step, m in rows(run):
        adv.observe(step, m)
    unsafe = [f for f in adv.findings if f.action is not None and f.action.safety != "safe"]
    assert unsafe, "the collapse run's findings carry unsafe actions"
    assert applied == []  # none of them was applied
    adv.close(RunEnding(kind="oom", step=adv.last_step, message="CUDA out of memory"))
    oom = [f for f in adv.findings if f.id == "OOM"]
    assert oom and oom[0].action is not None and oom[0].action.safety == "safe"
    assert applied == [("OOM", "safe")]
    assert [(f.id, a.safety) for f, a in adv.applied] == applied
    assert all(a.safety == "safe" for _, a in adv.safe_actions())
    assert ("OOM", "safe") in [(f.id, a.safety) for f, a in adv.safe_actions()]
    assert all(a.safety != "safe" for _, a in adv.advice())
    assert adv.advice()


def test_report_is_the_diagnose_report_shape(tmp_path: Path) -> None:
    path = _run("p3")
    run = load_run(path)
    adv, _ = replay(run, path / "job.yaml")
    data = json.loads(adv.report(format="json"))
    assert data["schema_version"] == 1
    assert data["run"]["steps"] == run.steps  # training steps: a validation alone is none
    assert data["run"]["last_step"] == run.frame["step"][-1]
    assert sorted({f["id"] for f in data["findings"]}) == ids(adv.findings)
    assert data["patch"]["from_finding"] in ids(adv.findings)
    md = adv.report(format="markdown", out_dir=tmp_path)
    assert "P3" in md
    assert list(tmp_path.glob("*.svg")), "plots drawn from the kept history"
    assert "<section" in adv.report(format="html")  # the one-file report, charts inline
    with pytest.raises(InputError):
        adv.report(format="pdf")


def test_a_fresh_advisor_reports_insufficient_data() -> None:
    adv = Advisor()
    assert adv.findings == [] and adv.status == "insufficient_data"
    data = json.loads(adv.report(format="json"))
    assert data["status"] == "insufficient_data" and data["run"]["steps"] == 0


@settings(max_examples=40, deadline=None)
@given(
    gaps=st.lists(st.integers(1, 5), min_size=1, max_size=3000),
    cap=st.integers(4, 64),
)
def test_thinned_history_is_bounded_and_spans_the_run(gaps: list[int], cap: int) -> None:
    t = _Thinned(cap)
    step = 0
    for g in gaps:
        step += g
        t.add(step, float(step))
    assert len(t.steps) < cap
    assert t.steps == sorted(set(t.steps)) and t.steps[0] == gaps[0]
    assert t.values == [float(s) for s in t.steps]
    # the kept points reach the recent end of the run (within one stride of the last step)
    assert step - t.steps[-1] < 2 * t.stride


def test_memory_stays_bounded_over_a_long_run() -> None:
    adv = Advisor(hyper_parameters={"eval_steps": 10})
    for s in range(1, 3001):
        adv.observe(s, {"reward": math.sin(s / 50), "entropy": 0.5, f"noise/{s % 7}": 1.0})
    assert all(len(v.steps) <= 1024 for v in adv._series.values())
    assert len(adv._seen) <= len(CANONICAL_METRICS) + 1


_KEYS = sorted(
    {k for raws in ALIASES.values() for k in raws}
    | set(CANONICAL_METRICS)
    | {"val-core/gsm8k/reward/mean@1", "val-core/math/acc/mean@4", "eval_reward"}
    | {"critic/entropy/mean", "token/total_response_length/clip", "system/batch_size"}
    | {"perf/mfu/actor", "global_seqlen/mean"}
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(_KEYS),
            st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
            max_size=20,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_cached_name_mapping_equals_canonicalize(records: list[dict[str, float | None]]) -> None:
    """The per-key-set cache maps exactly as helper I's canonicalize (the readers' mapping)."""
    adv = Advisor()
    adv.observe(0, {})
    for rec in records + records:  # the second pass goes through the cache
        got = adv._row(rec)
        want = canonicalize(rec)
        assert got.keys() == want.keys()
        for k, v in want.items():
            assert got[k] == v or (v != v and got[k] != got[k])  # NaN == NaN here


def test_a_symptom_fires_once_then_again_only_after_it_cleared() -> None:
    """Truncation high for two spells: P9 fires once per spell, with the spell's onset."""
    rnd = random.Random(0)
    adv = Advisor(hyper_parameters={"eval_steps": 5, "algorithm": "gspo"})
    fired: list[tuple[int, str, int | None]] = []
    spells = [(101, 160), (261, 340)]
    for s in range(1, 401):
        high = any(a <= s <= b for a, b in spells)
        m = {
            "critic/rewards/mean": 0.3 + 0.001 * s + rnd.gauss(0, 0.02),
            "actor/entropy": 0.5 + rnd.gauss(0, 0.01),
            "response_length/clip_ratio": (0.5 if high else 0.01) + rnd.gauss(0, 0.005),
            "actor/grad_norm": 0.4 + rnd.gauss(0, 0.02),
            "actor/ppo_kl": 0.002 + abs(rnd.gauss(0, 0.0005)),
            "actor/kl_loss": 0.01 + rnd.gauss(0, 0.001),
        }
        fired += [(s, f.id, f.onset_step) for f in adv.observe(s, m)]
    p9 = [(s, onset) for s, fid, onset in fired if fid == "P9"]
    assert len(p9) == 2  # once per spell: not again while it stays
    for (alert, onset), (start, end) in zip(p9, spells, strict=True):
        assert start <= onset <= alert <= end  # onset at the spell, alerted within it
    first, second = [f for f in adv.findings if f.id == "P9"]
    assert first.cleared_step is not None and first.cleared_step <= second.onset_step  # type: ignore[operator]


def test_response_cap_is_learned_online_as_load_run_learns_it(tmp_path: Path) -> None:
    """A TRL run cut at 512 tokens, fed step by step without a config: the report's config
    hints and its max_length are those diagnose gets from the same series."""
    rng = random.Random(3)
    history = []
    for step in range(1, 121):
        clipped = 0.4 + 0.1 * rng.random() if step > 20 else 0.0
        history.append(
            {
                "step": step,
                "reward": 0.3 + 0.01 * rng.random(),
                "completions/clipped_ratio": clipped,
                "completions/max_length": 512.0 if clipped else 400.0 + step,
            }
        )
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history, "global_step": 120}))
    batch = load_run(path)
    adv = Advisor.from_config(
        None, hints={k: v for k, v in batch.config_hints.items() if k != "max_response_length"}
    )
    for row in history:
        adv.observe(row["step"], {k: v for k, v in row.items() if k != "step"})
    report = json.loads(adv.report(format="json"))
    assert batch.config_hints["max_response_length"] == 512
    assert report["run"]["config_hints"]["max_response_length"] == 512
    assert report["hyper_parameters"]["max_length"] == 1024 + 512
