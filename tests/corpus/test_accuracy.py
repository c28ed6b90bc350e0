"""The advisor's accuracy on the committed small corpus must meet the diagnosis issue's targets:
per-symptom precision and recall >= 0.95, no alarm (warning or above) on healthy runs, and every
detected onset within 2 x eval_steps of the labelled one. Run `rl-advisor harness
sample_metrics/corpus` to see the full table when this fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor import harness as h
from sample_metrics.generate import SYMPTOMS

CORPUS = Path(__file__).resolve().parents[2] / "sample_metrics" / "corpus"


@pytest.fixture(scope="module")
def score(corpus_score: h.CorpusScore) -> h.CorpusScore:
    return corpus_score


def test_every_run_is_judged(score: h.CorpusScore) -> None:
    errors = [f for f in score.failures if "advisor error" in f]
    assert not errors, "\n".join(errors[:10])


def test_no_alarm_on_healthy_runs(score: h.CorpusScore) -> None:
    fps = [f for f in score.failures if f.startswith("healthy-") and "false alarm" in f]
    assert score.healthy_with_alarm == 0, "\n".join(fps)


@pytest.mark.parametrize("sid", h.symptom_ids())
def test_symptom_precision_recall_and_onset(score: h.CorpusScore, sid: str) -> None:
    p = next(s for s in score.per_symptom if s.id == sid)
    related = [f for f in score.failures if f" {sid}" in f]
    detail = "\n".join(related[:12])
    if sid not in SYMPTOMS:  # a scored rule no family of the generator draws: no false alarm
        assert p.support == 0 and p.fp == 0, f"{sid} alarmed on runs not labelled {sid}\n{detail}"
        return
    assert p.support > 0, f"no {sid} run in the corpus"
    assert (p.recall or 0.0) >= h.TARGETS["recall"], f"{sid} recall {p.recall}\n{detail}"
    if p.tp + p.fp:
        assert (p.precision or 0.0) >= h.TARGETS["precision"], (
            f"{sid} precision {p.precision}\n{detail}"
        )
    assert p.onset_ok == p.onset_judged, f"{sid} onsets off\n{detail}"


# Issue 6: level and event symptoms are alerted soon after they begin (graded persistence:
# one block far past the threshold is enough). Plateau, oscillation and validation symptoms
# (P1, KL0, P2, P6) need several evaluations by nature and are not held to this.
PROMPT = ("P3", "P4", "SLOW", "P9", "DIV", "NAN", "OOM")


@pytest.mark.parametrize("sid", PROMPT)
def test_level_and_event_symptoms_are_alerted_within_two_intervals(
    score: h.CorpusScore, sid: str
) -> None:
    p = next(s for s in score.per_symptom if s.id == sid)
    assert p.median_delay_eval is not None and p.median_delay_eval <= 2.0, (
        f"{sid}: median detection delay {p.median_delay_eval} eval_steps after the onset"
    )
