"""`rl-advisor watch` on a log that is being written while it runs (bounded in time)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from advisor.api import diagnose
from advisor.cli import main

from .conftest import corpus_runs, ids

pytestmark = pytest.mark.usefixtures("corpus_available")


def _console_run(prefix: str) -> Path:
    runs = [p for p in corpus_runs() if p.name.startswith(prefix) and "verl-console" in p.name]
    if not runs:
        pytest.skip(f"no {prefix} verl-console run in the corpus")
    return runs[0]


class Writer(threading.Thread):
    """Appends a log in small pieces, cutting lines in two, like a trainer's stdout."""

    def __init__(self, dest: Path, lines: list[str], gate: Path | None, tail: str = "") -> None:
        super().__init__(daemon=True)
        self.dest, self.lines, self.gate, self.tail = dest, lines, gate, tail
        self.alert_while_writing = False

    def run(self) -> None:
        with self.dest.open("a", encoding="utf-8") as fh:
            for i, line in enumerate(self.lines):
                half = len(line) // 2
                fh.write(line[:half])
                fh.flush()
                fh.write(line[half:] + "\n")
                fh.flush()
                if i % 25 == 0:
                    time.sleep(0.01)
            # before the final status line: wait (bounded) until watch has alerted
            deadline = time.monotonic() + 10
            while self.gate is not None and time.monotonic() < deadline:
                if self.gate.exists() and self.gate.stat().st_size > 0:
                    self.alert_while_writing = True
                    break
                time.sleep(0.02)
            fh.write(self.tail)
            fh.flush()


def _watch(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["watch", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_watch_alerts_while_the_log_grows_and_ends_on_the_status_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _console_run("p3")
    lines = (src / "train.log").read_text(encoding="utf-8").splitlines()
    log, alerts, report = tmp_path / "train.log", tmp_path / "alerts.jsonl", tmp_path / "r.md"
    ids_file = tmp_path / "ids.txt"
    writer = Writer(log, lines, gate=alerts, tail="Job 'raysubmit_1' succeeded\n")
    writer.start()
    t0 = time.monotonic()
    code, out, err = _watch(
        [str(log), "--config", str(src / "job.yaml"), "--poll", "0.05", "--idle", "20",
         "--on-finding", f"cat >> {alerts}; echo >> {alerts}; echo $RL_ADVISOR_ID >> {ids_file}",
         "--output", str(report)],
        capsys,
    )  # fmt: skip
    writer.join(5)
    assert time.monotonic() - t0 < 20, "ended on the status line, not on --idle"
    assert writer.alert_while_writing, "an alert came while the log was still being written"
    batch = diagnose(src / "train.log", src / "job.yaml")
    expected = ids(batch.findings)
    assert expected
    for fid in expected:
        assert fid in err  # printed as it fired
    fired = [json.loads(x) for x in alerts.read_text(encoding="utf-8").splitlines() if x]
    assert sorted({f["id"] for f in fired}) == expected
    assert ids_file.read_text(encoding="utf-8").split() == [f["id"] for f in fired]
    assert out == ""  # the report went to --output
    text = report.read_text(encoding="utf-8")
    assert all(fid in text for fid in expected)
    worst = max(f.severity.rank for f in batch.findings)
    assert code == (1 if worst >= 2 else 0)


def test_watch_ends_after_idle_and_prints_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _console_run("healthy")
    log = tmp_path / "train.log"
    log.write_text((src / "train.log").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = _watch(
        [str(log), "--config", str(src / "job.yaml"), "--poll", "0.05", "--idle", "0.5",
         "--format", "json", "--fail-on", "never"],
        capsys,
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["run"]["source"] == str(log) and data["run"]["format"] == "verl-console"
    assert sorted({f["id"] for f in data["findings"]}) == ids(
        diagnose(src / "train.log", src / "job.yaml").findings
    )
    assert "idle" in err


def test_a_failing_on_finding_command_is_reported_not_fatal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _console_run("p3")
    log = tmp_path / "train.log"
    log.write_text((src / "train.log").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = _watch(
        [str(log), "--config", str(src / "job.yaml"), "--poll", "0.05", "--idle", "0.5",
         "--on-finding", "echo cannot cancel >&2; exit 3", "--fail-on", "never"],
        capsys,
    )  # fmt: skip
    assert code == 0
    assert "--on-finding command failed" in err and "exit 3: cannot cancel" in err
    assert "P3" in out  # the report still came


def test_watch_rejects_a_directory_without_a_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _watch([str(tmp_path), "--idle", "0.1"], capsys)
    assert code == 2
    assert out == "" and len(err.strip().splitlines()) == 1 and "expected a log file" in err


def test_watch_says_when_the_log_never_appeared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _watch(
        [str(tmp_path / "train.log"), "--idle", "0.1", "--poll", "0.02"], capsys
    )
    assert code == 2 and out == ""
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith(
            "the log never appeared (watched until idle); expected a training log being written"
        )
    )


def _jsonl_run(prefix: str) -> Path:
    runs = [p for p in corpus_runs() if p.name.startswith(prefix) and "verl-jsonl" in p.name]
    if not runs:
        pytest.skip(f"no {prefix} verl-jsonl run in the corpus")
    return runs[0] / "metrics.jsonl"


@pytest.mark.parametrize(
    "log",
    [lambda: _console_run("div") / "train.log", lambda: _jsonl_run("p6")],
    ids=["verl-console", "verl-jsonl"],
)
def test_watch_json_report_is_the_diagnose_report(
    log: object, capsys: pytest.CaptureFixture[str]
) -> None:
    path = log()  # type: ignore[operator]
    job = str(path.parent / "job.yaml")
    assert main(["diagnose", str(path), "--config", job, "--format", "json"]) in (0, 1)
    batch = json.loads(capsys.readouterr().out)
    code, out, _ = _watch(
        [str(path), "--config", job, "--format", "json", "--idle", "0.3", "--poll", "0.05"],
        capsys,
    )
    assert json.loads(out) == batch
    assert code == (1 if any(f["severity"] == "error" for f in batch["findings"]) else 0)


def test_watch_never_overwrites_an_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _console_run("p3")
    job = tmp_path / "job.yaml"
    job.write_text((src / "job.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    before = job.read_text(encoding="utf-8")
    log = tmp_path / "train.log"
    log.write_text("step:1 - critic/rewards/mean:0.1\n", encoding="utf-8")
    for out in (job, log):
        code, stdout, err = _watch(
            [str(log), "--config", str(job), "--output", str(out), "--idle", "0.1"], capsys
        )
        assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1
    assert job.read_text(encoding="utf-8") == before


def _read_to_end(path: Path, timeout: float = 10.0) -> bool:
    """Wait until a descriptor of this process (watch's) has read `path` to its end (Linux
    /proc): a rotation before that would hide lines from any `tail -F`, not only ours."""
    deadline = time.monotonic() + timeout
    target, size = str(path.resolve()), path.stat().st_size
    fd_dir = Path("/proc/self/fd")
    while time.monotonic() < deadline:
        for fd in fd_dir.iterdir():
            try:
                if os.readlink(fd) != target:
                    continue
                info = (Path("/proc/self/fdinfo") / fd.name).read_text()
            except OSError:
                continue
            if int(info.split("pos:")[1].split()[0]) == size:
                return True
        time.sleep(0.02)
    return False


class RotatingWriter(threading.Thread):
    """Writes the first half of a log, rotates it away (rename), writes the rest anew."""

    def __init__(self, dest: Path, lines: list[str]) -> None:
        super().__init__(daemon=True)
        self.dest, self.lines = dest, lines
        self.rotated_after_read = False

    def run(self) -> None:
        half = len(self.lines) // 2
        for part, chunk in enumerate((self.lines[:half], self.lines[half:])):
            if part:
                self.rotated_after_read = _read_to_end(self.dest)
                self.dest.rename(self.dest.with_suffix(".jsonl.1"))
            with self.dest.open("a", encoding="utf-8") as fh:
                for i, line in enumerate(chunk):
                    fh.write(line + "\n")
                    fh.flush()
                    if i % 50 == 0:
                        time.sleep(0.01)


def test_watch_follows_a_rotated_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _jsonl_run("p3")
    lines = src.read_text(encoding="utf-8").splitlines()
    log = tmp_path / "metrics.jsonl"
    writer = RotatingWriter(log, lines)
    writer.start()
    _, out, _ = _watch(
        [str(log), "--config", str(src.parent / "job.yaml"), "--format", "json",
         "--poll", "0.05", "--idle", "1.5"],
        capsys,
    )  # fmt: skip
    writer.join(5)
    assert writer.rotated_after_read
    data = json.loads(out)
    batch = json.loads(diagnose(src, src.parent / "job.yaml").to_json())
    assert data["run"]["steps"] == batch["run"]["steps"]  # every line of both files was read
    assert sorted((f["id"], f["onset_step"]) for f in data["findings"]) == sorted(
        (f["id"], f["onset_step"]) for f in batch["findings"]
    )
