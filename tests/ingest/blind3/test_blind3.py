"""The third blind reader round: gen.py's newest and messiest trainer outputs, read as written.

Each case is held to expected.json: the exact training steps (count, first, last), the canonical
metrics present and those that must stay absent, spot values, or an InputError of one line for
unusable input. A few go through the CLI too (`diagnose --format json`, exit 2 on bad input).
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from advisor.ingest import load_run
from advisor.types import InputError

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("blind3_gen", HERE / "gen.py")
assert _spec and _spec.loader
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

CLI = Path(sys.executable).with_name("rl-advisor")
CLI_CASES = ["verl_wandb_tail", "trackio_trl", "trl_rich_completions", "dapo_too_hard"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("blind3")
    done = subprocess.run([sys.executable, str(HERE / "gen.py"), str(out)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    return out, json.loads((out / "expected.json").read_text())


def _same(got: object, want: float | str) -> bool:
    if not isinstance(got, int | float):
        return False
    if isinstance(want, str):  # "nan", "inf", "-inf"
        return math.isnan(got) if want == "nan" else got == float(want)
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


def _spot_problems(frame: pl.DataFrame, spots: list[list[Any]]) -> list[str]:
    bad = []
    for step, canon, want in spots:
        if canon not in frame.columns:
            continue  # reported as a missing metric already
        got = frame.filter(pl.col("step") == step)[canon].to_list()
        if len(got) != 1 or not _same(got[0], want):
            bad.append(f"{canon}@{step}: got {got}, want {want}")
    return bad


def _problems(path: Path, want: dict[str, Any]) -> list[str]:
    if want["error"]:
        try:
            run = load_run(path)
        except InputError as err:
            return ["a multi-line error"] if "\n" in str(err).strip() else []
        return [f"read ({run.info().steps} steps), expected an InputError"]
    run = load_run(path)
    info = run.info()
    out = []
    got = (info.steps, info.first_step, info.last_step)
    if got != (want["steps"], want["first"], want["last"]):
        out.append(f"steps/first/last {got} != {(want['steps'], want['first'], want['last'])}")
    if run.frame["step"].n_unique() != run.frame.height:
        out.append("duplicate step rows")
    if missing := sorted(set(want["metrics"]) - set(info.metrics)):
        out.append(f"missing {missing}")
    if invented := sorted(set(want["absent"]) & set(info.metrics)):
        out.append(f"invented {invented}")
    return out + _spot_problems(run.frame, want["spots"])


@pytest.mark.parametrize("name", gen.CASE_NAMES)
def test_case_reads_as_written(corpus: tuple[Path, dict[str, Any]], name: str) -> None:
    root, expected = corpus
    want = expected[name]
    problems = _problems(root / want["input"], want)
    assert not problems, f"{name} ({want['note']}): {problems}"


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_diagnose_json(corpus: tuple[Path, dict[str, Any]], name: str) -> None:
    root, expected = corpus
    want = expected[name]
    path = root / want["input"]
    done = subprocess.run([str(CLI), "diagnose", str(path), "--format", "json"],
                          capture_output=True, text=True, check=False)
    if want["error"]:
        assert done.returncode == 2, done.stdout[-500:]
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and path.name in lines[0], done.stderr
        return
    assert done.returncode in (0, 1), done.stderr[-1000:]
    run = json.loads(done.stdout)["run"]
    assert (run["steps"], run["first_step"], run["last_step"]) == (
        want["steps"], want["first"], want["last"])
    assert not set(want["metrics"]) - set(run["metrics"])


def test_gen_refuses_a_call_without_out_dir() -> None:
    done = subprocess.run([sys.executable, str(HERE / "gen.py")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
