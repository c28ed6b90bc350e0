"""Helpers of the platform tests: the SDK stood up against a loopback server (fakeserver.py).

`platform_server(jobs)` starts the server on a scenario (job id -> spec, see fakeserver.py) and
returns the environment a subprocess needs to reach it through the real SDK: the base URL and a
dummy key, set before the SDK is imported (it reads DASHSCOPE_HTTP_BASE_URL at import).
Every test here needs the `dashscope` package (the `platform` extra) and skips without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORPUS = ROOT / "sample_metrics" / "corpus"
BIN = Path(sys.executable).parent
DUMMY_KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def platform_server(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], dict[str, str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(jobs: dict[str, Any]) -> dict[str, str]:
        scenario = tmp_path / "scenario.json"
        scenario.write_text(json.dumps(jobs), encoding="utf-8")
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "fakeserver.py"), str(scenario)],
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        env = {k: v for k, v in os.environ.items() if not k.startswith("DASHSCOPE_")}
        env.update(
            DASHSCOPE_HTTP_BASE_URL=f"http://127.0.0.1:{port}/api/v1",
            DASHSCOPE_API_KEY=DUMMY_KEY,
            NO_PROXY="127.0.0.1",
            no_proxy="127.0.0.1",
            COLUMNS="80",
        )
        return env

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def requests_made(tmp_path: Path) -> list[dict[str, Any]]:
    """What the server was asked, in order (fakeserver.py writes it beside the scenario)."""
    log = tmp_path / "requests.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def job(job_id: str, status: str = "SUCCEEDED", **hyper: Any) -> dict[str, Any]:
    """A job object as the service's GET /fine-tunes/{id} returns it (its `output`)."""
    return {
        "job_id": job_id,
        "job_name": job_id,
        "status": status,
        "model": "qwen3.5-9b",
        "base_model": "qwen3.5-9b",
        "training_file_ids": ["file-1"],
        "validation_file_ids": ["file-2"],
        "hyper_parameters": hyper,
        "training_type": "reinforcement",
        "create_time": "2026-01-12 07:03:40",
        "user_identity": "1",
        "modifier": "1",
        "creator": "1",
        "group": "llm",
    }


def sdk_cli(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The SDK's own `dashscope` command."""
    return subprocess.run(
        [str(BIN / "dashscope"), *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def advisor_cli(
    env: dict[str, str], *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`rl-advisor ARGS` through its real entry point."""
    return subprocess.run(
        [str(BIN / "rl-advisor"), *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )
