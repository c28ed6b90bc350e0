"""The sidecar route: follow a growing log as `tail -F` does and feed each step to an Advisor.

- `Follower` yields complete lines as they are written: a partial last line waits for its
  newline; a rotated file (new inode) is read to its end, then the new one from its start; a
  truncated file (size below the read position) is read again from the start.
- `LineParser` turns a line into (step, metrics): verl's console lines (`step:N - key:value`,
  behind a Ray prefix and colour codes, values as `0.12` or `np.float64(0.12)`) and JSONL
  (verl's file logger `{"step": N, "data": {...}}`, or flat objects with `step`/`_step`).
  Every other line goes to the ending scanner (helper I's `EndingScanner`, the one `load_run`
  uses), so the final status line (`Job ... succeeded`, a traceback, OOM) ends the watch.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.online import Advisor
from advisor.types import Finding, InputError, RunEnding

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_VERL_STEP = re.compile(r"(?:^|[\s)\]])step:\s*(\d+)\s+-\s+(.*)$")
_WRAPPED = re.compile(r"^[A-Za-z_][\w.]*\((.*)\)$")  # np.float64(0.1), tensor(0.1)
_LOG_SUFFIXES = (".jsonl", ".json", ".log", ".txt", ".out")
_CHUNK = 1 << 16


def _value(text: str) -> float | None:
    text = text.strip()
    m = _WRAPPED.match(text)
    if m:
        text = m.group(1).split(",")[0].strip()
    try:
        return float(text)
    except ValueError:
        return None


def parse_verl_line(line: str) -> tuple[int, dict[str, float | None]] | None:
    """`(TaskRunner pid=1) step:3 - actor/lr:1e-06 - critic/score/mean:np.float64(0.5)`."""
    if "step:" not in line:
        return None
    m = _VERL_STEP.search(_ANSI.sub("", line))
    if m is None:
        return None
    metrics: dict[str, float | None] = {}
    for item in m.group(2).split(" - "):
        key, sep, raw = item.strip().rpartition(":")
        if sep and key:
            metrics[key.strip()] = _value(raw)
    return (int(m.group(1)), metrics) if metrics else None


def parse_json_line(line: str) -> tuple[int, dict[str, Any]] | None:
    """verl's file logger `{"step": N, "data": {...}}` or a flat `{"step": N, ...}` object."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)  # Python's json reads NaN / Infinity too
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    step = obj.get("step", obj.get("_step", obj.get("global_step")))
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step):
        return None
    data = obj.get("data") if isinstance(obj.get("data"), dict) else obj
    metrics = {k: v for k, v in data.items() if k not in ("step", "_step", "global_step")}
    return int(step), metrics


@dataclass
class LineParser:
    """Lines in, (step, metrics) out; keeps what the ending needs."""

    format: str | None = None  # "verl-console" or "jsonl", from the first metric line
    lineno: int = 0
    last_metric_line: int = 0
    last_step: int | None = None
    scanner: Any = field(default=None)

    def __post_init__(self) -> None:
        if self.scanner is None:
            from advisor.ingest.ending import EndingScanner

            self.scanner = EndingScanner()

    def feed(self, line: str) -> tuple[int, dict[str, Any]] | None:
        self.lineno += 1
        hit = None
        if self.format != "verl-console":
            hit = parse_json_line(line)
            if hit is not None:
                self.format = "jsonl"
        if hit is None and self.format != "jsonl":
            hit = parse_verl_line(line)
            if hit is not None:
                self.format = "verl-console"
        if hit is None:
            self.scanner.feed(_ANSI.sub("", line).rstrip("\r\n"), self.lineno, self.last_step)
            return None
        self.last_metric_line, self.last_step = self.lineno, hit[0]
        return hit

    def ending(self) -> RunEnding | None:
        """How the run ended, if a line after the last metric line says so."""
        result = self.scanner.result(self.last_metric_line)
        if result is None or self.lineno == self.last_metric_line:
            return None
        return result


class Follower:
    """Complete lines of a file that is being written (`tail -F` semantics, see module doc)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None
        self._ino: int | None = None
        self._buf = b""
        self.grew_at = time.monotonic()

    def _open(self) -> bool:
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - kept open across polls on purpose
        except FileNotFoundError:
            return False
        except OSError as err:
            raise InputError(f"{self.path}: cannot be read ({err.strerror})") from None
        self._fh, self._ino, self._buf = fh, os.fstat(fh.fileno()).st_ino, b""
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
            self._buf = b""
            lines += self._drain()
        return lines

    def _drain(self) -> list[str]:
        data = b""
        while chunk := self._fh.read(_CHUNK):
            data += chunk
        if not data:
            return []
        self.grew_at = time.monotonic()
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
    # a clean finish; long after an error line, since a sample text or an OOM that training
    # survives can read like one (default: the smaller of --idle and 60 s).
    settle: float | None = None  # default 2 polls (>= 0.5 s)
    error_settle: float | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    parser: LineParser = field(default_factory=LineParser)

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
        error_settle = self.error_settle if self.error_settle is not None else min(self.idle, 60)
        while not self.stop.is_set():
            self._feed(follower.poll())
            quiet = time.monotonic() - follower.grew_at
            ending = self.parser.ending()
            wait = settle if ending is not None and ending.kind == "completed" else error_settle
            if ending is not None and quiet >= wait:
                self._finish(follower, ending)
                return "ending"
            if quiet >= self.idle:
                self._finish(follower, None)
                return "idle"
            self.stop.wait(self.poll)
        self._finish(follower, None)
        return "stopped"

    def _finish(self, follower: Follower, ending: RunEnding | None) -> None:
        self._feed(follower.flush_partial())
        self.advisor.format = self.parser.format or self.advisor.format
        for finding in self.advisor.close(ending or self.parser.ending()):
            self.on_finding(finding)

    def _feed(self, lines: list[str]) -> None:
        for line in lines:
            hit = self.parser.feed(line)
            if hit is None:
                continue
            for finding in self.advisor.observe(*hit):
                self.on_finding(finding)

    def feed_lines(self, lines: Iterator[str] | list[str]) -> None:
        """Feed already-read lines (a whole file at once, tests)."""
        self._feed(list(lines))


def metrics_of(lines: list[str]) -> list[tuple[int, Mapping[str, Any]]]:
    """(step, metrics) of every metric line, in order (for tests and replays)."""
    parser = LineParser()
    return [hit for line in lines if (hit := parser.feed(line)) is not None]
