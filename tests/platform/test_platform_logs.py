"""The platform's logs as its SDK writes them: `dashscope rl logs JOB -o json` (made by the real
SDK CLI against the loopback server, from real verl console logs of the corpus) gives the same
findings as the log's raw text; the table and YAML shapes are refused with the lossless command;
the envelopes of the v2 client and of the service itself are read as well."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from platformkit import CORPUS, advisor_cli, job, sdk_cli

pytest.importorskip("dashscope")

# verl console runs of the labelled corpus whose log fits one page of the service (<= 1000
# lines): a stall, a NaN crash, a healthy run
RUNS = [
    "p1-stall-verl-console-s0001",
    "nan-crash-verl-console-s0000",
    "healthy-gspo-clip-verl-console-s0006",
]


def _findings(out: str) -> tuple[str, list[tuple[Any, ...]]]:
    d = json.loads(out)
    return d["status"], [
        (f["id"], f["severity"], f["onset_step"], [e["summary"] for e in f["evidence"]])
        for f in d["findings"]
    ]


@pytest.mark.parametrize("logs_as", ["list", "string"])
def test_sdk_json_logs_give_the_findings_of_the_raw_text(platform_server, tmp_path, logs_as):
    runs = RUNS if logs_as == "list" else RUNS[:1]  # the server's documented shape: all
    jobs = {
        name: {"job": job(name), "log_file": str(CORPUS / name / "train.log"), "logs_as": logs_as}
        for name in runs
    }
    env = platform_server(jobs)
    for name in runs:
        # as a user runs it: the CLI's default --offset 1 is the log's first line
        got = sdk_cli(env, "rl", "logs", name, "-o", "json")
        assert got.returncode == 0, got.stderr
        saved = tmp_path / f"{name}.json"
        saved.write_text(got.stdout, encoding="utf-8")
        doc = json.loads(got.stdout)
        assert doc["job_id"] == name and isinstance(doc["logs"], list if logs_as == "list" else str)
        assert "\\u001b[" in got.stdout  # the colour codes, as the SDK keeps them
        wrapped = advisor_cli(env, "diagnose", str(saved), "--format", "json")
        raw = advisor_cli(env, "diagnose", str(CORPUS / name / "train.log"), "--format", "json")
        assert wrapped.returncode == raw.returncode, wrapped.stderr
        assert _findings(wrapped.stdout) == _findings(raw.stdout)
        run = json.loads(wrapped.stdout)["run"]
        assert run["source"] == str(saved) and run["format"] == "verl-console"
        assert any("the platform's log of job" in w for w in run["warnings"])


@pytest.mark.parametrize(
    ("args", "shape"),
    [((), "the table `dashscope rl logs` prints"), (("-o", "yaml"), "the YAML")],
)
def test_table_and_yaml_shapes_are_refused_with_the_lossless_command(
    platform_server, tmp_path, args, shape
):
    name = RUNS[2]  # a healthy run: never read as "healthy" from a lossy shape
    env = platform_server({name: {"job": job(name), "log_file": str(CORPUS / name / "train.log")}})
    got = sdk_cli(env, "rl", "logs", name, *args)
    assert got.returncode == 0, got.stderr
    saved = tmp_path / "logs.txt"
    saved.write_text(got.stdout, encoding="utf-8")
    out = advisor_cli(env, "diagnose", str(saved))
    assert out.returncode == 2 and out.stdout == ""
    line = out.stderr.strip()
    assert "\n" not in line and shape in line and "-o json" in line and str(saved) in line
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "logs.txt",
        "requests.jsonl",
        "scenario.json",
    ]


def test_the_v2_clients_logs_and_the_services_response_are_read(platform_server, tmp_path):
    name = RUNS[0]
    env = platform_server({name: {"job": job(name), "log_file": str(CORPUS / name / "train.log")}})
    # the v2 client's JobLogs, dumped as a user saves it ({job_id, content, ...})
    script = (
        "import sys, dashscope\n"
        "client = dashscope.Client()\n"
        f"logs = client.rl.jobs.logs({name!r}, offset=1, lines=1000)\n"
        "sys.stdout.write(logs.model_dump_json())\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["content"].count("\n") > 100
    v2 = tmp_path / "v2.json"
    v2.write_text(got.stdout, encoding="utf-8")
    # the service's own response (a `curl` of GET /fine-tunes/{id}/logs)
    url = f"{env['DASHSCOPE_HTTP_BASE_URL']}/fine-tunes/{name}/logs?offset=1&line=1000"
    with urllib.request.urlopen(url, timeout=30) as resp:
        body = resp.read()
    assert isinstance(json.loads(body)["output"]["logs"], list)
    service = tmp_path / "service.json"
    service.write_bytes(body)
    raw = advisor_cli(env, "diagnose", str(CORPUS / name / "train.log"), "--format", "json")
    for saved in (v2, service):
        out = advisor_cli(env, "diagnose", str(saved), "--format", "json")
        assert out.returncode == raw.returncode, out.stderr
        assert _findings(out.stdout) == _findings(raw.stdout)


def test_an_empty_envelope_is_refused_in_one_line(tmp_path: Path) -> None:
    for body, says in (
        ({"job_id": "ft-9", "logs": ""}, "the platform's log of job ft-9 is empty"),
        ({"job_id": "ft-9", "logs": []}, "is empty"),
        ({"job_id": "ft-9", "logs": {"a": 1}}, "expected the log as a string or a list of lines"),
    ):
        p = tmp_path / "logs.json"
        p.write_text(json.dumps(body), encoding="utf-8")
        out = advisor_cli(dict(os.environ), "diagnose", str(p))
        assert out.returncode == 2 and says in out.stderr and out.stderr.count("\n") == 1


def test_one_page_of_a_longer_log_is_said(tmp_path: Path) -> None:
    lines = (CORPUS / RUNS[0] / "train.log").read_text(encoding="utf-8").splitlines()
    lines = (lines * 3)[:1000]
    for body, says in (
        ({"job_id": "ft-9", "logs": lines}, "holds 1000 lines, one page of the platform's log"),
        ({"output": {"total": 1302, "logs": lines}}, "holds 1000 of the log's 1302 lines"),
    ):
        p = tmp_path / "logs.json"
        p.write_text(json.dumps(body), encoding="utf-8")
        out = advisor_cli(dict(os.environ), "diagnose", str(p), "--format", "json")
        warnings = json.loads(out.stdout)["run"]["warnings"]
        assert any(says in w and "rl-advisor diagnose --job" in w for w in warnings), warnings
    whole = {"job_id": "ft-9", "logs": lines[:999]}
    p.write_text(json.dumps(whole), encoding="utf-8")
    out = advisor_cli(dict(os.environ), "diagnose", str(p), "--format", "json")
    assert not any("one page" in w for w in json.loads(out.stdout)["run"]["warnings"])
