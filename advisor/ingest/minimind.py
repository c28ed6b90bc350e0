"""MiniMind's trainer lines (its pretrain, SFT, DPO and GRPO scripts print one per step):

    Epoch:[1/1](12/9751), Reward: -1.7233, KL_ref: 0.0002, Adv Std: 0.9257, ...

`Epoch:[e/E](i/N)` then `Name: value` pairs a comma apart, names with spaces and capitals
(`Avg Response Len`, `Learning Rate`, `KL_ref`). The step is (e - 1) x N + i. The names are
kept as written and mapped onto the canonical ones in names.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from advisor import lazy
from advisor.ingest.frame import build_run
from advisor.types import Run

FORMAT = "minimind-console"
_LINE = re.compile(r"Epoch:\s*\[(\d+)/(\d+)\]\s*\((\d+)/(\d+)\),\s*(.*)$")
_PAIR = re.compile(r"([A-Za-z][\w ]{0,40}?):\s*(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)")


def read_minimind(
    lines: Iterable[tuple[int, str, bool]], source: str, warnings: list[str]
) -> Run | None:
    """The run in MiniMind's step lines (the console reader's `iter_lines`), None if the file
    holds none."""
    rows: list[dict[str, Any]] = []
    for _lineno, line, _last in lines:
        m = _LINE.search(line)
        if m is None:
            continue
        epoch, per_epoch, i = int(m[1]), int(m[4]), int(m[3])
        row: dict[str, Any] = {"step": (epoch - 1) * per_epoch + i}
        for name, value in _PAIR.findall(m[5]):
            row[name.strip()] = float(value)
        if len(row) > 1:
            rows.append(row)
    if not rows:
        return None
    df = lazy.polars.from_dicts(rows, infer_schema_length=None)
    return build_run(df, source=source, fmt=FORMAT, warnings=warnings)
