"""Reality check on the public labelled runs (read with the project's own readers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine import Judgement, judge_run

REAL = Path("/work/shared/real_runs/labelled")
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="public runs not available")


def _judge(name: str) -> Judgement:
    from advisor.ingest import load_run

    return judge_run(load_run(REAL / name), {})


def _alarms(j: Judgement) -> set[str]:
    return {f.id for f in j.findings if f.severity.rank >= 1}


def test_unsloth_grpo_is_healthy() -> None:
    j = _judge("trl-grpo-unsloth-llama31-8b-gsm8k")
    assert _alarms(j) == set() and j.status == "healthy"


def test_verl_ppo_dstack_is_healthy_but_for_mild_overfitting() -> None:
    assert _alarms(_judge("verl-ppo-gsm8k-dstack")) <= {"P6"}


def test_rho_collapse_is_divergence_with_its_onset() -> None:
    j = _judge("trl-grpo-rho-qwen25-7b-collapse-s43")
    assert "DIV" in _alarms(j) and _alarms(j) <= {"DIV", "P9", "P1", "P2"}
    div = next(f for f in j.findings if f.id == "DIV")
    assert 20 <= div.onset_step <= 45  # the collapse at ~25-30, logged every 5 steps


def test_lifelong_truncation_plateau() -> None:
    j = _judge("trl-grpo-lifelong-qwen7b-truncation-plateau")
    assert "P9" in _alarms(j) and _alarms(j) <= {"P9", "P1"}
    assert any("kl" in a and "absent is not zero" in a for a in j.assumptions)


def test_tinyzero_disk_full_is_not_blamed_on_the_optimizer() -> None:
    j = _judge("verl-tinyzero-ppo-qwen05b-countdown-crash")
    assert not _alarms(j)
    assert any("disk_full" in a for a in j.assumptions)
