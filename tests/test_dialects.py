"""The name table (rulebook/dialects.yaml): its schema, and every name it gives checked
against the installed frameworks (TRL's GRPOConfig fields, verl's shipped trainer config)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from advisor.dialect import Speaker, dialects, framework_of_document, set_names
from advisor.static import rulebook
from advisor.types import Change


def _keys(framework: str) -> set[str]:
    out: set[str] = set()
    for per in dialects().names.values():
        entry = per.get(framework)
        if entry is None:
            continue
        if entry.key:
            out.add(entry.key)
        out |= {c.key for c in entry.cases}
        out |= set(entry.also)
        for case in entry.cases:
            out |= set(case.also or {})
        for settings in entry.values.values():
            out |= set(settings)
        for vc in entry.value_cases:
            for settings in vc.values.values():
                out |= set(settings)
    return out


def test_every_guide_parameter_of_the_table_is_a_guide_parameter() -> None:
    assert set(dialects().names) <= set(rulebook().hyper_parameters)
    for param in ("learning_rate", "kl_loss_coef", "n_rollouts", "max_length", "batch_size",
                  "ppo_mini_batch_size", "n_epochs", "eval_steps", "save_steps",
                  "save_total_limit", "algorithm"):  # fmt: skip
        assert {"trl", "verl"} <= set(dialects().names[param]), param


def test_trl_names_exist_in_the_installed_grpoconfig() -> None:
    trl = pytest.importorskip("trl")
    fields = {f.name: f for f in dataclasses.fields(trl.GRPOConfig)}
    missing = []
    for per in dialects().names.values():
        entry = per.get("trl")
        if entry is None:
            continue
        names = _keys_of(entry)
        for name in names:
            if name not in fields and not (name == entry.key and entry.since_absent):
                missing.append(name)
    assert not missing, f"not GRPOConfig fields of TRL {trl.__version__}: {missing}"
    for key, value in dialects().frameworks["trl"].defaults.items():
        assert fields[key].default == value, (key, fields[key].default, value)


def _keys_of(entry: Any) -> set[str]:
    out = {entry.key} if entry.key else set()
    out |= {c.key for c in entry.cases} | set(entry.also)
    for settings in [
        *entry.values.values(),
        *(v for c in entry.value_cases for v in c.values.values()),
    ]:
        out |= set(settings)
    return out


def _verl_tree(name: str) -> dict[str, Any]:
    pytest.importorskip("verl", exc_type=ImportError)
    import importlib.util

    from ruamel.yaml import YAML

    spec = importlib.util.find_spec("verl")
    assert spec is not None and spec.origin is not None
    path = Path(spec.origin).parent / "trainer" / "config" / name
    if not path.is_file():
        pytest.skip(f"{name} not shipped with this verl")
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def _has(tree: dict[str, Any], dotted: str) -> bool:
    node: Any = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_verl_names_exist_in_the_shipped_trainer_config() -> None:
    fsdp = _verl_tree("_generated_ppo_trainer.yaml")
    megatron = _verl_tree("_generated_ppo_megatron_trainer.yaml")
    missing = [k for k in sorted(_keys("verl")) if not (_has(fsdp, k) or _has(megatron, k))]
    assert not missing, f"not keys of verl's trainer config: {missing}"
    for key, value in dialects().frameworks["verl"].defaults.items():
        node: Any = fsdp
        for part in key.split("."):
            node = node[part]
        assert node == value, (key, node, value)


def test_verl_kl_key_follows_use_kl_loss() -> None:
    change = Change(param="kl_loss_coef", from_=0.001, to=0.01, op="multiply", factor=10.0)
    in_loss = Speaker("verl", facts={"use_kl_loss": True}).keys(change)
    assert [k.key for k in in_loss] == ["actor_rollout_ref.actor.kl_loss_coef"]
    in_reward = Speaker("verl", facts={"use_kl_loss": False, "use_kl_in_reward": True})
    assert [k.key for k in in_reward.keys(change)] == ["algorithm.kl_ctrl.kl_coef"]
    off = Speaker("verl", facts={"use_kl_loss": False}).keys(change)
    assert {"actor_rollout_ref.actor.kl_loss_coef", "actor_rollout_ref.actor.use_kl_loss"} == {
        k.key for k in off
    }


def test_response_cap_and_dapo_switch_in_trl() -> None:
    hp = {"max_length": 1536, "max_prompt_length": 1024}
    speaker = Speaker("trl", hp, {}, {"max_length": "run"})
    cap = Change(param="max_length", from_=1536, to=2048, op="add", factor=512.0)
    [k] = speaker.keys(cap)
    assert (k.key, k.from_, k.to) == ("max_completion_length", 512, 1024)
    dapo = Speaker("trl").keys(Change(param="algorithm", to="dapo"))
    # the run's own settings unknown: the whole switch is written, TRL's defaults marked
    # assumed (a release whose default loss_type is not dapo still switches)
    assert [(k.key, k.to, k.assumed) for k in dapo] == [
        ("loss_type", "dapo", True),
        ("epsilon_high", 0.28, True),
        ("importance_sampling_level", "token", True),
    ]
    known = {"loss_type": "dapo", "importance_sampling_level": "token"}
    dapo = Speaker("trl", {}, known).keys(Change(param="algorithm", to="dapo"))
    # what the run is known to do already stays: Clip-Higher is the change
    assert [(k.key, k.to) for k in dapo] == [("epsilon_high", 0.28)]
    text = Speaker("trl").text("Raise kl_loss_coef x5 and n_rollouts x2.")
    assert text == "Raise beta x5 and num_generations x2."


def test_set_names_cover_trl_and_verl() -> None:
    names = set_names()
    assert names["beta"] == "kl_loss_coef"
    assert names["actor_rollout_ref.rollout.n"] == "n_rollouts"
    assert names["algorithm.kl_ctrl.kl_coef"] == "kl_loss_coef"


def test_framework_of_a_config_file() -> None:
    assert framework_of_document({"actor_rollout_ref": {}, "data": {}}) == "verl"
    assert framework_of_document({"num_generations": 4, "output_dir": "o"}) == "trl"
    assert framework_of_document({"training": {"hyper_parameters": {}}}) is None


def test_a_verl_run_with_a_critic_keeps_its_estimator_when_dapo_is_advised() -> None:
    """DAPO for a PPO run (GAE advantages) is Clip-Higher alone: no switch to GRPO's estimator,
    no dynamic sampling of groups a PPO run does not sample."""
    from advisor.dialect import Speaker
    from advisor.types import Change

    change = Change(param="algorithm", from_="gspo", to="dapo", op="set")
    ppo = Speaker("verl", {}, {"adv_estimator": "gae"}, {}).settings([change])
    assert ppo == {"actor_rollout_ref.actor.clip_ratio_high": 0.28}
    grpo = Speaker("verl", {}, {"adv_estimator": "grpo"}, {}).settings([change])
    assert grpo["algorithm.filter_groups.enable"] is True  # a GRPO run: the whole switch
    assert grpo["actor_rollout_ref.actor.clip_ratio_high"] == 0.28
