"""The same judgement everywhere: every fixture replayed step by step through `Monitor.push`
(the online hook's path), through `push_columns` in uneven chunks, and through `judge_run`
(the offline path diagnose takes) gives identical findings (ids, severity, onset, evidence,
cleared and recovered steps), notes, missing metrics and status. The chunked replay also runs
every detector the offline path's screens skip (each Registration's `screen`), and fails where
one would have fired.

The fixtures: every run of the committed corpus, the live-fire range, the public runs the
harness reads (`../shared/real_runs`, when present) and generated healthy and sick runs."""

from __future__ import annotations

import ast
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from sources import source_tree

from advisor.config import load_config
from advisor.engine import ABSENT, NO, Judgement, Monitor, _Context, judge_run
from advisor.harness import discover
from advisor.ingest import load_run
from advisor.realruns import default_real_dir, default_real_labels, livefire_labels
from advisor.types import Run

ROOT = Path(__file__).resolve().parents[2]




def _fixtures() -> list[tuple[str, Path, Path | None]]:
    """(name, metrics, job file or None) of every run the harness scores."""
    out = [(c.run_id, c.metrics, c.config) for c in discover(ROOT / "sample_metrics" / "corpus")]
    for case_dir, label in livefire_labels(ROOT / "tests" / "livefire" / "runs"):
        out += [(f"livefire/{case_dir.name}/{n}", case_dir / n, None) for n in label["inputs"]]
    real = default_real_dir()
    if real is not None:
        from ruamel.yaml import YAML

        runs = YAML(typ="safe").load(default_real_labels().read_text(encoding="utf-8"))["runs"]
        out += [(f"real/{n}", real / n / str(spec["metrics"]), None) for n, spec in runs.items()]
    return out


def _view(j: Judgement) -> str:
    """Everything a judgement says, written exactly (repr of a float round-trips)."""
    return repr(
        (
            [f.to_dict() for f in j.findings],
            j.status,
            j.assumptions,
            j.warmup_steps,
            j.eval_steps,
            j.block_steps,
            j.missing_steps,
        )
    )


def _state(m: Monitor) -> str:
    """What a Monitor's fold keeps after the run (each metric's window, counts, references,
    wander chunks, baseline) and its counts of blocks and evaluations, written exactly."""
    tracks = {
        name: (t.buf[: t.nb].tolist(), t.nb, t.version, t.seen, t.baseline, t.peak, t.peak_step,
               t.peak3, t.peak3_step, t.last3, t.peak3_ctx, t.trough, t.trough_step, t.first,
               t.total, t.warm, t.wander, t.span_wander)
        for name, t in sorted(m._tracks.items())
    }  # fmt: skip
    return repr((tracks, m._logged_end, m._closed_blocks, m._evaluations, m._warm_done))


def _setup(run: Run, job: Path | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The hyperparameters and their origins as diagnose hands them to the engine."""
    loaded = load_config(job, (), hints=run.config_hints)
    return dict(loaded.hyper_parameters), dict(loaded.origin)


class _Audited(Monitor):
    """A Monitor that also runs every detector its screens skip, and fails if one fires, and
    evaluates every rule its screens skip (without screens), and fails where that evaluation
    would have changed something; there, every leaf the rule's mask took as quiet is judged by
    its detector too. It closes each block in turn, and fails where evaluating the rules at a
    block _unjudged_until would have folded unjudged changes what they say."""

    screened = 0  # screen verdicts audited: detectors a screen skipped, or a mask took quiet
    by_detector: Counter[str]  # the same, per detector

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.by_detector = Counter()
    masked = 0  # rule evaluations skipped by their leaves' screens (and made here)
    unjudged = 0  # blocks _unjudged_until would have folded at once (closed one by one here)
    _promised: tuple[int, int, int] = (-1, 0, 0)  # (call, first block, stop)

    def _unjudged_until(self, k: int) -> int:
        stop = super()._unjudged_until(k)
        assert self._ahead is not None
        if stop - k >= 2:
            call, _, until = self._promised
            self.unjudged += stop - (max(k, until) if call == self._ahead.stamp else k)
            self._promised = (self._ahead.stamp, k, stop)
        return k

    def _evaluate(self, end: int, full: bool) -> Any:
        call, k, stop = self._promised
        ahead = self._ahead
        folded = ahead is not None and ahead.stamp == call and k <= ahead.at < stop
        before = self._said() if folded else ""
        new = super()._evaluate(end, full)
        assert not folded or (not new and self._said() == before), f"block {end} was unjudged"
        return new

    def _said(self) -> str:
        """What the rule evaluation leaves: findings, misses, missing metrics, notes."""
        return repr(([f.to_dict() for f in self.findings], list(self._active),
                     [self._misses.get(r) for r in self._active], list(self._absent.items()),
                     list(self._notes.items())))  # fmt: skip

    def _quiet(self, plan: Any) -> bool:
        quiet = super()._quiet(plan)
        if quiet:
            self._audit(plan)
        return quiet

    def _audit(self, plan: Any) -> None:
        """The leaf's detector on every metric it reads, where its screen said None."""
        state, evidence = self._judge_leaf(plan, {}, set(), False)
        assert state == NO and not evidence, f"screen of {plan.leaf.detector} let a fire by"
        self.screened += 1
        self.by_detector[plan.leaf.detector] += 1

    def _masked(self, rule: Any, facts: tuple[Any, ...]) -> bool:
        masked = super()._masked(rule, facts)
        if masked:
            columns, self._columns = self._columns, {}  # every leaf judged by its detector
            cx = _Context(self, {}, {}, set(), [])
            try:
                state, _ = self._trees[rule.id](cx, False)
            finally:
                self._columns = columns
            # NO after an evaluation that changed nothing, or ABSENT for metrics said missing
            quiet = state == NO and rule.id in self._quiets
            said = state == ABSENT and cx.missing <= self._absent.get(rule.id, {""})
            assert quiet or said, f"{rule.id} skipped by its screens where it says {state}"
            self.masked += 1
            assert self._ahead is not None
            for plan, blocks in self._rule_mask(rule).used:
                if blocks[0] >> self._ahead.at & 1:  # taken as quiet at this block
                    self._audit(plan)
        return masked


def _replays(
    run: Run,
    hp: dict[str, Any],
    origin: dict[str, str],
    seed: int,
    by_detector: Counter[str] | None = None,
) -> tuple[list[str], tuple[int, int, int]]:
    """judge_run's judgement, then the same run pushed step by step, then in chunks (audited,
    then not: with blocks folded at once), and how many screen verdicts, rule evaluations and
    blocks the audited replay checked (the screen verdicts per detector added to
    `by_detector`)."""
    frame = run.frame
    merged = {**(run.config_hints or {}), **{k: v for k, v in hp.items() if v is not None}}
    steps = frame["step"].to_list() if "step" in frame.columns and frame.height else []
    expected = int(steps[-1] - steps[0] + 1) if steps else None
    out = [_view(judge_run(run, hp, origin=origin))]

    def monitor() -> Monitor:
        return Monitor(merged, origin=origin, expected_steps=expected)

    one = monitor()
    cols = [c for c in one.tracked if c in frame.columns]
    data = frame.select([pl.col(c).cast(pl.Float64, strict=False) for c in cols])
    values = {c: data[c].to_list() for c in cols}
    for i, step in enumerate(steps):
        if step is not None:
            one.push(step, {c: values[c][i] for c in cols})
    one.close(run.ending)
    out.append(_view(one.judgement()))

    columns = {
        c: (col.to_numpy(), col.is_not_null().to_numpy()) for c, col in zip(cols, data, strict=True)
    }
    cuts = np.sort(np.random.default_rng(seed).integers(0, len(steps) + 1, 6)).tolist()
    audited = _Audited(merged, origin=origin, expected_steps=expected)
    for chunked in (audited, monitor()):
        for a, b in zip([0, *cuts], [*cuts, len(steps)], strict=True):
            part = {c: (v[a:b], m[a:b]) for c, (v, m) in columns.items()}
            chunked.push_columns(steps[a:b], part)
        chunked.close(run.ending)
        out.append(_view(chunked.judgement()))
        # the fold's state too (push_columns folds the blocks no rule is judged at at once)
        assert _state(chunked) == _state(one), "push_columns folds otherwise than push"
    if by_detector is not None:
        by_detector.update(audited.by_detector)
    return out, (audited.screened, audited.masked, audited.unjudged)


FIXTURES = _fixtures()


@pytest.mark.parametrize(
    ("name", "metrics", "job"), FIXTURES, ids=[name for name, _, _ in FIXTURES]
)
def test_every_fixture_judged_alike_three_ways(name: str, metrics: Path, job: Path | None) -> None:
    run = load_run(metrics)
    hp, origin = _setup(run, job)
    (batch, online, *chunked), _ = _replays(run, hp, origin, seed=len(name))
    assert online == batch, f"{name}: push step by step differs from judge_run"
    assert chunked == [batch, batch], f"{name}: push_columns in chunks differs from judge_run"


def _generator() -> Any:
    sys.path.insert(0, str(ROOT / "tests" / "holdout"))
    try:
        import judge_gen
    finally:
        sys.path.remove(str(ROOT / "tests" / "holdout"))
    return judge_gen


# two healthy runs and six sick ones of different symptoms (the holdout generator's plan)
GENERATED = [k for i, k in enumerate(_generator().plan(2, 16, 91000)) if i < 2 or i % 3 == 0]


@pytest.mark.parametrize(
    ("kind", "variant", "seed"), GENERATED, ids=[f"{k}-{v}-{s}" for k, v, s in GENERATED]
)
def test_generated_runs_judged_alike_three_ways(
    kind: str, variant: str, seed: int, tmp_path: Path
) -> None:
    gen = _generator()
    d = gen.write(gen.make(kind, variant, seed), tmp_path)
    label = json.loads((d / "label.json").read_text(encoding="utf-8"))
    run = load_run(d / label["metrics_file"])
    hp, origin = _setup(run, d / "job.yaml")
    (batch, online, *chunked), (screened, masked, _) = _replays(run, hp, origin, seed)
    assert online == batch, f"{d.name}: push step by step differs from judge_run"
    assert chunked == [batch, batch], f"{d.name}: push_columns in chunks differs from judge_run"
    assert screened > 50 and masked > 20, "the audit is not vacuous"



def test_reads_run_end_names_every_detector_that_reads_it() -> None:
    """A leaf keeps its last result while its metrics' tracks are unchanged, except for the
    detectors registered with `reads_run_end`: any function of advisor.detectors that reads
    Series.run_end must be one of them (a helper that read it would make a kept result
    stale)."""

    import advisor.detectors as d

    tree = source_tree(d)
    readers = {
        fn.name
        for fn in tree.body
        if isinstance(fn, ast.FunctionDef)
        for node in ast.walk(fn)
        if isinstance(node, ast.Attribute) and node.attr == "run_end"
    }
    assert readers == {r.fn.__name__ for r in d.REGISTRY.values() if r.reads_run_end}


def _functions_reading(*attrs: str) -> set[str]:
    """The top-level functions of advisor.detectors that read one of `attrs` (an attribute
    name), themselves or through a helper they call."""

    import advisor.detectors as d

    tree = source_tree(d)
    functions = [fn for fn in tree.body if isinstance(fn, ast.FunctionDef)]
    calls = {
        fn.name: {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call)
                  and isinstance(n.func, ast.Name)}
        for fn in functions
    }  # fmt: skip
    readers = {
        fn.name
        for fn in functions
        for node in ast.walk(fn)
        if isinstance(node, ast.Attribute) and node.attr in attrs
    }
    while True:  # a function calling a reader reads it too
        more = {name for name, called in calls.items() if called & readers} - readers
        if not more:
            return readers
        readers |= more


def test_reads_wander_names_every_detector_that_reads_it() -> None:
    """The engine keeps a metric's long-run wander chunks only where a leaf of a detector in
    `reads_wander` judges it: every detector that reads Series.wander or Series.span_wander,
    itself or through a helper, must be one of them."""
    import advisor.detectors as d

    readers = _functions_reading("wander", "span_wander")
    detectors = {fn.__name__ for fn in d.DETECTORS.values()}
    assert readers & detectors == {r.fn.__name__ for r in d.REGISTRY.values() if r.reads_wander}


def test_baseless_names_every_screen_that_reads_no_baseline() -> None:
    """A screen registered `baseless` keeps its verdicts when a baseline is set: it must read no
    Column.baseline, itself or through a helper; and every screen that reads none is listed."""
    import advisor.detectors as d

    readers = _functions_reading("baseline")
    screens = {name: r.screen for name, r in d.REGISTRY.items() if r.screen is not None}
    baseless = {name for name, fn in screens.items() if fn.__name__ not in readers}
    assert baseless == {name for name, r in d.REGISTRY.items() if r.baseless}
