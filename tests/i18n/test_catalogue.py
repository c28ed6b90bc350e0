"""The zh catalogue beside the rulebook: every rule's texts in both languages, the same fields."""

from __future__ import annotations

import re
import string
from pathlib import Path

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
        assert i18n.rule_text(rule.why) == i18n.tidy(ZH["symptoms"][rule.id]["why"])
        for en, zh in zip(rule.causes, ZH["symptoms"][rule.id]["causes"], strict=True):
            assert i18n.rule_text(en) == i18n.tidy(zh)
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


# --- the sentences the code composes: rulebook/i18n/messages.yaml

MESSAGES = read_yaml_data(rulebook_dir() / "i18n" / "messages.yaml")
FIELD = re.compile(r"\{(\w+)\??\}")


@pytest.mark.parametrize("mid", sorted(MESSAGES["messages"]))
def test_every_message_has_both_languages_with_the_same_fields(mid: str) -> None:
    said = MESSAGES["messages"][mid]
    assert set(said) == {"en", "zh"}, mid
    en, zh = said["en"], said["zh"]
    assert set(FIELD.findall(en)) == set(FIELD.findall(zh)), mid
    rest = FIELD.sub("", zh)  # a message of fields alone says its punctuation the Chinese way
    assert HAN.search(rest) or not re.search("[A-Za-z]", rest), f"{mid}.zh is not Chinese"
    assert not HAN.search(en), f"{mid}.en is not English"


def _sample(mid: str, english: str) -> dict[str, str]:
    """A value per field, none of them a message: one word where the field holds one, two
    where it may hold a phrase, empty where it may be empty."""
    word = re.compile(r"(metric|param|id|name|kind|steps?|line|value|flag)\d*")
    out = {}
    for i, (name, optional) in enumerate(re.findall(r"\{(\w+)(\??)\}", english)):
        tag = f"v{i}{mid.count('.')}"
        out[name] = "" if optional else tag if word.fullmatch(name) else f"{tag} w{i}"
    return out


def _fill(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\??\}", lambda m: values[m.group(1)], text)


@pytest.mark.parametrize("mid", sorted(MESSAGES["messages"]))
def test_each_message_reads_itself_back(mid: str, monkeypatch) -> None:
    # the English the code would write is said as this message's zh, with the same values:
    # no earlier, more general message reads it first
    said = MESSAGES["messages"][mid]
    values = _sample(mid, said["en"])
    english = _fill(said["en"], values)
    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    assert i18n.say(english) == _fill(said["zh"].strip(), values), mid
    monkeypatch.setenv("RL_ADVISOR_LANG", "en")
    assert i18n.say(english) == english


def test_a_value_that_is_a_message_is_said_too(monkeypatch) -> None:
    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    said = i18n.say(
        "kl_ref block mean stayed at or above 1 over steps 180–410 (median 17.4; 4 of the last "
        "4 blocks)."
    )
    assert said == (
        "kl_ref 的分块均值在第 180–410 步一直不低于 1"
        "（中位数 17.4；最近 4 个分块中有 4 个越过阈值）。"
    )
    # a sentence no message reads stays as written
    assert i18n.say("a sentence no catalogue holds") == "a sentence no catalogue holds"


def test_tidy_joins_chinese_as_it_is_written() -> None:
    # a folded YAML text's line break, a space beside full-width punctuation
    assert i18n.tidy(" 停止学习， 而损失 出现 NaN 。 TRL 只在 beta > 0 时记录（kl） ") == (
        "停止学习，而损失出现 NaN。TRL 只在 beta > 0 时记录（kl）"
    )
    assert i18n.tidy("策略 已经 崩溃") == "策略已经崩溃"
    assert i18n.tidy("提高 learning_rate 到 ×2") == "提高 learning_rate 到 ×2"


def test_words_are_said_in_every_language() -> None:
    for en, said in {**MESSAGES["words"], **MESSAGES["phrases"]}.items():
        assert set(said) == {"zh"} and HAN.search(said["zh"]), en


def test_a_phrase_is_said_where_it_stands(monkeypatch) -> None:
    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    said = i18n.say("a=1; b=2 (loss_type dapo (assumed) -> dapo, epsilon_high unset (assumed))")
    assert said == "a=1; b=2 (loss_type dapo（推测） -> dapo, epsilon_high 未设置)"


def _rulebook_notes() -> list[str]:
    """Every note of the rulebook the report can quote: symptoms.yaml's skip_note,
    unless_note, absent_note and the why of a change's size; dialects.yaml's note,
    since_absent and keeps beside a framework's name and the why of its off-policy-only
    settings; config.yaml's notes of an alias and of
    a coupling's repair."""
    out: list[str] = []

    def walk(x: object, keys: tuple[str, ...], parent: str = "") -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                said = k in ("why", "assumed") and parent == "off_policy_only"
                note = k in keys or (k == "why" and parent == "by") or said
                if note and isinstance(v, str):
                    out.append(" ".join(v.split()))
                else:
                    walk(v, keys, k)
        elif isinstance(x, list):
            for v in x:
                walk(v, keys, parent)

    book = rulebook_dir()
    walk(read_yaml_data(book / "symptoms.yaml"), ("skip_note", "unless_note", "absent_note"))
    walk(read_yaml_data(book / "dialects.yaml"), ("note", "since_absent", "keeps"))
    # config.yaml's notes but a repair's note with a {computed} value (a message of its own)
    before = len(out)
    walk(read_yaml_data(book / "config.yaml"), ("note",))
    out[before:] = [n for n in out[before:] if "{" not in n]
    return list(dict.fromkeys(out))


def test_every_rulebook_note_has_its_zh_text() -> None:
    notes = {" ".join(k.split()): v for k, v in ZH["notes"].items()}
    want = _rulebook_notes()
    assert len(want) > 5
    for note in want:
        assert note in notes and HAN.search(notes[note]), f"no zh under notes: for {note!r}"
    assert set(notes) <= set(want), "a note under notes: that the rulebook no longer has"


def _code_literals() -> str:
    """The string literals of advisor's code (an f-string's text between its fields), joined."""
    import ast

    out: list[str] = []
    for path in sorted((Path(__file__).resolve().parents[2] / "advisor").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            parts = node.values if isinstance(node, ast.JoinedStr) else [node]
            out += [
                p.value for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str)
            ]
    return "\x00".join(out)


def test_every_message_is_still_written_by_the_code() -> None:
    # a message whose English the code no longer writes is stale: each of its words (outside
    # its fields) is a word of some string literal of advisor's code
    words = set(re.findall(r"[A-Za-z][A-Za-z'-]{3,}", _code_literals()))
    words |= {w.capitalize() for w in words}  # a clause the code begins a sentence with
    stale = {}
    for mid, said in {**MESSAGES["messages"], **{w: {"en": w} for w in MESSAGES["words"]}}.items():
        text = re.sub(r"\{\w+\??\}", " ", said["en"])
        missing = set(re.findall(r"[A-Za-z][A-Za-z'-]{3,}", text)) - words
        if missing:
            stale[mid] = sorted(missing)
    assert not stale, stale


def test_a_stale_message_is_found() -> None:
    words = set(re.findall(r"[A-Za-z][A-Za-z'-]{3,}", _code_literals()))
    made_up = "{metric} drifted sideways over steps {steps} by an unusual amount."
    assert set(re.findall(r"[A-Za-z][A-Za-z'-]{3,}", made_up)) - words


def test_a_literal_value_stays_as_typed(monkeypatch) -> None:
    # `error` is a word the catalogue says (错误), but a severity the user typed stays typed
    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    said = i18n.say("--alert-severity error: expected info, warning or error")
    assert said == "--alert-severity error：应为 info、warning 或 error"
    assert i18n.say("error") == "错误"
