"""`advisor.validate` and `rl-advisor validate` give one verdict: the same Diagnosis (status,
findings, assumptions) on every job file the repository ships, and the exit code follows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import advisor
from advisor.cli import main
from advisor.types import InputError

ROOT = Path(__file__).resolve().parents[2]
JOB_FILES = sorted(
    [
        *(ROOT / "sample_metrics" / "jobs").glob("*.yaml"),
        *(ROOT / "sample_metrics" / "corpus").glob("*/job.yaml"),
        *(ROOT / "tests" / "config" / "bases").glob("*.yaml"),
        *(p for p in (ROOT / "tests" / "config" / "holdout").glob("*.yaml")
          if p.name != "expectations.yaml"),
        *(ROOT / "tests" / "ingest" / "fixtures").glob("*.json"),
    ]
)  # fmt: skip


def test_the_job_files_are_found() -> None:
    assert len(JOB_FILES) > 100


@pytest.mark.parametrize("path", JOB_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_api_and_cli_agree(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        api = json.loads(advisor.validate(path).to_json())
    except InputError:
        api = None
    code = main(["validate", str(path), "--format", "json", "--fail-on", "warning"])
    out = capsys.readouterr().out
    if api is None:
        assert code == 2
        return
    cli = json.loads(out)
    assert cli == api
    assert code == (1 if api["status"] == "issues" else 0)
    worst = {f["severity"] for f in api["config_findings"]} & {"warning", "error"}
    assert (api["status"] == "issues") == bool(worst)


def test_an_error_makes_the_api_verdict_issues() -> None:
    """A job whose values fail to load (C002 errors) is not healthy for the API either."""
    d = advisor.validate(ROOT / "tests" / "config" / "holdout" / "m25_wrong_types.yaml")
    assert d.status == "issues" and any(f.severity.value == "error" for f in d.config_findings)
