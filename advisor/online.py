"""The library hook: `Advisor.observe(step, metrics)` judges a run while it is still going.

The Advisor does no detection of its own. It maps framework names onto the canonical vocabulary
(`advisor.ingest.names`), feeds the one engine (`advisor.engine.Monitor`, the same one
`judge_run` replays a whole Run through) and turns what the Monitor holds into the same
Diagnosis and report `diagnose` writes. So `observe` and `diagnose` judge identically by
construction, and the Advisor's own state stays bounded: counters, the metric names seen, the
name mapping per key set, and a thinned copy of each curve for the report's plots.

Safety classes follow ruff's fix applicability: only an action marked `safe` may be applied by a
hook on its own (`auto_apply=True` with an `apply` callback); everything else is advice.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from advisor import lazy
from advisor.config import load_config
from advisor.dialect import framework_assumed, framework_of_run
from advisor.ingest import names
from advisor.ingest.frame import (
    LONGEST,
    TRL_GRPO_KEYS,
    TRL_KL_KEYS,
    peak_lr_hint,
    response_cap,
    trl_without_kl,
)
from advisor.ingest.names import canonicalize, is_training_record
from advisor.static import scale_caps
from advisor.types import (
    CANONICAL_METRICS,
    Action,
    Diagnosis,
    Finding,
    InputError,
    Run,
    RunEnding,
    RunInfo,
    Scalar,
    Severity,
)

if TYPE_CHECKING:
    from advisor.config import HyperParams, LoadedConfig
    from advisor.engine import Judgement, Monitor, SymptomRulebook

log = logging.getLogger("rl_advisor")

FindingCallback = Callable[[Finding], None]
ApplyCallback = Callable[[Finding, Action], None]


class AdvisorOptions(TypedDict, total=False):
    """The Advisor's keyword options besides its job (see `Advisor.__init__`)."""

    hyper_parameters: HyperParams | None
    hints: Mapping[str, object] | None
    training_samples: int | None
    expected_steps: int | None
    rules: SymptomRulebook | None
    auto_apply: bool
    apply: ApplyCallback | None
    on_finding: FindingCallback | None
    source: str
    format: str


_MAX_WARNINGS = 20
_MAX_PLANS = 64  # distinct key sets remembered (train-only, train+eval, ...); bounded memory
_SLOW = object()  # plan marker: this key set needs canonicalize's special cases
_FIRST = -(2**62)  # below any step
_RECENT_EVALS = 32  # more than save_total_limit checkpoints' worth of evaluations, usually
_TRL_KEYS = TRL_GRPO_KEYS + TRL_KL_KEYS  # what tells a TRL run's beta 0


def _number(value: Any) -> float | None:
    """A metric value as float, None when it is not a number (strings, lists, images...).

    float() accepts Python numbers, numpy scalars and one-element torch tensors alike; NaN and
    inf are kept (they are evidence for NAN), only non-numbers become None.
    """
    if value is None or isinstance(value, str):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


class Advisor:
    """Online diagnosis of one training run, fed one step at a time.

    >>> adv = Advisor(hyper_parameters={"learning_rate": 2e-6, "eval_steps": 10})
    >>> new = adv.observe(1, {"critic/rewards/mean": 0.4, "actor/entropy": 0.6})
    >>> new
    []
    """

    def __init__(
        self,
        hyper_parameters: HyperParams | None = None,
        *,
        config: LoadedConfig | None = None,
        config_path: str | Path | None = None,
        sets: Sequence[str] = (),
        hints: Mapping[str, object] | None = None,
        training_samples: int | None = None,
        expected_steps: int | None = None,
        rules: SymptomRulebook | None = None,
        auto_apply: bool = False,
        apply: ApplyCallback | None = None,
        on_finding: FindingCallback | None = None,
        source: str = "online",
        format: str = "online",
    ) -> None:
        if auto_apply and apply is None:
            raise ValueError("auto_apply=True needs an apply(finding, action) callback")
        self._explicit = dict(hyper_parameters or {})
        self._config_path = Path(config_path) if config_path is not None else None
        self._sets = tuple(sets)
        self._hints: dict[str, object] = dict(hints or {})
        self._lr_peak = 0.0
        # clipped steps, their longest response, how many reached it
        self._cut: tuple[int, float, int] = (0, 0.0, 0)
        self._trl_keys: set[str] = set()  # TRL's GRPO and kl keys seen (frame.trl_without_kl)
        self._kl_named = False  # the monitor was told which name the run's KL came under
        self._training_samples = training_samples
        self.expected_steps = expected_steps  # run length, when the trainer knows it
        self._loaded: LoadedConfig | None = config
        # the framework defaults _config loaded with (None: a LoadedConfig handed in)
        self._loaded_with: dict[str, Scalar] | None = None
        self._config_given = config is not None  # a LoadedConfig from the caller: used as is
        self._rules = rules
        self.auto_apply = auto_apply
        self._apply = apply
        self._on_finding = on_finding
        self.source = source
        self.format = format
        self._monitor: Monitor | None = None
        self._lock = threading.Lock()
        self._seen: set[str] = set()  # canonical metrics seen (bounded by the vocabulary)
        self._first_step: int | None = None
        self._names: dict[str, None] = {}  # every metric name observed, in the order first seen
        self._last_step: int | None = None
        self._steps = 0
        self._dropped = 0
        self._warnings: list[str] = []
        self._notes: list[str] = []  # the log reader's notes (watch)
        self._closed = False
        self._pending: tuple[int, Mapping[str, object]] | None = None  # held by partial=True
        self._val_best: tuple[int, float] | None = None
        self._val_last: tuple[int, float] | None = None
        # the last evaluations, exact: the checkpoint advice scores the kept checkpoints
        self._val_recent: deque[tuple[int, float]] = deque(maxlen=_RECENT_EVALS)
        self._val_prev: int | None = None  # validation cadence: last step, gap counts, count
        self._val_gaps: dict[int, int] = {}
        self._val_n = 0
        self._planned: dict[tuple[str, int | None], Finding] = {}
        self._extra: frozenset[str] = frozenset()  # tracked names outside the vocabulary
        self._plans: dict[tuple[str, ...], Any] = {}  # key set -> name mapping (bounded)
        self._series: dict[str, _Thinned] = {}  # canonical metric -> thinned history (plots)
        self._stride = 1  # the widest stride of the thinned curves
        self._next_sample = _FIRST  # the next step the plot history samples
        self.ending: RunEnding | None = None
        self.low_precision = False  # the log prints 3 decimals (verl <= v0.4): lr 0 is unknown
        self._lr_zero: bool | None = None  # every lr seen so far was 0 (None: none seen)
        self.applied: list[tuple[Finding, Action]] = []

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_config(
        cls, path: str | Path, sets: Sequence[str] = (), **kwargs: Unpack[AdvisorOptions]
    ) -> Advisor:
        """An Advisor for the job described by `path` (YAML or keyword layout), `--set` style
        overrides in `sets`. Bad config input raises InputError now, not at the first step."""
        adv = cls(config_path=path, sets=sets, **kwargs)
        adv._config()  # load eagerly: a wrong path must fail before training starts
        return adv

    def add_hints(self, hints: Mapping[str, object], expected_steps: int | None = None) -> None:
        """Hyperparameters the run itself reveals (TrainingArguments, verl's config).

        They fill what the job file leaves out; an explicit file wins (a disagreement is reported,
        C006) and --set beats both: defaults < run < file < --set, as load_config layers them. Only
        possible before the first observe: the engine's thresholds are fixed once judging
        starts, as they are for diagnose.
        """
        if self._monitor is not None:
            raise RuntimeError("add_hints() must come before the first observe()")
        self._hints.update({k: v for k, v in hints.items() if v is not None})
        if expected_steps:
            self.expected_steps = int(expected_steps)
        if not self._config_given:
            self._loaded = None  # reload with the hints on the next use

    def _config(self) -> LoadedConfig:
        defaults = self._framework_defaults()
        known = self._loaded is not None and self._loaded_with is not None
        if known and self._monitor is None and defaults != self._loaded_with:
            self._loaded = None  # the framework is known now: its defaults apply
        if self._loaded is None:
            # Explicit hyper_parameters are the caller's own values: they go in as --set does,
            # above the file and the run's hints.
            sets = list(self._sets) + [_as_set(k, v) for k, v in self._explicit.items()]
            self._loaded = load_config(
                self._config_path,
                sets=sets,
                hints=self._hints or None,
                training_samples=self._training_samples,
                defaults=defaults,
            )
            self._loaded_with = defaults
        return self._loaded

    def _framework_defaults(self) -> dict[str, Scalar]:
        """The run's framework's own defaults where its hints say nothing (diagnose's
        resolve_job applies the same: dialect.framework_assumed)."""

        return framework_assumed(self._log_framework(), self._hints)

    @property
    def hyper_parameters(self) -> dict[str, Scalar]:
        """The effective hyperparameters the engine judges with."""
        return dict(self._config().hyper_parameters)

    def _start(self) -> Monitor:
        self._monitor = self._new_monitor()
        self._kl_named = False
        self._extra = frozenset(self._monitor.tracked) - _TRACKED
        return self._monitor

    def _new_monitor(self) -> Monitor:
        loaded = self._config()
        # origin and the run length as diagnose gives them: a defaulted eval_steps is then
        # assumed the same way (from the run length when it is known)
        from advisor.engine import Monitor, load_symptom_rules
        from advisor.userconf import rules_for_run

        if self._rules is None:  # the user's overrides (rl-advisor.toml), as diagnose has them
            self._rules = rules_for_run(load_symptom_rules())
        return Monitor(
            loaded.hyper_parameters,
            self._rules,
            origin=dict(loaded.origin),
            expected_steps=self.expected_steps,
        )

    def judgement(self) -> Judgement:
        """What the engine has judged so far, as `judge_run` returns it for a finished run
        (before the first step: the judgement of no steps, insufficient data)."""
        monitor = self._monitor if self._monitor is not None else self._new_monitor()
        return monitor.judgement()

    # -- the hook -----------------------------------------------------------------------------
    def observe(
        self, step: int, metrics: Mapping[str, object], *, partial: bool = False
    ) -> list[Finding]:
        """Feed one step's metrics (raw framework names or canonical ones).

        Returns only the findings that are new at this step. `partial=True` says more metrics
        of the same step will follow (TRL logs its evaluation apart from the training log of
        the same step): they are held and judged together, as a reader merges them into one
        row. A step lower than one already judged (a resumed run replaying its log) is
        ignored with a warning: the engine's state only moves forward.
        """
        step_i = _step(step)
        if not isinstance(metrics, Mapping):
            raise InputError(f"observe(step={step_i}): metrics must be a mapping of name -> value")
        with self._lock:
            if self._closed:
                raise RuntimeError("observe() after close()")
            if self._monitor is None:
                self._start()
            new = self._flush_pending(unless_step=step_i)
            if self._last_step is not None and step_i <= self._last_step:
                self._drop(step_i)
            elif partial:
                self._pending = (step_i, self._merged(step_i, metrics))
            else:
                merged = self._merged(step_i, metrics)
                self._pending = None
                new += self._push(step_i, merged)
        return self._notify(new)

    def _merged(self, step: int, metrics: Mapping[str, object]) -> Mapping[str, object]:
        if self._pending is None or self._pending[0] != step:
            return metrics
        # the later record wins per metric, as readers merge one step's records
        return {**self._pending[1], **{k: v for k, v in metrics.items() if v is not None}}

    def _flush_pending(self, unless_step: int | None = None) -> list[Finding]:
        if self._pending is None or self._pending[0] == unless_step:
            return []
        step, metrics = self._pending
        self._pending = None
        return self._push(step, metrics)

    def _push(self, step: int, metrics: Mapping[str, object]) -> list[Finding]:
        if not self._names.keys() >= metrics.keys():  # the log's names, in the order first seen
            self._names.update(dict.fromkeys(metrics))
        row = self._row(metrics)
        lr = row.get("lr")
        if lr is not None and 0 < lr < math.inf and lr > self._lr_peak:
            self._lr_peak = lr  # the run's lr when no config says it, as the readers take it
        cut = row.get("truncation_rate")
        if cut is not None and cut > 0:
            self._count_cut(metrics)
        if not self._trl_keys.intersection(TRL_KL_KEYS):  # a kl key settles it
            self._trl_keys.update(k for k in _TRL_KEYS if k in metrics)
        monitor = self._monitor if self._monitor is not None else self._start()
        if not self._kl_named and "kl_ref" in row:
            monitor.kl_names(metrics)  # which name the KL came under, as judge_run reads it
            self._kl_named = True
        new = list(monitor.push(step, row))
        self._track(step, row)
        if is_training_record(k for k, v in metrics.items() if v is not None):
            self._steps += 1  # an evaluation alone (verl's at step 0) is no step, as for load_run
            if self._first_step is None:
                self._first_step = step
            self._last_step = step
        return new

    def _count_cut(self, metrics: Mapping[str, object]) -> None:
        """The response cap's evidence at a clipped step, as `frame.response_cap` reads it."""
        raw = next((metrics[c] for c in LONGEST if c in metrics), None)
        longest = _number(raw) if raw is not None else None
        if longest is None or not math.isfinite(longest):
            return
        cut, cap, at_cap = self._cut
        if cut == 0 or longest > cap:
            cap, at_cap = longest, 0
        self._cut = (cut + 1, cap, at_cap + (longest == cap))

    def _derived_hints(self) -> dict[str, Any]:
        """What `load_run` adds when nothing else says it: the peak of the logged lr and the
        response cap."""
        out: dict[str, Any] = {}
        if "learning_rate" not in self._hints and self._lr_peak > 0:
            out["learning_rate"] = peak_lr_hint(self._lr_peak)
        if "kl_loss_coef" not in self._hints and trl_without_kl(self._trl_keys):
            out["kl_loss_coef"] = 0.0  # TRL logs kl only when beta != 0
        if not {"max_response_length", "max_length"} & self._hints.keys():
            cap = response_cap(*self._cut)
            if cap is not None:
                out["max_response_length"] = cap
        return out

    def flush(self) -> list[Finding]:
        """Judge metrics held back by `partial=True` now (the next step may never come)."""
        with self._lock:
            new = self._flush_pending()
        return self._notify(new)

    __call__ = observe  # a plain callable for any orchestrator: hook(step, metrics)

    def _row(self, metrics: Mapping[str, object]) -> dict[str, float | None]:
        """Canonical names as the readers make them (`canonicalize`: best raw key per
        name, val_reward averaged over datasets); other names only where the engine reads them
        (judge_run pushes exactly those columns too)."""
        numeric = {
            (k if type(k) is str else str(k)): (v if type(v) is float else _number(v))
            for k, v in metrics.items()
        }
        plan = self._plans.get(tuple(numeric))
        if plan is None:
            plan = self._plan(numeric)
        if plan is _SLOW:
            row = canonicalize(numeric)
        else:
            row = {}
            for canon, raws in plan:
                value = None
                for raw in raws:  # best-ranked present value, as canonicalize picks it
                    value = numeric[raw]
                    if value is not None:
                        break
                row[canon] = value
        for key in row:
            if key not in self._seen and row[key] is not None:
                self._seen.add(key)
        lr = row.get("lr")
        if lr is not None and self._lr_zero is not False:
            self._lr_zero = lr == 0
        for key in self._extra.intersection(numeric):  # names some rule reads beyond the
            row.setdefault(key, numeric[key])  # vocabulary (none in the shipped rulebook)
        return row

    def _plan(self, numeric: Mapping[str, float | None]) -> Any:
        """How one set of keys maps onto canonical names (cached per key set: a run logs the
        same keys step after step, so the lookups are made once, not per step)."""

        groups: dict[str, list[tuple[int, str]]] = {}
        plan: Any = None
        for key in numeric:
            hit = names._lookup(key)
            if hit is None:
                continue
            canon, rank = hit
            special = (
                key in names.ZERO_MEANS_MISSING
                or key in names.SCALED
                or key == names.ROLL_TRUNCATION_COUNT
            )
            if special or (canon == "val_reward" and rank >= 0):
                plan = _SLOW  # validation averages and rate conversions: canonicalize itself
                break
            groups.setdefault(canon, []).append((rank, key))
        if plan is None:
            if "zero_std_frac" not in groups and all(
                p in numeric for p in names.ROLL_ZERO_STD_PARTS
            ):
                plan = _SLOW
            else:
                plan = tuple((c, tuple(k for _, k in sorted(g))) for c, g in groups.items())
        if len(self._plans) < _MAX_PLANS:
            self._plans[tuple(numeric)] = plan
        return plan

    def _track(self, step: int, row: Mapping[str, float | None]) -> None:
        # The plot history is sampled at the thinned curves' stride: most steps of a long run
        # skip it (validation points, being rare, are always offered).
        if step >= self._next_sample:
            for name in _TRACKED.intersection(row):
                series = self._series.get(name)
                if series is None:
                    series = self._series[name] = _Thinned()
                if series.add(step, row[name]) and series.stride > self._stride:
                    self._stride = series.stride
            self._next_sample = step + self._stride
        elif "val_reward" in row:
            series = self._series.get("val_reward") or self._series.setdefault(
                "val_reward", _Thinned()
            )
            series.add(step, row["val_reward"])
        # Checkpoint advice needs only the best and the last evaluation: keep those two, not
        # the series, so memory stays flat however long the run.
        value = row.get("val_reward")
        if value is None:
            return
        self._cadence(step)
        if not math.isfinite(value):
            return
        self._val_last = (step, value)
        self._val_recent.append(self._val_last)
        if self._val_best is None or value > self._val_best[1]:
            self._val_best = (step, value)

    def _cadence(self, step: int) -> None:
        """The validation cadence, as the reader infers eval_steps from it (gap counts only)."""
        if step <= 0:
            return  # a validation before training says nothing of the cadence
        if self._val_prev is not None and (
            len(self._val_gaps) < _MAX_PLANS or step - self._val_prev in self._val_gaps
        ):
            gap = step - self._val_prev
            self._val_gaps[gap] = self._val_gaps.get(gap, 0) + 1
        self._val_prev = step
        self._val_n += 1

    def _reported_hints(self) -> dict[str, Any]:
        hints = dict(self._hints)
        if "eval_steps" not in hints and self._val_n >= 2 and self._val_gaps:
            gap, n = max(self._val_gaps.items(), key=lambda kv: kv[1])  # first on ties
            if gap > 0 and n >= max(1, (self._val_n - 1) // 2):
                hints["eval_steps"] = gap
        hints.update(self._derived_hints())
        return hints

    def warn(self, text: str) -> None:
        """A note for the report's run warnings (bounded, like the Advisor's own)."""
        if len(self._notes) < _MAX_WARNINGS and text not in self._notes:
            self._notes.append(text)

    def _drop(self, step: int) -> None:
        self._dropped += 1
        if len(self._warnings) < _MAX_WARNINGS:
            why = (
                "was logged again; its metrics were not judged (pass partial=True for records"
                " of one step that come apart)"
                if step == self._last_step
                else f"arrived after step {self._last_step} and was ignored (a resumed run"
                " restarting its log?)"
            )
            self._warnings.append(f"step {step} {why}")

    def _with_actions(self, found: Sequence[Finding]) -> list[Finding]:
        """The findings with their actions resolved by the remedy (what the report shows).

        Each finding's action is resolved on its own (remedy.plan), so resolving only the new
        ones gives what resolving all of them would; results are kept per (id, onset).
        """
        todo = [f for f in found if _key(f) not in self._planned]
        if todo:
            from advisor.engine import load_symptom_rules
            from advisor.remedy import plan
            from advisor.userconf import rules_for_run

            rules = self._rules if self._rules is not None else rules_for_run(load_symptom_rules())
            cfg = self._config()
            caps = scale_caps(cfg)
            for f in plan(todo, cfg.hyper_parameters, rules, caps=caps).findings:
                self._planned[_key(f)] = f
        out = []
        for f in found:
            p = self._planned.get(_key(f))
            out.append(replace(f, action=p.action, fallback=p.fallback) if p else f)
        return out

    def _notify(self, new: list[Finding]) -> list[Finding]:
        if not new:
            return new
        new = self._with_actions(new)
        for finding in new:
            log.info(
                "rl-advisor: step %s: %s %s (%s)",
                finding.detected_step or finding.onset_step,
                finding.id,
                finding.name,
                finding.severity.value,
            )
            if self._on_finding is not None:
                self._on_finding(finding)
            action = finding.action
            if self.auto_apply and action is not None and action.safety == "safe":
                assert self._apply is not None  # checked in __init__
                self._apply(finding, action)
                self.applied.append((finding, action))
        return new

    # -- what is known so far -------------------------------------------------------------------
    @property
    def findings(self) -> list[Finding]:
        """Everything found so far, actions resolved (cleared ones carry cleared_step)."""
        if self._monitor is None:
            return []
        return self._with_actions(list(self._monitor.findings))

    @property
    def active(self) -> list[Finding]:
        """Findings that have not cleared."""
        return [f for f in self.findings if f.cleared_step is None]

    @property
    def status(self) -> str:
        status = str(self._monitor.status) if self._monitor is not None else "insufficient_data"
        # no canonical metric seen: not judged, never "healthy" (as the Diagnosis says)
        return "insufficient_data" if status == "healthy" and not self._seen else status

    @property
    def warmup_steps(self) -> int | None:
        return self._monitor.warmup_steps if self._monitor is not None else None

    @property
    def steps(self) -> int:
        return self._steps

    @property
    def last_step(self) -> int | None:
        return self._last_step

    def worst(self) -> Severity | None:
        sev = [f.severity for f in self.active]
        return max(sev, key=lambda s: s.rank) if sev else None

    def safe_actions(self) -> list[tuple[Finding, Action]]:
        """(finding, action) pairs a hook may apply without asking: safety == "safe" only."""
        out: list[tuple[Finding, Action]] = []
        for finding in self.active:
            for action in (finding.action, finding.fallback):
                if action is not None and action.safety == "safe":
                    out.append((finding, action))
        return out

    def advice(self) -> list[tuple[Finding, Action]]:
        """Every other action of an active finding: for a person to decide."""
        safe = {id(a) for _, a in self.safe_actions()}
        return [
            (f, a)
            for f in self.active
            for a in (f.action, f.fallback)
            if a is not None and id(a) not in safe
        ]

    # -- the end ------------------------------------------------------------------------------
    def close(self, ending: RunEnding | None = None) -> list[Finding]:
        """The run ended (how, if known): let the engine judge what needs the end of the run.

        Returns the findings new at closing. Idempotent.
        """
        with self._lock:
            if self._closed:
                return []
            monitor = self._monitor or self._start()
            new = self._flush_pending()
            self._closed = True
            self.ending = ending
            new += list(monitor.close(ending) or [])
        return self._notify(new)

    def framework(self) -> str:
        """Whose run this is (trl, verl, openrlhf, platform): the job file's framework when it
        is a TRL or verl file, else the format, the raw metric names seen, the hints."""

        if self._config_path is not None:
            from advisor.api import file_framework

            said = file_framework(self._config())
            if said is not None:
                return said
        return self._log_framework()

    def _log_framework(self) -> str:
        """Whose run the log and its hints say this is (framework without the job file)."""

        keys = sorted({k for ks in self._plans for k in ks} | self._trl_keys)
        return framework_of_run(self.format, keys, self._hints)

    def run_info(self) -> RunInfo:
        lr_unknown = {"lr"} if self.low_precision and self._lr_zero else set()
        lr_note = (
            ["the learning rate is printed with 3 decimals (0.000); kept as actor/lr, not as lr"]
            if lr_unknown
            else []
        )
        return RunInfo(
            source=self.source,
            format=self.format,
            steps=self._steps,
            first_step=self._first_step,
            last_step=self._last_step,
            metrics=[m for m in CANONICAL_METRICS if m in self._seen and m not in lr_unknown],
            config_hints=self._reported_hints(),
            ending=self.ending,
            warnings=[*lr_note, *self._notes, *self._all_warnings()],
            framework=self.framework(),
        )

    def _all_warnings(self) -> list[str]:
        extra = self._dropped - len(self._warnings)
        more = [f"... and {extra} more repeated or out-of-order steps ignored"] if extra > 0 else []
        return self._warnings + more

    def diagnosis(self) -> Diagnosis:
        """The Diagnosis `diagnose` would build from the same series (so far): the same
        assembly (`advisor.api.assemble`: remedy, checkpoint advice, assumptions), fed from the
        Monitor's judgement and the bounded history this Advisor keeps."""

        from advisor.api import (
            assemble,
            config_findings_of,
            lacking_metrics,
            unread_names,
            with_file_diff,
        )

        loaded = self._report_config()
        d = assemble(
            self._history_run(),
            dict(loaded.hyper_parameters),
            self.judgement(),
            config_findings=config_findings_of(loaded),
            origin=dict(loaded.origin),
            training_samples=self._training_samples,
            rules=self._rules,
            config_given=self._config_path is not None,
            caps=scale_caps(loaded),
            framework=self.framework(),
            framework_facts=loaded.facts,
            framework_assumed=loaded.defaults_taken,
        )
        info = self.run_info()
        d = replace(
            d,
            run=info,
            unread_keys=unread_names(self._names),
            lacking_metrics=lacking_metrics(info.metrics, self._rules),
        )
        return with_file_diff(d, self._config_path)

    def _report_config(self) -> LoadedConfig:
        """The config the report is built on: as judged, plus the learning rate and the
        response cap the run logged when nothing else gave them (what `load_run` adds as hints
        for diagnose)."""
        derived = self._derived_hints()
        if not derived:
            return self._config()

        sets = list(self._sets) + [_as_set(k, v) for k, v in self._explicit.items()]
        hints = {**self._hints, **derived}
        return load_config(
            self._config_path,
            sets=sets,
            hints=hints,
            training_samples=self._training_samples,
            defaults=self._loaded_with,
        )

    def _history_run(self) -> Run:
        """A small Run of what is kept: the thinned series, the best and the last evaluation
        (all the checkpoint advice reads), the first and last step, and how the run ended."""
        pl = lazy.polars

        rows: dict[int, dict[str, float | None]] = {}
        for name, series in self._series.items():
            for step, value in zip(series.steps, series.values, strict=True):
                rows.setdefault(step, {})[name] = value
        for point in (self._val_best, *self._val_recent):
            if point is not None:
                rows.setdefault(point[0], {})["val_reward"] = point[1]
        for edge in (self._first_step, self._last_step):  # the run's span, sampled or not
            if edge is not None:
                rows.setdefault(edge, {})
        steps = sorted(rows)
        data: dict[str, list[Any]] = {"step": steps}
        schema: dict[str, Any] = {"step": pl.Int64}
        for name in self._series:
            data[name] = [rows[s].get(name) for s in steps]
            schema[name] = pl.Float64
        frame = pl.DataFrame(data, schema=schema)
        return Run(
            frame=frame,
            source=self.source,
            format=self.format,
            config_hints=self._reported_hints(),
            ending=self.ending,
        )

    def report(
        self, format: str = "markdown", out_dir: str | Path | None = None, stem: str = "report"
    ) -> str:
        """The same report diagnose writes, for what has been seen so far; with `out_dir`
        (Markdown) the plots are drawn there, as diagnose draws them beside --output."""

        from advisor.report import render

        out = Path(out_dir) if out_dir is not None else None
        return render(self.diagnosis(), format=format, out_dir=out, stem=stem)


class _Thinned:
    """A metric's (step, value) history for the report's plots, at most `cap` points.

    When full, every other point is dropped (never the first nor the newest) and the stride
    doubles: memory stays bounded whatever the run length, and the curve keeps its shape from
    the first step to the last.
    """

    __slots__ = ("cap", "steps", "stride", "values")

    def __init__(self, cap: int = 1024) -> None:
        self.cap = cap
        self.stride = 1
        self.steps: list[int] = []
        self.values: list[float | None] = []

    def add(self, step: int, value: float | None) -> bool:
        """Keep (step, value) if it is a stride past the last kept point; True if it thinned."""
        if self.steps and step - self.steps[-1] < self.stride:
            return False
        self.steps.append(step)
        self.values.append(value)
        if len(self.steps) < self.cap:
            return False
        # thin the middle; the first and the newest points stay
        last = len(self.steps) - 1
        self.steps = [s for i, s in enumerate(self.steps) if i % 2 == 0 or i == last]
        self.values = [v for i, v in enumerate(self.values) if i % 2 == 0 or i == last]
        self.stride *= 2
        return True


def _key(finding: Finding) -> tuple[str, int | None]:
    return finding.id, finding.onset_step


def _step(step: Any) -> int:
    try:
        value = float(step)
    except (TypeError, ValueError):
        raise InputError(f"observe(step={step!r}): step must be an integer") from None
    if not math.isfinite(value) or value != int(value):
        raise InputError(f"observe(step={step!r}): step must be an integer")
    return int(value)


def _as_set(key: str, value: object) -> str:
    """A hyperparameter as a --set string; JSON scalars parse back as YAML scalars do."""

    text = value if isinstance(value, str) else json.dumps(value)
    return f"{key}={text}"


_CANONICAL = frozenset(CANONICAL_METRICS)
_TRACKED = _CANONICAL | {"val_reward"}  # what the history keeps for the report's plots
