"""The metrics table transformers draws in a notebook (`NotebookProgressCallback`), as users
paste it: a Markdown table (GitHub turns a copied HTML table into `a | b` rows under a `-- | --`
line), the tab-separated text a browser copies from the rendered table, the same columns
aligned with runs of spaces, or the HTML itself (`<th>` / `<td>` cells).

The first column is `Step` (`Epoch` when the run evaluates once per epoch). transformers titles
the training loss "Training Loss", the evaluation loss "Validation Loss" and every other
evaluation metric by its key without the `eval_` prefix, each `_`-separated word capitalised
(`eval_reward_std` -> "Reward Std"); callbacks that put every logged metric in the table
(Unsloth's) title a metric by its key, with ` / ` for `/` (`completions / clipped_ratio`).
`table_key` maps a title back to the key. A cell the row did not log reads "No Log" (null
here); `nan` is a NaN the run logged (kept: non-finite evidence). Floats are printed with six
decimals, so an lr below 5e-7 reads 0.000000.

Users also paste tables of their own making: the keys as titles, one space apart (`Step loss
grad_norm reward_mean clipped_ratio mean_length`), the TRL keys shortened to their last part
(`_SHORT` maps those back), and rows left out with a `...` row between those shown. Such a
row is skipped, every row around it read, and the report says rows were left out.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from advisor import lazy
from advisor.ingest.frame import build_run
from advisor.ingest.jsonfiles import _cadence_logging
from advisor.ingest.lines import iter_lines
from advisor.types import InputError, Run

FORMAT = "notebook-table"
_FIRST = ("Step", "Epoch")
_TITLES = {"Training Loss": "loss", "Validation Loss": "eval_loss", "Step": "step",
           "Epoch": "epoch"}  # fmt: skip
_NOT_LOGGED = frozenset({"no log", ""})
_SEPARATOR = re.compile(r"^\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?$")
_HTML_CELL = re.compile(r"<(th|td)\b[^>]*>(.*?)</t[hd]>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_ROW = re.compile(r"<tr\b")
_SPACES = re.compile(r"\t| {2,}")
# a row standing for rows left out of a pasted table: `...`, `…`, `⋮`, alone or in every cell
_ELIDED = re.compile(r"^[|\s]*(?:(?:\.{2,}|…|⋮)[|\s]*)+$")
_KEY_TITLE = re.compile(r"[A-Za-z_][\w./@()-]*")
# TRL's keys as users shorten them in a table of their own (the TRL key they stand for)
_SHORT = {
    "clipped_ratio": "completions/clipped_ratio",
    "clip_ratio_completions": "completions/clipped_ratio",
    "mean_length": "completions/mean_length",
    "min_length": "completions/min_length",
    "max_length": "completions/max_length",
    "mean_terminated_length": "completions/mean_terminated_length",
    "reward_mean": "reward",
    "mean_reward": "reward",
    "rewards_mean": "reward",
    "zero_std_frac": "frac_reward_zero_std",
    "lr": "learning_rate",
}


def table_key(title: str) -> str:
    """The metric key a column title of the table stands for."""
    title = " ".join(title.split())
    if title in _TITLES:
        return _TITLES[title]
    if title in _SHORT:
        return _SHORT[title]
    if " / " in title:  # the logged key, its slashes spaced out
        return title.replace(" / ", "/")
    if title[:1].isupper():  # transformers' evaluation title: eval_<words joined by _>
        return "eval_" + "_".join(word.lower() for word in title.split(" "))
    return title


def cell_value(text: str) -> float | None:
    """A cell as a number: None for "No Log" (not logged) or text; NaN and inf as written."""
    text = text.strip()
    if text.lower() in _NOT_LOGGED:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _split(line: str, kind: str) -> list[str]:
    if kind == "|":
        body = line.strip()
        body = body[1:] if body.startswith("|") else body
        body = body[:-1] if body.endswith("|") else body
        return [c.strip() for c in body.split("|")]
    if kind == "\t":
        return [c.strip() for c in line.strip().split("\t")]
    if kind == " ":
        return line.split()
    return [c.strip() for c in _SPACES.split(line.strip())]


def _header(line: str) -> tuple[list[str], str] | None:
    """(titles, how cells are separated) if `line` heads a notebook table."""
    text = line.strip()
    if not text.lstrip("| ").startswith(_FIRST):
        return None
    for kind in ("|", "\t", "  "):
        if kind in text:
            cells = _split(text, kind)
            ok = cells[0] in _FIRST and len(cells) >= 2 and all(cells)
            if ok and all(cell_value(c) is None for c in cells):
                return cells, kind
    # the keys one space apart (a table of the user's own): every title a key
    cells = text.split()
    if len(cells) >= 3 and cells[0] in _FIRST and all(_KEY_TITLE.fullmatch(c) for c in cells):
        return cells, " "
    return None


class _Tables:
    """Rows of the tables seen so far, merged by step (a later table adds the columns it has
    more; a value seen first is kept)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.rows: dict[int, dict[str, float | None]] = {}
        self.cut: list[int] = []
        self.disagree: int | None = None
        self.by_epoch = False
        self.headers = 0
        self.elided: list[tuple[int, int | None]] = []  # (line, the step shown before it)
        self.last_step: int | None = None

    def add(self, lineno: int, titles: list[str], cells: list[str], cut: bool = False) -> bool:
        """One data row; False when it is none (the table ended). A row may have fewer cells
        than the titles: transformers does not widen the rows drawn before a column first
        appeared. `cut`: the file ends inside this row (a paste cut short), so its last cell
        may be cut mid-number."""
        first = cells[0].strip()
        if not (first.isascii() and first.isdigit()):
            return False
        if len(cells) > len(titles):
            return False
        if cut and len(cells) < len(titles):
            cells = cells[:-1]
            self.cut.append(lineno)
        step = int(first)
        self.last_step = step
        row = self.rows.setdefault(step, {})
        for title, cell in zip(titles[1:], cells[1:], strict=False):
            key = table_key(title)
            value = cell_value(cell)
            old = row.get(key)
            if old is None:
                row[key] = value
            elif value is not None and not _same(old, value) and self.disagree is None:
                self.disagree = step
        return True

    def run(self) -> Run:
        pl = lazy.polars

        records: list[dict[str, Any]] = [{"step": s, **r} for s, r in sorted(self.rows.items())]
        if not any(v is not None for r in records for k, v in r.items() if k != "step"):
            raise InputError(
                f"{self.source}: a metrics table (Step | Training Loss | ...) with no number "
                "in its metric columns; expected one row per logged step"
            )
        warnings = []
        if self.cut:
            warnings.append(
                f"{self.source}:{self.cut[0]}: a table row is cut short; its last cell was "
                "dropped (the file ends inside it: it may be cut mid-number)"
            )
        if self.disagree is not None:
            warnings.append(
                f"{self.source}: the tables give different values at step {self.disagree}; "
                "the first table's are kept"
            )
        if self.by_epoch:
            warnings.append(f"{self.source}: the table counts epochs; its rows are numbered so")
        if self.elided:
            line, after = self.elided[0]
            where = f" after step {after}" if after is not None else ""
            more = f" (and {len(self.elided) - 1} more such row(s))" if len(self.elided) > 1 else ""
            warnings.append(
                f"{self.source}:{line}: rows are left out ('...'){where}{more}; the rows shown "
                "around it are read, the steps left out are missing"
            )
        hints = _cadence_logging(records)
        df = pl.from_dicts(records, infer_schema_length=None)
        return build_run(
            df,
            source=self.source,
            fmt=FORMAT,
            hints=hints,
            warnings=warnings,
            by_epoch=self.by_epoch,
        )


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))


def read_notebook_table(path: Path, source: str) -> Run | None:
    """The run in the notebook tables of a text file; None if the file holds no such table.
    A table that holds no number raises InputError."""

    tables = _Tables(source)
    titles: list[str] | None = None
    kind = ""
    html: list[str] | None = None  # the cells of the HTML row being read
    html_titles: list[str] | None = None
    html_head = False
    for lineno, raw, last in iter_lines(path):
        line = raw.rstrip("\r")
        if html is not None or html_titles is not None or "<t" in line:
            html, html_titles, html_head = _html_line(
                tables, lineno, line, html, html_titles, html_head
            )
            if html is not None or html_titles is not None:
                continue
        if titles is not None:
            text = line.strip()
            if not text:
                continue
            if kind == "|" and _SEPARATOR.match(text):
                continue
            if _ELIDED.match(text):
                tables.elided.append((lineno, tables.last_step))
                continue
            if tables.add(lineno, titles, _split(text, kind), cut=last):
                continue
            titles = None
        head = _header(line)
        if head is not None:
            titles, kind = head
            tables.headers += 1
            tables.by_epoch = tables.by_epoch or titles[0] == "Epoch"
    if not tables.rows:
        if tables.headers:
            raise InputError(
                f"{source}: a metrics table (Step | Training Loss | ...) without rows; "
                "expected one row per logged step"
            )
        return None
    return tables.run()


def _html_line(
    tables: _Tables,
    lineno: int,
    line: str,
    cells: list[str] | None,
    titles: list[str] | None,
    head: bool,
) -> tuple[list[str] | None, list[str] | None, bool]:
    """Feed one line of the HTML table: (cells of the open row, the table's titles, whether
    the open row is a header row). A `<tr>` opens a row, `</tr>` ends it; `</table>` the
    table."""
    low = line.lower()
    if _ROW.search(low):
        cells, head = [], False
    for tag, cell in _HTML_CELL.findall(line):
        if cells is None:
            cells = []
        head = head or tag.lower() == "th"
        cells.append(" ".join(_TAG.sub("", cell).split()))
    if "</tr>" in low and cells is not None:
        if head and cells and cells[0] in _FIRST:
            titles = cells
            tables.headers += 1
            tables.by_epoch = tables.by_epoch or cells[0] == "Epoch"
        elif titles is not None and cells:
            tables.add(lineno, titles, cells)
        cells = None
    if "</table>" in low:
        return None, None, False
    return cells, titles, head
