"""The Markdown report: jinja2 templates fed with a small view of the Diagnosis.

The Python side only computes values (sparklines, the diff lines, the verdict's numbers); every
piece of Markdown lives in `templates/*.j2`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from advisor import lazy
from advisor.report.escape import FILTERS, Md, code, finalize, prose
from advisor.report.plots import draw
from advisor.types import Change, Diagnosis, Finding

TICKS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None], width: int = 40) -> str:
    """A unicode sparkline of block means; `×` marks a block with a non-finite value, a space
    a block with no value at all."""
    if not values:
        return ""
    n = len(values)
    width = min(width, n)
    blocks: list[float | str | None] = []
    for i in range(width):
        chunk = values[i * n // width : (i + 1) * n // width]
        if any(v is not None and not math.isfinite(v) for v in chunk):
            blocks.append("x")
            continue
        finite = [v for v in chunk if v is not None]
        mean = sum(finite) / len(finite) if finite else None
        blocks.append("x" if mean is not None and not math.isfinite(mean) else mean)  # overflow
    nums = [b for b in blocks if isinstance(b, float)]
    lo, hi = (min(nums), max(nums)) if nums else (0.0, 0.0)
    half_span = hi / 2 - lo / 2  # halves: hi - lo can overflow for values near the float limit
    out = []
    for b in blocks:
        if b == "x":
            out.append("×")
        elif b is None:
            out.append(" ")
        else:
            # a constant series is drawn mid-height: at the floor it reads as "nothing" (a
            # truncation rate of 1.0 at every step drew as the lowest bar)
            pos = 0.5 if half_span == 0 else (b / 2 - lo / 2) / half_span  # type: ignore[operator]
            out.append(TICKS[round(pos * (len(TICKS) - 1))])
    return "".join(out)


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
    """A sentence without its final period, to go on with `;` or `.` in the template."""
    return str(text).strip().rstrip(".")


def steps_text(steps: Sequence[int], most: int = 12) -> str:
    """Steps as a list a cell can hold: a long one as its first and last few."""
    if len(steps) <= most:
        return ", ".join(map(str, steps))
    half = most // 2
    head, tail = ", ".join(map(str, steps[:half])), ", ".join(map(str, steps[-half:]))
    return f"{head}, ... ({len(steps) - most:,} more), {tail}"


def yaml_value(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return fmt(value)


def diff_lines(changes: Sequence[Change], framework: str = "platform") -> list[str]:
    """Old vs new lines, one pair per setting: the platform's hyperparameters under a
    `hyper_parameters:` context line (it sits under `training:` in the YAML layout, at the
    top in the keyword one); a TRL config YAML's top-level keys; verl's dotted Hydra keys.
    `--patched-config` writes the real file. An old value that is not known is not shown as
    a line of the file: the new line alone, said to be an addition."""
    out: list[str] = []
    native = framework in ("trl", "verl")
    indent = "" if native else "  "
    for c in changes:
        said = [(k.key, k.from_, k.to, k.assumed) for k in c.framework_keys] if native else []
        for key, old, new, assumed in said or [(c.param, c.from_, c.to, c.assumed)]:
            if old is not None and not assumed:
                out.append(f"-{indent}{key}: {yaml_value(old)}")
            out.append(f"+{indent}{key}: {yaml_value(new)}")
    return out


def _old(value: Any, assumed: bool) -> str:
    if value is None:
        return "unset"
    return fmt(value) + (" (assumed)" if assumed else "")


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


def verdict(d: Diagnosis) -> str:
    """The first line: healthy / N issues, and the one change to make; then how the run ended
    when it did not complete (a crash is news even when there is too little data to judge)."""
    text = _verdict(d)
    end = d.run.ending if d.run else None
    if end is not None and end.kind not in ("completed", "unknown"):
        where = f" at step {end.step}" if end.step is not None else ""
        text += f" The run ended abnormally: {end.kind.replace('_', ' ')}{where}."
    return text


def _verdict(d: Diagnosis) -> str:
    ordered = d.findings
    if d.status == "insufficient_data":
        steps = d.run.steps if d.run else 0
        need = d.warmup_steps or 0
        return (
            f"Not enough data to judge yet: {steps} steps read, the warm-up alone is {need} "
            f"steps (eval_steps x 3)."
        )
    if not ordered:
        extra = f"; {len(d.config_findings)} config finding(s) below" if d.config_findings else ""
        wait = f"trends judged after a warm-up of {d.warmup_steps} steps"
        return f"Healthy: no symptom ({wait}){extra}."
    ordered = list({f.id: f for f in reversed(ordered)}.values())[::-1]  # episodes: one issue
    counts = {
        s: sum(1 for f in ordered if f.severity.value == s) for s in ("error", "warning", "info")
    }
    tally = ", ".join(f"{n} {s}{'s' if n > 1 else ''}" for s, n in counts.items() if n)
    top = next(
        (f for f in ordered if f.id == (d.patch.from_finding if d.patch else None)), ordered[0]
    )
    if d.patch and d.patch.changes:
        c = d.patch.changes[0]
        todo = "the one change to make: " + change_text(
            c.model_copy(update={"note": None, "factor": None})
        ).split(" - ")[0]
    elif all(f.severity.value == "info" and f.cleared_step is not None for f in ordered):
        todo = f"nothing to change: it passed by step {top.cleared_step}"  # engine `settles`
    else:
        todo = "the one thing to do: " + (top.action.advice if top.action else "see below")
    n = len(ordered)
    return f"{n} issue{'s' if n > 1 else ''} ({tally}); {todo} ({top.id} {top.name})."


def _episodes(findings: Sequence[Finding]) -> list[list[Finding]]:
    """Findings grouped by rule id, in the ranked order of each id's first episode: a rule that
    fired, cleared and fired again is one section with its episodes listed."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.id, []).append(f)
    for eps in groups.values():
        eps.sort(key=lambda f: f.onset_step if f.onset_step is not None else -1)
    return list(groups.values())


def _finding_view(episodes: list[Finding], d: Diagnosis, plots: dict[str, str]) -> dict[str, Any]:
    f = episodes[-1]  # the latest episode carries the most complete evidence
    evidence, drawn = [], set()
    for e in f.evidence:
        _steps, values = d.series.get(e.metric, ([], []))
        plot = plots.get(f"{f.id}:{e.metric}")
        evidence.append(
            {
                "e": e,
                "spark": sparkline(values),
                "stats": ", ".join(f"{k}={fmt(v)}" for k, v in e.statistic.items()),
                "plot": None if plot in drawn else plot,  # one picture per metric
            }
        )
        drawn.add(plot)
    spans = [
        f"from step {fmt(g.onset_step)}"
        + (f" to {g.cleared_step} (cleared)" if g.cleared_step is not None else " (active)")
        for g in episodes
    ]
    return {"f": f, "first": episodes[0], "episodes": spans, "evidence": evidence}


def _curves(d: Diagnosis) -> list[dict[str, Any]]:
    """The headline curves of the run (reward and validation), as sparklines with their ends."""
    out = []
    for metric in ("reward_mean", "val_reward"):
        steps, values = d.series.get(metric, ([], []))
        finite = [
            (s, v) for s, v in zip(steps, values, strict=True) if v is not None and math.isfinite(v)
        ]
        if len(finite) >= 2:
            out.append(
                {
                    "metric": metric,
                    "spark": sparkline(values),
                    "first": finite[0],
                    "last": finite[-1],
                }
            )
    return out


def _bytecode_cache(jinja2: Any) -> Any:
    class _Quiet(jinja2.FileSystemBytecodeCache):  # type: ignore[misc, name-defined]
        """A cache that never fails a report: a full or read-only disk just means no cache."""

        def load_bytecode(self, bucket: Any) -> None:
            with contextlib.suppress(OSError):
                super().load_bytecode(bucket)

        def dump_bytecode(self, bucket: Any) -> None:
            with contextlib.suppress(OSError):
                super().dump_bytecode(bucket)

    try:
        return _Quiet()
    except (OSError, RuntimeError):  # no private temp dir can be made: compile every time
        return None


@lru_cache(maxsize=1)
def _env() -> Any:
    jinja2 = lazy.jinja2
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
        autoescape=False,  # Markdown, not HTML: escaped by `finalize` (advisor.report.escape)
        finalize=finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        # Compiling the templates costs more than importing jinja2: keep the compiled code in
        # jinja2's per-user temp cache (keyed by the template's checksum, so never stale).
        bytecode_cache=_bytecode_cache(jinja2),
    )
    env.filters.update(FILTERS)
    env.filters.update(fmt=fmt, change=change_text, clause=clause, steps=steps_text)
    return env


def render_markdown(d: Diagnosis, out_dir: Path | None = None, stem: str = "report") -> str:
    plots: dict[str, str] = dict(d.plots)
    if out_dir is not None and d.findings:
        plots.update(draw(d, Path(out_dir), stem))
    view = {
        "d": d,
        "verdict": verdict(d),
        "findings": [_finding_view(eps, d, plots) for eps in _episodes(d.findings)],
        "diff": diff_lines(d.patch.changes, d.framework) if d.patch else [],
        "framework": d.framework,
        "ckpt": d.checkpoint,
        "curves": _curves(d),
    }
    return _env().get_template("report.md.j2").render(**view)
