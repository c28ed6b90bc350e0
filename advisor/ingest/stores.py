"""Tracking stores on disk: an MLflow file-store run folder, an MLflow or trackio SQLite
database (verl's default MLflow URI is sqlite:////tmp/mlruns.db; trackio keeps one
<project>.db per project), TensorBoard event files."""

from __future__ import annotations

import ast
import json
import math
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable
from itertools import islice
from pathlib import Path
from typing import Any

from advisor import lazy
from advisor.ingest import hints as hint_map
from advisor.ingest.depth import MAX_JSON_DEPTH, json_depth
from advisor.ingest.frame import build_run, flatten_keys
from advisor.ingest.names import lookup
from advisor.types import InputError, Run, RunEnding

# MLflow RunStatus codes in meta.yaml
_MLFLOW_STATUS = {"3": "completed", "4": "failed", "5": "killed", "FINISHED": "completed",
                  "FAILED": "failed", "KILLED": "killed"}  # fmt: skip


def is_mlflow_run(path: Path) -> bool:
    return (path / "metrics").is_dir() and (
        (path / "meta.yaml").exists() or (path / "params").is_dir() or (path / "tags").is_dir()
    )


def find_mlflow_runs(root: Path) -> list[Path]:
    """Run folders under an `mlruns/` root (mlruns/<experiment>/<run>/metrics)."""
    runs = [p.parent for p in root.glob("*/*/metrics") if p.is_dir()]
    runs += [p.parent for p in root.glob("*/metrics") if p.is_dir()]
    return sorted(runs, key=lambda p: _mtime(p / "metrics"), reverse=True)


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


# A run logs a few dozen metrics; a folder of thousands is read only in part: every file of a
# known metric (names.lookup) first, then the others by name, up to _MLFLOW_MAX_FILES, and the
# listing itself stops at _MLFLOW_MAX_LISTED entries.
_MLFLOW_MAX_FILES = 300
_MLFLOW_MAX_LISTED = 50_000


def read_mlflow(run_dir: Path, source: str) -> Run:
    pl = lazy.polars

    metrics_dir = run_dir / "metrics"
    chosen, warnings = _mlflow_metric_files(metrics_dir, source)
    frames = []
    for key, f in chosen:
        try:
            part = pl.read_csv(
                f,
                separator=" ",
                has_header=False,
                new_columns=["ts", "value", "step"],
                schema_overrides={"ts": pl.Float64, "value": pl.Float64, "step": pl.Float64},
                truncate_ragged_lines=True,
                ignore_errors=True,
            )
        except Exception:  # an empty or unreadable metric file: skip it, say so below
            continue
        part = part.filter(pl.col("step").is_not_null())
        if part.height:  # one column per file, its last value at each step
            part = part.unique(subset="step", keep="last", maintain_order=True)
            frames.append(part.select(pl.col("step"), pl.col("value").alias(key)))
    if not frames:
        raise InputError(f"{source}/metrics: expected MLflow metric files ('ts value step')")
    # aligned on the step (outer joins, sorted): a pivot of a long frame costs seconds for
    # a few hundred keys
    wide = frames[0] if len(frames) == 1 else pl.concat(frames, how="align")
    return build_run(
        wide.sort("step"),
        source=source,
        fmt="mlflow",
        hints=hint_map.verl_hints(_mlflow_params(run_dir / "params")),
        ending=_mlflow_ending(run_dir / "meta.yaml"),
        warnings=warnings,
    )


def _mlflow_metric_files(
    metrics_dir: Path, source: str
) -> tuple[list[tuple[str, Path]], list[str]]:
    """(metric key, file) of the files to read, and a warning when some are left unread."""

    listed = list(islice(metrics_dir.rglob("*"), _MLFLOW_MAX_LISTED + 1))
    found: dict[str, Path] = {}
    for f in listed[:_MLFLOW_MAX_LISTED]:
        if f.is_file():
            # MLflow sanitises '@' to '_at_' in keys (metrics.md); nested folders are '/'
            found.setdefault(f.relative_to(metrics_dir).as_posix().replace("_at_", "@"), f)
    files = list(found.items())
    files.sort(key=lambda kf: (lookup(kf[0]) is None, kf[0]))
    warnings = []
    if len(files) > _MLFLOW_MAX_FILES or len(listed) > _MLFLOW_MAX_LISTED:
        more = "+" if len(listed) > _MLFLOW_MAX_LISTED else ""
        warnings.append(
            f"{source}/metrics: {len(files):,}{more} metric files; read the known metrics' "
            f"and then others by name, {_MLFLOW_MAX_FILES} in all (the rest are not kept)"
        )
    return sorted(files[:_MLFLOW_MAX_FILES], key=lambda kf: kf[1]), warnings  # columns by path


def _mlflow_params(params: Path) -> dict[str, Any]:
    """params/<dotted.key> files -> a nested dict like verl's printed config."""
    if not params.is_dir():
        return {}
    return _nest_params(
        (f.relative_to(params).as_posix(), f.read_text(encoding="utf-8", errors="replace"))
        for f in params.rglob("*")
        if f.is_file()
    )


def _nest_params(items: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """(key, text) params, '/' or '.' between levels (verl flattens its config with '/'), ->
    a nested dict like verl's printed config."""
    cfg: dict[str, Any] = {}
    for raw_key, raw in items:
        key = raw_key.replace("/", ".")
        text = raw.strip()
        try:
            value: Any = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            value = {"true": True, "false": False}.get(text.lower(), text)
        node = cfg
        parts = key.split(".")
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                break
            node = nxt
        else:
            node[parts[-1]] = value
    return cfg


def _mlflow_ending(meta: Path) -> RunEnding | None:
    if not meta.exists():
        return None
    m = re.search(r"^status:\s*'?(\w+)'?", meta.read_text(errors="replace"), re.MULTILINE)
    return _status_ending(m.group(1)) if m else None


def _status_ending(status: str) -> RunEnding | None:
    """An MLflow run status (a code in meta.yaml, a name in the SQL store) as the run's end."""
    kind = _MLFLOW_STATUS.get(status)
    return RunEnding(kind=kind, message=f"MLflow run status {status}") if kind else None  # type: ignore[arg-type]


_FLOAT_MAX = 1.7976931348623157e308  # MLflow's SQL store writes +-inf as +-float max


def read_sqlite(path: Path, source: str) -> Run:
    """An MLflow SQL store or a trackio project database, told apart by their tables."""

    with tempfile.TemporaryDirectory(prefix="rl-advisor-db-") as tmp:
        con = _open_read_only(path, source, Path(tmp))
        try:
            cols = _sqlite_columns(con, "metrics")
            if {"key", "value", "step", "run_uuid"} <= cols:
                return _read_mlflow_sql(con, source, cols)
            if {"run_name", "step", "metrics"} <= cols:
                return _read_trackio(con, source)
            raise InputError(
                f"{source}: a SQLite database without MLflow's or trackio's `metrics` table"
            )
        except sqlite3.Error as err:
            raise InputError(f"{source}: could not read the SQLite database ({err})") from None
        finally:
            con.close()


def _open_read_only(path: Path, source: str, tmp: Path) -> sqlite3.Connection:
    """A connection that changes nothing beside the user's file. SQLite's read-only mode
    still creates `-shm` (and may leave `-wal`) beside a WAL database; `immutable=1` touches
    nothing but ignores what the WAL holds. So a database with a live WAL is read from a copy
    of both files in `tmp` (a training run's trackio file is small), any other immutable."""
    wal = path.with_name(path.name + "-wal")
    try:
        live = wal.is_file() and wal.stat().st_size > 0
    except OSError:
        live = False
    target, query = path.resolve(), "?mode=ro&immutable=1"
    if live:
        try:
            copy = tmp / "metrics.db"
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, tmp / "metrics.db-wal")
            target, query = copy, ""
        except OSError:
            pass  # no room for a copy: the checkpointed state, immutable
    try:
        con = sqlite3.connect(f"{target.as_uri()}{query}", uri=True)
        con.execute("SELECT 1 FROM sqlite_master LIMIT 1")
        return con
    except sqlite3.Error as err:
        raise InputError(f"{source}: cannot open the SQLite database ({err})") from None


def _sqlite_columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in con.execute(f"PRAGMA table_info({table})")}


def _read_mlflow_sql(con: sqlite3.Connection, source: str, cols: set[str]) -> Run:
    """MLflow's SQL store: rows of (key, value, timestamp, step, is_nan) per run. The newest
    active run is read; NaN is stored as 0 with is_nan, infinities as +-float max."""
    pl = lazy.polars

    run = con.execute(
        "SELECT run_uuid, name, status FROM runs WHERE lifecycle_stage IS NOT 'deleted' "
        "ORDER BY start_time DESC LIMIT 1"
    ).fetchone()
    if run is None:
        raise InputError(f"{source}: an MLflow database without a run")
    run_id, name, status = run
    nan = "is_nan" if "is_nan" in cols else "0"
    rows = con.execute(
        f"SELECT key, value, step, {nan} FROM metrics WHERE run_uuid = ? ORDER BY timestamp, rowid",
        (run_id,),
    ).fetchall()
    if not rows:
        raise InputError(f"{source}: MLflow run {run_id} ({name}) logged no metric")
    keys, values, steps = [], [], []
    odd = 0
    for key, value, step, is_nan in rows:
        # SQLite keeps any type in any column: a cell of the wrong type is skipped and counted
        s = _int_step(step)
        if not isinstance(key, str) or s is None or not (is_nan or _is_number(value)):
            odd += 1
            continue
        keys.append(key.replace("_at_", "@"))  # MLflow keys cannot hold '@' (verl maps it)
        steps.append(s)
        values.append(math.nan if is_nan else _unclamp(float(value)))
    if not keys:
        raise InputError(f"{source}: MLflow run {run_id} logged no usable metric row")
    long = pl.DataFrame(
        {"step": steps, "key": keys, "value": values},
        schema={"step": pl.Int64, "key": pl.String, "value": pl.Float64},
    )
    wide = long.pivot(on="key", index="step", values="value", aggregate_function="last")
    warnings = [f"{source}: {odd} metric row(s) of the wrong type skipped"] if odd else []
    runs = con.execute("SELECT COUNT(*) FROM runs WHERE lifecycle_stage IS NOT 'deleted'")
    if (count := runs.fetchone()[0]) > 1:
        warnings.append(f"{source}: {count} MLflow runs; read the newest, {name} ({run_id})")
    params = con.execute("SELECT key, value FROM params WHERE run_uuid = ?", (run_id,))
    texts = [(str(k), str(v)) for k, v in params.fetchall() if k is not None and v is not None]
    return build_run(
        wide.sort("step"),
        source=source,
        fmt="mlflow",
        hints=hint_map.verl_hints(_nest_params(texts)),
        ending=_status_ending(str(status)),
        warnings=warnings,
    )


def _unclamp(value: float) -> float:
    return math.copysign(math.inf, value) if abs(value) >= _FLOAT_MAX else value


def _read_trackio(con: sqlite3.Connection, source: str) -> Run:
    """trackio: one JSON object of metrics per log call. Its `step` counts the calls when the
    caller gave none (transformers' TrackioCallback), so the trainer's `train/global_step`
    is the step when it is there. The run logged last is read."""
    pl = lazy.polars

    run = con.execute(
        "SELECT run_name FROM metrics WHERE run_name IS NOT NULL GROUP BY run_name "
        "ORDER BY MAX(timestamp) DESC LIMIT 1"
    ).fetchone()
    if run is None:
        raise InputError(f"{source}: a trackio database whose runs logged no metric")
    records = []
    for step, blob in con.execute(
        "SELECT step, metrics FROM metrics WHERE run_name IS ? ORDER BY id", (run[0],)
    ):
        rec = _json_object(blob)
        numbers = {k: float(v) for k, v in rec.items() if _is_number(v)}
        own = _int_step(numbers.get("train/global_step"))
        at = own if own is not None else _int_step(step)
        if at is not None:
            records.append({"step": at, **numbers})
    if not records:
        raise InputError(f"{source}: trackio run {run[0]} logged no metric row with a step")
    warnings = []
    names = con.execute("SELECT COUNT(DISTINCT run_name) FROM metrics").fetchone()[0]
    if names > 1:
        warnings.append(f"{source}: {names} trackio runs; read the one logged last, {run[0]}")
    return build_run(
        pl.from_dicts(records, infer_schema_length=None),
        source=source,
        fmt="trackio",
        hints=_trackio_hints(con, run[0]),
        warnings=warnings,
    )


def _int_step(value: Any) -> int | None:
    """A step cell as an int: an integer, or a float with an integral value in int64's range."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) < 2**63 else None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return None


def _json_object(blob: Any) -> dict[str, Any]:
    """A metrics cell: JSON text (or bytes, as orjson writes), nested objects flattened; a
    cell of another type, or nested past any metrics record, holds nothing."""
    if not isinstance(blob, str | bytes) or len(blob) > 1 << 24:
        return {}

    raw = blob.encode("utf-8", "surrogatepass") if isinstance(blob, str) else blob
    if json_depth(raw, per_line=False) > MAX_JSON_DEPTH:
        return {}
    try:
        rec = json.loads(blob)
    except (ValueError, RecursionError):
        return {}
    return flatten_keys(rec) if isinstance(rec, dict) else {}


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _trackio_hints(con: sqlite3.Connection, run: str) -> dict[str, Any]:
    """The run's config (TrainingArguments for a TRL run) -> TRL hints."""
    if "config" not in _sqlite_columns(con, "configs"):
        return {}
    row = con.execute("SELECT config FROM configs WHERE run_name IS ?", (run,)).fetchone()
    cfg = _json_object(row[0]) if row else {}
    return hint_map.trl_arg_hints(
        {k: str(v) for k, v in cfg.items() if k in hint_map.TRL_ARGS and v is not None}
    )
