"""Detection latency and the accuracy it must not cost (issue 6, issue 4).

For every labelled corpus given (run directories with a label.json: sample_metrics/generate.py
or tests/holdout/holdout_gen.py), diagnose each run with its job.yaml through the public API
(`advisor.api.diagnose`, spawned workers) and print per symptom:

- delay: (Finding.detected_step - labelled onset) / eval_steps for each true positive (the
  earliest-onset alarm of the labelled id, as the harness and tests/holdout/score.py pick it):
  median, p90 and the share of detections within one evaluation interval;
- own: (detected_step - Finding.onset_step) / eval_steps, the issue-6 reading (the alert
  against the onset the batch diagnosis reports); a faked early onset would flatter only this
  column, so the labelled one is the honest figure;
- precision, recall and the healthy runs alarmed (a warning+ finding on a run labelled
  healthy), with the same definitions as advisor/harness.py.

    .venv/bin/python bench/bench_latency.py sample_metrics/corpus /tmp/hl /tmp/unseen -j 2
    .venv/bin/python bench/bench_latency.py CORPUS --save after.json --compare before.json

`--save` keeps the per-run alarms (JSON) and `--compare` prints the runs whose alarms changed
against a saved file: the evidence a threshold change needs.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from advisor.harness import Case, discover  # noqa: E402
from advisor.prediction import ALARM_SEVERITIES, symptom_ids  # noqa: E402

SYMPTOM_IDS = symptom_ids()  # the scored symptoms, in the harness's order


def judge(case: Case) -> dict[str, Any]:
    """One run through advisor.api.diagnose: its alarms with onset and detection steps."""
    from advisor.api import diagnose

    out: dict[str, Any] = {"run_id": case.run_id, "findings": [], "error": None}
    try:
        d = diagnose(case.metrics, config=case.config)
    except Exception as err:  # a crash is a result to report, not an abort
        out["error"] = f"{type(err).__name__}: {str(err).splitlines()[:1]}"
        return out
    for f in d.findings:
        sev = str(getattr(f.severity, "value", f.severity))
        out["findings"].append(
            {"id": f.id.upper(), "severity": sev, "onset": f.onset_step,
             "detected": f.detected_step}
        )
    return out


def judge_all(cases: Sequence[Case], workers: int) -> list[dict[str, Any]]:
    if workers <= 1:
        return [judge(c) for c in cases]
    ctx = multiprocessing.get_context("spawn")  # polars' threads do not survive a fork
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        return list(pool.map(judge, cases, chunksize=4))


def _first(pred: dict[str, Any], sid: str) -> dict[str, Any] | None:
    hits = [f for f in pred["findings"] if f["id"] == sid and f["severity"] in ALARM_SEVERITIES]
    hits.sort(key=lambda f: (f["onset"] is None, f["onset"] or 0))
    return hits[0] if hits else None


def alarms(pred: dict[str, Any]) -> set[str]:
    return {f["id"] for f in pred["findings"] if f["severity"] in ALARM_SEVERITIES}


def _quantile(xs: Sequence[float], q: float) -> float | None:
    """Linear-interpolated quantile (numpy's default), None when empty."""
    if not xs:
        return None
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def figures(cases: Sequence[Case], preds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per symptom: tp/fp/fn, precision, recall, delays; and the healthy runs alarmed."""
    by_id = {p["run_id"]: p for p in preds}
    per: dict[str, dict[str, Any]] = {
        s: {"tp": 0, "fp": 0, "fn": 0, "delay": [], "own": []} for s in SYMPTOM_IDS
    }
    healthy = healthy_alarmed = 0
    wrong: list[str] = []
    for case in cases:
        pred = by_id[case.run_id]
        got = alarms(pred)
        expected, allowed = set(case.symptoms), set(case.symptoms) | set(case.acceptable)
        if case.healthy:
            healthy += 1
            healthy_alarmed += bool(got)
        for sid in SYMPTOM_IDS:
            row = per[sid]
            if sid in expected:
                hit = _first(pred, sid)
                if hit is None:
                    row["fn"] += 1
                    wrong.append(f"{case.run_id}: missed {sid}")
                    continue
                row["tp"] += 1
                unit = float(case.eval_steps or 0)  # the label's interval
                if unit and hit["detected"] is not None:
                    if case.onset_step is not None:
                        row["delay"].append((hit["detected"] - case.onset_step) / unit)
                    if hit["onset"] is not None:
                        row["own"].append((hit["detected"] - hit["onset"]) / unit)
            elif sid in got and sid not in allowed:
                row["fp"] += 1
                wrong.append(f"{case.run_id}: false alarm {sid}")
    return {"per": per, "healthy": healthy, "healthy_alarmed": healthy_alarmed, "wrong": wrong}


def _f(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _share(xs: Sequence[float], limit: float = 1.0) -> str:
    return "-" if not xs else f"{sum(x <= limit for x in xs) / len(xs):.0%}"


def render(name: str, fig: dict[str, Any]) -> list[str]:
    lines = [
        f"## {name}",
        "",
        "| symptom | TP | FP | FN | precision | recall | delay median | delay p90 "
        "| within 1 interval | own-onset median | own within 1 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    total: dict[str, Any] = {"tp": 0, "fp": 0, "fn": 0, "delay": [], "own": []}
    for sid in SYMPTOM_IDS:
        r = fig["per"][sid]
        for k in total:
            total[k] += r[k]
        if not (r["tp"] or r["fp"] or r["fn"]):
            continue
        lines.append(_row(sid, r))
    lines.append(_row("all", total))
    lines += [
        "",
        f"Healthy runs alarmed: {fig['healthy_alarmed']}/{fig['healthy']}. "
        "Delays in eval_steps (labelled onset; own = the finding's own onset_step).",
    ]
    lines += [f"- {w}" for w in fig["wrong"]]
    return [*lines, ""]


def _row(sid: str, r: dict[str, Any]) -> str:
    tp, fp, fn = r["tp"], r["fp"], r["fn"]
    prec = tp / (tp + fp) if tp + fp else None
    rec = tp / (tp + fn) if tp + fn else None
    return (
        f"| {sid} | {tp} | {fp} | {fn} | {_f(prec, 2)} | {_f(rec, 2)} "
        f"| {_f(_quantile(r['delay'], 0.5), 2)} | {_f(_quantile(r['delay'], 0.9), 2)} "
        f"| {_share(r['delay'])} | {_f(_quantile(r['own'], 0.5), 2)} | {_share(r['own'])} |"
    )


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Runs whose alarm set changed between two saved passes over the same corpus."""
    old = {p["run_id"]: p for p in before["preds"]}
    out = []
    for p in after["preds"]:
        q = old.get(p["run_id"])
        if q is None:
            continue
        a, b = alarms(q), alarms(p)
        if a != b:
            out.append(f"- {p['run_id']}: {sorted(a)} -> {sorted(b)}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpora", nargs="*", type=Path, default=[ROOT / "sample_metrics/corpus"])
    ap.add_argument("-j", "--workers", type=int, default=1)
    ap.add_argument("--save", type=Path, help="write the per-run alarms here (JSON)")
    ap.add_argument("--compare", type=Path, help="a --save file: list the runs that changed")
    args = ap.parse_args(argv)
    saved: dict[str, Any] = {}
    before = json.loads(args.compare.read_text()) if args.compare else {}
    for corpus in args.corpora:
        cases = discover(corpus)
        preds = judge_all(cases, args.workers)
        print("\n".join(render(f"{corpus} ({len(cases)} runs)", figures(cases, preds))))
        saved[str(corpus)] = {"preds": preds}
        if str(corpus) in before:
            diff = changes(before[str(corpus)], saved[str(corpus)])
            print(f"Alarm sets changed against {args.compare}: {len(diff)} runs")
            print("\n".join(diff) + "\n")
    if args.save:
        args.save.write_text(json.dumps(saved, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
