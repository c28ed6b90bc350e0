"""Real runs scored against hand-written labels: the public runs (shared/real_runs: labelled/,
public2/ and unlabelled/, labels in `sample_metrics/real_labels.yaml`), the public full curves
(`<real runs>/full`, `sample_metrics/full_labels.yaml`) and the live-fire range
(`tests/livefire/runs`: real TRL GRPOTrainer runs, one cause each, a `label.json` per case).

A run passes when every `expected` id is alarmed or recovered, one of `expected_any` (when
given) is, and no forbidden id is alarmed (`forbidden: [ALL]`: every scored symptom the label
does not allow). A live-fire case is scored per file the run left (console log,
trainer_state.json), with two more checks its label may ask for: the one change of the patch
coming from one of `primary_any`, and the ending the report names (`ending_any`, e.g. a
traceback).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from advisor.prediction import Prediction, Predictor, predict, symptom_ids
from advisor.types import InputError


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



# ----------------------------------------------------------------------------- rendering


def labelled_row(name: str, scores: Sequence[Any]) -> str:
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



def real_markdown(real: Sequence[RealRunScore], title: str = "Public runs") -> list[str]:
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
