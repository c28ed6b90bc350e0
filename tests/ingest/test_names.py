"""canonical_name / canonicalize: the mapping the online hook uses on raw trainer dicts."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.ingest.names import ALIASES, canonical_name, canonicalize, val_groups
from advisor.types import CANONICAL_METRICS


@pytest.mark.parametrize(
    ("raw", "canon"),
    [
        ("critic/rewards/mean", "reward_mean"),
        ("critic/score/mean", "reward_mean"),
        ("reward", "reward_mean"),
        ("actor/kl_loss", "kl_ref"),
        ("kl", "kl_ref"),
        ("actor/entropy_loss", "entropy"),
        ("completion_length", "response_length"),
        ("completions/clipped_ratio", "truncation_rate"),
        ("clip_ratio/region_mean", "pg_clipfrac"),
        ("timing_s/gen", "rollout_time"),
        ("frac_reward_zero_std", "zero_std_frac"),
        ("val-core/openai/gsm8k/reward/mean@4", "val_reward"),
        ("val/test_score/", "val_reward"),
        ("eval_reward", "val_reward"),
        ("train/grad_norm", "grad_norm"),
        ("train/completion_length", "response_length"),
        ("train/rewards/x/mean", None),
        ("ppo_actor/update/entropy/avg", "entropy"),
        ("actor/pg_loss", "loss"),
        ("reward_mean", "reward_mean"),
        ("perf/mfu/actor", None),
        ("eval/loss", None),
        ("val-aux/gsm8k/reward/std@4", None),
    ],
)
def test_canonical_name(raw: str, canon: str | None) -> None:
    assert canonical_name(raw) == canon


def test_every_canonical_metric_but_val_has_aliases() -> None:
    assert set(CANONICAL_METRICS) - {"val_reward"} <= set(ALIASES)


def test_canonicalize_prefers_the_better_key() -> None:
    out = canonicalize({"critic/score/mean": 0.5, "critic/rewards/mean": 0.4, "perf/x": 1.0})
    assert out == {"reward_mean": 0.4}
    # actor/entropy wins over the old actor/entropy_loss whatever the order
    assert canonicalize({"actor/entropy_loss": 0.2, "actor/entropy": 0.3})["entropy"] == 0.3
    # a missing better key does not hide a present worse one
    assert (
        canonicalize({"critic/rewards/mean": None, "critic/score/mean": 0.7})["reward_mean"] == 0.7
    )


def test_canonicalize_val_mean_over_datasets_and_roll_units() -> None:
    out = canonicalize(
        {
            "val-core/a/reward/mean@4": 0.2,
            "val-core/a/reward/mean@1": 0.9,
            "val-core/b/acc/mean@4": 0.4,
        }
    )
    assert out["val_reward"] == pytest.approx(0.3)
    roll = canonicalize(
        {"token/total_response_length/clip": 4, "system/batch_size": 16, "critic/entropy/mean": 0}
    )
    assert roll["truncation_rate"] == 0.25 and roll["entropy"] is None


def test_val_groups_exact_key_wins() -> None:
    exact, groups = val_groups(["eval_reward", "val-core/a/reward/mean@1"])
    assert exact == ["eval_reward"] and groups == [["val-core/a/reward/mean@1"]]
    assert canonicalize({"eval_reward": 0.3, "val-core/a/reward/mean@1": 0.9})["val_reward"] == 0.3


def test_canonicalize_is_fast() -> None:
    raw = {f"perf/extra_{i}": 0.1 for i in range(130)} | {k[0]: 0.5 for k in ALIASES.values()}
    canonicalize(raw)
    t0 = time.perf_counter()
    for _ in range(200):
        canonicalize(raw)
    per_call = (time.perf_counter() - t0) / 200
    assert per_call < 2e-3  # ~150 keys per step: well under a millisecond on a quiet machine


_KEYS = [
    "critic/rewards/mean", "critic/score/mean", "reward", "actor/entropy", "actor/entropy_loss",
    "entropy", "actor/kl_loss", "kl", "val-core/a/reward/mean@1", "val-core/a/reward/mean@4",
    "val-core/b/acc/mean@1", "val/test_score/c", "eval_reward", "response_length/clip_ratio",
    "completions/clipped_ratio", "critic/entropy/mean", "perf/other", "train/reward",
    "actor/lr(1e-4)",
    "train/completion_length", "response_length/mean", "reward_mean",
]  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(
        st.dictionaries(
            st.sampled_from(_KEYS),
            st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False, width=32)),
            min_size=1,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_frame_and_canonicalize_agree(rows: list[dict[str, float | None]]) -> None:
    """judge_run reads the frame, the online Advisor reads canonicalize: same numbers."""
    import polars as pl

    from advisor.ingest.frame import build_run

    records = [{"step": i + 1, **r} for i, r in enumerate(rows)]
    df = pl.from_dicts(records, infer_schema_length=None)
    run = build_run(df, source="x", fmt="test")
    for i, raw in enumerate(rows):
        expected = canonicalize(raw)
        for name in (
            "reward_mean",
            "entropy",
            "kl_ref",
            "val_reward",
            "truncation_rate",
            "response_length",
        ):
            got = run.frame[name][i] if name in run.frame.columns else None
            want = expected.get(name)
            assert (got is None) == (want is None), (name, raw)
            if got is not None:
                assert got == pytest.approx(want, rel=1e-9, abs=1e-12), (name, raw)
