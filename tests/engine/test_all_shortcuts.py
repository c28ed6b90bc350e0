"""The engine's shortcuts inside an `all` change nothing. With them, an `all` whose later kid
is surely NO by a result known without a detector run (shared at the block, its memo, its
screen) says NO without judging the kids before it (_RuleEvaluation._unjudged_ok), and a
quiet evaluation is reused while the kid that made an `all` say NO gives the same result,
whatever the kids before it give (evaluation._deciding). Every fixture of
test_same_judgement is judged with them and without them (every kid judged in order until
one says NO, every leaf reached checked again), and the judgements are identical; on the
corpus both shortcuts are taken."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_same_judgement import FIXTURES, ROOT, _setup, _view

from advisor.engine import evaluation, judge_run
from advisor.ingest import load_run


class _Counted:
    """The shortcuts as the engine takes them, counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.unjudged = self.dropped = 0
        ok, deciding = evaluation._RuleEvaluation._unjudged_ok, evaluation._deciding

        def unjudged_ok(judge: Any, metrics: list[list[list[str]]]) -> bool:
            got = ok(judge, metrics)
            self.unjudged += got
            return got

        def kept(reached: list[Any]) -> list[Any]:
            out = deciding(reached)
            self.dropped += len(reached) - len(out)
            return out

        monkeypatch.setattr(evaluation._RuleEvaluation, "_unjudged_ok", unjudged_ok)
        monkeypatch.setattr(evaluation, "_deciding", kept)


def _without(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kid of an `all` judged until one says NO; every leaf reached kept for reuse."""
    monkeypatch.setattr(evaluation._RuleEvaluation, "_unjudged_ok", lambda judge, metrics: False)
    monkeypatch.setattr(evaluation, "_deciding", lambda reached: list(reached))


def _both(metrics: Path, job: Path | None, monkeypatch: pytest.MonkeyPatch
          ) -> tuple[str, str, _Counted]:  # fmt: skip
    run = load_run(metrics)
    hp, origin = _setup(run, job)
    counted = _Counted(monkeypatch)
    taken = _view(judge_run(run, hp, origin=origin))
    _without(monkeypatch)
    return taken, _view(judge_run(run, hp, origin=origin)), counted


@pytest.mark.parametrize(
    ("name", "metrics", "job"), FIXTURES, ids=[name for name, _, _ in FIXTURES]
)
def test_every_fixture_judged_alike_with_and_without_the_shortcuts(
    name: str, metrics: Path, job: Path | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken, judged, _ = _both(metrics, job, monkeypatch)
    assert taken == judged, f"{name}: the shortcuts inside an `all` changed the judgement"


@pytest.mark.parametrize("name", ["kl0-flat-verl-jsonl-s0002", "p1-flat-trl-state-s0000"])
def test_the_shortcuts_are_taken(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    d = ROOT / "sample_metrics" / "corpus" / name
    metrics = next(p for p in sorted(d.iterdir()) if p.name not in ("job.yaml", "label.json"))
    taken, judged, counted = _both(metrics, d / "job.yaml", monkeypatch)
    assert taken == judged
    assert counted.unjudged > 10 and counted.dropped > 20, "the comparison is not vacuous"


def test_kids_go_unjudged_only_where_no_leaf_can_want_its_metric() -> None:
    """A kid may go unjudged only where each of its leaves has a metric logged: one of no
    logged metric would be ABSENT, and say that metric missing (or, shared, not say it)."""
    from advisor.engine import Monitor

    m = Monitor({"algorithm": "grpo", "eval_steps": 10})
    for step in range(1, 40):
        m.push(step, {"reward_mean": 0.3, "entropy": 0.8})
    assert m._unjudged_ok([[["reward_mean"]], [["entropy"], ["grad_norm", "entropy"]]])
    assert not m._unjudged_ok([[["reward_mean"]], [["zero_std_frac"]]])
    assert not m._unjudged_ok([[["grad_norm", "ppo_kl"]]])
    assert not m._unjudged_ok([[["not_a_metric_the_rules_read"]]])


def test_a_rule_that_takes_a_shared_absent_leaf_says_its_metric_missing(tmp_path: Path) -> None:
    """Two rules on the same leaf, whose metric is never logged: the first judges it ABSENT,
    the second takes that result (shared at the block) and still says the metric missing, as
    it would judging the leaf itself; what a rule says missing does not depend on the rules
    before it (so a rule may go unevaluated whatever leaves it shares)."""
    from advisor.book.symptoms import parse_symptom_rules, rulebook_path
    from sample_metrics.generate import make_run
    from sample_metrics.writers import write_run

    shipped = rulebook_path().read_text(encoding="utf-8")
    rule = """  - id: {id}
    name: {name}
    severity: warning
    priority: {priority}
    warmup: false
    summary: s
    why: w
    example: e
    use_instead: u
    source: test
    causes: [c]
    action: {{advice: a, changes: [], safety: display_only}}
    fallback: {{advice: f, changes: [], safety: display_only}}
    when: {{detector: above, metric: zero_std_frac, params: {{value: 0.5, k: 3, m: 4}}}}
"""
    book = tmp_path / "symptoms.yaml"
    book.write_text(
        shipped[: shipped.index("\nrules:\n")]
        + "\nrules:\n"
        + rule.format(id="P1", name="first", priority=1)
        + rule.format(id="P2", name="second", priority=2),
        encoding="utf-8",
    )
    made = make_run("healthy", 3, n_steps=300, framework="verl", fmt="verl-jsonl", variant="steady")
    run = load_run(write_run(made, tmp_path / "run"))
    assert "zero_std_frac" not in run.frame.columns
    said = [
        a for a in judge_run(run, rules=parse_symptom_rules(book)).assumptions if "not judged" in a
    ]
    assert said == [
        "P1 first not judged: needs zero_std_frac, not in this run.",
        "P2 second not judged: needs zero_std_frac, not in this run.",
    ]
