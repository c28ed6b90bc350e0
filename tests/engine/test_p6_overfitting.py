"""P6 (overfitting): a validation fall that ended before the window, a training reward read at
validation's best (not at its own noisy best), and a fall that began during a reward
oscillation (P2's, even once P2 has cleared)."""

from __future__ import annotations

import math

import numpy as np
from engine_series import HP, base, rows

from advisor.detectors import DETECTORS, Baseline, Series
from advisor.engine import Monitor
from advisor.types import RunEnding


def _judge(s: dict[str, np.ndarray]) -> Monitor:
    mon = Monitor(HP)
    for step, row in rows(s):
        mon.push(step, row)
    mon.close(RunEnding(kind="completed"))
    return mon


def _val(s: dict[str, np.ndarray], shape: np.ndarray, seed: int, every: int = 20) -> None:
    rng = np.random.default_rng(seed)
    idx = np.arange(every - 1, len(shape), every)
    s["val_reward"][idx] = shape[idx] + rng.normal(0, 0.006, len(idx))


def _plateau_run(seed: int, fall: float) -> dict[str, np.ndarray]:
    """1,500 steps, validation every 20 (the window holds its last 32 evaluations, 640 steps):
    validation climbs to a plateau and steps down by `fall` at 400-460, then stays flat."""
    n = 1500
    s = base(n, seed=seed)
    t = np.arange(1, n + 1, dtype=float)
    shape = 0.2 + 0.5 * (1 - np.exp(-t / 150)) - fall * np.clip((t - 400) / 60, 0, 1)
    _val(s, shape, seed)
    return s


def test_a_fall_that_ended_before_the_window_is_overfitting() -> None:
    # After the step there is no trend left to test (flat from step 460 on), so the trend leaf
    # alone missed half of these; a fall ~10 sigmas past the run-wide best is no noise.
    for seed in range(6):
        found = [f for f in _judge(_plateau_run(seed, 0.1)).findings if f.id == "P6"]
        assert found, seed
        assert found[0].onset_step is not None and 340 <= found[0].onset_step <= 420
    # The same run without the fall: a noisy plateau far longer than the window is no decline.
    for seed in range(6):
        assert "P6" not in {f.id for f in _judge(_plateau_run(seed, 0.0)).findings}


def test_a_fall_that_began_during_a_reward_oscillation_is_the_oscillations() -> None:
    # The reward oscillates over steps 200-420 (P2, cleared at 470); validation starts a slow
    # fall at 240, inside that episode, and goes on falling after it: explained by P2, not P6.
    n = 700
    for seed in range(3):
        s = base(n, seed=seed)
        t = np.arange(1, n + 1, dtype=float)
        on = (t > 200) & (t <= 420)
        s["reward_mean"][on] = 0.62 + 0.2 * np.sin(2 * np.pi * (t[on] - 200) / 24)
        _val(s, 0.2 + 0.5 * (1 - np.exp(-t / 100)) - 0.15 * np.clip((t - 240) / 420, 0, 1), seed)
        found = {f.id: f for f in _judge(s).findings}
        assert "P2" in found and found["P2"].cleared_step is not None
        assert "P6" not in found


def _sparse(means: list[float], metric: str, every: int = 1, **extra: object) -> Series:
    """Block records of one value each, a block every `every` 10-step blocks."""
    rows_ = []
    for i, m in enumerate(means):
        start = 1 + i * every * 10
        rows_.append((start, start + 9, m, m, m, 1, 0, -1, math.nan, m, m * m, 0, 0, 0))
    arr = np.asarray(rows_, float)
    base_ = Baseline(median=means[0], scale=0.01, start=means[0], sd=0.01, n_blocks=6,
                     end_step=60)
    kw: dict[str, object] = {"peak3": None, "peak3_step": None, "blocks_total": len(means)}
    kw.update(extra)
    return Series(metric=metric, raw=arr, baseline=base_, peak=max(means), peak_step=None,
                  trough=None, trough_step=None, **kw)  # type: ignore[arg-type]


def test_shared_fall_reads_the_training_reward_at_validations_best() -> None:
    shared = DETECTORS["shared_fall"]
    # Validation (an evaluation every other block): best 0.60 at evaluations 4-6, then 0.45.
    val = _sparse([0.4, 0.5, 0.55, 0.58, 0.6, 0.6, 0.6, 0.55, 0.5, 0.45, 0.45, 0.45], "val_reward",
                  every=2)
    # The training reward falls with it (a curriculum stage): 0.7 -> 0.58.
    both = _sparse([0.5] * 4 + [0.7] * 12 + [0.58] * 8, "reward_mean")
    ev = shared(both, {"_per": val, "ratio": 0.5})
    assert ev is not None and math.isclose(ev.statistic["level_at_best"], 0.7)
    # It held: the gap widened.
    held = _sparse([0.5] * 4 + [0.7] * 20, "reward_mean")
    assert shared(held, {"_per": val, "ratio": 0.5}) is None
    # Its own best was one noisy high block (0.85), far above its level at validation's best:
    # measured from its own best it "fell" 0.15; at validation's best it held (0.7 -> 0.69).
    spiky = _sparse([0.5] * 4 + [0.7] * 4 + [0.85] + [0.7] * 7 + [0.69] * 8, "reward_mean")
    assert shared(spiky, {"_per": val, "ratio": 0.5}) is None
    # A best older than the window: the level the engine kept then (peak3_ctx) is used.
    old = _sparse([0.5, 0.48, 0.46, 0.45, 0.45, 0.45], "val_reward", every=2, peak3=0.6,
                  peak3_step=1, peak3_ctx={"reward_mean": 0.7})
    now = _sparse([0.66] * 12, "reward_mean")
    assert shared(now, {"_per": old, "ratio": 0.5}) is None  # 0.7 -> 0.66 of a 0.15 fall: < half
    fell = _sparse([0.6] * 12, "reward_mean")
    assert shared(fell, {"_per": old, "ratio": 0.5}) is not None
    assert shared(fell, {"ratio": 0.5}) is None  # no companion: nothing to compare


def test_engine_keeps_the_training_level_at_validations_best() -> None:
    s = _plateau_run(0, 0.1)
    mon = Monitor(HP)
    for step, row in rows(s):
        mon.push(step, row)
    val = mon._series("val_reward", {})
    assert val is not None and val.peak3_step is not None
    assert val.peak3_step < val.start[0]  # the best has left the window
    # brute force: the validation points of the best triple, and the training reward's block
    # means (10-step blocks from step 1) over the blocks they span
    steps = np.flatnonzero(np.isfinite(s["val_reward"])) + 1
    v = s["val_reward"][steps - 1]
    top = int(np.argmax(np.convolve(v, np.ones(3) / 3, "valid")))
    first, last = (steps[top] - 1) // 10, (steps[top + 2] - 1) // 10
    blocks = s["reward_mean"][: (last + 1) * 10].reshape(-1, 10).mean(axis=1)
    want = float(blocks[first : last + 1].mean())
    assert math.isclose(val.peak3_ctx["reward_mean"], want, rel_tol=1e-9)


def test_peak_bias_over_the_run_counts_every_evaluation() -> None:
    # The window's 30 points, but a run-wide best chosen among 300: its expected excess is
    # sqrt(2 ln 100) = 3.0 smoothed sigmas, not sqrt(2 ln 10) = 2.1; a fall between the two
    # thresholds passes the window count only. The wiggle alternates: second differences read
    # it 2.6x its spread, the rise-then-fall fit (taken instead, test_p6_noise.py) 1.3x.
    drop = DETECTORS["drop_from_peak"]
    wiggle = [0.0, 0.006, -0.004, 0.005, -0.006, 0.002]
    level = [0.6] * 12 + [0.6 - 0.023 * min(1.0, i / 3) for i in range(1, 19)]
    means = [v + wiggle[i % 6] for i, v in enumerate(level)]
    p = {"scale": "window", "smooth": 3, "peak_bias": True, "min_z": 2.5, "k": 3, "m": 3}
    window = _sparse(means, "val_reward")
    run = _sparse(means, "val_reward", blocks_total=300)
    assert drop(window, p) is not None and drop(run, p) is not None  # no bias_run: as before
    assert drop(run, {**p, "bias_run": True}) is None
    assert drop(window, {**p, "bias_run": True}) is not None  # the window is the whole run


def _noisy_fall(seed: int, back_from: int | None = None) -> dict[str, np.ndarray]:
    """_plateau_run's fall, 0.15, under validation noise of 0.025 (a small validation set),
    and from `back_from` on validation back where it was."""
    n = 1500
    s = base(n, seed=seed)
    t = np.arange(1, n + 1, dtype=float)
    shape = 0.2 + 0.5 * (1 - np.exp(-t / 150)) - 0.15 * np.clip((t - 400) / 60, 0, 1)
    if back_from is not None:
        shape[back_from:] = 0.2 + 0.5 * (1 - np.exp(-t[back_from:] / 150))
    rng = np.random.default_rng(seed)
    idx = np.arange(19, n, 20)
    s["val_reward"][idx] = shape[idx] + rng.normal(0, 0.025, len(idx))
    return s


def test_one_evaluation_back_up_does_not_clear_overfitting() -> None:
    # Reported from the trend; a fall that levelled off has no trend left, and one evaluation
    # back near the best broke the 3-of-3 run: P6 "cleared" though validation stayed 0.1 down
    # (judge seed 777000). Once reported, it holds while 2 of the last 3 stay down.
    seeds = range(12)
    runs = [{f.id: f for f in _judge(_noisy_fall(seed, None)).findings} for seed in seeds]
    assert sum("P6" in found for found in runs) >= 10
    cleared = [s for s, f in zip(seeds, runs, strict=True) if "P6" in f and f["P6"].cleared_step]
    assert cleared == []
    # ...and validation that really came back clears it.
    back = [{f.id: f for f in _judge(_noisy_fall(seed, 1000)).findings} for seed in seeds]
    assert sum("P6" in found for found in back) >= 8
    assert all(found["P6"].cleared_step for found in back if "P6" in found)


def _long_plateau(seed: int, n: int = 2400, every: int = 6) -> dict[str, np.ndarray]:
    """A healthy saturating run evaluated every 6 steps on a small validation set (sd 0.037):
    ~400 evaluations, its best the best of all of them."""
    s = base(n, seed=seed)
    t = np.arange(1, n + 1, dtype=float)
    shape = 0.3 + 0.45 * (1 - np.exp(-t / 300))
    rng = np.random.default_rng(seed + 100)
    idx = np.arange(every - 1, n, every)
    s["val_reward"][idx] = shape[idx] + rng.normal(0, 0.037, len(idx))
    return s


def test_a_run_wide_best_of_many_evaluations_is_no_fall() -> None:
    # The fall is measured from the run's best 3-evaluation mean: its selection excess counts
    # every evaluation the run made, not the window's 32 (seed 20 fell 3 x 2.5 sigmas short of
    # a best-of-130 peak and made P6 on a run that never declined).
    for seed in range(18, 22):
        mon = Monitor({**HP, "eval_steps": 6})
        for step, row in rows(_long_plateau(seed)):
            mon.push(step, row)
        mon.close(RunEnding(kind="completed"))
        assert "P6" not in {f.id for f in mon.findings}, seed


def _falls_to_the_end(seed: int, n: int = 363) -> dict[str, np.ndarray]:
    """Validation every 20 steps and once more at the last step (as verl does), falling 0.3
    from step 300 on; the last block (steps 361-363) is shorter than half a block."""
    s = base(n, seed=seed)
    t = np.arange(1, n + 1, dtype=float)
    shape = 0.3 + 0.4 * (1 - np.exp(-t / 100)) - 0.3 * np.clip((t - 300) / 100, 0, 1)
    rng = np.random.default_rng(seed + 50)
    idx = np.append(np.arange(19, n, 20), n - 1)
    s["val_reward"][idx] = shape[idx] + rng.normal(0, 0.01, len(idx))
    return s


def test_a_final_evaluation_in_a_short_last_block_is_judged() -> None:
    # A short last block is too noisy for trends of densely logged metrics, but an evaluation
    # in it is a whole one: the decline it completes is the run's last word.
    for seed in range(3):
        found = {f.id: f for f in _judge(_falls_to_the_end(seed)).findings}
        assert "P6" in found, seed
