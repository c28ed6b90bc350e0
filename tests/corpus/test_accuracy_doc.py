"""README.md's accuracy table and docs/accuracy.md must equal a fresh harness run
(scripts/make_accuracy.py), as reports/ must equal a fresh rendering."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

from advisor import harness as h
from advisor.realruns import default_real_dir

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    path = ROOT / "scripts" / "make_accuracy.py"
    spec = importlib.util.spec_from_file_location("make_accuracy", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_accuracy_figures_are_up_to_date(corpus_score: h.CorpusScore) -> None:
    real_dir = default_real_dir()
    if real_dir is None:
        pytest.skip("../shared/real_runs not found: the public runs are part of the figures")
    cwd = Path.cwd()
    try:
        os.chdir(ROOT)  # repo-relative names, as the script writes them
        mod = _script()
        real = h.score_real(real_dir, h.default_real_labels())
        livefire = h.score_livefire(mod.LIVEFIRE)
        rep = h.HarnessReport(corpus=corpus_score, real=real, livefire=livefire)
        problems = mod.stale(rep)
    finally:
        os.chdir(cwd)
    if problems:
        pytest.fail("stale: " + ", ".join(problems) + "; run `python scripts/make_accuracy.py`")


def test_the_generated_blocks_are_marked() -> None:
    mod = _script()
    for path in (mod.README, mod.DOC):
        text = path.read_text(encoding="utf-8")
        assert text.count(mod.BEGIN) == 1 and text.count(mod.END) == 1, path
