"""Forecasts: when a trend still under way (entropy sinking, KL rising, length growing) crosses
its threshold, with an interval, said only when the fit is good enough.

For each finding active at the run's end whose evidence is on one of the trend metrics, the
points from the evidence's window start to the run's end are fitted by least squares: entropy
and KL on a log scale (they sink and grow by factors), the length on its own scale. The fit is
good enough when it has at least `MIN_POINTS` points, explains at least `MIN_R2` of their
variance (R^2), slopes toward the threshold, and the crossing falls within `MAX_AHEAD` times
the fitted span past the run's end (no far extrapolation). The interval is a residual
bootstrap (`DRAWS` refits of the line on its fitted values plus resampled residuals, seeded:
the same run gives the same interval): the 10th and 90th percentiles of the crossing step,
said only when at least 90 % of the draws cross at all. A time is added where the run logs
its step time (the median of its last points).

Thresholds come from the rulebook: entropy its `entropy_floor` condition, kl_ref the level of
P3 (kl-explosion) for the job's algorithm; the response length its limit (the job's
max_length, less max_prompt_length when the job sets it), when the job or the log set it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from advisor import lazy
from advisor.types import Finding, Run

MIN_POINTS = 6
MIN_R2 = 0.8
MAX_AHEAD = 2.0
DRAWS = 400
LEVEL = (10.0, 90.0)  # the interval's percentiles
SEED = 0

# metric -> (direction, log scale)
TRENDS: dict[str, tuple[str, bool]] = {
    "entropy": ("down", True),
    "kl_ref": ("up", True),
    "response_length": ("up", False),
}


def targets(
    rules: Any, algorithm: str | None, hp: Mapping[str, Any], origin: Mapping[str, str] | None
) -> dict[str, tuple[float, str]]:
    """metric -> (threshold, what it is), from the rulebook and the job."""
    out: dict[str, tuple[float, str]] = {}
    floor = rules.conditions.get("entropy_floor")
    leaf = getattr(floor, "when", None)
    if leaf is not None and getattr(leaf, "metric", None) == "entropy":
        out["entropy"] = (float(_pick(leaf.params["value"], algorithm)), "the entropy floor")
    p3 = rules.by_id.get("P3")
    for node in _leaves(p3.when if p3 is not None else None):
        if node.detector == "above" and node.metrics == ["kl_ref"]:
            value = float(_pick(node.params["value"], algorithm))
            if value > 0:
                out["kl_ref"] = (value, "P3's KL level")
                break
    said = origin or {}
    limit = hp.get("max_length")
    if (
        isinstance(limit, int | float)
        and _num(limit)
        and said.get("max_length", "default") != "default"
    ):
        prompt = hp.get("max_prompt_length")
        budget = float(limit)
        if (
            isinstance(prompt, int | float)
            and _num(prompt)
            and said.get("max_prompt_length", "default") != "default"
            and 0 < float(prompt) < budget
        ):
            budget -= float(prompt)
        out["response_length"] = (budget, "the response length limit")
    return out


def forecasts(
    run: Run, findings: Sequence[Finding], goals: Mapping[str, tuple[float, str]]
) -> list[dict[str, Any]]:
    """One forecast per trend metric of an active finding whose fit is good enough."""
    out: list[dict[str, Any]] = []
    done: set[str] = set()
    for f in findings:
        if f.cleared_step is not None:
            continue
        for e in f.evidence:
            if e.metric in done or e.metric not in TRENDS or e.metric not in goals:
                continue
            steps, values = _points(run, e.metric, e.window[0])
            got = crossing(steps, values, goals[e.metric][0], *TRENDS[e.metric])
            if got is None:
                continue
            done.add(e.metric)
            got.update(
                finding=f.id,
                metric=e.metric,
                threshold=goals[e.metric][0],
                threshold_is=goals[e.metric][1],
                direction=TRENDS[e.metric][0],
            )
            secs = _step_seconds(run)
            if secs is not None:
                ahead = got["step"] - got["last_step"]
                got["hours"] = round(ahead * secs / 3600, 3)
                got["hours_interval"] = [
                    round(max(s - got["last_step"], 0) * secs / 3600, 3) for s in got["interval"]
                ]
            out.append(got)
    return out


def crossing(
    steps: Sequence[float],
    values: Sequence[float],
    threshold: float,
    direction: str,
    log: bool,
) -> dict[str, Any] | None:
    """When the line fitted to (steps, values) crosses `threshold` going `direction`, with its
    bootstrap interval and R^2; None when the fit is not good enough (see the module doc)."""
    np = lazy.numpy
    x = np.asarray(steps, dtype=float)
    y = np.asarray(values, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if log:
        ok &= y > 0
        if threshold <= 0:
            return None
    x, y = x[ok], y[ok]
    if len(x) < MIN_POINTS or np.ptp(x) <= 0:
        return None
    last_value = float(y[-1])
    if (direction == "down" and last_value <= threshold) or (
        direction == "up" and last_value >= threshold
    ):
        return None  # already past it: nothing to forecast
    t = math.log(threshold) if log else threshold
    z = np.log(y) if log else y
    slope, icpt = np.polyfit(x, z, 1)
    fitted = slope * x + icpt
    resid = z - fitted
    ss_tot = float(np.sum((z - z.mean()) ** 2))
    if ss_tot <= 0:
        return None
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot
    toward = slope < 0 if direction == "down" else slope > 0
    if r2 < MIN_R2 or not toward:
        return None
    last = float(x[-1])
    step = (t - icpt) / slope
    span = float(np.ptp(x))
    if not math.isfinite(step) or step > last + MAX_AHEAD * span:
        return None
    step = max(step, last)
    rng = np.random.default_rng(SEED)
    picks = rng.integers(0, len(x), size=(DRAWS, len(x)))
    zs = fitted[None, :] + resid[picks]
    xm = x - x.mean()
    slopes = (zs - zs.mean(axis=1, keepdims=True)) @ xm / float(xm @ xm)
    icpts = zs.mean(axis=1) - slopes * x.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (t - icpts) / slopes
    good = np.isfinite(cross) & ((slopes < 0) if direction == "down" else (slopes > 0))
    if good.mean() < 0.9:
        return None
    lo, hi = np.percentile(cross[good], LEVEL)
    lo, hi = max(float(lo), last), max(float(hi), last)
    return {
        "step": round(step),
        "interval": [math.floor(lo), math.ceil(hi)],
        "level": LEVEL[1] - LEVEL[0],
        "r2": round(r2, 3),
        "points": len(x),
        "fit_from": int(x[0]),
        "last_step": int(last),
        "scale": "log" if log else "linear",
    }


def _points(run: Run, metric: str, start: int) -> tuple[list[float], list[float]]:
    frame = run.frame
    if metric not in frame.columns or "step" not in frame.columns:
        return [], []
    steps = frame.get_column("step").to_list()
    col = frame.get_column(metric).to_list()
    pairs = [
        (float(s), float(v))
        for s, v in zip(steps, col, strict=True)
        if s is not None and v is not None and s >= start
    ]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _step_seconds(run: Run) -> float | None:
    """The median of the run's last logged step times (at most 20), or None."""
    if "step_time" not in run.frame.columns:
        return None
    known = [
        float(v)
        for v in run.frame.get_column("step_time").to_list()
        if v is not None and math.isfinite(float(v)) and float(v) > 0
    ][-20:]
    if not known:
        return None
    known.sort()
    n = len(known)
    return known[n // 2] if n % 2 else (known[n // 2 - 1] + known[n // 2]) / 2


def _pick(value: Any, algorithm: str | None) -> Any:
    return value.pick(algorithm) if hasattr(value, "pick") else value


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _leaves(node: Any) -> list[Any]:
    if node is None:
        return []
    if hasattr(node, "detector"):
        return [node]
    out: list[Any] = []
    for key in ("all", "any"):
        for child in getattr(node, key, None) or []:
            out.extend(_leaves(child))
    inner = getattr(node, "not_", None) or getattr(node, "node", None)
    if inner is not None and not isinstance(inner, list):
        out.extend(_leaves(inner))
    return out
