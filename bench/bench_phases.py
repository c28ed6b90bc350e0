"""Where one cold `rl-advisor diagnose` spends its CPU, phase by phase, beside the floor's.

    .venv-bench/bin/python bench/bench_phases.py RUN.jsonl [--config JOB.yaml] [--markdown]

Each round runs, in fresh processes, the floor (`import polars; polars.read_ndjson(F)`) and the
diagnosis's steps one after the other (what `rl-advisor diagnose` does, without the overlap of
the read with the imports of the API and the engine), and prints the median CPU of each phase
(all threads: polars reads in parallel). Run it with the interpreter of an installed rl-advisor, as
bench_scale.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

FLOOR = """
import json, sys, time
t = time.process_time(); out = []
def lap(name):
    global t
    now = time.process_time(); out.append((name, now - t)); t = now
import polars; lap("import polars")
polars.read_ndjson(sys.argv[1]); lap("read_ndjson")
print(json.dumps(out))
"""

PHASES = """
import gc, json, os, sys, time
from pathlib import Path
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
gc.disable()  # as the command runs
t = time.process_time(); out = []
def lap(name):
    global t
    now = time.process_time(); out.append((name, now - t)); t = now
metrics, config, fmt = Path(sys.argv[1]), sys.argv[2] or None, sys.argv[3]
import advisor.cli.diagnose_core as core; lap("import the command")
import polars; lap("import polars")
from advisor import api; lap("import the API (rulebooks)")
from advisor import engine; lap("import the engine (numpy)")
from advisor.ingest import load_run
run = api._with_run_file(metrics, load_run(metrics)); lap("read the run")
job = api.resolve_job(run, config); lap("resolve the job")
judgement = engine.judge_run(run, job.judged_hp, origin=job.judged_origin); lap("judge_run")
found = api.config_findings_of(job.loaded); lap("config rules")
d = api.assemble(job.run, job.hp, judgement, config_findings=found, origin=job.origin,
                 config_given=config is not None, caps=api.scale_caps(job.loaded),
                 framework=job.framework, framework_facts=job.loaded.facts)
d = api.with_file_diff(d, config); lap("remedy, advice, Diagnosis")
import tempfile
with tempfile.TemporaryDirectory() as tmp:
    core.staged_report(d, fmt, "r", Path(tmp) if fmt == "markdown" else None, "--output")
lap("render" + (" (+ charts)" if fmt == "markdown" else ""))
print(json.dumps(out))
"""


def _run(code: str, *args: str) -> list[tuple[str, float]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # run outside the checkout: `python -c` puts the current directory first on sys.path, and a
    # checkout's `advisor/` would be measured in place of the installed package
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return [tuple(x) for x in json.loads(out.stdout.splitlines()[-1])]  # type: ignore[misc]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metrics")
    ap.add_argument("--config", "-c", default="")
    ap.add_argument("--markdown", action="store_true", help="the report with its charts")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    args.metrics = str(Path(args.metrics).resolve())
    args.config = str(Path(args.config).resolve()) if args.config else ""
    floor: dict[str, list[float]] = {}
    ours: dict[str, list[float]] = {}
    fmt = "markdown" if args.markdown else "json"
    for _ in range(args.rounds):
        for name, cpu in _run(FLOOR, args.metrics):
            floor.setdefault(name, []).append(cpu)
        for name, cpu in _run(PHASES, args.metrics, args.config, fmt):
            ours.setdefault(name, []).append(cpu)
    total_floor = sum(statistics.median(v) for v in floor.values())
    print(f"floor, {args.rounds} rounds (median CPU ms):")
    for name, v in floor.items():
        print(f"  {name:<40} {statistics.median(v) * 1e3:7.1f}")
    print(f"  {'total':<40} {total_floor * 1e3:7.1f}")
    print(f"rl-advisor diagnose --format {fmt}, phase by phase:")
    total = 0.0
    for name, v in ours.items():
        med = statistics.median(v)
        total += med
        print(f"  {name:<40} {med * 1e3:7.1f}  ({med / total_floor:4.2f} of the floor)")
    print(f"  {'total':<40} {total * 1e3:7.1f}  ({total / total_floor:4.2f} x the floor)")


if __name__ == "__main__":
    main()
