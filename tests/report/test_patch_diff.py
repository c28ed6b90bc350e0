"""The patch is shown as a diff of the user's own job file: its layout, comments and lines."""

from __future__ import annotations

import shutil
from pathlib import Path

from advisor.api import diagnose
from advisor.report import render

RUN = (
    Path(__file__).resolve().parents[2]
    / "sample_metrics"
    / "corpus"
    / "p1-stall-verl-console-s0001"
)


def test_patch_diff_is_the_job_files_own(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    text = (RUN / "job.yaml").read_text(encoding="utf-8")
    job.write_text("# my comment stays\n" + text, encoding="utf-8")
    d = diagnose(RUN / "train.log", config=job)
    assert d.patch is not None and d.patch.changes
    change = d.patch.changes[0]
    diff = d.patch_diff or ""
    assert diff.startswith("--- job.yaml\n+++ job.yaml (patched)")
    assert any(line.startswith(f"+    {change.param}:") for line in diff.splitlines())
    assert any(line.startswith(f"-    {change.param}:") for line in diff.splitlines())
    assert diff in render(d, format="markdown")
    assert job.read_text(encoding="utf-8").startswith("# my comment stays")  # input untouched


def test_no_config_no_file_diff(tmp_path: Path) -> None:
    shutil.copy(RUN / "train.log", tmp_path / "train.log")
    d = diagnose(tmp_path / "train.log")
    assert d.patch_diff is None
