"""The managed platform's job logs as its SDK hands them over: the console text inside a JSON
envelope, unwrapped before the text's own format is detected; and the lossy shapes its CLI
prints by default, recognised and refused with the command that gives the lossless one.

Envelopes (the text a string, or a list of lines the server sent):
- `dashscope rl logs JOB -o json`: `{"job_id": ..., "logs": ...}`
- the SDK's v2 client (`JobLogs.model_dump()`): `{"job_id": ..., "content": ...}`
- the service's own response: `{"request_id": ..., "output": {"total": N, "logs": ...}}`
ANSI colour codes are dropped from the unwrapped text.

Lossy shapes: `dashscope rl logs JOB` (a rich table, its lines wrapped at the terminal's width
inside box characters) and `-o yaml` (PyYAML's folded scalars, wrapped again by rich): what a
line held cannot be told from what the wrapping did, so neither is read.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from advisor.types import InputError

# keys an envelope may carry besides its log (the SDK's response fields); any other key makes
# the document something else (a trainer state, a step list), read as it is
_ENVELOPE_KEYS = {
    "job_id",
    "request_id",
    "status_code",
    "code",
    "message",
    "usage",
    "headers",
    "is_error",
    "total",
    "output",
    "logs",
    "content",
}
_LOG_KEYS = ("logs", "content")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")

LOSSLESS = "dashscope rl logs JOB_ID -o json > logs.json"
# the rich table: its title row and the heavy-headed box rich draws around "Key | Value"
_TABLE = re.compile(r"^\s*┃\s*Key\s*┃\s*Value\s*┃", re.MULTILINE)
# the YAML dump: `job_id:` then `logs:` (PyYAML sorts the keys), each at the start of a line
_YAML = re.compile(r"\A\s*job_id:[^\n]*\n(?:[^\n]*\n){0,3}?(?:logs|content):", re.MULTILINE)


def may_be_envelope(head: bytes) -> bool:
    """Whether a JSON document starting with `head` may be an envelope (a cheap first test)."""
    return b'"logs"' in head or b'"content"' in head


# lines the service returns per request at most: an envelope holding exactly this many (or
# fewer than the `total` it states) is one page of a log that may go on
PAGE = 1000


def unwrap(p: Path, text: str) -> tuple[str, str, list[str]] | None:
    """(the console text, what it came from, warnings) when `text` (the JSON document in file
    `p`) is a log envelope, else None. An envelope without a line is refused here."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    inner = doc.get("output") if isinstance(doc.get("output"), dict) else None
    for where, obj in (("", doc), ("output.", inner)):
        if obj is None or set(obj) - _ENVELOPE_KEYS:
            continue
        key = next((k for k in _LOG_KEYS if k in obj), None)
        if key is None:
            continue
        body = _text(obj[key])
        if body is None:
            raise InputError(
                f"{p}: `{where}{key}`: expected the log as a string or a list of lines, "
                f"found {type(obj[key]).__name__}"
            )
        job = doc.get("job_id") or (inner or {}).get("job_id")
        named = f" of job {job}" if isinstance(job, str) and job else ""
        body = _ANSI.sub("", body)
        if not body.strip():
            raise InputError(f"{p}: `{where}{key}`: the platform's log{named} is empty")
        return (
            body,
            f"the platform's log{named} (`{where}{key}`)",
            _partial(obj[key], obj.get("total"), job),
        )
    return None


def _partial(logs: Any, total: Any, job: Any) -> list[str]:
    """What is said of an envelope that holds one page of a longer log."""
    held = len(logs) if isinstance(logs, list) else logs.count("\n") + 1
    whole = f"`rl-advisor diagnose --job {job if isinstance(job, str) and job else 'JOB_ID'}`"
    if isinstance(total, int) and total > held:
        return [f"the file holds {held} of the log's {total} lines; {whole} reads them all"]
    if held == PAGE and not isinstance(total, int):
        return [
            f"the file holds {PAGE} lines, one page of the platform's log (what `dashscope rl "
            f"logs` fetches at most): the log may go on; {whole} reads it whole"
        ]
    return []


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) or v is None for v in value):
        return "\n".join("" if v is None else v for v in value) + "\n"
    return None


def refuse_lossy(p: Path, head: str) -> None:
    """Refuse the table or YAML shape of `dashscope rl logs` (see the module's docstring)."""
    if _TABLE.search(head):
        shape = "the table `dashscope rl logs` prints by default"
    elif _YAML.match(head):
        shape = "the YAML `dashscope rl logs -o yaml` prints"
    else:
        return
    raise InputError(
        f"{p}: {shape}, its lines wrapped at the terminal's width (the log cannot be read "
        f"back from it); expected the lossless JSON: `{LOSSLESS}`"
    )
