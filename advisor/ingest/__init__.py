"""Read a training run from whatever the trainer left on disk, into one canonical frame.

`load_run(path)` detects the format from the content (not only the name), reads it, and returns
an `advisor.types.Run`: one row per step, canonical columns (contract.md) plus every original
column, and what the run said about itself (config hints, how it ended, reader warnings).
A directory is searched for the run's metrics. Unusable input raises `InputError` with the file,
the place and what was expected.

Formats (`Run.format`), detected from the first bytes, the name only breaking ties:
- `verl-console`: `step:N - key:value - ...` lines behind Ray prefixes, ANSI colours, 3-decimal,
  full-precision or `np.float64(...)` values, amid any output (also pasted in Markdown or an
  issue); the printed config dump or command-line overrides give the config hints.
- `trl-console`: transformers/TRL `{'loss': ...}` dict lines amid tqdm bars (the step is derived
  from the bar, see the warning; the bar's rate is the step's step_time); `pairs-console`:
  `key: value` pairs 3+ spaces apart, several per line (TRL's metrics pasted from a notebook or
  a terminal), a group of such lines one step; `dict-console`: OpenRLHF `Global step N: {...}`,
  slime `step N: {...}`; `roll-console`: ROLL `metrics_tag: {...}` lines.
- `swift-console`: ms-swift's dicts, numbered by their `'global_step/max_steps': 'N/M'` (also
  pasted without braces); `notebook-table`: transformers' notebook metrics table as pasted
  (Markdown, tab-separated or space-aligned text, HTML), see `advisor.ingest.notebook`.
- `verl-jsonl` (`{"step": N, "data": {...}}`), `jsonl` (flat objects, nested ones flattened).
- `trl-state` (trainer_state.json), `trl-log-history` (a bare log_history list), `json`.
- `csv` / `wandb-csv` (run history, `_step`) / `wandb-chart-csv` (`<run> - <metric>` columns),
  `parquet`, `mlflow` (a file-store run folder or a SQL store's SQLite file), `trackio` (its
  SQLite project file), `tensorboard` (event files, decoded here).
The managed platform's log envelopes (`dashscope rl logs JOB -o json` and the like) are
unwrapped first and the log inside read (advisor.ingest.envelope).
Folders: a TRL output dir's own or newest checkpoint trainer_state.json, event files, MLflow
runs, then files by kind (JSONL, Parquet, CSV, JSON, text logs), four levels down at most.
"""

from __future__ import annotations

import codecs
import dataclasses
import errno
import os
import re
import stat
import tempfile
from dataclasses import replace
from pathlib import Path

from advisor.ingest import envelope
from advisor.ingest.depth import MAX_JSON_DEPTH, _check_depth, json_depth
from advisor.ingest.names import canonical_name, canonicalize
from advisor.types import InputError, PathLike, Run

__all__ = [
    "MAX_JSON_DEPTH",
    "canonical_name",
    "canonicalize",
    "detect_format",
    "json_depth",
    "load_run",
]

_HEAD = 64 * 1024
_STEP_FIELDS = frozenset({"step", "_step", "Step", "global_step", "train/global_step", "iteration"})
_TEXT_SUFFIXES = (".log", ".txt", ".out", ".err", ".md", ".stdout", ".stderr")
_DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")  # MLflow's SQL store, trackio's projects


def load_run(path: PathLike) -> Run:
    """Read the metrics at `path` (a file or a run directory) into a Run."""
    p = Path(path).expanduser()
    try:
        kind = _kind_of(p)
        return _load_dir(p) if kind == "dir" else _load_file(p)
    except InputError as err:
        raise InputError(_one_line(str(err))) from None
    except RecursionError:
        raise InputError(_one_line(f"{p}: nested too deeply to read as metrics")) from None
    except MemoryError:
        raise InputError(_one_line(f"{p}: too large to read into memory")) from None
    except (OSError, ValueError, ArithmeticError) as err:
        # I/O trouble, or a table polars could not make sense of (its errors are ValueErrors
        # or ComputeErrors): still one line that names the file
        raise InputError(_one_line(f"{p}: could not read the metrics ({err})")) from None
    except Exception as err:
        # A value of a shape no reader expects (a cell of the wrong type, a step polars cannot
        # hold): the input is unusable, said on one line, never a traceback.
        what = f"{type(err).__name__}: {err}"
        raise InputError(_one_line(f"{p}: could not read the metrics ({what})")) from None


_NOT_REGULAR = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind_of(p: Path) -> str:
    """ "dir" or "file"; anything else (a pipe, a device, a link loop) is refused by name
    before it is opened: reading one would block or never end."""
    try:
        st = os.stat(p)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise InputError(
                f"{p}: a symbolic link loop; expected a metrics file or run folder"
            ) from None
        if os.path.islink(p):
            raise InputError(f"{p}: a symbolic link to nothing; expected a metrics file") from None
        if err.errno == errno.ENOENT:
            raise InputError(
                f"{p}: no such file or directory; expected a metrics file or run folder"
            ) from None
        raise InputError(f"{p}: cannot read ({err.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISREG(st.st_mode):
        return "file"
    what = next((name for test, name in _NOT_REGULAR if test(st.st_mode)), "not a regular file")
    raise InputError(f"{p}: {what}, not a regular file; expected a metrics file or run folder")


def is_regular(p: Path) -> bool:
    """A regular file (a link to one counts); pipes, devices and broken links do not."""
    try:
        return stat.S_ISREG(os.stat(p).st_mode)
    except OSError:
        return False


def _one_line(message: str, limit: int = 400) -> str:
    """Error text goes on one stderr line: collapse newlines (from polars, from column names)."""
    text = " ".join(message.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def detect_format(path: Path, head: bytes) -> str:
    """One of: parquet, tensorboard, jsonl, json, csv, console (the text-log family)."""
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"SQLite format 3\x00"):  # an MLflow SQL store, a trackio project
        return "sqlite"
    if "tfevents" in path.name:
        return "tensorboard"
    if head.startswith((b"\x1f\x8b", b"PK\x03\x04", b"\x28\xb5\x2f\xfd", b"BZh")):
        raise InputError(f"{path}: a compressed file (gzip/zip/zstd/bz2); decompress it first")
    if b"\x00" in head and not mostly_text(head):
        raise InputError(f"{path}:1: expected a text metrics file, found binary data")
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if re.match(r"\{\s*'", text):  # a Python dict printed (transformers' PrinterCallback), not JSON
        return "console"
    if text.startswith("{"):
        first, _, rest = text.partition("\n")
        # one object per line; a single-line file is one JSON document (a minified state)
        if first.strip().endswith("}") and rest.strip():
            return "jsonl"
        return "json"
    if text.startswith("[") and re.match(r"\[\s*(?:\{|\]|$)", text):
        return "json"
    first_line = text.split("\n", 1)[0]
    if _notebook_table(first_line):  # a notebook's metrics table copied as tab-separated text
        return "console"
    if _pasted_table(first_line) and path.suffix.lower() not in (".csv", ".tsv"):
        return "console"  # a table pasted into a text file: the table reader (elided rows)
    if path.suffix.lower() in (".csv", ".tsv") or _looks_csv(first_line):
        return "csv"
    return "console"


def mostly_text(head: bytes) -> bool:
    """A text file by any reasonable share: at most 1 % NUL bytes, and what is left decodes as
    UTF-8 with at most 5 % replaced. A console log with a stray NUL from a device line is text;
    an event file, a pickle or a checkpoint is not."""
    if not head or head.count(b"\x00") > len(head) // 100:
        return False
    text = head.replace(b"\x00", b"").decode("utf-8", errors="replace")
    return text.count("\ufffd") <= len(text) // 20


def _notebook_table(line: str) -> bool:
    """The head of transformers' notebook table (`Step`, then "Training Loss") in any form
    but comma-separated: the console reader reads those (its titles are no metric keys)."""
    return line.startswith(("Step", "Epoch")) and "Training Loss" in line and "," not in line


def _pasted_table(line: str) -> bool:
    """`Step` (or `Epoch`) and the keys, tab- or space-separated: a table pasted as text."""
    words = line.split()
    return len(words) >= 2 and words[0] in ("Step", "Epoch") and "," not in line


def _looks_csv(line: str) -> bool:
    sep = "\t" if line.count("\t") > line.count(",") else ","
    fields = [f.strip().strip('"') for f in line.split(sep)]
    return len(fields) >= 2 and any(f in _STEP_FIELDS for f in fields)


def _load_file(p: Path) -> Run:
    source = str(p)
    _kind_of(p)  # a folder's candidates too: only regular files are opened
    try:
        with p.open("rb") as fh:
            head = fh.read(_HEAD)
    except OSError as err:
        raise InputError(f"{p}: cannot read ({err.strerror})") from None
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return _load_utf16(p)
    if not head.strip():
        raise InputError(f"{p}:1: empty file; expected training metrics")
    fmt = detect_format(p, head)
    # Each reader is imported when a file of its format is read: validate and the online
    # Advisor import this package for its helpers and read no file.
    if fmt == "parquet":
        from advisor.ingest.tables import read_parquet

        return read_parquet(p, source)
    if fmt == "sqlite":
        from advisor.ingest.stores import read_sqlite

        return read_sqlite(p, source)
    if fmt == "tensorboard":
        from advisor.ingest.tensorboard import read_tensorboard

        return read_tensorboard([p], source)
    if fmt == "csv":
        from advisor.ingest.tables import read_csv

        return read_csv(p, source)
    if fmt == "json":
        from advisor.ingest.kernellog import is_kernel_log, read_kernel_log

        if is_kernel_log(head):  # its depth is in its strings (console text), not its structure
            return read_kernel_log(p, source)
        _check_depth(p, per_line=False)
    if fmt == "jsonl":  # polars bounds its own depth: read_jsonl checks before Python parses
        from advisor.ingest.jsonfiles import read_jsonl

        return read_jsonl(p, source)
    if fmt == "json":
        from advisor.ingest.jsonfiles import read_json

        if p.stat().st_size > 512 * 1024 * 1024:
            raise InputError(f"{p}: a single JSON document over 512 MB; expected JSONL instead")
        text = p.read_bytes().decode("utf-8", errors="replace").lstrip("\ufeff")
        if envelope.may_be_envelope(head):
            inner = envelope.unwrap(p, text)
            if inner is not None:
                return _unwrapped(p, *inner)
        try:
            return read_json(p, source, text)
        except InputError:
            if text.lstrip().startswith("["):  # a log line like "[2025-01-01 ...] step:1 - ..."
                return _console(p, source)
            if text.lstrip().startswith("{") and "\n{" in text:  # JSONL with a huge first line
                from advisor.ingest.jsonfiles import read_jsonl

                return read_jsonl(p, source)
            raise
    envelope.refuse_lossy(p, head.decode("utf-8", errors="replace"))
    return _console(p, source)


def _unwrapped(p: Path, text: str, what: str, notes: list[str]) -> Run:
    """The run in `text`, the log a platform envelope in file `p` held (ingest.envelope): read
    from a private copy as a file of its own (its format detected afresh), named as `p`."""
    with tempfile.TemporaryDirectory(prefix="rl-advisor-") as tmp:
        copy = Path(tmp) / f"{p.stem}.log"
        copy.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            run = _load_file(copy)
        except InputError as err:
            raise InputError(str(err).replace(str(copy), f"{p} ({what})")) from None
    said = [f"{p.name}: read {what}", *(f"{p.name}: {n}" for n in notes)]
    return dataclasses.replace(run, source=str(p), warnings=[*run.warnings, *said])


def _load_utf16(p: Path) -> Run:
    """A UTF-16 text file (what Windows PowerShell's `>` and `Tee-Object` write): transcoded to
    UTF-8 in a temporary copy, chunk by chunk (a long log is not held in memory), then read."""

    with tempfile.TemporaryDirectory(prefix="rl-advisor-") as tmp:
        copy = Path(tmp) / p.name
        try:
            with p.open("rb") as src, copy.open("wb") as dst:
                decoder = codecs.getincrementaldecoder("utf-16")(errors="replace")
                while chunk := src.read(1 << 20):
                    dst.write(decoder.decode(chunk).encode("utf-8"))
                dst.write(decoder.decode(b"", final=True).encode("utf-8"))
        except OSError as err:
            raise InputError(f"{p}: cannot read ({err.strerror})") from None
        try:
            run = _load_file(copy)
        except InputError as err:
            raise InputError(str(err).replace(str(copy), str(p))) from None
    note = f"{p.name} is UTF-16 text (as PowerShell writes); read it as such"
    return dataclasses.replace(run, source=str(p), warnings=[*run.warnings, note])


def _console(p: Path, source: str) -> Run:
    from advisor.ingest.console import read_console

    return read_console(p, source)


def _checkpoint_no(p: Path) -> int:
    m = re.search(r"checkpoint-(\d+)", p.parent.name)
    return int(m.group(1)) if m else -1


def _candidates(d: Path) -> list[Path]:
    """Files that may hold the run's metrics, most telling first."""
    from advisor.ingest.stores import find_mlflow_runs, is_mlflow_run

    if is_mlflow_run(d):
        return [d]
    if d.name == "metrics" and is_mlflow_run(d.parent):  # the run's metrics/ folder itself
        return [d.parent]
    out: list[Path] = []
    # a TRL output dir: its own trainer_state.json is written last, else the newest checkpoint
    states = [d / "trainer_state.json"] if is_regular(d / "trainer_state.json") else []
    states += sorted(
        (f for f in d.glob("checkpoint-*/trainer_state.json") if is_regular(f)),
        key=_checkpoint_no,
        reverse=True,
    )
    out += states
    # (a bounded walk, not rglob: a link to / or a loop in the folder would make that endless)
    events = sorted(f for f in _walk(d, 5, 5000) if "tfevents" in f.name and is_regular(f))
    if events:
        out.append(events[0].parent)
    out += find_mlflow_runs(d)
    files = [f for f in d.iterdir() if f.is_file() and not f.name.startswith(".")]
    if len(_tb_csvs(d)) >= 2:  # TensorBoard CSV downloads, one per tag: read together
        out.append(d)

    def by_size(fs: list[Path]) -> list[Path]:
        return sorted(fs, key=lambda f: f.stat().st_size, reverse=True)

    classes = (
        (".jsonl", ".ndjson"),
        (".parquet",),
        _DB_SUFFIXES,
        (".csv",),
        (".json",),
        _TEXT_SUFFIXES,
    )
    for suffixes in classes:
        out += by_size([f for f in files if f.suffix.lower() in suffixes and f not in out])
    out += by_size([f for f in files if f not in out and f.suffix == ""])
    # then sub-folders a few levels down (wandb/run-*/files/output.log, logs/, outputs/ ...)
    nested = [f for f in _walk(d, 4) if f.parent != d and f not in out]
    for suffixes in classes:
        out += by_size([f for f in nested if f.suffix.lower() in suffixes])
    return out


def _walk(d: Path, depth: int, limit: int = 500) -> list[Path]:
    """Files under `d` at most `depth` levels down, hidden folders skipped, at most `limit`."""
    found: list[Path] = []
    level = [d]
    for _ in range(depth):
        nxt: list[Path] = []
        for folder in level:
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            for e in entries:
                if e.name.startswith("."):
                    continue
                if e.is_dir():
                    nxt.append(e)
                elif e.is_file():
                    found.append(e)
                if len(found) >= limit:
                    return found
        level = nxt
    return found


def _load_dir(d: Path) -> Run:
    tried: list[str] = []
    for cand in _candidates(d):
        try:
            run = _load_store(cand) if cand.is_dir() else _load_file(cand)
        except InputError as err:
            tried.append(str(err))
            continue
        if len(tried) or cand != d:
            where = cand.relative_to(d) if cand.is_relative_to(d) and cand != d else cand
            note = f"read {where} from the folder {d}"
            return _with_warning(run, note)
        return run
    detail = f" ({'; '.join(tried[:3])})" if tried else ""
    raise InputError(f"{d}: expected a metrics file in this folder, found none readable{detail}")


def _tb_csvs(d: Path) -> list[Path]:
    from advisor.ingest.tables import TB_CSV_NAME

    return sorted(f for f in d.glob("*.csv") if TB_CSV_NAME.match(f.name) and is_regular(f))


def _load_store(d: Path) -> Run:
    from advisor.ingest.stores import is_mlflow_run, read_mlflow

    if is_mlflow_run(d):
        return read_mlflow(d, str(d))
    tb_csvs = _tb_csvs(d)
    events = sorted(f for f in d.glob("*tfevents*") if is_regular(f))
    if len(tb_csvs) >= 2 and not events:
        from advisor.ingest.tables import read_tensorboard_csvs

        return read_tensorboard_csvs(tb_csvs, str(d))
    from advisor.ingest.tensorboard import read_tensorboard

    return read_tensorboard(events, str(d))


def _with_warning(run: Run, note: str) -> Run:
    return replace(run, warnings=[note, *run.warnings])
