"""The closed loop's records (tests/livefire/loop/<case>/s<seed>/r<k>/), without training:
every recorded round still gets, from today's `rl-advisor diagnose` with the same --previous,
the diagnosis and the patch recorded beside it (the advice docs/closed-loop.md shows); the
reports the TRL callback left beside every recorded run (the loop's and tests/livefire/runs/)
are what today's callback writes for the same log. When the advice changes, these fail until
`scripts/closed_loop.py --no-train` and `scripts/live_fire.py --refresh` rewrite the records.
Also: live_fire.py's --set, --config and model-folder handling."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import advisor.cli.diagnose  # noqa: F401  (registers the command)
from advisor.cli import app

ROOT = Path(__file__).resolve().parents[2]
LOOP = ROOT / "tests" / "livefire" / "loop"
RUNS = ROOT / "tests" / "livefire" / "runs"
DOC = ROOT / "docs" / "closed-loop.md"


def _module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, mod)
    spec.loader.exec_module(mod)
    return sys.modules[spec.name]


LF = _module("live_fire")
CL = _module("closed_loop")


def _rounds() -> list[Path]:
    return sorted(p.parent for p in LOOP.glob("*/s*/r*/diagnosis.json"))


def _reported() -> list[Path]:
    """Every recorded run whose report the callback wrote at train end (trainer state kept)."""
    runs = [p.parent for p in RUNS.glob("*/trainer_state.json")]
    runs += [p.parent for p in LOOP.glob("*/s*/r*/trainer_state.json")]
    return sorted(runs)


def _id(p: Path) -> str:
    return str(p.relative_to(ROOT / "tests" / "livefire"))


@pytest.mark.parametrize("d", _rounds(), ids=_id)
def test_a_recorded_round_gets_the_recorded_advice(
    d: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    case, seed, k = d.parent.parent.name, int(d.parent.name[1:]), int(d.name[1:])
    monkeypatch.chdir(ROOT)  # the loop runs the CLI there, naming its inputs from there
    args = CL.cli_args(d, CL.previous_of(case, seed, k, LOOP), tmp_path / "next.yaml")
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    said = json.loads(res.stdout)
    recorded = json.loads((d / CL.DIAGNOSIS).read_text(encoding="utf-8"))
    assert said == recorded, f"{_id(d)}: rerun scripts/closed_loop.py --no-train"
    if (d / CL.JOB).is_file():
        assert (tmp_path / "next.yaml").read_bytes() == (d / CL.NEXT).read_bytes()


def test_every_later_round_trained_what_the_round_before_advised() -> None:
    for d in _rounds():
        k = int(d.name[1:])
        if k == 0:
            continue
        before = d.parent / f"r{k - 1}"
        trained = json.loads((d / CL.ROUND_FILE).read_text(encoding="utf-8"))["settings"]
        case = LF.BY_NAME[d.parent.parent.name]
        assert trained == LF.settings_of(case, config=LF.read_config(before / CL.NEXT))[0]


def test_the_table_is_what_the_records_say(tmp_path: Path) -> None:
    if not DOC.is_file():
        pytest.skip("docs/closed-loop.md not written yet")
    root = tmp_path / "loop"
    shutil.copytree(LOOP, root)
    doc = tmp_path / "closed-loop.md"
    assert CL.main(["--no-train", "--root", str(root), "--doc", str(doc)]) == 0
    assert doc.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")


@pytest.mark.parametrize("d", _reported(), ids=_id)
def test_the_recorded_reports_are_todays(d: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    LF.replay_reports(d, tmp_path)
    for name in LF.REPORTS:
        now = (tmp_path / name).read_text(encoding="utf-8")
        assert now == (d / name).read_text(encoding="utf-8"), (
            f"{_id(d)}/{name} drifted: scripts/live_fire.py --refresh {_id(d)}"
        )


# ----------------------------------------------------------------------------- live_fire.py


def test_set_wins_over_the_cases_own_value_and_says_so() -> None:
    settings, said = LF.settings_of(LF.BY_NAME["lr-tiny"], {"learning_rate": 5e-3}, seed=7)
    assert settings["learning_rate"] == 5e-3 and settings["seed"] == 7
    assert said == ["--set learning_rate=0.005 replaces the case's own learning_rate=5e-07"]
    same, quiet = LF.settings_of(LF.BY_NAME["lr-tiny"], {"beta": 0.2})
    assert same["learning_rate"] == 5e-7 and same["beta"] == 0.2 and quiet == []
    assert same["seed"] == LF.SEED


def test_a_config_file_replaces_base_and_case(tmp_path: Path) -> None:
    job = tmp_path / "next.yaml"
    job.write_text('learning_rate: 0.001\nmax_steps: 5\nseed: 9\nsave_strategy: "no"\n')
    settings, _ = LF.settings_of(LF.BY_NAME["lr-tiny"], config=LF.read_config(job))
    assert settings == {"learning_rate": 0.001, "max_steps": 5, "seed": 9, "save_strategy": "no"}


@pytest.mark.parametrize("text", ["- a\n- b\n", "a: [\n"])
def test_a_bad_config_file_is_one_line_and_exit_2(text: str, tmp_path: Path) -> None:
    import subprocess

    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "live_fire.py"), "--case", "sane", "--config",
         str(bad), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and str(bad) in res.stderr
    assert not (tmp_path / "out").exists()


def test_the_model_folder_goes_when_the_run_fails(tmp_path: Path, monkeypatch: Any) -> None:
    pytest.importorskip("trl")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    settings, _ = LF.settings_of(LF.BY_NAME["sane"], {"max_steps": 1, "num_generations": 3})
    with pytest.raises(ValueError):  # 64 completions a step cannot form groups of 3
        LF.run_case(LF.BY_NAME["sane"], tmp_path / "out", settings)
    assert not list(tmp_path.glob("livefire-model-*"))
