"""verl step payloads (`k:v - k:v ...`) -> one Float64 column per key, one row per payload.

The console reader hands over the payloads of its step lines in file order. verl prints the
same keys in the same order on almost every step, so a row is first read as a *block* row: the
keys of the first row of its pair count (`_plan`) are what every row of that count is checked
against, piece by piece, in one vectorised polars pass over all the candidates. The first round
splits the payloads at ":" (`_colon_round`: a one-character split is the cheaper one; a value
holding a colon sends its row on), the next ones at " - " (`_check_and_cast`: each piece loses
its expected `key:` prefix, the rest is cast to Float64; a row whose pieces lost all their
prefixes passes). A row that fails (other keys, odd pieces) is tried again in the next round
against the keys of the first failed row; what is left after `_ROUNDS` goes through the general
(row, key, value) scatter (`_general_part`). Every row read either way gives the same values
(tests/ingest/test_console_payloads.py checks both against a plain reading). The blocks are laid
out in one (row, key) array (`_assemble`), the columns in the order the keys first appear in the
file (row, then place in the row). A big log is read as consecutive parts on threads
(`_parts`), whose frames are put end to end.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from advisor import lazy
from advisor.types import InputError

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

_ROUNDS = 3  # block rounds; rows still unread after them go through the scatter
_LENGTHS = 16  # pair counts tried per round (each costs one Python split of one payload)
_PART_CHARS = 1 << 20  # of payload text per part read on its own thread (see `_parts`)
_PARTS: int | None = None  # at most this many parts; None: one per polars thread
# value wrappers verl/torch print around a number: np.float64(0.5), tensor(0.5, device=...)
WRAPPED_VALUE = r"^(?:np\.\w+|tensor|torch\.tensor)\(\s*([^,)]*)"  # group 1: the number
_WRAPPER = WRAPPED_VALUE + ".*$"  # for str.replace: the whole value becomes the number


@dataclass
class _Block:
    """Rows read one way: key names[j] of row rows[i] is values[at[i] + j * stride] (nan, and
    not present, where the row lacks the key or its value is no number; present None: all
    are numbers). The values stay where they were read until `_assemble` lays them out."""

    rows: np.ndarray
    names: list[str]
    values: np.ndarray
    present: np.ndarray | None
    at: np.ndarray
    stride: int
    first: dict[str, tuple[int, int]]  # key -> (row, place in the row) where it first appears

    def grid(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The values as (row, key) arrays: what they are, whether each is a number."""
        np = lazy.numpy

        idx = self.at[:, None] + np.arange(len(self.names)) * self.stride
        return self.values[idx], None if self.present is None else self.present[idx]

    def renumbered(self, ids: np.ndarray) -> _Block:
        """The same block for rows numbered ids[row]."""
        first = {k: (int(ids[row]), j) for k, (row, j) in self.first.items()}
        return replace(self, rows=ids[self.rows], first=first)


def payloads_to_frame(
    texts: list[str], offsets: list[int], steps: list[int], source: str, check: bool = True
) -> pl.DataFrame:
    """Payload i is texts[i][offsets[i]:]; its step is steps[i]. A `step` column, then one
    Float64 column per key; a key a row does not have, or whose value is no number, is null.
    `check`: an InputError when no payload holds a metric (off for one part of a log)."""
    pl = lazy.polars

    if any(offsets):
        texts = [t[o:] if o else t for t, o in zip(texts, offsets, strict=True)]
    bounds = _parts(texts)
    if len(bounds) == 1:
        wide = _read_part(texts, steps)
    else:
        # eager polars operations let go of the GIL: the parts are read side by side. Their
        # frames line up by name: a key new in a later part first appears after all the keys
        # of the parts before it, so the columns keep the order of the file.
        with ThreadPoolExecutor(len(bounds) - 1) as pool:
            later = [pool.submit(_read_part, texts[a:b], steps[a:b]) for a, b in bounds[1:]]
            first = _read_part(texts[: bounds[0][1]], steps[: bounds[0][1]])
            wide = pl.concat([first, *(job.result() for job in later)], how="diagonal")
    if check and wide.width == 1:
        raise InputError(f"{source}: step lines hold no 'key:value' metric")
    return wide


def _parts(texts: list[str]) -> list[tuple[int, int]]:
    """(start, end) of consecutive runs of rows, about alike in text: one per polars thread
    (`_PARTS`), each of `_PART_CHARS` or more; a small log is one part."""
    np = lazy.numpy
    pl = lazy.polars

    sizes = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
    total = int(sizes[-1]) if len(texts) else 0
    count = min(_PARTS or pl.thread_pool_size(), total // _PART_CHARS, len(texts))
    if count <= 1:
        return [(0, len(texts))]
    cuts = np.searchsorted(sizes, [total * i // count for i in range(1, count)]) + 1
    edges = sorted({0, *cuts.tolist(), len(texts)})
    return list(pairwise(edges))


def _read_part(texts: list[str], steps: list[int]) -> pl.DataFrame:
    """The frame of one run of rows: `step`, then the columns of its keys."""
    np = lazy.numpy
    pl = lazy.polars

    series = pl.Series(texts, dtype=pl.String)
    blocks: list[_Block] = []
    rest = np.arange(len(texts))
    if _ROUNDS and _colons_worth(texts):
        blocks, rest = _colon_round(series, texts)
    if len(rest) == len(texts):
        blocks += _dash_rounds(series, texts.__getitem__)
    elif len(rest):
        found = _dash_rounds(series.gather(rest), lambda i: texts[rest[i]])
        blocks += [b.renumbered(rest) for b in found]
    return _assemble(blocks, pl.Series("step", steps, dtype=pl.Int64))


def _dash_rounds(series: pl.Series, text: Callable[[int], str]) -> list[_Block]:
    """The payloads split at " - ": block rounds, then the general scatter for the rest."""
    np = lazy.numpy

    kv, lens, size = _split(series)
    blocks, rest = _read_blocks(kv, lens, size, text)
    if len(rest):
        starts = np.zeros(len(lens) + 1, dtype=np.int64)  # piece i of row r: kv[starts[r] + i]
        np.cumsum(lens, out=starts[1:])
        blocks.append(_general_part(kv, lens, starts, rest))
    return blocks


def _colons_worth(texts: list[str]) -> bool:
    """Whether some of the first, middle and last payloads have a colon per pair only (else
    the colon round would find no block row: values such as tensor(..., device='cuda:0'))."""
    for text in {texts[0], texts[len(texts) // 2], texts[-1]} if texts else ():
        keys = _clean_keys(text)
        if keys is not None and text.count(":") == len(keys):
            return True
    return False


def _colon_round(series: pl.Series, texts: list[str]) -> tuple[list[_Block], np.ndarray]:
    """The first block round, on the payloads split at ":" (a single character: found several
    times faster than " - "). A block row of keys k1..kL splits into k1, v1 + " - " + k2, ...,
    v(L-1) + " - " + kL, vL: each piece loses that expected suffix and the rest is its value
    (`_check_colons`). The blocks, and the rows left for the " - " rounds."""
    np = lazy.numpy

    pieces = series.str.split(":")
    clens = pieces.list.len().to_numpy().astype(np.int64)
    rows = np.arange(len(texts))
    refs = _plan(rows, clens - 1, texts.__getitem__)  # a block row has a colon per pair
    if not refs:
        return [], rows
    cand = rows[np.isin(clens - 1, list(refs))]
    size = series.str.len_bytes().to_numpy()
    blocks, accepted = _check_colons(pieces.explode(), clens, size, cand, refs)
    return blocks, np.setdiff1d(rows, cand[accepted], assume_unique=True)


def _check_colons(
    ckv: pl.Series,
    clens: np.ndarray,
    size: np.ndarray,
    cand: np.ndarray,
    refs: dict[int, list[str]],
) -> tuple[list[_Block], np.ndarray]:
    """`_check_and_cast` for pieces split at ":". A row passes if every piece lost its
    suffix, the first piece was the first key and nothing else, and no value that is not a
    number holds " - " or ends in " -" (there the " - " split cuts elsewhere; a number never
    does): then its " - " pieces are exactly `key:value` with the block's keys."""
    np = lazy.numpy

    # a row of L pairs: L + 1 pieces, the suffixes k1, " - " + k2, ..., " - " + kL, ""
    table, offset, end_bytes = _table(
        {n + 1: [keys[0], *(" - " + k for k in keys[1:]), ""] for n, keys in refs.items()},
        int(clens.max()),
    )
    cl, cstart, sub = _candidates(ckv, clens, cand)
    raw, value = _strip_and_cast(sub, table, _slots(offset[cl], cl), suffix=True)
    raw_bytes = raw.str.len_bytes().to_numpy()
    # a row's pieces hold its bytes less its colons; each piece loses all its suffix or none
    row_ok = size[cand] - (cl - 1) - np.add.reduceat(raw_bytes, cstart) == end_bytes[cl]
    row_ok &= raw_bytes[cstart] == 0
    values = value.fill_null(float("nan")).to_numpy()  # (3x faster than letting numpy do it)
    present = None
    # the first pieces are keys, not values: a null among the others is no number
    if value.null_count() > value.gather(cstart).null_count():
        present = value.is_not_null().to_numpy()
        present[cstart] = True
        values = _clean_values(raw, values, present, row_ok, cl, cstart, dashes=True)
    blocks = _blocks(refs, row_ok, cand, cl - 1, cstart + 1, values, present)
    return blocks, row_ok


def _candidates(
    kv: pl.Series, lens: np.ndarray, cand: np.ndarray
) -> tuple[np.ndarray, np.ndarray, pl.Series]:
    """The candidates' piece counts, where each one's pieces start among theirs, and their
    pieces one after the other (kv holds every row's, lens[r] of row r)."""
    np = lazy.numpy

    cl = lens[cand]
    cstart = np.zeros(len(cand), dtype=np.int64)
    np.cumsum(cl[:-1], out=cstart[1:])
    total = int(cstart[-1] + cl[-1])
    if total == len(kv):
        return cl, cstart, kv  # every row a candidate (each has a piece): no gather
    starts = np.zeros(len(lens), dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    return cl, cstart, kv.gather(np.repeat(starts[cand] - cstart, cl) + np.arange(total))


def _table(ends: dict[int, list[str]], top: int) -> tuple[pl.Series, np.ndarray, np.ndarray]:
    """{piece count: what its pieces should start or end with}, one after the other: the
    Series, where each count's run starts in it, and the bytes of each count's run."""
    np = lazy.numpy
    pl = lazy.polars

    names: list[str] = []
    offset = np.zeros(top + 1, dtype=np.int64)
    end_bytes = np.zeros_like(offset)
    for count, run in ends.items():
        offset[count] = len(names)
        end_bytes[count] = sum(len(x.encode()) for x in run)
        names += run
    return pl.Series(names, dtype=pl.String), offset, end_bytes


def _strip_and_cast(
    sub: pl.Series, table: pl.Series, slots: np.ndarray, suffix: bool
) -> tuple[pl.Series, pl.Series]:
    """Each piece without the start (or end) table[slots[i]] it should have, if it has it,
    and that rest as a number (null where none)."""
    pl = lazy.polars

    ends = table.gather(slots)
    raw = sub.str.strip_suffix(ends) if suffix else sub.str.strip_prefix(ends)
    return raw, raw.cast(pl.Float64, strict=False)


def _clean_values(
    raw: pl.Series,
    values: np.ndarray,
    present: np.ndarray,
    row_ok: np.ndarray,
    cl: np.ndarray,
    cstart: np.ndarray,
    dashes: bool,
) -> np.ndarray:
    """The values of the passing rows that are no number as they are, cleaned and cast again
    (np.float64(...) ...): `values` and `present` updated (values may be a new array, the
    one returned). With `dashes`, a row with such a value holding " - " or ending in " -"
    fails (`row_ok`)."""
    np = lazy.numpy

    idx = np.flatnonzero(~present & np.repeat(row_ok, cl))
    if not len(idx):
        return values
    text = raw.gather(idx)
    if dashes:
        odd = (text.str.contains(" - ", literal=True) | text.str.ends_with(" -")).to_numpy()
        row_ok[np.searchsorted(cstart, idx[odd], side="right") - 1] = False
    fixed = _clean_cast(text)
    if not values.flags.writeable:  # polars' own memory
        values = values.copy()
    values[idx], present[idx] = fixed.to_numpy(), fixed.is_not_null().to_numpy()
    return values


def _blocks(
    refs: dict[int, list[str]],
    row_ok: np.ndarray,
    cand: np.ndarray,
    pairs: np.ndarray,
    at: np.ndarray,
    values: np.ndarray,
    present: np.ndarray | None,
) -> list[_Block]:
    """A block per pair count of the candidates that passed (`pairs`: each one's count; its
    values start at `at`)."""
    np = lazy.numpy

    blocks = []
    for length, keys in refs.items():
        read = np.flatnonzero(row_ok & (pairs == length))
        if len(read):
            rows = cand[read]
            first = {k: (int(rows[0]), j) for j, k in enumerate(keys)}
            blocks.append(_Block(rows, keys, values, present, at[read], 1, first))
    return blocks


def _split(texts: pl.Series) -> tuple[pl.Series, np.ndarray, np.ndarray]:
    """Every payload's pieces (split at " - ", one after the other), how many each has (at
    least one: "" is one piece) and their bytes."""
    np = lazy.numpy

    pieces = texts.str.split(" - ")
    lens = pieces.list.len().to_numpy().astype(np.int64)
    # the bytes of a row's pieces: its payload's, less 3 per " - " between them
    return pieces.explode(), lens, texts.str.len_bytes().to_numpy() - 3 * (lens - 1)


def _read_blocks(
    kv: pl.Series, lens: np.ndarray, size: np.ndarray, text: Callable[[int], str]
) -> tuple[list[_Block], np.ndarray]:
    """The block rows, round by round (see the module doc), and the row ids left for the
    general scatter."""
    np = lazy.numpy

    rest = np.arange(len(lens))
    parts: list[_Block] = []
    for _ in range(_ROUNDS):
        refs = _plan(rest, lens, text)
        if not refs:
            break
        cand = rest[np.isin(lens[rest], list(refs))]
        blocks, accepted = _check_and_cast(kv, lens, size, cand, refs)
        if not accepted.any():
            break
        parts += blocks
        rest = rest[~np.isin(rest, cand[accepted])]
    return parts, rest


def _plan(rows: np.ndarray, lens: np.ndarray, text: Callable[[int], str]) -> dict[int, list[str]]:
    """{pair count: the keys of the first of `rows` with that count}, for the commonest counts
    whose first row has clean keys (unique, non-empty, no surrounding spaces)."""
    np = lazy.numpy

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
    size: np.ndarray,
    cand: np.ndarray,
    refs: dict[int, list[str]],
) -> tuple[list[_Block], np.ndarray]:
    """Each candidate row's pieces checked against `key:` of its pair count's keys, the rest of
    each piece cast, in one pass. A block per pair count of the rows that pass, and which
    candidates did."""
    np = lazy.numpy

    table, offset, key_bytes = _table(
        {n: [k + ":" for k in keys] for n, keys in refs.items()}, int(lens.max())
    )
    cl, cstart, sub = _candidates(kv, lens, cand)
    raw, value = _strip_and_cast(sub, table, _slots(offset[cl], cl), suffix=False)
    # a piece loses all its prefix or nothing: a row lost all its prefixes' bytes or not all
    row_ok = size[cand] - np.add.reduceat(raw.str.len_bytes().to_numpy(), cstart) == key_bytes[cl]
    values, present = value.to_numpy(), None
    if value.null_count():
        present = value.is_not_null().to_numpy()
        values = _clean_values(raw, values, present, row_ok, cl, cstart, dashes=False)
    return _blocks(refs, row_ok, cand, cl, cstart, values, present), row_ok


def _slots(offset: np.ndarray, cl: np.ndarray) -> np.ndarray:
    """offset[r] + i for piece i of each row r (row r has cl[r] pieces), one after the other."""
    np = lazy.numpy

    start = np.zeros(len(cl), dtype=np.int32)
    np.cumsum(cl[:-1], out=start[1:])
    slots = np.arange(int(start[-1] + cl[-1]) if len(cl) else 0, dtype=np.int32)
    slots += np.repeat((offset - start).astype(np.int32), cl)
    return slots


def _general_part(
    kv: pl.Series, lens: np.ndarray, starts: np.ndarray, row_ids: np.ndarray
) -> _Block:
    """Any rows: every piece `key:value` (the key stripped; a piece without a colon or with an
    empty key is no pair), a key repeated in a row keeping its last value."""
    np = lazy.numpy
    pl = lazy.polars

    cl = lens[row_ids]
    cstart = np.zeros(len(row_ids), dtype=np.int64)
    np.cumsum(cl[:-1], out=cstart[1:])
    step = np.arange(int(cl.sum()), dtype=np.int64)
    pairs = pl.DataFrame(
        {
            "row": np.repeat(row_ids, cl),
            "kv": kv.gather(np.repeat(starts[row_ids] - cstart, cl) + step),
        }
    ).with_columns(pl.col("kv").str.splitn(":", 2))  # the key, then all the rest
    key = pairs["kv"].struct.field("field_0").str.strip_chars()
    raw = pairs["kv"].struct.field("field_1")
    keep = raw.is_not_null() & (key.str.len_chars() > 0)  # no colon: a cut pair, no metric
    key, raw, rows = key.filter(keep), raw.filter(keep), pairs["row"].filter(keep).to_numpy()
    if key.len() == 0:
        return _Block(row_ids, [], np.empty(0), None, row_ids, 0, {})
    value = raw.cast(pl.Float64, strict=False)
    if value.null_count():
        idx = np.flatnonzero(value.is_null().to_numpy())
        value = value.scatter(idx, _clean_cast(raw.gather(idx)))
    names = key.unique(maintain_order=True)
    first_at = key.arg_unique().to_numpy()  # in the order of `names`
    row_start = np.searchsorted(rows, rows[first_at])
    first = {
        name: (int(rows[at]), int(at - start))
        for name, at, start in zip(names.to_list(), first_at, row_start, strict=True)
    }
    k, m = names.len(), len(row_ids)
    local = np.searchsorted(row_ids, rows)  # general rows numbered 0..m-1
    flat = key.cast(pl.Enum(names)).to_physical().to_numpy().astype(np.int64) * m + local
    values = np.full(k * m, np.nan)
    present = np.zeros(k * m, dtype=bool)
    values[flat] = value.to_numpy()  # a key repeated in a row: the last one wins (in order)
    present[flat] = value.is_not_null().to_numpy()
    return _Block(row_ids, names.to_list(), values, present, np.arange(m), m, first)


def _clean_cast(raw: pl.Series) -> pl.Series:
    """Values that are no number as they are: stripped, unwrapped from np.float64(...) /
    tensor(...), cast again (null if still no number)."""
    pl = lazy.polars

    return (
        raw.str.strip_chars()
        .str.replace(_WRAPPER, "$1")
        .str.strip_chars()
        .cast(pl.Float64, strict=False)
    )


def _assemble(parts: list[_Block], step: pl.Series) -> pl.DataFrame:
    """`step`, then the blocks as columns of its rows (in file order), in the order their keys
    first appear; null where a row has no such key or its value is no number. One (row, key) array
    filled a block at a time, turned once into (key, row) order: the columns are slices of one
    Series. The null mask is made only for the keys some row lacks (a printed nan stays nan)."""
    np = lazy.numpy
    pl = lazy.polars

    n = step.len()
    first: dict[str, tuple[int, int]] = {}
    for part in parts:
        for key in part.names:
            place = part.first[key]
            first[key] = min(first.get(key, place), place)
    names = sorted(first, key=first.__getitem__)
    index = {name: i for i, name in enumerate(names)}
    grid = np.full((n, len(names)), np.nan)
    count = np.zeros(len(names), dtype=np.int64)  # numbers per key: n is a full column
    placed = []
    for part in parts:
        cols = np.fromiter((index[k] for k in part.names), dtype=np.int64, count=len(part.names))
        got, there = part.grid()
        grid[_at(part.rows, cols)] = got
        count[cols] += len(part.rows) if there is None else there.sum(axis=0)
        placed.append((cols, there))
    flat = pl.Series(np.ascontiguousarray(grid.T).reshape(-1))
    columns = [flat.slice(j * n, n).alias(name) for j, name in enumerate(names)]
    short = np.flatnonzero(count < n)
    if len(short):
        present = np.zeros((n, len(names)), dtype=bool)
        for part, (cols, there) in zip(parts, placed, strict=True):
            present[_at(part.rows, cols)] = True if there is None else there
        for j in short.tolist():
            columns[j] = columns[j].scatter(np.flatnonzero(~present[:, j]), None)
    return pl.DataFrame([step, *columns])


def _at(rows: np.ndarray, cols: np.ndarray) -> tuple[Any, Any]:
    """An index for rows x cols of an array (a slice for consecutive cols: no 2-D fancy index)."""
    if len(cols) and cols[-1] - cols[0] == len(cols) - 1 and (cols[1:] > cols[:-1]).all():
        return rows, slice(int(cols[0]), int(cols[-1]) + 1)
    return rows[:, None], cols
