"""The cost of waste and the forecasts through `rl-advisor diagnose` (the real entry point)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from runs import write_run

from advisor.cli import main


def _json(capsys, *args: str) -> dict:
    code = main(["diagnose", *args, "--format", "json", "--fail-on", "never"])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_zero_gradients_and_alike_groups_are_priced(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run.jsonl", zero_grad_from=100, zero_std=0.5)
    d = _json(capsys, str(run), "--gpus", "8", "--gpu-hour-price", "2", "--currency", "EUR")
    by = {e["kind"]: e for e in d["cost"]["entries"]}
    # 50 of 200 steps of 60 s had a gradient of exactly 0: 50 min, x 8 GPUs, x 2 EUR
    zero = by["zero_gradient"]
    assert zero["share"] == 0.25 and zero["steps"] == 50.0 and zero["finding"] == "WASTE"
    assert zero["hours"] == pytest.approx(50 / 60, abs=1e-5)
    assert zero["gpu_hours"] == pytest.approx(8 * 50 / 60, abs=1e-3)
    assert zero["cost"] == pytest.approx(2 * 8 * 50 / 60, abs=0.01)
    alike = by["all_alike_groups"]
    assert alike["share"] == 0.5 and alike["steps"] == 100.0
    assert d["cost"]["currency"] == "EUR" and d["cost"]["gpus_from"] == "--gpus"
    assert d["cost"]["run_hours"] == pytest.approx(200 / 60, abs=1e-3)


def test_the_verdict_states_the_waste(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run.jsonl", zero_grad_from=100, zero_std=0.5)
    assert main(["diagnose", str(run), "--gpus", "8", "--gpu-hour-price", "2"]) == 0
    out = capsys.readouterr().out
    verdict = next(line for line in out.splitlines() if line.startswith("**Verdict:**"))
    assert (
        "Waste: 50% of the rollouts were in groups whose samples all scored alike (steps "
        "1-200): 1.7 h, 50% of the run's 3.3 h, 13.33 GPU-hours at 8 GPUs, 26.67 USD"
    ) in verdict
    assert "## Cost of waste" in out and "| 25% of the steps had a gradient of exactly 0 |" in out


def test_without_step_times_the_waste_is_in_steps(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run.jsonl", zero_grad_from=100, step_time=None)
    d = _json(capsys, str(run), "--gpus", "8")
    zero = d["cost"]["entries"][0]
    assert zero["kind"] == "zero_gradient" and zero["steps"] == 50.0
    assert zero["hours"] is None and zero["gpu_hours"] is None and d["cost"]["run_hours"] is None
    assert main(["diagnose", str(run), "--fail-on", "never"]) == 0
    said = "25% of the steps had a gradient of exactly 0 (steps 1-200): 25% of the run's 200 steps"
    assert said in capsys.readouterr().out


def test_a_healthy_run_costs_nothing(tmp_path, capsys) -> None:
    d = _json(capsys, str(write_run(tmp_path / "run.jsonl")))
    assert d["cost"] is None and d["forecasts"] == []


def test_an_entropy_still_sinking_is_forecast(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run.jsonl", steps=400, entropy_tau=100)
    d = _json(capsys, str(run))
    (f,) = d["forecasts"]
    assert f["metric"] == "entropy" and f["finding"] == "P4" and f["threshold"] == 0.01
    assert abs(f["step"] - 460.5) <= 3  # exp(-s / 100) = 0.01
    assert f["interval"][0] <= 461 <= f["interval"][1] + 1
    assert f["hours"] == pytest.approx((f["step"] - 400) * 60 / 3600, abs=0.01)
    assert main(["diagnose", str(run), "--fail-on", "never"]) == 0
    assert "## Forecasts" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--gpus", "0", "--gpus: expected a positive integer, got 0"),
        ("--gpu-hour-price", "-1", "--gpu-hour-price: expected a price of 0 or more"),
        ("--gpu-hour-price", "nan", "--gpu-hour-price: expected a price of 0 or more"),
    ],
)
def test_a_bad_price_is_one_line_exit_2_nothing_written(tmp_path, flag, value, said) -> None:
    run = write_run(tmp_path / "run.jsonl", zero_grad_from=100)
    out = tmp_path / "report.md"
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "diagnose", str(run), "-o", str(out), f"{flag}={value}"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rl-advisor: error: {said}")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_the_html_report_has_both_sections(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run.jsonl", steps=400, entropy_tau=100, zero_grad_from=100)
    assert main(["diagnose", str(run), "--format", "html", "--fail-on", "never"]) == 0
    page = capsys.readouterr().out
    assert (
        '<h2 id="cost">Cost of waste</h2>' in page and '<h2 id="forecasts">Forecasts</h2>' in page
    )
    assert "<td>38% of the steps had a gradient of exactly 0</td>" in page  # 150 of 400
    assert "<code>entropy</code> (P4) reaches the entropy floor (0.01) at step ~46" in page
