"""Console text: verl `step:N - k:v - ...` lines, TRL/transformers dict lines, OpenRLHF and
slime `step N: {...}` lines, ROLL `metrics_tag: {...}` lines, `key: value   key: value` pairs,
amid any other output.

One streaming pass over the file in 32 MB chunks (never read twice, never held whole): lines
are classified with cheap substring tests before any regex. A plain verl step line is only
located here (the line and where its payload starts: no copy of its 5 kB); splitting payloads
into key/value pairs is done in polars and the columns are laid out with numpy
(`advisor.ingest.payloads`), several times faster than parsing pairs in Python.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from advisor import lazy
from advisor.ingest import hints as hint_map
from advisor.ingest.ending import EndingScanner
from advisor.ingest.frame import build_run, flatten_keys
from advisor.ingest.lines import iter_chunks, iter_lines
from advisor.ingest.names import canonical_name
from advisor.ingest.payloads import WRAPPED_VALUE, payloads_to_frame
from advisor.ingest.pdump import read_layout
from advisor.types import InputError, Run, RunEnding

if TYPE_CHECKING:
    import polars as pl

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# Ray / process prefixes: "(TaskRunner pid=1234) ", "(main_task pid=5, ip=10.0.0.1) "
# Ray's "(TaskRunner pid=1) ", "(WorkerDict pid=9, ip=10.0.0.1) ", and "(pid=9) " for a
# process not yet named
_PREFIX = re.compile(r"^\s*\((?:[\w.:-]+(?: pid=\d+)?|pid=\d+)(?:, ip=[\w.:]+)?\)\s?")
_GLUED_PREFIX = re.compile(r"(?<=[,{\[])\((?:[\w.:-]+ )?pid=\d+(?:, ip=[\w.:]+)?\)\s*$")
# a bar's position, total and the text in its brackets (elapsed<left, rate), to the `]` or to
# a dict glued on; bounded so that a long run of digits costs one pass
_BAR = re.compile(r"(\d{1,9})/(\d{1,9}) \[([^\]\r\n{]{0,80})")
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s?(s/it|it/s)")
_TOTAL = re.compile(r"Total optimization steps = ([\d,]+)")
# The counter before a dict: OpenRLHF "Global step N:", slime "step N:" (training) and, for the
# same rollout id, "rollout N:" (rewards), "perf N:" (lengths, truncation, timings), "eval N:".
_LEAD_STEP = re.compile(
    r"(Global step|global_step|\bstep|\brollout|\bperf|\beval)[ :=]+(\d{1,19})(?:\s*+:)?\s*+$",
    re.IGNORECASE,
)
_PAIR = re.compile(
    r"""(['"])((?:(?!\1).)+)\1\s*:\s*((?:np\.\w+|tensor|torch\.tensor)\([^)]*\)|[^,{}\[\]]+)"""
)
_WRAPPED = re.compile(WRAPPED_VALUE)
_TRL_ARG = re.compile(r"\b(" + "|".join(hint_map.TRL_ARGS) + r")\s*=\s*([^,\s)]+)")
_OVERRIDE_ROOTS = re.compile(r"\b(?:actor_rollout_ref|data|trainer|algorithm|critic)\.\w")
_OVERRIDE = re.compile(
    r"(?:^|\s|\+)((?:actor_rollout_ref|data|trainer|algorithm|critic)(?:\.\w+)+)=(\S+)"
)
_TRL_KEYS = ("loss", "reward", "grad_norm", "learning_rate", "train_runtime", "epoch")
# ms-swift adds its progress to every dict it prints, 'global_step/max_steps': '5/3766' (its
# Megatron trainer 'iteration': '7/2174'): the step and the planned total
_SWIFT_PROGRESS = ("global_step/max_steps", "iteration")
BAR_RATE = "tqdm/s_per_it"  # the bar's rate, in seconds per step
_FRACTION = re.compile(r"""^\s*['"]?\s*(\d+)\s*/\s*(\d+)\s*['"]?\s*$""")
# keys that number a record, not measure it: a None there is no NaN evidence
_COUNTERS = frozenset({"step", "global_step", "epoch"})
_BARE_START = re.compile(r"""(['"])[\w./()@-]+\1\s*:""")
# metrics pasted as `key: value` pairs, several on a line, 3+ spaces (or tabs) between them
_SPACED_GAP = re.compile(r" {3,}|\t+")
_SPACED_PAIR = re.compile(r"([A-Za-z_][\w./@()-]{0,200}):\s?(\S{1,40})")
# a key and a number, quoted or not, after `:` or `=`: how near a line is to a metric line
_NEAR = re.compile(r"([A-Za-z_][\w./@-]{0,80})['\"]?\s?[:=]\s?['\"]?[-+]?(?:\d|nan\b|inf\b)")
_NEAR_TEXT = 20_000  # characters of a line scored
# payload text read into a frame at a time: a log never holds all its step lines as strings,
# nor the several copies parsing makes of them (~5x the text), at once. Parsed after each
# chunk: a 124 MB log (20k steps x 150 metrics) peaks at 300 MB, 690 MB in 32 MB parts; each
# part is still read in pieces on every polars thread (payloads._parts)
_PART_TEXT = 4 << 20


@dataclass
class _State:
    source: str
    verl_rows: list[int] = field(default_factory=list)  # step lines found line by line
    # payload i is verl_texts[i][verl_offsets[i]:]: the line itself is kept, not a copy of it
    verl_texts: list[str] = field(default_factory=list)
    verl_offsets: list[int] = field(default_factory=list)
    verl_lines: list[int] = field(default_factory=list)
    dict_rows: list[dict[str, Any]] = field(default_factory=list)  # with '_kind', '_step', '_tqdm'
    config_lines: list[str] | None = None
    config_prefix: str = ""
    config_depth: int = 0
    configs: list[str] = field(default_factory=list)
    trl_args: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)  # verl's key.path=value arguments
    tqdm: int | None = None
    marks: list[tuple[int, int | None]] = field(default_factory=list)  # (n, total) at log lines
    total: int | None = None
    last_step: int | None = None
    last_metric_line: int = 0
    warnings: list[str] = field(default_factory=list)
    ending: EndingScanner = field(default_factory=EndingScanner)
    bad_bytes_line: int | None = None
    nul_line: int | None = None  # the first line with a NUL byte (replaced)
    truncated: int = 0
    # a big log's payloads are read part by part (`_flush_verl`): the frames of those done
    verl_frames: list[Any] = field(default_factory=list)
    low_precision: bool | None = None  # 3-decimal values, judged on the first payloads
    max_steps: int | None = None  # the planned total ms-swift prints with each step
    spaced: dict[str, float] | None = None  # the group of `key: value` lines being read
    spaced_rows: list[dict[str, float]] = field(default_factory=list)
    spaced_lines: list[int] = field(default_factory=list)  # the first line of each group
    near: tuple[int, int, int, int] = (0, 0, 0, 0)  # (score, line, pairs, known names)
    # seconds per step the bar showed at (position, total), and how often each total was seen
    # (the training bar is redrawn most; evaluation and loading bars have their own totals)
    rates: dict[tuple[int, int], float] = field(default_factory=dict)
    bar_totals: dict[int, int] = field(default_factory=dict)
    awaiting: list[dict[str, Any]] = field(default_factory=list)  # dicts before their next bar
    by_epoch: bool = False  # records numbered in order because they print an epoch, no step

    @property
    def verl_payloads(self) -> _Payloads:
        """The `k:v - k:v` payloads found so far, as strings (len, index, slice)."""
        return _Payloads(self.verl_texts, self.verl_offsets)

    def add_payload(self, step: int, text: str, offset: int, lineno: int) -> None:
        self.verl_rows.append(step)
        self.verl_texts.append(text)
        self.verl_offsets.append(offset)
        self.verl_lines.append(lineno)


class _Payloads(Sequence[str]):
    """A read-only view of the payloads as strings, made on demand."""

    def __init__(self, texts: list[str], offsets: list[int]) -> None:
        self._texts, self._offsets = texts, offsets

    def __len__(self) -> int:
        return len(self._texts)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            pairs = zip(self._texts[i], self._offsets[i], strict=True)
            return [t[o:] if o else t for t, o in pairs]
        o = self._offsets[i]
        return self._texts[i][o:] if o else self._texts[i]


def _scan_text(st: _State, before: int, text: str) -> None:
    """The lines of a chunk (each ends in a newline) in order. A plain verl step line only has
    its payload copied out; the line itself is never made (splitting a 12 MB log into lines
    costs more than finding its step lines); any other line goes through `_line`. Step lines
    are gathered here and handed to the state before any other line (which may look at them)."""
    find, pos, lineno = text.find, 0, before
    end = len(text)
    steps: list[int] = []
    payloads: list[str] = []
    lines: list[int] = []
    while pos < end:
        nl = find("\n", pos)
        lineno += 1
        hit = _plain_at(text, pos, nl) if st.config_lines is None else None
        if hit is None:
            if steps:
                _add_plain(st, steps, payloads, lines)
                steps, payloads, lines = [], [], []
            _line(st, lineno, text[pos:nl], False)
        else:
            steps.append(hit[0])
            payloads.append(text[pos + hit[1] : nl])
            lines.append(lineno)
        pos = nl + 1
    if steps:
        _add_plain(st, steps, payloads, lines)


def _add_plain(st: _State, steps: list[int], payloads: list[str], lines: list[int]) -> None:
    """Step lines found in a row by `_scan_text`, recorded at once."""
    st.verl_rows += steps
    st.verl_texts += payloads
    st.verl_offsets += [0] * len(steps)
    st.verl_lines += lines
    top = max(steps)
    st.last_step = top if st.last_step is None else max(st.last_step, top)
    st.last_metric_line = lines[-1]


def read_console(path: Path, source: str) -> Run:
    st = _State(source=source)
    width = _wrap_width(path)
    if width:
        st.warnings.append(
            f"{source}: lines are cut at {width} characters (a terminal's copy?): a line of "
            "exactly that length was joined with the next"
        )
        for lineno, line, last in _unwrapped(iter_lines(path, st), width):
            _line(st, lineno, line, last)
    elif (joiner := _rejoiner(path)) is not None:
        for lineno, line, last in joiner.lines(iter_lines(path, st)):
            _line(st, lineno, line, last)
        if joiner.joined:
            st.warnings.append(
                f"{source}:{joiner.first_line}: {joiner.joined} metric record(s) broken over "
                "several lines (a terminal's or an issue tracker's wrap) were joined back"
            )
    else:
        for before, text, last in iter_chunks(path, st):
            if last:
                _line(st, before + 1, text, True)
            else:
                _scan_text(st, before, text)
                if sum(map(len, st.verl_texts)) >= _PART_TEXT:
                    _flush_verl(st)
    _end_spaced(st)
    if st.bad_bytes_line is not None:
        st.warnings.append(
            f"{source}:{st.bad_bytes_line}: bytes that are not UTF-8 were replaced (U+FFFD)"
        )
    if st.nul_line is not None:
        st.warnings.append(f"{source}:{st.nul_line}: NUL bytes were replaced (U+FFFD)")
    if st.truncated:
        st.warnings.append(f"{source}: dropped {st.truncated} truncated metric line(s)")
    if st.verl_texts or st.verl_frames:
        return _finish_verl(st)
    if any("train_runtime" not in r for r in st.dict_rows):
        return _finish_dicts(st)
    # transformers' notebook table, pasted (a training summary dict may follow it)
    from advisor.ingest.notebook import read_notebook_table

    table = read_notebook_table(path, source)
    if table is not None:
        return table
    if st.spaced_rows:
        return _finish_spaced(st)
    if st.dict_rows:
        return _finish_dicts(st)
    from advisor.ingest.minimind import read_minimind

    steps = read_minimind(iter_lines(path), source, st.warnings)
    if steps is not None:
        return steps
    ending = st.ending.result(0)
    if ending is not None and ending.kind != "completed" and _log_line(ending.message or ""):
        return _ending_only(st, ending)
    score, near, pairs, known = st.near
    where = (
        f"; line {near} is the nearest: {pairs} key/value pair(s), {known} of them metric names"
        if score >= 2
        else ""
    )
    raise InputError(
        f"{source}:{near if score >= 2 else 1}: expected training metrics (verl 'step:N - "
        "key:value' lines, TRL {'loss': ...} dicts, 'metrics_tag:' lines, 'key: value' pairs "
        f"3 spaces apart ...), found none{where}"
    )


# how a log states its end, not how prose tells of one: an exception line, the shell's
# `Killed`, a logger's or a launcher's line (a timestamp, a `[rank0]:`-like tag, `ERROR`)
_LOG_ENDING = re.compile(
    r"^(?:[\w.]+(?:Error|Exception|Interrupt|Exit|Full|Killed)\b"
    r"|(?:\S+: line \d+: +\d+ )?Killed\b|\[|\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d|[EWF]\d{4} "
    r"|(?:ERROR|FATAL|CRITICAL|RuntimeError)\b|Out of memory: Killed process)"
)


def _log_line(message: str) -> bool:
    return bool(_LOG_ENDING.match(message.strip()))


def _ending_only(st: _State, ending: RunEnding) -> Run:
    """A log with no metric line that shows how the run ended (an issue excerpt of the OOM
    traceback, the tail of a killed job): a run of no steps whose ending is reported."""
    pl = lazy.polars

    note = (
        f"{st.source}: no metric line, only how the run ended ({ending.kind}, line "
        f"{ending.line}); nothing of its training can be judged"
    )
    return Run(
        frame=pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)}),
        source=st.source,
        format="console-ending",
        ending=ending,
        warnings=[*st.warnings, note],
    )


_REJOIN_SAMPLE = 8 << 20  # bytes looked at for records broken over lines


def _rejoiner(path: Path) -> Any:
    """A Rejoiner when the log shows records broken over lines, else None (the fast path)."""
    from advisor.ingest.rejoin import Rejoiner, needs_rejoin

    try:
        with path.open("rb") as fh:
            sample = fh.read(_REJOIN_SAMPLE).decode("utf-8", errors="replace")
    except OSError:
        return None
    if "{" not in sample and "step:" not in sample:
        return None
    return Rejoiner() if needs_rejoin(sample) else None


_WRAP_SAMPLE = 1 << 16  # bytes looked at for hard-wrapped lines
_WRAP_MIN = 60  # narrower cuts are no terminal's


def _wrap_width(path: Path) -> int | None:
    """W when the log's lines were hard-wrapped at W characters (pasted from a terminal or a
    log viewer): most long lines have exactly the longest length, and step lines among them.
    verl's step lines run to thousands of characters, so a log whose lines all stop at one
    width cut them."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_WRAP_SAMPLE).decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [x.rstrip("\r") for x in head.split("\n")[:-1] if x.strip()]  # last may be cut
    if len(lines) < 8:
        return None
    width = max(map(len, lines))
    cut = [(a, b) for a, b in pairwise(lines) if len(a) == width]
    # fixed-width lines (3-decimal verl prints every step line alike) are followed by lines
    # that start as they do; a cut line by the rest of itself
    alike = sum(b[:12] == a[:12] for a, b in cut)
    stepped = any("step:" in a for a, _ in cut)
    wrapped = len(cut) * 2 >= len(lines) and alike * 10 < len(cut)
    return width if width >= _WRAP_MIN and stepped and wrapped else None


def _unwrapped(
    lines: Iterator[tuple[int, str, bool]], width: int
) -> Iterator[tuple[int, str, bool]]:
    """Lines of exactly `width` characters joined with the ones after them (the number of
    the first), the log as it was written."""
    parts: list[str] = []
    first = 0
    for lineno, line, last in lines:
        if not parts:
            first = lineno
        parts.append(line.rstrip("\r"))
        if len(parts[-1]) != width or last:
            yield first, "".join(parts), last
            parts = []
    if parts:
        yield first, "".join(parts), True


def _strip_ansi(line: str) -> str:
    """ANSI colours sit in the Ray prefix; a regex over a whole 5 kB metric line is the
    costliest step of the scan, so only the text up to the end of the last code is cleaned.
    (A code holds no ESC but an OSC terminator's ESC \\, so none runs past the last ESC's.)"""
    last = line.rfind("\x1b")
    if last < 0:
        return line
    m = _ANSI.match(line, last)
    end = m.end() if m else last + (2 if line.startswith("\\", last + 1) else 1)
    return _ANSI.sub("", line[:end]) + line[end:]


def _line(st: _State, lineno: int, line: str, last: bool) -> None:
    if st.config_lines is None and not last and _plain_step(st, lineno, line):
        return
    if "\x1b" in line:
        line = _strip_ansi(line)
    if line.endswith("\r"):  # Windows line ends
        line = line[:-1]
    if "\r" in line:  # tqdm redraws: keep the progress counter, then the last segment
        segments = [s for s in line.split("\r") if s.strip()]
        # a record the bar was redrawn after on the same line (stdout's dict, then stderr's
        # bar with no newline between them) is read first, not dropped with the redraws
        for seg in segments[:-1]:
            if ("{'" in seg or '{"' in seg) and seg.rstrip().endswith("}"):
                _line(st, lineno, seg, False)
        if "/" in line:
            _tqdm(st, line)
        line = segments[-1] if segments else ""
    if st.config_lines is not None:
        prefix, body = _split_prefix(line)
        if _config_continue(st, prefix, body):
            return
    if (st.spaced is not None or "   " in line or "\t" in line) and _spaced_line(st, lineno, line):
        return
    at = line.find("step:")
    if at >= 0:
        hit = _verl_step(line, at)
        if hit:
            step, payload = hit
            if last:
                payload = _trim_cut(payload)
                if not payload:  # cut before its first value: that step wrote no metric
                    st.truncated += 1
                    return
            st.add_payload(step, payload, 0, lineno)
            st.last_step = step if st.last_step is None else max(st.last_step, step)
            st.last_metric_line = lineno
            return
    if "{" in line:
        prefix, line = _split_prefix(line)
        brace = line.find("{")
        lead = line[:brace]
        if "it/s" in lead or "s/it" in lead:  # a bar glued before a dict (its `]` may be lost)
            _tqdm(st, lead)
        if _dict_line(st, lineno, line, brace, prefix, last):
            return
    elif "': " in line and _bare_dict(st, lineno, line, last):
        return
    if "it/s]" in line or "s/it]" in line:
        _tqdm(st, line)
    elif "Total optimization steps" in line:
        m = _TOTAL.search(line)
        if m:
            st.total = int(m.group(1).replace(",", ""))
    elif "=" in line and not st.dict_rows and not st.verl_texts:
        if _OVERRIDE_ROOTS.search(line):  # a verl command line: data.train_batch_size=256 ...
            for key, value in _OVERRIDE.findall(line):
                st.overrides.setdefault(key, value)
        for name, value in _TRL_ARG.findall(line):  # TRL's printed arguments
            st.trl_args.setdefault(name, value)
    if not st.dict_rows and not st.verl_rows and not st.verl_frames and not st.spaced_rows:
        _score_near(st, lineno, line)
    st.ending.feed(_split_prefix(line)[1], lineno, st.last_step)


def _score_near(st: _State, lineno: int, line: str) -> None:
    """Remember the unread line most like a metric line (key/number pairs, metric names
    counting thrice), for the error when the file holds none."""
    if ":" not in line and "=" not in line:
        return
    pairs = known = 0
    for m in _NEAR.finditer(line, 0, _NEAR_TEXT):
        pairs += 1
        known += canonical_name(m.group(1)) is not None
    score = pairs + 2 * known
    if score > st.near[0]:
        st.near = (score, lineno, pairs, known)


def _spaced_pairs(line: str) -> dict[str, float] | None:
    """`key: value   key: value ...` (TRL's metrics as pasted from a notebook or a terminal):
    every piece between runs of 3+ spaces a `key: number` pair, two pairs at least, and most
    keys metric names (names.py; step and epoch count as such), one at least. Prose with
    colons has words between its pairs and no metric names."""
    if line.count(":") < 2:
        return None
    body = _split_prefix(line)[1].strip().strip("`|").strip()
    pieces = _SPACED_GAP.split(body)
    if len(pieces) < 2:
        return None
    out: dict[str, float] = {}
    for piece in pieces:
        m = _SPACED_PAIR.fullmatch(piece)
        value = _number(m.group(2)) if m else None
        if m is None or value is None:
            return None
        out[m.group(1)] = value
    metrics = sum(canonical_name(k) is not None for k in out)
    counters = sum(k in _COUNTERS for k in out)
    return out if metrics and (metrics + counters) * 2 >= len(out) else None


def _spaced_line(st: _State, lineno: int, line: str) -> bool:
    """A line of `key: value` pairs joins the group being read; a key the group has already
    starts the next one, any other line (a blank one too) ends it."""
    pairs = _spaced_pairs(line)
    if pairs is None:
        _end_spaced(st)
        return False
    if st.spaced is not None and any(k in st.spaced for k in pairs):
        _end_spaced(st)
    if st.spaced is None:
        st.spaced = {}
        st.spaced_lines.append(lineno)
    st.spaced.update(pairs)
    st.last_metric_line = lineno
    return True


def _end_spaced(st: _State) -> None:
    if st.spaced is not None:
        st.spaced_rows.append(st.spaced)
        st.spaced = None


def _split_prefix(line: str) -> tuple[str, str]:
    """("(TaskRunner pid=1) ", rest) for a Ray-prefixed line, ("", line) otherwise."""
    if line[:1] == "(" or line[:2] == " (":
        m = _PREFIX.match(line)
        if m:
            return m.group(0), line[m.end() :]
    return "", line


def _plain_step(st: _State, lineno: int, line: str) -> bool:
    """The common verl step line, recorded without copying it (see `_plain_at`)."""
    hit = _plain_at(line, 0, len(line))
    if hit is None:
        return False
    st.add_payload(hit[0], line, hit[1], lineno)
    st.last_step = hit[0] if st.last_step is None else max(st.last_step, hit[0])
    st.last_metric_line = lineno
    return True


def _plain_at(text: str, start: int, end: int) -> tuple[int, int] | None:
    """(step, where the payload starts) if text[start:end] is a plain verl step line: `step:`
    is the first one of the line and starts it or follows a space/bracket, no ANSI code or
    carriage return after it, the payload neither starts nor ends with anything `_verl_step`
    would strip. Anything else is left to the general path (same result, the slow way).
    Works on the bounds, not on a copy of the line: this runs on every metric line."""
    at = text.find("step:", start, end)
    if at < 0 or end <= start:
        return None
    last = text[end - 1]
    if last.isspace() or last in "]`|" or text.find("\x1b", at, end) >= 0:
        return None
    if text.find("\r", start, end) >= 0:
        return None
    # a colour code ends in a letter, BEL or a backslash, none of them in _STEP_BEFORE: the
    # character before `step:` is then the last of the head without its codes
    if at > start and text[at - 1] not in _STEP_BEFORE and not _head_ok(text[start:at]):
        return None
    dash = text.find(" - ", at + 5, end)
    if dash < 0 or dash - at >= 30:
        return None
    num = text[at + 5 : dash].strip()
    if not (num.isascii() and num.isdigit()) or text[dash + 3 : dash + 4].isspace():
        return None
    return int(num), dash + 3 - start


_HEADS: dict[str, bool] = {}  # a log repeats a few line heads ("(TaskRunner pid=1) ")


def _head_ok(head: str) -> bool:
    """What precedes `step:` (ANSI colours removed) is empty or ends in a space/bracket."""
    ok = _HEADS.get(head)
    if ok is None:
        bare = _ANSI.sub("", head) if "\x1b" in head else head
        ok = not bare or bare[-1] in _STEP_BEFORE
        if len(_HEADS) > 4096:
            _HEADS.clear()
        _HEADS[head] = ok
    return ok


_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]$")
_STEP_BEFORE = frozenset(" \t)]>|`*:[(")


def _verl_step(line: str, at: int) -> tuple[int, str] | None:
    """`step:N - payload` where `step:` starts the line or follows a space/bracket (not the
    `timing_s/step:` of a payload). Plain string search: this runs on every metric line."""
    while at >= 0:
        if at == 0 or line[at - 1] in _STEP_BEFORE:
            dash = line.find(" - ", at + 5)
            num = line[at + 5 : dash].strip() if dash > 0 else ""
            if num.isascii() and num.isdigit() and dash - at < 30:  # not "²"
                payload = line[dash + 3 :].strip()
                if payload.endswith("across cluster]"):  # Ray's log dedup suffix
                    payload = _REPEATED.sub("", payload)
                payload = payload.rstrip("`|")  # pasted in Markdown code or a table cell
                return (int(num), payload) if payload else None
        at = line.find("step:", at + 5)
    return None


def _tqdm(st: _State, line: str) -> None:
    """Track the progress bar; a blank redraw is tqdm clearing the bar to print a log line."""
    if "\r" not in line:
        _bars(st, line)
        return
    for seg in line.split("\r"):
        if seg and not seg.strip():  # spaces over the bar (an empty segment is just a \r)
            if st.tqdm and (not st.marks or st.marks[-1] != (st.tqdm, st.total)):
                st.marks.append((st.tqdm, st.total))
            continue
        _bars(st, seg)


def _bars(st: _State, text: str) -> None:
    """The bars drawn in `text`: the last one is the bar's state; the first one is the bar next
    after the dicts printed since the previous bar; each rate shown is kept for its position."""
    for m in _BAR.finditer(text):
        pos, total = int(m.group(1)), int(m.group(2))
        st.tqdm, st.total = pos, total
        st.bar_totals[total] = st.bar_totals.get(total, 0) + 1
        if st.awaiting:
            for row in st.awaiting:
                row["_after"] = (pos, total)
            st.awaiting.clear()
        rate = _RATE.search(m.group(3))
        if rate:
            value = float(rate.group(1))
            if rate.group(2) == "s/it":
                st.rates[(pos, total)] = value
            elif value > 0:
                st.rates[(pos, total)] = 1.0 / value


def _trim_cut(payload: str) -> str:
    """A last line without newline may be cut mid-value: drop its last pair if it does not parse."""
    head, sep, tail = payload.rpartition(" - ")
    value = tail.rpartition(":")[2].strip()
    if _number(value) is None:
        return head if sep else ""
    return payload


def _number(text: str) -> float | None:
    m = _WRAPPED.match(text)
    if m:
        text = m.group(1)
    try:
        return float(text.strip().strip("'\""))
    except ValueError:
        low = text.strip().lower()
        return float("nan") if low in {"nan", "none_nan"} else None


def _config_continue(st: _State, prefix: str, line: str) -> bool:
    """Collect verl's multi-line config dump until its braces balance."""
    assert st.config_lines is not None
    if (prefix and prefix != st.config_prefix) or not line[:1].isspace():
        # another process's output goes on between the dump's lines: a Ray-prefixed dump
        # outlives lines of other prefixes and unprefixed ones (the driver's own stdout, a
        # wrapper's, or text a copy put in place of lost lines: a gap, which a value wrapped
        # over it does not survive); an unindented line of its own writer ends the dump, whole
        # or not (a dump that lost lines is read by its layout, advisor.ingest.pdump)
        if prefix == st.config_prefix or not (prefix or st.config_prefix):
            st.configs.append("\n".join(st.config_lines))
            st.config_lines = None
        elif not prefix and st.config_lines[-1] != _GAP:
            st.config_lines.append(_GAP)
        return False
    # another process's prefix glued to the end of a dump line (its own line follows)
    line = _GLUED_PREFIX.sub("", line)
    st.config_lines.append(line)
    st.config_depth += _depth(line)
    if st.config_depth <= 0 or len(st.config_lines) > 5000:
        st.configs.append("\n".join(st.config_lines))
        st.config_lines = None
    return True


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
# where a Ray-prefixed config dump had unprefixed text between its lines (see _config_continue)
_GAP = "\x00gap"


def _depth(text: str) -> int:
    bare = _QUOTED.sub("", text)
    return (
        bare.count("{") + bare.count("[") + bare.count("(")
        - bare.count("}") - bare.count("]") - bare.count(")")
    )  # fmt: skip


def _dict_line(st: _State, lineno: int, line: str, brace: int, prefix: str, last: bool) -> bool:
    body = line[brace:]
    lead = line[:brace]
    nested = "': {" in body or "': [" in body
    opens = not lead.strip() and body.startswith(("{'", '{"')) and _depth(body) > 0
    if opens and nested and len(st.configs) < 3:  # the start of verl's pprint config dump
        st.config_lines, st.config_prefix, st.config_depth = [body], prefix, _depth(body)
        return True
    if "metrics_tag" in lead:
        return _roll_line(st, lineno, body)
    if "validation metrics" in lead and _depth(body) <= 0:
        return _verl_val_dict(st, lineno, lead, body)
    if not body.startswith(("{'", '{"')):
        return False
    if not _closes_line(body):  # text after the dict: a quote of one (a completion in TRL's
        return False  # rich sample table, prose), not a log line
    if _depth(body) > 0:  # a dict that does not close on its line: cut off, or wrapped text
        st.truncated += last
        return True
    pairs = {k: v for _, k, v in _PAIR.findall(body)}
    numbers = _dict_numbers(pairs)
    if not numbers:
        return False
    progress = _swift_progress(pairs)
    m = _LEAD_STEP.search(lead)
    if progress is not None:
        kind, step = "swift", progress[0]
        st.max_steps = progress[1]
    elif m:
        kind, step = "step-dict", int(m.group(2))
    elif any(k in numbers for k in _TRL_KEYS) or any(k.startswith("eval_") for k in numbers):
        kind, step = "trl", None
    else:
        return False
    if "step" in numbers:
        step = int(numbers.pop("step"))
    elif "global_step" in numbers:
        step = int(numbers["global_step"])
    lead_word = m.group(1).lower() if m else kind
    row = {"_kind": kind, "_step": step, "_tqdm": st.tqdm, "_line": lineno, "_lead": lead_word}
    row["_bar_total"] = st.total
    row.update(numbers)
    st.dict_rows.append(row)
    if step is None:
        st.awaiting.append(row)
    if "train_runtime" not in numbers:
        st.last_metric_line = lineno
    else:
        st.ending.feed("'train_runtime'", lineno, st.last_step)
    return True


def _dict_numbers(pairs: dict[str, str]) -> dict[str, float]:
    """The numeric values of a printed dict. A metric printed as `None` is NaN: TRL averages a
    metric whose values were all NaN to None (a reward function that returned NaN), so it is
    non-finite evidence, not a metric that was not logged (that one is absent)."""
    out: dict[str, float] = {}
    for key, value in pairs.items():
        n = _number(value)
        if n is None and value.strip().strip("'\"") == "None" and key not in _COUNTERS:
            n = float("nan")
        if n is not None:
            out[key] = n
    return out


def _swift_progress(pairs: dict[str, str]) -> tuple[int, int] | None:
    """(step, planned steps) from ms-swift's 'global_step/max_steps': 'N/M', else None."""
    for key in _SWIFT_PROGRESS:
        m = _FRACTION.match(pairs.get(key, ""))
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def _bare_dict(st: _State, lineno: int, line: str, last: bool) -> bool:
    """A log dict whose braces were lost (ms-swift's line as pasted in an issue:
    `'loss': -0.0, 'grad_norm': 0.0, ...`), read as the dict it was. Only a line that starts
    with a quoted key and holds several pairs; `_dict_line` decides whether it is a log line."""
    prefix, body = _split_prefix(line)
    body = body.strip().strip("`").strip()
    if body.endswith(","):
        body = body[:-1]
    # a key first: the rest of a dict wrapped over two lines starts mid-pair (`': 57.0, ...`)
    if not _BARE_START.match(body) or body.count("': ") + body.count('": ') < 3:
        return False
    return _dict_line(st, lineno, "{" + body + "}", 0, prefix, last)


def _closes_line(body: str) -> bool:
    """The dict runs to the end of the line (or is cut there), bar Markdown and Ray's suffixes."""
    tail = body.rstrip().rstrip("`|").rstrip()
    if tail.endswith("across cluster]"):
        tail = _REPEATED.sub("", tail)
    return tail.endswith("}") or _depth(body) > 0


def _verl_val_dict(st: _State, lineno: int, lead: str, body: str) -> bool:
    """verl's "Initial validation metrics: {...}" (step 0) and "Final validation metrics:
    {...}" (the last step): merged into the step's row like a validation line."""
    pairs = {k: _number(v) for _, k, v in _PAIR.findall(body)}
    pairs = {k: v for k, v in pairs.items() if v is not None}
    step = 0 if "Initial" in lead else st.last_step
    if not pairs or step is None:
        return False
    st.add_payload(step, " - ".join(f"{k}:{v!r}" for k, v in pairs.items()), 0, lineno)
    if "Final" in lead:  # verl's fit() prints it at its last step, then returns
        st.ending.feed("Final validation metrics printed: training finished", lineno, st.last_step)
    return True


def _roll_line(st: _State, lineno: int, body: str) -> bool:
    try:
        rec = json.loads(body)
    except ValueError:
        st.truncated += 1
        return True
    if not isinstance(rec, dict):
        return False
    metrics = rec.get("metrics", rec)
    step = rec.get("step", metrics.get("step") if isinstance(metrics, dict) else None)
    if not isinstance(metrics, dict) or not isinstance(step, int | float):
        return False
    # a metric present as null is NaN evidence (see `_dict_numbers`); an absent one stays absent
    flat = {
        k: float("nan") if v is None else float(v)
        for k, v in flatten_keys(metrics).items()
        if _is_num(v)
    }
    flat.pop("step", None)
    st.dict_rows.append({"_kind": "roll", "_step": int(step), "_tqdm": None, **flat})
    st.last_step = int(step) if st.last_step is None else max(st.last_step, int(step))
    st.last_metric_line = lineno
    return True


def _is_num(v: Any) -> bool:
    return (isinstance(v, int | float) and not isinstance(v, bool)) or v is None


def _config_hints(st: _State) -> dict[str, Any]:
    """verl's printed config dump if there is one, else its command-line overrides. A dump
    that does not parse as a whole (lines lost in a copy, or cut short) is read by its layout:
    every setting on a line that survived, said in a reader warning."""

    texts = st.configs + (["\n".join(st.config_lines)] if st.config_lines else [])
    for text in texts:
        lines = text.split("\n")
        try:
            cfg = ast.literal_eval("\n".join(ln for ln in lines if ln != _GAP))
            damaged = 0
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            cfg, damaged = read_layout([None if ln == _GAP else ln for ln in lines])
            damaged = max(damaged, 1)
        if isinstance(cfg, dict) and any(k in cfg for k in _VERL_TOP):
            if damaged:
                st.warnings.append(
                    f"{st.source}: the config dump does not parse as a whole (lines of it lost "
                    f"or cut): {_leaves(cfg)} settings read by their place in its layout, "
                    "the rest unknown"
                )
            return hint_map.verl_hints(cfg)
    if st.overrides:
        return hint_map.verl_hints(_nest(st.overrides))
    return {}


_VERL_TOP = ("actor_rollout_ref", "trainer", "data", "algorithm")


def _leaves(cfg: dict[str, Any]) -> int:
    return sum(_leaves(v) if isinstance(v, dict) and v else 1 for v in cfg.values())


def _nest(flat: dict[str, str]) -> dict[str, Any]:
    """{'data.train_batch_size': '256'} -> {'data': {'train_batch_size': 256}}."""

    out: dict[str, Any] = {}
    for key, raw in flat.items():
        text = raw.strip().rstrip("\\").strip("'\"")
        try:
            value: Any = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            value = {"true": True, "false": False}.get(text.lower(), text)
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                break
            node = nxt
        else:
            node[leaf] = value
    return out


def _flush_verl(st: _State) -> None:
    """The payloads read so far into a frame; their strings are let go."""

    texts, offsets, steps = st.verl_texts, st.verl_offsets, st.verl_rows
    if not texts:
        return
    if st.verl_lines != sorted(st.verl_lines):  # validation dicts are added out of line order
        order = sorted(range(len(steps)), key=st.verl_lines.__getitem__)
        texts, offsets = [texts[i] for i in order], [offsets[i] for i in order]
        steps = [steps[i] for i in order]
    if st.low_precision is None:
        st.low_precision = _three_decimals(max(_Payloads(texts, offsets)[:5], key=len))
    st.verl_frames.append(payloads_to_frame(texts, offsets, steps, st.source, check=False))
    st.verl_texts, st.verl_offsets, st.verl_rows, st.verl_lines = [], [], [], []


def _finish_verl(st: _State) -> Run:
    pl = lazy.polars

    _flush_verl(st)
    # a key new in a later part comes after the keys of the parts before: the file's order
    frames = st.verl_frames
    wide = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal")
    if wide.width == 1:
        raise InputError(f"{st.source}: step lines hold no 'key:value' metric")
    return build_run(
        _early_val_names(wide),
        source=st.source,
        fmt="verl-console",
        hints=_config_hints(st),
        ending=st.ending.result(st.last_metric_line),
        warnings=st.warnings,
        low_precision=bool(st.low_precision),
    )


def _early_val_names(wide: pl.DataFrame) -> pl.DataFrame:
    """Early verl validates before training under `test_score/<data>` (its step-0 line, its
    "Initial/Final validation metrics" dicts) and logs `val/test_score/<data>` in the loop: one
    validation series, not a training metric that makes step 0 and the last step repeat."""
    pl = lazy.polars

    early = [c for c in wide.columns if c.startswith("test_score/")]
    if not early:
        return wide
    out = []
    for c in early:
        later = f"val/{c}"
        if later in wide.columns:
            out.append(pl.coalesce(later, c).alias(later))
        else:
            out.append(pl.col(c).alias(later))
    return wide.with_columns(out).drop(early)


_FIXED3 = re.compile(r":-?\d+\.\d{3}(?: |$)")


def _three_decimals(payload: str) -> bool:
    """verl <= v0.4 prints every value with exactly 3 decimals."""
    values = payload.split(" - ")
    fixed = sum(1 for v in values if _FIXED3.search(v + " "))
    return fixed >= max(3, int(0.9 * len(values)))


def _finish_dicts(st: _State) -> Run:
    pl = lazy.polars

    rows = [r for r in st.dict_rows if "train_runtime" not in r]
    if not rows:
        raise InputError(f"{st.source}: only a training summary line, no per-step metrics")
    fmt = "trl-console"
    hints = hint_map.trl_arg_hints(st.trl_args)
    if any(r["_kind"] == "roll" for r in rows):
        fmt = "roll-console"
    elif any(r["_kind"] == "step-dict" for r in rows):
        fmt = "dict-console"
    elif any(r["_kind"] == "swift" for r in rows):
        fmt = "swift-console"
        _number_swift_rows(rows, st, hints)
    elif any(r["_step"] is None for r in rows) and not _ppo_trainer_steps(st, rows, hints):
        _derive_trl_steps(st, rows, hints)
    _add_bar_rates(st, rows)
    df = pl.from_dicts(_merge_parts(rows), infer_schema_length=None)
    last = max((r["_line"] for r in rows if "_line" in r), default=st.last_metric_line)
    return build_run(
        df,
        source=st.source,
        fmt=fmt,
        hints=hints,
        ending=_step_of_ending(st.ending.result(max(last, st.last_metric_line)), rows),
        warnings=st.warnings,
        by_epoch=st.by_epoch,
    )


def _bar_total(st: _State) -> int | None:
    """The training bar's total: the total drawn most often (evaluation and checkpoint-loading
    bars are drawn a few times each)."""
    if not st.bar_totals:
        return st.total
    return max(st.bar_totals.items(), key=lambda kv: kv[1])[0]


def _nearest_positions(train: list[dict[str, Any]], total: int | None) -> list[int] | None:
    """The steps of TRL's dicts from the training bar drawn next to them, when the bar before
    each dict (`_tqdm`) does not give them all.

    - A copy of the screen: tqdm clears its bar, writes the dict, and draws the bar again under
      it at the same position, so the bar after each dict is its step (and the first dict may
      have no bar before it).
    - A dict printed before the bar had moved, then dicts each after a bar (a loop that prints
      its own dicts while tqdm draws its bar on the other stream): the first dicts are numbered
      back from the first position by the cadence; when that falls below step 1 the bar counts
      the steps done before each dict, so each is one cadence later than its position.
    """
    if total is None:
        return None
    before = [r["_tqdm"] if r.get("_bar_total") == total else None for r in train]
    after = [r["_after"][0] if r.get("_after", (0, None))[1] == total else None for r in train]
    if None not in after and (len(after) == 1 or _rising_from(after)):
        return [int(a) for a in after]  # type: ignore[arg-type]
    lead = next((i for i, b in enumerate(before) if b is not None), len(before))
    known = before[lead:]
    if not lead or not known or None in known:
        return None
    steps = [int(b) for b in known]  # type: ignore[arg-type]
    if len(steps) > 1 and not _rising_from(steps):
        return None
    every = steps[1] - steps[0] if len(steps) > 1 else steps[0]
    if every <= 0:
        return None
    steps = [steps[0] - (lead - i) * every for i in range(lead)] + steps
    if steps[0] < 1:
        if steps[0] + every < 1:
            return None
        steps = [s + every for s in steps]
    return steps


def _rising_from(marks: list[Any]) -> bool:
    return _rising_runs(marks) and marks[0] < marks[1]


def _add_bar_rates(st: _State, rows: list[dict[str, Any]]) -> None:
    """The seconds per step the training bar showed at a dict's step, as `tqdm/s_per_it` (its
    canonical name is step_time). Evaluation dicts share their step's row and get none."""
    total = _bar_total(st)
    if not st.rates or total is None:
        return
    for r in rows:
        if r["_step"] is None or r["_kind"] not in ("trl", "swift"):
            continue
        if any(k.startswith("eval_") for k in r if k[0] != "_"):
            continue
        rate = st.rates.get((int(r["_step"]), total))
        if rate is not None:
            r[BAR_RATE] = rate


def _finish_spaced(st: _State) -> Run:
    """Groups of `key: value` lines, one step each: numbered by their `step` when each has one,
    else 1, 2, ... in the order printed (the lines print no step)."""
    pl = lazy.polars

    rows = st.spaced_rows
    if all("step" in r for r in rows):
        data = [{**r, "step": int(r["step"])} for r in rows]
    else:
        data = [{**r, "step": k} for k, r in enumerate(rows, 1)]
        st.warnings.append(
            f"{st.source}:{st.spaced_lines[0]}: 'key: value' lines print no step: each group "
            f"of them is one step, numbered 1 to {len(rows)} in the order printed"
        )
    return build_run(
        pl.from_dicts(data, infer_schema_length=None),
        source=st.source,
        fmt="pairs-console",
        hints=hint_map.trl_arg_hints(st.trl_args),
        ending=st.ending.result(st.last_metric_line),
        warnings=st.warnings,
    )


def _number_swift_rows(rows: list[dict[str, Any]], st: _State, hints: dict[str, Any]) -> None:
    """ms-swift prints its step in every dict; a dict without it (another callback's) takes
    the step of the dict before it. The planned total is the run's max_steps."""
    current = 0
    for r in rows:
        if r["_step"] is None:
            r["_step"] = current
        current = r["_step"]
    if st.max_steps:
        hints.setdefault("max_steps", st.max_steps)


def _merge_parts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per step. slime prints one iteration as several dicts ("rollout N", "perf N"
    twice, "step N", "eval N"): those are parts of one row, merged. The same part seen again
    for a step (same line kind, same keys) is a restart, left for build_run to report."""
    seen: dict[tuple[Any, ...], int] = {}
    merged: dict[tuple[Any, int], dict[str, Any]] = {}
    for r in rows:
        numbers = {k: v for k, v in r.items() if not k.startswith("_")}
        if r["_step"] is None:  # TRL rows numbered later: never merged
            merged[(id(r), 0)] = {**numbers, "step": None}
            continue
        part = (r.get("_lead"), r["_step"], frozenset(numbers))
        nth = seen[part] = seen.get(part, -1) + 1
        merged.setdefault((r["_step"], nth), {"step": r["_step"]}).update(numbers)
    return list(merged.values())


def _step_of_ending(ending: RunEnding | None, rows: list[dict[str, Any]]) -> RunEnding | None:
    """Steps of TRL lines are known only at the end: the ending follows the last one before it."""
    if ending is None or ending.step is not None or ending.line is None:
        return ending
    before = [
        r["_step"] for r in rows if r.get("_line", 0) < ending.line and r["_step"] is not None
    ]
    return replace(ending, step=max(before)) if before else ending


def _rising_runs(marks: list[int], restarts: int = 3) -> bool:
    """Strictly rising, but for a few drops (a resume from a checkpoint restarts the bar)."""
    drops = 0
    for a, b in pairwise(marks):
        if b == a:
            return False
        drops += b < a
    return drops <= restarts


# keys only TRL's PPOTrainer (and RLOOTrainer) logs: a policy and a value model, GAE advantages
_PPO_TRAINER_KEYS = frozenset({"objective/rlhf_reward", "objective/scores", "loss/value_avg"})


def _ppo_trainer_steps(st: _State, rows: list[dict[str, Any]], hints: dict[str, Any]) -> bool:
    """TRL's PPOTrainer prints its dicts without a step but with `episode`, the samples trained
    on so far (batch_size per update): the update number is episode / batch_size, the batch
    size the largest whole divisor of every episode count. Its advantages are GAE's (a value
    model), which the hints say. False when the dicts are not PPOTrainer's."""
    if not any(_PPO_TRAINER_KEYS & r.keys() for r in rows):
        return False
    hints.setdefault("adv_estimator", "gae")
    episodes = [r.get("episode") for r in rows]
    if not all(isinstance(e, int | float) and e > 0 and float(e).is_integer() for e in episodes):
        return False
    counts = [int(e) for e in episodes]  # type: ignore[arg-type]
    if any(b <= a for a, b in pairwise(counts)):
        return False  # not one run's rising count (two runs, a resume): numbered otherwise
    batch = math.gcd(*counts)
    for r, n in zip(rows, counts, strict=True):
        r["_step"] = n // batch
    st.warnings.append(
        f"{st.source}: TRL PPOTrainer's dicts print no step: each is numbered by its episode "
        f"count / {batch} (the samples per update, the largest divisor of every count)"
    )
    return True


def _derive_trl_steps(st: _State, rows: list[dict[str, Any]], hints: dict[str, Any]) -> None:
    """TRL prints its log dicts without the step: step = k x logging_steps, k = train entry no.

    logging_steps comes from the printed arguments, else the progress bar position at the first
    entry (checked against the bar's total), else total / entries, else 1; the warning says which.
    """
    train = [r for r in rows if not any(k.startswith("eval_") for k in r if k[0] != "_")]
    n = len(train)
    total = st.total
    every, how = None, ""
    if isinstance(hints.get("logging_steps"), int) and hints["logging_steps"] > 0:
        every, how = hints["logging_steps"], "the logging_steps the run printed"
    # only the training bar's marks (model loading and CUDA-graph bars are cleared too)
    marks = [m for m, t in st.marks if t == total] if total else []
    if every is None and n and len(marks) >= n and _rising_runs(marks[:n]):
        # the bar was cleared once per log line: those are the steps (stdout and stderr may
        # be buffered apart, so the bar and the dicts do not interleave in the file); a resumed
        # run's bar starts again lower, at its checkpoint, and its steps repeat (deduplicated)
        for r, step in zip(train, marks, strict=False):
            r["_step"] = step
        every = marks[0]
        how = "the progress bar position at each log line"
    bars = [r["_tqdm"] for r in train]
    if every is None and n > 1 and None not in bars and _rising_runs(bars) and bars[0] < bars[1]:
        # the bar's position when each line was printed (a resume shows as a drop)
        for r, step in zip(train, bars, strict=True):
            r["_step"] = step
        every = bars[1] - bars[0]
        how = "the progress bar position at each log line"
    near = _nearest_positions(train, _bar_total(st)) if every is None and n else None
    if near is not None:
        for r, step in zip(train, near, strict=True):
            r["_step"] = step
        every = near[1] - near[0] if n > 1 else near[0]
        how = "the progress bar position next to each log line"
    first_bar = train[0]["_tqdm"] if train else None
    if every is None and first_bar and (total is None or first_bar * n <= total):
        every, how = first_bar, f"the progress bar at the first entry ({first_bar}/{total})"
    if every is None and total and n and total % n == 0:
        every, how = total // n, f"{n} entries over the {total} steps of the progress bar"
    if every is None:
        every, how = 1, "nothing: no progress bar or logging_steps found, assumed every step"
        epochs = [r.get("epoch") for r in train]
        if n > 1 and all(isinstance(e, int | float) for e in epochs):
            how += f"; the lines count epochs {epochs[0]}-{epochs[-1]}, numbered 1-{n} in order"
            st.by_epoch = True  # the report speaks in epochs; the detectors work on 1..n
    hints.setdefault("logging_steps", every)
    if total:
        hints.setdefault("max_steps", total)
    k, current = 0, 0
    train_ids = {id(r) for r in train}
    for r in rows:
        if id(r) in train_ids:
            k += 1
            if r["_step"] is None:
                r["_step"] = k * every
            current = r["_step"]
        elif r["_step"] is None:  # evaluation runs right after the train log of its step
            r["_step"] = current
    st.warnings.append(
        f"TRL console lines do not print the step: derived from {how} (logging_steps={every})"
    )
