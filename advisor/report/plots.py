"""Small PNGs of a finding's metrics: the curve, the warm-up shaded, the evidence window marked.

matplotlib (Agg backend) is imported here only, so the CLI pays for it only when it draws.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from advisor.types import Diagnosis, Evidence, Finding


def plot_name(stem: str, finding_id: str, metric: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in metric)
    return f"{stem}-{finding_id}-{safe}.png"


def draw(d: Diagnosis, out_dir: Path, stem: str = "report") -> dict[str, str]:
    """Draw one PNG per (finding, evidence metric) with a series; return `ID:metric` -> file
    name relative to `out_dir` (the report sits beside its pictures)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, str] = {}
    out_dir.mkdir(parents=True, exist_ok=True)
    # a rule seen in several episodes is drawn with its latest, whose evidence the report shows
    latest = {f.id: f for f in sorted(d.findings, key=lambda f: f.onset_step or 0)}
    for f in latest.values():
        for e in f.evidence:
            key = f"{f.id}:{e.metric}"
            if key in out or e.metric not in d.series:
                continue
            name = plot_name(stem, f.id, e.metric)
            fig = _figure(plt, d, f, e)
            try:
                _save_atomic(fig, out_dir / name)
            finally:
                plt.close(fig)
            out[key] = name
    return out


def _figure(plt: Any, d: Diagnosis, f: Finding, e: Evidence) -> Any:
    steps, values = d.series[e.metric]
    ys = [v if v is not None and math.isfinite(v) else float("nan") for v in values]
    fig, ax = plt.subplots(figsize=(6.0, 2.0), dpi=100)
    ax.plot(steps, ys, lw=1.0, color="#1f4e79")
    if d.warmup_steps and steps:
        ax.axvspan(
            steps[0],
            min(steps[0] + d.warmup_steps - 1, steps[-1]),
            color="0.88",
            label=f"warm-up ({d.warmup_steps} steps)",
        )
    lo, hi = e.window
    ax.axvspan(lo, hi, color="#d62728", alpha=0.15, label=f"{f.id} window {lo}-{hi}")
    if f.onset_step is not None:
        ax.axvline(f.onset_step, color="#d62728", lw=1.0, ls="--", label=f"onset {f.onset_step}")
    if f.cleared_step is not None:
        ax.axvline(
            f.cleared_step, color="#2ca02c", lw=1.0, ls="--", label=f"cleared {f.cleared_step}"
        )
    bad = [s for s, v in zip(steps, values, strict=True) if v is not None and not math.isfinite(v)]
    if bad:  # NaN / inf points: the curve has gaps there, so mark them
        ax.plot(bad, [ax.get_ylim()[0]] * len(bad), "x", color="#d62728", ms=4, label="NaN/inf")
    ax.set_title(f"{f.id} {f.name}: {e.metric}", fontsize=9, loc="left")
    ax.set_xlabel("step", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="best", frameon=False)
    fig.tight_layout()
    return fig


def _save_atomic(fig: Any, dest: Path) -> None:
    from advisor.resources import write_atomic

    write_atomic(dest, lambda fh: fig.savefig(fh, format="png"), binary=True)
