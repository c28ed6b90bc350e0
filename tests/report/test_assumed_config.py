"""Without a job file, rules that look only at assumed platform defaults stay silent."""

from __future__ import annotations

from pathlib import Path

from advisor.api import diagnose

CORPUS = Path(__file__).resolve().parents[2] / "sample_metrics" / "corpus"


def test_defaults_alone_raise_no_config_finding() -> None:
    run = CORPUS / "healthy-noisy-verl-console-s0001"
    bare = diagnose(run)
    assert not [f.id for f in bare.config_findings if f.id in ("C606", "C401")]
    # the same run judged with its job file: the file's values are the user's, and are checked
    with_job = diagnose(run, run / "job.yaml")
    assert len(with_job.config_findings) >= len(bare.config_findings)
    assert all(f.params for f in bare.config_findings)


def test_a_patch_from_an_assumed_value_says_so() -> None:
    """P9 raises max_length; without a job file its value is the platform default: said."""
    run = CORPUS / "p9-rising-verl-jsonl-s0002"  # a file logger: no config dump in it
    d = diagnose(run)
    assert d.patch is not None and [c.param for c in d.patch.changes] == ["max_length"]
    # said in verl's names (a verl log): the guide's max_length is prompt + response there
    said = "max_length (data.max_prompt_length + data.max_response_length) is not in the job file"
    assert any(said in a for a in d.assumptions)
    assert d.patch.changes[0].assumed and d.patch.assumed == ["max_length"]
    with_job = diagnose(run, run / "job.yaml")
    assert not any("the patch starts from the platform default" in a for a in with_job.assumptions)


def test_a_next_step_from_an_assumed_value_says_so() -> None:
    """The public TRL run: the patch raises max_length; the next steps raise learning_rate
    (logged) and consider DAPO from an assumed algorithm (said, as the patch's own start
    would be). Its Clip-Higher is no change in an on-policy TRL run: advice, no setting."""
    real = Path(__file__).resolve().parents[3] / "shared" / "real_runs" / "labelled"
    run = real / "trl-grpo-lifelong-qwen7b-truncation-plateau"
    if not run.is_dir():
        import pytest

        pytest.skip("needs ../shared/real_runs")
    d = diagnose(run)
    advised = {c.param for f in d.findings if f.action for c in f.action.changes}
    assert {"max_length", "learning_rate"} <= advised and "algorithm" not in advised
    assert any(a.startswith("algorithm is not in the job file nor the log") for a in d.assumptions)
    assert any(
        "learning_rate=5e-06 (the learning_rate the advice computes)" in a for a in d.assumptions
    )


def test_a_fallback_from_an_assumed_value_says_so() -> None:
    """OOM's fallback lowers inference_gpu_memory_utilization, which the job file leaves to the
    platform default: the report says the advice starts from it."""
    run = CORPUS / "oom-memory-climb-verl-console-s0000"
    d = diagnose(run, run / "job.yaml")
    assert any(
        a.startswith(
            "inference_gpu_memory_utilization is not in the job file nor the log: "
            "the advice starts from the platform default"
        )
        for a in d.assumptions
    )


def _trl_state(tmp_path: Path, with_kl: bool) -> Path:
    import json

    history = []
    for step in range(1, 201):
        row = {
            "step": step,
            "reward": 0.5,
            "frac_reward_zero_std": 0.1,
            "completions/mean_length": 300.0,
            "learning_rate": 1e-6,
        }
        if with_kl:
            row["kl"] = 0.01
        history.append(row)
    path = tmp_path / f"kl{int(with_kl)}" / "trainer_state.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"log_history": history, "global_step": 200}))
    return path


def test_a_trl_log_without_kl_ran_with_beta_zero(tmp_path: Path) -> None:
    """TRL logs `kl` only when beta != 0: the advice starts from kl_loss_coef 0 (and says the
    guide flags it), while the KL findings stay 'not judged' (absent is not zero for them)."""
    d = diagnose(_trl_state(tmp_path, with_kl=False))
    assert d.run.config_hints["kl_loss_coef"] == 0.0 and d.hyper_parameters["kl_loss_coef"] == 0.0
    assert any(c.id == "C204" for c in d.config_findings)
    assert any(a.startswith("KL0 kl-vanishing not judged: needs kl_ref") for a in d.assumptions)
    logged = diagnose(_trl_state(tmp_path, with_kl=True))
    assert "kl_loss_coef" not in logged.run.config_hints


def test_a_critic_ppo_run_is_not_held_to_group_rules() -> None:
    """The public verl PPO run (adv_estimator gae, rollout n 1, KL off): no C205 'a group of
    one' nor C204, and the report says why."""
    real = Path(__file__).resolve().parents[3] / "shared" / "real_runs" / "labelled"
    run = real / "verl-ppo-gsm8k-dstack"
    if not run.is_dir():
        import pytest

        pytest.skip("needs ../shared/real_runs")
    d = diagnose(run)
    assert d.run.config_hints["adv_estimator"] == "gae"
    assert not {"C204", "C205"} & {c.id for c in d.config_findings}
    assert any(a.startswith("adv_estimator gae (from the log)") for a in d.assumptions)
