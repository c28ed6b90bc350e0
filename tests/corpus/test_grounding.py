"""The generator's healthy ranges cover what the public healthy runs show (their medians).

The public runs live beside the repo (../shared/real_runs/labelled); skipped when absent.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sample_metrics.generate import VARIANTS, make_run

REAL = Path(__file__).resolve().parents[3] / "shared" / "real_runs" / "labelled"
HEALTHY_REAL = {
    "verl-ppo-gsm8k-dstack": "verl_demo.log",
    "trl-grpo-unsloth-llama31-8b-gsm8k": "trainer_state.json",
}
METRICS = ("grad_norm", "kl_ref", "entropy", "response_length", "pg_clipfrac", "step_time",
           "truncation_rate")


@pytest.fixture(scope="module")
def generated_medians() -> dict[str, tuple[float, float]]:
    meds: dict[str, list[float]] = {m: [] for m in METRICS}
    for seed in range(10 * len(VARIANTS["healthy"])):  # deterministic: seeded runs
        run = make_run("healthy", seed, n_steps=200)
        for m in METRICS:
            if m in run.series:
                meds[m].append(float(np.median(run.series[m])))
    return {m: (min(v), max(v)) for m, v in meds.items()}


@pytest.mark.skipif(not REAL.is_dir(), reason="public runs not beside the repo")
@pytest.mark.parametrize("name", sorted(HEALTHY_REAL))
def test_public_healthy_medians_fall_in_generated_ranges(
    name: str, generated_medians: dict[str, tuple[float, float]]
) -> None:
    from advisor.ingest import load_run

    frame = load_run(REAL / name / HEALTHY_REAL[name]).frame
    for m in METRICS:
        if m not in frame.columns:
            continue
        real = float(frame[m].drop_nulls().median())  # type: ignore[arg-type]
        lo, hi = generated_medians[m]
        assert lo <= real <= hi, f"{name}: {m} median {real:.4g} outside [{lo:.4g}, {hi:.4g}]"
