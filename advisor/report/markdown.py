"""The Markdown report: jinja2 templates fed with a small view of the Diagnosis.

The Python side only computes values (sparklines, the diff lines, the verdict's numbers); every
piece of Markdown lives in `templates/*.j2` (advisor.report.templating).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from advisor.i18n import localise_config, localise_finding, rule_text, t
from advisor.report.plots import draw
from advisor.report.templating import render
from advisor.report.values import (
    Axis,
    change_text,
    duration,
    fmt,
    money,
    pct,
    steps_after,
    waste_said,
)
from advisor.types import Change, Diagnosis, Finding

TICKS = "▁▂▃▄▅▆▇█"
# The report's template, then those it includes (loaded ahead by the command: diagnose_core)
TEMPLATES: tuple[str, ...] = ("report.md.j2", "patch.md.j2", "finding.md.j2", "checkpoint.md.j2")


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
        try:
            total = sum(chunk)  # type: ignore[arg-type]  # (None: TypeError, below)
        except TypeError:  # a step without a value (None) in the block
            if any(v is not None and not math.isfinite(v) for v in chunk):
                blocks.append("x")
                continue
            finite = [v for v in chunk if v is not None]
            mean = sum(finite) / len(finite) if finite else None
            blocks.append("x" if mean is not None and not math.isfinite(mean) else mean)
            continue
        # a non-finite value makes the sum non-finite, and so does an overflow: both are `×`
        blocks.append(total / len(chunk) if math.isfinite(total) else "x")
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


def verdict(d: Diagnosis) -> str:
    """The first line: healthy / N issues, and the one change to make; then how the run ended
    when it did not complete (a crash is news even when there is too little data to judge)."""
    ax = axis_of(d)
    text = _verdict(d, ax)
    end = d.run.ending if d.run else None
    if end is not None and end.kind not in ("completed", "unknown"):
        where = _at(end.step, ax, " at step {step}", " at epoch {epoch} (record {step})")
        kind = t(end.kind.replace("_", " "))
        text += t(" The run ended abnormally: {kind}{where}.", kind=kind, where=where)
    waste = waste_said(d.cost, ax)
    return text + t(" ") + waste if waste else text


def axis_of(d: Diagnosis) -> Axis:
    """How the report says where a point of `d`'s run is (advisor.report.values.Axis)."""
    return Axis(d.run.axis if d.run is not None else None)


def _at(step: int | None, ax: Axis, said: str, in_epochs: str) -> str:
    """`said` with the step filled in, or on a log that counts epochs `in_epochs` with the
    epoch printed there (and the record's number, `{step}`); "" for no step."""
    if step is None:
        return ""
    epoch = ax.epoch(step)
    if epoch is None:
        return t(said, step=step)
    return t(in_epochs, epoch=fmt(epoch), step=step)


def _verdict(d: Diagnosis, ax: Axis) -> str:
    ordered = d.findings
    if d.status == "insufficient_data" and d.run is not None and d.run.steps and not d.run.metrics:
        return t(
            "Not judged: {steps} steps read, none with a metric the advisor judges "
            "(reward, KL, entropy, lengths ...).",
            steps=d.run.steps,
        )
    if d.status == "insufficient_data":
        steps = d.run.steps if d.run else 0
        need = d.warmup_steps or 0
        return t(
            "Not enough data to judge yet: {steps} steps read, the warm-up alone is {need} "
            "steps (eval_steps x 3).",
            steps=steps,
            need=need,
        )
    if not ordered:
        n_config = len(d.config_findings)
        extra = t("; {n} config finding(s) below", n=n_config) if d.config_findings else ""
        wait = t("trends judged after a warm-up of {n} steps", n=d.warmup_steps)
        if d.status == "crashed":  # verdict() says how it ended
            return t(
                "Crashed: no symptom in the metrics before the end ({wait}){extra}.",
                wait=wait,
                extra=extra,
            )
        return t("Healthy: no symptom ({wait}){extra}.", wait=wait, extra=extra)
    ordered = list({f.id: f for f in reversed(ordered)}.values())[::-1]  # episodes: one issue
    if d.status == "healthy" and all(f.severity.value == "info" for f in ordered):
        # info findings (advice for a next run, episodes that passed) change no verdict
        n = len(ordered)
        return t(
            "Healthy: no warning or error (trends judged after a warm-up of {warmup} "
            "steps); nothing to change in this run; {n} info finding{s} "
            "below, for the record and for a next run.",
            warmup=d.warmup_steps,
            n=n,
            s="s" if n > 1 else "",
        )
    counts = {
        s: sum(1 for f in ordered if f.severity.value == s) for s in ("error", "warning", "info")
    }
    tally = t(", ").join(
        t("{n} " + s + ("s" if n > 1 else ""), n=n) for s, n in counts.items() if n
    )
    top = next(
        (f for f in ordered if f.id == (d.patch.from_finding if d.patch else None)), ordered[0]
    )
    if d.patch and d.patch.changes:
        c = d.patch.changes[0]
        todo = (
            t("the one change to make: ")
            + change_text(replace(c, note=None, factor=None)).split(" - ")[0]
        )
    elif all(f.severity.value == "info" and f.cleared_step is not None for f in ordered):
        # engine `settles`
        todo = _at(
            top.cleared_step,
            ax,
            "nothing to change: it passed by step {step}",
            "nothing to change: it passed by epoch {epoch}",
        )
    else:
        advice = rule_text(top.action.advice) if top.action else t("see below")
        todo = t("the one thing to do: ") + advice
    n = len(ordered)
    return t(
        "{n} issue{s} ({tally}); {todo} ({id} {name}).",
        n=n,
        s="s" if n > 1 else "",
        tally=tally,
        todo=todo,
        id=top.id,
        name=top.name,
    )


def _episodes(findings: Sequence[Finding]) -> list[list[Finding]]:
    """Findings grouped by rule id, in the ranked order of each id's first episode: a rule that
    fired, cleared and fired again is one section with its episodes listed."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.id, []).append(f)
    for eps in groups.values():
        eps.sort(key=lambda f: f.onset_step if f.onset_step is not None else -1)
    return list(groups.values())


def _window(window: tuple[int, int], ax: Axis) -> str:
    """An evidence window: its steps, or its epochs and the records (the summaries' numbers)."""
    a, b = window
    if ax.epoch(a) is None or ax.epoch(b) is None:
        return t("steps {a} to {b}", a=a, b=b)
    return t(
        "epochs {ea} to {eb}, records {a} to {b}",
        ea=fmt(ax.epoch(a)),
        eb=fmt(ax.epoch(b)),
        a=a,
        b=b,
    )


_STEP_NUMBER = re.compile(r"\b(?:(steps)|(step))(?= ~?\d)")
_STEP_NUMBER_ZH = re.compile(r"第 (~?\d[\d–\-]*) 步")


def _in_records(summary: str) -> str:
    """A detector's summary on a log that counts epochs: its step numbers are the records'
    (the axis the detectors work on), so "over steps 46–120" reads "over records 46–120"
    (in Chinese, 第 46–120 步 reads 第 46–120 条记录)."""
    summary = _STEP_NUMBER_ZH.sub(r"第 \1 条记录", summary)
    return _STEP_NUMBER.sub(lambda m: "records" if m.group(1) else "record", summary)


def _status(f: Finding, ax: Axis) -> str:
    """The findings table's status of `f`: active, cleared or recovered, and where."""
    if f.cleared_step is None:
        return t("active")
    if f.recovered_from is not None:
        severity = t(f.recovered_from.value)
        epoch = ax.epoch(f.cleared_step)
        if epoch is None:
            return t(
                "recovered at step {step} ({severity} while active)",
                step=f.cleared_step,
                severity=severity,
            )
        return t(
            "recovered at epoch {epoch} ({severity} while active)",
            epoch=fmt(epoch),
            severity=severity,
        )
    return _at(f.cleared_step, ax, "cleared at step {step}", "cleared at epoch {epoch}")


def _cleared(f: Finding, ax: Axis) -> str:
    """The finding line's clause on how the finding ended, "" while it is active."""
    if f.cleared_step is None:
        return ""
    if f.recovered_from is not None:
        severity = t(f.recovered_from.value)
        epoch = ax.epoch(f.cleared_step)
        if epoch is None:
            return t(
                ", recovered at step {step} ({severity} while active): an episode that passed, "
                "reported for the record, with no change to make for it",
                step=f.cleared_step,
                severity=severity,
            )
        return t(
            ", recovered at epoch {epoch} (record {step}; {severity} while active): an episode "
            "that passed, reported for the record, with no change to make for it",
            epoch=fmt(epoch),
            step=f.cleared_step,
            severity=severity,
        )
    return _at(
        f.cleared_step, ax, ", cleared at step {step}", ", cleared at epoch {epoch} (record {step})"
    )


def _span(g: Finding, ax: Axis) -> str:
    """One episode of a finding seen several times: from its onset to where it cleared."""
    epoch, end = ax.epoch(g.onset_step), ax.epoch(g.cleared_step)
    if epoch is None:
        start = t("from step {step}", step=fmt(g.onset_step))
    else:
        start = t("from epoch {epoch}", epoch=fmt(epoch))
    if g.cleared_step is None:
        return start + t(" (active)")
    if end is None or epoch is None:
        return start + t(" to {step} (cleared)", step=g.cleared_step)
    return start + t(" to epoch {epoch} (cleared)", epoch=fmt(end))


def _finding_view(episodes: list[Finding], d: Diagnosis, plots: dict[str, str]) -> dict[str, Any]:
    f = episodes[-1]  # the latest episode carries the most complete evidence
    ax = axis_of(d)
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
                "window": _window(e.window, ax),
                "summary": _in_records(e.summary) if ax.on else e.summary,
            }
        )
        drawn.add(plot)
    return {
        "f": localise_finding(f),
        "first": episodes[0],
        "episodes": [_span(g, ax) for g in episodes],
        "evidence": evidence,
        "status": _status(f, ax),
        "cleared": _cleared(f, ax),
    }


def _curves(d: Diagnosis) -> list[dict[str, Any]]:
    """The headline curves of the run (reward and validation), as sparklines with their ends."""
    ax = axis_of(d)
    out = []
    for metric in ("reward_mean", "val_reward"):
        steps, values = d.series.get(metric, ([], []))
        finite = [
            (s, v) for s, v in zip(steps, values, strict=True) if v is not None and math.isfinite(v)
        ]
        if len(finite) >= 2:
            (sa, a), (sb, b) = finite[0], finite[-1]
            ea, eb = ax.epoch(sa), ax.epoch(sb)
            said = (
                t("{a} at step {sa} → {b} at step {sb}", a=fmt(a), sa=sa, b=fmt(b), sb=sb)
                if ea is None or eb is None
                else t(
                    "{a} at epoch {ea} → {b} at epoch {eb}", a=fmt(a), ea=fmt(ea), b=fmt(b),
                    eb=fmt(eb),
                )
            )
            out.append(
                {
                    "metric": metric,
                    "spark": sparkline(values),
                    "first": finite[0],
                    "last": finite[-1],
                    "said": said,
                }
            )
    return out


# cost entries that count whole steps of a window (advisor.cost): all of it, by construction
_WHOLE_STEPS = frozenset({"after_collapse", "past_best", "past_plateau"})


def _waste_what(e: dict[str, Any], unit: str) -> str:
    """A cost row's waste: its share and what; the steps after a collapse or past the best
    are said as such (their share of their own window is all of it by construction)."""
    if e.get("kind") in _WHOLE_STEPS:
        return t("the " + unit + " that {after}", after=t(steps_after(e)))
    return f"{pct(e['share'])} {t(e['what'])}"


def _cost_view(d: Diagnosis) -> dict[str, Any] | None:
    """The cost table's rows (advisor.cost) as text."""
    cost = d.cost
    if not cost or not cost.get("entries"):
        return None
    rows = []
    na = t("n/a")
    ax = axis_of(d)
    for e in cost["entries"]:
        lo, hi = e["window"]
        rows.append(
            {
                "what": _waste_what(e, "records" if ax.on else "steps"),
                "finding": e["finding"] or "-",
                "steps": ax.span(lo, hi) or f"{lo}-{hi}",
                "wasted": fmt(e["steps"]),
                "of_run": pct(e["of_run"]),
                "time": duration(e["hours"]) if e["hours"] is not None else na,
                "gpu_hours": fmt(round(e["gpu_hours"], 2)) if e["gpu_hours"] is not None else na,
                "cost": money(e["cost"], cost["currency"]) if e["cost"] is not None else na,
            }
        )
    how = []
    if cost.get("run_hours") is None:
        how.append(t("the log has no step time: the waste is in steps (`step_time`, verl's "
                     "`timing_s/step`, gives hours)"))
    elif cost.get("gpus") is None:
        how.append(t("GPU-hours and money need the GPU count: `--gpus N --gpu-hour-price X`"))
    else:
        src = t("the job") if cost.get("gpus_from") == "job" else "`--gpus`"
        how.append(t("{gpus} GPUs (from {src})", gpus=cost["gpus"], src=src))
        if cost.get("gpu_hour_price") is None:
            how.append(t("money needs `--gpu-hour-price X` (and `--currency`)"))
        else:
            how.append(t("{price} a GPU-hour",
                         price=money(cost["gpu_hour_price"], cost["currency"])))
    return {
        "rows": rows,
        "how": how,
        "priced": cost.get("gpu_hour_price") is not None,
        "epochs": ax.on,  # the windows are epochs, the counts records
    }


def _checkpoint_view(d: Diagnosis) -> dict[str, str] | None:
    """The checkpoint advice, and its table's best and published points: in epochs on a log
    that counts them (the advice's step numbers are then records)."""
    ckpt = d.checkpoint
    if not ckpt:
        return None
    ax = axis_of(d)
    advice = str(ckpt.get("advice", ""))
    advice = _in_records(advice) if ax.on else advice
    if "best_step" not in ckpt:
        return {"advice": advice}

    def at(step: Any) -> str:
        epoch = ax.epoch(step)
        if epoch is None:
            return fmt(step)
        return t("epoch {epoch} (record {step})", epoch=fmt(epoch), step=step)

    return {
        "advice": advice,
        "best": at(ckpt["best_step"]),
        "publish": at(ckpt.get("publish_step")),
    }


def _run_view(d: Diagnosis) -> dict[str, str]:
    """The Run section's warm-up, and where the run ended."""
    ax = axis_of(d)
    run, n = d.run, d.warmup_steps
    view = {"warmup": "", "ending": ""}
    if n:
        epoch = ax.epoch((run.first_step or 1) + n - 1) if run is not None else None
        view["warmup"] = (
            t("warm-up (trends judged after it; levels, collapses and NaNs from the first "
              "step): first {n} steps", n=n)
            if epoch is None
            else t("warm-up (trends judged after it; levels, collapses and NaNs from the first "
                   "record): first {n} records, to epoch {epoch}", n=n, epoch=fmt(epoch))
        )
    if run is not None and run.ending is not None and run.ending.step is not None:
        view["ending"] = _at(
            run.ending.step, ax, "at step {step}", "at epoch {epoch} (record {step})"
        )
    return view


def _forecast_view(d: Diagnosis) -> list[str]:
    """The forecasts as sentences; on a log that counts epochs the steps are records (a step
    beyond the last record has no epoch the log printed)."""
    out = []
    unit = "record" if axis_of(d).on else "step"
    for f in d.forecasts:
        lo, hi = f["interval"]
        text = t(
            "`{metric}` ({finding}) reaches {what} ({threshold}) at " + unit + " ~{step} "
            "({level}% interval {lo}-{hi})",
            metric=f["metric"], finding=f["finding"], what=t(f["threshold_is"]),
            threshold=fmt(f["threshold"]), step=f["step"], level=fmt(f["level"]), lo=lo, hi=hi,
        )
        if "hours" in f:
            h0, h1 = f["hours_interval"]
            text += t(", {time} after the last step ({t0} to {t1})", time=duration(f["hours"]),
                      t0=duration(h0), t1=duration(h1))
        scale = t("log-linear") if f["scale"] == "log" else t("linear")
        text += t("; a {scale} fit on {n} points from " + unit + " {start}, R² {r2}.", scale=scale,
                  n=f["points"], start=f["fit_from"], r2=fmt(f["r2"]))
        out.append(text)
    return out


def render_markdown(
    d: Diagnosis,
    out_dir: Path | None = None,
    stem: str = "report",
    charts: dict[str, str] | None = None,
) -> str:
    """The report; its charts drawn into `out_dir` (or into `charts`, file name -> SVG, to be
    written beside the report in `out_dir` by the caller: see plots.draw)."""
    plots: dict[str, str] = dict(d.plots)
    if out_dir is not None and d.findings:
        plots.update(draw(d, Path(out_dir), stem, charts))
    view = {
        "d": d,
        "verdict": verdict(d),
        "findings": [_finding_view(eps, d, plots) for eps in _episodes(d.findings)],
        "diff": diff_lines(d.patch.changes, d.framework) if d.patch else [],
        "framework": d.framework,
        "ckpt": d.checkpoint,
        "curves": _curves(d),
        "config_findings": [localise_config(c) for c in d.config_findings],
        "cost": _cost_view(d),
        "forecasts": _forecast_view(d),
        "ckpt_at": _checkpoint_view(d),
        "run_said": _run_view(d),
    }
    return render(TEMPLATES[0], **view)
