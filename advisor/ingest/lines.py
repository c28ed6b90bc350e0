"""A text file as a stream of decoded lines: chunks of whole lines (a regular file is mapped,
anything else read), bad UTF-8 and NUL bytes replaced and the first line of each noted. The
console reader, the JSONL reader and the notebook table read their text through it.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from itertools import repeat
from pathlib import Path
from typing import Any, Protocol

from advisor import lazy

_CHUNK = 8 << 20  # text decoded at a time (a mapped file is cut without copying)


class Noting(Protocol):
    """Where a stream notes the first line that had bytes replaced (the reader's state)."""

    bad_bytes_line: int | None
    nul_line: int | None


def iter_chunks(path: Path, state: Noting | None = None) -> Iterator[tuple[int, str, bool]]:
    """(number of lines before it, decoded text, is the last line without newline): chunks of
    complete lines ending in a newline, then possibly the cut last line alone. Streamed; bad
    UTF-8 is replaced. A regular file is mapped and decoded from the mapping (no copy of the
    bytes: a fresh 12 MB buffer costs as much as the decoding); anything else is read."""
    chunks = _chunks(path, state)
    for before, text, last in chunks:
        # a UTF-8 byte order mark (Windows editors) is no part of the first line
        yield before, text[1:] if text.startswith("\ufeff") else text, last
        break
    yield from chunks


def _chunks(path: Path, state: Noting | None) -> Iterator[tuple[int, str, bool]]:
    with path.open("rb") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # empty, a pipe, a special file
            yield from _read_chunks(fh, state)
            return
        with mm, memoryview(mm) as view:
            yield from _mapped_chunks(mm, view, state)


def _mapped_chunks(mm: Any, view: Any, state: Noting | None) -> Iterator[tuple[int, str, bool]]:
    size, start, lineno = len(mm), 0, 0
    while start < size:
        end = mm.rfind(b"\n", start, min(start + _CHUNK, size)) + 1
        if end <= 0:  # no newline in the chunk: a line longer than the chunk, or the cut end
            end = mm.find(b"\n", start) + 1
        last = end <= 0
        part = view[start:] if last else view[start:end]
        try:
            text = _decode(part, lineno, state)
            # lines counted only when more follows (a pass over the chunk)
            count = 0 if last or end >= size else _newlines(part)
        finally:
            part.release()  # the mapping cannot close while a view of it lives
        yield lineno, text, last
        if last:
            return
        lineno += count
        start = end


def _read_chunks(fh: Any, state: Noting | None) -> Iterator[tuple[int, str, bool]]:
    lineno = 0
    carry = b""
    done = b""  # the last chunk yielded: its lines are counted only if more follows
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            break
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        if cut + 1 < len(data):
            carry, data = data[cut + 1 :], data[: cut + 1]
        else:
            carry = b""
        lineno += _newlines(done)
        done = data
        yield lineno, _decode(data, lineno, state), False
    if carry:
        lineno += _newlines(done)
        yield lineno, _decode(carry, lineno, state), True


def _newlines(data: Any) -> int:
    np = lazy.numpy

    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 10)) if data else 0


def iter_lines(path: Path, state: Noting | None = None) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, is_last_without_newline), streamed in chunks; bad UTF-8 is replaced."""
    for before, text, last in iter_chunks(path, state):
        if last:
            yield before + 1, text, True
            continue
        lines = text.split("\n")
        lines.pop()  # the empty piece after the last newline
        yield from zip(range(before + 1, before + 1 + len(lines)), lines, repeat(False))


def _decode(data: Any, lineno: int, state: Noting | None) -> str:
    """bytes or a memoryview -> str, bad UTF-8 and NUL bytes replaced (U+FFFD; the first line
    of each noted): a stray NUL must not end a line's text nor split a key."""
    try:
        text = str(data, "utf-8")
    except UnicodeDecodeError as err:
        if state is not None and state.bad_bytes_line is None:
            state.bad_bytes_line = lineno + bytes(data[: err.start]).count(b"\n") + 1
        text = str(data, "utf-8", errors="replace")
    at = text.find("\x00")
    if at >= 0:
        if state is not None and state.nul_line is None:
            state.nul_line = lineno + text.count("\n", 0, at) + 1
        text = text.replace("\x00", "\ufffd")
    return text
