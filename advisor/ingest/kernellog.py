"""A notebook platform's run log: Kaggle's kernel log (the "Logs" download of a notebook run).

The file is a JSON array of the run's output as it was streamed, one record a chunk:
`{"stream_name": "stdout" | "stderr", "time": seconds since start, "data": "..."}`. The
metrics are inside the `data` strings, as the trainer printed them to the console (TRL dicts,
verl step lines, tqdm bars with their carriage returns and colour codes); a chunk may end
mid-line. The strings are joined in order and read as the console log they make up.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from advisor.ingest.console import read_console
from advisor.types import InputError, Run

_HEAD = re.compile(rb'\s*\[\s*\{\s*"(?:stream_name|time|data)"\s*:')
_MAX = 512 * 1024 * 1024


def is_kernel_log(head: bytes) -> bool:
    """Whether a file's head opens a kernel log (an array of stream records)."""
    return _HEAD.match(head.lstrip(b"\xef\xbb\xbf")) is not None


def read_kernel_log(path: Path, source: str) -> Run:
    if path.stat().st_size > _MAX:
        raise InputError(f"{source}: a kernel log over 512 MB; expected a notebook run's log")
    try:
        records: Any = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as err:
        raise InputError(
            f"{source}: expected a kernel log (a JSON array of stream records): {err}"
        ) from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise InputError(f"{source}: expected a kernel log (a JSON array of stream records)")
    texts = [r.get("data") for r in records]
    if not any(isinstance(t, str) and t for t in texts):
        raise InputError(f"{source}: a kernel log whose records hold no output text ('data')")
    with tempfile.TemporaryDirectory(prefix="rl-advisor-") as tmp:
        copy = Path(tmp) / (path.stem + ".log")
        with copy.open("w", encoding="utf-8") as fh:
            for text in texts:
                if isinstance(text, str):
                    fh.write(text)
        try:
            run = read_console(copy, source)
        except InputError as err:
            raise InputError(str(err).replace(str(copy), source)) from None
    note = (
        f"{source}: a notebook kernel log ({len(records)} stream records); the console "
        "output in their 'data' strings was read"
    )
    return dataclasses.replace(run, warnings=[*run.warnings, note])
