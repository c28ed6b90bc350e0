"""A run in which no canonical metric could be read is never "healthy": `diagnose` and `watch`
refuse it (exit 2, one line, nothing written), the API's status is "insufficient_data"."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from platformkit import advisor_cli

from advisor.api import diagnose
from advisor.report import render


def _logs(tmp_path: Path) -> list[Path]:
    console = tmp_path / "train.log"
    console.write_text(
        "".join(f"step:{i} - foo/bar:{0.5 + i / 1000} - timing_s/x:{i}\n" for i in range(1, 200)),
        encoding="utf-8",
    )
    jsonl = tmp_path / "metrics.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"step": i, "custom": 0.5}) + "\n" for i in range(1, 200)),
        encoding="utf-8",
    )
    return [console, jsonl]


def test_diagnose_refuses_a_run_without_a_judged_metric(tmp_path: Path) -> None:
    for log in _logs(tmp_path):
        before = sorted(tmp_path.iterdir())
        out = advisor_cli(
            dict(os.environ), "diagnose", str(log), "--output", str(tmp_path / "r.md")
        )
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr.count("\n") == 1 and "199 steps" in out.stderr
        assert "none with a metric the advisor judges" in out.stderr and str(log) in out.stderr
        assert sorted(tmp_path.iterdir()) == before


def test_watch_refuses_it_too(tmp_path: Path) -> None:
    log = _logs(tmp_path)[0]
    out = advisor_cli(
        dict(os.environ), "watch", str(log), "--idle", "1", "--poll", "0.1", timeout=120
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines()[-1].startswith(f"rl-advisor: error: {log}: 199 steps")


@pytest.mark.parametrize("which", [0, 1])
def test_the_api_says_insufficient_data(tmp_path: Path, which: int) -> None:
    d = diagnose(_logs(tmp_path)[which])
    assert d.status == "insufficient_data" and d.run is not None and d.run.metrics == []
    assert "**Verdict:** Not judged: 199 steps read" in render(d, "markdown")
    assert json.loads(render(d, "json"))["status"] == "insufficient_data"


def test_the_online_advisor_says_insufficient_data() -> None:
    from advisor import Advisor

    adv = Advisor()
    for step in range(1, 200):
        adv.observe(step, {"foo/bar": 0.5 + step / 1000})
    adv.close()
    assert adv.steps == 199 and adv.status == "insufficient_data"
    assert adv.diagnosis().status == "insufficient_data"
