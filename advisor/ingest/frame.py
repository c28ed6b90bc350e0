"""Raw rows (file order) -> the canonical frame every later stage reads.

Readers hand over a polars frame with a `step` column and the raw metric columns, one row per
logged record in file order. This module makes it one row per step, sorted, Float64, with the
canonical columns of contract.md added in front of the originals. Repeated steps are never
averaged: a resumed run rewrites the steps after its checkpoint, so the later row wins, and the
reader's warnings say so.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from advisor import lazy
from advisor.ingest import names
from advisor.types import CANONICAL_METRICS, InputError, Run, RunEnding

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

_EVAL_PREFIXES = ("val-core/", "val-aux/", "val/", "validation/", "eval_", "eval/", "eval-")


# bookkeeping columns that every record carries: they do not make a row a training row
_BOOKKEEPING = frozenset(
    {"epoch", "_runtime", "_timestamp", "_step", "global_step", "train/global_step",
     "train/epoch", "step_original", "timestamp", "training/epoch", "training/global_step"}
)  # fmt: skip


def is_eval_key(key: str) -> bool:
    """True for validation/evaluation metrics (logged at their own cadence, merged by step)."""
    return key.startswith(_EVAL_PREFIXES) or names.val_rank(key) is not None


def flatten_keys(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict as one level: {"actor": {"kl": x}} -> {"actor/kl": x} (the metric names
    verl and W&B write flat)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten_keys(v, f"{prefix}{k}/"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def to_float_frame(df: pl.DataFrame) -> pl.DataFrame:
    """`step` as Int64, every other column Float64; text columns that hold no number are dropped."""
    pl = lazy.polars

    if "step" not in df.columns:
        raise InputError("internal: reader produced no step column")
    schema = df.schema
    if schema["step"] == pl.Int64 and all(
        t == pl.Float64 for n, t in schema.items() if n != "step"
    ):
        return df  # the common case: nothing to cast, and a 150-column select is not free
    exprs = [pl.col("step").cast(pl.Float64, strict=False).cast(pl.Int64, strict=False)]
    for name, dtype in df.schema.items():
        if name == "step":
            continue
        if dtype == pl.Float64:
            exprs.append(pl.col(name))
        elif dtype.is_numeric() or dtype == pl.Boolean or dtype == pl.Null:
            exprs.append(pl.col(name).cast(pl.Float64))
        elif dtype == pl.String:
            exprs.append(pl.col(name).str.strip_chars().cast(pl.Float64, strict=False))
    out = df.select(exprs)
    # a text column that held no number at all (run names, tags) is not a metric
    text_cols = [n for n, t in df.schema.items() if t == pl.String and n != "step"]
    if text_cols:
        counts = out.select(pl.col(text_cols).count()).row(0)
        dead = [n for n, c in zip(text_cols, counts, strict=True) if c == 0]
        out = out.drop(dead)
    return out


def _ranges(steps: list[int]) -> str:
    """[101, 102, 103, 110] -> '101-103, 110'."""
    parts: list[str] = []
    start = prev = steps[0]
    for s in [*steps[1:], None]:
        if s is not None and s == prev + 1:
            prev = s
            continue
        parts.append(f"{start}-{prev}" if prev != start else f"{start}")
        if s is not None:
            start = prev = s
    return ", ".join(parts[:5]) + (" ..." if len(parts) > 5 else "")


def _train_mask(df: pl.DataFrame) -> np.ndarray:
    """Rows that hold a training metric (a validation-only row shares its step legitimately)."""
    np = lazy.numpy
    pl = lazy.polars

    train_cols = [
        c for c in df.columns if c != "step" and c not in _BOOKKEEPING and not is_eval_key(c)
    ]
    if not train_cols:
        return np.ones(df.height, dtype=bool)
    mask = df.select_seq(pl.any_horizontal(pl.col(train_cols).is_not_null())).to_series()
    return mask.to_numpy()


def _restarts(df: pl.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Rows to keep, and what happened. A training row whose step is not above every earlier
    training step starts a new attempt (a resume from a checkpoint, or a restart from scratch):
    the trainer threw away what the earlier attempt logged from that step on, so do we."""
    np = lazy.numpy

    steps = df["step"].to_numpy()
    train = _train_mask(df)
    rows = np.flatnonzero(train)
    # A training row restarts when its step is not above the best since the last restart
    # (one pass); every earlier row at or above a later restart's step is dropped, so a row is
    # kept when no later restart is at or below its step (one pass from the end): linear.
    restart = np.zeros(len(steps), dtype=bool)
    best = None
    for i, s in zip(rows.tolist(), steps[rows].tolist(), strict=True):
        if best is not None and s <= best:
            restart[i] = True
            best = s
        else:
            best = s if best is None else max(best, s)
    later = np.where(restart, steps, np.inf)[::-1]
    after = np.minimum.accumulate(later)[::-1]  # min restart step at or after each row
    after = np.append(after[1:], np.inf)  # ... strictly after it
    keep = ~(steps >= after)
    first = int(steps[rows[0]]) if len(rows) else 0
    at = np.flatnonzero(restart)
    warnings = []
    dropped = set(steps[~keep].tolist())
    for i in at[:_SAID].tolist():
        s = int(steps[i])
        twice = sorted(set(steps[(steps >= s)].tolist()) & dropped)
        span = _ranges(twice) if twice else str(s)
        cause = (
            "the step counter restarted" if s <= first else f"the run was resumed at step {s - 1}"
        )
        warnings.append(f"steps {span} appear twice: {cause}; kept the later values")
    if len(at) > _SAID:
        warnings.append(f"... and {len(at) - _SAID} more restarts of the step counter")
    return keep, warnings


_SAID = 5  # restarts described one by one; more are counted


# The largest step a run is taken to have: beyond any RL fine-tuning run by far.
MAX_STEP = 1_000_000


def dedupe(df: pl.DataFrame, sequential: bool = True) -> tuple[pl.DataFrame, list[str]]:
    """One row per step, sorted. In a log (`sequential`: rows in the order they were written) a
    later attempt replaces an earlier one from its first step on; in a table, a repeated step
    keeps its last row. Never an average; a validation row merges into its step's row."""
    pl = lazy.polars

    if df["step"].null_count():
        df = df.filter(pl.col("step").is_not_null())
    warnings: list[str] = []
    steps = df["step"].to_numpy()  # the one column, as an array: no plan run over the frame
    far = (steps > MAX_STEP) | (steps < -MAX_STEP)
    if far.any():
        # a step no training run reaches (a corrupt line, a counter of something else): every
        # step-indexed computation downstream (saved checkpoints, cadences) would be that long
        df = df.filter(pl.Series(~far))
        warnings.append(
            f"{int(far.sum())} row(s) with a step beyond {MAX_STEP:,} (e.g. {steps[far][0]}) "
            "dropped: expected training steps"
        )
        steps = steps[~far]
    if df.height == 0 or bool((steps[1:] > steps[:-1]).all()):  # strictly increasing
        return df, warnings
    if sequential:
        keep, said = _restarts(df)
        warnings += said
        if not keep.all():
            df = df.filter(pl.Series(keep))
    else:
        train = df.filter(pl.Series(_train_mask(df)))["step"]
        repeated = sorted(train.filter(train.is_duplicated()).unique().to_list())
        if repeated:
            warnings.append(
                f"steps {_ranges(repeated)} appear more than once; kept the last row of each"
            )
    metric_cols = [c for c in df.columns if c != "step"]
    # last non-null value per column in file order: merges a validation row into its step
    out = df.group_by("step", maintain_order=True).agg(
        [pl.col(c).drop_nulls().last() for c in metric_cols]
    )
    return out.sort("step"), warnings


def _canonical_exprs(cols: list[str], skip: set[str]) -> dict[str, pl.Expr]:
    pl = lazy.polars

    present = set(cols)
    # the keys of each canonical name, ranked exactly as names.canonicalize ranks them
    ranked: dict[str, list[tuple[int, str]]] = {}
    for col in cols:
        hit = names.lookup(col)
        if hit and hit[0] != "val_reward" and col != names.ROLL_TRUNCATION_COUNT:
            ranked.setdefault(hit[0], []).append((hit[1], col))
    out: dict[str, pl.Expr] = {}
    for canon in names.ALIASES:
        if canon in skip:
            continue
        cands = [c for _, c in sorted(ranked.get(canon, []))]
        exprs = []
        for raw in cands:
            e = pl.col(raw)
            if raw in names.ZERO_MEANS_MISSING:
                e = pl.when(e == 0).then(None).otherwise(e)
            if raw in names.SCALED:
                e = e * names.SCALED[raw]
            exprs.append(e)
        if canon == "truncation_rate" and {names.ROLL_TRUNCATION_COUNT, names.ROLL_BATCH_SIZE} <= (
            present
        ):
            batch = pl.col(names.ROLL_BATCH_SIZE)
            rate = pl.col(names.ROLL_TRUNCATION_COUNT) / pl.when(batch != 0).then(batch)
            exprs.append(rate)
        if canon == "zero_std_frac" and set(names.ROLL_ZERO_STD_PARTS) <= present:
            a, b = names.ROLL_ZERO_STD_PARTS
            exprs.append(pl.col(a) + pl.col(b))  # null unless both parts were logged
        if exprs:
            out[canon] = exprs[0] if len(exprs) == 1 else pl.coalesce(exprs)
    if "val_reward" not in skip:
        if "val_reward" in present:
            out["val_reward"] = pl.col("val_reward")
        else:
            exact, groups = names.val_groups(cols)
            parts = [pl.col(k) for k in exact]
            per_ds = [pl.coalesce([pl.col(k) for k in g]) for g in groups]
            if per_ds:
                parts.append(per_ds[0] if len(per_ds) == 1 else pl.mean_horizontal(per_ds))
            if parts:
                out["val_reward"] = parts[0] if len(parts) == 1 else pl.coalesce(parts)
    return out


def add_canonical(df: pl.DataFrame, skip: set[str] | None = None) -> pl.DataFrame:
    """step, then the canonical columns (contract order), then every original column."""
    pl = lazy.polars

    exprs = _canonical_exprs(df.columns, skip or set())
    canon = [
        exprs[c].cast(pl.Float64).alias(c)
        for c in dict.fromkeys((*CANONICAL_METRICS, "val_reward"))
        if c in exprs
    ]
    seen = {"step", *(c for c in exprs)}
    rest = [c for c in df.columns if c not in seen]
    # compute the few canonical columns, then glue the originals on (no copy of 150 columns;
    # taken by name, cheaper than 150 select expressions)
    originals = df[rest] if rest else df.select()
    # one expression after the other: a few columns, not worth waking polars' thread pool
    return pl.concat([df.select_seq("step", *canon), originals], how="horizontal")


def build_run(
    raw: pl.DataFrame,
    *,
    source: str,
    fmt: str,
    hints: dict[str, Any] | None = None,
    ending: RunEnding | None = None,
    warnings: list[str] | None = None,
    low_precision: bool = False,
    sequential: bool = True,
    by_epoch: bool = False,
) -> Run:
    """Finish a reader's raw rows into a Run (see module docstring). `by_epoch`: the reader
    numbered records that print an epoch and no step 1, 2, ... in order (or its table's first
    column counts epochs): the run keeps the epochs to speak in (`Run.epochs`)."""
    warnings = list(warnings or [])
    df = to_float_frame(raw)
    df, dup_warnings = dedupe(df, sequential)
    warnings += dup_warnings
    if df.height == 0:
        raise InputError(f"{source}: expected metric records with a step, found none")
    skip: set[str] = set()
    if low_precision and _lr_all_zero(df):
        # verl <= v0.4 prints 3 decimals: an lr of 1e-6 reads 0.000; do not call that lr = 0
        skip.add("lr")
        warnings.append(
            "the learning rate is printed with 3 decimals (0.000); kept as actor/lr, not as lr"
        )
    df = add_canonical(df, skip)
    hints = dict(hints or {})
    _cadence_hint(df, hints)
    _lr_hint(df, hints)
    _response_cap_hint(df, hints)
    return Run(
        frame=df,
        source=source,
        format=fmt,
        config_hints=hints,
        ending=ending,
        warnings=warnings,
        training=_training_steps(df),
        epochs=_epochs(df) if by_epoch else None,
    )


_EPOCH_KEYS = ("epoch", "train/epoch", "training/epoch")


def has_epoch(columns: Iterable[str]) -> bool:
    """A record field that counts epochs (what a log without steps is said in)."""
    return any(c in _EPOCH_KEYS for c in columns)


def _epochs(df: pl.DataFrame) -> dict[int, float] | None:
    """step -> epoch of a log whose records count epochs: its `epoch` field where the records
    print one, else the step itself (a table whose first column is the epoch). None when the
    epochs do not rise with the records (two runs in one file: steps are all one can say)."""
    np = lazy.numpy

    key = next((k for k in _EPOCH_KEYS if k in df.columns), None)
    steps = df["step"].to_numpy()
    values = df[key].to_numpy() if key is not None else steps.astype(float)
    ok = np.isfinite(values)
    if not ok.any() or (np.diff(values[ok]) < 0).any():
        return None
    return {int(s): round(float(v), 4) for s, v in zip(steps[ok], values[ok], strict=True)}


def _training_steps(df: pl.DataFrame) -> tuple[int, int, int] | None:
    """(count, first, last) of the rows that hold a training metric, when some rows hold only
    an evaluation (see names.is_training_record); None when every row is a training step."""
    np = lazy.numpy
    pl = lazy.polars

    if not any(names.is_eval_key(c) for c in df.columns):
        return None  # no evaluation: every row is a step
    cols = [c for c in df.columns if names.is_training_key(c)]
    if not cols or any(df[c].null_count() == 0 for c in cols):
        return None  # (a training metric in every row: every row is a step)
    train = df.select_seq(pl.any_horizontal(pl.col(cols).is_not_null())).to_series().to_numpy()
    n = int(np.count_nonzero(train))
    if n in (0, df.height):
        return None
    steps = df["step"].to_numpy()[train]
    return n, int(steps.min()), int(steps.max())


def _lr_hint(df: pl.DataFrame, hints: dict[str, Any]) -> None:
    """The configured learning rate, when the log prints none, is the peak of the logged lr
    series: warm-up rises to it and the decay starts from it (TRL logs `learning_rate` per step).
    The online Advisor derives it the same way (`peak_lr_hint`)."""
    if "learning_rate" in hints or "lr" not in df.columns:
        return
    np = lazy.numpy

    lr = df["lr"].to_numpy()  # Float64 (a canonical column): a null is NaN here
    lr = lr[np.isfinite(lr) & (lr > 0)]
    if len(lr):
        hints["learning_rate"] = peak_lr_hint(float(lr.max()))


# The longest response of each step, as verl and TRL log it.
LONGEST = ("response_length/max", "completions/max_length", "train/completions/max_length")


def response_cap(cut: int, cap: float, at_cap: int) -> int | None:
    """The response cap a run shows without printing its config: at the steps where responses
    were cut (`cut` of them), the longest response is the cap itself. Taken only when that
    largest value `cap` is the longest response at most of those steps (`at_cap`), at every
    one of them when there are only one or two: one below the cap on a clipped step means the
    column is not the cap (e.g. a per-device cut). A single step that cut some is enough: a cut
    response is as long as the cap, so the longest one is the cap. TRL runs print no
    max_completion_length; without it a truncation patch starts from the platform's default
    8192. The online Advisor counts the same three numbers step by step."""
    if cut < 1 or not (cap >= 1 and float(cap).is_integer()) or at_cap * 2 < cut:
        return None
    if cut < 3 and at_cap < cut:
        return None
    return int(cap)


def _response_cap_hint(df: pl.DataFrame, hints: dict[str, Any]) -> None:
    if "max_response_length" in hints or "max_length" in hints or "truncation_rate" not in df:
        return
    column = next((c for c in LONGEST if c in df.columns), None)
    if column is None:
        return
    longest = df[column].filter(df["truncation_rate"] > 0).drop_nulls().drop_nans()
    if longest.len():
        top = float(longest.max())  # type: ignore[arg-type]
        cap = response_cap(longest.len(), top, int((longest == top).sum()))
        if cap is not None:
            hints["max_response_length"] = cap


# TRL's GRPOTrainer logs these every step; it logs `kl` only when beta != 0 (metrics.md).
TRL_GRPO_KEYS = (
    "frac_reward_zero_std",
    "completions/mean_length",
    "train/frac_reward_zero_std",
    "train/completions/mean_length",
)
TRL_KL_KEYS = ("kl", "train/kl")


def trl_without_kl(columns: Iterable[str]) -> bool:
    """A TRL GRPO log with no `kl` at all ran with beta = 0: no KL term. (Absent is not zero
    for the KL *findings*, which then cannot be judged; it is for the coefficient the advice
    starts from.) Known only once the whole log is read, so it is a hint for the advice, not for
    the judgement: `api.resolve_job` gives it to the advice only, as the online Advisor does
    from the keys it has seen."""
    names = set(columns)
    return any(k in names for k in TRL_GRPO_KEYS) and not any(k in names for k in TRL_KL_KEYS)


def peak_lr_hint(peak: float) -> float:
    """The lr hint from the peak of a logged lr series (6 significant digits, as printed)."""
    return float(f"{peak:.6g}")


def _lr_all_zero(df: pl.DataFrame) -> bool:
    for raw in names.ALIASES["lr"]:
        if raw in df.columns:
            col = df[raw].drop_nulls()
            return col.len() > 0 and bool((col == 0).all())
    return False


def _cadence_hint(df: pl.DataFrame, hints: dict[str, Any]) -> None:
    """eval_steps from the validation cadence when the run did not print its config."""
    if "eval_steps" in hints or "val_reward" not in df.columns:
        return
    # the one column filtered, not the whole frame
    steps = df["step"].filter(df["val_reward"].is_not_null()).to_list()
    steps = [s for s in steps if s > 0]  # a validation before training says nothing of cadence
    if len(steps) < 2:
        return
    gaps = Counter(b - a for a, b in itertools.pairwise(steps))
    gap, n = gaps.most_common(1)[0]
    if gap > 0 and n >= max(1, (len(steps) - 1) // 2):
        hints["eval_steps"] = gap
