"""`rl-advisor demo [SYMPTOM]` through the real entry point, and the runs it ships."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from advisor.cli.demo import RUNS, runs_dir

ROOT = Path(__file__).resolve().parents[2]


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RL_ADVISOR_")}
    return subprocess.run(
        [sys.executable, "-m", "advisor", "demo", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_without_symptom_lists_them() -> None:
    out = _demo()
    assert out.returncode == 0, out.stderr
    listed = [ln.split()[0] for ln in out.stdout.splitlines()[1:]]
    assert listed == list(RUNS)


@pytest.mark.parametrize("symptom", ["P3", "healthy", "nan"])
def test_a_symptom_is_diagnosed(symptom: str) -> None:
    out = _demo(symptom, "--format", "json")
    assert out.returncode == 0, out.stderr
    ids = {f["id"] for f in json.loads(out.stdout)["findings"]}
    if symptom == "healthy":
        assert not ids
    else:
        assert symptom.upper() in ids


def test_in_chinese() -> None:
    out = _demo("P4", "--lang", "zh")
    assert out.returncode == 0 and "**结论：**" in out.stdout and "### P4" in out.stdout


def test_an_unknown_symptom_is_one_line_exit_2() -> None:
    out = _demo("P33")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [
        "rl-advisor: error: demo P33: no such demo (known: healthy, P1, P2, P3, KL0, P4, SLOW,"
        " OOM, P9, P6, NAN, DIV); did you mean P3?"
    ]


def test_the_wheel_ships_every_demo_run() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    setup = conf["setuptools"]
    assert "advisor.demo_runs" in setup["packages"]
    assert setup["package-dir"]["advisor.demo_runs"] == "sample_metrics/corpus"
    assert sorted(setup["package-data"]["advisor.demo_runs"]) == sorted(
        f"{r}/*" for r in RUNS.values()
    )
    for run in RUNS.values():
        folder = runs_dir() / run
        label = json.loads((folder / "label.json").read_text(encoding="utf-8"))
        assert (folder / label["metrics_file"]).is_file() and (folder / "job.yaml").is_file()


def test_the_reports_show_the_same_runs() -> None:
    """reports/ holds one report per demo run (make_reports.py renders the demo's runs)."""
    shown = sorted(p.stem for p in (ROOT / "reports").glob("*.md") if p.stem != "README")
    assert shown == sorted(RUNS)
