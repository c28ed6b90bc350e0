"""The harness's scoring, with stand-in predictors (independent of the detectors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor import harness as h
from advisor.prediction import GUIDE_ORDER
from advisor.realruns import default_full_dir
from advisor.types import InputError, Severity


def _label_dir(root: Path, run_id: str, symptoms: list[str], onset: int | None,
               acceptable: list[str] | None = None, eval_steps: int = 10) -> Path:
    d = root / run_id
    d.mkdir(parents=True)
    (d / "metrics.jsonl").write_text("{}\n")
    (d / "label.json").write_text(json.dumps({
        "run_id": run_id, "symptoms": symptoms, "onset_step": onset,
        "acceptable": acceptable or [], "eval_steps": eval_steps,
        "family": symptoms[0] if symptoms else "healthy", "metrics_file": "metrics.jsonl",
    }))
    return d


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    _label_dir(tmp_path, "h1", [], None)
    _label_dir(tmp_path, "h2", [], None)
    _label_dir(tmp_path, "p3a", ["P3"], 100, ["DIV"])
    _label_dir(tmp_path, "p3b", ["P3"], 200, ["DIV"])
    _label_dir(tmp_path, "p1a", ["P1"], 1, ["KL0"], eval_steps=50)
    return tmp_path


def _predictor(table: dict[str, list[tuple[str, str, int | None, int | None]]]) -> h.Predictor:
    def run(metrics: Path, config: Path | None) -> h.Prediction:
        rows = table.get(metrics.parent.name, [])
        return h.Prediction(metrics.parent.name, alarms=[h.Alarm(*r) for r in rows])
    return run


def test_perfect_predictor_meets_targets(corpus: Path) -> None:
    pred = _predictor({"p3a": [("P3", "error", 110, 140)], "p3b": [("P3", "warning", 190, 230)],
                       "p1a": [("P1", "warning", 1, 160)]})
    rep = h.run_harness(corpus, predictor=pred)
    s = rep.corpus
    assert s is not None and s.meets_targets, s.target_misses
    p3 = next(p for p in s.per_symptom if p.id == "P3")
    assert (p3.tp, p3.fp, p3.fn, p3.precision, p3.recall) == (2, 0, 0, 1.0, 1.0)
    assert p3.median_onset_error == 0.0  # +10 and -10
    assert p3.median_delay == 35.0  # 40 and 30
    assert s.false_alarm_rate == 0.0 and s.exact_runs == 5


def test_false_alarms_misses_and_acceptable(corpus: Path) -> None:
    pred = _predictor({
        "h1": [("P2", "warning", 50, 60)],  # false alarm on a healthy run
        "h2": [("P4", "info", 50, 60)],  # info is advice, not an alarm
        "p3a": [("P3", "error", 100, 100), ("DIV", "error", 120, 130)],  # DIV acceptable
        "p3b": [("KL0", "warning", 1, 150)],  # miss P3, false KL0
        "p1a": [("P1", "warning", 400, 400)],  # late onset: 399 steps > 2 x 50
    })
    s = h.run_harness(corpus, predictor=pred).corpus
    assert s is not None
    by = {p.id: p for p in s.per_symptom}
    assert (by["P3"].tp, by["P3"].fn, by["P3"].recall) == (1, 1, 0.5)
    assert (by["P2"].fp, by["P2"].precision) == (1, 0.0)
    assert (by["KL0"].fp, by["DIV"].fp) == (1, 0)
    assert by["P4"].fp == 0
    assert (s.healthy_with_alarm, s.false_alarm_rate) == (1, 0.5)
    assert (by["P1"].onset_ok, by["P1"].onset_judged) == (0, 1)
    assert not s.meets_targets
    assert s.confusion["healthy"] == {"P2": 1, "none": 1, "runs": 2}
    assert any("p1a: P1 onset 400" in f for f in s.failures)


def test_no_config_judges_without_the_job_file(tmp_path: Path) -> None:
    d = _label_dir(tmp_path, "r", ["P1"], 1)
    (d / "job.yaml").write_text("training: {hyper_parameters: {eval_steps: 10}}\n")
    seen: list[Path | None] = []

    def spy(metrics: Path, config: Path | None) -> h.Prediction:
        seen.append(config)
        return h.Prediction("r")

    h.run_harness(tmp_path, predictor=spy)
    h.run_harness(tmp_path, predictor=spy, use_config=False)
    assert seen == [d / "job.yaml", None]


def test_advisor_errors_are_counted_not_raised(corpus: Path) -> None:
    def broken(metrics: Path, config: Path | None) -> h.Prediction:
        return h.Prediction(metrics.parent.name, error="input: bad")

    s = h.run_harness(corpus, predictor=broken).corpus
    assert s is not None and s.errors == 5 and not s.meets_targets


@given(st.lists(st.tuples(st.sampled_from(["", *h.symptom_ids()]),
                          st.sets(st.sampled_from(h.symptom_ids()), max_size=3)),
                min_size=1, max_size=30))
@settings(max_examples=60, deadline=None)
def test_counts_are_consistent(runs: list[tuple[str, set[str]]]) -> None:
    cases = [h.Case(f"r{i}", Path("m"), None, (lab,) if lab else (), (), 10 if lab else None,
                    10, lab or "healthy") for i, (lab, _) in enumerate(runs)]
    preds = [h.Prediction(f"r{i}", alarms=[h.Alarm(a, "warning", 10, 12) for a in sorted(al)])
             for i, (_, al) in enumerate(runs)]
    s = h.score(cases, preds)
    for p in s.per_symptom:
        assert p.tp + p.fn == p.support == sum(lab == p.id for lab, _ in runs)
        assert p.tp + p.fp == sum(p.id in al for lab, al in runs)
    assert s.healthy_runs == sum(not lab for lab, _ in runs)
    assert sum(row["runs"] for row in s.confusion.values()) == len(runs)


def test_by_format_breakdown(tmp_path: Path) -> None:
    cases = [h.Case("a", Path("m"), None, ("P3",), (), 5, 10, "P3", "trl-state"),
             h.Case("b", Path("m"), None, (), (), None, 10, "healthy", "trl-state"),
             h.Case("c", Path("m"), None, ("P1",), ("KL0",), 1, 10, "P1", "verl-jsonl")]
    preds = [h.Prediction("a", [h.Alarm("P3", "error", 5, 6)]),
             h.Prediction("b", [h.Alarm("P2", "warning", 5, 6)]),
             h.Prediction("c", [h.Alarm("KL0", "warning", 1, 6)])]
    s = h.score(cases, preds)
    assert s.by_format["trl-state"] == {"runs": 2, "symptoms": 1, "found": 1,
                                        "wrong_alarm_runs": 1}
    assert s.by_format["verl-jsonl"] == {"runs": 1, "symptoms": 1, "found": 0,
                                         "wrong_alarm_runs": 0}
    assert "| trl-state | 2 | 1/1 | 1 |" in h.render_markdown(h.HarnessReport(s))


def test_discover_reads_generated_labels(tmp_path: Path) -> None:
    from sample_metrics.generate import make_run
    from sample_metrics.writers import write_run

    run = make_run("P9", 0)
    write_run(run, tmp_path / "a" / run.run_id)  # nested one level: found by rglob
    [case] = h.discover(tmp_path)
    assert case.symptoms == ("P9",) and case.acceptable == tuple(run.label["acceptable"])
    assert case.eval_steps == run.hp["eval_steps"] and case.config is not None
    assert case.metrics.name == run.label["metrics_file"] if "metrics_file" in run.label else True


def test_discover_rejects_empty_and_bad(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no label\.json"):
        h.discover(tmp_path)
    with pytest.raises(InputError, match="not a directory"):
        h.discover(tmp_path / "missing")
    d = tmp_path / "x"
    d.mkdir()
    (d / "label.json").write_text('{"symptoms": "P1"}')
    with pytest.raises(InputError, match="must be a list"):
        h.discover(tmp_path)


def test_real_runs_scoring(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "log.txt").write_text("x")
    labels = tmp_path / "labels.yaml"
    labels.write_text(
        "runs:\n"
        "  a: {metrics: log.txt, expected: [DIV], acceptable: [P9], forbidden: [all]}\n"
        "  b: {metrics: log.txt, expected: [], forbidden: [OOM]}\n"
    )
    pred = _predictor({"a": [("DIV", "error", 5, 5), ("P9", "warning", 5, 5)],
                       "b": [("OOM", "error", 9, 9)]})
    rep = h.run_harness(None, tmp_path, labels, predictor=pred)
    a, b = rep.real
    assert a.passed and "P1" in a.forbidden and "P9" not in a.forbidden
    assert not b.passed and b.forbidden_hits == ["OOM"]
    md = h.render_markdown(rep)
    assert "Public runs (1/2 pass)" in md


def test_markdown_and_json_render(corpus: Path) -> None:
    pred = _predictor({"p3a": [("P3", "error", 110, 140)]})
    rep = h.run_harness(corpus, predictor=pred)
    md = h.render_markdown(rep)
    assert "| P3 | 2 | 100.0% | 50.0% |" in md
    assert "| healthy | 2 | false alarms 0/2 (0.0%)" in md
    assert "| all symptoms | 3 | 100.0% | 33.3% |" in md
    data = json.loads(rep.to_json())
    assert data["corpus"]["runs"] == 5 and data["real"] == []
    detail = {r["run_id"]: r for r in data["corpus"]["runs_detail"]}
    assert detail["p3a"]["alarms"] == ["P3"] and detail["p3a"]["onset_step"] == 100
    assert detail["p3a"]["findings"][0]["detected_step"] == 140


def test_cli_harness_json_and_check(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import advisor.cli.harness  # noqa: F401  (registers the command)
    from advisor.cli import app

    monkeypatch.setattr(h, "predict", _predictor({}))
    res = CliRunner().invoke(app, ["harness", str(corpus), "--no-real", "--format", "json",
                                   "--check"])
    assert res.exit_code == 1, res.output  # every symptom missed
    assert json.loads(res.stdout)["corpus"]["per_symptom"][0]["id"] == "P1"
    res = CliRunner().invoke(app, ["harness", str(corpus), "--no-real"])
    assert res.exit_code == 0 and "## Accuracy on" in res.stdout
    from advisor.cli import main  # the console script's entry point, as CI calls it

    assert main(["harness", str(corpus), "--no-real", "--check"]) == 1
    assert main(["harness", str(corpus), "--no-real", "--table"]) == 0
    assert main(["harness", str(corpus / "missing"), "--no-real"]) == 2


def test_symptom_found_twice_is_scored_by_its_earliest_onset(corpus: Path) -> None:
    pred = _predictor({"p3a": [("P3", "warning", 400, 420), ("P3", "error", 105, 120),
                               ("P3", "info", 90, 90)]})
    s = h.run_harness(corpus, predictor=pred).corpus
    assert s is not None
    p3 = next(p for p in s.per_symptom if p.id == "P3")
    assert (p3.tp, p3.median_onset_error, p3.median_delay) == (1, 5.0, 20.0)
    assert not any("p3a: P3 onset" in f for f in s.failures)


def test_sets_side_by_side_and_recovered_episodes(tmp_path: Path) -> None:
    # Two sets, scored each on its own. A recovered episode (reported at info, the severity it
    # had while active kept) is a detection of its symptom but no alarm on a healthy run.
    a, b = tmp_path / "a", tmp_path / "b"
    _label_dir(a, "p3a", ["P3"], 100)
    _label_dir(a, "h1", [], None)
    _label_dir(b, "p2a", ["P2"], 50)
    _label_dir(b, "h2", [], None)

    def run(metrics: Path, config: Path | None) -> h.Prediction:
        rows = {
            "p3a": [h.Alarm("P3", "error", 100, 120, recovered=True)],
            "h1": [h.Alarm("DIV", "error", 30, 40, recovered=True)],
            "p2a": [],
            "h2": [h.Alarm("P2", "warning", 30, 40)],
        }[metrics.parent.name]
        return h.Prediction(metrics.parent.name, alarms=rows)

    rep = h.run_harness([a, b], predictor=run)
    assert [s.corpus for s in rep.sets] == [str(a), str(b)]
    first, second = rep.sets
    p3 = next(p for p in first.per_symptom if p.id == "P3")
    assert p3.tp == 1 and first.healthy_with_alarm == 0
    p2 = next(p for p in second.per_symptom if p.id == "P2")
    assert p2.fn == 1 and p2.fp == 1 and second.healthy_with_alarm == 1
    rows = h.summary_table(rep)
    assert len(rows) == 4 and "0/1" in rows[2] and "1/1" in rows[3]
    assert "## Side by side" in h.render_markdown(rep)


def test_the_scored_symptoms_are_the_rulebooks_alarms(monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor import engine

    book = engine.load_symptom_rules()
    p2 = book.by_id["P2"]
    added = [
        p2.model_copy(update={"id": "NEWW", "severity": Severity.warning}),
        p2.model_copy(update={"id": "NEWI", "severity": Severity.info}),
    ]
    bigger = book.model_copy(update={"rules": [*added, *book.rules]})
    monkeypatch.setattr(engine, "load_symptom_rules", lambda: bigger)
    h.symptom_ids.cache_clear()
    try:
        ids = h.symptom_ids()
    finally:
        h.symptom_ids.cache_clear()
    alarms = {r.id for r in bigger.rules if r.severity.value in ("warning", "error")}
    assert set(ids) == alarms and "NEWW" in ids and "NEWI" not in ids
    # the guide's rows first, in the guide's table order; the others after, in the rulebook's
    assert ids[: len(GUIDE_ORDER)] == GUIDE_ORDER
    rest = tuple(r.id for r in bigger.rules if r.id in alarms and r.id not in GUIDE_ORDER)
    assert ids[len(GUIDE_ORDER) :] == rest and rest[0] == "NEWW"


def test_full_curves_scored_beside_the_public_runs(tmp_path: Path) -> None:
    full = tmp_path / "full"
    (full / "c").mkdir(parents=True)
    (full / "c" / "log.txt").write_text("x")
    labels = tmp_path / "full_labels.yaml"
    labels.write_text("runs:\n  c: {metrics: log.txt, expected: [P4], forbidden: [all]}\n")
    assert default_full_dir(tmp_path) == full and default_full_dir(full) is None
    pred = _predictor({"c": [("P4", "warning", 50, 60)]})
    rep = h.run_harness(None, full_dir=full, full_labels=labels, predictor=pred)
    assert rep.real == [] and [r.passed for r in rep.full] == [True]
    assert "Public full curves (1/1 pass)" in h.render_markdown(rep)
    assert json.loads(rep.to_json())["full"][0]["name"] == "c"


def test_cli_full_dir_names_a_missing_run(tmp_path: Path) -> None:
    from advisor.cli import main

    # the project's own full_labels.yaml names runs this empty folder does not hold
    assert main(["harness", "--no-real", "--full-dir", str(tmp_path)]) == 2
