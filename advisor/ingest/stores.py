"""Tracking stores on disk: an MLflow file-store run folder, TensorBoard event files."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from advisor.ingest import hints as hint_map
from advisor.ingest.frame import build_run
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


def read_mlflow(run_dir: Path, source: str) -> Run:
    import polars as pl

    metrics_dir = run_dir / "metrics"
    frames = []
    for f in sorted(p for p in metrics_dir.rglob("*") if p.is_file()):
        # MLflow sanitises '@' to '_at_' in keys (metrics.md); nested folders are '/' in the key
        key = f.relative_to(metrics_dir).as_posix().replace("_at_", "@")
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
        if part.height:
            frames.append(part.select(pl.col("step"), pl.lit(key).alias("key"), pl.col("value")))
    if not frames:
        raise InputError(f"{source}/metrics: expected MLflow metric files ('ts value step')")
    long = pl.concat(frames)
    wide = long.pivot(on="key", index="step", values="value", aggregate_function="last")
    return build_run(
        wide.sort("step"),
        source=source,
        fmt="mlflow",
        hints=hint_map.verl_hints(_mlflow_params(run_dir / "params")),
        ending=_mlflow_ending(run_dir / "meta.yaml"),
    )


def _mlflow_params(params: Path) -> dict[str, Any]:
    """params/<dotted.key> files -> a nested dict like verl's printed config."""
    cfg: dict[str, Any] = {}
    if not params.is_dir():
        return cfg
    for f in params.rglob("*"):
        if not f.is_file():
            continue
        key = f.relative_to(params).as_posix().replace("/", ".")
        text = f.read_text(encoding="utf-8", errors="replace").strip()
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
    kind = _MLFLOW_STATUS.get(m.group(1)) if m else None
    return RunEnding(kind=kind, message=f"MLflow run status {m.group(1)}") if kind and m else None  # type: ignore[arg-type]
