"""The symptom rulebook: schema, doc sections, the contract's ids, the guide's actions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.book.symptoms import (
    SymptomRulebook,
    export_schema,
    load_symptom_rules,
    parse_symptom_rules,
    rulebook_path,
)
from advisor.book.symptoms import leaves as _leaves
from advisor.detectors import DETECTORS
from advisor.types import InputError

CONTRACT_IDS = {
    "P1", "P2", "P3", "KL0", "P4", "SLOW", "OOM", "P9", "P6", "NAN", "DIV", "REF", "WASTE"
}
DOC_FIELDS = ("summary", "why", "example", "use_instead", "source")
# The 25 platform hyperparameters (knowledge.md §2.1 and §2.2): actions may only touch these.
PLATFORM_PARAMS = {
    "algorithm", "kl_loss_coef", "learning_rate", "lr_scheduler_type", "lr_warmup_steps",
    "n_epochs", "batch_size", "n_rollouts", "ppo_mini_batch_size", "max_length",
    "max_prompt_length", "eval_steps", "save_steps", "save_strategy", "save_total_limit",
    "expert_model_parallel_size", "inference_gpu_memory_utilization",
    "inference_tensor_parallel_size", "n_gpus_rollout", "n_gpus_training", "nnodes_rollout",
    "nnodes_training", "pipeline_model_parallel_size", "sequence_parallel_size",
    "tensor_model_parallel_size",
}


@pytest.fixture(scope="module")
def book() -> SymptomRulebook:
    return load_symptom_rules()


def test_every_contract_id_has_a_rule(book: SymptomRulebook) -> None:
    assert set(book.by_id) >= CONTRACT_IDS
    extra = set(book.by_id) - CONTRACT_IDS
    assert all(i.startswith("DAPO-") for i in extra)
    assert book.by_id["WASTE"].severity.value == "info"  # advice, never an alarm
    assert all(book.by_id[i].severity.value == "info" for i in extra)


def test_every_rule_documents_itself(book: SymptomRulebook) -> None:
    for rule in book.rules:
        for name in DOC_FIELDS:
            assert str(getattr(rule, name)).strip(), f"{rule.id} lacks {name}"
        assert rule.causes and rule.action.advice
        assert rule.when is not None or rule.on_ending, f"{rule.id} can never fire"


def test_detectors_and_params_exist(book: SymptomRulebook) -> None:
    for rule in book.rules:
        for leaf in _leaves(rule.when):
            assert leaf.detector in DETECTORS
        for action in (rule.action, rule.fallback):
            for ch in action.changes if action else []:
                assert ch.param in PLATFORM_PARAMS, (rule.id, ch.param)
                assert (ch.range is not None) != (ch.op == "set"), (rule.id, ch)


def test_exported_schema_is_fresh() -> None:
    committed = json.loads((rulebook_path().parent / "schema_symptoms.json").read_text())
    assert committed == json.loads(json.dumps(export_schema())), (
        "rulebook/schema_symptoms.json is stale: run `python -m advisor.book.symptoms`"
    )


def _change(book: SymptomRulebook, rid: str, which: str = "action") -> tuple:
    ch = getattr(book.by_id[rid], which).changes[0]
    return ch.param, ch.op, ch.range if ch.op != "set" else ch.value


@pytest.mark.parametrize(
    ("rid", "which", "expected"),
    [  # knowledge.md §4: first adjustment, size, fallback
        ("P1", "action", ("learning_rate", "multiply", (1.5, 2.0))),
        ("P2", "action", ("learning_rate", "multiply", (0.5, 0.5))),
        ("P3", "action", ("kl_loss_coef", "multiply", (5.0, 10.0))),
        ("P3", "fallback", ("learning_rate", "multiply", (0.5, 0.5))),
        ("KL0", "action", ("kl_loss_coef", "multiply", (0.1, 0.1))),
        ("KL0", "fallback", ("algorithm", "set", "dapo")),
        ("P4", "action", ("algorithm", "set", "dapo")),
        ("P4", "fallback", ("n_rollouts", "multiply", (2.0, 2.0))),
        ("OOM", "action", ("ppo_mini_batch_size", "multiply", (0.5, 0.5))),
        ("P9", "action", ("max_length", "add", (2048.0, 2048.0))),
        ("P6", "action", ("n_epochs", "add", (-1.0, -2.0))),
        ("NAN", "action", ("learning_rate", "multiply", (0.5, 0.5))),
        ("DIV", "action", ("learning_rate", "multiply", (0.5, 0.5))),
    ],
)
def test_actions_follow_the_guide(
    book: SymptomRulebook, rid: str, which: str, expected: tuple
) -> None:
    assert _change(book, rid, which) == expected


def test_bad_rulebooks_are_one_line_input_errors(tmp_path: Path) -> None:
    good = rulebook_path().read_text(encoding="utf-8")
    cases = {
        "unknown field": good.replace("  - id: P9\n", "  - id: P9\n    colour: red\n", 1),
        "unknown detector": good.replace("detector: nonfinite", "detector: nonsense", 1),
        "duplicate id": good.replace("  - id: P9\n", "  - id: P6\n", 1),
        "not yaml": "rules: [",
    }
    for what, text in cases.items():
        path = tmp_path / "symptoms.yaml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError) as err:
            parse_symptom_rules(path)
        msg = str(err.value)
        assert str(path) in msg and "\n" not in msg, what


@pytest.mark.parametrize("name", ["symptoms.yaml", "config.yaml", "profiles.yaml"])
def test_sources_keep_their_references(name: str) -> None:
    """A plain YAML scalar ends at " #": `source: ... verl #5038.` loaded as "... verl", which
    dropped the issue numbers a rule cites. Every source line must load as written."""
    import yaml

    root = Path(__file__).resolve().parents[2] / "rulebook"
    for no, line in enumerate((root / name).read_text(encoding="utf-8").splitlines(), 1):
        key, sep, raw = line.strip().partition("source: ")
        if key or not sep or raw[:1] in (">", "|", "") or raw.startswith("#"):
            continue
        loaded = yaml.safe_load(f"x: {raw}")["x"]
        written = raw[1:-1].replace("''", "'") if raw[0] in "'\"" else raw
        assert loaded == written, f"{name}:{no}: source loads as {loaded!r}; quote it"


def test_the_shipped_rulebooks_load_ahead_and_a_failure_is_left_to_their_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """book.load_shipped (the command calls it while the run is read) fills each loader's
    cache; a rulebook that does not load raises where it is used, not there."""
    from advisor.book import config, dialects, load_shipped, symptoms

    config.rulebook.cache_clear()
    dialects.dialects.cache_clear()
    symptoms._load_cached.cache_clear()
    load_shipped()
    assert config.rulebook.cache_info().currsize == 1
    assert dialects.dialects.cache_info().currsize == 1
    assert symptoms._load_cached.cache_info().currsize == 1

    def broken() -> None:
        raise InputError("rulebook/config.yaml:3: not valid YAML")

    monkeypatch.setattr(config, "rulebook", broken)
    load_shipped()  # said where it is used
