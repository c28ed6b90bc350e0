"""Accuracy harness: run the advisor on a labelled corpus and score it against the labels.

A corpus is any directory tree where each run directory holds a `label.json` (as written by
`sample_metrics/generate.py`), its metrics file and, optionally, its `job.yaml`. The scores:

- an **alarm** is a run-time finding at warning or above that is active at the run's end (info
  findings are advice, not alarms); a **recovered** episode (a warning or error that cleared
  and stayed clear before the end, reported as info) is a detection of its symptom but no alarm;
- per symptom id S, over runs: TP = labelled S and S alarmed or recovered; FN = labelled S,
  neither;
  FP = S alarmed on a run neither labelled S nor listing S as acceptable (a co-occurring
  symptom that is not wrong). precision = TP / (TP + FP), recall = TP / (TP + FN);
- false-alarm rate = healthy runs (no symptom labelled) with any alarm / healthy runs;
- onset error = finding.onset_step - true onset; detection delay = finding.detected_step - true
  onset; both also in eval_steps units; "onset ok" = |onset error| <= 2 x eval_steps.

What the advisor says of one run is an advisor.prediction.Prediction; the real runs scored
against hand-written labels (the public runs, the public full curves, the live-fire range) are
advisor.realruns'. This module reads a corpus, scores it, puts every set side by side
(`run_harness`) and writes the Markdown.
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from advisor.prediction import Alarm, Prediction, Predictor, predict, symptom_ids
from advisor.realruns import (
    LiveFireScore,
    RealRunScore,
    default_full_labels,
    default_real_labels,
    labelled_row,
    livefire_markdown,
    real_markdown,
    score_livefire,
    score_real,
)
from advisor.types import InputError

HEALTHY = "healthy"
_SIDE_FILES = {"label.json", "job.yaml", "job.yml", "README.md", "SOURCE.md"}

# Targets of the diagnosis issue (the committed small corpus must meet them).
TARGETS = {
    "precision": 0.95,
    "recall": 0.95,
    "healthy_false_alarm_rate": 0.0,
    "onset_tolerance_eval_steps": 2.0,
}


# ----------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Case:
    """One labelled run of a corpus."""

    run_id: str
    metrics: Path
    config: Path | None
    symptoms: tuple[str, ...]
    acceptable: tuple[str, ...]
    onset_step: int | None
    eval_steps: int | None
    family: str
    fmt: str = ""  # the metrics file's format, from the label (for the by-format breakdown)

    @property
    def healthy(self) -> bool:
        return not self.symptoms


@dataclass
class SymptomScore:
    id: str
    support: int  # runs labelled with this id
    tp: int
    fp: int
    fn: int
    precision: float | None
    recall: float | None
    median_onset_error: float | None  # steps, signed
    median_abs_onset_error_eval: float | None  # in eval_steps units
    median_delay: float | None  # steps
    median_delay_eval: float | None
    onset_ok: int  # TPs whose onset is within tolerance
    onset_judged: int  # TPs with both onsets known


@dataclass
class CorpusScore:
    corpus: str
    runs: int
    healthy_runs: int
    healthy_with_alarm: int
    false_alarm_rate: float | None
    errors: int
    per_symptom: list[SymptomScore]
    confusion: dict[str, dict[str, int]]  # label -> predicted id (or "none") -> runs
    by_format: dict[str, dict[str, int]]  # format -> runs, symptoms, found, wrong_alarm_runs
    median_onset_error: float | None
    median_abs_onset_error_eval: float | None
    median_delay: float | None
    median_delay_eval: float | None
    onset_within_tolerance: float | None
    exact_runs: int  # runs whose alarms are exactly right (labelled ⊆ alarms ⊆ labelled+acceptable)
    failures: list[str] = field(default_factory=list)  # per-run lines explaining misses / FPs
    runs_detail: list[dict[str, Any]] = field(default_factory=list)  # label + alarms, per run
    meets_targets: bool = False
    target_misses: list[str] = field(default_factory=list)


@dataclass
class HarnessReport:
    corpus: CorpusScore | None  # the first labelled set
    real: list[RealRunScore] = field(default_factory=list)
    more: list[CorpusScore] = field(default_factory=list)  # further sets, side by side
    livefire: list[LiveFireScore] = field(default_factory=list)
    full: list[RealRunScore] = field(default_factory=list)  # public full curves (100+ steps)

    @property
    def sets(self) -> list[CorpusScore]:
        return ([self.corpus] if self.corpus is not None else []) + self.more

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=False)


# ----------------------------------------------------------------------------- corpus reading


def discover(corpus_dir: Path) -> list[Case]:
    """Every run directory under `corpus_dir` that holds a label.json, sorted by run id."""
    if not corpus_dir.is_dir():
        raise InputError(f"{corpus_dir}: not a directory; expected a corpus of run directories")
    cases = [_read_case(p) for p in sorted(corpus_dir.rglob("label.json"))]
    if not cases:
        raise InputError(f"{corpus_dir}: no label.json found; expected run directories with one")
    return sorted(cases, key=lambda c: c.run_id)


def _read_case(label_path: Path) -> Case:
    try:
        label = json.loads(label_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InputError(f"{label_path}: unreadable label ({err}); expected a JSON object") from err
    if not isinstance(label, dict):
        raise InputError(f"{label_path}: expected a JSON object with a 'symptoms' list")
    run_dir = label_path.parent
    symptoms = _id_list(label, ("symptoms", "expected"), label_path)
    acceptable = _id_list(label, ("acceptable",), label_path)
    config = next((run_dir / n for n in ("job.yaml", "job.yml") if (run_dir / n).exists()), None)
    eval_steps = label.get("eval_steps") or (label.get("knobs") or {}).get("eval_steps")
    if eval_steps is None and config is not None:
        eval_steps = _eval_steps_from_yaml(config)
    onset = label.get("onset_step", label.get("onset"))
    return Case(
        run_id=str(label.get("run_id") or run_dir.name),
        metrics=_metrics_file(run_dir, label, label_path),
        config=config,
        symptoms=symptoms,
        acceptable=acceptable,
        onset_step=int(onset) if onset is not None else None,
        eval_steps=int(eval_steps) if eval_steps else None,
        family=str(label.get("family") or (symptoms[0] if symptoms else HEALTHY)),
        fmt=str(label.get("format") or ""),
    )


def _id_list(label: Mapping[str, Any], keys: Sequence[str], where: Path) -> tuple[str, ...]:
    for key in keys:
        if key in label:
            value = label[key] or []
            if not isinstance(value, list):
                raise InputError(f"{where}: field '{key}' must be a list of finding ids")
            return tuple(str(v).upper() for v in value)
    return ()


def _metrics_file(run_dir: Path, label: Mapping[str, Any], where: Path) -> Path:
    named = label.get("metrics_file")
    if named:
        path = run_dir / str(named)
        if not path.exists():
            raise InputError(f"{where}: metrics_file {named!r} does not exist in {run_dir}")
        return path
    files = [p for p in sorted(run_dir.iterdir()) if p.is_file() and p.name not in _SIDE_FILES]
    if len(files) == 1:
        return files[0]
    return run_dir  # let the reader pick within the run directory


def _eval_steps_from_yaml(path: Path) -> int | None:
    try:
        doc = YAML(typ="safe").load(path.read_text(encoding="utf-8")) or {}
        hp = (doc.get("training") or {}).get("hyper_parameters") or doc.get("hyper_parameters")
        value = (hp or {}).get("eval_steps")
        return int(value) if value else None
    except Exception:  # a broken job file only loses the onset tolerance, not the run
        return None


# ----------------------------------------------------------------------------- prediction


def _predict_case(case: Case) -> Prediction:
    pred = predict(case.metrics, case.config)
    pred.run_id = case.run_id
    return pred


def predict_all(
    cases: Sequence[Case], workers: int = 1, predictor: Predictor | None = None
) -> list[Prediction]:
    """Predictions in case order; `workers` > 1 uses spawned processes (polars dislikes fork)."""
    if predictor is not None:
        return [_renamed(predictor(c.metrics, c.config), c.run_id) for c in cases]
    if workers <= 1 or len(cases) < 2:
        return [_predict_case(c) for c in cases]

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        return list(pool.map(_predict_case, cases, chunksize=4))


def _renamed(pred: Prediction, run_id: str) -> Prediction:
    pred.run_id = run_id
    return pred


# ----------------------------------------------------------------------------- scoring


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _median(values: Iterable[float]) -> float | None:
    vals = list(values)
    return float(statistics.median(vals)) if vals else None


@dataclass
class _Timing:
    onset_err: list[float] = field(default_factory=list)
    abs_onset_eval: list[float] = field(default_factory=list)
    delay: list[float] = field(default_factory=list)
    delay_eval: list[float] = field(default_factory=list)
    ok: int = 0
    judged: int = 0

    def add(self, case: Case, alarm: Alarm) -> None:
        if case.onset_step is None:
            return
        unit = float(case.eval_steps) if case.eval_steps else None
        if alarm.onset_step is not None:
            err = float(alarm.onset_step - case.onset_step)
            self.onset_err.append(err)
            self.judged += 1
            if unit:
                self.abs_onset_eval.append(abs(err) / unit)
                self.ok += abs(err) <= TARGETS["onset_tolerance_eval_steps"] * unit
        if alarm.detected_step is not None:
            d = float(alarm.detected_step - case.onset_step)
            self.delay.append(d)
            if unit:
                self.delay_eval.append(d / unit)

    def merge(self, other: _Timing) -> None:
        for name in ("onset_err", "abs_onset_eval", "delay", "delay_eval"):
            getattr(self, name).extend(getattr(other, name))
        self.ok += other.ok
        self.judged += other.judged


def score(cases: Sequence[Case], preds: Sequence[Prediction], corpus: str = "") -> CorpusScore:
    """Score predictions against labels (see the module doc for every definition)."""
    by_id = {p.run_id: p for p in preds}
    scored = symptom_ids()
    counts = {s: {"tp": 0, "fp": 0, "fn": 0, "support": 0} for s in scored}
    timing = {s: _Timing() for s in scored}
    confusion: dict[str, dict[str, int]] = {}
    by_format: dict[str, dict[str, int]] = {}
    failures: list[str] = []
    healthy = healthy_alarm = errors = exact = 0
    for case in cases:
        pred = by_id.get(case.run_id) or Prediction(case.run_id, error="no prediction")
        errors += pred.error is not None
        alarmed = pred.alarm_ids
        row = confusion.setdefault(case.family, {})
        for a in sorted(alarmed) or ["none"]:
            row[a] = row.get(a, 0) + 1
        row["runs"] = row.get("runs", 0) + 1
        _count_format(by_format, case, pred)
        if case.healthy:
            healthy += 1
            healthy_alarm += bool(alarmed)
        expected, allowed = set(case.symptoms), set(case.symptoms) | set(case.acceptable)
        exact += expected <= pred.found_ids and alarmed <= allowed
        for sid in scored:
            c = counts[sid]
            if sid in expected:
                c["support"] += 1
                hit = pred.alarm(sid)
                if hit is not None:
                    c["tp"] += 1
                    timing[sid].add(case, hit)
                else:
                    c["fn"] += 1
            elif sid in alarmed and sid not in allowed:
                c["fp"] += 1
        failures += [f for f in _explain(case, pred, expected, allowed) if f not in failures]
    per = [_symptom_score(s, counts[s], timing[s]) for s in scored]
    total = _Timing()
    for t in timing.values():
        total.merge(t)
    result = CorpusScore(
        corpus=corpus,
        runs=len(cases),
        healthy_runs=healthy,
        healthy_with_alarm=healthy_alarm,
        false_alarm_rate=_ratio(healthy_alarm, healthy),
        errors=errors,
        per_symptom=per,
        confusion=confusion,
        by_format=dict(sorted(by_format.items())),
        median_onset_error=_median(total.onset_err),
        median_abs_onset_error_eval=_median(total.abs_onset_eval),
        median_delay=_median(total.delay),
        median_delay_eval=_median(total.delay_eval),
        onset_within_tolerance=_ratio(total.ok, total.judged),
        exact_runs=exact,
        failures=failures,
        runs_detail=[_detail(c, by_id.get(c.run_id)) for c in cases],
    )
    result.target_misses = target_misses(result)
    result.meets_targets = not result.target_misses
    return result


def _count_format(acc: dict[str, dict[str, int]], case: Case, pred: Prediction) -> None:
    row = acc.setdefault(case.fmt or "?", {"runs": 0, "symptoms": 0, "found": 0,
                                           "wrong_alarm_runs": 0})
    row["runs"] += 1
    row["symptoms"] += len(case.symptoms)
    row["found"] += len(set(case.symptoms) & pred.found_ids)
    row["wrong_alarm_runs"] += bool(pred.alarm_ids - set(case.symptoms) - set(case.acceptable))


def _detail(case: Case, pred: Prediction | None) -> dict[str, Any]:
    """One run's label and what the advisor said: lets anyone re-score the corpus by hand."""
    return {
        "run_id": case.run_id,
        "labelled": list(case.symptoms),
        "acceptable": list(case.acceptable),
        "onset_step": case.onset_step,
        "eval_steps": case.eval_steps,
        "alarms": sorted(pred.alarm_ids) if pred else [],
        "findings": [asdict(a) for a in pred.alarms] if pred else [],
        "error": pred.error if pred else "no prediction",
    }


def _symptom_score(sid: str, c: Mapping[str, int], t: _Timing) -> SymptomScore:
    return SymptomScore(
        id=sid,
        support=c["support"],
        tp=c["tp"],
        fp=c["fp"],
        fn=c["fn"],
        precision=_ratio(c["tp"], c["tp"] + c["fp"]),
        recall=_ratio(c["tp"], c["tp"] + c["fn"]),
        median_onset_error=_median(t.onset_err),
        median_abs_onset_error_eval=_median(t.abs_onset_eval),
        median_delay=_median(t.delay),
        median_delay_eval=_median(t.delay_eval),
        onset_ok=t.ok,
        onset_judged=t.judged,
    )


def _explain(case: Case, pred: Prediction, expected: set[str], allowed: set[str]) -> list[str]:
    if pred.error:
        return [f"{case.run_id}: advisor error: {pred.error}"]
    out = []
    missed = sorted(expected - pred.found_ids)
    wrong = sorted(pred.alarm_ids - allowed)
    if missed:
        out.append(f"{case.run_id}: missed {', '.join(missed)}")
    if wrong:
        out.append(f"{case.run_id}: false alarm {', '.join(wrong)}")
    for sid in sorted(expected):
        a = pred.alarm(sid)
        if a is None or case.onset_step is None or a.onset_step is None or not case.eval_steps:
            continue
        err = a.onset_step - case.onset_step
        if abs(err) > TARGETS["onset_tolerance_eval_steps"] * case.eval_steps:
            out.append(
                f"{case.run_id}: {a.id} onset {a.onset_step} vs labelled "
                f"{case.onset_step} ({err:+d} steps, eval_steps {case.eval_steps})"
            )
    return out


def target_misses(s: CorpusScore) -> list[str]:
    """Which targets of the diagnosis issue the corpus score misses (empty = all met)."""
    out = []
    for p in s.per_symptom:
        if p.support and (p.recall or 0.0) < TARGETS["recall"]:
            out.append(f"{p.id} recall {_pct(p.recall)} < {_pct(TARGETS['recall'])}")
        if p.tp + p.fp and (p.precision or 0.0) < TARGETS["precision"]:
            out.append(f"{p.id} precision {_pct(p.precision)} < {_pct(TARGETS['precision'])}")
        if p.onset_judged and p.onset_ok < p.onset_judged:
            out.append(f"{p.id} onset within 2 x eval_steps on {p.onset_ok}/{p.onset_judged}")
    if s.healthy_with_alarm:
        out.append(f"{s.healthy_with_alarm}/{s.healthy_runs} healthy runs raised an alarm")
    if s.errors:
        out.append(f"{s.errors} runs could not be judged")
    return out


# ----------------------------------------------------------------------------- entry point


def run_harness(
    corpus_dir: Path | Sequence[Path] | None,
    real_dir: Path | None = None,
    real_labels: Path | None = None,
    workers: int = 1,
    predictor: Predictor | None = None,
    use_config: bool = True,
    livefire_dir: Path | None = None,
    full_dir: Path | None = None,
    full_labels: Path | None = None,
) -> HarnessReport:
    """Score one or more labelled sets (and the public runs, and the live-fire range), each on
    its own, side by side. `use_config=False` judges every run without its job.yaml, as a user
    without `--config` would (hyperparameters from the log only)."""
    dirs = [corpus_dir] if isinstance(corpus_dir, Path) else list(corpus_dir or [])
    scored: list[CorpusScore] = []
    for d in dirs:
        cases = discover(d)
        if not use_config:
            cases = [replace(c, config=None) for c in cases]
        preds = predict_all(cases, workers, predictor)
        scored.append(score(cases, preds, corpus=_display_path(d)))
    real: list[RealRunScore] = []
    if real_dir is not None:
        real = score_real(real_dir, real_labels or default_real_labels(), predictor)
    livefire = score_livefire(livefire_dir, predictor) if livefire_dir is not None else []
    full: list[RealRunScore] = []
    if full_dir is not None:
        full = score_real(full_dir, full_labels or default_full_labels(), predictor)
    return HarnessReport(
        corpus=scored[0] if scored else None,
        real=real,
        more=scored[1:],
        livefire=livefire,
        full=full,
    )


def _display_path(p: Path) -> str:
    # Relative to the working directory when possible: reports stay free of absolute paths.
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


# ----------------------------------------------------------------------------- rendering


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _num(v: float | None, digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def render_markdown(rep: HarnessReport, failures: int = 20) -> str:
    lines: list[str] = []
    if len(rep.sets) > 1 or (rep.sets and (rep.real or rep.full)):
        lines += ["## Side by side", "", *summary_table(rep), ""]
    for s in rep.sets:
        lines += _corpus_markdown(s, failures)
    if rep.real:
        lines += real_markdown(rep.real)
    if rep.full:
        lines += real_markdown(rep.full, "Public full curves")
    if rep.livefire:
        lines += livefire_markdown(rep.livefire)
    return "\n".join(lines).rstrip() + "\n"


def _totals(s: CorpusScore) -> tuple[int, int, int, int, int]:
    """(TP, FP, support, onsets ok, onsets judged) over all symptoms of a set."""
    ps = s.per_symptom
    return (
        sum(p.tp for p in ps),
        sum(p.fp for p in ps),
        sum(p.support for p in ps),
        sum(p.onset_ok for p in ps),
        sum(p.onset_judged for p in ps),
    )


def summary_table(rep: HarnessReport) -> list[str]:
    """One row per labelled set (and one for the public runs): healthy runs alarmed, and
    precision, recall and onsets within 2 x eval_steps over all symptoms."""
    lines = [
        "| set | runs | healthy runs alarmed | precision | recall "
        "| onset within 2 x eval_steps | exactly right |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in rep.sets:
        tp, fp, support, ok, judged = _totals(s)
        lines.append(
            f"| {s.corpus} | {s.runs} | {s.healthy_with_alarm}/{s.healthy_runs} "
            f"| {_pct(_ratio(tp, tp + fp))} | {_pct(_ratio(tp, support))} | {ok}/{judged} "
            f"| {s.exact_runs}/{s.runs} |"
        )
    if rep.real:
        lines.append(labelled_row("public runs (real_labels.yaml)", rep.real))
    if rep.full:
        lines.append(labelled_row("public full curves (full_labels.yaml)", rep.full))
    if rep.livefire:
        lines.append(labelled_row("live-fire range (files)", rep.livefire))
    return lines


def results_table(s: CorpusScore) -> list[str]:
    """The README results table: one row per symptom id, a healthy row and an overall row."""
    lines = [
        "| finding | runs | precision | recall | median abs. onset error, eval_steps "
        "| median detection delay, steps (eval_steps) | onset within 2 x eval_steps |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in s.per_symptom:
        lines.append(
            f"| {p.id} | {p.support} | {_pct(p.precision)} | {_pct(p.recall)} "
            f"| {_num(p.median_abs_onset_error_eval, 2)} "
            f"| {_num(p.median_delay, 0)} ({_num(p.median_delay_eval, 2)}) "
            f"| {p.onset_ok}/{p.onset_judged} |"
        )
    lines.append(
        f"| healthy | {s.healthy_runs} | false alarms {s.healthy_with_alarm}/{s.healthy_runs} "
        f"({_pct(s.false_alarm_rate)}) | | | | |"
    )
    tp, fp, support, ok, judged = _totals(s)
    lines.append(
        f"| all symptoms | {support} | {_pct(_ratio(tp, tp + fp))} | {_pct(_ratio(tp, support))} "
        f"| {_num(s.median_abs_onset_error_eval, 2)} "
        f"| {_num(s.median_delay, 0)} ({_num(s.median_delay_eval, 2)}) | {ok}/{judged} |"
    )
    return lines


def _corpus_markdown(s: CorpusScore, failures: int) -> list[str]:
    lines = [
        f"## Accuracy on `{s.corpus}`",
        "",
        f"{s.runs} runs ({s.healthy_runs} healthy); alarms = findings at warning or above. "
        f"Exactly right: {s.exact_runs}/{s.runs}. Runs not judged (advisor error): {s.errors}.",
        "",
        *results_table(s),
        "",
        f"False-alarm rate on healthy runs: {_pct(s.false_alarm_rate)} "
        f"({s.healthy_with_alarm}/{s.healthy_runs}). "
        f"Median onset error: {_num(s.median_onset_error, 0)} steps "
        f"(|error| {_num(s.median_abs_onset_error_eval, 2)} eval_steps); "
        f"median detection delay: {_num(s.median_delay, 0)} steps "
        f"({_num(s.median_delay_eval, 2)} eval_steps); onset within 2 x eval_steps: "
        f"{_pct(s.onset_within_tolerance)}.",
        "",
        "### Confusion (label x alarmed id; a run may raise several)",
        "",
        *_confusion_markdown(s.confusion),
        "",
        "### By format",
        "",
        "| format | runs | labelled symptoms found | runs with a wrong alarm |",
        "|---|---:|---:|---:|",
        *[
            f"| {fmt} | {r['runs']} | {r['found']}/{r['symptoms']} | {r['wrong_alarm_runs']} |"
            for fmt, r in s.by_format.items()
        ],
        "",
        "Targets (precision and recall >= 95 %, no alarm on healthy runs, onset within "
        f"2 x eval_steps): {'met' if s.meets_targets else 'NOT met'}.",
    ]
    lines += [f"- {m}" for m in s.target_misses]
    if s.failures:
        lines += ["", f"### Misses and false alarms (first {failures})", ""]
        lines += [f"- {f}" for f in s.failures[:failures]]
        if len(s.failures) > failures:
            lines.append(f"- ... {len(s.failures) - failures} more (use --format json)")
    lines.append("")
    return lines


def _confusion_markdown(conf: Mapping[str, Mapping[str, int]]) -> list[str]:
    scored = symptom_ids()
    order = [HEALTHY, *scored]
    labels = [k for k in order if k in conf] + sorted(k for k in conf if k not in order)
    cols_seen = {c for row in conf.values() for c in row if c not in ("runs", "none")}
    cols = [c for c in scored if c in cols_seen] + sorted(cols_seen - set(scored))
    cols.append("none")
    head = "| label | runs | " + " | ".join(cols) + " |"
    sep = "|---|---:|" + "---:|" * len(cols)
    body = [
        f"| {lab} | {conf[lab].get('runs', 0)} | "
        + " | ".join(str(conf[lab].get(c, 0) or "") or "·" for c in cols)
        + " |"
        for lab in labels
    ]
    return [head, sep, *body]
