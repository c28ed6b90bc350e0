"""What alerts cost a training step: the hook's time per step with and without an Alerter.

    .venv/bin/python bench/bench_alerts.py            # bench_online's healthy 30-metric run
    .venv/bin/python bench/bench_alerts.py --run sample_metrics/corpus/kl0-flat-verl-jsonl-s0002

The Alerter posts to a loopback receiver that hangs past the delivery timeout, the worst case
for a run: deliveries fail and retry on their thread while the steps go on. Both variants run
in turns on the same steps; the medians per step are printed (target: equal within noise).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_online import HP, steps

from advisor.integrations.hook import Hook
from advisor.online import Advisor


class Hung(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        time.sleep(5)

    def log_message(self, *args: Any) -> None:
        pass


def data_of(run: Path | None, n: int) -> tuple[list[tuple[int, dict[str, Any]]], Any]:
    if run is None:
        return list(steps(n)), None
    from advisor.ingest import load_run

    r = load_run(run)
    out = []
    for row in r.frame.iter_rows(named=True):
        step = row.pop("step")
        out.append((int(step), {k: v for k, v in row.items() if v is not None}))
    return out, r


def one(
    data: list[tuple[int, dict[str, Any]]], run_dir: Path | None, hints: Any, alerts: Any
) -> tuple[list[int], int, int]:
    if run_dir is not None:
        adv = Advisor.from_config(run_dir / "job.yaml", hints=hints)
    else:
        adv = Advisor(hyper_parameters=HP)
    hook = Hook(adv, alerts=alerts)
    hook(*data[0])  # builds the engine: not a per-step cost
    times = []
    for step, m in data[1:]:
        t0 = time.perf_counter_ns()
        hook(step, m)
        times.append(time.perf_counter_ns() - t0)
    said = 0
    if hook.alerts is not None:
        said = hook.alerts._accepted  # messages queued (their deliveries hang and fail)
        hook.alerts.close(timeout=0.1)
    return times, len(adv.findings), said


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="a corpus run directory (its log and job.yaml)")
    ap.add_argument("-n", type=int, default=3000, help="steps of the synthetic run")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import logging

    logging.getLogger("rl_advisor").setLevel(logging.CRITICAL)  # the hook's finding lines
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hung)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    data, run = data_of(args.run, args.n)
    hints = run.config_hints if run is not None else None
    cfg = {"channels": [{"kind": "webhook", "url": url}], "timeout": 0.5, "min_severity": "info"}
    got: dict[str, list[int]] = {"plain": [], "alerts": []}
    counts: dict[str, tuple[int, int]] = {}
    for _ in range(args.rounds):
        for label in ("plain", "alerts"):
            times, findings, msgs = one(data, args.run, hints, cfg if label == "alerts" else None)
            got[label] += times
            counts[label] = (findings, msgs)
    for label, times in got.items():
        findings, msgs = counts[label]
        print(
            f"{label:7} hook median {statistics.median(times) / 1e3:7.1f} us  "
            f"p99 {sorted(times)[int(0.99 * len(times))] / 1e3:8.1f} us  "
            f"({len(times)} steps; per run {findings} findings, {msgs} messages)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
