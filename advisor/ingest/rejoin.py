"""Metric records broken over several lines, joined back when the pieces fit one record.

Three ways a log reaches us broken:

- a terminal or a log viewer wraps a long line at its width (a TRL dict over 4 lines, each cut
  mid-key or mid-number);
- an issue tracker or a mail client wraps a pasted line, cutting a verl step line mid-key
  (`actor/ppo_kl:0.0` / `00 - c` / `ritic/score/mean:0.5 - ...`);
- a watchdog that tails a job into its own terminal does the same to every line it shows.

A piece is joined to the line before it with nothing between them (the cut lost no
character). A join is kept only when the result is one whole record: a dict that Python reads
as a literal, or a verl step line whose every ` - ` part is `key:value`. Otherwise the lines
are read as they are.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

Line = tuple[int, str, bool]  # (line number, text, is the last line without newline)

_DICT_START = re.compile(r"""\{\s*(['"])[^'"\n]{1,200}\1\s*:""")
_STEP = re.compile(r"(?:^|[\s(\[])step:\d+ - ")
# the rest of a cut step line: no spaces but around ` - ` separators
_FRAGMENT = re.compile(r"^(?:-\s+)?[\w./@()%+-]*(?::\S*)?(?: - [\w./@()%+-]+(?::\S*)?)*\s*-?$")
_PART = re.compile(r"^[A-Za-z_][\w./@()%+-]*:\S+$")
_NOT_FRAGMENT = ("(", "[", "{", "step:", "Traceback", "File ", "INFO", "WARNING", "ERROR")
MAX_PIECES = 24  # a record broken into more lines than this is not joined
MAX_CHARS = 200_000


def _open_dict(line: str) -> int | None:
    """Where a dict opens on `line` without closing there (its depth stays above 0)."""
    m = _DICT_START.search(line)
    if m is None:
        return None
    start = m.start()
    rest = line[start:]
    return start if rest.count("{") > rest.count("}") else None


def _closes(text: str) -> bool:
    return text.count("{") <= text.count("}")


def _whole_dict(text: str, start: int) -> bool:
    body = text[start:]
    end = body.rfind("}")
    if end < 0:
        return False
    try:
        return isinstance(ast.literal_eval(body[: end + 1]), dict)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False


def _is_fragment(line: str) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith(_NOT_FRAGMENT) and bool(_FRAGMENT.match(text))


def _whole_step_line(text: str) -> bool:
    m = _STEP.search(text)
    if m is None:
        return False
    parts = text[m.end() :].strip().split(" - ")
    return all(_PART.match(p) for p in parts)


def needs_rejoin(sample: str) -> bool:
    """Whether a log's text shows records broken over lines (a cheap look at a sample)."""
    lines = sample.split("\n")
    for i, line in enumerate(lines[:-1]):
        start = _open_dict(line)
        if start is not None:
            joined = line
            for nxt in lines[i + 1 : i + MAX_PIECES]:
                joined += nxt.strip()
                if _closes(joined[start:]):
                    if _whole_dict(joined, start):
                        return True
                    break
        elif _STEP.search(line) and _is_fragment(lines[i + 1]):
            return True
    return False


class Rejoiner:
    """Lines in, lines out: broken records joined (numbered by their first line)."""

    def __init__(self) -> None:
        self.joined = 0  # records joined
        self.first_line: int | None = None  # the first of them

    def _keep(self, first: int) -> None:
        self.joined += 1
        if self.first_line is None:
            self.first_line = first

    def lines(self, source: Iterator[Line]) -> Iterator[Line]:
        pending: list[Line] = []
        kind = ""
        start = 0
        for item in source:
            lineno, line, last = item
            line = line.rstrip("\r")
            if kind == "dict":
                pending.append((lineno, line, last))
                joined = "".join(p[1] for p in pending)
                if _closes(joined[start:]) or last:
                    if _whole_dict(joined, start):
                        self._keep(pending[0][0])
                        yield pending[0][0], joined, last
                    else:
                        yield from pending
                    pending, kind = [], ""
                elif len(pending) >= MAX_PIECES or len(joined) > MAX_CHARS:
                    yield from pending
                    pending, kind = [], ""
                continue
            if kind == "verl":
                if _is_fragment(line) and len(pending) < MAX_PIECES:
                    pending.append((lineno, line, last))
                    if not last:
                        continue
                    yield from self._end_step(pending)
                    pending, kind = [], ""
                    continue
                yield from self._end_step(pending)
                pending, kind = [], ""
            at = _open_dict(line)
            if at is not None and not last:
                pending, kind, start = [(lineno, line, last)], "dict", at
            elif _STEP.search(line) and not last:
                pending, kind = [(lineno, line, last)], "verl"
            else:
                yield lineno, line, last
        if kind == "verl":
            yield from self._end_step(pending)
        else:
            yield from pending

    def _end_step(self, pending: list[Line]) -> Iterator[Line]:
        if len(pending) == 1:
            yield pending[0]
            return
        raw = "".join(p[1] for p in pending)  # a cut that lost nothing
        spaced = " ".join(p[1].strip() for p in pending)  # a wrap that took a space
        for joined in (raw, spaced):
            if _whole_step_line(joined):
                self._keep(pending[0][0])
                yield pending[0][0], joined, pending[-1][2]
                return
        yield from pending
