"""The sidecar route: follow a growing log as `tail -F` does and feed each step to an Advisor.

- `Follower` yields complete lines as they are written: a partial last line waits for its
  newline; a rotated file (new inode) is read to its end, then the new one from its start; a
  truncated file (size below the read position) is read again from the start.
- `LineParser` turns lines into (step, metrics) records. Console text goes line by line
  through the console reader's own state machine (`advisor.ingest.console`, what
  `load_run` uses): verl `step:N - key:value` lines behind Ray prefixes and colour codes,
  validation dicts, ROLL / OpenRLHF / slime step dicts, verl's printed config (hints), and the
  ending scanner, so the final status line (`Job ... succeeded`, a traceback, OOM) ends the
  watch. JSONL (verl's file logger `{"step": N, "data": {...}}`, flat objects) is parsed here.
- `Sidecar` ties them together and decides when the run is over.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.ingest import console
from advisor.ingest import hints as hint_map
from advisor.ingest.jsonfiles import step_key
from advisor.ingest.payloads import WRAPPED_VALUE
from advisor.online import Advisor
from advisor.types import Finding, InputError, RunEnding

_WRAPPED = re.compile(WRAPPED_VALUE)  # np.float64(0.1), tensor(0.1, device=...)
_LOG_SUFFIXES = (".jsonl", ".json", ".log", ".txt", ".out")
_CHUNK = 1 << 16


def _value(raw: str) -> float | None:
    """A console value as the reader converts it: as it is, else stripped and unwrapped from
    np.float64(...) / tensor(...); None when it is not a number."""
    try:
        return float(raw)
    except ValueError:
        pass
    m = _WRAPPED.match(raw.strip())
    try:
        return float((m.group(1) if m else raw).strip())
    except ValueError:
        return None


def parse_json_line(line: str) -> tuple[int, dict[str, Any]] | None:
    """verl's file logger `{"step": N, "data": {...}}` or a flat `{"step": N, ...}` object
    (the step under any of the names the JSONL reader accepts)."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)  # Python's json reads NaN / Infinity too
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    data: dict[str, Any] = obj["data"] if isinstance(obj.get("data"), dict) else obj
    key = _step_key(obj) or _step_key(data)
    step = obj.get(key, data.get(key)) if key else None
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step):
        return None
    metrics = {k: v for k, v in data.items() if k != key}
    return int(step), metrics


def _step_key(obj: Mapping[str, Any]) -> str | None:
    return step_key(obj)


def parse_payload(payload: str) -> dict[str, float | None]:
    """`k:v - k:v ...` as the console reader splits it: at " - ", key before the first colon,
    values as numbers with np.float64(...) / tensor(...) wrappers removed (None if not one)."""
    out: dict[str, float | None] = {}
    for piece in payload.split(" - "):
        key, sep, raw = piece.partition(":")
        key = key.strip()
        if sep and key:
            out[key] = _value(raw)
    return out


@dataclass
class LineParser:
    """Lines in, (step, metrics) records out, plus the run's printed config and its ending.

    Console lines go through the console reader's state machine (`advisor.ingest.console`,
    the one `load_run` uses), one line at a time: verl step lines, validation dicts, ROLL /
    OpenRLHF / slime step dicts, verl's printed config, the ending scanner. So `watch` reads a
    log as `diagnose` does. JSONL lines are parsed here.
    """

    source: str = "<log>"
    format: str | None = None  # "verl-console", "verl-jsonl", "jsonl", "roll-console"...
    lineno: int = 0
    _state: Any = None
    _payloads: int = 0
    _dicts: int = 0
    _trl: list[dict[str, Any]] = field(default_factory=list)  # TRL dicts awaiting their step
    _trl_k: int = 0
    _trl_step: int = 0
    _trl_first_bar: int | None = None
    trl_how: str = ""  # how TRL steps were numbered (for the report's warnings)

    def __post_init__(self) -> None:
        self._console = console
        self._state = console._State(source=self.source)

    @property
    def last_step(self) -> int | None:
        return self._state.last_step

    def feed(self, line: str, last: bool = False) -> list[tuple[int, dict[str, Any]]]:
        """The metric records this line completes (usually none or one). `last`: the file's
        final line without a newline (a writer that died mid-line may have cut it)."""
        self.lineno += 1
        st = self._state
        if self.format in (None, "jsonl", "verl-jsonl") and line.lstrip().startswith("{"):
            hit = parse_json_line(line)
            if hit is not None:
                self.format = self.format or ("verl-jsonl" if '"data"' in line else "jsonl")
                st.last_step = hit[0] if st.last_step is None else max(st.last_step, hit[0])
                st.last_metric_line = self.lineno
                return [hit]
        self._console._line(st, self.lineno, line.rstrip("\n"), last)
        out: list[tuple[int, dict[str, Any]]] = []
        while self._payloads < len(st.verl_payloads):
            i = self._payloads
            self._payloads += 1
            out.append((st.verl_rows[i], parse_payload(st.verl_payloads[i])))
            self.format = self.format or "verl-console"
        while self._dicts < len(st.dict_rows):
            row = st.dict_rows[self._dicts]
            self._dicts += 1
            if "train_runtime" in row:
                continue  # the end-of-training summary, not a step
            if row.get("_step") is None:
                self._trl.append(row)  # TRL prints no step: numbered below
                continue
            out.append((int(row["_step"]), _metrics(row)))
            self.format = self.format or _DICT_FORMATS.get(row.get("_kind"), "dict-console")
        if self._trl:
            out += self._number_trl(final=False)
        return out

    def finish(self) -> list[tuple[int, dict[str, Any]]]:
        """Records still held at the end of the log (TRL lines whose step the progress bar
        had not told yet), numbered as the reader does without a bar."""
        return self._number_trl(final=True) if self._trl else []

    def _number_trl(self, final: bool) -> list[tuple[int, dict[str, Any]]]:
        """TRL's console dicts have no step. The reader numbers the k-th training dict by the
        printed logging_steps (k x logging_steps), else by the k-th position the training
        progress bar was cleared at to print a log line; an evaluation dict takes the step of
        the training dict before it. Online a dict waits until its number is known."""
        out: list[tuple[int, dict[str, Any]]] = []
        while self._trl:
            row = self._trl[0]
            if any(k.startswith("eval_") for k in row):
                step = self._trl_step
            else:
                number = self._trl_number(self._trl_k + 1, row, final)
                if number is None:
                    break
                self._trl_k += 1
                step = self._trl_step = number
            self._trl.pop(0)
            out.append((step, _metrics(row)))
            self.format = self.format or "trl-console"
        return out

    def _trl_number(self, k: int, row: Mapping[str, Any], final: bool) -> int | None:
        every = self._logging_steps()
        if every:
            self.trl_how = "the logging_steps the run printed"
            return k * every
        st = self._state
        marks = [m for m, total in st.marks if total == st.total] if st.total else []
        if len(marks) >= k:
            self.trl_how = "the progress bar position at each log line"
            return int(marks[k - 1])
        if self._trl_first_bar is None:
            self._trl_first_bar = row.get("_tqdm") or 0
        if not final:
            return None
        # the log ended before the bar told this entry's step: keep the cadence seen so far,
        # else the first entry's bar position, else every step
        if marks:
            return k * int(marks[0])
        if self._trl_first_bar:
            self.trl_how = "the progress bar at the first entry"
        else:
            self.trl_how = "nothing: no progress bar or logging_steps found, assumed every step"
        return k * (self._trl_first_bar or 1)

    def notes(self) -> list[str]:
        """What the reader would warn about this log's reading (TRL step numbering)."""
        if self.format != "trl-console" or not self.trl_how:
            return []
        every = self.hints().get("logging_steps")
        return [
            f"TRL console lines do not print the step: derived from {self.trl_how} "
            f"(logging_steps={every})"
        ]

    def _logging_steps(self) -> int | None:
        every = hint_map.trl_arg_hints(self._state.trl_args).get("logging_steps")
        return every if isinstance(every, int) and every > 0 else None

    def hints(self) -> dict[str, Any]:
        """Hyperparameters the log printed: verl's config dump (once complete), TRL's
        arguments (with the logging cadence and the progress bar's total, as the reader)."""
        st = self._state
        if self.format == "trl-console":
            out = hint_map.trl_arg_hints(st.trl_args)
            marks = [m for m, total in st.marks if total == st.total] if st.total else []
            every = self._logging_steps() or (marks[0] if marks else None)
            if every:
                out.setdefault("logging_steps", int(every))
            if st.total:
                out.setdefault("max_steps", st.total)
            return out
        return self._console._config_hints(st) if st.configs else {}

    def ending(self) -> RunEnding | None:
        """How the run ended, if a line after the last metric line says so."""
        st = self._state
        if self.lineno == st.last_metric_line:
            return None
        ending = st.ending.result(st.last_metric_line)
        if ending is not None and ending.step is None and self._trl_k:
            # TRL lines carry no step: the ending follows the last numbered one (as the reader)
            ending = replace(ending, step=self._trl_step)
        return ending

    @property
    def low_precision(self) -> bool:
        """verl <= v0.4 prints every value with 3 decimals (an lr of 1e-6 reads 0.000)."""
        payloads = self._state.verl_payloads[:5]
        return bool(payloads) and self._console._three_decimals(max(payloads, key=len))


_DICT_FORMATS = {"roll": "roll-console", "step-dict": "dict-console", "swift": "swift-console"}


def _metrics(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k[:1] != "_"}


class Follower:
    """Complete lines of a file that is being written (`tail -F` semantics, see module doc)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None
        self._ino: int | None = None
        self._buf = b""
        self._start = True
        self.grew_at = time.monotonic()

    def _open(self) -> bool:
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - kept open across polls on purpose
        except FileNotFoundError:
            return False
        except OSError as err:
            raise InputError(f"{self.path}: cannot be read ({err.strerror})") from None
        self._fh, self._ino, self._buf = fh, os.fstat(fh.fileno()).st_ino, b""
        self._start = True  # the next bytes read are the file's first
        return True

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def poll(self) -> list[str]:
        """Every complete line written since the last poll (may be empty)."""
        if self._fh is None and not self._open():
            return []
        lines = self._drain()
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return lines  # rotated away; the new file may not exist yet
        if st.st_ino != self._ino:  # rotation: the old file was read to its end above
            self.close()
            if self._open():
                lines += self._drain()
        elif st.st_size < self._fh.tell():  # truncated: the writer started it anew
            self._fh.seek(0)
            self._buf, self._start = b"", True
            lines += self._drain()
        return lines

    def _drain(self) -> list[str]:
        chunks = []  # joined once: `data += chunk` copies the whole read per chunk
        while chunk := self._fh.read(_CHUNK):
            chunks.append(chunk)
        data = b"".join(chunks)
        if not data:
            return []
        self.grew_at = time.monotonic()
        if self._start:  # a UTF-8 byte order mark is no part of the first line
            self._start = False
            data = data.removeprefix(b"\xef\xbb\xbf")
        data = self._buf + data
        *complete, self._buf = data.split(b"\n")
        return [raw.decode("utf-8", errors="replace") for raw in complete]

    def flush_partial(self) -> list[str]:
        """The unterminated last line, at the very end (a writer that died mid-line)."""
        rest, self._buf = self._buf, b""
        return [rest.decode("utf-8", errors="replace")] if rest.strip() else []


def resolve_log(path: Path) -> Path:
    """A log file to follow: the path itself, or the newest log-like file in a run directory."""
    if path.is_dir():
        files = [p for p in path.iterdir() if p.is_file() and p.suffix in _LOG_SUFFIXES]
        if not files:
            raise InputError(
                f"{path}: expected a log file or a run directory holding one "
                f"({', '.join(_LOG_SUFFIXES)})"
            )
        return max(files, key=lambda p: p.stat().st_mtime)
    if not path.exists() and not path.parent.is_dir():
        # a log not written yet is waited for (tail -F), but only in a directory that exists
        raise InputError(f"{path}: neither the file nor its directory exists")
    return path


@dataclass
class Sidecar:
    """Follow `path`, feed the Advisor, call `on_finding` for each new finding; `run()` returns
    why it stopped: "ending" (a final status line), "idle", or "stopped" (stop event)."""

    path: Path
    advisor: Advisor
    on_finding: Callable[[Finding], None] = lambda f: None
    poll: float = 0.5
    idle: float = 900.0
    # Quiet time the log must keep after a final status line before the watch ends: short after
    # a clean finish; after an error line (a traceback, an OOM, Killed) long enough for a run
    # that survived it to print its next step: twice the longest gap seen between steps,
    # within error_floor-error_cap (the floor before two gaps are known); never past --idle.
    settle: float | None = None  # default 2 polls (>= 0.5 s)
    error_settle: float | None = None  # a fixed wait instead
    error_floor: float = 10.0
    error_cap: float = 60.0
    # With no final status line (a crash that printed nothing), the watch ends once the log has
    # been quiet for `gap_multiple` times the longest gap seen between steps, at least
    # `min_quiet` (a checkpoint save or a validation pass is slower than a step), or --idle.
    gap_multiple: float = 5.0
    min_quiet: float = 60.0
    stop: threading.Event = field(default_factory=threading.Event)
    parser: LineParser = field(default_factory=LineParser)
    _hinted: bool = False
    _last_step_at: float | None = None
    _gaps: int = 0
    _longest_gap: float = 0.0

    def run(self) -> str:
        follower = Follower(self.path)
        try:
            return self._loop(follower)
        except KeyboardInterrupt:  # Ctrl-C: the run goes on, the watch ends with its report
            self._finish(follower, None)
            return "interrupted"
        finally:
            follower.close()

    def _loop(self, follower: Follower) -> str:
        settle = self.settle if self.settle is not None else max(0.5, 2 * self.poll)
        while not self.stop.is_set():
            steps = self.advisor.steps
            self._feed(follower.poll())
            self._time_steps(steps)
            quiet = time.monotonic() - follower.grew_at
            ending = self.parser.ending()
            if ending is not None:
                wait = settle if ending.kind == "completed" else self._error_settle(settle)
                if quiet >= wait:
                    self._finish(follower, ending)
                    return "ending"
            limit = self._quiet_limit()
            if quiet >= limit:
                if limit < self.idle:
                    self.advisor.warn(
                        f"The log stopped growing for {quiet:.0f} s ({self.gap_multiple:g}x the "
                        f"longest gap between steps, {self._longest_gap:.0f} s) with no final "
                        "status line: the run may have ended without a message"
                    )
                self._finish(follower, None)
                return "idle"
            self.stop.wait(self.poll)
        self._finish(follower, None)
        return "stopped"

    def _time_steps(self, before: int) -> None:
        """Note when new steps arrived: the longest gap between two arrivals paces the ends."""
        if self.advisor.steps <= before:
            return
        now = time.monotonic()
        if self._last_step_at is not None:
            self._gaps += 1
            self._longest_gap = max(self._longest_gap, now - self._last_step_at)
        self._last_step_at = now

    def _error_settle(self, settle: float) -> float:
        if self.error_settle is not None:
            wait = self.error_settle
        elif self._gaps >= 2:
            wait = min(self.error_cap, max(self.error_floor, 2 * self._longest_gap))
        else:
            wait = self.error_floor
        return max(settle, min(wait, self.idle))

    def _quiet_limit(self) -> float:
        if self._gaps < 2:  # the first arrival is the file read so far: no pace known yet
            return self.idle
        return min(self.idle, max(self.min_quiet, self.gap_multiple * self._longest_gap))

    def _finish(self, follower: Follower, ending: RunEnding | None) -> None:
        self._feed(follower.flush_partial(), last=True)
        self.end(ending)

    def end(self, ending: RunEnding | None = None) -> None:
        """Judge what is left and close the Advisor: the end of a watch fed by `feed_lines`
        (a platform job's log, fetched line by line), or of `run`."""
        self._observe(self.parser.finish())
        self.advisor.format = self.parser.format or self.advisor.format
        for note in self.parser.notes():
            self.advisor.warn(note)
        for finding in self.advisor.close(ending or self.parser.ending()):
            self.on_finding(finding)

    def _feed(self, lines: list[str], last: bool = False) -> None:
        """Records of one step read in one go (a verl step line and its validation dict) are
        judged as one row, as the reader merges them: each is held (partial) and the batch
        flushed at its end, so an alert waits at most one poll."""
        if not lines:
            return
        for i, line in enumerate(lines):
            self._observe(self.parser.feed(line, last=last and i == len(lines) - 1), flush=False)
        for finding in self.advisor.flush():
            self.on_finding(finding)

    def _observe(self, records: list[tuple[int, dict[str, Any]]], flush: bool = True) -> None:
        adv = self.advisor
        for step, metrics in records:
            if adv.steps == 0 and not self._hinted:
                self._hint(step)
            for finding in adv.observe(step, metrics, partial=True):
                self.on_finding(finding)
        if flush and records:
            for finding in adv.flush():
                self.on_finding(finding)

    def _hint(self, first_step: int) -> None:
        # What the log printed before its first record: verl's config, TRL's arguments and
        # progress bar total. The planned run length lets a missing eval_steps be assumed as
        # diagnose assumes it from the finished run (its length / the guide's fraction).
        self._hinted = True
        self.advisor.low_precision = self.parser.low_precision
        # the log's format is known by its first record: the framework (whose defaults the
        # engine judges with) from the start, as diagnose knows it
        self.advisor.format = self.parser.format or self.advisor.format
        hints = self.parser.hints()
        total = hints.get("total_training_steps") or hints.get("max_steps")
        expected = total - first_step + 1 if isinstance(total, int) and total > first_step else None
        if hints or expected:
            self.advisor.add_hints(hints, expected_steps=expected)

    def feed_lines(self, lines: Iterator[str] | list[str]) -> None:
        """Feed already-read lines (a whole file at once, tests)."""
        self._feed(list(lines))


def metrics_of(lines: list[str]) -> list[tuple[int, Mapping[str, Any]]]:
    """(step, metrics) of every metric record, in order (for tests and replays)."""
    parser = LineParser()
    return [hit for line in lines for hit in parser.feed(line)]
