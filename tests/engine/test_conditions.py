"""Named conditions (`conditions:` and `- use: NAME`), companions as leaf fields and `reason`:
the loader expands every use into the plain tree the engine evaluates, and refuses what it
cannot expand with one line naming the rule and the place."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.book.symptoms import (
    AllOf,
    AnyOf,
    Leaf,
    NotOf,
    parse_symptom_rules,
    rulebook_path,
    walk,
)
from advisor.types import InputError

BOOK = rulebook_path().read_text(encoding="utf-8")


def _book(tmp_path: Path, old: str, new: str) -> Path:
    assert old in BOOK, old
    path = tmp_path / "symptoms.yaml"
    path.write_text(BOOK.replace(old, new, 1), encoding="utf-8")
    return path


def test_every_use_is_expanded_and_remembers_its_name() -> None:
    book = parse_symptom_rules(rulebook_path())
    assert book.conditions, "the shipped rulebook names its shared conditions"
    used: set[str] = set()

    def visit(node: object) -> None:
        assert isinstance(node, Leaf | AllOf | AnyOf | NotOf), f"left unexpanded: {node!r}"
        if node._condition:
            used.add(node._condition)
        for child in getattr(node, "all", None) or getattr(node, "any", None) or []:
            visit(child)
        if isinstance(node, NotOf):
            visit(node.not_)

    for rule in book.rules:
        if rule.when is not None:
            visit(rule.when)
    assert used == set(book.conditions), "every named condition is used by some rule"


def test_a_use_with_params_overrides_only_those() -> None:
    book = parse_symptom_rules(rulebook_path())
    base = book.conditions["validation_rose"].when
    assert isinstance(base, Leaf)
    p1 = [leaf for _, leaf in walk(book.by_id["P1"].when) if leaf._condition == "validation_rose"]
    kl0 = [leaf for _, leaf in walk(book.by_id["KL0"].when) if leaf._condition == "validation_rose"]
    assert p1 and all(leaf.params == {**base.params, "wait": True} for leaf in p1)
    assert [leaf.params for leaf in kl0] == [base.params]


def test_an_unknown_condition_is_a_load_error_with_a_did_you_mean(tmp_path: Path) -> None:
    path = _book(tmp_path, "        - use: low_reward\n", "        - use: low_rewrd\n")
    with pytest.raises(InputError) as err:
        parse_symptom_rules(path)
    msg = str(err.value)
    assert "rule DIV" in msg and "unknown condition 'low_rewrd'" in msg
    assert "did you mean 'low_reward'?" in msg


def test_a_condition_that_uses_itself_is_a_load_error(tmp_path: Path) -> None:
    old = "    when: {detector: below, metric: reward_mean, params: {value: 0.5, k: 3, m: 4}}\n"
    new = "    when: {any: [{use: low_reward}]}\n"
    path = _book(tmp_path, old, new)
    with pytest.raises(InputError, match=r"uses itself \(low_reward -> low_reward\)"):
        parse_symptom_rules(path)


def test_params_on_a_use_of_a_tree_are_refused(tmp_path: Path) -> None:
    path = _book(
        tmp_path, "                - use: gradient_vanished\n",
        "                - {use: gradient_vanished, params: {k: 2}}\n",
    )
    with pytest.raises(InputError, match=r"rule P1.*not a single detector leaf"):
        parse_symptom_rules(path)


def test_a_param_set_on_a_use_is_checked_like_the_leaf_s_own(tmp_path: Path) -> None:
    path = _book(
        tmp_path, "not: {use: validation_rose, params: {wait: true}}",
        "not: {use: validation_rose, params: {wiat: true}}",
    )
    with pytest.raises(InputError, match="did you mean 'wait'"):
        parse_symptom_rules(path)


def test_companions_are_leaf_fields_not_params(tmp_path: Path) -> None:
    path = _book(
        tmp_path, "metric: reward_mean, per: val_reward, params: {ratio: 0.5}",
        "metric: reward_mean, params: {ratio: 0.5, per: val_reward}",
    )
    with pytest.raises(InputError, match=r"params\.per: a companion metric is the leaf's own"):
        parse_symptom_rules(path)


def test_a_companion_the_detector_does_not_read_is_refused(tmp_path: Path) -> None:
    old = "    when: {detector: below, metric: reward_mean, params: {value: 0.5, k: 3, m: 4}}\n"
    new = "    when: {detector: below, metric: reward_mean, per: reward_std}\n"
    path = _book(tmp_path, old, new)
    with pytest.raises(InputError, match="below reads no `per` companion"):
        parse_symptom_rules(path)


def test_rules_prints_each_reason_and_condition() -> None:
    from advisor.cli.rules import find_rule, symptom_rule_docs

    docs, _ = symptom_rule_docs()
    text = find_rule(docs, "P1").extra["When it fires"]
    assert "(`low_reward`: the training reward stays in the lower half" in text
    assert "why: TRL logs no ppo\\_kl" in text or "why: TRL logs no ppo_kl" in text
    assert "`per` = `val_reward`" in find_rule(docs, "P6").extra["When it fires"]
