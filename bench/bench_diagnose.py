"""Benchmarks of `rl-advisor diagnose` (issue 4 targets). Generates its own data.

1. End to end: `rl-advisor diagnose` (a subprocess, as a user runs it) of a 2,000-step x
   150-metric verl JSONL, against `python -c "import polars; polars.read_ndjson(FILE)"` on the
   same file. Target: ratio <= 2.
2. Batch API: `advisor.api.diagnose_many` of 1,000 runs of 500 steps on 2 workers.
   Target: < 30 s.

Prints medians over --repeats runs (default 5) and the ratios.
    .venv/bin/python bench/bench_diagnose.py [--repeats 5] [--runs 1000] [--workers 2]
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# verl's names for the canonical metrics (contract.md), then filler keys up to 150 columns.
CORE = {
    "critic/rewards/mean": lambda s, r: 0.2 + 0.5 * (1 - math.exp(-s / 300)) + r.gauss(0, 0.03),
    "critic/score/mean": lambda s, r: 0.2 + 0.5 * (1 - math.exp(-s / 300)) + r.gauss(0, 0.03),
    "actor/ppo_kl": lambda s, r: abs(r.gauss(0.001, 0.0003)),
    "actor/kl_loss": lambda s, r: 0.002 + 0.00001 * s + abs(r.gauss(0, 0.0005)),
    "actor/grad_norm": lambda s, r: abs(r.gauss(0.3, 0.05)),
    "actor/entropy": lambda s, r: 0.8 - 0.2 * (1 - math.exp(-s / 500)) + r.gauss(0, 0.02),
    "response_length/clip_ratio": lambda s, r: abs(r.gauss(0.01, 0.003)),
    "prompt_length/clip_ratio": lambda s, r: 0.0,
    "response_length/mean": lambda s, r: 600 + r.gauss(0, 20),
    "actor/pg_clipfrac": lambda s, r: abs(r.gauss(0.002, 0.0005)),
    "actor/lr": lambda s, r: 2e-6,
    "timing_s/step": lambda s, r: 60 + r.gauss(0, 2),
    "timing_s/gen": lambda s, r: 25 + r.gauss(0, 1),
}


def write_run(path: Path, steps: int, metrics: int, seed: int, eval_every: int = 50) -> None:
    """A healthy verl file-logger JSONL: {"step": N, "data": {flat metrics}} per line."""
    rng = random.Random(seed)
    fillers = [f"perf/extra_{i:03d}" for i in range(max(0, metrics - len(CORE) - 1))]
    with path.open("w") as fh:
        for s in range(1, steps + 1):
            data = {k: round(f(s, rng), 6) for k, f in CORE.items()}
            for k in fillers:
                data[k] = round(rng.random(), 6)
            if s % eval_every == 0:
                data["val-core/gsm8k/reward/mean@1"] = round(
                    0.3 + 0.4 * (1 - math.exp(-s / 300)), 6
                )
            fh.write(json.dumps({"step": s, "data": data}) + "\n")


def _env() -> dict[str, str]:
    """The user's environment, except that bytecode is cached as on any normal install (this
    sandbox sets PYTHONDONTWRITEBYTECODE; polars' own .pyc files were compiled by pip)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def compile_package() -> None:
    """What `pip install` does for a wheel: compile the package's .pyc files once, so that no
    repetition pays for compiling our sources while polars' are already compiled."""
    import advisor

    compileall.compile_dir(Path(advisor.__file__).parent, quiet=1)


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def run_once(cmd: list[str]) -> tuple[float, float, int]:
    """Wall time, CPU time (all the process's threads) and exit code of one run."""
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env()
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    return elapsed, _children_cpu() - cpu0, proc.returncode


Timing = tuple[float, float, float, int]  # median wall, median per-round ratio, median CPU, rc


def timed_pairs(
    base_cmd: list[str], cmds: dict[str, list[str]], repeats: int
) -> tuple[Timing, dict[str, Timing]]:
    """Run the baseline and each command in turn, `repeats` rounds: on a shared machine the
    load drifts, and a ratio taken within one round is steadier than a ratio of medians.
    Returns the baseline's and, per command, (median wall, median per-round ratio, median CPU
    time, rc). CPU time above the wall time is other threads: polars' readers, numpy's BLAS
    pool (which spins a while after numpy is imported: CPU a loaded machine lacks)."""
    base: list[tuple[float, float]] = []
    got: dict[str, list[tuple[float, float, float]]] = {k: [] for k in cmds}
    rcs: dict[str, int] = {}
    for _ in range(repeats):
        b, b_cpu, _ = run_once(base_cmd)
        base.append((b, b_cpu))
        for name, cmd in cmds.items():
            t, cpu, rcs[name] = run_once(cmd)
            got[name].append((t, t / b, cpu))
    out = {
        k: (
            statistics.median(t for t, _, _ in v),
            statistics.median(r for _, r, _ in v),
            statistics.median(c for _, _, c in v),
            rcs[k],
        )
        for k, v in got.items()
    }
    wall, cpu = statistics.median(b for b, _ in base), statistics.median(c for _, c in base)
    return (wall, 1.0, cpu, 0), out


def bench_end_to_end(tmp: Path, repeats: int) -> float:
    path = tmp / "run-2000x150.jsonl"
    write_run(path, 2000, 150, seed=1)
    compile_package()
    py = [sys.executable]
    base, got = timed_pairs(
        [*py, "-c", f"import polars; polars.read_ndjson({str(path)!r})"],
        {
            "rl-advisor diagnose": [*py, "-m", "advisor", "diagnose", str(path)],
            "rl-advisor diagnose --json": [
                *py,
                "-m",
                "advisor",
                "diagnose",
                str(path),
                "--format",
                "json",
            ],
        },
        repeats,
    )
    print(
        f"end to end, 2,000 steps x 150 metrics ({path.stat().st_size / 1e6:.1f} MB), "
        f"median of {repeats} rounds (each round runs all three; load average "
        f"{os.getloadavg()[0]:.2f} at the end):"
    )
    print(f"  polars.read_ndjson           {base[0]:7.3f} s  (CPU {base[2]:.3f} s)")
    for name, (t, r, cpu, rc) in got.items():
        print(
            f"  {name:<28} {t:7.3f} s  ratio {t / base[0]:.2f} (median per-round {r:.2f};"
            f" target <= 2), CPU {cpu:.3f} s, exit {rc}"
        )
    ratio = got["rl-advisor diagnose"][1]
    breakdown(path)
    return ratio


BREAKDOWN = """
import os, sys, time
t = time.perf_counter()
cpu0 = time.process_time()
def lap(name):
    global t
    now = time.perf_counter(); print(f"    {name:<48}{now - t:7.3f} s"); t = now
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # as advisor.cli.main does
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # likewise
import gc; gc.disable()  # as the diagnose command does from here on
import advisor.cli.diagnose_core; lap("import cli.diagnose_core (pydantic, types)")
import advisor.api; lap("import api")
import numpy; lap("import numpy (api.diagnose imports the engine)")
import advisor.engine, advisor.static; lap("import engine, detectors, static")
import polars; lap("import polars (in load_run)")
from advisor.ingest import load_run; run = load_run(sys.argv[1]); lap("ingest.load_run")
from advisor.config import load_config; from advisor.static import check
loaded = load_config(None, hints=run.config_hints); cf = check(loaded); lap("config + static rules")
from advisor.engine import judge_run, load_symptom_rules
load_symptom_rules(); lap("rulebook")
j = judge_run(run, loaded.hyper_parameters, origin=loaded.origin); lap("engine.judge_run")
from advisor.api import assemble; d = assemble(run, loaded.hyper_parameters, j, cf, loaded.origin)
lap("remedy + assemble")
import jinja2; lap("import jinja2")
from advisor.report import render; render(d); lap("render markdown")
print(f"    CPU time of all threads {time.process_time() - cpu0:.3f} s")
"""


def breakdown(path: Path) -> None:
    """Where the end-to-end time goes, stage by stage, in a fresh process, in the order
    `rl-advisor diagnose` meets them (the start-up of Python itself is not in it). The stages
    run one after the other here; the command reads the run (polars) on a second thread while
    it imports the engine and parses the job file (advisor.reading)."""
    print("  breakdown (one fresh process):")
    subprocess.run([sys.executable, "-c", BREAKDOWN, str(path)], check=False, env=_env())


def bench_batch(tmp: Path, runs: int, workers: int, repeats: int) -> float:
    from advisor.api import diagnose_many
    from advisor.types import InputError

    paths = []
    for i in range(runs):
        p = tmp / f"batch-{i:04d}.jsonl"
        write_run(p, 500, len(CORE) + 2, seed=100 + i, eval_every=25)
        paths.append(p)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = diagnose_many(paths, workers=workers)
        times.append(time.perf_counter() - t0)
    bad = [o for o in out if isinstance(o, InputError)]
    from collections import Counter

    findings = Counter(
        f"{f.id}/{f.severity.value}"
        for o in out
        if not isinstance(o, InputError)
        for f in o.findings
    )
    med = statistics.median(times)
    print(f"batch API, {runs} runs x 500 steps, {workers} workers, median of {repeats}:")
    print(
        f"  diagnose_many              {med:7.3f} s  ({runs / med:.0f} runs/s; target < 30 s "
        f"for 1,000 runs: {med * 1000 / runs:.1f} s scaled), {len(bad)} unusable, "
        f"findings on these healthy runs: {dict(findings) or 'none'}"
    )
    return med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-batch", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-diagnose-") as d:
        tmp = Path(d)
        bench_end_to_end(tmp, args.repeats)
        if not args.skip_batch:
            bench_batch(tmp, args.runs, args.workers, args.repeats)


if __name__ == "__main__":
    main()
