"""Benchmark the metric readers against polars alone (issue 3, "Speed").

    .venv/bin/python bench/bench_ingest.py [--steps 2000] [--metrics 150] [--repeat 7]

Generates its own data in a temp dir: a verl console log (Ray prefix, ANSI colours, other output
interleaved, validation metrics every 10th step) and the same values as verl file-logger JSONL
and as flat JSONL; then a Parquet file
of 100,000 steps. Prints, for wall time and for the process's CPU time (all threads; on a shared
machine the steadier of the two), the median of each reader and the median per-pair ratio to
`polars.read_ndjson` on the flat JSONL (target: <= 1.5x); for Parquet the time (target: < 0.5 s)
and what `load_run` adds on top of `polars.read_parquet`.

`--fresh` instead reads, in fresh processes taken in turn, the files of bench_scale.py (verl
file-logger JSONL as polars writes it: 2,000 x 150, and 500 x 14 as diagnose_many's runs; with
`--big` also 200,000 x 30) and prints the median CPU of `polars.read_ndjson(F)` (the floor,
after `import polars`) beside that of what `rl-advisor diagnose` does to read the run
(`api._with_run_file(F, api.load_run(F))`, after the command's imports), as bench_phases.py
measures them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

VERL_KEYS = (
    "critic/rewards/mean", "critic/score/mean", "actor/entropy", "actor/kl_loss", "actor/ppo_kl",
    "actor/grad_norm", "actor/pg_clipfrac", "actor/lr", "response_length/mean",
    "response_length/clip_ratio", "prompt_length/clip_ratio", "timing_s/step", "timing_s/gen",
)  # fmt: skip


def metric_names(n: int) -> list[str]:
    extra = [f"perf/extra_{i:03d}/mean" for i in range(max(0, n - len(VERL_KEYS)))]
    return [*VERL_KEYS, *extra][:n]


VAL_KEYS = ("val-core/gsm8k/reward/mean@1", "val-aux/gsm8k/reward/std@1")


def make_data(steps: int, n_metrics: int, seed: int = 0) -> list[dict[str, float]]:
    """Every step the same metrics; every 10th step also the validation ones, among the others
    as verl prints them (so a 10th of the lines do not repeat the common key sequence)."""
    rng = random.Random(seed)
    keys = metric_names(n_metrics)
    rows = []
    for step in range(1, steps + 1):
        names = [*keys[:2], *VAL_KEYS, *keys[2:]] if step % 10 == 0 else keys
        rows.append({k: rng.random() for k in names})
    return rows


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


def _once(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds of one call; CPU time counts every thread of the process."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


@dataclass
class Paired:
    base_wall: float
    wall: float
    wall_ratio: float
    base_cpu: float
    cpu: float
    cpu_ratio: float


def paired(base: Callable[[], object], fn: Callable[[], object], repeat: int) -> Paired:
    """Medians of base and fn, and of the per-pair ratios, the two run alternately so that load
    from other processes on a shared machine hits both alike."""
    base(), fn()  # warm-up: imports, caches
    pairs = [(_once(base), _once(fn)) for _ in range(repeat)]
    med = statistics.median
    return Paired(
        base_wall=med(b[0] for b, _ in pairs),
        wall=med(t[0] for _, t in pairs),
        wall_ratio=med(t[0] / b[0] for b, t in pairs),
        base_cpu=med(b[1] for b, _ in pairs),
        cpu=med(t[1] for _, t in pairs),
        cpu_ratio=med(t[1] / max(b[1], 1e-9) for b, t in pairs),
    )


def _flag(ratio: float, target: float = 1.5) -> str:
    return "ok" if ratio <= target else f"SLOW (target <= {target}x)"


FRESH_FLOOR = """
import sys, time
import polars
t = time.process_time()
polars.read_ndjson(sys.argv[1])
print(time.process_time() - t)
"""

FRESH_READ = """
import gc, os, sys, time
from pathlib import Path
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
gc.disable()  # as the command runs
import advisor.cli.diagnose_core
import polars
from advisor import api
from advisor import engine  # noqa: F401 (imported before the read, as bench_phases.py does)
metrics = Path(sys.argv[1])
t = time.process_time()
api._with_run_file(metrics, api.load_run(metrics))
print(time.process_time() - t)
"""


def _fresh_cpu(code: str, path: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # run beside the file: `-c` puts the working directory first on sys.path, and a checkout
    # there would be imported instead of the rl-advisor installed (or on PYTHONPATH)
    cmd = [sys.executable, "-c", code, str(path)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, cwd=path.parent)
    return float(out.stdout.split()[-1])


def fresh_reads(big: bool, rounds: int) -> None:
    """The floor's read and ours, each in a fresh process, in turn (see the module doc)."""
    from bench_diagnose import CORE, write_run
    from bench_scale import write_verl_jsonl

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        files = [("2,000 x 150", write_verl_jsonl(d / "h2k.jsonl", 2000, 150))]
        write_run(d / "r500.jsonl", 500, len(CORE) + 2, seed=100, eval_every=25)
        files.append(("500 x 14", d / "r500.jsonl"))
        if big:
            files.append(("200,000 x 30", write_verl_jsonl(d / "b30.jsonl", 200_000, 30)))
        print(f"fresh processes, median CPU of {rounds} rounds (ms): floor read_ndjson, ours")
        for name, path in files:
            floor, ours = [], []
            for _ in range(rounds):
                floor.append(_fresh_cpu(FRESH_FLOOR, path))
                ours.append(_fresh_cpu(FRESH_READ, path))
            f, o = statistics.median(floor) * 1e3, statistics.median(ours) * 1e3
            size = path.stat().st_size / 1e6
            print(
                f"  {name:<13} {size:7.1f} MB   floor {f:8.1f}   read the run {o:8.1f}"
                f"   {o / f:4.2f}x the floor"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--metrics", type=int, default=150)
    ap.add_argument("--parquet-steps", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--fresh", action="store_true", help="fresh-process reads beside the floor")
    ap.add_argument("--big", action="store_true", help="with --fresh: also 200,000 x 30")
    args = ap.parse_args()
    if args.fresh:
        fresh_reads(args.big, args.repeat)
        return

    import polars as pl

    from advisor.ingest import load_run

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        files = write_files(d, make_data(args.steps, args.metrics))

        def base() -> object:
            return pl.read_ndjson(files["flat_jsonl"])

        print(f"{args.steps} steps x {args.metrics} metrics, median of {args.repeat} paired runs")
        print("  (wall / CPU ms; ratio = load_run / polars.read_ndjson of the flat JSONL)")
        cases = [
            ("console", base, "flat JSONL"),
            ("verl_jsonl", base, "flat JSONL"),
            ("verl_jsonl", lambda: pl.read_ndjson(files["verl_jsonl"]), "same file"),
            ("flat_jsonl", base, "flat JSONL"),
        ]
        for name, baseline, what in cases:
            run = load_run(files[name])
            assert run.steps == args.steps, (name, run.steps)
            r = paired(baseline, lambda name=name: load_run(files[name]), args.repeat)
            print(
                f"  load_run {name:<10} {r.wall * 1e3:6.1f} / {r.cpu * 1e3:6.1f}   "
                f"polars ({what:<10}) {r.base_wall * 1e3:6.1f} / {r.base_cpu * 1e3:6.1f}   "
                f"ratio wall {r.wall_ratio:4.2f}x {_flag(r.wall_ratio)}, "
                f"CPU {r.cpu_ratio:4.2f}x {_flag(r.cpu_ratio)}"
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
        r = paired(lambda: pl.read_parquet(pq), lambda: load_run(pq), args.repeat)
        flag = "ok" if r.wall < 0.5 else "SLOW (target < 0.5 s)"
        print(f"{n} steps x {args.metrics} metrics from Parquet, median of {args.repeat}")
        print(
            f"  load_run parquet {r.wall * 1e3:6.1f} / {r.cpu * 1e3:6.1f}   "
            f"polars.read_parquet {r.base_wall * 1e3:6.1f} / {r.base_cpu * 1e3:6.1f}   "
            f"overhead ratio wall {r.wall_ratio:4.2f}x, CPU {r.cpu_ratio:4.2f}x   {flag}"
        )


if __name__ == "__main__":
    main()
