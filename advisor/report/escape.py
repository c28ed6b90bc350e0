"""The one escaping layer of the Markdown templates (the report, validate, rules).

Every `{{ value }}` a template prints goes through `finalize`: text is escaped as Markdown
prose unless a context filter already made it safe for where it lands (`Md`). The contexts:

- prose (the default): CommonMark's inline markup (emphasis, links, images, HTML, entities)
  and a block marker at its start are escaped, line breaks become spaces, `|` is `&#124;` (so
  prose is safe in a GFM table cell too). A balanced code span is kept as code: the rulebook's
  and the messages' own `name` spans stay code, and what is inside one is inert anyway. A
  code span holding `|` would still split a table cell, so it is shown as escaped text.
- `code`: an inline code span with a backtick fence longer than any run inside.
- `cell`: prose with every backtick escaped (no code span at all), for table cells.
- `fence`: the fence for a fenced block, longer than any backtick run of its body.
- `heading`: prose whose trailing `#` cannot close the heading.
- `url`: a link destination, percent-encoded.
- `md`: text the template itself built safely (a fenced block's body, a pre-escaped piece).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

_BREAKS = re.compile(r"\r\n|\r|\n|\u2028|\u2029|\x0b|\x0c|\x85")
_TICKS = re.compile(r"`+")
_LEAD = re.compile(r"^(\s*)(>|[#+=\-*](?=\s|$)|\d{1,9}(?=[.)](?:\s|$)))")
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f]")


class Md(str):
    """Markdown already safe where the template puts it: printed as it is."""

    __slots__ = ()


_SPECIAL = re.compile(r"[\\*\[\]~_<&|`]")
_ESCAPED = {
    "\\": "\\\\", "*": "\\*", "[": "\\[", "]": "\\]", "~": "\\~",
    "<": "&lt;",  # raw HTML and autolinks open with it; a ">" alone is text
    "&": "&amp;", "|": "&#124;", "`": "\\`",
}  # fmt: skip


def _plain(text: str) -> str:
    """Escape a piece of text that is not inside a code span."""

    def escaped(m: re.Match[str]) -> str:
        ch = m.group()
        if ch != "_":
            return _ESCAPED[ch]
        i = m.start()
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < len(text) else " "
        # intraword underscores are no emphasis (reward_mean stays as written)
        return "_" if before.isalnum() and after.isalnum() else "\\_"

    return _SPECIAL.sub(escaped, text)


def _one_line(value: Any) -> str:
    text = _BREAKS.sub(" ", str(value))
    return _CONTROL.sub("?", text.replace("\t", " "))


def _lead(text: str) -> str:
    """A block marker at the start (`# `, `> `, `- `, `1. `) escaped: the value may begin a
    line or a list item's content."""
    m = _LEAD.match(text)
    if not m:
        return text
    mark = m.group(2)
    if mark.isdigit():  # 1. / 1) : escape the delimiter after the digits
        end = m.end()
        return text[:end] + "\\" + text[end:]
    return text[: m.start(2)] + "\\" + text[m.start(2) :]


def prose(value: Any, spans: bool = True) -> Md:
    """Markdown prose that shows `value` as written (see the module docstring)."""
    if isinstance(value, Md):
        return value
    text = _one_line(value).lstrip(" ")
    out: list[str] = []
    at = 0
    runs = list(_TICKS.finditer(text)) if spans else []
    k = 0
    while k < len(runs):
        opener = runs[k]
        closer = next((r for r in runs[k + 1 :] if len(r.group()) == len(opener.group())), None)
        if closer is None:
            k += 1
            continue  # an unmatched run is escaped with the text around it
        inner = text[opener.end() : closer.start()]
        if "|" in inner:  # would split a table cell: shown as text
            k = runs.index(closer) + 1
            continue
        out.append(_plain(text[at : opener.start()]))
        out.append(text[opener.start() : closer.end()])
        at = closer.end()
        k = runs.index(closer) + 1
    out.append(_plain(text[at:]))
    joined = "".join(out)
    if joined.startswith("`"):
        return Md(joined)
    return Md(_lead(joined))


def code(value: Any) -> Md:
    """An inline code span of `value`, fenced by more backticks than any run inside."""
    text = _one_line(value)
    longest = max((len(r) for r in _TICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) or not text else ""
    if "|" in text:  # a pipe splits a GFM table cell even inside code: as text there
        text = text.replace("|", "\u2758")
    return Md(f"{fence}{pad}{text}{pad}{fence}")


def cell(value: Any) -> Md:
    """Prose for a GFM table cell, without code spans."""
    return prose(value, spans=False)


def heading(value: Any) -> Md:
    text = prose(value)
    return Md(text[:-1] + "\\#" if text.endswith("#") else text)


def fence(body: Any, at_least: int = 3) -> Md:
    """A backtick fence longer than any backtick run in `body`: the body cannot close it."""
    longest = max((len(r) for r in _TICKS.findall(str(body))), default=0)
    return Md("`" * max(at_least, longest + 1))


def url(value: Any) -> Md:
    return Md(quote(str(value), safe="/._-~"))


def md(value: Any) -> Md:
    return Md(str(value))


def codes(values: Any, sep: str = ", ") -> Md:
    return Md(sep.join(code(v) for v in values))


def finalize(value: Any) -> Any:
    """Jinja's finalize: what a `{{ }}` prints. Numbers, None and booleans as jinja prints
    them; text as prose unless a filter already made it safe."""
    if isinstance(value, Md):
        return value
    if isinstance(value, str):
        return prose(value)
    return value


FILTERS = {
    "code": code,
    "cell": cell,
    "heading": heading,
    "fence": fence,
    "url": url,
    "md": md,
    "codes": codes,
    "prose": prose,
}
