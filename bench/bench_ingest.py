"""Benchmark the metric readers against polars alone (issue 3, "Speed").

    .venv/bin/python bench/bench_ingest.py [--steps 2000] [--metrics 150] [--repeat 7]

Generates its own data in a temp dir: a verl console log (Ray prefix, ANSI colours, other output
interleaved) and the same values as verl file-logger JSONL and as flat JSONL; then a Parquet file
of 100,000 steps. Prints the median of each reader and its ratio to `polars.read_ndjson` on the
flat JSONL (target: <= 1.5x), and the Parquet time (target: < 0.5 s).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

VERL_KEYS = (
    "critic/rewards/mean", "critic/score/mean", "actor/entropy", "actor/kl_loss", "actor/ppo_kl",
    "actor/grad_norm", "actor/pg_clipfrac", "actor/lr", "response_length/mean",
    "response_length/clip_ratio", "prompt_length/clip_ratio", "timing_s/step", "timing_s/gen",
)  # fmt: skip


def metric_names(n: int) -> list[str]:
    extra = [f"perf/extra_{i:03d}/mean" for i in range(max(0, n - len(VERL_KEYS)))]
    return [*VERL_KEYS, *extra][:n]


def make_data(steps: int, n_metrics: int, seed: int = 0) -> list[dict[str, float]]:
    rng = random.Random(seed)
    keys = metric_names(n_metrics)
    return [{k: rng.random() for k in keys} for _ in range(steps)]


def write_files(d: Path, rows: list[dict[str, float]]) -> dict[str, Path]:
    console, verl_jsonl, flat = d / "run.log", d / "run.verl.jsonl", d / "flat.jsonl"
    with console.open("w") as fh:
        fh.write("\x1b[36m(TaskRunner pid=1234)\x1b[0m {'trainer': {'test_freq': 10}}\n")
        for step, row in enumerate(rows, start=1):
            pairs = " - ".join(f"{k}:{v!r}" for k, v in row.items())
            fh.write(f"\x1b[36m(TaskRunner pid=1234)\x1b[0m step:{step} - {pairs}\n")
            if step % 10 == 0:
                fh.write("(WorkerDict pid=99) some other output, a warning or a sample\n")
    with verl_jsonl.open("w") as fh:
        for step, row in enumerate(rows, start=1):
            fh.write(json.dumps({"step": step, "data": row}) + "\n")
    with flat.open("w") as fh:
        for step, row in enumerate(rows, start=1):
            fh.write(json.dumps({"step": step, **row}) + "\n")
    return {"console": console, "verl_jsonl": verl_jsonl, "flat_jsonl": flat}


def _once(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def paired(
    base: Callable[[], object], fn: Callable[[], object], repeat: int
) -> tuple[float, float, float]:
    """Median base time, median fn time and median per-pair ratio, the two run alternately so
    that load from other processes on a shared machine hits both alike."""
    base(), fn()  # warm-up: imports, caches
    pairs = [(_once(base), _once(fn)) for _ in range(repeat)]
    b = statistics.median(p[0] for p in pairs)
    t = statistics.median(p[1] for p in pairs)
    return b, t, statistics.median(p[1] / p[0] for p in pairs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--metrics", type=int, default=150)
    ap.add_argument("--parquet-steps", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()

    import polars as pl

    from advisor.ingest import load_run

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        files = write_files(d, make_data(args.steps, args.metrics))

        def base() -> object:
            return pl.read_ndjson(files["flat_jsonl"])

        print(f"{args.steps} steps x {args.metrics} metrics, median of {args.repeat} paired runs")
        cases = [
            ("console", base, "flat JSONL"),
            ("verl_jsonl", base, "flat JSONL"),
            ("verl_jsonl", lambda: pl.read_ndjson(files["verl_jsonl"]), "same file"),
            ("flat_jsonl", base, "flat JSONL"),
        ]
        for name, baseline, what in cases:
            run = load_run(files[name])
            assert run.steps == args.steps, (name, run.steps)
            b, t, ratio = paired(baseline, lambda name=name: load_run(files[name]), args.repeat)
            flag = "ok" if ratio <= 1.5 else "SLOW (target <= 1.5x)"
            print(
                f"  load_run {name:<12} {t * 1000:7.1f} ms   polars.read_ndjson ({what:<10}) "
                f"{b * 1000:7.1f} ms   ratio {ratio:5.2f}x  {flag}"
            )

        pq = d / "big.parquet"
        cols = metric_names(args.metrics)
        n = args.parquet_steps
        import numpy as np

        rng = np.random.default_rng(0)
        pl.DataFrame(
            {"step": np.arange(1, n + 1), **{k: rng.random(n) for k in cols}}
        ).write_parquet(pq)
        assert load_run(pq).steps == n
        raw, t, _ = paired(lambda: pl.read_parquet(pq), lambda: load_run(pq), args.repeat)
        flag = "ok" if t < 0.5 else "SLOW (target < 0.5 s)"
        print(f"{n} steps x {args.metrics} metrics from Parquet, median of {args.repeat}")
        print(f"  load_run parquet {t * 1000:7.1f} ms   polars.read_parquet {raw * 1000:7.1f} ms")
        print(f"  {flag}")


if __name__ == "__main__":
    main()
