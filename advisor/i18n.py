"""The language the report speaks: English (the texts as the rulebook and templates write them)
or Chinese (`rulebook/i18n/zh.yaml`, the same texts beside the English ones).

`--lang zh` (any command) or `RL_ADVISOR_LANG=zh` picks Chinese. English needs no catalogue:
`t(text)` returns `text` itself, so an English report is byte for byte what the templates
write. The catalogue is read only when another language is asked for.

Catalogue layout (data, edited without Python):
- `ui`: the report's fixed phrases, keyed by the English phrase; `{name}` fields filled by `t`;
- `symptoms.ID`: a rule's `summary`, `why`, `causes` (same order), `advice`, `fallback`,
  `first_when` (the advice of an action that goes first);
- `config.ID`: a config rule's `message` (the same `{expression}` fields as the English one)
  and `why`.
JSON keys, finding ids, parameter and metric names, numbers stay as they are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any

from advisor.resources import read_yaml_data, rulebook_dir

LANGS = ("en", "zh")
ENV = "RL_ADVISOR_LANG"


def normalise(code: str) -> str | None:
    """`zh`, `zh_CN.UTF-8`, `zh-Hans` -> "zh"; `en`, `C`, `` -> "en"; anything else None."""
    base = code.strip().split(".")[0].replace("-", "_").split("_")[0].lower()
    if base in ("", "c", "posix", "en"):
        return "en"
    return base if base in LANGS else None


def lang() -> str:
    """The language asked for: `RL_ADVISOR_LANG` (the CLI's `--lang` sets it), else English.
    A value this tool does not speak falls back to English (the CLI refuses it earlier)."""
    return normalise(os.environ.get(ENV, "")) or "en"


@cache
def catalogue(code: str) -> Mapping[str, Any]:
    """The catalogue of `code` (empty for English)."""
    if code == "en":
        return {}
    data = read_yaml_data(rulebook_dir() / "i18n" / f"{code}.yaml")
    return data if isinstance(data, dict) else {}


def t(text: str, /, **fields: Any) -> str:
    """`text` in the current language, its `{name}` fields filled from `fields`."""
    said = catalogue(lang()).get("ui", {}).get(text, text) if lang() != "en" else text
    return said.format(**fields) if fields else said


@cache
def _rule_texts(code: str) -> dict[str, str]:
    """English sentence -> its translation, for every symptom rule's texts (the Finding
    carries the English ones; a sentence the catalogue lacks stays English)."""
    from advisor.book.symptoms import load_symptom_rules

    zh = catalogue(code).get("symptoms", {})
    out: dict[str, str] = {}
    for rule in load_symptom_rules().rules:
        said = zh.get(rule.id)
        if not said:
            continue
        pairs = [(rule.summary, said.get("summary")), (rule.why, said.get("why"))]
        pairs += list(zip(rule.causes, said.get("causes") or [], strict=False))
        if rule.action is not None:
            pairs.append((rule.action.advice, said.get("advice")))
        if rule.fallback is not None:
            pairs.append((rule.fallback.advice, said.get("fallback")))
        # one text for a rule's one `first_when`; by fact where it has several
        firsts = said.get("first_when")
        for first in rule.first_when or []:
            if isinstance(firsts, dict):
                pairs.append((first.action.advice, firsts.get(first.fact)))
            elif len(rule.first_when or []) == 1:
                pairs.append((first.action.advice, firsts))
        out.update({" ".join(en.split()): z.strip() for en, z in pairs if en and z})

    return out


def rule_text(text: str) -> str:
    """A symptom rule's sentence (its why, a cause, an advice) in the current language."""
    if lang() == "en" or not text:
        return text
    return _rule_texts(lang()).get(" ".join(text.split()), text)


def config_text(rule_id: str, field: str, english: str) -> str:
    """A config rule's `message` template or `why` in the current language."""
    if lang() == "en":
        return english
    said = catalogue(lang()).get("config", {}).get(rule_id, {}).get(field)
    return said.strip() if isinstance(said, str) and said.strip() else english


def localise_finding(f: Any) -> Any:
    """A Finding with its rule's texts in the current language (a copy; English: itself)."""
    if lang() == "en":
        return f
    action = replace(f.action, advice=rule_text(f.action.advice)) if f.action else None
    fallback = replace(f.fallback, advice=rule_text(f.fallback.advice)) if f.fallback else None
    return replace(
        f,
        why=rule_text(f.why),
        causes=[rule_text(c) for c in f.causes],
        action=action,
        fallback=fallback,
    )


def localise_config(c: Any) -> Any:
    """A ConfigFinding with its rule's `why` in the current language (its message is said in
    it when the rule is judged: advisor.static renders the catalogue's template)."""
    if lang() == "en":
        return c
    return replace(c, why=config_text(c.id, "why", c.why))
