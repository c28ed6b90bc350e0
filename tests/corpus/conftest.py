"""The corpus scored once per session: the accuracy targets and the accuracy docs share it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from advisor import harness as h

CORPUS = Path(__file__).resolve().parents[2] / "sample_metrics" / "corpus"


@pytest.fixture(scope="session")
def corpus_score() -> h.CorpusScore:
    cases = h.discover(CORPUS)
    # Two spawned workers: the corpus is 78 runs and the suite must stay fast.
    workers = min(2, os.cpu_count() or 1)
    return h.score(cases, h.predict_all(cases, workers), corpus="sample_metrics/corpus")
