"""Couplings (knowledge.md §2.3) repaired from their declaration in rulebook/config.yaml: the
C1xx rule's `require` check is the relation, its `repair` says which side moves and to what."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from advisor import remedy, schema
from advisor.book import config as static
from advisor.book.expressions import evaluate
from advisor.resources import read_yaml_data, rulebook_dir


def _repair(hp: dict[str, Any], changed: set[str] = frozenset()) -> dict[str, tuple[Any, str]]:
    return {c.param: (c.to, c.note or "") for c in remedy.repair_couplings(hp, set(changed))}


def test_the_mini_batch_moves_to_fit_the_step() -> None:
    hp = {"batch_size": 8, "n_rollouts": 2, "ppo_mini_batch_size": 32}
    out = _repair(hp, {"n_rollouts"})
    assert out == {
        "ppo_mini_batch_size": (
            16,
            "repaired coupling: ppo_mini_batch_size <= batch_size x n_rollouts = 16",
        )
    }
    assert hp["ppo_mini_batch_size"] == 16


def test_the_length_the_change_did_not_move_gives_way() -> None:
    lowered = _repair({"max_length": 2048, "max_prompt_length": 2048}, {"max_length"})
    assert lowered["max_length"][0] == 3072 and "max_length kept 1024" in lowered["max_length"][1]
    other = _repair({"max_length": 2048, "max_prompt_length": 4096}, {"max_prompt_length"})
    assert other == {
        "max_prompt_length": (
            1024,
            "repaired coupling: max_prompt_length lowered to leave 1024 response tokens inside "
            "max_length",
        )
    }


def test_tensor_parallelism_fits_the_gpus_beside_the_pipeline() -> None:
    tp, pp = "tensor_model_parallel_size", "pipeline_model_parallel_size"
    assert _repair({"n_gpus_training": 4, tp: 4, pp: 2})[tp][0] == 2
    # pipeline_model_parallel_size left out: the declaration assumes 1
    note = "repaired coupling: n_gpus_training >= tensor_mp x pipeline_mp"
    assert _repair({"n_gpus_training": 2, tp: 4}) == {tp: (2, note)}


def test_a_value_unknown_or_not_an_integer_is_not_judged() -> None:
    assert _repair({"batch_size": 8, "n_rollouts": None, "ppo_mini_batch_size": 32}) == {}
    assert _repair({"max_length": 2048.0, "max_prompt_length": 4096}) == {}


ints = st.integers(1, 4096)


# max_length above 1024: the room the C103 repair leaves for a response fits inside it
@given(
    bs=ints, nr=st.integers(1, 64), mb=ints, ml=st.integers(1025, 100_000),
    mpl=st.integers(1, 100_000), ng=st.integers(8, 1024), tp=st.integers(1, 256),
    pp=st.integers(1, 8), changed=st.sets(st.sampled_from(["max_length", "max_prompt_length"])),
)  # fmt: skip
def test_after_the_repair_no_declared_coupling_fires(
    bs: int, nr: int, mb: int, ml: int, mpl: int, ng: int, tp: int, pp: int, changed: set[str]
) -> None:
    hp = {
        "batch_size": bs, "n_rollouts": nr, "ppo_mini_batch_size": mb, "max_length": ml,
        "max_prompt_length": mpl, "n_gpus_training": ng, "tensor_model_parallel_size": tp,
        "pipeline_model_parallel_size": pp,
    }  # fmt: skip
    before = dict(hp)
    repairs = remedy.repair_couplings(hp, changed)
    for rule in static.rulebook().rules:
        if rule.repair is not None:
            assert isinstance(rule.check, static.RequireCheck)
            assert evaluate(rule.check.expr, hp), rule.id
    # only the declared side of a broken relation moved, and only when it was broken
    moved = {k for k in hp if hp[k] != before[k]}
    assert moved == {c.param for c in repairs}
    assert "max_length" not in moved or "max_length" in changed


def _book_with(rule_id: str, repair: dict[str, Any]) -> static.ConfigRulebook:
    data = read_yaml_data(rulebook_dir() / "config.yaml")
    for rule in data["rules"]:
        if rule["id"] == rule_id:
            rule["repair"] = repair
    return schema.validate(static.ConfigRulebook, data)


def test_a_coupling_declared_in_the_rulebook_alone_is_repaired(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """C106 (rollout GPUs >= the inference engine's tensor parallelism) has no repair in the
    shipped rulebook; declaring one in the YAML is all the remedy needs."""
    hp = {"n_gpus_rollout": 2, "inference_tensor_parallel_size": 4}
    assert _repair(dict(hp)) == {}
    book = _book_with(
        "C106",
        {
            "moves": [
                {
                    "param": "inference_tensor_parallel_size",
                    "to": "n_gpus_rollout",
                    "note": "inference_tensor_parallel_size lowered to the {n_gpus_rollout} GPUs",
                }
            ]
        },
    )
    monkeypatch.setattr(remedy, "rulebook", lambda: book)
    assert _repair(hp) == {
        "inference_tensor_parallel_size": (
            2,
            "repaired coupling: inference_tensor_parallel_size lowered to the 2 GPUs",
        )
    }


@pytest.mark.parametrize(
    ("rule_id", "repair", "says"),
    [
        ("C101", {"moves": [{"param": "max_length", "to": "1", "note": "x"}]}, "does not"),
        ("C101", {"moves": [{"param": "batch_size", "to": "import os", "note": "x"}]}, "bad"),
        ("C101", {"moves": []}, "at least 1"),
        ("C401", {"moves": [{"param": "model", "to": "1", "note": "x"}]}, "require"),
    ],
)
def test_a_repair_the_remedy_cannot_make_is_a_load_error(
    rule_id: str, repair: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValidationError, match=says):
        _book_with(rule_id, repair)
