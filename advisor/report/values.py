"""The values the Markdown templates print, as text: numbers as a person writes them, a list
of steps a cell can hold, a change in the run's framework's names. The templates' filters
`fmt`, `clause`, `steps`, `change` (advisor.report.templating)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from advisor.report.escape import Md, code, prose
from advisor.types import Change


def fmt(value: Any) -> str:
    """A number as a person would write it: 4e-06, 0.0012, 8192, 0.31."""
    if isinstance(value, bool) or value is None:
        return str(value).lower() if isinstance(value, bool) else "-"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
            return f"{value:.3g}"
        return f"{value:.4g}"
    return str(value)


def clause(text: Any) -> str:
    """A sentence without its final period (or the Chinese 。), to go on with `;` or `.`."""
    return str(text).strip().rstrip(".。")


def steps_text(steps: Sequence[int], most: int = 12) -> str:
    """Steps as a list a cell can hold: a long one as its first and last few."""
    if len(steps) <= most:
        return ", ".join(map(str, steps))
    half = most // 2
    head, tail = ", ".join(map(str, steps[:half])), ", ".join(map(str, steps[-half:]))
    return f"{head}, ... ({len(steps) - most:,} more), {tail}"


def _old(value: Any, assumed: bool) -> str:
    from advisor.i18n import t

    if value is None:
        return t("unset")
    return fmt(value) + (t(" (assumed)") if assumed else "")


def change_text(c: Change) -> Md:
    """A change in the run's framework's names where it has them (`beta` 0 → 0.04), the
    guide's otherwise; an assumed old value says so. Escaped: names as code, the rest as
    text."""
    how = ""
    if c.factor is not None:
        how = f" (x{fmt(c.factor)})" if c.op == "multiply" else f" ({c.factor:+g})"
    notes = [c.note] if c.note else []
    if c.framework_keys:
        said = ", ".join(
            f"{code(k.key)} {prose(f'{_old(k.from_, k.assumed)} → {fmt(k.to)}')}"
            for k in c.framework_keys
        )
        notes += [k.note for k in c.framework_keys if k.note]
        known = c.framework_keys[0].from_ is not None
        text = said + (" " + prose(how.strip()) if known and how else "")
    else:
        text = f"{code(c.param)} {prose(f'{_old(c.from_, c.assumed)} → {fmt(c.to)}{how}')}"
    return Md(text + "".join(f" - {prose(n)}" for n in notes))


def pct(share: float) -> str:
    """A share as a percentage a person writes: 97%, 4.2%, 0.4%, <0.1%."""
    p = 100 * share
    if p == 0:
        return "0%"
    if p < 0.1:
        return "<0.1%"
    return f"{p:.0f}%" if p >= 10 else f"{p:.1f}%".replace(".0%", "%")


def duration(hours: float) -> str:
    """Hours as a person says them: 42 s, 14 min, 3.2 h."""
    if hours * 3600 < 90:
        return f"{hours * 3600:.0f} s"
    if hours < 1.5:
        return f"{hours * 60:.0f} min"
    return f"{hours:.1f} h"


def money(value: float, currency: str) -> str:
    return f"{value:,.2f} {currency}"


def steps_after(entry: dict[str, Any]) -> str:
    """What a cost entry's whole steps came after ("came after the entropy collapse"), from
    its `what` ("of the steps came after the entropy collapse")."""
    return str(entry["what"]).split(" steps ", 1)[-1]


def waste_said(cost: dict[str, Any] | None, ax: Axis | None = None) -> str:
    """The cost of a run's largest waste as the verdict's sentence (advisor.cost), or "". On a
    log that counts epochs (`ax`) the window is said in epochs and the count in records."""
    from advisor.i18n import t

    entries = (cost or {}).get("entries") or []
    if not entries or cost is None:
        return ""
    e = max(entries, key=lambda e: e["of_run"])
    lo, hi = e["window"]
    epochs = ax.span(lo, hi) if ax is not None else None
    if ax is not None and epochs is not None:
        same = ax.epoch(lo) == ax.epoch(hi)
        where = t("epoch {epoch}", epoch=epochs) if same else t("epochs {span}", span=epochs)
    else:
        where = t("steps {lo}-{hi}", lo=lo, hi=hi) if lo != hi else t("step {lo}", lo=lo)
    unit = "records" if epochs is not None else "steps"
    if e["unit"] == "steps" and e["share"] >= 1:  # whole steps: after a collapse, past the best
        after = steps_after(e)
        text = t("Waste: the {n} " + unit + " that {after} ({where})", n=fmt(e["steps"]),
                 after=t(after), where=where)
    else:
        text = t("Waste: {share} {what} ({where})", share=pct(e["share"]), what=t(e["what"]),
                 where=where)
    if e["hours"] is not None:
        text += t(": {time}", time=duration(e["hours"]))
        if cost.get("run_hours"):
            text += t(", {share} of the run's {time}", share=pct(e["of_run"]),
                      time=duration(cost["run_hours"]))
        if e["gpu_hours"] is not None:
            text += t(", {n} GPU-hours at {gpus} GPUs", n=fmt(round(e["gpu_hours"], 2)),
                      gpus=cost["gpus"])
        if e["cost"] is not None:
            text += f", {money(e['cost'], cost['currency'])}"
    else:
        text += t(": {share} of the run's {n} " + unit, share=pct(e["of_run"]),
                  n=fmt(cost["run_steps"]))
    more = len(entries) - 1
    if more:
        text += t("; {n} more kinds of waste below", n=more) if more > 1 else t(
            "; 1 more kind of waste below"
        )
    return text + t(".")


class Axis:
    """Where a point of the run is, as the report says it. A log of steps: its step. A log whose
    records count epochs (RunInfo.axis, `{"unit": "epoch", "epochs": {record: epoch}}`): the
    epoch it printed there, with the record's number (the detectors' axis) beside it where a
    person may want to find the line."""

    def __init__(self, axis: dict[str, Any] | None) -> None:
        epochs = (axis or {}).get("epochs") if (axis or {}).get("unit") == "epoch" else None
        self.epochs: dict[int, float] | None = (
            {int(k): float(v) for k, v in epochs.items()} if epochs else None
        )

    @property
    def on(self) -> bool:
        """True on a log that counts epochs."""
        return self.epochs is not None

    def epoch(self, step: Any) -> float | None:
        """The epoch of a record, or None (a log of steps, a record with no epoch)."""
        if self.epochs is None or not isinstance(step, int | float) or isinstance(step, bool):
            return None
        return self.epochs.get(int(step))

    def span(self, lo: Any, hi: Any) -> str | None:
        """Two records as an epoch span ("1.25-3", one epoch alone when they print the same),
        or None when either has no epoch."""
        a, b = self.epoch(lo), self.epoch(hi)
        if a is None or b is None:
            return None
        return fmt(a) if a == b else f"{fmt(a)}-{fmt(b)}"
