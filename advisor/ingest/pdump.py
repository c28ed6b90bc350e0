"""A config dump printed by `pprint` (verl's `pprint(OmegaConf.to_container(config))`) read by
its layout when it does not parse as a whole: lines lost in a copy (replaced by other text or
blanks) or a dump cut short leave the braces unbalanced, yet every line that survives still says
where it belongs.

pprint writes one key a line, sorted, each at the column of its dict's first key (the character
after that dict's `{`), a nested dict opening on its key's line (`'actor': {'clip_ratio': 0.2,`)
and closing after its last value (`'strategy': 'fsdp'},`). So a line's key belongs to the open
dict whose keys sit at its column; a dict whose closing line was lost ends where a line sits
left of its column. A key whose line was lost is absent, a value that does not parse is left
out, and a line at a column no open dict has (the keys of a dict whose opening line was lost)
is dropped: nothing is filled in. Where the lost lines (a gap the reader marks) closed a dict
and opened its next sibling whose key is exactly as long, the sibling's keys sit at the closed
dict's column: a key that sorts before that dict's last one shows it (the lines are dropped);
one that sorts after cannot be told from a key of that dict.
"""

from __future__ import annotations

import ast
from typing import Any

_CLOSE = {"}": "{", "]": "[", ")": "("}


def _scan(text: str, start: int) -> tuple[int, int]:
    """From `start`, the end of one value (at a top-level `,`, a closing bracket that closes
    nothing opened here, or the text's end) and the depth still open there."""
    depth, i, quote = 0, start, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            if depth == 0:
                return i, 0
            depth -= 1
        elif ch == "," and depth == 0:
            return i, 0
        i += 1
    return i, depth


def _key(text: str, i: int) -> tuple[str, int] | None:
    """A quoted key at `i` followed by `: `: (the key, the index after `: `)."""
    if i >= len(text) or text[i] not in "'\"":
        return None
    end, _ = _scan(text, i)
    head = text[i:end]
    colon = head.find(": ", 0)
    while colon > 0:
        try:
            key = ast.literal_eval(head[:colon])
        except (ValueError, SyntaxError):
            colon = head.find(": ", colon + 1)
            continue
        return (key, i + colon + 2) if isinstance(key, str) else None
    return None


def read_layout(lines: list[str | None]) -> tuple[dict[str, Any], int]:
    """The dict a pprint dump's `lines` say (the first line starting with its `{`), read line by
    line by the columns of its keys; and how many lines could not be placed or parsed. None
    in `lines` marks a gap: other text stood there (a value wrapped across it is not read)."""
    if not lines or lines[0] is None or not lines[0].startswith("{"):
        return {}, len(lines)
    layout = _Layout()
    for n, line in enumerate(lines):
        layout.feed(line, first=n == 0)
    return layout.root, layout.dropped + (layout.carry is not None)


class _Layout:
    def __init__(self) -> None:
        self.root: dict[str, Any] = {}
        # (the column of its keys, the dict; None for a dict whose opening line was lost)
        self.frames: list[tuple[int, dict[str, Any] | None]] = [(1, self.root)]
        self.dropped = 0
        self.carry: tuple[dict[str, Any], str, str] | None = None  # a value wrapped over lines
        self.gap = False  # lines were lost just before this one

    def feed(self, line: str | None, first: bool = False) -> None:
        """One line of the dump; None where lines of it are known to be missing (a gap)."""
        if line is None:
            self.gap = True
            if self.carry is not None:  # a wrapped value that lost lines: not read
                self.carry = None
                self.dropped += 1
            return
        if self.carry is not None:  # a list or string pprint wrapped: joined, then read on
            into, key, text = self.carry
            self.carry = None
            self._value(text + "\n" + line, 0, into, key)
            return
        col = 1 if first else len(line) - len(line.lstrip(" "))
        while len(self.frames) > 1 and self.frames[-1][0] > col:
            self.frames.pop()  # a dict whose closing line was lost ends left of its keys
        if self.gap and not first and self._closed_in_gap(line, col):
            # pprint sorts keys: a key after a gap that sorts before the last one of the dict
            # at its column is no key of it; that dict closed in the gap, and this line is
            # in a dict whose opening line was lost with it
            self.frames[-1] = (col, None)
        self.gap = False
        if self.frames[-1][0] != col or self.frames[-1][1] is None:
            self.dropped += bool(line.strip())  # keys of a dict whose opening line was lost
            return
        self._keys(line, col)

    def _closed_in_gap(self, line: str, col: int) -> bool:
        into = self.frames[-1][1]
        hit = _key(line, col)
        if self.frames[-1][0] != col or not into or hit is None:
            return False
        keys = list(into)
        return keys == sorted(keys) and hit[0] < keys[-1]

    def _keys(self, line: str, at: int) -> None:
        """The keys from `at` on: a nested dict opening on this line, then a value."""
        while True:
            hit = _key(line, at)
            if hit is None:
                self.dropped += 1
                return
            key, at = hit
            into = self.frames[-1][1]
            if into is None:
                return
            if line.startswith("{", at) and _key(line, at + 1) is not None:
                child: dict[str, Any] = {}
                into[key] = child
                self.frames.append((at + 1, child))
                at += 1
                continue
            self._value(line, at, into, key)
            return

    def _value(self, line: str, at: int, into: dict[str, Any], key: str) -> None:
        """One value from `at`, the dicts its line closes after it, and a next key on the line
        (a dict pprint kept on one line)."""
        end, _ = _scan(line, at)
        if end == len(line):
            # pprint ends every entry's line with `,` or the braces it closes: a value that
            # opens a bracket it does not close, or a string pprint split into adjacent
            # literals, goes on to the next line
            self.carry = (into, key, line[at:])
            return
        try:  # in parentheses: adjacent string literals over several lines are one string
            into[key] = ast.literal_eval("(" + line[at:end].strip() + ")")
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            self.dropped += 1
        i = end
        while i < len(line) and line[i] == "}":
            if len(self.frames) > 1:
                self.frames.pop()
            i += 1
        if line.startswith(",", i) and line[i + 1 : i + 2] == " ":
            nxt = len(line) - len(line[i + 1 :].lstrip(" "))
            if _key(line, nxt) is not None:
                self._keys(line, nxt)
