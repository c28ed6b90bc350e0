"""Score rl-advisor on a holdout corpus, independently of advisor/harness.py.

    python tests/holdout/score.py /tmp/holdout [--api] [-j 2] [--harness] [--out results.md]

For every run directory (label.json + job.yaml + metrics) it runs
`rl-advisor diagnose RUN --config job.yaml --format json --no-plots` (the real CLI; `--api`
calls advisor.api.diagnose in-process instead, faster, same engine) and keeps the JSON beside
the label as `diagnosis.json`. An alarm is a finding at warning or error (info is advice).

Per symptom S: TP = a run labelled S with an S alarm; FN = labelled S, no S alarm (a crash of
the tool counts as no alarm); FP = an S alarm on a run not labelled S where S is not in the
label's `acceptable` list. Healthy false alarms = healthy runs with any alarm. Onset error =
|alarm onset_step - labelled onset| / eval_steps for each TP (earliest-onset alarm of that id).
`--harness` also runs advisor.harness on the same corpus and prints both sets of figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ALARM = {"warning", "error"}
IDS = ("P1", "P2", "P3", "KL0", "P4", "SLOW", "OOM", "P9", "P6", "NAN", "DIV")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    run_dir: Path
    label: dict[str, Any]
    findings: list[dict[str, Any]] = field(default_factory=list)
    status: str = ""
    error: str | None = None

    @property
    def alarms(self) -> set[str]:
        return {f["id"] for f in self.findings if f.get("severity") in ALARM}

    def first(self, sid: str) -> dict[str, Any] | None:
        hits = [f for f in self.findings if f["id"] == sid and f.get("severity") in ALARM]
        hits.sort(key=lambda f: (f.get("onset_step") is None, f.get("onset_step") or 0))
        return hits[0] if hits else None


USE_CONFIG = True  # --no-config: judge from the log alone, as a user without job.yaml


def _cli(run_dir: Path, label: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    exe = ROOT / ".venv" / "bin" / "rl-advisor"
    cmd = [str(exe) if exe.exists() else "rl-advisor", "diagnose",
           str(run_dir / label["metrics_file"]), "--format", "json", "--no-plots",
           "--fail-on", "never"]
    if USE_CONFIG and (run_dir / "job.yaml").exists():
        cmd += ["--config", str(run_dir / "job.yaml")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode not in (0, 1):
        return None, f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"
    try:
        return json.loads(proc.stdout), None
    except ValueError as err:
        return None, f"bad JSON: {err}"


def _api(run_dir: Path, label: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    from advisor.api import diagnose
    from advisor.report import render

    cfg = run_dir / "job.yaml"
    use = USE_CONFIG and cfg.exists()
    try:
        d = diagnose(run_dir / label["metrics_file"], config=cfg if use else None)
        return json.loads(render(d, format="json")), None
    except Exception as err:  # a crash is a result to score, not an abort
        return None, f"{type(err).__name__}: {str(err).splitlines()[:1]}"


CACHED = False  # --cached: re-score the diagnosis.json a previous pass kept


def judge(run_dir: Path, use_api: bool) -> Result:
    label = json.loads((run_dir / "label.json").read_text(encoding="utf-8"))
    kept = run_dir / ("diagnosis.json" if USE_CONFIG else "diagnosis-noconfig.json")
    if CACHED and kept.exists():
        out = json.loads(kept.read_text(encoding="utf-8"))
        return Result(run_dir, label, out.get("findings") or [], str(out.get("status")))
    out, err = (_api if use_api else _cli)(run_dir, label)
    res = Result(run_dir, label, error=err)
    if out is not None:
        name = "diagnosis.json" if USE_CONFIG else "diagnosis-noconfig.json"
        (run_dir / name).write_text(json.dumps(out, indent=1), encoding="utf-8")
        res.findings = out.get("findings") or []
        res.status = str(out.get("status"))
    return res


def _judge_api(run_dir: Path, use_config: bool = True) -> Result:
    global USE_CONFIG
    USE_CONFIG = use_config  # spawned workers start from the module default
    return judge(run_dir, True)


def judge_all(corpus: Path | Sequence[Path], use_api: bool, workers: int) -> list[Result]:
    roots = [corpus] if isinstance(corpus, Path) else list(corpus)
    dirs = sorted(p.parent for root in roots for p in root.rglob("label.json"))
    if workers <= 1 or CACHED:
        return [judge(d, use_api) for d in dirs]
    if use_api:  # spawned processes (polars dislikes fork), each imports the advisor once
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            return list(pool.map(_judge_api, dirs, [USE_CONFIG] * len(dirs), chunksize=2))
    with ThreadPoolExecutor(workers) as pool:  # each job is its own process (the CLI)
        return list(pool.map(lambda d: judge(d, False), dirs))


# ----------------------------------------------------------------------------- figures


@dataclass
class Figures:
    tp: Counter = field(default_factory=Counter)
    fn: Counter = field(default_factory=Counter)
    fp: Counter = field(default_factory=Counter)
    onset_err: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    healthy: int = 0
    healthy_alarmed: int = 0
    errors: int = 0
    confusion: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    misses: list[Result] = field(default_factory=list)
    false_alarms: list[tuple[Result, str]] = field(default_factory=list)

    def precision(self, s: str) -> float | None:
        d = self.tp[s] + self.fp[s]
        return self.tp[s] / d if d else None

    def recall(self, s: str) -> float | None:
        d = self.tp[s] + self.fn[s]
        return self.tp[s] / d if d else None


def score(results: Sequence[Result]) -> Figures:
    f = Figures()
    for r in results:
        lab = r.label
        expected = set(lab.get("symptoms") or [])
        allowed = expected | set(lab.get("acceptable") or [])
        alarms = r.alarms
        f.errors += r.error is not None
        row = f.confusion[lab.get("family") or "healthy"]
        row["runs"] += 1
        for a in sorted(alarms) or ["none"]:
            row[a] += 1
        if not expected:
            f.healthy += 1
            f.healthy_alarmed += bool(alarms)
        for s in expected:
            hit = r.first(s)
            if hit is None:
                f.fn[s] += 1
                f.misses.append(r)
                continue
            f.tp[s] += 1
            if lab.get("onset_step") is not None and hit.get("onset_step") is not None:
                err = abs(hit["onset_step"] - lab["onset_step"]) / max(1, lab["eval_steps"])
                f.onset_err[s].append(err)
        for s in sorted(alarms - allowed):
            f.fp[s] += 1
            f.false_alarms.append((r, s))
    return f


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _describe_finding(fd: dict[str, Any]) -> str:
    ev = fd.get("evidence") or []
    parts = [f"{fd['id']}({fd.get('severity')}, onset {fd.get('onset_step')})"]
    for e in ev[:3]:
        parts.append(f"  - {e.get('metric')} {e.get('detector')}: {e.get('summary')}")
    return "\n".join(parts)


def render(f: Figures, results: Sequence[Result], corpus: Path | str, cmd: str) -> str:
    lines = [f"# Holdout scoring of rl-advisor on `{corpus}` ({len(results)} runs)", "",
             f"Command: `{cmd}`", "",
             f"Healthy runs with a warning+ finding: **{f.healthy_alarmed} / {f.healthy}**"
             f" ({(f.healthy_alarmed / f.healthy if f.healthy else 0):.1%}); tool errors: "
             f"{f.errors}", "",
             "| id | support | TP | FN | FP | precision | recall | median onset err (eval_steps)"
             " | within 2 x eval_steps |", "|---|---|---|---|---|---|---|---|---|"]
    for s in IDS:
        errs = f.onset_err.get(s) or []
        med = f"{statistics.median(errs):.2f}" if errs else "-"
        within = f"{sum(e <= 2 for e in errs)}/{len(errs)}" if errs else "-"
        lines.append(f"| {s} | {f.tp[s] + f.fn[s]} | {f.tp[s]} | {f.fn[s]} | {f.fp[s]} | "
                     f"{_pct(f.precision(s))} | {_pct(f.recall(s))} | {med} | {within} |")
    all_err = [e for v in f.onset_err.values() for e in v]
    if all_err:
        lines += ["", f"Onset error over all TPs: median {statistics.median(all_err):.2f} "
                  f"eval_steps; {sum(e <= 2 for e in all_err)}/{len(all_err)} within 2."]
    cols = sorted({c for row in f.confusion.values() for c in row} - {"runs"},
                  key=lambda c: (c == "none", IDS.index(c) if c in IDS else 99, c))
    lines += ["", "## Confusion (rows: injected family; cells: runs where that id alarmed)", "",
              "| family | runs | " + " | ".join(cols) + " |",
              "|---|---" + "|---" * len(cols) + "|"]
    for fam in ["healthy", *IDS]:
        row = f.confusion.get(fam)
        if row:
            lines.append(f"| {fam} | {row['runs']} | "
                         + " | ".join(str(row.get(c, "")) for c in cols) + " |")
    by_variant: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        if not r.label.get("symptoms"):
            by_variant[r.label.get("variant", "?")]["runs"] += 1
            by_variant[r.label.get("variant", "?")]["alarmed"] += bool(r.alarms)
    if by_variant:
        lines += ["", "Healthy runs alarmed, by variant: " + ", ".join(
            f"{v} {c['alarmed']}/{c['runs']}" for v, c in sorted(by_variant.items()))]
    lines += ["", "## Misses", ""]
    for r in f.misses:
        lab = r.label
        lines.append(f"- `{r.run_dir.name}` {lab['symptoms']} onset {lab['onset_step']} "
                     f"eval {lab['eval_steps']} knobs {json.dumps(lab['knobs'])}; "
                     f"status {r.status}; fired {sorted(r.alarms) or 'nothing'}"
                     + (f"; ERROR {r.error}" if r.error else ""))
    lines += ["", "## False alarms (not labelled, not acceptable)", ""]
    for r, s in f.false_alarms:
        lab = r.label
        fd = r.first(s) or {}
        lines.append(f"- `{r.run_dir.name}` labelled {lab['symptoms'] or 'healthy'} "
                     f"({lab['variant']}): {_describe_finding(fd)}")
    return "\n".join(lines) + "\n"


def _within(f: Figures) -> float | None:
    errs = [e for v in f.onset_err.values() for e in v]
    return sum(e <= 2 for e in errs) / len(errs) if errs else None


def harness_compare(corpus: Path, f: Figures, workers: int) -> str:
    """Run advisor.harness on the same corpus; print its figures beside ours."""
    try:
        from advisor.harness import run_harness
    except ImportError as err:
        return f"harness unavailable: {err}\n"
    rep = run_harness(corpus, None, None, workers=workers)
    hs = rep.corpus
    lines = ["## advisor.harness vs this scorer (same corpus)", "",
             f"healthy false alarms: harness {hs.healthy_with_alarm}/{hs.healthy_runs}, "
             f"ours {f.healthy_alarmed}/{f.healthy}; onset within 2 x eval_steps: harness "
             f"{_pct(hs.onset_within_tolerance)}, ours {_pct(_within(f))}", "",
             "| id | harness P | ours P | harness R | ours R | agree |",
             "|---|---|---|---|---|---|"]
    for s in hs.per_symptom:
        if s.id not in IDS:
            continue
        ours = (f.precision(s.id), f.recall(s.id))
        agree = _pct(s.precision) == _pct(ours[0]) and _pct(s.recall) == _pct(ours[1])
        lines.append(f"| {s.id} | {_pct(s.precision)} | {_pct(ours[0])} | {_pct(s.recall)} | "
                     f"{_pct(ours[1])} | {'yes' if agree else 'NO'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Independent holdout scoring of rl-advisor.")
    ap.add_argument("corpus", type=Path, nargs="+", help="one or more corpus directories")
    ap.add_argument("--api", action="store_true", help="advisor.api in-process, not the CLI")
    ap.add_argument("-j", "--workers", type=int, default=2)
    ap.add_argument("--harness", action="store_true", help="also run advisor.harness")
    ap.add_argument("--out", type=Path, help="write the Markdown results here")
    ap.add_argument("--no-config", action="store_true", help="judge without job.yaml")
    ap.add_argument("--cached", action="store_true", help="re-score kept diagnosis.json files")
    a = ap.parse_args(argv)
    global USE_CONFIG, CACHED
    USE_CONFIG, CACHED = not a.no_config, a.cached
    results = judge_all(a.corpus, a.api, a.workers)
    figs = score(results)
    cmd = "python tests/holdout/score.py " + " ".join(argv if argv is not None else sys.argv[1:])
    where = " ".join(str(c) for c in a.corpus)
    text = render(figs, results, where, cmd)
    if a.harness:
        for c in a.corpus:
            mine = [r for r in results if r.run_dir.is_relative_to(c)]
            text += "\n" + harness_compare(c, score(mine), a.workers)
    if a.out:
        a.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
