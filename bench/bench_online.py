"""Benchmark of the online hook: `Advisor.observe` time per step and memory over a long run.

    .venv/bin/python bench/bench_online.py            # full: 200,000 steps for the memory test
    .venv/bin/python bench/bench_online.py --quick    # smaller, for a smoke run

Targets (issue 6): observe() median <= 50 us per step with 30 metrics (verl's raw names, as
an orchestrator passes them); memory growth (tracemalloc) from step 20,000 to step 200,000
below 5 MB. The time is split into name mapping (Advisor) and the engine's push (Monitor), so a
slow part can be told apart.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Iterator

from advisor.online import Advisor

HP = {
    "algorithm": "gspo",
    "learning_rate": 2e-6,
    "kl_loss_coef": 0.001,
    "batch_size": 64,
    "n_rollouts": 8,
    "ppo_mini_batch_size": 8,
    "eval_steps": 50,
    "n_epochs": 3,
    "max_length": 8192,
    "max_prompt_length": 1024,
}

# 15 names the engine reads (verl spelling) + 15 it does not: 30 metrics per step.
KNOWN = (
    "critic/rewards/mean", "critic/score/mean", "critic/rewards/std", "actor/ppo_kl",
    "actor/kl_loss", "actor/grad_norm", "actor/entropy", "response_length/clip_ratio",
    "prompt_length/clip_ratio", "response_length/mean", "actor/pg_clipfrac", "actor/lr",
    "timing_s/step", "timing_s/gen", "actor/pg_loss",
)  # fmt: skip
OTHER = (
    *(f"perf/extra_{i}" for i in range(11)),
    "global_seqlen/mean", "critic/vf_loss", "perf/max_memory_allocated_gb", "training/epoch",
)  # fmt: skip
assert len(KNOWN) + len(OTHER) == 30


def steps(n: int, seed: int = 0) -> Iterator[tuple[int, dict[str, float]]]:
    """A healthy noisy run: slow reward gain, steady entropy, small KL; val every 50 steps."""
    rnd = random.Random(seed)
    for step in range(1, n + 1):
        progress = 1 - math.exp(-step / 3000)
        m = {name: rnd.gauss(1.0, 0.05) for name in OTHER}
        m.update(
            {
                "critic/rewards/mean": 0.2 + 0.5 * progress + rnd.gauss(0, 0.03),
                "critic/score/mean": 0.2 + 0.5 * progress + rnd.gauss(0, 0.03),
                "critic/rewards/std": 0.3 + rnd.gauss(0, 0.01),
                "actor/ppo_kl": abs(rnd.gauss(0.002, 0.0005)),
                "actor/kl_loss": 0.01 + 0.02 * progress + rnd.gauss(0, 0.002),
                "actor/grad_norm": abs(rnd.gauss(0.5, 0.05)),
                "actor/entropy": 0.6 - 0.1 * progress + rnd.gauss(0, 0.01),
                "response_length/clip_ratio": abs(rnd.gauss(0.01, 0.003)),
                "prompt_length/clip_ratio": 0.0,
                "response_length/mean": 900 + rnd.gauss(0, 20),
                "actor/pg_clipfrac": abs(rnd.gauss(0.002, 0.0005)),
                "actor/lr": 2e-6,
                "timing_s/step": 60 + rnd.gauss(0, 2),
                "timing_s/gen": 30 + rnd.gauss(0, 1),
                "actor/pg_loss": rnd.gauss(0, 0.05),
            }
        )
        if step % HP["eval_steps"] == 0:
            m["val-core/openai/gsm8k/reward/mean@1"] = 0.2 + 0.5 * progress
        yield step, m


def bench_time(n: int) -> dict[str, float]:
    adv = Advisor(hyper_parameters=HP)
    data = list(steps(n))
    adv.observe(*data[0])  # builds the engine and loads the rulebook: not a per-step cost
    times = []
    for step, m in data[1:]:
        t0 = time.perf_counter_ns()
        adv.observe(step, m)
        times.append(time.perf_counter_ns() - t0)
    # where the time goes: the engine's own push, replayed on the same canonical rows
    from advisor.engine import Monitor

    mon = Monitor(adv.hyper_parameters)
    rows = [(s, adv._row(m)) for s, m in data]
    push = []
    for step, row in rows:
        t0 = time.perf_counter_ns()
        mon.push(step, row)
        push.append(time.perf_counter_ns() - t0)
    mapping = []
    for _, m in data:
        t0 = time.perf_counter_ns()
        adv._row(m)
        mapping.append(time.perf_counter_ns() - t0)
    us = 1e-3
    return {
        "observe_median_us": statistics.median(times) * us,
        "observe_mean_us": statistics.fmean(times) * us,
        "observe_p99_us": sorted(times)[int(0.99 * len(times))] * us,
        "engine_push_median_us": statistics.median(push) * us,
        "name_mapping_median_us": statistics.median(mapping) * us,
        "findings": float(len(adv.findings)),
    }


def bench_memory(first: int, last: int) -> dict[str, float]:
    adv = Advisor(hyper_parameters=HP)
    tracemalloc.start()
    at_first = 0
    for step, m in steps(last, seed=1):
        adv.observe(step, m)
        if step == first:
            at_first = tracemalloc.get_traced_memory()[0]
    at_last = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    mb = 1 / (1 << 20)
    return {
        f"traced_mb_at_{first}": at_first * mb,
        f"traced_mb_at_{last}": at_last * mb,
        "growth_mb": (at_last - at_first) * mb,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps (smoke run)")
    args = ap.parse_args()
    n_time, first, last = (2_000, 2_000, 20_000) if args.quick else (20_000, 20_000, 200_000)
    t = bench_time(n_time)
    print(f"observe() with 30 metrics over {n_time} steps:")
    for k, v in t.items():
        print(f"  {k:26} {v:10.2f}")
    m = bench_memory(first, last)
    print(f"memory (tracemalloc) from step {first} to step {last}:")
    for k, v in m.items():
        print(f"  {k:26} {v:10.3f}")
    ok = t["observe_median_us"] <= 50 and m["growth_mb"] < 5
    print("targets (median <= 50 us, growth < 5 MB):", "met" if ok else "NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
