"""Tables: CSV (W&B run-history and chart exports, flattened metric dumps) and Parquet."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from advisor import lazy
from advisor.ingest.frame import build_run, has_epoch
from advisor.ingest.jsonfiles import step_key
from advisor.ingest.names import ALIASES
from advisor.types import InputError, Run

_CHART = re.compile(r"^(.+?) - (.+?)(__MIN|__MAX)?$")
# TensorBoard's "Download CSV": one tag per file, named run-<run>-tag-<tag with / as _>.csv
TB_CSV_NAME = re.compile(r"^run[-_](?P<run>.*?)-tag-(?P<tag>.+)\.csv$", re.IGNORECASE)
_TB_CSV_COLUMNS = ["Wall time", "Step", "Value"]


def read_csv(path: Path, source: str) -> Run:
    pl = lazy.polars

    with path.open("rb") as fh:
        header = fh.readline()
    sep = "\t" if header.count(b"\t") > header.count(b",") else ","
    try:
        with warnings.catch_warnings():  # polars' own "CSV malformed" notes: not for the user
            warnings.simplefilter("ignore")
            df = _read_csv(pl, path, sep)
    except Exception as err:  # polars' own message says what and where
        raise InputError(f"{source}:1: expected a CSV table with a header ({err})") from None
    if df.columns == _TB_CSV_COLUMNS:
        return _table(_tb_tag_frame(df, path), source, "tensorboard-csv")
    return _table(df, source, "csv")


def read_tensorboard_csvs(paths: list[Path], source: str) -> Run:
    """A folder of TensorBoard "Download CSV" files, one per tag, joined on the step."""
    pl = lazy.polars

    frames = []
    for path in paths:
        try:
            df = _read_csv(pl, path, ",")
        except Exception as err:
            raise InputError(f"{path}:1: expected a TensorBoard CSV ({err})") from None
        if df.columns != _TB_CSV_COLUMNS:
            raise InputError(f"{path}:1: expected the columns {_TB_CSV_COLUMNS}")
        frames.append(_tb_tag_frame(df, path).drop("wall_time").unique("Step", keep="last"))
    joined = frames[0]
    for other in frames[1:]:
        joined = joined.join(other, on="Step", how="full", coalesce=True)
    return _table(joined.sort("Step"), source, "tensorboard-csv")


def _tb_tag_frame(df: Any, path: Path) -> Any:
    """Value -> the tag's metric key. TensorBoard wrote the tag with its slashes as
    underscores; a known framework key spelled that way gets its slashes back."""
    m = TB_CSV_NAME.match(path.name)
    tag = m.group("tag") if m else path.stem
    return df.rename({"Value": _known_key(tag), "Wall time": "wall_time"})


def _known_key(tag: str) -> str:
    for keys in ALIASES.values():
        for key in keys:
            if key.replace("/", "_") == tag:
                return key
    return tag


def _read_csv(pl: Any, path: Path, sep: str) -> Any:
    return pl.read_csv(
        path,
        separator=sep,
        infer_schema_length=10000,
        null_values=["", "null", "None", "NA"],
        encoding="utf8-lossy",
        truncate_ragged_lines=True,
        ignore_errors=True,
    )


def read_parquet(path: Path, source: str) -> Run:
    pl = lazy.polars

    try:
        df = pl.read_parquet(path)
    except Exception as err:
        raise InputError(f"{source}: expected a Parquet file ({err})") from None
    return _table(df, source, "parquet")


def _table(df: Any, source: str, fmt: str) -> Run:
    pl = lazy.polars

    warnings: list[str] = []
    if df.height == 0:
        raise InputError(f"{source}:2: expected metric rows under the header, found none")
    df, chart = _chart_export(df, warnings)
    if chart:
        fmt = "wandb-chart-csv"
    elif "_step" in df.columns:
        fmt = "wandb-csv"
    key = step_key(df.columns)
    by_epoch = False
    if key is None:
        numeric = [c for c, t in df.schema.items() if t.is_numeric()]
        if not numeric:
            raise InputError(
                f"{source}:1: expected a step column (step, _step, Step, global_step ...) "
                f"and numeric metrics, found {', '.join(df.columns[:6])}"
            )
        warnings.append(f"{source}: no step column; rows numbered 1..{df.height}")
        df = df.with_row_index("step", offset=1)
        by_epoch = has_epoch(df.columns)  # the rows count epochs: said in epochs
    elif key != "step":
        if "step" in df.columns:
            df = df.rename({"step": "step_original"})
        df = df.with_columns(pl.col(key).alias("step"))
    return build_run(
        df, source=source, fmt=fmt, warnings=warnings, sequential=False, by_epoch=by_epoch
    )


def _chart_export(df: Any, warnings: list[str]) -> tuple[Any, bool]:
    """W&B chart export: `<run> - <metric>` columns with __MIN/__MAX companions -> `<metric>`."""
    renames: dict[str, str] = {}
    runs: dict[str, None] = {}
    for col in df.columns:
        m = _CHART.match(col)
        if not m or col in ("Step", "_step"):
            continue
        run, metric, bound = m.groups()
        runs.setdefault(run)
        if bound is None and run == next(iter(runs)) and metric not in df.columns:
            renames[col] = metric
    if not renames:
        return df, False
    if len(runs) > 1:
        warnings.append(
            f"the chart export holds {len(runs)} runs; read '{next(iter(runs))}', "
            "kept the others under their own column names"
        )
    pl = lazy.polars

    # the metric name for the canonical mapping, the original column kept as it was
    return df.with_columns([pl.col(c).alias(m) for c, m in renames.items()]), True
