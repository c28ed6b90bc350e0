"""`--config` reads a framework's own file (a TRL config YAML, a saved TrainingArguments JSON,
a verl Hydra dump); `--set` takes the framework's names; patches carry only known values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.api import diagnose, file_changes
from advisor.config import load_config, write_patched
from advisor.types import InputError

CORPUS = Path(__file__).resolve().parents[2] / "sample_metrics" / "corpus"

TRL_YAML = """\
# trl grpo --config grpo.yaml
output_dir: out
learning_rate: 1.0e-6   # tuned
num_generations: 4
beta: 0.0
max_completion_length: 256
per_device_train_batch_size: 8
gradient_accumulation_steps: 2
"""

VERL_DUMP = """\
data:
  train_batch_size: 128
  max_prompt_length: 512
  max_response_length: 1024
actor_rollout_ref:
  actor:
    optim:
      lr: 1.0e-06  # the actor's lr
    use_kl_loss: true
    kl_loss_coef: 0.001
    ppo_mini_batch_size: 32
  rollout:
    n: 8
algorithm:
  adv_estimator: grpo
trainer:
  test_freq: 10
  save_freq: 20
"""


def test_a_trl_config_yaml_is_read_in_the_guides_names(tmp_path: Path) -> None:
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text(TRL_YAML)
    loaded = load_config(cfg)
    assert loaded.framework == "trl"
    hp, origin = loaded.hyper_parameters, loaded.origin
    assert hp["n_rollouts"] == 4 and origin["n_rollouts"] == "file"
    assert hp["kl_loss_coef"] == 0.0 and hp["learning_rate"] == 1e-6
    assert not [f for f in loaded.findings if f.id in ("C001", "C005")]  # TRL keys are no typos


def test_a_training_arguments_json_and_a_verl_dump(tmp_path: Path) -> None:
    args = tmp_path / "training_args.json"
    args.write_text(json.dumps({"output_dir": "o", "num_generations": 16, "beta": 0.04,
                                "per_device_train_batch_size": 4}))  # fmt: skip
    assert load_config(args).hyper_parameters["n_rollouts"] == 16
    dump = tmp_path / "config.yaml"
    dump.write_text(VERL_DUMP)
    loaded = load_config(dump)
    assert loaded.framework == "verl"
    assert loaded.hyper_parameters["max_length"] == 1536 and loaded.origin["eval_steps"] == "file"
    assert loaded.facts["use_kl_loss"] is True


def test_set_takes_the_frameworks_names_with_did_you_mean() -> None:
    loaded = load_config(None, ["beta=0.04", "actor_rollout_ref.rollout.n=16"])
    assert loaded.hyper_parameters["kl_loss_coef"] == 0.04
    assert loaded.hyper_parameters["n_rollouts"] == 16
    assert load_config(None, ["max_completion_length=1024"]).hyper_parameters["max_length"] == (
        1024 + load_config(None).hyper_parameters["max_prompt_length"]
    )
    with pytest.raises(InputError, match="did you mean beta"):
        load_config(None, ["betta=0.04"])
    with pytest.raises(InputError, match="did you mean num_generations"):
        load_config(None, ["num_generation=8"])


def test_a_verl_dump_is_patched_with_verl_keys_keeping_comments(tmp_path: Path) -> None:
    run = CORPUS / "p1-stall-verl-console-s0001"
    dump = tmp_path / "config.yaml"
    dump.write_text(VERL_DUMP)
    d = diagnose(run, dump)
    assert d.framework == "verl" and d.patch is not None and d.patch.changes
    changes = file_changes(d.patch)
    assert all(k.count(".") >= 1 for k in changes)  # Hydra keys, not the guide's names
    out = tmp_path / "config.next.yaml"
    write_patched(dump, changes, out)
    text = out.read_text()
    assert "# the actor's lr" in text and "hyper_parameters" not in text
    assert d.patch.override and d.patch.override.startswith("actor_rollout_ref.actor.optim.lr=")
    assert d.patch_diff and "actor_rollout_ref" not in d.patch_diff.split("\n")[0]


def test_a_trl_yaml_is_patched_with_grpoconfig_names(tmp_path: Path) -> None:
    run = CORPUS / "p1-stall-verl-console-s0001"  # the run's metrics; the job is TRL's
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text(TRL_YAML)
    d = diagnose(run, cfg)
    assert d.framework == "trl"
    out = tmp_path / "grpo.next.yaml"
    write_patched(cfg, file_changes(d.patch), out)
    text = out.read_text()
    assert "learning_rate: 2e-06" in text or "learning_rate: 2.0e-06" in text, text
    assert "# tuned" in text and "hyper_parameters" not in text
    assert "GRPOConfig(" in (d.patch.override or "")
