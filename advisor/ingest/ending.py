"""How a run ended, read from its console text: OOM, NCCL, disk full, Killed, tracebacks, status.

Only what happened after the last metric line decides the ending: an OOM retried mid-run that
training survived is not how the run ended.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from advisor.types import RunEnding

# kind -> pattern; checked in this order on each line (the first match names the line's kind)
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("disk_full", re.compile(r"No space left on device|StorageFull|Disk quota exceeded|ENOSPC")),
    (
        "oom",
        re.compile(
            r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|\bout of memory\b"
            r"|RESOURCE_EXHAUSTED|OOM[- ]?kill|Out of memory: Killed process",
            re.IGNORECASE,
        ),
    ),
    (
        "nccl",
        re.compile(
            r"NCCL error|nccl(?:System|Internal|UnhandledCuda|Remote|InvalidUsage)Error"
            r"|NCCL communicator was aborted|Watchdog caught collective operation timeout"
            r"|NCCL timeout|DistBackendError"
        ),
    ),
    ("killed", re.compile(r"^\s*(?:\S+: line \d+: +\d+ )?Killed\b|\bSIGKILL\b|exitcode\s*:\s*-9")),
    (
        "failed",
        re.compile(
            r"Job '[^']*' failed|Status for job '[^']*': FAILED|^(?>.*?\bjob ).*\bfailed\b"
            r"|Training failed|^(?>.*?RuntimeError: ).*fail",
            re.IGNORECASE,
        ),
    ),
    (
        "completed",
        re.compile(
            r"Job '[^']*' succeeded|Status for job '[^']*': SUCCEEDED|'train_runtime'"
            r"|\"train_runtime\"|Training completed|training finished",
            re.IGNORECASE,
        ),
    ),
)
# a cheap pre-filter (`_maybe_ending`): a line holding none of its words cannot match a
# pattern above. Substring tests on the lowered line: a case-insensitive regex alternation
# costs ~50 us a line, which was most of the time on a large log of other output.


def _maybe_ending(low: str) -> bool:
    # unrolled `or` of substring tests: no generator, each test a C-level search
    return (
        "fail" in low or "memory" in low or "kill" in low or "oom" in low or "nccl" in low
        or "space" in low or "storage" in low or "quota" in low or "enospc" in low
        or "resource_exhausted" in low or "watchdog" in low or "backend" in low
        or "exitcode" in low or "succeeded" in low or "train_runtime" in low
        or "completed" in low or "finished" in low
    )  # fmt: skip


_TRACEBACK = "Traceback (most recent call last)"
# `Name(args): message` with the name's last part holding one of _EXC_WORDS (checked apart:
# one regex holding both backtracks over every split of a long name)
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*+)(?:\([^)]*\))?(?::\s*(.*))?$")
_EXC_WORDS = ("Error", "Exception", "Interrupt", "Exit", "Full", "Killed")
_PRECEDENCE = ("disk_full", "oom", "nccl", "killed", "traceback", "failed")


@dataclass
class EndingScanner:
    """Fed every non-metric line (prefix stripped); `result` picks the ending."""

    events: list[tuple[str, int, int | None, str]] = field(default_factory=list)
    in_traceback: bool = False

    def feed(self, text: str, lineno: int, step: int | None) -> None:
        if _TRACEBACK in text:
            self.in_traceback = True
            return
        if self.in_traceback and text[:1].isalpha():
            m = _EXC_LINE.match(text.strip())
            last = m[1][1:].rpartition(".")[2] if m else ""
            if any(w in last for w in _EXC_WORDS):
                self.events.append(("traceback", lineno, step, text.strip()[:300]))
        if not _maybe_ending(text.lower()):
            return
        for kind, pat in _PATTERNS:
            if pat.search(text):
                self.events.append((kind, lineno, step, text.strip()[:300]))
                return

    def result(self, last_metric_line: int) -> RunEnding | None:
        if not self.events:
            return None
        after = [e for e in self.events if e[1] > last_metric_line]
        if not after:
            done = [e for e in self.events if e[0] == "completed"]
            return _ending(done[-1]) if done else None
        errors = [e for e in after if e[0] != "completed"]
        if not errors:
            return _ending(after[-1])
        if after[-1][0] == "completed" and not any(e[0] in _PRECEDENCE[:4] for e in errors):
            return _ending(after[-1])  # a handled error, then a clean finish
        kind = min(errors, key=lambda e: _PRECEDENCE.index(e[0]))[0]
        chosen = [e for e in errors if e[0] == kind][-1]
        tb = [e for e in errors if e[0] == "traceback"]
        message = tb[-1][3] if tb and kind != "traceback" and tb[-1][1] >= chosen[1] else chosen[3]
        return RunEnding(kind=kind, step=chosen[2], line=chosen[1], message=message)  # type: ignore[arg-type]


def _ending(event: tuple[str, int, int | None, str]) -> RunEnding:
    kind, line, step, message = event
    return RunEnding(kind=kind, step=step, line=line, message=message)  # type: ignore[arg-type]
