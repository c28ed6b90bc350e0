"""A verl run's algorithm is read from its `algorithm.adv_estimator` when neither the job file
nor `--set` names one: a critic's GAE is PPO, and the report says so instead of assuming the
platform default (GSPO); the thresholds that depend on the algorithm use what fits (GRPO's for
GRPO's estimators, the algorithm-neutral defaults for the others)."""

from __future__ import annotations

import json
import pprint
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.api import resolve_job, run_algorithm
from advisor.ingest import load_run
from advisor.ingest.hints import ESTIMATORS, estimator_of


def _verl_log(path: Path, estimator: str) -> None:
    cfg = {
        "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-06}, "ppo_epochs": 1}},
        "algorithm": {"adv_estimator": estimator, "gamma": 1.0, "lam": 1.0},
        "data": {"train_batch_size": 256, "max_prompt_length": 512, "max_response_length": 256},
        "trainer": {"test_freq": 10, "total_epochs": 1},
    }
    dump = "".join(f"(main_task pid=7) {ln}\n" for ln in pprint.pformat(cfg).splitlines())
    steps = "".join(
        f"(main_task pid=7) step:{s} - critic/score/mean:{0.1 + 0.004 * s:.3f} - "
        f"critic/kl:{0.001 * s:.4f} - actor/entropy_loss:0.5 - response_length/mean:200.0 - "
        f"actor/pg_clipfrac:0.002 - actor/ppo_kl:0.0001 - actor/grad_norm:0.5\n"
        for s in range(1, 121)
    )
    path.write_text(dump + steps)


def test_the_estimators_verl_names() -> None:
    assert estimator_of("gae") == ("PPO with a critic (GAE advantages)", None)
    assert estimator_of("grpo_passk")[1] == "grpo"  # type: ignore[index]
    assert estimator_of("rloo")[1] is None  # type: ignore[index]
    assert estimator_of("my_estimator") == ("adv_estimator my_estimator", None)
    assert estimator_of(None) is None and estimator_of("") is None
    assert all(family in (None, "grpo") for _, family in ESTIMATORS.values())


@pytest.mark.parametrize(
    ("estimator", "judged"),
    [("gae", None), ("rloo", None), ("grpo_vectorized", "grpo"), ("grpo", "grpo")],
)
def test_the_engine_judges_with_the_algorithm_the_log_shows(
    tmp_path: Path, estimator: str, judged: str | None
) -> None:
    p = tmp_path / "train.log"
    _verl_log(p, estimator)
    job = resolve_job(load_run(p))
    assert job.judged_hp["algorithm"] == judged


def test_a_job_file_or_set_algorithm_stands(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    _verl_log(p, "gae")
    job = resolve_job(load_run(p), sets=["algorithm=dapo"])
    assert job.judged_hp["algorithm"] == "dapo"
    assert run_algorithm(job.run.config_hints, job.judged_origin) is None


def test_the_report_says_ppo_not_the_platform_default(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    _verl_log(p, "gae")
    cmd = [sys.executable, "-m", "advisor", "diagnose", str(p), "--fail-on", "never"]
    d = json.loads(
        subprocess.run([*cmd, "--format", "json"], capture_output=True, text=True,
                       check=True).stdout
    )
    said = d["assumptions"]
    assert any("adv_estimator gae is PPO with a critic (GAE advantages)" in a for a in said)
    assert any("algorithm-neutral default" in a for a in said)
    assert not any("'gspo' was assumed" in a or "algorithm unknown" in a for a in said)
    md = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "PPO with a critic" in md and "the platform default 'gspo'" not in md
    assert list(tmp_path.iterdir()) == [p]


def test_the_zh_report_says_it_too(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    _verl_log(p, "gae")
    cmd = [sys.executable, "-m", "advisor", "diagnose", str(p), "--fail-on", "never"]
    md = subprocess.run([*cmd, "--lang", "zh"], capture_output=True, text=True, check=True).stdout
    assert "adv_estimator gae 即带 critic 的 PPO（GAE 优势）" in md
    assert "algorithm read from the log" not in md
