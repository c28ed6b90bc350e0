"""The zh catalogue beside the rulebook: every rule's texts in both languages, the same fields."""

from __future__ import annotations

import re
import string

import pytest

from advisor import i18n
from advisor.book.symptoms import load_symptom_rules
from advisor.resources import read_yaml_data, rulebook_dir

ZH = read_yaml_data(rulebook_dir() / "i18n" / "zh.yaml")
HAN = re.compile(r"[\u4e00-\u9fff]")


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


@pytest.mark.parametrize("rule", load_symptom_rules().rules, ids=lambda r: r.id)
def test_every_symptom_rule_has_its_zh_texts(rule) -> None:
    said = ZH["symptoms"].get(rule.id)
    assert said, f"{rule.id} has no entry under symptoms: in rulebook/i18n/zh.yaml"
    want = {"summary", "why", "causes"}
    want |= {"advice"} if rule.action is not None else set()
    want |= {"fallback"} if rule.fallback is not None else set()
    want |= {"first_when"} if rule.first_when else set()
    assert set(said) == want, rule.id
    assert len(said["causes"]) == len(rule.causes), f"{rule.id}: one zh cause per cause"
    firsts = said.get("first_when")
    if len(rule.first_when or []) > 1:  # several: one text a fact
        assert isinstance(firsts, dict), f"{rule.id}.first_when: one text per fact"
        assert set(firsts) == {w.fact for w in rule.first_when}, rule.id
        assert all(HAN.search(t) for t in firsts.values()), rule.id
        want -= {"first_when"}
    for key in want - {"causes"}:
        assert HAN.search(said[key]), f"{rule.id}.{key} is not Chinese"
    assert all(HAN.search(c) for c in said["causes"])


def test_no_entry_for_a_rule_that_does_not_exist() -> None:
    ids = {r.id for r in load_symptom_rules().rules}
    assert set(ZH["symptoms"]) <= ids


def test_ui_phrases_keep_their_fields() -> None:
    for en, zh in ZH["ui"].items():
        assert _fields(zh) <= _fields(en), en  # a plural "{s}" has no Chinese use
        words = re.sub(r"\{\w+\}|`[^`]*`", "", en)  # fields and code spans stay as they are
        assert HAN.search(zh) or not re.search(r"[A-Za-z]{3}", words), en


def test_rule_text_maps_each_english_sentence(monkeypatch) -> None:
    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    for rule in load_symptom_rules().rules:
        assert i18n.rule_text(rule.why) == ZH["symptoms"][rule.id]["why"].strip()
        for en, zh in zip(rule.causes, ZH["symptoms"][rule.id]["causes"], strict=True):
            assert i18n.rule_text(en) == zh.strip()
    monkeypatch.setenv("RL_ADVISOR_LANG", "en")
    rule = load_symptom_rules().rules[0]
    assert i18n.rule_text(rule.why) == rule.why


@pytest.mark.parametrize(
    ("code", "want"),
    [
        ("zh", "zh"),
        ("zh_CN.UTF-8", "zh"),
        ("zh-Hans", "zh"),
        ("en_US", "en"),
        ("C", "en"),
        ("", "en"),
        ("fr", None),
    ],
)
def test_language_codes(code: str, want: str | None) -> None:
    assert i18n.normalise(code) == want
