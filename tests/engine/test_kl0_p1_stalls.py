"""KL0 on a plateau stalled at a low reward, and P1 read from a learning rate that never rose
to a useful size (judge-set misses: a pinned policy that gains a few warm-up sigmas early and
stops; a flat DAPO / TRL run with lr 1e-8 and nothing else to show)."""

from __future__ import annotations

from typing import Any

import numpy as np
from engine_series import HP, base, rows

from advisor.detectors import DETECTORS, Series
from advisor.engine import Monitor

N = 400  # eval_steps 20: warm-up 60 steps, blocks of 10


def _ids(s: dict[str, np.ndarray], hp: dict[str, Any] | None = None) -> set[str]:
    mon = Monitor({**HP, **(hp or {})})
    for step, row in rows(s):
        mon.push(step, row)
    mon.close()
    return {f.id for f in mon.findings}


def _pinned(level: float) -> dict[str, np.ndarray]:
    """KL to the reference ~ 5e-6 all run; the reward gains 0.03 (~ 10 warm-up sigmas of a block
    mean) over steps 30-70, across the end of the warm-up, then holds at `level`."""
    s = base(N)
    rng = np.random.default_rng(3)
    t = np.arange(N, dtype=float)
    gain = 0.03 * np.clip((t - 30) / 40, 0, 1)
    s["reward_mean"] = level - 0.03 + gain + rng.normal(0, 0.01, N)
    s["kl_ref"] = 5e-6 * np.exp(rng.normal(0, 0.2, N))
    return s


def test_kl0_fires_on_a_pinned_policy_stalled_at_a_low_reward() -> None:
    # An early gain of more than 4 warm-up sigmas used to clear the run of KL0 at any level.
    assert "KL0" in _ids(_pinned(0.23))


def test_kl0_spares_a_pinned_run_levelled_off_high() -> None:
    # The same gain ending at 0.8: learned and converged, KL ~ 0 or not.
    assert "KL0" not in _ids(_pinned(0.8))


def _flat_without_kl(lr: np.ndarray) -> dict[str, np.ndarray]:
    """A DAPO run (no KL term, nothing logged for it), on-policy, gradient of a normal size, the
    reward flat at 0.3: only the learning rate tells a stuck run from a quiet one."""
    s = base(N)
    rng = np.random.default_rng(4)
    s["reward_mean"] = 0.3 + rng.normal(0, 0.01, N)
    del s["kl_ref"], s["ppo_kl"]
    s["lr"] = lr
    return s


DAPO_ON_POLICY = {"algorithm": "dapo", "kl_loss_coef": 0.0, "ppo_mini_batch_size": 512}


def test_p1_fires_on_a_flat_run_whose_lr_never_rose_to_a_useful_size() -> None:
    assert "P1" in _ids(_flat_without_kl(np.full(N, 1e-8)), DAPO_ON_POLICY)


def test_p1_reads_the_lr_peak_not_its_decayed_tail() -> None:
    # A cosine schedule from 2e-6 to 0: its latest blocks read ~1e-9, its peak is the job's.
    cosine = 2e-6 * 0.5 * (1 + np.cos(np.pi * np.arange(N) / (N - 1)))
    assert "P1" not in _ids(_flat_without_kl(cosine), DAPO_ON_POLICY)


def _lr_series(means: list[float]) -> Series:
    raw = np.array(
        [(1 + 10 * i, 10 + 10 * i, m, m, m, 10, 0, -1, 0.0, 10 * m, 0, 0, 0, 0)
         for i, m in enumerate(means)], float)
    return Series(metric="lr", raw=raw, baseline=None, peak=max(means),
                  peak_step=10 + 10 * int(np.argmax(means)), peak3=None, peak3_step=None,
                  trough=None, trough_step=None, blocks_total=len(means))


def test_peak_below_reads_the_run_wide_peak_and_ignores_a_print_of_zeros() -> None:
    peak_below = DETECTORS["peak_below"]
    ev = peak_below(_lr_series([5e-9, 1e-8, 1e-8]), {"value": 2e-7})
    assert ev is not None and ev.statistic["peak_ratio"] == 0.05
    assert peak_below(_lr_series([2e-6, 1e-7, 1e-9]), {"value": 2e-7}) is None
    # verl <= 0.4 prints an lr of 1e-6 as 0.000: no evidence of a tiny lr
    assert peak_below(_lr_series([0.0, 0.0, 0.0]), {"value": 2e-7}) is None
