"""Engine speed note (not a test): `python tests/engine/perf_engine.py`.

judge_run on a 2,000-step run with 16 canonical metrics, and Monitor.push per step with 30
metrics (16 tracked + 14 unknown names, as the online hook sees them). CPU time, best and median.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_series import HP, base

from advisor.engine import Monitor, judge_run, load_symptom_rules
from advisor.types import Run


def _run(n: int = 2000) -> Run:
    s = base(n, seed=1)
    s["val_reward"][::50] = s["reward_mean"][::50] - 0.02
    extra = {"loss": np.zeros(n), "lr": np.full(n, 1e-6), "step_time": s["rollout_time"] * 2,
             "pg_clipfrac": np.full(n, 0.01), "prompt_truncation_rate": np.zeros(n)}
    cols = {"step": np.arange(1, n + 1), **s, **extra}
    frame = pl.DataFrame(cols).with_columns(pl.col("val_reward").fill_nan(None))
    return Run(frame=frame, source="perf", format="synthetic")


def main() -> None:
    rules = load_symptom_rules()
    run = _run()
    print(f"frame {run.frame.shape}")
    judge_run(run, HP, rules=rules)
    times = []
    for _ in range(10):
        t = time.process_time()
        judge_run(run, HP, rules=rules)
        times.append(time.process_time() - t)
    print(f"judge_run 2000 steps: best {min(times) * 1e3:.1f} ms, "
          f"median {statistics.median(times) * 1e3:.1f} ms (CPU)")
    mon = Monitor(HP, rules=rules)
    rng = np.random.default_rng(0)
    row = {name: 0.5 for name in mon.tracked} | {f"other/{i}": 1.0 for i in range(30 - 16)}
    per = []
    for step in range(1, 20_001):
        row["reward_mean"] = 0.5 + rng.normal(0, 0.02)
        t = time.perf_counter_ns()
        mon.push(step, row)
        per.append(time.perf_counter_ns() - t)
    print(f"Monitor.push, 30 metrics, 20k steps: median {statistics.median(per) / 1e3:.1f} us, "
          f"p99 {sorted(per)[int(0.99 * len(per))] / 1e3:.1f} us")


if __name__ == "__main__":
    main()
