"""JSON formats: JSONL (verl file logger `{"step": N, "data": {...}}` or one flat object per
step), transformers/TRL `trainer_state.json`, a bare `log_history` list, other step-record lists.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import mmap
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from advisor import lazy
from advisor.ingest import hints as hint_map
from advisor.ingest.depth import MAX_JSON_DEPTH, _check_depth, _too_deep, json_depth
from advisor.ingest.frame import build_run, flatten_keys, has_epoch
from advisor.types import InputError, Run, RunEnding

STEP_KEYS = (
    "step",
    "train/global_step",
    "trainer/global_step",
    "global_step",
    "_step",
    "Step",
    "iteration",
)


def step_key(keys: Any) -> str | None:
    """The column that numbers the steps, best first (see STEP_KEYS)."""
    present = set(keys)
    return next((k for k in STEP_KEYS if k in present), None)


# Above this size a JSONL file is read in pieces of about CHUNK bytes (whole lines), each
# flattened to its metric columns before the next is read: the peak memory is the frame's plus
# one piece's, not the text's plus a nested frame's. Below it one read of the whole file is the
# fastest (polars reads it in parallel).
STREAM_ABOVE = 256 << 20
CHUNK = 64 << 20


def read_jsonl(path: Path, source: str) -> Run:
    """polars first (fast); the Python fallback copes with NaN tokens, junk and a cut last line."""

    df, order, walked = None, [], False
    size = path.stat().st_size
    if size > STREAM_ABOVE:
        got = _jsonl_chunked(path, source)
        if got is not None:
            return got
    elif size > 0:
        # mapped, not read: polars reads the file itself, the text is only scanned here
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            body: Any = mm
            if mm[:3] == b"\xef\xbb\xbf":  # a byte order mark: polars reads the text after it
                body = mm[3:]  # a copy of the file: made once, for both
                df = read_ndjson_complete(body)
            else:
                df = read_ndjson_complete(mm, path=path)
            if df is not None:
                _refuse_deep(df, path)
            else:  # before Python's parser recurses into the lines (the first one next)
                _check_depth(path, per_line=True)
                walked = True
            order = _first_keys(body)
            del body
    warnings: list[str] = []
    if df is None:
        if not walked:
            _check_depth(path, per_line=True)  # before Python's parser recurses into the lines
        df, warnings, fmt = _jsonl_python(path, source)
    else:
        fmt = "jsonl"
    return _records_frame(df, source, warnings, fmt, order)


def _pieces(path: Path, chunk: int = CHUNK) -> Any:
    """(lines before, text) of `path` in pieces of about `chunk` bytes, each ending at a line end
    (the last one may not); a UTF-8 byte order mark is dropped. Where a piece ends is found
    first (the line end at or after `chunk` bytes on), then the piece is read as it is: one
    read and no copy of it (no partial line carried into the next piece)."""
    before = 0
    with path.open("rb") as fh:
        start = 3 if fh.read(3) == b"\xef\xbb\xbf" else 0
        while True:
            fh.seek(start + chunk - 1)
            end = start + chunk - 1 + len(fh.readline())  # through the line end there
            fh.seek(start)
            piece = fh.read(end - start)
            if not piece:
                break
            lines = _count_byte(piece, 10)
            yield before, piece
            del piece
            before += lines
            start = end


def _jsonl_chunked(path: Path, source: str) -> Run | None:
    """A large JSONL file read piece by piece (see STREAM_ABOVE): each piece through polars,
    or line by line when polars refuses it (NaN tokens, junk, a cut last line), flattened, then
    the pieces' frames stacked. None when the first piece is not JSON lines at all (another
    encoding): the whole-file readers decide then."""
    pl = lazy.polars

    frames: list[Any] = []
    order: list[str] = []
    nested = False
    bad: list[int] = []
    cut: int | None = None
    for before, piece in _pieces(path):
        df = read_ndjson_complete(piece)
        if df is not None:
            _refuse_deep(df, path)
        elif (depth := json_depth(piece, per_line=True)) > MAX_JSON_DEPTH:
            raise InputError(_too_deep(path, depth))  # before Python's parser recurses into it
        if not frames and not order:
            order = _first_keys(piece)
        if df is not None:
            flat, was_nested = _unnested(df)
        else:
            records, piece_bad, piece_cut, was_nested = _records_of(piece, before)
            if not frames and not records:
                return None
            bad += piece_bad
            cut = piece_cut if piece_cut is not None else cut
            if not records:
                continue
            flat = pl.from_dicts(records, infer_schema_length=None)
        del piece
        nested = nested or was_nested
        frames.append(_flatten_structs(flat))
    if not frames:
        return None
    df = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    del frames
    return _records_frame(
        df.rechunk(), source, _line_warnings(source, cut, bad), _fmt(nested), order
    )


def _refuse_deep(df: Any, path: Path) -> None:
    """A file polars read, refused as `_check_depth` refuses it when its values nest deeper
    than MAX_JSON_DEPTH. polars parses within its own bound (1,024 levels) and fails past it;
    what it read nests as deep as its schema, so the walk over the text is made only when the
    schema is that deep (the walk counts the brackets of strings too: it says how deep)."""
    if _record_depth(df.schema) > MAX_JSON_DEPTH:
        _check_depth(path, per_line=True)


def _record_depth(schema: Any) -> int:
    """How deep a record of `schema` nests as JSON: 1 for flat values, +1 per struct or list."""
    pl = lazy.polars

    deepest = 1
    todo = [(dtype, 2) for dtype in schema.values()]
    while todo:  # not recursive: a schema may be as deep as polars parses
        dtype, level = todo.pop()
        if isinstance(dtype, pl.Struct):
            deepest = max(deepest, level)
            todo += [(f.dtype, level + 1) for f in dtype.fields]
        elif isinstance(dtype, pl.List | pl.Array):
            deepest = max(deepest, level)
            todo.append((dtype.inner, level + 1))
    return deepest


def _line_warnings(source: str, cut: int | None, bad: list[int]) -> list[str]:
    """What a user is told of the lines dropped: a cut-off last line (`cut`), and the lines
    that are not JSON (`bad`, the first named)."""
    warnings = []
    if cut is not None:
        warnings.append(f"{source}:{cut}: the last line is cut off (not valid JSON); dropped it")
    if bad:
        more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
        warnings.append(f"{source}:{bad[0]}: skipped a line that is not JSON{more}")
    return warnings


def _fmt(nested: bool) -> str:
    """The format of JSON lines: verl's file logger nests the metrics under `data`."""
    return "verl-jsonl" if nested else "jsonl"


def _unnested(df: Any) -> tuple[Any, bool]:
    """The verl file logger's `data` object as columns (with its record's step), as
    `_records_frame` makes them; whether there was one."""
    pl = lazy.polars

    if "data" not in df.columns or not isinstance(df.schema["data"], pl.Struct):
        return df, False
    data = df["data"].struct.unnest()
    step = df["step"] if "step" in df.columns else None
    return (data if step is None or "step" in data.columns else data.with_columns(step)), True


def _records_of(
    piece: bytes, before: int
) -> tuple[list[dict[str, Any]], list[int], int | None, bool]:
    """The records of a piece polars refused, line by line as `_jsonl_python` reads them."""
    lines = piece.split(b"\n")
    last_cut = not piece.endswith(b"\n")  # only the file's last piece can end without one
    if not last_cut:
        lines.pop()
    n = len(lines)
    return _parse_lines(
        (before + i + 1, raw.decode("utf-8", "replace"), last_cut and i == n - 1)
        for i, raw in enumerate(lines)
    )


def _parse_lines(
    lines: Iterable[tuple[int, str, bool]],
) -> tuple[list[dict[str, Any]], list[int], int | None, bool]:
    """The JSON objects of (line number, text, is a last line without its newline) lines,
    flattened: (records, line numbers of junk lines, the line number of a cut last line,
    whether a record nests its metrics under `data`)."""
    records: list[dict[str, Any]] = []
    bad: list[int] = []
    cut = None
    nested = False
    for lineno, line, last in lines:
        text = line.strip()
        if not text:
            continue
        try:
            rec = json.loads(text)
        except ValueError:
            if last:
                cut = lineno
            else:
                bad.append(lineno)
            continue
        if isinstance(rec, dict):
            nested = nested or isinstance(rec.get("data"), dict)
            records.append(_flat_record(rec))
    return records, bad, cut, nested


def _first_keys(data: Any) -> list[str]:
    """The field names of the first record, flattened as the frame names them (the `data`
    fields of the verl file logger): polars lays out a wide object's fields in no set order."""
    end = data.find(b"\n")
    try:
        first = json.loads(data[: end if end >= 0 else len(data)])
    except ValueError:
        return []
    if not isinstance(first, dict):
        return []
    if isinstance(first.get("data"), dict):
        return ["step", *first["data"]]
    return list(flatten_keys(first))


def read_ndjson_complete(data: Any, fields: int | None = None, path: Path | None = None) -> Any:
    """polars.read_ndjson that loses no key: a key first seen after the schema-inference rows
    would be dropped silently, so count the fields read against the `":` in the text (or the
    caller's count) and re-read with full inference when they differ. None if polars refuses.
    `data`: the text (bytes or a mapped file); polars reads `path` instead when given."""
    if fields is None and _fewer_lines(data, 100):
        fields = -1  # the default inference sees every line: nothing can be missed

    # polars infers the schema from the first records, in time that grows steeply with how
    # deep they nest (objects 200 levels deep: ~20 s; 400: minutes and gigabytes): those
    # records are bounded before it reads them, the rest (parsed against the schema) only
    # before a read that infers from every record. Deeper: None, and the caller refuses.
    if json_depth(data[: _records_end(data, _INFERRED)], per_line=True) > MAX_JSON_DEPTH:
        return None
    pl = lazy.polars

    src: Any = path if path is not None else io.BytesIO(data)
    try:
        df = pl.read_ndjson(src)
        # counted after the read, which needs no numpy: on a cold start (api.diagnose) the read
        # runs while another thread imports numpy. One byte is counted several times faster
        # than two; a ':' inside a string value only costs a second read
        expected = _count_colons(data) if fields is None else fields
        if expected >= 0 and not _all_read(df, expected, data if fields is None else None):
            if json_depth(data, per_line=True) > MAX_JSON_DEPTH:
                return None
            src = path if path is not None else io.BytesIO(data)
            df = pl.read_ndjson(src, infer_schema_length=None)
    except Exception:  # NaN tokens, junk lines, a cut last line: the caller falls back
        return None
    # read in parallel, each column comes in many chunks; every later select would pay for them
    # (a large file's pieces too: a piece's columns made contiguous drop the slack of the
    # parse buffers, ~10 % of the peak memory of a 1 GB file, for ~1 % of the read's CPU)
    return df.rechunk() if df.n_chunks() > 1 else df


_INFERRED = 100  # the records polars.read_ndjson infers its schema from (its default)
_BLANKS = re.compile(rb"[ \t\r\n]*")


def _records_end(data: Any, n: int) -> int:
    """Where the first `n` records (lines that are not blank) of `data` end."""
    at = 0
    for _ in range(n):
        at = _BLANKS.match(data, at).end()  # type: ignore[union-attr]  # matches always
        if at >= len(data):
            break
        end = data.find(b"\n", at)
        at = len(data) if end < 0 else end + 1
    return at


def _all_read(df: Any, expected: int, data: Any) -> bool:
    """Whether `df` holds every value of the text whose `expected` count of `:` it was read
    from. A null value (`"key": null`) is a colon without a cell: the count is then taken
    again without the nulls, and each null's key must be a column (or a struct field) of
    `df`, or a key seen only with nulls would be lost. Anything this does not recognise
    (an escaped key, `null` inside a string) answers False: a second, full read."""
    got = _cells(df)
    if got == expected:
        return True
    if data is None:
        return False
    nulls = _null_keys(data)
    if nulls is None or got != expected - sum(nulls.values()):
        return False
    return nulls.keys() <= _names(df)


# bytes around a null value as polars and json.dumps write it (`"key":null`, `"key": null`)
_AFTER_VALUE = b",}] \t\r\n"
_BEFORE_KEY = b"{, \t\r\n"


def _null_keys(data: Any, chunk: int = 1 << 22) -> dict[str, int] | None:
    """key -> count of its `"key": null` pairs in JSON lines polars has read (so valid
    JSON); None when a hit is not plainly one (an escaped key, `:null` inside a string):
    the caller then re-reads in full.

    In pieces of whole lines (views of one array: the text is not copied). A piece's `null`
    words are found as 2-byte words (_null_words), those after a `:` or `: ` are the hits; the
    key of the first is read back to its opening quote, every hit whose bytes before it are
    that same `"key"` is counted at once, and so on with the next hit not yet counted (a log
    has few keys that are ever null)."""
    np = lazy.numpy
    text = np.frombuffer(data, dtype=np.uint8)
    after, before = np.frombuffer(_AFTER_VALUE, np.uint8), np.frombuffer(_BEFORE_KEY, np.uint8)
    out: dict[bytes, int] = {}
    at, size = 0, len(text)
    while at < size:
        end = min(at + chunk, size)
        if end < size:  # end the piece at a line end: a key and its value never straddle one
            cut = data.rfind(b"\n", at, end)
            end = cut + 1 if cut >= at else (data.find(b"\n", end) + 1 or size)
        part, base, at = text[at:end], at, end
        real = len(part)
        word = _null_words(text, base, end) - base
        word = word[word >= 2]  # room for `:` or `: ` before it (a line starts with `{`)
        colon = part[word - 1] == 58
        spaced = ~colon & (part[word - 1] == 32) & (part[word - 2] == 58)
        hit = np.where(colon, word - 1, word - 2)[colon | spaced]
        stop = word[colon | spaced] + 4
        if not len(hit):
            continue
        if not np.all((stop >= real) | np.isin(part[np.minimum(stop, real - 1)], after)):
            return None  # `:nullx`: inside a string
        if np.any(hit < 1) or np.any(part[hit - 1] != 34):
            return None  # a `:` not right after a closing quote: inside a string
        while len(hit):
            h = int(hit[0])
            start = data.rfind(b'"', base, base + h - 1) - base  # the key's opening quote
            if start < 1 or part[start - 1] not in before:
                return None  # an escaped quote, or `":null` inside a string value
            key = bytes(data[base + start + 1 : base + h - 1])
            if b"\\" in key:
                return None  # an escape inside the key
            n = len(key)
            ok = hit >= n + 3
            sub = hit[ok] - 1 - n  # where each hit's key would start
            same = (part[sub - 1] == 34) & np.isin(part[sub - 2], before)
            for i, byte in enumerate(key):  # a byte at a time: no index array of hits x n
                same &= part[sub + i] == byte
            ok[ok] = same
            if not ok[0]:
                return None  # (cannot be: the first hit is this key's)
            out[key] = out.get(key, 0) + int(np.count_nonzero(ok))
            hit = hit[~ok]
    return {k.decode("utf-8", "replace"): n for k, n in out.items()}


# the word `null` read as 2-byte words: it holds `ll` at an even place, or `ul`
_LL, _UL = int.from_bytes(b"ll", "little"), int.from_bytes(b"ul", "little")


def _null_words(text: Any, start: int, end: int, block: int = 1 << 18) -> Any:
    """Where the word `null` starts in text[start:end] (a uint8 array), ascending, as indices
    of `text`. Read as 2-byte words from an even index, a `null` holds `ll` (starting at an
    even index) or `ul` (at an odd one): two comparisons of half as many words find every
    candidate, instead of testing each byte for a `:` and then the bytes after each colon
    (a metrics line holds a colon every ~30 bytes, a null rarely). In blocks (an even
    count of bytes) that stay in the cache."""
    np = lazy.numpy

    found = []
    ll, ul = np.empty(block // 2, dtype=bool), np.empty(block // 2, dtype=bool)
    for at in range(start - (start & 1), end, block):
        n = (min(at + block, end) - at) // 2
        words = text[at : at + 2 * n].view("<u2")
        pair, other = ll[:n], ul[:n]
        np.equal(words, _LL, out=pair)
        np.equal(words, _UL, out=other)
        np.logical_or(pair, other, out=pair)
        hit = np.flatnonzero(pair)
        if len(hit):
            found.append(hit * 2 + at)
    if not found:
        return np.empty(0, dtype=np.intp)
    pair_at = np.concatenate(found)
    word = np.where(text[pair_at] == 108, pair_at - 2, pair_at - 1)  # `ll`, else `ul`
    word = word[(word >= start) & (word + 4 <= end)]
    null = (text[word] == 110) & (text[word + 1] == 117)
    null &= (text[word + 2] == 108) & (text[word + 3] == 108)
    return word[null]


def _names(df: Any) -> set[str]:
    """Every column name of `df` and, within struct columns, every field name."""
    pl = lazy.polars

    out: set[str] = set()
    todo = list(df.schema.items())
    while todo:
        name, dtype = todo.pop()
        out.add(name)
        if isinstance(dtype, pl.Struct):
            todo += [(f.name, f.dtype) for f in dtype.fields]
    return out


def _count_colons(data: Any) -> int:
    return _count_byte(data, ord(":"))


def _count_byte(data: Any, byte: int, chunk: int = 1 << 18) -> int:
    """How many times `byte` occurs in `data` (several times faster than bytes.count)."""
    np = lazy.numpy

    text = np.frombuffer(data, dtype=np.uint8)
    hit = np.empty(min(chunk, len(text)), dtype=bool)
    n = 0
    for at in range(0, len(text), chunk):  # in pieces that stay in the cache
        part = text[at : at + chunk]
        out = hit[: len(part)]
        np.equal(part, byte, out=out)
        n += int(np.count_nonzero(out))
    return n


def _fewer_lines(data: bytes, n: int) -> bool:
    """Fewer than n newlines (found one by one: counting them all costs a pass over the data)."""
    at = -1
    for _ in range(n):
        at = data.find(b"\n", at + 1)
        if at < 0:
            return True
    return False


def _cells(df: Any) -> int:
    """Non-null cells, counting a struct cell and each of its non-null fields."""
    pl = lazy.polars

    # a column's null count is kept with it: read, not counted (no plan run over the frame)
    total = df.height * df.width - sum(s.null_count() for s in df.get_columns())
    for name, dtype in df.schema.items():
        if isinstance(dtype, pl.Struct):
            total += _cells(df[name].struct.unnest())
    return total


def _jsonl_python(path: Path, source: str) -> tuple[Any, list[str], str]:
    # the console reader (its patterns, ~10 ms to import) only when polars refused the file
    from advisor.ingest.lines import iter_lines

    pl = lazy.polars

    records, bad, cut, nested = _parse_lines(iter_lines(path))
    warnings = _line_warnings(source, cut, bad)
    if not records:
        raise InputError(f"{source}:1: expected one JSON object per line, found none readable")
    return pl.from_dicts(records, infer_schema_length=None), warnings, _fmt(nested)


def _flat_record(rec: dict[str, Any]) -> dict[str, Any]:
    data = rec.get("data")
    if isinstance(data, dict):  # verl file logger
        out = {k: _num(v) for k, v in data.items()}
        out["step"] = rec.get("step", data.get("step"))
        return out
    flat = flatten_keys(rec)
    return {k: _num(v) if k not in STEP_KEYS else v for k, v in flat.items()}


def _num(v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _records_frame(
    df: Any, source: str, warnings: list[str], fmt: str = "jsonl", order: list[str] | None = None
) -> Run:
    pl = lazy.polars

    if "data" in df.columns and isinstance(df.schema["data"], pl.Struct):
        data = df["data"].struct.unnest()
        step = df["step"] if "step" in df.columns else None
        df = data if step is None or "step" in data.columns else data.with_columns(step)
        fmt = "verl-jsonl"
    df = _flatten_structs(df)
    if order:
        have = set(df.columns)
        known = [k for k in dict.fromkeys(order) if k in have]
        placed = set(known)
        cols = known + [c for c in df.columns if c not in placed]
        df = df[cols] if cols != df.columns else df  # by name: cheaper than 150 select exprs
    key = step_key(df.columns)
    by_epoch = False
    if key is None:
        warnings = [*warnings, f"{source}: no step field; records numbered 1..{df.height}"]
        df = df.with_row_index("step", offset=1)
        by_epoch = has_epoch(df.columns)  # the records count epochs: said in epochs
    elif key != "step":
        df = df.rename({"step": "step_original"}) if "step" in df.columns else df
        df = df.with_columns(pl.col(key).alias("step"))
    return build_run(df, source=source, fmt=fmt, warnings=warnings, by_epoch=by_epoch)


def _flatten_structs(df: Any) -> Any:
    """Nested objects ({"train": {"loss": 1}}) become `train/loss` columns; lists are dropped."""
    pl = lazy.polars

    if not any(isinstance(t, pl.Struct | pl.List | pl.Array) for t in df.schema.values()):
        return df
    while any(isinstance(t, pl.Struct) for t in df.schema.values()):
        cols = []
        for name, dtype in df.schema.items():
            if isinstance(dtype, pl.Struct):
                cols += [
                    pl.col(name).struct.field(f.name).alias(f"{name}/{f.name}")
                    for f in dtype.fields
                ]
            else:
                cols.append(pl.col(name))
        df = df.select(cols)
    return df.select([c for c, t in df.schema.items() if not isinstance(t, pl.List | pl.Array)])


def read_json(path: Path, source: str, text: str) -> Run:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"{source}:{err.lineno}: expected a JSON document ({err.msg} at column {err.colno})"
        ) from None
    if isinstance(doc, dict) and isinstance(doc.get("log_history"), list):
        return _log_history(doc["log_history"], source, doc, "trl-state")
    if isinstance(doc, list) and doc and all(isinstance(r, dict) for r in doc):
        return _log_history(doc, source, None, "trl-log-history")
    if isinstance(doc, dict) and _columnar(doc):  # {"step": [...], "reward": [...]}
        n = len(next(iter(doc.values())))
        rows = [{k: v[i] for k, v in doc.items()} for i in range(n)]
        return _log_history(rows, source, None, "json")
    if isinstance(doc, dict) and ("step" in doc or "data" in doc):
        return _log_history([doc], source, None, "json")
    raise InputError(
        f"{source}:1: expected trainer_state.json (log_history), a list of step records or "
        "one step record; found a JSON document without per-step metrics"
    )


def _log_history(entries: list[Any], source: str, state: dict[str, Any] | None, fmt: str) -> Run:
    pl = lazy.polars

    rows: list[dict[str, Any]] = []
    ending = None
    warnings: list[str] = []
    unnumbered = 0
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        if "train_runtime" in entry:  # the end-of-training summary, not a step
            ending = RunEnding(
                kind="completed", step=_int(entry.get("step")), message="train_runtime logged"
            )
            continue
        rec = _flat_record(entry)
        if fmt != "json":
            rec.update(dict.fromkeys(_present_nulls(entry), math.nan))
        key = step_key(rec)
        step = rec.get(key) if key else None
        if step is None:
            unnumbered += 1
            step = i + 1
        rec["step"] = step
        rows.append(rec)
    if not rows:
        raise InputError(f"{source}: expected log entries with metrics, found none")
    if unnumbered:
        warnings.append(f"{source}: {unnumbered} entries had no step; numbered by position")
    df = pl.from_dicts(rows, infer_schema_length=None)
    has_eval = any(c.startswith("eval_") for c in df.columns)
    hints = hint_map.trl_state_hints(state, has_eval) if state else {}
    if state is None:
        hints.update(_cadence_logging(rows))
    done = state and _int(state.get("global_step")) and _int(state.get("max_steps"))
    if ending is None and done and state and state["global_step"] >= state["max_steps"]:
        ending = RunEnding(
            kind="completed",
            step=int(state["global_step"]),
            message="global_step reached max_steps",
        )
    # every entry numbered by position and each printing an epoch: the log counts epochs
    by_epoch = unnumbered == len(rows) and all(_is_number(r.get("epoch")) for r in rows)
    return build_run(
        df,
        source=source,
        fmt=fmt,
        hints=hints,
        ending=ending,
        warnings=warnings,
        by_epoch=by_epoch,
    )


# what numbers a log entry rather than measures it: a null there is no NaN
_COUNTERS = frozenset({*STEP_KEYS, "epoch", "total_flos", "num_input_tokens_seen"})


def _present_nulls(entry: dict[str, Any]) -> list[str]:
    """The metric keys a log_history entry holds as null. json.dumps writes NaN as a bare
    `NaN` token, but a value that passed through None (TRL averages a metric whose values were
    all NaN to None) is written null: the metric was logged, its value is no number, so it is
    NaN evidence. A metric the entry does not hold is absent, never NaN (TRL logs `kl` only
    when beta > 0; with num_iterations > 1 some entries carry only the optimisation keys)."""
    data = entry.get("data")
    fields = data if isinstance(data, dict) else flatten_keys(entry)
    return [k for k, v in fields.items() if v is None and k not in _COUNTERS]


def _columnar(doc: dict[str, Any]) -> bool:
    lists = [v for v in doc.values() if isinstance(v, list)]
    return bool(lists) and len(lists) == len(doc) and len({len(v) for v in lists}) == 1


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _int(v: Any) -> int | None:
    if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
        return int(v)
    return None


def _cadence_logging(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """logging_steps from the step gap of the train entries (TRL entries average over it)."""
    steps = sorted({int(r["step"]) for r in rows if _int(r.get("step")) is not None})
    if len(steps) < 2:
        return {}
    gaps = [b - a for a, b in itertools.pairwise(steps)]
    gap = min(gaps)
    return {"logging_steps": gap} if gap > 0 and gaps.count(gap) >= len(gaps) // 2 else {}
