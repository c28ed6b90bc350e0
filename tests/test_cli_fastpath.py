"""A plain `rl-advisor diagnose` call runs without the CLI framework; every call answers as the
framework's own path does (output, files, exit code, error line), through the real entry point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli import FailOn, ReportFormat, main
from advisor.cli.argv import parse_argv

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "sample_metrics" / "corpus" / "p1-stall-verl-console-s0001"
LOG, JOB = str(RUN / "train.log"), str(RUN / "job.yaml")


def test_plain_calls_are_parsed() -> None:
    got = parse_argv(
        [
            *(LOG, "-c", JOB, "--format=json", "-o/tmp/r.md", "--set", "a=1", "--set=b=2"),
            *("--ignore", "P1", "--no-plots", "--fail-on", "never", "--training-samples", "9"),
        ]
    )
    assert got is not None
    assert got["metrics"] == Path(LOG) and got["config"] == Path(JOB)
    assert got["format"] is ReportFormat.json and got["output"] == Path("/tmp/r.md")
    assert got["sets"] == ["a=1", "b=2"] and got["ignore"] == ["P1"]
    assert got["no_plots"] is True and got["fail_on"] is FailOn.never
    assert got["training_samples"] == 9


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        [LOG, "--help"],
        [LOG, "-h"],
        [LOG, "extra"],
        [LOG, "--config"],
        [LOG, "--format", "yaml"],
        [LOG, "--format", "JSON"],
        [LOG, "--fail-on", "fatal"],
        [LOG, "--training-samples", "many"],
        [LOG, "--unknown"],
        [LOG, "--conf", JOB],
        [LOG, "-c", JOB, "-c", JOB],
        [LOG, "--no-plots=1"],
        [LOG, "--output", "-"],
        [LOG, "--", "x"],
        ["-", "-c", JOB],
        [LOG, "--config="],
    ],
)
def test_anything_else_goes_to_the_framework(argv: list[str]) -> None:
    assert parse_argv(argv) is None


def _both(argv: list[str], tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    """main(argv) with and without the framework: the same code, stdout, stderr and files."""
    import advisor.cli.argv as plain

    seen = []
    for name, parse in (("fast", plain.parse_argv), ("framework", lambda _argv: None)):
        out = tmp / name
        out.mkdir()
        monkeypatch.setattr(plain, "parse_argv", parse)
        cwd = Path.cwd()
        os.chdir(out)
        try:
            code = main(["diagnose", *argv])
        finally:
            os.chdir(cwd)
        std = capsys.readouterr()
        files = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        seen.append((code, std.out, std.err, files))
    assert seen[0] == seen[1]


@pytest.mark.parametrize(
    "argv",
    [
        [LOG, "--config", JOB, "--format", "json"],
        [LOG, "-c", JOB, "-o", "report.md", "--patched-config", "job.next.yaml"],
        [LOG, "-c", JOB, "--plots-dir", "charts", "--fail-on", "warning"],
        [LOG, "-c", JOB, "--ignore", "P1", "--set", "eval_steps=10", "--no-plots"],
        [LOG, "--ignore", "NOPE"],
        [LOG, "--training-samples", "0"],
        ["missing.log", "-c", JOB],
        [LOG, "-c", JOB, "-o", JOB],
        [LOG, "--format", "yaml"],
        [LOG, "--help"],
        [LOG, "surplus"],
    ],
)
def test_fast_path_answers_as_the_framework(argv, tmp_path, capsys, monkeypatch) -> None:
    _both(argv, tmp_path, capsys, monkeypatch)


def _entry_point() -> list[str]:
    script = Path(sys.executable).parent / "rl-advisor"
    if script.exists():
        return [str(script)]
    found = shutil.which("rl-advisor")
    return [found] if found else [sys.executable, "-m", "advisor"]


def test_the_installed_command_skips_the_framework(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    cmd = [*_entry_point(), "diagnose", LOG, "-c", JOB, "-o", str(tmp_path / "r.md")]
    fast = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert fast.returncode == 1, fast.stderr  # P1 is an error finding
    imported = {line.rsplit("|", 1)[-1].strip() for line in fast.stderr.splitlines()}
    # the reader's module shows that it read the run, the API's and the engine's (imported
    # inside the command's function, after the read started) that it judged it
    assert "advisor.reading" in imported and "advisor.detectors" in imported
    assert "advisor.api" in imported and "advisor.engine" in imported
    assert "typer" not in imported and "click" not in imported
    assert (tmp_path / "r.md").read_text().startswith("# rl-advisor report")
    usage = subprocess.run(
        [*_entry_point(), "diagnose", LOG, "--format", "yaml"],
        capture_output=True,
        text=True,
        env={k: v for k, v in env.items() if k != "PYTHONPROFILEIMPORTTIME"},
        check=False,
    )
    assert usage.returncode == 2 and usage.stdout == ""
    (line,) = usage.stderr.strip().splitlines()
    assert line.startswith("rl-advisor: error: ") and "yaml" in line


def test_a_warm_diagnose_imports_no_pydantic(tmp_path: Path) -> None:
    """The rulebooks come from their cache as plain objects: pydantic checks them on the run
    that fills the cache (a new or edited book) and is not imported on the next."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(RL_ADVISOR_CACHE_DIR=str(tmp_path / "cache"), PYTHONPROFILEIMPORTTIME="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("RL_ADVISOR_NO_CACHE", None)
    cmd = [*_entry_point(), "diagnose", LOG, "-c", JOB, "--format", "json"]

    def imported() -> set[str]:
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        assert run.returncode == 1, run.stderr  # P1 is an error finding
        assert '"P1"' in run.stdout
        return {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()}

    cold, warm = imported(), imported()
    assert "pydantic" in cold and "advisor.static" in cold
    assert "advisor.static" in warm and "advisor.dialect" in warm
    assert not {m for m in warm if m.split(".")[0] in ("pydantic", "pydantic_core")}
