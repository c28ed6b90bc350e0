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
  and `why`;
- `notes`: the rulebook's notes, keyed by the English note (symptoms.yaml's `skip_note`,
  `unless_note`, `absent_note` and a size's `why`; dialects.yaml's `note`, `since_absent`,
  `keeps`; config.yaml's notes of an alias and of a coupling's repair).

The sentences the code composes (a detector's evidence, the sizing note of a change, the
checkpoint advice, an assumption, a reader's warning, a config check's message) are in
`rulebook/i18n/messages.yaml`: each message by an id, its English as the code writes it with a
`{name}` where the code fills in a value, and the same message in each other language with the
same fields (`words`: the single words and clauses it picks between; `phrases`: a few words
said wherever they stand). `say(sentence)` finds the message the English sentence is, reads its
values back and fills them into the translation; a value that is itself a message (a clause
the code composed apart) is said in the language too, anything else (numbers, names, a log's
own words) stays as written, and so does any value of a `{literal...}` field (a setting as the
user typed it, which may happen to be a word the catalogue says: `error`). A report is said in
the language when it is rendered (`localise_diagnosis`): the code that composes the sentences
stays in English and the JSON keeps them as written. The CLI's own lines (a status line, the
one line of an unusable input) are said where they are printed (advisor.cli.error_line).
JSON keys, finding ids, parameter and metric names, numbers stay as they are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any

from advisor.resources import read_yaml_data, rulebook_dir

LANGS = ("en", "zh")
ENV = "RL_ADVISOR_LANG"


@cache
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
def _loose() -> re.Pattern[str]:
    """The spaces Chinese does without: between its characters and beside its full-width
    punctuation (a folded YAML text, `>-`, joins its lines with one, a field's value may begin
    with one), and before a percent sign (an English sentence of the code may write `63 %`).
    Compiled on first use (~1 ms): an English report never needs it."""
    return re.compile(
        r"(?<=[\u4e00-\u9fff]) +(?=[\u4e00-\u9fff])"  # between two characters
        r"|(?<=[\u3000-\u303f\uff01-\uff0f\uff1a-\uff20]) +"  # after full-width punctuation
        r"| +(?=[\u3000-\u303f\uff01-\uff0f\uff1a-\uff20])"  # before it
        r"|(?<=\d) +(?=%)"  # a percentage: 63%, not 63 %
    )


def tidy(text: str) -> str:
    """A Chinese text as written: stripped, no space the way Latin script puts one."""
    return _loose().sub("", text.strip())


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
        out.update({" ".join(en.split()): tidy(z) for en, z in pairs if en and z})
    # the rulebook's notes (a skip_note, unless_note, absent_note, a size's why), by their text
    notes = catalogue(code).get("notes", {})
    out.update({" ".join(en.split()): tidy(str(z)) for en, z in notes.items() if z})
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
    return tidy(said) if isinstance(said, str) and said.strip() else english


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
    """A ConfigFinding with its rule's `why` in the current language (a rulebook rule's message
    is said in it when the rule is judged: advisor.static renders the catalogue's template; a
    check the code makes is said from `messages.yaml`)."""
    if lang() == "en":
        return c
    return replace(c, why=config_text(c.id, "why", c.why), message=say(c.message))


# ---------------------------------------------------------------------------------------------
# The sentences the code composes: rulebook/i18n/messages.yaml

_FIELD = re.compile(r"\{(\w+)(\?)?\}")
# fields that hold one word (a metric, a parameter, a rule's id or name, a kind, a step or
# steps `a–b`, a log's line number, a value, a command-line flag)
_WORD_FIELDS = re.compile(r"(metric|param|id|name|kind|steps?|line|value|flag)\d*")


def messages() -> Mapping[str, Any]:
    """Message id -> {language: text}, as `messages.yaml` holds them."""
    return _messages_file().get("messages", {})


@cache
def _messages_file() -> Mapping[str, Any]:
    data = read_yaml_data(rulebook_dir() / "i18n" / "messages.yaml")
    return data if isinstance(data, dict) else {}


def pattern(english: str) -> re.Pattern[str]:
    """The English text of a message as a pattern that reads its fields back: each field any
    text (at least one character; `{name?}` may be empty; a one-word field no space, `;`, `,`
    nor parenthesis), a field met again the same text."""
    out, seen, at = [], set(), 0
    for m in _FIELD.finditer(english):
        out.append(re.escape(english[at : m.start()]))
        name = m.group(1)
        if name in seen:
            out.append(f"(?P={name})")
        else:
            what = r"[^\s;,()]+" if _WORD_FIELDS.fullmatch(name) else ".+?"
            if name.startswith("param"):  # a framework's name may say what it is made of
                what = r"[^\s;,()]+(?: \([^()]*\))?"
            out.append(f"(?P<{name}>.*?)" if m.group(2) else f"(?P<{name}>{what})")
            seen.add(name)
        at = m.end()
    out.append(re.escape(english[at:]))
    return re.compile("".join(out), re.DOTALL)


@cache
def _patterns(code: str) -> list[tuple[re.Pattern[str], str]]:
    out = []
    for said in messages().values():
        if isinstance(said, dict) and said.get("en") and said.get(code):
            out.append((pattern(" ".join(str(said["en"]).split())), str(said[code]).strip()))
    return out


@cache
def _words(code: str) -> Mapping[str, str]:
    words = _messages_file().get("words", {})
    return {en: w[code] for en, w in words.items() if isinstance(w, dict) and code in w}


def say(text: str, /, spoken: Mapping[str, str] | None = None) -> str:
    """A sentence the code composed in English, in the current language: the message of
    `messages.yaml` it is, with its values (said in the language where they are messages or
    words themselves); a rule's text as the catalogue says it (`spoken`: the rules' texts in a
    framework's names, `spoken_texts`); else the sentence unchanged. A rulebook note quoted
    inside (a framework's note beside its setting) is said in the language too."""
    if lang() == "en" or not text:
        return text
    said = _say(text, lang(), 0, spoken or {})
    for en, note in _notes(lang()):
        if en in said:
            said = said.replace(en, note)
    for en, phrase in _phrases(lang()):
        if en in said:
            said = said.replace(en, phrase)
    return said


def _say(text: str, code: str, depth: int, spoken: Mapping[str, str]) -> str:
    core = text.strip()
    if not core or depth > 6:
        return text
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    flat = " ".join(core.split())
    said = _rule_texts(code).get(flat) or spoken.get(flat) or _words(code).get(flat)
    if said is None and depth and not flat.endswith("."):
        # a rule's text the code goes on from without its final period ("{advice}. More.")
        whole = _rule_texts(code).get(flat + ".") or spoken.get(flat + ".")
        said = whole.rstrip("。.") if whole else None
    if said is None and depth and "; " in flat:
        # a value that lists items ("a=1 (x); b=2 (y)"): each item said alone, when each is
        # a message of its own
        items = flat.split("; ")
        parts = [_say(item, code, depth + 1, spoken) for item in items]
        if all(p != i for p, i in zip(parts, items, strict=True)):
            said = "；".join(parts)
    if said is None and " " in flat:
        for pat, zh in _patterns(code):
            m = pat.fullmatch(flat)
            if m is not None:
                values = {
                    k: v if k.startswith("literal") else _say(v, code, depth + 1, spoken)
                    for k, v in m.groupdict().items()
                }
                said = tidy(_fill(zh, values))
                break
    return text if said is None else lead + said + trail


@cache
def _notes(code: str) -> list[tuple[str, str]]:
    """The rulebook's notes (English, said), longest first: a note inside a longer one is
    replaced after it."""
    notes = catalogue(code).get("notes", {})
    pairs = [(" ".join(en.split()), tidy(str(z))) for en, z in notes.items() if z]
    return sorted(pairs, key=lambda p: -len(p[0]))


@cache
def _phrases(code: str) -> list[tuple[str, str]]:
    phrases = _messages_file().get("phrases", {})
    return [(en, str(p[code])) for en, p in phrases.items() if isinstance(p, dict) and code in p]


def spoken_texts(speak: Any) -> dict[str, str]:
    """The rules' texts as a framework's user reads them (`speak`: advisor.dialect's
    Speaker.text, the guide's parameter names replaced by the framework's), English -> said
    in the current language with the same names."""
    if lang() == "en":
        return {}
    out = {}
    for en, said in _rule_texts(lang()).items():
        spoken = speak(en)
        if spoken != en:
            out[" ".join(spoken.split())] = tidy(speak(said))
    return out


def _fill(text: str, values: Mapping[str, str]) -> str:
    return _FIELD.sub(lambda f: values[f.group(1)], text)


def localise_diagnosis(d: Any, speak: Any = None) -> Any:
    """A Diagnosis whose sentences (the rules' texts and those the code composed) are in the
    current language, for the Markdown and HTML reports (a copy; English: itself). `speak`:
    the run's framework's Speaker.text, when the report speaks its names."""
    if lang() == "en":
        return d
    spoken = spoken_texts(speak) if speak is not None else {}

    def tell(text: str) -> str:
        return say(text, spoken)

    def change(c: Any) -> Any:
        keys = [replace(k, note=tell(k.note)) if k.note else k for k in c.framework_keys]
        return replace(c, note=tell(c.note) if c.note else c.note, framework_keys=keys)

    def action(a: Any) -> Any:
        if a is None:
            return None
        return replace(a, advice=tell(a.advice), changes=[change(c) for c in a.changes])

    findings = []
    for f in d.findings:
        evidence = [replace(e, summary=tell(e.summary)) for e in f.evidence]
        f = replace(f, evidence=evidence, action=action(f.action), fallback=action(f.fallback))
        findings.append(localise_finding(f))
    patch = d.patch
    if patch is not None:
        patch = replace(
            patch, changes=[change(c) for c in patch.changes], notes=[tell(n) for n in patch.notes]
        )
    run = d.run
    if run is not None:
        run = replace(run, warnings=[tell(w) for w in run.warnings])
    checkpoint = d.checkpoint
    if checkpoint is not None and checkpoint.get("advice"):
        checkpoint = {**checkpoint, "advice": tell(checkpoint["advice"])}
    return replace(
        d,
        findings=findings,
        config_findings=[localise_config(c) for c in d.config_findings],
        patch=patch,
        run=run,
        checkpoint=checkpoint,
        assumptions=[tell(a) for a in d.assumptions],
        next_steps=[tell(s) for s in d.next_steps],
    )
