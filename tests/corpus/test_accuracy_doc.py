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


# ----------------------------------------------------------------------------- full curves


def test_the_full_curve_blocks_list_the_labelled_curves() -> None:
    # what --check verifies without a copy of the logs (CI has none): the README's and
    # docs/accuracy.md's full-curve tables name exactly the labelled curves and their labels
    mod = _script()
    want = mod.labelled_full()
    assert len(want) >= 12
    for path in (mod.README, mod.DOC):
        text = path.read_text(encoding="utf-8")
        assert text.count(mod.FULL_BEGIN) == 1 and text.count(mod.FULL_END) == 1, path
        assert mod.full_listed(text) == want, path


def test_a_label_the_full_curve_block_does_not_say_is_found() -> None:
    mod = _script()
    text = mod.README.read_text(encoding="utf-8")
    name, wanted = mod.labelled_full()[0]
    changed = text.replace(f"| {name} | {wanted} |", f"| {name} | P6 |", 1)
    assert changed != text
    assert mod.full_listed(changed) != mod.labelled_full()
    dropped = "\n".join(ln for ln in text.splitlines() if not ln.startswith(f"| {name} |"))
    assert [n for n, _ in mod.full_listed(dropped)] == [n for n, _ in mod.labelled_full()][1:]
    assert mod.full_listed("no block here") is None


def test_full_dir_that_is_not_a_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _script()
    missing = tmp_path / "nowhere"
    assert mod.main(["--check", "--full-dir", str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "not a folder" in err and "Traceback" not in err
