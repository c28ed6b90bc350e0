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

Public runs (shared/real_runs: labelled/, public2/ and unlabelled/) are scored against
`sample_metrics/real_labels.yaml`: a run passes when every `expected` id is alarmed or
recovered, one of `expected_any` (when given) is, and no forbidden id is alarmed.

The live-fire range (`tests/livefire/runs`: real TRL GRPOTrainer runs, one cause each) is scored
the same way, per file the run left (console log, trainer_state.json), with two more checks a
label may ask for: the one change of the patch coming from one of `primary_any`, and the ending
the report names (`ending_any`, e.g. a traceback).
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from advisor.api import diagnose
from advisor.types import Diagnosis, InputError

ALARM_SEVERITIES = frozenset({"warning", "error"})
# The rows of the guide's troubleshooting table (knowledge.md §4), in its order: the order the
# harness lists the symptoms in. Which symptoms are scored is the rulebook's to say.
GUIDE_ORDER = ("P1", "P2", "P3", "KL0", "P4", "SLOW", "OOM", "P9", "P6")
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


@cache
def symptom_ids() -> tuple[str, ...]:
    """The scored symptoms: the rulebook's alarms (rules at warning or error), the guide's rows
    in the guide's order, then the others in the rulebook's."""
    from advisor.engine import load_symptom_rules

    alarms = [r.id for r in load_symptom_rules().rules if r.severity in ALARM_SEVERITIES]
    guide = [g for g in GUIDE_ORDER if g in alarms]
    return (*guide, *(a for a in alarms if a not in guide))


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
class Alarm:
    id: str
    severity: str
    onset_step: int | None
    detected_step: int | None
    recovered: bool = False  # an episode over before the end: `severity` is the one it had


@dataclass
class Prediction:
    run_id: str
    alarms: list[Alarm] = field(default_factory=list)  # every finding; info ones are not alarms
    status: str = ""
    error: str | None = None  # the advisor could not judge the run (counts as no alarm)
    ending: str | None = None  # how the run ended, as the report says (RunEnding.kind)
    patch_from: str | None = None  # the finding the one change of the patch comes from

    @property
    def alarm_ids(self) -> set[str]:
        """Ids alarmed at the run's end (recovered episodes are no alarm)."""
        return {a.id for a in self.alarms if a.severity in ALARM_SEVERITIES and not a.recovered}

    @property
    def found_ids(self) -> set[str]:
        """Ids alarmed or recovered: the symptoms the advisor reported seeing."""
        return {a.id for a in self.alarms if a.severity in ALARM_SEVERITIES}

    def alarm(self, sid: str) -> Alarm | None:
        """The alarm (or recovered episode) that scores `sid` when it fired more than once:
        the earliest onset."""
        hits = [a for a in self.alarms if a.id == sid and a.severity in ALARM_SEVERITIES]
        hits.sort(key=lambda a: (a.onset_step is None, a.onset_step or 0))
        return hits[0] if hits else None


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
class RealRunScore:
    name: str
    metrics: str
    expected: list[str]
    acceptable: list[str]
    forbidden: list[str]
    alarms: list[str]
    missing: list[str]
    forbidden_hits: list[str]
    unexpected: list[str]
    passed: bool
    status: str = ""
    error: str | None = None
    note: str = ""
    expected_any: list[str] = field(default_factory=list)  # one of them must be found


@dataclass
class LiveFireScore:
    """One file of one live-fire run, scored against its case's label."""

    case: str
    input: str
    cause: str
    expected: list[str]
    expected_any: list[str]
    acceptable: list[str]
    forbidden: list[str]
    primary_any: list[str]
    ending_any: list[str]
    alarms: list[str]
    missing: list[str]  # expected ids not found (and "one of ..." when expected_any failed)
    forbidden_hits: list[str]
    patch_from: str | None
    ending: str | None
    problems: list[str]  # every reason the file fails its label, in words
    passed: bool
    status: str = ""
    error: str | None = None
    note: str = ""


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


Predictor = Callable[[Path, Path | None], Prediction]


def predict(metrics: Path, config: Path | None) -> Prediction:
    """Run the advisor (advisor.api.diagnose) on one run; errors become a Prediction.error."""

    run_id = metrics.parent.name if metrics.is_file() else metrics.name
    try:
        d = diagnose(metrics, config=config)
    except InputError as err:
        return Prediction(run_id, error=f"input: {_first_line(err)}")
    except Exception as err:  # the harness scores the tool; a crash is a result, not an abort
        return Prediction(run_id, error=f"{type(err).__name__}: {_first_line(err)}")
    return prediction_of(d, run_id)


def prediction_of(d: Diagnosis, run_id: str) -> Prediction:
    """What a diagnosis says, as the harness scores it (also for a Diagnosis made online)."""
    pred = Prediction(run_id, status=str(d.status))
    if d.run is not None and d.run.ending is not None:
        pred.ending = d.run.ending.kind
    if d.patch is not None and d.patch.kind != "none":
        pred.patch_from = (d.patch.from_finding or "").upper() or None
    for f in d.findings:
        was = f.recovered_from if f.recovered_from is not None else f.severity
        sev = str(getattr(was, "value", was))
        pred.alarms.append(
            Alarm(f.id.upper(), sev, f.onset_step, f.detected_step, f.recovered_from is not None)
        )
    return pred


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


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


# ----------------------------------------------------------------------------- real runs


def default_real_dir() -> Path | None:
    """`../shared/real_runs` next to the repo, when present (the labels name runs under it)."""
    here = Path(__file__).resolve().parents[1]
    for cand in (here.parent / "shared" / "real_runs",):
        if cand.is_dir():
            return cand
    return None


def default_real_labels() -> Path:
    return Path(__file__).resolve().parents[1] / "sample_metrics" / "real_labels.yaml"


def default_full_labels() -> Path:
    return Path(__file__).resolve().parents[1] / "sample_metrics" / "full_labels.yaml"


def default_full_dir(real_dir: Path | None) -> Path | None:
    """`<real runs>/full`, the public full curves, when present."""
    cand = real_dir / "full" if real_dir is not None else None
    return cand if cand is not None and cand.is_dir() else None


def score_real(
    real_dir: Path, labels_path: Path, predictor: Predictor | None = None
) -> list[RealRunScore]:
    """Score the public runs against their hand-written labels (expected/acceptable/forbidden)."""

    if not labels_path.exists():
        raise InputError(f"{labels_path}: not found; expected the labels of the public runs")
    doc = YAML(typ="safe").load(labels_path.read_text(encoding="utf-8")) or {}
    runs = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(runs, dict):
        raise InputError(f"{labels_path}: expected a mapping 'runs: {{name: {{metrics, ...}}}}'")
    run_predict = predictor or predict
    out = []
    for name, spec in runs.items():
        metrics = real_dir / name / str(spec.get("metrics", ""))
        if not metrics.exists():
            raise InputError(f"{labels_path}: runs.{name}.metrics: {metrics} does not exist")
        pred = run_predict(metrics, None)
        out.append(_real_score(name, metrics, spec, pred))
    return out


def _real_score(
    name: str, metrics: Path, spec: Mapping[str, Any], pred: Prediction
) -> RealRunScore:
    v = _against(spec, pred)
    missing = v.missing + ([" or ".join(v.expected_any)] if v.any_missed else [])
    listed = v.expected + v.acceptable + v.forbidden
    return RealRunScore(
        name=name,
        metrics=metrics.name,
        expected=v.expected,
        acceptable=v.acceptable,
        forbidden=v.forbidden,
        alarms=v.alarms,
        missing=missing,
        forbidden_hits=v.hits,
        unexpected=[a for a in v.alarms if a not in listed],
        passed=not missing and not v.hits and pred.error is None,
        status=pred.status,
        error=pred.error,
        note=str(spec.get("note", "")),
        expected_any=v.expected_any,
    )


@dataclass(frozen=True)
class _Against:
    """A prediction against a label's ids (a public run's, a live-fire case's)."""

    expected: list[str]
    expected_any: list[str]
    acceptable: list[str]
    forbidden: list[str]  # `[ALL]` stands for every scored symptom the label does not allow
    alarms: list[str]
    missing: list[str]  # expected ids neither alarmed nor recovered
    any_missed: bool  # expected_any given and none of it alarmed or recovered
    hits: list[str]  # forbidden ids alarmed


def _ids(label: Mapping[str, Any], key: str) -> list[str]:
    return [str(v).upper() for v in label.get(key) or []]


def _against(label: Mapping[str, Any], pred: Prediction) -> _Against:
    expected, any_of = _ids(label, "expected"), _ids(label, "expected_any")
    acceptable, forbidden = _ids(label, "acceptable"), _ids(label, "forbidden")
    if forbidden == ["ALL"]:
        allowed = {*expected, *any_of, *acceptable}
        forbidden = [s for s in symptom_ids() if s not in allowed]
    alarms, found = sorted(pred.alarm_ids), pred.found_ids  # found: alarmed or recovered
    return _Against(
        expected=expected,
        expected_any=any_of,
        acceptable=acceptable,
        forbidden=forbidden,
        alarms=alarms,
        missing=[e for e in expected if e not in found],
        any_missed=bool(any_of) and not set(any_of) & found,
        hits=[a for a in alarms if a in forbidden],
    )


# ----------------------------------------------------------------------------- live-fire range


def default_livefire_dir() -> Path | None:
    """`tests/livefire/runs` of a source checkout, when present."""
    cand = Path(__file__).resolve().parents[1] / "tests" / "livefire" / "runs"
    return cand if cand.is_dir() else None


def livefire_labels(runs_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(case directory, label) for every case of a live-fire range, sorted by name."""
    if not runs_dir.is_dir():
        raise InputError(f"{runs_dir}: not a directory; expected live-fire case directories")
    out = []
    for path in sorted(runs_dir.glob("*/label.json")):
        try:
            label = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise InputError(f"{path}: unreadable label ({err}); expected a JSON object") from err
        if not isinstance(label, dict) or not isinstance(label.get("inputs"), dict):
            raise InputError(f"{path}: expected a JSON object with an 'inputs' mapping")
        out.append((path.parent, label))
    if not out:
        raise InputError(f"{runs_dir}: no <case>/label.json found")
    return out


def score_livefire(runs_dir: Path, predictor: Predictor | None = None) -> list[LiveFireScore]:
    """Diagnose every file each live-fire case names in its label (no job file: a TRL user has
    none) and score it against the label."""
    run_predict = predictor or predict
    out = []
    for case_dir, label in livefire_labels(runs_dir):
        for name, spec in label["inputs"].items():
            metrics = case_dir / name
            if not metrics.exists():
                raise InputError(f"{case_dir / 'label.json'}: inputs.{name}: {metrics} not found")
            pred = run_predict(metrics, None)
            out.append(_livefire_score(case_dir.name, name, label, spec or {}, pred))
    return out


def _livefire_score(
    case: str, name: str, label: Mapping[str, Any], spec: Mapping[str, Any], pred: Prediction
) -> LiveFireScore:
    v = _against(label, pred)
    primary = _ids(label, "primary_any")
    endings = [str(e) for e in spec.get("ending_any") or []]
    missing = v.missing + (["one of " + "/".join(v.expected_any)] if v.any_missed else [])
    problems = []
    if pred.error:
        problems.append(f"advisor error: {pred.error}")
    if missing:
        problems.append("missed " + ", ".join(missing))
    if v.hits:
        problems.append("forbidden " + ", ".join(v.hits))
    if primary and pred.patch_from not in primary:
        problems.append(f"patch from {pred.patch_from or 'nothing'}, not {'/'.join(primary)}")
    if endings and pred.ending not in endings:
        problems.append(f"ending {pred.ending or 'not named'}, not {'/'.join(endings)}")
    return LiveFireScore(
        case=case,
        input=name,
        cause=str(label.get("cause", "")),
        expected=v.expected,
        expected_any=v.expected_any,
        acceptable=v.acceptable,
        forbidden=v.forbidden,
        primary_any=primary,
        ending_any=endings,
        alarms=v.alarms,
        missing=missing,
        forbidden_hits=v.hits,
        patch_from=pred.patch_from,
        ending=pred.ending,
        problems=problems,
        passed=not problems,
        status=pred.status,
        error=pred.error,
        note=str(label.get("note", "")),
    )


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
        lines += _real_markdown(rep.real)
    if rep.full:
        lines += _real_markdown(rep.full, "Public full curves")
    if rep.livefire:
        lines += livefire_markdown(rep.livefire)
    return "\n".join(lines).rstrip() + "\n"


def _labelled_row(name: str, scores: Sequence[Any]) -> str:
    """A summary row for runs scored against hand-written labels: healthy ones alarmed (those
    labelled with nothing expected nor acceptable) and how many pass."""
    passed = sum(r.passed for r in scores)
    healthy = [
        r
        for r in scores
        if not (r.expected or getattr(r, "acceptable", []) or getattr(r, "expected_any", []))
    ]
    alarmed = sum(bool(r.alarms) for r in healthy)
    return (
        f"| {name} | {len(scores)} | {alarmed}/{len(healthy)} | | | | {passed}/{len(scores)} pass |"
    )


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
        lines.append(_labelled_row("public runs (real_labels.yaml)", rep.real))
    if rep.full:
        lines.append(_labelled_row("public full curves (full_labels.yaml)", rep.full))
    if rep.livefire:
        lines.append(_labelled_row("live-fire range (files)", rep.livefire))
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


def _real_markdown(real: Sequence[RealRunScore], title: str = "Public runs") -> list[str]:
    passed = sum(r.passed for r in real)
    lines = [
        f"## {title} ({passed}/{len(real)} pass)",
        "",
        "| run | expected | alarms | missing | forbidden raised | result |",
        "|---|---|---|---|---|---|",
    ]
    for r in real:
        result = "pass" if r.passed else ("error: " + r.error if r.error else "FAIL")
        expected = ", ".join(r.expected)
        if r.expected_any:
            expected += (", " if expected else "") + "one of " + "/".join(r.expected_any)
        lines.append(
            f"| {r.name} | {expected or '(healthy)'} | {', '.join(r.alarms) or '-'} "
            f"| {', '.join(r.missing) or '-'} | {', '.join(r.forbidden_hits) or '-'} "
            f"| {result.replace('|', '/')} |"
        )
    lines.append("")
    return lines


def livefire_markdown(scores: Sequence[LiveFireScore]) -> list[str]:
    """The live-fire table: one row per case and file, what the cause implies and what was said."""
    passed = sum(r.passed for r in scores)
    lines = [
        f"## Live-fire range ({passed}/{len(scores)} pass)",
        "",
        "| case | file | cause | expected | alarms | patch from | ending | result |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in scores:
        want = list(r.expected) + (["one of " + "/".join(r.expected_any)] if r.expected_any else [])
        result = "pass" if r.passed else "FAIL: " + "; ".join(r.problems)
        lines.append(
            f"| {r.case} | {r.input} | {r.cause} | {', '.join(want) or '(healthy)'} "
            f"| {', '.join(r.alarms) or '-'} | {r.patch_from or '-'} | {r.ending or '-'} "
            f"| {result.replace('|', '/')} |"
        )
    lines.append("")
    return lines
