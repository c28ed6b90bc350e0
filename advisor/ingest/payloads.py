"""verl step payloads (`k:v - k:v ...`) -> one Float64 column per key, one row per payload.

The console reader hands over the payloads of its step lines in file order. They are split at
" - " once, in polars. verl prints the same keys in the same order on almost every step, so a
row is first read as a *block* row: the keys of the first row of its pair count (`_plan`) are
what every row of that count is checked against, piece by piece, in one vectorised pass over
all the candidates (`_check_and_cast`: starts_with the expected `key:`, the rest cast to
Float64). The rows that pass are laid out with numpy; a row that fails (other keys, odd
pieces) is tried again in the next round against the keys of the first failed row, and what is
left after `_ROUNDS` goes through the general (row, key, value) scatter (`_general_part`).
Every row read either way gives the same values; the columns come in the order the keys first
appear in the file (row, then place in the row).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from advisor.types import InputError

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

_ROUNDS = 3  # block rounds; rows still unread after them go through the scatter
_LENGTHS = 16  # pair counts tried per round (each costs one Python split of one payload)
# value wrappers verl/torch print around a number: np.float64(0.5), tensor(0.5, device=...)
_WRAPPER = r"^(?:np\.\w+|tensor|torch\.tensor)\(\s*([^,)]*).*$"


@dataclass
class _Part:
    """Rows read one way: values[j, i] is key names[j] of row rows[i] (nan where absent);
    column-major, as the frame is made of columns."""

    rows: np.ndarray
    names: list[str]
    values: np.ndarray  # (len(names), len(rows)) float64
    present: np.ndarray  # same shape: the key was there and its value a number
    first: dict[str, tuple[int, int]]  # key -> (row, place in the row) where it first appears


def payloads_to_frame(
    texts: list[str], offsets: list[int], steps: list[int], source: str
) -> pl.DataFrame:
    """Payload i is texts[i][offsets[i]:]; its step is steps[i]. A `step` column, then one
    Float64 column per key; a key a row does not have, or whose value is no number, is null."""
    import polars as pl

    if any(offsets):
        texts = [t[o:] if o else t for t, o in zip(texts, offsets, strict=True)]
    bounds = _bounds(texts)
    if len(bounds) == 1:
        parts = _read_rows(texts, 0)
    else:  # a big log in consecutive parts, each read whole on its own thread
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(bounds) - 1) as pool:
            later = [pool.submit(_read_rows, texts[a:b], a) for a, b in bounds[1:]]
            a, b = bounds[0]
            parts = _read_rows(texts[a:b], a)
            for job in later:
                parts += job.result()
    wide = _assemble(parts, len(texts))
    if not wide.width:
        raise InputError(f"{source}: step lines hold no 'key:value' metric")
    return wide.insert_column(0, pl.Series("step", steps, dtype=pl.Int64))


_PART_CHARS = 4 << 20  # a log this big or more is read in parts side by side


def _bounds(payloads: list[str]) -> list[tuple[int, int]]:
    """(first row, end row) of consecutive parts of about equal text, one per polars thread
    (eager polars operations run on the calling thread and let go of the GIL)."""
    import numpy as np
    import polars as pl

    sizes = np.cumsum(np.fromiter(map(len, payloads), dtype=np.int64, count=len(payloads)))
    total = int(sizes[-1]) if len(sizes) else 0
    count = min(pl.thread_pool_size(), total // _PART_CHARS, len(payloads))
    if count <= 1:
        return [(0, len(payloads))]
    cuts = [int(np.searchsorted(sizes, total * i // count)) + 1 for i in range(1, count)]
    return list(pairwise(sorted({0, *(min(c, len(payloads)) for c in cuts), len(payloads)})))


def _read_rows(payloads: list[str], first_row: int) -> list[_Part]:
    """The parts of these payloads, rows numbered from `first_row`."""
    import numpy as np

    n = len(payloads)
    kv, lens = _split(payloads)
    starts = np.zeros(n + 1, dtype=np.int64)  # piece i of row r is kv[starts[r] + i]
    np.cumsum(lens, out=starts[1:])
    parts, rest = _read_blocks(kv, lens, starts, payloads.__getitem__)
    if len(rest):
        parts.append(_general_part(kv, lens, starts, rest))
    if first_row:
        for part in parts:
            part.rows = part.rows + first_row
            part.first = {k: (r + first_row, j) for k, (r, j) in part.first.items()}
    return parts


def _split(payloads: list[str]) -> tuple[pl.Series, np.ndarray]:
    """Every payload's pieces (split at " - ", one after the other) and how many each has
    (at least one: "" is one piece). Eager Series operations run on one thread: polars'
    parallel plans cost more CPU than they save time on a busy machine."""
    import numpy as np
    import polars as pl

    pieces = pl.Series(payloads, dtype=pl.String).str.split(" - ")
    return pieces.explode(), pieces.list.len().to_numpy().astype(np.int64)


def _read_blocks(
    kv: pl.Series, lens: np.ndarray, starts: np.ndarray, text: Callable[[int], str]
) -> tuple[list[_Part], np.ndarray]:
    """The block rows (see the module doc), and the row ids left for the general scatter."""
    import numpy as np

    rest = np.arange(len(lens))
    parts: list[_Part] = []
    for _ in range(_ROUNDS):
        refs = _plan(rest, lens, text)
        if not refs:
            break
        cand = rest[np.isin(lens[rest], list(refs))]
        found, accepted = _check_and_cast(kv, lens, starts, cand, refs)
        if not accepted.any():
            break
        parts += found
        rest = rest[~np.isin(rest, cand[accepted])]
    return parts, rest


def _plan(rows: np.ndarray, lens: np.ndarray, text: Callable[[int], str]) -> dict[int, list[str]]:
    """{pair count: the keys of the first of `rows` with that count}, for the commonest counts
    whose first row has clean keys (unique, non-empty, no surrounding spaces)."""
    import numpy as np

    if not len(rows):
        return {}
    counts = np.bincount(lens[rows])
    order = np.argsort(-counts, kind="stable")[:_LENGTHS]
    refs: dict[int, list[str]] = {}
    for length in order[counts[order] > 0].tolist():
        r0 = int(rows[np.argmax(lens[rows] == length)])
        keys = _clean_keys(text(r0))
        if keys is not None and len(keys) == length:
            refs[length] = keys
    return refs


def _clean_keys(payload: str) -> list[str] | None:
    keys = []
    for piece in payload.split(" - "):
        key, sep, _ = piece.partition(":")
        if not sep or not key or key != key.strip():
            return None
        keys.append(key)
    return keys if len(set(keys)) == len(keys) else None


def _check_and_cast(
    kv: pl.Series,
    lens: np.ndarray,
    starts: np.ndarray,
    cand: np.ndarray,
    refs: dict[int, list[str]],
) -> tuple[list[_Part], np.ndarray]:
    """Each candidate row's pieces checked against `key:` of its pair count's keys, the rest of
    each piece cast, in one pass. The parts read, and which candidates were read."""
    import numpy as np
    import polars as pl

    table, offset = [], np.zeros(int(lens.max()) + 1, dtype=np.int64)
    for length, keys in refs.items():
        offset[length] = len(table)
        table += [k + ":" for k in keys]
    cl = lens[cand]
    cstart = np.zeros(len(cand), dtype=np.int64)
    np.cumsum(cl[:-1], out=cstart[1:])
    total = int(cstart[-1] + cl[-1])
    # piece i of candidate c: its key is table[offset[cl[c]] + i], its text kv[starts[c] + i]
    step = np.arange(total, dtype=np.int64)
    prefix = pl.Series(table, dtype=pl.String).gather(np.repeat(offset[cl] - cstart, cl) + step)
    # every row a candidate (each has a piece): no gather
    sub = kv if total == len(kv) else kv.gather(np.repeat(starts[cand] - cstart, cl) + step)
    ok, values, present = _starts_and_values(sub, prefix)
    row_ok = np.logical_and.reduceat(ok, cstart)
    bad = ~present & np.repeat(row_ok, cl)
    if bad.any():  # not a number as it is: cleaned and cast again (np.float64(...) ...)
        idx = np.flatnonzero(bad)
        fixed = _clean_cast(sub.gather(idx).str.strip_prefix(prefix.gather(idx)))
        values[idx], present[idx] = fixed.to_numpy(), fixed.is_not_null().to_numpy()
    parts = []
    for length, keys in refs.items():
        sel = np.flatnonzero(row_ok & (cl == length))
        if not len(sel):
            continue
        at = np.arange(length)[:, None] + cstart[sel]  # (key, row)
        rows = cand[sel]
        first = {k: (int(rows[0]), j) for j, k in enumerate(keys)}
        parts.append(_Part(rows, keys, values[at], present[at], first))
    return parts, row_ok


def _starts_and_values(sub: pl.Series, prefix: pl.Series) -> tuple[np.ndarray, ...]:
    """Whether each piece starts with its prefix (never empty: it ends in ':'), and what
    follows it as a number (nan and not present where no number)."""
    import numpy as np
    import polars as pl

    raw = sub.str.strip_prefix(prefix)
    ok = (raw.str.len_bytes() < sub.str.len_bytes()).to_numpy()
    value = raw.cast(pl.Float64, strict=False)
    if value.null_count():
        return ok, value.to_numpy(), value.is_not_null().to_numpy()
    return ok, np.array(value.to_numpy()), np.ones(len(value), dtype=bool)


def _general_part(
    kv: pl.Series, lens: np.ndarray, starts: np.ndarray, row_ids: np.ndarray
) -> _Part:
    """Any rows: every piece `key:value` (key stripped; a piece without a colon or with an
    empty key is no pair), scattered into a matrix; a key repeated in a row keeps its last value."""
    import numpy as np
    import polars as pl

    cl = lens[row_ids]
    cstart = np.zeros(len(row_ids), dtype=np.int64)
    np.cumsum(cl[:-1], out=cstart[1:])
    pos = np.arange(int(cl.sum()), dtype=np.int64) - np.repeat(cstart, cl)
    pairs = (
        pl.DataFrame(
            {
                "row": np.repeat(np.arange(len(row_ids), dtype=np.int64), cl),
                "kv": kv.gather(np.repeat(starts[row_ids], cl) + pos),
            }
        )
        .with_columns(pl.col("kv").str.splitn(":", 2))  # the key, then all the rest
        .unnest("kv")
    )
    key, raw, local = pairs["field_0"], pairs["field_1"], pairs["row"]
    key = key.str.strip_chars()
    keep = raw.is_not_null() & (key.str.len_chars() > 0)  # no colon: a cut pair, no metric
    if not keep.all():
        key, raw, local = key.filter(keep), raw.filter(keep), local.filter(keep)
    m = len(row_ids)
    if key.len() == 0:
        return _Part(row_ids, [], np.empty((0, m)), np.empty((0, m), dtype=bool), {})
    value = raw.cast(pl.Float64, strict=False)
    bad = value.is_null()
    if bad.any():
        idx = np.flatnonzero(bad.to_numpy())
        value = value.scatter(idx, _clean_cast(raw.gather(idx)))
    names = key.unique(maintain_order=True)
    rows = local.to_numpy()
    first_at = key.arg_unique().to_numpy()  # in the order of `names`
    row_start = np.searchsorted(rows, rows[first_at])
    first = {
        name: (int(row_ids[rows[at]]), int(at - start))
        for name, at, start in zip(names.to_list(), first_at, row_start, strict=True)
    }
    k = names.len()
    codes = key.cast(pl.Enum(names)).to_physical().to_numpy().astype(np.int64)
    flat = rows * k + codes
    values = np.full(m * k, np.nan)
    present = np.zeros(m * k, dtype=bool)
    values[flat] = value.to_numpy()  # null (no number) -> nan; `present` keeps them apart
    present[flat] = value.is_not_null().to_numpy()
    return _Part(row_ids, names.to_list(), values.reshape(m, k).T, present.reshape(m, k).T, first)


def _clean_cast(raw: pl.Series) -> pl.Series:
    """Values that are no number as they are: stripped, unwrapped from np.float64(...) /
    tensor(...), cast again (null if still no number)."""
    import polars as pl

    return (
        raw.str.strip_chars()
        .str.replace(_WRAPPER, "$1")
        .str.strip_chars()
        .cast(pl.Float64, strict=False)
    )


def _assemble(parts: list[_Part], n: int) -> pl.DataFrame:
    """The parts as one frame of n rows in file order, columns in the order their keys first
    appear; null where a row has no such key or its value is no number."""
    import numpy as np
    import polars as pl

    first: dict[str, tuple[int, int]] = {}
    for part in parts:
        for key, place in part.first.items():
            first[key] = min(first.get(key, place), place)
    names = sorted(first, key=first.__getitem__)
    if len(parts) == 1 and len(parts[0].rows) == n and parts[0].names == names:
        values, present = parts[0].values, parts[0].present  # the common case: no copy
    else:
        col = {key: i for i, key in enumerate(names)}
        values = np.full((len(names), n), np.nan)
        present = np.zeros((len(names), n), dtype=bool)
        for part in parts:
            if part.names:
                at = (np.array([col[k] for k in part.names])[:, None], part.rows)
                values[at], present[at] = part.values, part.present
    if not names:
        return pl.DataFrame()
    wide = pl.DataFrame([pl.Series(name, values[i]) for i, name in enumerate(names)])
    holes = np.flatnonzero(~present.all(axis=1)).tolist()
    if holes:  # nan where the key was missing or no number -> null; a printed nan stays
        wide = wide.with_columns(
            pl.when(pl.Series(present[i])).then(pl.col(names[i])).alias(names[i]) for i in holes
        )
    return wide
