"""A TRL log counted in epochs (dicts with `epoch` and no step) whose entropy collapses: the
shape the epoch-axis tests read and report on."""

from __future__ import annotations

import math
from pathlib import Path


def collapse_log(path: Path) -> None:
    """120 records, 40 an epoch; entropy 0.9 -> the floor from record 50 on."""
    rows = []
    for i in range(1, 121):
        ent = 0.9 if i < 50 else max(0.004, 0.9 * math.exp(-(i - 50) / 5))
        rows.append(
            f"{{'loss': 0.01, 'grad_norm': 0.5, 'reward': {0.3 + 0.002 * i:.3f}, "
            f"'reward_std': 0.3, 'entropy': {ent:.4f}, 'completions/mean_length': 200.0, "
            f"'epoch': {i / 40}}}"
        )
    path.write_text("\n".join(rows) + "\n")
