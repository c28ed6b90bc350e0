"""The TRL callback's resubmittable job file (rl-advisor-job.yaml): what it holds, that TRL's own
parser reads it back to the same GRPOConfig, that `rl-advisor diagnose RUN_DIR --patched-config`
patches it, and that writing it leaves a running Trainer's accelerate state alone."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

trl = pytest.importorskip("trl")

from transformers import TrainerControl, TrainerState  # noqa: E402
from transformers.trainer_callback import CallbackHandler  # noqa: E402

from advisor.ingest import load_run  # noqa: E402
from advisor.ingest.frame import is_eval_key  # noqa: E402
from advisor.integrations.transformers import (  # noqa: E402
    JOB_FILE,
    AdvisorCallback,
    job_arguments,
    write_job_file,
)

from .conftest import corpus_runs, rows  # noqa: E402

CLI = Path(sys.executable).with_name("rl-advisor")

BASE: dict[str, Any] = {
    "learning_rate": 5e-3, "lr_scheduler_type": "constant", "max_steps": 200,
    "per_device_train_batch_size": 64, "num_generations": 8, "max_completion_length": 48,
    "beta": 0.1, "logging_steps": 1, "save_strategy": "no", "report_to": "none",
    "seed": 1234, "bf16": False, "use_cpu": True,
}  # fmt: skip


def _args(out: Path, **kw: Any) -> Any:
    return trl.GRPOConfig(output_dir=str(out), **{**BASE, **kw})


def _reread(path: Path, out: Path) -> Any:
    """The file as `trl grpo --config PATH` reads it: TRL's own parser, GRPOConfig's fields."""
    parser = trl.TrlParser((trl.GRPOConfig,))
    (cfg,) = parser.parse_args_and_config(["--config", str(path), "--output_dir", str(out)])
    return cfg


def _fields(cfg: Any) -> dict[str, Any]:
    skip = {"output_dir", "logging_dir", "run_name", "accelerator_config"}
    return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.name not in skip}


def test_job_file_states_the_settings_and_no_machine_path(tmp_path: Path) -> None:
    out = tmp_path / "machine-specific-output"
    path = write_job_file(_args(out), tmp_path / JOB_FILE)
    text = path.read_text(encoding="utf-8")
    assert str(out) not in text and str(tmp_path) not in text
    job = job_arguments(_args(out))
    for key in ("learning_rate", "beta", "max_completion_length", "max_steps", "seed", "use_cpu"):
        assert key in job, key
    # set by the run but equal to the defaults, or derived by __post_init__: not stated
    assert "report_to" not in job and "generation_batch_size" not in job
    assert "steps_per_generation" not in job and "do_eval" not in job
    # the keys the advice changes are stated even at their defaults
    assert job["temperature"] == 1.0 and job["epsilon"] == 0.2
    assert 'save_strategy: "no"' in text  # `no` is false to YAML 1.1 readers


def test_trl_reads_the_job_file_back_to_the_same_config(tmp_path: Path) -> None:
    args = _args(tmp_path / "a", save_strategy="no", temperature=0.7)
    path = write_job_file(args, tmp_path / JOB_FILE)
    again = _reread(path, tmp_path / "a")
    assert _fields(again) == _fields(args)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lr=st.sampled_from([5e-7, 1e-6, 3e-4, 5e-3, 0.5]),
    beta=st.sampled_from([0.0, 0.04, 0.1, 10.0]),
    gens=st.sampled_from([2, 4, 8]),
    cap=st.integers(1, 512),
    temperature=st.floats(0.05, 2.0),
    level=st.sampled_from(["token", "sequence"]),
    loss=st.sampled_from(["grpo", "dapo", "dr_grpo", "bnpo"]),
    strategy=st.sampled_from(["no", "steps", "epoch"]),
)
def test_any_config_survives_the_round_trip(
    tmp_path: Path, lr: float, beta: float, gens: int, cap: int, temperature: float,
    level: str, loss: str, strategy: str,
) -> None:  # fmt: skip
    args = _args(
        tmp_path / "o", learning_rate=lr, beta=beta, num_generations=gens,
        max_completion_length=cap, temperature=temperature, importance_sampling_level=level,
        loss_type=loss, save_strategy=strategy,
    )  # fmt: skip
    path = write_job_file(args, tmp_path / JOB_FILE)
    assert _fields(_reread(path, tmp_path / "o")) == _fields(args)


def test_writing_it_inside_a_running_trainer_keeps_accelerate_state(tmp_path: Path) -> None:
    from accelerate import Accelerator

    args = _args(tmp_path / "o")  # built before the Trainer's Accelerator, as a script does
    acc = Accelerator(cpu=True)
    before = acc.distributed_type
    write_job_file(args, tmp_path / JOB_FILE)
    assert acc.distributed_type == before  # a reset state raises AttributeError here


def _drive(cb: AdvisorCallback, path: Path, args: Any) -> None:
    data = list(rows(load_run(path / "trainer_state.json")))
    state = TrainerState(max_steps=data[-1][0], logging_steps=1)
    control = TrainerControl()
    handler = CallbackHandler([cb], None, None, None, None)
    handler.on_train_begin(args, state, control)
    for step, metrics in data:
        state.global_step = step
        handler.on_log(args, state, control, {k: v for k, v in metrics.items()
                                              if not is_eval_key(k)})  # fmt: skip
    handler.on_train_end(args, state, control)


def _a_run(prefix: str) -> Path:
    runs = [p for p in corpus_runs() if p.name.startswith(prefix) and "trl-state" in p.name]
    if not runs:
        pytest.skip(f"no {prefix} trl-state run in the corpus")
    return runs[0]


def test_diagnose_run_dir_patches_the_callbacks_job_file(tmp_path: Path) -> None:
    run = _a_run("p1")
    out = tmp_path / "run"
    _drive(AdvisorCallback(), run, _args(out, learning_rate=1e-7))
    shutil.copy(run / "trainer_state.json", out / "trainer_state.json")
    job = out / JOB_FILE
    before = job.read_bytes()
    nxt = tmp_path / "next.yaml"
    res = subprocess.run(
        [str(CLI), "diagnose", str(out), "--format", "json", "--fail-on", "never",
         "--patched-config", str(nxt)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"from {job}" in res.stderr
    assert job.read_bytes() == before  # the input is never changed
    settings_ = json.loads(res.stdout)["patch"]["settings"]
    assert settings_, "the p1 run is advised a change"
    patched = _reread(nxt, tmp_path / "again")
    for key, value in settings_.items():
        assert getattr(patched, key) == pytest.approx(value), key
    unchanged = _reread(job, tmp_path / "again")
    for key, value in _fields(unchanged).items():
        if key not in settings_:
            assert getattr(patched, key) == value, key


def test_patched_config_without_a_job_file_says_what_it_needs(tmp_path: Path) -> None:
    run = _a_run("p1")
    shutil.copy(run / "trainer_state.json", tmp_path / "trainer_state.json")
    res = subprocess.run(
        [str(CLI), "diagnose", str(tmp_path), "--patched-config", str(tmp_path / "n.yaml")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and JOB_FILE in lines[0] and "--config" in lines[0]
    assert not (tmp_path / "n.yaml").exists()
