"""The run history of `diagnose --previous` (repeatable, oldest first): what each earlier run
was set to and, where its report is at hand, what its diagnosis advised.

The remedy escalates a step that did not cure and brackets a knob between a value shown too
low and one shown too high (advisor.sizing.stepped); it can only do that on settings that are
known. So every entry is read strictly: a value the file does not give is left out, never
filled with a platform default, and a path that holds no settings is refused (exit 2, one
line) rather than read as an all-defaults job.

Accepted per `--previous`:
- a job file: the platform's job YAML, a TRL (`trl grpo --config`) or verl config;
- a run directory: its job file (`rl-advisor-job.yaml`, which the TRL callback writes) or
  else its `rl-advisor-run.json`, with its `rl-advisor-report.json` for the outcome;
- `rl-advisor-run.json` (the TRL callback's record of the run's arguments);
- `rl-advisor-report.json` (a diagnose JSON report: the settings it judged and its advice).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.config import LoadedConfig, load_config
from advisor.static import rulebook
from advisor.types import JOB_FILE, RUN_FILE, InputError

REPORT_FILE = "rl-advisor-report.json"
_EXPECTED = (
    "expected a job file (platform, TRL or verl YAML), a run directory holding "
    f"{JOB_FILE} or {RUN_FILE}, {RUN_FILE} or {REPORT_FILE}"
)


@dataclass(frozen=True)
class Round:
    """One earlier run of the history (`--previous`, oldest first): the settings it is known
    to have run with (no assumed default), and what its own diagnosis advised, when its report
    is at hand: parameter -> +1 (raise) / -1 (lower), and whether it was healthy."""

    hp: Mapping[str, Any]
    advised: Mapping[str, int] = field(default_factory=dict)
    healthy: bool | None = None
    source: str = ""


Loader = Callable[[Path], LoadedConfig]


def read_history(paths: Sequence[Path | str], load: Loader = load_config) -> list[Round]:
    """The rounds of `--previous`, in the order given (oldest first). `load`: how a job file
    is loaded (a batch passes its cached loader)."""
    return [read_round(Path(p), load) for p in paths]


def read_round(path: Path, load: Loader = load_config) -> Round:
    """One earlier run, read strictly (see the module's docstring)."""
    if path.is_dir():
        report = path / REPORT_FILE
        for name in (JOB_FILE, RUN_FILE):
            if (path / name).is_file():
                found = _read_file(path / name, load)
                break
        else:
            if not report.is_file():
                raise InputError(f"--previous {path}: a directory without a job file; {_EXPECTED}")
            found = _read_file(report, load)
        advised, healthy = _outcome(report) if report.is_file() else ({}, None)
        return Round(
            hp=found.hp,
            advised=advised or found.advised,
            healthy=_first(healthy, found.healthy),
            source=str(path),
        )
    if not path.is_file():
        raise InputError(f"--previous {path}: no such file or directory; {_EXPECTED}")
    return _read_file(path, load)


def _first(*values: bool | None) -> bool | None:
    return next((v for v in values if v is not None), None)


def _read_file(path: Path, load: Loader) -> Round:
    if path.suffix.lower() == ".json":
        data = _json(path)
        if isinstance(data, dict) and isinstance(data.get("hints"), dict):
            return Round(hp=_known(data["hints"], path, "hints"), source=str(path))
        if isinstance(data, dict) and data.get("schema_version") is not None and "status" in data:
            hp = data.get("hyper_parameters")
            assumed = set(data.get("assumed_parameters") or [])
            if not isinstance(hp, dict):
                raise InputError(
                    f"--previous {path}: a report without hyper_parameters; {_EXPECTED}"
                )
            known = {k: v for k, v in hp.items() if k not in assumed}
            advised, healthy = _outcome(path, data)
            return Round(_known(known, path, "hyper_parameters"), advised, healthy, str(path))
        if not (isinstance(data, dict) and isinstance(data.get("training"), dict)):
            raise InputError(
                f"--previous {path}: a JSON document that is neither {RUN_FILE} (\"hints\") nor "
                f"a report (\"schema_version\", \"status\") nor a job; {_EXPECTED}"
            )
    loaded = load(path)
    origin = loaded.origin
    known = {k: v for k, v in loaded.hyper_parameters.items() if origin.get(k) in ("file", "set")}
    if not known:
        raise InputError(f"--previous {path}: no hyperparameter found in it; {_EXPECTED}")
    return Round(hp=known, source=str(path))


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(
            f"--previous {path}: cannot read it ({err.__class__.__name__}); {_EXPECTED}"
        ) from None
    except ValueError as err:
        raise InputError(f"--previous {path}: not valid JSON ({err}); {_EXPECTED}") from None


def _known(values: Mapping[str, Any], path: Path, where: str) -> dict[str, Any]:
    """The guide's hyperparameters among `values` (a run record also holds TRL's own keys)."""
    params = rulebook().hyper_parameters
    known = {k: v for k, v in values.items() if k in params and v is not None}
    for k, v in known.items():
        if params[k].type in ("int", "float") and not _number(v):
            raise InputError(
                f"--previous {path}: {where}.{k} is {v!r}; expected a finite number"
            )
    if not known:
        raise InputError(f"--previous {path}: its {where} hold no hyperparameter; {_EXPECTED}")
    return known


def _outcome(path: Path, data: Any = None) -> tuple[dict[str, int], bool | None]:
    """What a report advised (parameter -> +1 raise / -1 lower) and whether it was healthy."""
    data = _json(path) if data is None else data
    if not isinstance(data, dict) or "status" not in data:
        raise InputError(f"--previous {path}: not a diagnose JSON report (no \"status\")")
    advised: dict[str, int] = {}
    patch = data.get("patch") or {}
    for c in patch.get("changes") or [] if isinstance(patch, dict) else []:
        old, new = c.get("from"), c.get("to")
        if _number(old) and _number(new) and old != new:
            advised.setdefault(c.get("param"), 1 if new > old else -1)
    return advised, data.get("status") == "healthy"


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def said(history: Sequence[Round], hp: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The history as the JSON carries it: per earlier run, its source, the settings that
    differ from the run at hand, what its diagnosis advised and whether it was healthy."""
    out = []
    for r in history:
        moved = {k: v for k, v in r.hp.items() if hp.get(k) != v}
        out.append(
            {
                "source": r.source,
                "hyper_parameters": moved,
                "advised": {k: ("raise" if d > 0 else "lower") for k, d in r.advised.items()},
                "healthy": r.healthy,
            }
        )
    return out
