"""A log that counts epochs is reported in epochs wherever the report says where something
happens: onsets, clearings and recoveries, evidence windows, the cost table and the verdict's
waste, the checkpoint table, the warm-up and the headline curves (Markdown, HTML, zh); the JSON
adds `detected_epoch` and `cleared_epoch` beside `onset_epoch`. A log of steps reads as it did."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from epoch_logs import collapse_log
from report_helpers import HP, Judgement, finding, make_rules, make_run

from advisor.api import assemble
from advisor.report.html import render_html
from advisor.report.markdown import _in_records, render_markdown
from advisor.report.values import Axis, waste_said
from advisor.types import Severity

EPOCHS = {s: s / 40 for s in range(1, 401)}  # 40 records an epoch


def _diagnosis(epochs: dict[int, float] | None):
    run = make_run()
    if epochs is not None:
        run = dataclasses.replace(run, epochs=epochs)
    gone = dataclasses.replace(
        finding("P4", severity="info", onset=120),
        cleared_step=280,
        recovered_from=Severity.warning,
    )
    cleared = dataclasses.replace(finding("P1", onset=200), cleared_step=360, detected_step=240)
    return assemble(run, HP, Judgement([cleared, gone]), rules=make_rules())


def test_findings_say_onset_clearing_and_recovery_in_epochs() -> None:
    md = render_markdown(_diagnosis(EPOCHS))
    assert "| onset epoch | status |" in md
    assert "| epoch 5 | cleared at epoch 9 |" in md  # the table: onset 200, cleared 360
    assert "recovered at epoch 7 (warning while active)" in md
    assert "onset at epoch 5 (record 200), cleared at epoch 9 (record 360)." in md
    assert "recovered at epoch 7 (record 280; warning while active): an episode" in md
    # the evidence window (records 150-400) and the summary's step numbers, which are records
    assert "(plateau, epochs 3.75 to 10, records 150 to 400)" in md
    assert "from record 150 to 400" in md and "from step 150" not in md
    # the checkpoint table: the best validation at record 150 is epoch 3.75
    assert "| at epoch |" in md and "| epoch 3.75 (record 150) |" in md
    assert "Best validation reward 0.515 at record 150" in md  # the advice's steps: records
    # the Run section: records, the warm-up's end, the curves' ends
    assert "- records: 400 (1 to 400)" in md
    assert "first 150 records, to epoch 3.75" in md
    assert re.search(r"at epoch 0\.025 → \S+ at epoch 10\b", md)
    assert "at step" not in md.split("## Run")[1].split("## Assumptions")[0]


def test_the_same_findings_on_a_log_of_steps_read_as_before() -> None:
    md = render_markdown(_diagnosis(None))
    assert "| onset step | status |" in md
    assert "| 200 | cleared at step 360 |" in md
    assert "onset at step 200, cleared at step 360." in md
    assert "recovered at step 280 (warning while active): an episode" in md
    assert "(plateau, steps 150 to 400)" in md
    assert "epoch" not in md.lower().replace("n_epochs", "")


def test_json_adds_detected_and_cleared_epochs_only_with_an_axis() -> None:
    d = json.loads(_diagnosis(EPOCHS).to_json())
    p1 = next(f for f in d["findings"] if f["id"] == "P1")
    assert (p1["onset_epoch"], p1["detected_epoch"], p1["cleared_epoch"]) == (5.0, 6.0, 9.0)
    p4 = next(f for f in d["findings"] if f["id"] == "P4")
    assert p4["cleared_epoch"] == 7.0 and "detected_epoch" not in p4  # no detected_step
    plain = json.loads(_diagnosis(None).to_json())
    for f in plain["findings"]:
        assert not any(k.endswith("_epoch") for k in f)  # the contract's findings as they were


def test_html_says_the_same_in_epochs() -> None:
    html = render_html(_diagnosis(EPOCHS))
    assert "<th>onset epoch</th>" in html and "<td>cleared at epoch 9" in html
    assert "cleared at epoch 9 (record 360)." in html
    assert "epochs 3.75 to 10, records 150 to 400" in html
    assert "<li>axis: the log counts epochs, not steps" in html
    assert "<td>epoch 3.75 (record 150)</td>" in html


def test_zh_says_epochs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    md = render_markdown(_diagnosis(EPOCHS))
    assert "第 9 轮消失" in md and "第 7 轮已恢复" in md
    assert "第 3.75–10 轮，第 150–400 条记录" in md
    assert "第 150 步" not in md  # the summaries count records too
    assert "起始轮次" in md


def test_axis_and_waste_in_epochs() -> None:
    ax = Axis({"unit": "epoch", "epochs": {"1": 0.5, "2": 1.0, "3": 1.0}})
    assert ax.on and ax.epoch(2) == 1.0 and ax.epoch(9) is None
    assert ax.span(1, 2) == "0.5-1" and ax.span(2, 3) == "1" and ax.span(1, 9) is None
    assert not Axis(None).on and Axis(None).epoch(1) is None
    cost = {
        "entries": [
            {"what": "the steps came after the divergence", "share": 1.0, "unit": "steps",
             "window": [2, 3], "steps": 2, "of_run": 0.66, "hours": None, "finding": "DIV"}
        ],
        "run_steps": 3,
    }
    assert waste_said(cost, ax) == (
        "Waste: the 2 records that came after the divergence (epoch 1): 66% of the run's "
        "3 records."
    )
    assert waste_said(cost) == (
        "Waste: the 2 steps that came after the divergence (steps 2-3): 66% of the run's "
        "3 steps."
    )


def test_summaries_count_records() -> None:
    assert _in_records("flat over steps 26–85, the block ending at step 40") == (
        "flat over records 26–85, the block ending at record 40"
    )
    assert _in_records("the steps after it, 3 warm-up sigmas") == (
        "the steps after it, 3 warm-up sigmas"  # no number: not a place on the axis
    )


def test_cost_and_verdict_in_epochs_through_the_entry_point(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    collapse_log(p)
    cmd = [sys.executable, "-m", "advisor", "diagnose", str(p), "--fail-on", "never"]
    d = json.loads(
        subprocess.run([*cmd, "--format", "json"], capture_output=True, text=True,
                       check=True).stdout
    )
    epochs = d["run"]["axis"]["epochs"]
    waste = next(e for e in d["cost"]["entries"] if e["finding"] == "P4")
    lo, hi = (epochs[str(s)] for s in waste["window"])
    md = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert f"(epochs {lo:g}-{hi:g}): " in md.split("\n## ")[0]  # the verdict's waste
    assert "| waste | finding | epochs | records wasted |" in md
    assert f"| P4 | {lo:g}-{hi:g} |" in md
    for f in d["findings"]:
        if f.get("cleared_step") is not None:
            assert f["cleared_epoch"] == epochs[str(f["cleared_step"])]
    assert list(tmp_path.iterdir()) == [p]


def test_forecasts_count_records_on_an_epoch_log() -> None:
    forecast = {
        "metric": "entropy", "finding": "P4", "threshold_is": "the entropy floor",
        "threshold": 0.01, "step": 460, "level": 80, "interval": [430, 500], "scale": "log",
        "points": 12, "fit_from": 300, "r2": 0.97,
    }
    md = render_markdown(dataclasses.replace(_diagnosis(EPOCHS), forecasts=[forecast]))
    assert "at record \\~460 (80% interval 430-500)" in md and "from record 300" in md
    plain = render_markdown(dataclasses.replace(_diagnosis(None), forecasts=[forecast]))
    assert "at step \\~460 (80% interval 430-500)" in plain and "from step 300" in plain
