"""reports/ are golden files: they must equal a fresh rendering (scripts/make_reports.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script():  # type: ignore[no-untyped-def]
    path = ROOT / "scripts" / "make_reports.py"
    spec = importlib.util.spec_from_file_location("make_reports", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_symptom_has_a_report_run() -> None:
    from advisor.harness import symptom_ids
    from sample_metrics.generate import SYMPTOMS

    mod = _script()
    assert set(mod.runs()) == {"healthy", *(s for s in symptom_ids() if s in SYMPTOMS)}
    for run_id in mod.runs().values():
        assert (ROOT / "sample_metrics" / "corpus" / run_id / "label.json").exists(), run_id


def test_compare_flags_stale_missing_and_extra(tmp_path: Path) -> None:
    mod = _script()
    fresh, old = tmp_path / "fresh", tmp_path / "old"
    fresh.mkdir()
    old.mkdir()
    (fresh / "P1.md").write_text("a\nb\n")
    (old / "P1.md").write_text("a\nc\n")
    (fresh / "P1-P1-reward_mean.png").write_bytes(b"x")
    (old / "gone.md").write_text("")
    problems = mod._compare(fresh, old)
    assert any(p.startswith("stale: reports/P1.md") for p in problems)
    assert "missing: reports/P1-P1-reward_mean.png" in problems
    assert "stale extra file: reports/gone.md" in problems
    (old / "P1.md").write_text("a\nb\n")
    (old / "P1-P1-reward_mean.png").write_bytes(b"other bytes")  # PNG bytes are not compared
    (old / "gone.md").unlink()
    assert mod._compare(fresh, old) == []


def test_reports_are_up_to_date() -> None:
    mod = _script()
    cwd = Path.cwd()
    try:
        os.chdir(ROOT)
        problems = mod.check(ROOT / "reports")
    finally:
        os.chdir(cwd)
    if problems:
        hint = "reports/ is stale; run `python scripts/make_reports.py`\n"
        pytest.fail(hint + "\n".join(problems))


def test_the_readme_picture_is_a_report_plot() -> None:
    mod = _script()
    assert (ROOT / "reports" / mod.PICTURE).exists()
    assert mod.DOCS_PICTURE.read_bytes() == (ROOT / "reports" / mod.PICTURE).read_bytes()
    assert mod.DOCS_PICTURE.name in (ROOT / "README.md").read_text(encoding="utf-8")
