"""Shared helpers for the online tests: corpus runs replayed step by step through an Advisor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.online import Advisor
from advisor.types import Finding, Run

CORPUS = Path(__file__).resolve().parents[2] / "sample_metrics" / "corpus"


def corpus_runs() -> list[Path]:
    return (
        sorted(p for p in CORPUS.iterdir() if (p / "job.yaml").exists()) if CORPUS.is_dir() else []
    )


def one_per_symptom() -> list[Path]:
    """The first run of each labelled family (div, healthy, kl0, nan, oom, p1 ... slow)."""
    picked: dict[str, Path] = {}
    for path in corpus_runs():
        picked.setdefault(path.name.split("-")[0], path)
    return list(picked.values())


def rows(run: Run) -> Iterator[tuple[int, dict[str, Any]]]:
    """The Run's rows as an orchestrator would pass them: every column, raw and canonical."""
    for row in run.frame.iter_rows(named=True):
        step = row.pop("step")
        yield int(step), {k: v for k, v in row.items() if v is not None}


def replay(
    run: Run, job: Path, **kwargs: Any
) -> tuple[Advisor, dict[tuple[str, int | None], int | None]]:
    """Feed `run` step by step; returns the advisor and, per finding (id, onset step), the step
    at which observe returned it (None: at close)."""
    adv = Advisor.from_config(job, hints=run.config_hints, **kwargs)
    alerted: dict[tuple[str, int | None], int | None] = {}
    for step, metrics in rows(run):
        for f in adv.observe(step, metrics):
            alerted.setdefault((f.id, f.onset_step), step)
    for f in adv.close(run.ending):
        alerted.setdefault((f.id, f.onset_step), None)
    return adv, alerted


def ids(findings: list[Finding]) -> list[str]:
    return sorted({f.id for f in findings})


@pytest.fixture(scope="session")
def corpus_available() -> None:
    if not corpus_runs():
        pytest.skip("sample_metrics/corpus is not there")
