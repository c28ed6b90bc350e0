"""`rl-advisor diagnose` through the real entry point: exit codes, outputs, patched config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from report_helpers import JOB_YAML, write_verl_jsonl

from advisor.cli import main

# The end-to-end path needs the reader, the config loader and the engine (other modules).
for _mod in ("advisor.ingest", "advisor.config", "advisor.static", "advisor.engine"):
    pytest.importorskip(_mod)


@pytest.fixture
def job(tmp_path: Path) -> Path:
    p = tmp_path / "job.yaml"
    p.write_text(JOB_YAML)
    return p


def run_file(tmp_path: Path, kind: str, steps: int = 400) -> Path:
    p = tmp_path / f"{kind}.jsonl"
    write_verl_jsonl(p, steps, kind)
    return p


def test_healthy_run_exits_0(tmp_path, job, capsys) -> None:
    assert main(["diagnose", str(run_file(tmp_path, "healthy")), "--config", str(job)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# rl-advisor report")
    assert "**Verdict:** Healthy" in out


def test_kl_blowup_exits_1_and_patches_kl(tmp_path, job, capsys) -> None:
    metrics = run_file(tmp_path, "kl_blowup")
    patched = tmp_path / "job.patched.yaml"
    before = job.read_text()
    code = main(
        [
            "diagnose",
            str(metrics),
            "--config",
            str(job),
            "--format",
            "json",
            "--patched-config",
            str(patched),
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["patch"]["from_finding"] in {f["id"] for f in data["findings"]}
    assert "P3" in {f["id"] for f in data["findings"]} or "DIV" in {
        f["id"] for f in data["findings"]
    }
    text = patched.read_text()
    assert "# my job: comments and order must survive the patch" in text
    assert "# conservative" in text
    for change in data["patch"]["changes"]:
        assert change["param"] in text
    assert job.read_text() == before  # the input is never changed


@pytest.mark.parametrize(("fail_on", "expected"), [("never", 0), ("error", 1), ("info", 1)])
def test_fail_on(tmp_path, job, fail_on, expected) -> None:
    metrics = run_file(tmp_path, "nan_crash")
    assert main(["diagnose", str(metrics), "--config", str(job), "--fail-on", fail_on]) == expected


def test_ignore_silences(tmp_path, job, capsys) -> None:
    metrics = run_file(tmp_path, "nan_crash")
    main(["diagnose", str(metrics), "--config", str(job), "--format", "json"])
    ids = [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert ids
    code = main(
        [
            "diagnose",
            str(metrics),
            "--config",
            str(job),
            "--format",
            "json",
            "--ignore",
            ",".join(ids),
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert data["findings"] == [] and code == 0


def test_output_file_with_plots_beside_it(tmp_path, job) -> None:
    out = tmp_path / "out" / "diag.md"
    code = main(
        [
            "diagnose",
            str(run_file(tmp_path, "nan_crash")),
            "--config",
            str(job),
            "--output",
            str(out),
        ]
    )
    assert code == 1
    md = out.read_text()
    pngs = sorted(p.name for p in out.parent.glob("diag-*.svg"))
    assert pngs and all(f"]({name})" in md for name in pngs)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]


def test_no_plots(tmp_path, job) -> None:
    out = tmp_path / "diag.md"
    main(
        [
            "diagnose",
            str(run_file(tmp_path, "nan_crash")),
            "--config",
            str(job),
            "--output",
            str(out),
            "--no-plots",
        ]
    )
    assert not list(tmp_path.glob("*.svg")) and ".svg)" not in out.read_text()


def test_short_run_is_insufficient_data(tmp_path, job, capsys) -> None:
    code = main(
        [
            "diagnose",
            str(run_file(tmp_path, "healthy", steps=30)),
            "--config",
            str(job),
            "--format",
            "json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert (code, data["status"], data["findings"]) == (0, "insufficient_data", [])


@pytest.mark.parametrize(
    "args",
    [
        ["missing.jsonl"],
        ["{metrics}", "--config", "missing.yaml"],
        ["{metrics}", "--config", "{job}", "--patched-config", "{job}"],
        ["{metrics}", "--output", "{metrics}"],
        ["{metrics}", "--patched-config", "new.yaml"],
        ["{metrics}", "--format", "pdf"],
        ["{metrics}", "--fail-on", "sometimes"],
        ["{metrics}", "--ignore", "P7"],
    ],
)
def test_unusable_input_exits_2_with_one_line(tmp_path, job, capsys, args) -> None:
    metrics = run_file(tmp_path, "healthy", steps=60)
    before = (metrics.read_bytes(), job.read_bytes())
    argv = [a.format(metrics=metrics, job=job) for a in args]
    argv = [
        str(tmp_path / a) if a.endswith((".jsonl", ".yaml")) and "/" not in a else a for a in argv
    ]
    assert main(["diagnose", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err and "Traceback" not in err
    assert (metrics.read_bytes(), job.read_bytes()) == before
    assert not (tmp_path / "new.yaml").exists()


def test_bad_metrics_file_exits_2(tmp_path, capsys) -> None:
    bad = tmp_path / "garbage.jsonl"
    bad.write_text("this is not a metrics log\n")
    assert main(["diagnose", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "garbage.jsonl" in err


def test_subprocess_entry_point(tmp_path, job) -> None:
    metrics = run_file(tmp_path, "nan_crash")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor",
            "diagnose",
            str(metrics),
            "--config",
            str(job),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["status"] == "issues"


LIVEFIRE = Path(__file__).resolve().parents[1] / "livefire" / "runs"


def test_a_crashed_run_says_so_and_fails(tmp_path, capsys) -> None:
    # reward-raise: the reward function raised at step 100 (a real TRL traceback), with no
    # numerical symptom before: the status is "crashed", not "healthy", and CI fails on it.
    log = LIVEFIRE / "reward-raise" / "train.log"
    assert main(["diagnose", str(log), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "crashed"
    assert data["run"]["ending"]["kind"] == "traceback" and data["run"]["ending"]["step"] == 100
    assert main(["diagnose", str(log), "--fail-on", "never"]) == 0
    out = capsys.readouterr().out
    assert "**Verdict:** Crashed" in out and "traceback at step 100" in out

    # the same metrics without the traceback (the log cut before it): no crash, no failure
    head = log.read_text(encoding="utf-8").split("Traceback")[0]
    cut = tmp_path / "train.log"
    cut.write_text(head, encoding="utf-8")
    main(["diagnose", str(cut), "--format", "json"])
    assert json.loads(capsys.readouterr().out)["status"] == "healthy"


def test_an_output_over_a_file_inside_the_run_folder_is_refused(tmp_path) -> None:
    """A run folder's logs are its inputs: `-o RUN/train.log` is refused and the log kept;
    a new report inside the folder is written."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "livefire" / "runs" / "sane", run)
    before = (run / "train.log").read_bytes()
    cmd = [sys.executable, "-m", "advisor", "diagnose", str(run), "--fail-on", "never"]
    proc = subprocess.run([*cmd, "-o", str(run / "train.log")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "inside the input folder" in proc.stderr
    assert (run / "train.log").read_bytes() == before
    proc = subprocess.run([*cmd, "-o", str(run / "report.md")], capture_output=True, text=True)
    assert proc.returncode == 0 and (run / "report.md").read_text(encoding="utf-8")
