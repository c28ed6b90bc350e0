"""The price of waste: how much of a run's compute taught nothing, in steps, hours, GPU-hours
and money.

A measurement over the run's own curves, not a judgement: it adds no finding and changes no
severity. Each entry is one kind of waste:

- `all_alike_groups`: groups whose samples all scored alike (`zero_std_frac`, TRL's
  `frac_reward_zero_std`) have zero advantage, so their rollouts add nothing to the gradient;
  each logged step wastes that share of its compute.
- `zero_gradient`: steps whose `grad_norm` is exactly 0 moved nothing; the whole step is lost.
- `truncated`: completions cut at the length limit (`truncation_rate`) while a truncation
  finding is active; their tokens were generated up to the limit for an answer that never
  ended.
- `after_collapse`: every step after the onset of a collapse (DIV, NAN, P4) the run did not
  recover from, to its end (or to where it cleared).
- `past_best`: the steps after the best validation checkpoint of a plateau or an overfit run
  (P1, P6 active); `past_plateau`: without a validation reward, the steps after the onset of
  the plateau.

Each step's cost is its logged step time (`step_time`: verl's `timing_s/step`, TRL's
`step_time`, the tqdm bar's s/it) times the steps it stands for (a log every N steps stands
for N); where no step time is logged the entries are in steps only. GPU-hours need the GPU
count: `--gpus`, or the job's own (`n_gpus_*` x `nnodes_*` when the job file or the log set
them); money needs `--gpu-hour-price`. The entries may overlap (a zero-gradient step is also
one whose groups all scored alike): they are never summed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from advisor import lazy
from advisor.types import Diagnosis, Finding, InputError, Run

# the findings whose active episode makes each kind of waste (rulebook ids)
COLLAPSES = ("DIV", "NAN", "P4")
PLATEAUS = ("P1", "P6")
TRUNCATION = ("P9",)

# the metrics of a training step (a row with none of them is an evaluation's)
TRAINING = (
    "grad_norm", "reward_mean", "loss", "entropy", "kl_ref", "ppo_kl", "step_time",
    "zero_std_frac", "truncation_rate", "response_length",
)  # fmt: skip
# what each collapse is called when the steps after it are counted
COLLAPSE_SAID = {
    "DIV": "the divergence",
    "NAN": "the first non-finite metrics",
    "P4": "the entropy collapse",
}
# what each entry says a wasted unit is
WHAT = {
    "all_alike_groups": "of the rollouts were in groups whose samples all scored alike",
    "zero_gradient": "of the steps had a gradient of exactly 0",
    "truncated": "of the completions were cut at the length limit",
    "after_collapse": "of the steps came after the collapse",
    "past_best": "of the steps came after the best checkpoint",
    "past_plateau": "of the steps came after the reward stopped improving",
}


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Steps:
    """The run's logged training steps (numpy arrays): each step number, the steps it stands
    for (the gap to the previous logged step; the first: its own number, at most the usual
    gap) and its seconds per step (NaN where not logged)."""

    step: Any
    weight: Any
    seconds: Any

    @classmethod
    def of(cls, steps: Any, seconds: Any = None) -> Steps:
        from advisor.detectors.series import median  # np.median's, without numpy.ma

        np = lazy.numpy
        st = np.asarray(steps, dtype=np.int64)
        n = len(st)
        secs = np.full(n, np.nan) if seconds is None else np.asarray(seconds, dtype=float)
        secs = np.where(np.isfinite(secs), secs, np.nan)
        if n == 0:
            return cls(st, np.zeros(0), secs)
        gaps = np.diff(st).astype(float)
        positive = gaps[gaps > 0]
        usual = median(positive) if len(positive) else 1.0
        # the first log stands for the steps since the run's start (TRL's first log at step
        # 10 for 10), at most a usual gap: its weight does not depend on how the rest is
        # sampled (the online Advisor's thinned history gives the same)
        first = min(max(float(st[0]), 1.0), usual)
        weight = np.concatenate([[first], np.where(gaps > 0, gaps, 0.0)])
        return cls(st, weight, secs)

    def timed(self) -> bool:
        return bool(lazy.numpy.isfinite(self.seconds).any())

    def step_seconds(self) -> Any:
        """Each logged step's seconds, gaps filled with the run's median step time."""
        from advisor.detectors.series import median  # np.median's, without numpy.ma

        np = lazy.numpy
        known = self.seconds[np.isfinite(self.seconds)]
        fill = median(known) if len(known) else math.nan
        return np.where(np.isfinite(self.seconds), self.seconds, fill)


def wasted(
    steps: Steps, share: Any, lo: int | None = None, hi: int | None = None
) -> dict[str, float] | None:
    """The waste of `share` (each logged step's wasted fraction, 0..1; None or NaN: not
    logged) over the steps `lo`..`hi` (inclusive; None: the run's ends): the steps it stands
    for and the seconds, with the share of that window and of the whole run. None when no
    step of the window logged the share."""
    np = lazy.numpy
    x = np.asarray(share, dtype=float)
    ok = np.isfinite(x)
    if lo is not None:
        ok &= steps.step >= lo
    if hi is not None:
        ok &= steps.step <= hi
    if not ok.any():
        return None
    w = steps.weight[ok]
    if lo is not None:  # a log stands for no step before the window
        w = np.minimum(w, (steps.step[ok] - lo + 1).astype(float))
    x = np.clip(x[ok], 0.0, 1.0)
    w_all = float(w.sum())
    if w_all <= 0:
        return None
    w_steps = float((w * x).sum())
    run_steps = float(steps.weight.sum())
    timed = steps.timed()
    if timed:
        secs = steps.step_seconds()
        run_secs = float((steps.weight * secs).sum())
        ws = w * secs[ok]
        w_sum, w_secs = float(ws.sum()), float((ws * x).sum())
    else:
        run_secs = w_sum = w_secs = math.nan
    return {
        "steps": w_steps,
        "share": w_secs / w_sum if timed and w_sum > 0 else w_steps / w_all,
        "of_run": w_secs / run_secs if timed and run_secs > 0 else w_steps / run_steps,
        "hours": w_secs / 3600 if timed else math.nan,
        "run_hours": run_secs / 3600 if timed else math.nan,
    }


def gpus_of_job(
    hp: Mapping[str, Any], origin: Mapping[str, str] | None, framework: str
) -> int | None:
    """The job's GPU count when the job file or the log set it (not a default): verl's
    trainer.n_gpus_per_node x trainer.nnodes (rollout shares those GPUs); the platform's
    rollout GPUs x nodes plus training GPUs x nodes."""
    names = ("n_gpus_rollout", "nnodes_rollout", "n_gpus_training", "nnodes_training")
    said = {k for k in names if (origin or {}).get(k, "default") != "default"}
    if not said & {"n_gpus_training", "n_gpus_rollout"}:
        return None

    def num(k: str) -> int:
        v = hp.get(k)
        return int(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else 0

    if framework == "verl":
        total = num("n_gpus_training") * max(num("nnodes_training"), 1)
    elif framework == "platform":
        total = num("n_gpus_rollout") * max(num("nnodes_rollout"), 1) + num(
            "n_gpus_training"
        ) * max(num("nnodes_training"), 1)
    else:
        return None  # TRL's process count is accelerate's, not in the job
    return total or None


def _column(run: Run, metric: str) -> Any:
    """The metric's values as floats (NaN where not logged), or None when it is not a number."""
    if metric not in run.frame.columns:
        return None
    col = run.frame.get_column(metric)
    if not col.dtype.is_numeric():
        return None
    return col.cast(lazy.polars.Float64).fill_null(math.nan).to_numpy()


def _entry(
    kind: str, finding: str | None, window: tuple[int, int], got: dict[str, float], unit: str
) -> dict[str, Any]:
    return {
        "kind": kind,
        "finding": finding,
        "what": WHAT[kind],
        "unit": unit,
        "window": list(window),
        "share": round(got["share"], 4),
        "of_run": round(got["of_run"], 4),
        "steps": round(got["steps"], 1),
        "hours": None if math.isnan(got["hours"]) else round(got["hours"], 6),
        "gpu_hours": None,
        "cost": None,
    }


def _active(findings: Sequence[Finding], ids: Sequence[str]) -> Finding | None:
    """The latest episode of one of `ids` still active at the run's end."""
    for f in reversed(findings):
        if f.id in ids and f.cleared_step is None and f.onset_step is not None:
            return f
    return None


def of_run(
    run: Run,
    findings: Sequence[Finding],
    checkpoint: Mapping[str, Any] | None = None,
    gpus: int | None = None,
    gpus_from: str | None = None,
) -> dict[str, Any] | None:
    """The waste entries of a run (see the module doc), or None when nothing was wasted."""
    if "step" not in run.frame.columns or run.frame.height == 0:
        return None
    frame = run.frame
    # a row with none of the training metrics (verl's validation before step 1, an online
    # history's edge) is no training step
    cols = [c for c in TRAINING if c in frame.columns]
    if cols:
        pl = lazy.polars
        frame = frame.filter(pl.any_horizontal([pl.col(c).is_not_null() for c in cols]))
        if frame.height == 0:
            return None
    run = dataclasses.replace(run, frame=frame) if frame is not run.frame else run
    np = lazy.numpy
    step_col = run.frame.get_column("step").cast(lazy.polars.Int64)
    steps = Steps.of(step_col.to_numpy(), _column(run, "step_time"))
    first, last = int(steps.step[0]), int(steps.step[-1])
    entries: list[dict[str, Any]] = []
    waste_f = _active(findings, ("WASTE",))
    waste_id = waste_f.id if waste_f is not None else None

    zsf = _column(run, "zero_std_frac")
    if zsf is not None and bool((zsf > 0).any()):
        got = wasted(steps, zsf)
        if got is not None and got["steps"] > 0:
            entries.append(_entry("all_alike_groups", waste_id, (first, last), got, "rollouts"))
    grad = _column(run, "grad_norm")
    if grad is not None and bool((grad == 0.0).any()):
        zero = np.where(np.isfinite(grad), (grad == 0.0).astype(float), np.nan)
        got = wasted(steps, zero)
        if got is not None:
            entries.append(_entry("zero_gradient", waste_id, (first, last), got, "steps"))
    trunc_f = _active(findings, TRUNCATION)
    trunc = _column(run, "truncation_rate")
    if trunc_f is not None and trunc is not None:
        lo = trunc_f.onset_step or first
        got = wasted(steps, trunc, lo, last)
        if got is not None and got["steps"] > 0:
            entries.append(_entry("truncated", trunc_f.id, (lo, last), got, "completions"))
    ones = np.ones(len(steps.step))
    collapse = _active(findings, COLLAPSES)
    if collapse is not None and collapse.onset_step is not None and collapse.onset_step <= last:
        lo = max(collapse.onset_step, first)
        got = wasted(steps, ones, lo, last)
        if got is not None:
            e = _entry("after_collapse", collapse.id, (lo, last), got, "steps")
            e["what"] = f"of the steps came after {COLLAPSE_SAID[collapse.id]}"
            entries.append(e)
    plateau = _active(findings, PLATEAUS)
    if plateau is not None:
        best = (checkpoint or {}).get("best_step")
        kind = "past_best" if isinstance(best, int) else "past_plateau"
        start = best + 1 if isinstance(best, int) else plateau.onset_step
        if start is not None and start <= last:
            got = wasted(steps, ones, max(start, first), last)
            if got is not None:
                window = (max(start, first), last)
                entries.append(_entry(kind, plateau.id, window, got, "steps"))
    if not entries:
        return None
    timed = steps.timed()
    run_hours = float((steps.weight * steps.step_seconds()).sum()) / 3600 if timed else None
    out = {
        "entries": entries,
        "run_steps": round(float(steps.weight.sum()), 1),
        "run_hours": round(run_hours, 4) if run_hours is not None else None,
        "step_time_from": "step_time" if timed else None,
        "gpus": None,
        "gpus_from": None,
        "gpu_hour_price": None,
        "currency": None,
        "overlap": "entries may count the same steps; they are not summed",
    }
    return priced(out, gpus, gpus_from)


def priced(
    cost: dict[str, Any],
    gpus: int | None = None,
    gpus_from: str | None = None,
    price: float | None = None,
    currency: str | None = None,
) -> dict[str, Any]:
    """`cost` with GPU-hours (hours x GPUs) and money (GPU-hours x price) where the GPU count,
    the price and the step times allow; a value not given keeps the one `cost` has."""
    gpus = gpus if gpus is not None else cost.get("gpus")
    price = price if price is not None else cost.get("gpu_hour_price")
    out = dict(cost)
    out["gpus"] = gpus
    if gpus_from is not None:
        out["gpus_from"] = gpus_from
    out["gpu_hour_price"] = price
    out["currency"] = currency if currency is not None else cost.get("currency")
    if price is not None and out["currency"] is None:
        out["currency"] = "USD"
    out["entries"] = []
    for e in cost["entries"]:
        e = dict(e)
        hours = e.get("hours")
        e["gpu_hours"] = round(hours * gpus, 4) if hours is not None and gpus else None
        e["cost"] = (
            round(e["gpu_hours"] * price, 2) if e["gpu_hours"] is not None and price else None
        )
        out["entries"].append(e)
    return out


def with_price(
    d: Diagnosis, gpus: int | None, price: float | None, currency: str | None
) -> Diagnosis:
    """The diagnosis with the cost priced at the user's `--gpus`, `--gpu-hour-price`,
    `--currency` (flags over what the job said)."""
    check_price(gpus, price, currency)
    if d.cost is None or (gpus is None and price is None and currency is None):
        return d
    return dataclasses.replace(
        d,
        cost=priced(d.cost, gpus, "--gpus" if gpus is not None else None, price, currency),
    )


def check_price(gpus: int | None, price: float | None, currency: str | None) -> None:
    """Refuse a GPU count, price or currency that cannot price anything (one line, exit 2)."""
    if gpus is not None and gpus < 1:
        raise InputError(f"--gpus: expected a positive integer, got {gpus}")
    if price is not None and not (math.isfinite(price) and price >= 0):
        raise InputError(f"--gpu-hour-price: expected a price of 0 or more, got {price}")
    if currency is not None and not currency.strip():
        raise InputError("--currency: expected a currency name (USD, EUR, CNY ...), got ''")
