"""The public real runs (shared/real_runs, beside the repo): watch's reading of each log, fed
line by line, ends with the Diagnosis `diagnose` builds from the whole file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.api import diagnose
from advisor.integrations.follow import Sidecar
from advisor.online import Advisor

REAL = Path(__file__).resolve().parents[3] / "shared" / "real_runs"
LOGS = {
    # log -> whether the whole JSON must match (the excerpt run is too short to show its
    # length, which diagnose uses to assume eval_steps and an online view cannot know)
    "labelled/verl-ppo-gsm8k-dstack/verl_demo.log": True,
    "labelled/verl-tinyzero-ppo-qwen05b-countdown-crash/part-of-logs.md": False,
    "labelled/trl-grpo-rho-qwen25-7b-collapse-s43/train.log": True,
    "unlabelled/run-a/train.log": True,
    "unlabelled/run-b/train.log": True,
}


@pytest.mark.parametrize("rel", sorted(LOGS))
def test_watch_reads_real_logs_as_diagnose(rel: str) -> None:
    log = REAL / rel
    if not log.exists():
        pytest.skip(f"{log} is not there")
    batch = json.loads(diagnose(log).to_json())
    adv = Advisor(source=str(log))
    assert Sidecar(log, adv, idle=0.0, poll=0.01).run() in {"idle", "ending"}
    online = json.loads(adv.diagnosis().to_json())
    assert sorted((f["id"], f["onset_step"]) for f in online["findings"]) == sorted(
        (f["id"], f["onset_step"]) for f in batch["findings"]
    )
    assert online["run"] == batch["run"]
    if LOGS[rel]:
        assert online == batch
