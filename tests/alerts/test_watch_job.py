"""`rl-advisor watch --job JOB_ID --alert ...`: a platform job followed through the real SDK
(the platform tests' loopback server), its findings delivered to a loopback webhook."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))
pytest.importorskip("dashscope")

from platformkit import CORPUS, advisor_cli, job, platform_server
from ruamel.yaml import YAML

from .conftest import Endpoint

__all__ = ["platform_server"]  # the fixture, used by name
STALL = "p1-stall-verl-console-s0001"


def _spec(name: str, job_id: str) -> dict[str, Any]:
    doc = YAML(typ="safe").load((CORPUS / name / "job.yaml").read_text(encoding="utf-8"))
    out = job(job_id, "SUCCEEDED", **doc["training"]["hyper_parameters"])
    out["model"] = out["base_model"] = doc["model"]
    return {"job": out, "log_file": str(CORPUS / name / "train.log")}


def test_watch_job_alerts_each_finding_with_the_jobs_change(
    platform_server: Any, endpoint: Endpoint, tmp_path: Path
) -> None:
    if not (CORPUS / STALL / "job.yaml").exists():
        pytest.skip(f"{STALL} is not in the corpus")
    env = platform_server({"ft-stall": _spec(STALL, "ft-stall")})
    env = {**env, "RL_ADVISOR_WEBHOOK_URL": f"{endpoint.url}/secret-path-0123", "NO_COLOR": "1"}
    watched = advisor_cli(env, "watch", "--job", "ft-stall", "--poll", "0.1", "--format", "json",
                          "--alert", "webhook", cwd=tmp_path)  # fmt: skip
    assert watched.returncode == 1, watched.stderr
    report = json.loads(watched.stdout)
    bodies = endpoint.bodies()
    fired = sorted((b["id"], b["onset_step"]) for b in bodies if b["event"] == "fired")
    assert fired == sorted(
        (f["id"], f["onset_step"]) for f in report["findings"] if f["severity"] != "info"
    )
    assert all(b["run"] == "job ft-stall" for b in bodies)
    top = next(b for b in bodies if b["id"] == report["patch"]["from_finding"])
    assert top["override"] == report["patch"]["override_args"]  # the platform's --set
    assert "secret-path-0123" not in watched.stdout + watched.stderr
