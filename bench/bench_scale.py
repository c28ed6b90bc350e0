"""Speed and scale (issue 18): every target figure beside its floor, in one run.

    python3 -m venv .venv-bench && .venv-bench/bin/pip install .   # rl-advisor as a wheel
    .venv-bench/bin/python bench/bench_scale.py          # the issue's sizes (~7 GB free in --tmp)
    .venv-bench/bin/python bench/bench_scale.py --quick  # smaller files, fewer rounds: a smoke run

Run it with the interpreter of an installed rl-advisor (as above: `pip install .` builds and
installs a wheel), so that the commands timed are the user's `rl-advisor`. The floor is
`python -c "import polars; polars.read_ndjson(F)"` on the same file, run in the same rounds:
each round runs the floor, then each command, and a ratio is taken within its round (on a
shared machine the load drifts; a ratio within one round is steadier). Figures are medians.
Peak memory is the process's maximum resident set (ru_maxrss), floor and command alike.

Rows (target in brackets):
  2,000 x 150 verl JSONL      diagnose --config job.yaml --format json           [<= 1.3x]
  2,000 x 150 with findings   diagnose --config job.yaml -o report.md (+ charts)  [<= 1.5x]
  200,000 x 30                diagnose --config job.yaml --format json           [<= 3x]
  200,000 x 150 (1.1 GB)      peak memory of the json call                       [<= 1.5x]
  1,000,000 x 150 (5.7 GB)    completes, peak memory                             [<= 16 GB]
  diagnose_many               1,000 runs x 500 steps on 2 workers (their CPU a run) [<= 8 s]
  Advisor.observe             median per step, 30 metrics                        [<= 20 us]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

JOB = """\
model: "qwen3.5-9b"
mode: "reinforcement"
training:
  hyper_parameters:
    algorithm: "gspo"
    kl_loss_coef: 0.001
    learning_rate: 2e-06
    n_epochs: 3
    batch_size: 256
    n_rollouts: 4
    ppo_mini_batch_size: 8
    max_length: 8192
    max_prompt_length: 1024
    eval_steps: 20
    save_steps: 40
    save_strategy: "steps"
    save_total_limit: 3
"""

CORE = (
    "critic/rewards/mean", "critic/score/mean", "actor/ppo_kl", "actor/kl_loss",
    "actor/grad_norm", "actor/entropy", "response_length/clip_ratio", "response_length/mean",
    "actor/pg_clipfrac", "actor/lr", "timing_s/step", "timing_s/gen",
)  # fmt: skip


def write_verl_jsonl(
    path: Path, steps: int, metrics: int, seed: int = 1, sick: bool = False, eval_every: int = 50
) -> Path:
    """A verl file-logger JSONL ({"step": N, "data": {...}}), written by polars in blocks.

    Healthy: reward rising to a plateau, steady KL, entropy and clipping. `sick`: the entropy
    collapses from step 1,000 and responses start hitting the cap at 1,400 (P4, P9: findings,
    so the report has charts). Filler metrics have names as long as verl's (27 characters),
    so 200,000 x 150 is 1.1 GB as a real log of that shape."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    fill = [f"perf/extra_metric_value_{i:03d}" for i in range(max(0, metrics - len(CORE) - 1))]
    with path.open("wb") as fh:
        for first in range(1, steps + 1, 50_000):
            s = np.arange(first, min(first + 50_000, steps + 1))
            n = len(s)
            noise = rng.normal(0.0, 1.0, (len(CORE), n))
            rise = 1 - np.exp(-s / (100 if sick else 300))
            entropy = 0.8 * np.exp(-np.clip(s - 1000, 0, None) / 150) if sick else 0.7 - 0 * s
            cols = {
                "critic/rewards/mean": 0.2 + (0.1 if sick else 0.5) * rise + 0.03 * noise[0],
                "critic/score/mean": 0.2 + (0.1 if sick else 0.5) * rise + 0.03 * noise[1],
                "actor/ppo_kl": np.abs(0.001 + 0.0003 * noise[2]),
                "actor/kl_loss": 0.002 + np.abs(0.0005 * noise[3]),
                "actor/grad_norm": np.abs(0.3 + 0.05 * noise[4]),
                "actor/entropy": entropy + 0.02 * noise[5],
                "response_length/clip_ratio": np.abs(0.01 + 0.003 * noise[6])
                + (0.3 * (s > 1400) if sick else 0),
                "response_length/mean": 600 + 20 * noise[7],
                "actor/pg_clipfrac": np.abs(0.002 + 0.0005 * noise[8]),
                "actor/lr": np.full(n, 2e-6),
                "timing_s/step": 60 + 2 * noise[10],
                "timing_s/gen": 25 + noise[11],
            }
            for k in fill:
                cols[k] = rng.random(n)
            data = pl.DataFrame({k: np.round(v, 6) for k, v in cols.items()})
            val = np.where(s % eval_every == 0, np.round(0.3 + 0.4 * rise, 6), np.nan)
            data = data.with_columns(pl.Series("val-core/gsm8k/reward/mean@1", val).fill_nan(None))
            frame = pl.DataFrame({"step": s}).with_columns(data.to_struct("data"))
            frame.write_ndjson(fh)
    return path


def _env() -> dict[str, str]:
    """The user's environment, except that bytecode is cached as on any normal install."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(cmd: Sequence[str]) -> tuple[float, float, float, int]:
    """(wall s, CPU s of all threads, peak resident MB, exit code) of one run."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        list(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env()
    )
    _, status, use = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"failed ({code}): {' '.join(cmd)}\n{err[-2000:]}")
    return wall, use.ru_utime + use.ru_stime, use.ru_maxrss / 1024, code


def floor_cmd(path: Path) -> list[str]:
    return [sys.executable, "-c", f"import polars; polars.read_ndjson({str(path)!r})"]


def advisor_cmd() -> list[str]:
    """The installed console script beside this interpreter, else `python -m advisor`."""
    script = Path(sys.executable).parent / "rl-advisor"
    return [str(script)] if script.exists() else [sys.executable, "-m", "advisor"]


class Row:
    def __init__(self, name: str, target: str) -> None:
        self.name, self.target = name, target
        self.floor: list[tuple[float, float, float]] = []
        self.got: list[tuple[float, float, float]] = []

    def ratio(self, i: int) -> float:
        return statistics.median(g[i] / f[i] for f, g in zip(self.floor, self.got, strict=True))

    def med(self, which: list[tuple[float, float, float]], i: int) -> float:
        return statistics.median(x[i] for x in which)


def paired(rows: dict[str, tuple[Path, list[str], str]], rounds: int) -> list[Row]:
    """`rounds` rounds; in each, per row, the floor on the row's file and then the row's
    command."""
    out = {name: Row(name, target) for name, (_, _, target) in rows.items()}
    for _ in range(rounds):
        for name, (path, cmd, _) in rows.items():
            f = run_once(floor_cmd(path))
            g = run_once(cmd)
            out[name].floor.append(f[:3])
            out[name].got.append(g[:3])
    return list(out.values())


def print_rows(rows: list[Row], what: str = "time") -> None:
    for r in rows:
        if what == "time":
            print(
                f"  {r.name:<46} floor {r.med(r.floor, 0):7.3f} s  rl-advisor "
                f"{r.med(r.got, 0):7.3f} s  ratio {r.ratio(0):5.2f}  [{r.target}]"
                f"  (CPU ratio {r.ratio(1):.2f}; peak {r.med(r.got, 2):.0f} MB"
                f" vs {r.med(r.floor, 2):.0f} MB)"
            )
        else:
            print(
                f"  {r.name:<46} floor {r.med(r.floor, 2):7.0f} MB rl-advisor "
                f"{r.med(r.got, 2):7.0f} MB ratio {r.ratio(2):5.2f}  [{r.target}]"
                f"  (time {r.med(r.got, 0):.1f} s vs {r.med(r.floor, 0):.1f} s,"
                f" ratio {r.ratio(0):.2f})"
            )


def bench_batch(tmp: Path, runs: int, workers: int) -> float:
    from bench_diagnose import CORE as PY_CORE
    from bench_diagnose import write_run

    from advisor.api import diagnose_many

    paths = []
    for i in range(runs):
        p = tmp / f"batch-{i:04d}.jsonl"
        write_run(p, 500, len(PY_CORE) + 2, seed=100 + i, eval_every=25)
        paths.append(p)
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    out = diagnose_many(paths, workers=workers)
    took = time.perf_counter() - t0
    cpu = _children_cpu() - cpu0  # the workers', reaped when the pool closes
    for p in paths:
        p.unlink()
    bad = sum(1 for o in out if isinstance(o, Exception))
    print(
        f"  diagnose_many {runs} runs x 500 steps, {workers} workers {took:18.2f} s"
        f"  ({took * 1000 / runs:.1f} s per 1,000 runs) [<= 8 s per 1,000]"
        f"  (workers' CPU {cpu * 1000 / runs:.1f} ms a run)"
        + (f", {bad} unusable" if bad else "")
    )
    return took


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def bench_observe(steps: int) -> float:
    from bench_online import bench_time

    got = bench_time(steps)
    us = got["observe_median_us"]
    print(
        f"  Advisor.observe, 30 metrics, {steps} steps   median {us:7.1f} us/step"
        f"  (p99 {got['observe_p99_us']:.1f} us; engine push {got['engine_push_median_us']:.1f},"
        f" name mapping {got['name_mapping_median_us']:.1f}) [<= 20 us]"
    )
    return us


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller files, fewer rounds")
    ap.add_argument("--rounds", type=int, default=None, help="rounds of the 2,000-step rows")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tmp", type=Path, default=None, help="where to write the files")
    ap.add_argument(
        "--only",
        nargs="+",
        choices=PARTS,
        default=list(PARTS),
        help="the parts to run (default: all): 2k = the 2,000-step rows, slope = 200k x 30, "
        "memory = 200k x 150, huge = 1M x 150, batch = diagnose_many, observe",
    )
    args = ap.parse_args()
    only = set(args.only)
    quick = args.quick
    rounds = args.rounds or (3 if quick else 7)
    big = 20_000 if quick else 200_000
    huge = None if quick else 1_000_000
    runs = 200 if quick else 1_000
    load0 = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=args.tmp))
    try:
        job = tmp / "job.yaml"
        job.write_text(JOB, encoding="utf-8")
        cli = advisor_cmd()
        print(f"rl-advisor: {' '.join(cli)}; floor: {sys.executable} -c 'import polars; ...'")
        print(f"load average {load0:.2f} at the start, {os.cpu_count()} CPUs")
        d = [*cli, "diagnose"]
        if "2k" in only:
            rows_2k(tmp, job, d, rounds)
        if "slope" in only:
            rows_slope(tmp, job, d, big)
        if "memory" in only:
            rows_memory(tmp, d, big)
        if "huge" in only and huge is not None:
            rows_huge(tmp, d, huge)
        if only & {"batch", "observe"}:
            print("\nin-process API:")
        if "batch" in only:
            bench_batch(tmp, runs, args.workers)
        if "observe" in only:
            bench_observe(20_000 if quick else 100_000)
        print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


PARTS = ("2k", "slope", "memory", "huge", "batch", "observe")


def rows_2k(tmp: Path, job: Path, d: list[str], rounds: int) -> None:
    healthy = write_verl_jsonl(tmp / "h2k.jsonl", 2000, 150)
    sick = write_verl_jsonl(tmp / "s2k.jsonl", 2000, 150, sick=True)
    out = tmp / "out"
    print(
        f"\n2,000 steps x 150 metrics ({healthy.stat().st_size / 1e6:.1f} MB), {rounds} rounds:"
    )
    print_rows(
        paired(
            {
                "--format json": (
                    healthy,
                    [*d, str(healthy), "-c", str(job), "--format", "json"],
                    "<= 1.3",
                ),
                "--format json, with findings": (
                    sick,
                    [*d, str(sick), "-c", str(job), "--format", "json"],
                    "<= 1.3",
                ),
                "-o report.md, with findings and their charts": (
                    sick,
                    [*d, str(sick), "-c", str(job), "-o", str(out / "r.md")],
                    "<= 1.5",
                ),
            },
            rounds,
        )
    )
    charts = sorted(p.name for p in out.glob("*.svg"))
    print(f"  ({len(charts)} charts beside the report: {', '.join(charts)})")


def rows_slope(tmp: Path, job: Path, d: list[str], big: int) -> None:
    slope = write_verl_jsonl(tmp / "b30.jsonl", big, 30)
    print(f"\n{big:,} steps x 30 metrics ({slope.stat().st_size / 1e6:.0f} MB), 3 rounds:")
    print_rows(
        paired(
            {
                "--format json": (
                    slope,
                    [*d, str(slope), "-c", str(job), "--format", "json"],
                    "<= 3",
                )
            },
            3,
        )
    )
    slope.unlink()


def rows_memory(tmp: Path, d: list[str], big: int) -> None:
    wide = write_verl_jsonl(tmp / "b150.jsonl", big, 150)
    print(f"\n{big:,} steps x 150 metrics ({wide.stat().st_size / 1e9:.2f} GB), 1 round:")
    print_rows(
        paired(
            {
                "peak memory, --format json": (
                    wide,
                    [*d, str(wide), "--format", "json"],
                    "<= 1.5",
                )
            },
            1,
        ),
        "memory",
    )
    wide.unlink()


def rows_huge(tmp: Path, d: list[str], huge: int) -> None:
    need = huge * 5_700
    if shutil.disk_usage(tmp).free < need * 1.1:
        print(f"\n{huge:,} x 150: skipped, {need / 1e9:.1f} GB free needed in {tmp}")
    else:
        path = write_verl_jsonl(tmp / "h150.jsonl", huge, 150)
        wall, _, peak, code = run_once([*d, str(path), "--format", "json"])
        print(
            f"\n{huge:,} steps x 150 metrics ({path.stat().st_size / 1e9:.1f} GB): "
            f"{wall:.1f} s, peak {peak / 1024:.2f} GB, exit {code} [completes, <= 16 GB]"
        )
        path.unlink()


if __name__ == "__main__":
    main()
