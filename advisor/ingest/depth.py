"""The JSON depth guard: how deep a JSON text nests, counted over its bytes before a parser
(which recurses once per level) meets it; a file nested past MAX_JSON_DEPTH is refused in one
line. The readers of JSON, JSONL and stores and the job loader call it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from advisor import lazy
from advisor.types import InputError

# JSON nested deeper than this is no metrics file: refused before a parser recurses into it.
MAX_JSON_DEPTH = 100


def json_depth(data: Any, per_line: bool, chunk: int = 1 << 24) -> int:
    """The deepest bracket nesting of a JSON text (per line for JSONL): its structure, never the
    brackets inside its strings (a console log in a JSON string, with the `[` of each colour
    code, is one value deep). One linear pass over the brackets first, strings included (the
    brackets a string opens count as nesting); past MAX_JSON_DEPTH a second pass without the
    strings says (a regex over the text: ~15x the first pass, so only then)."""
    if isinstance(data, bytes) and len(data) <= chunk:
        fast = _depth_of([data], per_line)
    else:
        view = memoryview(data)
        fast = _depth_of((view[at : at + chunk] for at in range(0, len(view), chunk)), per_line)
    if fast <= MAX_JSON_DEPTH:
        return fast
    return _depth_of(map(_without_strings, _line_pieces(data, chunk)), per_line)


# A JSON string: a quote, then escapes or characters other than a quote, a backslash or a line
# end, then a quote. Valid JSON holds no raw line end in a string, so a text cut at line ends
# never cuts a string in two; an unclosed quote is left as it is (its brackets still count).
_JSON_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')


def _without_strings(block: bytes) -> bytes:
    return _JSON_STRING.sub(b'""', block) if b'"' in block else block


def _line_pieces(data: Any, chunk: int) -> Iterator[bytes]:
    """`data` in pieces of at least `chunk` bytes, each through the line end after that."""
    text = data if isinstance(data, bytes) else bytes(data)
    at = 0
    while at < len(text):
        end = text.find(b"\n", at + chunk - 1)
        end = len(text) if end < 0 else end + 1
        yield text[at:end]
        at = end


# every byte but the brackets and the newline: what the depth walk skips
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}\n")))


# Up to this many brackets and newlines a piece is walked in Python (~1 ms for 20k): a job file
# or a few thousand JSONL lines need no numpy, which a job check would import for this alone
# and which a fresh diagnose's read would wait for (the engine's thread is importing it).
WALK_IN_PYTHON = 20_000


def _depth_of(blocks: Iterable[Any], per_line: bool) -> int:
    """json_depth over consecutive pieces of one text. The depth changes only at a bracket
    (and, per line, starts again after a newline), so the walk follows those bytes alone: the
    rest are dropped first (bytes.translate, one pass in C), leaving a few per line."""
    carry, deepest = 0, 0
    for block in blocks:
        kept = (block if isinstance(block, bytes) else bytes(block)).translate(None, _NOT_BRACKETS)
        if not per_line:
            kept = kept.replace(b"\n", b"")
        if not kept:
            continue
        walk = _walk_python if len(kept) <= WALK_IN_PYTHON else _walk_numpy
        top, carry = walk(kept, carry)
        deepest = max(deepest, top)
    return deepest


def _walk_python(kept: bytes, carry: int) -> tuple[int, int]:
    """(deepest, depth at the end) of brackets and newlines, from depth `carry`."""
    depth, deepest = carry, 0
    for ch in kept:
        if ch == 10:
            depth = 0
        elif ch == 91 or ch == 123:  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest, depth


def _walk_numpy(kept: bytes, carry: int) -> tuple[int, int]:
    """_walk_python in whole-array steps."""
    np = lazy.numpy
    b = np.frombuffer(kept, dtype=np.uint8)
    depth = np.cumsum(((b == 91) | (b == 123)).astype(np.int64) - ((b == 93) | (b == 125)))
    depth += carry
    line_end = b == 10
    if line_end.any():
        last = np.maximum.accumulate(np.where(line_end, np.arange(len(b)), -1))
        depth = depth - np.where(last >= 0, depth[np.maximum(last, 0)], 0)
    return int(depth.max()), int(depth[-1])


def _check_depth(p: Path, per_line: bool, chunk: int = 1 << 24) -> None:
    def blocks() -> Iterator[bytes]:  # read, not mapped: a big file is never resident at once
        with p.open("rb") as fh:
            while block := fh.read(chunk):
                yield block

    depth = _depth_of(blocks(), per_line)
    if depth <= MAX_JSON_DEPTH:
        return

    def lines() -> Iterator[bytes]:  # pieces cut at line ends: no string is cut in two
        with p.open("rb") as fh:
            while block := fh.read(chunk):
                yield _without_strings(block + fh.readline())

    depth = _depth_of(lines(), per_line)
    if depth > MAX_JSON_DEPTH:
        raise InputError(_too_deep(p, depth))


def _too_deep(p: Path, depth: int) -> str:
    limit = MAX_JSON_DEPTH
    return f"{p}: JSON nested {depth} levels deep; expected metric records (at most {limit} levels)"
