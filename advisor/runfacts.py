"""What a run's log shows beyond the symptom metrics, for the remedy's wording and sizing.

TRL logs per reward function `rewards/<func>/mean` and `/std` and the length of the answers
that finished (`completions/mean_terminated_length`); verl logs its peak memory and the
rollout/training probability gap. None of these decides a finding (the engine does that);
they make the advice concrete: which reward function is constant, how large a new completion
cap should be, how close to the card's memory the run was, whether the precision mismatch
the NAN fallback names is there.
"""

from __future__ import annotations

import math
import re
from typing import Any

from advisor import lazy
from advisor.types import Run

_REWARD_FUNC = re.compile(r"^(?:train/)?rewards/(.+)/(mean|std)$")
_TAIL = 0.25  # the last quarter of the run: what the next run starts from


def _tail(values: list[Any]) -> list[float]:
    return _last_quarter(
        [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
    )


def _last_quarter(finite: list[float]) -> list[float]:
    n = max(1, math.ceil(len(finite) * _TAIL)) if finite else 0
    return finite[-n:] if n else []


def _median(xs: list[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _column(run: Run, name: str) -> list[Any] | None:
    if name not in run.frame.columns or not run.frame.get_column(name).dtype.is_numeric():
        return None
    return run.frame.get_column(name).to_list()


def run_facts(run: Run) -> dict[str, Any]:
    """The facts of `run` the remedy and the advice use (absent when the log has none)."""
    out: dict[str, Any] = {}
    for name in ("terminated_length", "completions/mean_terminated_length"):
        col = _column(run, name)
        if col is not None:
            m = _median(_tail(col))
            if m is not None:
                out["terminated_length"] = m
            break
    cap = run.config_hints.get("max_response_length")
    if isinstance(cap, int) and not isinstance(cap, bool):
        out["response_cap"] = cap
    funcs: dict[str, dict[str, str]] = {}
    for name in run.frame.columns:
        hit = _REWARD_FUNC.match(name)
        if hit:
            funcs.setdefault(hit.group(1), {})[hit.group(2)] = name
    for func, cols in sorted(funcs.items()):
        std = _tail(_column(run, cols["std"]) or []) if "std" in cols else []
        mean = _tail(_column(run, cols["mean"]) or []) if "mean" in cols else []
        flat_std = bool(std) and max(abs(x) for x in std) < 1e-6
        flat_mean = len(mean) >= 2 and max(mean) - min(mean) < 1e-6
        if flat_std or (not std and flat_mean):
            out.setdefault("constant_rewards", {})[func] = mean[-1] if mean else None
    if funcs:
        out["reward_functions"] = sorted(funcs)
    for key, name in (
        ("memory_gb", "memory_gb"),
        ("memory_gb", "perf/max_memory_allocated_gb"),
    ):
        col = _column(run, name)
        if col is not None and "memory_gb" not in out:
            finite = [float(v) for v in col if isinstance(v, int | float) and math.isfinite(v)]
            if finite:
                out[key] = max(finite)
    for name in ("rollout_probs_diff", "training/rollout_probs_diff_mean"):
        col = _column(run, name)
        if col is not None:
            finite = [float(v) for v in col if isinstance(v, int | float) and math.isfinite(v)]
            if finite:
                out["rollout_probs_diff"] = max(finite)
            break
    temperature = run.config_hints.get("temperature")
    if isinstance(temperature, int | float) and not isinstance(temperature, bool):
        out["temperature"] = float(temperature)  # the rollout's sampling temperature
    rollouts = run.config_hints.get("n_rollouts")
    if isinstance(rollouts, int) and not isinstance(rollouts, bool):
        out["n_rollouts"] = rollouts  # samples a prompt (a group's size)
    out.update(motion_facts(run))
    return out


# A collapse as the sizing reads it: entropy x3 off its first level either way and 0.5 nats
# from it (DIV's own `from_start` test: garbage output, or one fixed answer).
_BREAK_RATIO, _BREAK_ABS = 3.0, 0.5
# Thrown off and back: entropy at half its first point early on, back within 5 % at the end.
_THROWN, _BACK = 0.5, 0.05


def _finite_points(run: Run, name: str) -> list[tuple[int, float]]:
    """(step, value) of each row where both are logged and the value is a finite number."""
    frame = run.frame
    if name not in frame.columns or "step" not in frame.columns:
        return []
    col = frame.get_column(name)
    if not (col.dtype.is_float() or col.dtype.is_integer()):
        return []  # (a Decimal column's values are no float)
    values = col.cast(lazy.polars.Float64)
    keep = frame.get_column("step").is_not_null() & values.is_finite()  # (null: dropped)
    steps = frame.get_column("step").filter(keep).to_list()
    return list(zip(steps, values.filter(keep).to_list(), strict=True))


def motion_facts(run: Run) -> dict[str, Any]:
    """How far the policy moved, the measures a step is sized from (rulebook `size`):

    - `kl_ref_median`: the median KL to the reference over the run (KL an update makes grows
      ~ with the square of the step, so its ratio to a healthy level sizes the lr);
    - `kl_ref_series`: the run's KL to the reference in step order (the adaptive KL
      controller's replay);
    - `entropy_moved`: how far entropy moved from its start, relative (the last quarter's
      median against the first three points'), for a run that logs no KL;
    - `collapse_frac`: the step where entropy broke off its first level (x3 either way and
      0.5 nats), as a fraction of the run's last step;
    - `thrown_back`: entropy fell to half its first point or less within the first tenth of
      the run and its last quarter is back within 5 % of that point: the first updates threw
      the policy off and it drifted back to where it started (the step of the low point, as a
      fraction of the run's last step).
    """
    out: dict[str, Any] = {}
    kl = _finite_points(run, "kl_ref")
    if kl:
        values = [v for _, v in kl]
        out["kl_ref_median"] = _median(values)
        out["kl_ref_series"] = values
    ent = _finite_points(run, "entropy")
    last = run.info().last_step
    if len(ent) >= 4:
        start = _median([v for _, v in ent[:3]])
        tail = _median(_last_quarter([v for _, v in ent]))  # (finite floats already)
        if start is not None and tail is not None and start > 0:
            out["entropy_moved"] = abs(tail - start) / start
        e0 = ent[0][1]
        early = [(step, v) for step, v in ent[1:] if last and step <= 0.1 * last]
        if early and last and tail is not None and e0 > 0 and abs(tail - e0) <= _BACK * e0:
            step, low = min(early, key=lambda sv: sv[1])
            if low <= e0 * _THROWN:
                out["thrown_back"] = max(step, 1) / last
        for step, v in ent[1:]:
            far = v >= e0 * _BREAK_RATIO or v <= e0 / _BREAK_RATIO
            if far and abs(v - e0) >= _BREAK_ABS and last:
                out["collapse_frac"] = max(step, 1) / last
                break
    return out


def concrete_fallback(finding_id: str, facts: dict[str, Any]) -> str | None:
    """A sentence that makes a rule's fallback concrete with what the run showed."""
    if finding_id == "P1" and facts.get("constant_rewards"):
        names = ", ".join(
            f"{f} (always {v:g})" if isinstance(v, float) else f
            for f, v in facts["constant_rewards"].items()
        )
        return (
            f"The log shows which: rewards/<func> is constant for {names}; start with "
            f"{'that function' if len(facts['constant_rewards']) == 1 else 'those functions'}."
        )
    if finding_id == "NAN" and "rollout_probs_diff" in facts:
        gap = facts["rollout_probs_diff"]
        verdict = "a mismatch to fix first" if gap > 0.01 else "within the normal range"
        return f"The run's training/rollout_probs_diff_mean reached {gap:.3g} ({verdict})."
    if finding_id == "OOM" and "memory_gb" in facts:
        return f"Peak memory allocated in the log: {facts['memory_gb']:.1f} GB."
    return None
