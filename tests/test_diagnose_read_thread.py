"""A diagnosis reads the run on a second thread (advisor.reading): the command while it imports
the API and the engine, `api.diagnose` while it parses the job file; the same diagnosis, the same
errors (the run's before the job file's), as the plain read of a diagnosis without a job file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import advisor.api
import advisor.engine  # in this process: the plain read
from advisor.types import InputError

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "sample_metrics/corpus/div-kl-blowup-verl-jsonl-s0003/metrics.jsonl"

# A fresh process: which thread read the run, and the diagnosis (or what it raised).
FRESH = """
import json, sys, threading
import advisor.ingest
real = advisor.ingest.load_run
readers = []
def load_run(path):
    readers.append(threading.current_thread().name)
    if sys.argv[2] == "raise":
        raise RuntimeError("reader broke")
    return real(path)
advisor.ingest.load_run = load_run
import advisor.api
cold = "advisor.engine" not in sys.modules
try:
    out = advisor.api.diagnose(sys.argv[1], sys.argv[1].rsplit("/", 1)[0] + "/job.yaml")
    got = out.to_dict()
except Exception as err:
    got = {"raised": type(err).__name__, "message": str(err)}
print(json.dumps({"cold": cold, "readers": readers, "got": got}))
"""


# The command in a fresh process: which thread read the run, whether the API (and pydantic) were
# imported when the read started, and the report.
FRESH_COMMAND = """
import contextlib, io, json, sys, threading
import advisor.ingest
real = advisor.ingest.load_run
readers = []
def load_run(path):
    readers.append([threading.current_thread().name, "advisor.engine" in sys.modules,
                    "advisor.remedy" in sys.modules, "ruamel.yaml" in sys.modules])
    return real(path)
advisor.ingest.load_run = load_run
from advisor.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["diagnose", sys.argv[1], "--config", sys.argv[1].rsplit("/", 1)[0] + "/job.yaml",
                 "--format", "json", "--fail-on", "never"])
print(json.dumps({"code": code, "readers": readers, "report": out.getvalue()}))
"""


def _fresh(metrics: Path, mode: str = "read", code: str = FRESH) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *sys.path]))
    proc = subprocess.run(
        [sys.executable, "-c", code, str(metrics), mode],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    return json.loads(proc.stdout)


def test_a_fresh_process_reads_on_a_second_thread_and_diagnoses_the_same() -> None:
    fresh = _fresh(RUN)
    assert fresh["cold"]
    assert fresh["readers"] == ["rl-advisor-read"]
    here = advisor.api.diagnose(RUN, RUN.parent / "job.yaml").to_dict()
    assert fresh["got"] == here
    assert here["findings"]  # a run with something to find: the comparison is not empty


def test_the_command_starts_the_read_before_it_imports_the_engine() -> None:
    from advisor.report import render

    fresh = _fresh(RUN, code=FRESH_COMMAND)
    assert fresh["code"] == 0
    # neither the engine, nor the remedy, nor the job file's parser imported when it started
    assert fresh["readers"] == [["rl-advisor-read", False, False, False]]
    here = render(advisor.api.diagnose(RUN, RUN.parent / "job.yaml"), "json")
    assert fresh["report"] == here


def test_an_unusable_file_raises_the_same_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "metrics.jsonl"
    bad.write_bytes(b"\x1f\x8b\x08\x00compressed")
    (tmp_path / "job.yaml").write_text((RUN.parent / "job.yaml").read_text())
    with pytest.raises(InputError) as here:
        advisor.api.diagnose(bad, tmp_path / "job.yaml")
    assert _fresh(bad)["got"] == {"raised": "InputError", "message": str(here.value)}


def test_the_run_is_said_before_its_job_file(tmp_path: Path) -> None:
    bad = tmp_path / "metrics.jsonl"
    bad.write_bytes(b"\x1f\x8b\x08\x00compressed")
    (tmp_path / "job.yaml").write_text("training: [unclosed\n")
    with pytest.raises(InputError) as here:
        advisor.api.diagnose(bad)  # no job file: read on this thread
    fresh = _fresh(bad)
    assert fresh["readers"] == ["rl-advisor-read"]
    assert fresh["got"] == {"raised": "InputError", "message": str(here.value)}


def test_a_job_file_that_cannot_be_parsed_is_said_as_without_the_thread(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_bytes(RUN.read_bytes())
    job = tmp_path / "job.yaml"
    job.write_text("training:\n  hyper_parameters: [unclosed\n")
    from advisor.config import read_job_file

    with pytest.raises(InputError) as here:
        read_job_file(job)  # what the judgement raises when it loads the job
    fresh = _fresh(tmp_path / "metrics.jsonl")
    assert fresh["readers"] == ["rl-advisor-read"]
    assert fresh["got"] == {"raised": "InputError", "message": str(here.value)}


def test_a_diagnosis_without_a_job_file_reads_on_its_own_thread() -> None:
    import threading

    import advisor.ingest

    real, readers = advisor.ingest.load_run, []

    def load_run(path: Path):  # type: ignore[no-untyped-def]
        readers.append(threading.current_thread().name)
        return real(path)

    advisor.ingest.load_run = load_run
    try:
        assert advisor.api.diagnose(RUN).findings
    finally:
        advisor.ingest.load_run = real
    assert readers == [threading.current_thread().name]


def test_any_other_error_of_the_reader_reaches_the_caller() -> None:
    fresh = _fresh(RUN, "raise")
    assert fresh["readers"] == ["rl-advisor-read"]
    assert fresh["got"] == {"raised": "RuntimeError", "message": "reader broke"}


def test_the_command_says_an_unusable_input_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "metrics.jsonl"
    empty.write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *sys.path]))
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "diagnose", str(empty)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr == f"rl-advisor: error: {empty}:1: empty file; expected training metrics\n"
    assert proc.stdout == ""


# A fresh command process: the reader's polars pool, with and without the user's own setting.
FRESH_POOL = """
import contextlib, io, sys
from advisor.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["diagnose", sys.argv[1], "--format", "json", "--fail-on", "never"], fresh=True)
import polars
print(polars.thread_pool_size())
"""


@pytest.mark.parametrize(("setting", "pool"), [(None, "1"), ("2", "2")])
def test_a_small_file_is_read_by_one_polars_thread(setting: str | None, pool: str) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *sys.path]))
    env.pop("POLARS_MAX_THREADS", None)
    if setting is not None:
        env["POLARS_MAX_THREADS"] = setting  # the user's own: kept
    proc = subprocess.run(
        [sys.executable, "-c", FRESH_POOL, str(RUN)],
        capture_output=True, text=True, env=env, check=True, timeout=120,
    )  # fmt: skip
    assert proc.stdout.split() == [pool]


def test_small_read_is_a_regular_file_up_to_its_size(tmp_path: Path) -> None:
    from advisor.reading import SMALL_READ, small_read

    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small.write_text("{}\n")
    with large.open("wb") as fh:
        fh.truncate(SMALL_READ + 1)  # sparse: no disk used
    assert small_read(small)
    assert not small_read(large)
    assert not small_read(tmp_path)  # a run folder: its files are read as they are found
    assert not small_read(tmp_path / "missing.jsonl")
