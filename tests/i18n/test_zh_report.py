"""A zh report says no English sentence: through the real entry point (the report's own words,
every rulebook text and every sentence the code composes in Chinese, the English report
unchanged, the JSON's keys and ids as in English), and in-process for every golden case
(reports/, the runs `rl-advisor demo` ships) and every labelled corpus run; the Markdown
report and the HTML page's text alike."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from advisor.cli.demo import RUNS as GOLDEN

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "sample_metrics" / "corpus"
RUNS = {
    "P1": "p1-stall-verl-console-s0001",
    "P3": "p3-step-verl-console-s0001",
    "P4": "p4-fast-verl-console-s0000",
    "NAN": "nan-crash-verl-console-s0000",
    "healthy": "healthy-noisy-verl-console-s0001",
}
CODE = re.compile(r"`[^`]*`")
# four English words in a row (identifiers, numbers and code spans taken out first)
SENTENCE = re.compile(r"\b[A-Za-z]{2,}(?:[ ,;:'()]+[A-Za-z]{2,}){3,}\b")
IDENT = re.compile(r"\b[\w.\-/]*[_\d/.][\w.\-/]*\b|\b[A-Z][A-Z0-9-]+\b|\b\w+(?:-\w+)+\b")


def _run(args: list[str], lang: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RL_ADVISOR_LANG"}
    if lang is not None:
        env["RL_ADVISOR_LANG"] = lang
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )


def _diagnose(run: str, *extra: str, lang: str | None = None) -> subprocess.CompletedProcess[str]:
    folder = CORPUS / run
    return _run(
        [
            "diagnose",
            str(folder.relative_to(ROOT)),
            "--config",
            str((folder / "job.yaml").relative_to(ROOT)),
            "--no-plots",
            "--fail-on",
            "never",
            *extra,
        ],
        lang,
    )


def english_sentences(line: str) -> list[str]:
    bare = IDENT.sub(" ", CODE.sub(" ", line))
    return SENTENCE.findall(bare)


def leaks(report: str, quoted: str = "") -> dict[str, list[str]]:
    """The English sentences of a zh report, by line. Left as written: the citation after 出处
    (it names English documents: knowledge.md, issue threads) and the words the run's log
    wrote (`quoted`, its ending's message)."""
    said = set(re.findall(r"[A-Za-z]{2,}", quoted))
    out = {}
    for ln in report.splitlines():
        found = [
            s
            for s in english_sentences(ln.split("；出处：")[0])
            if not set(re.findall(r"[A-Za-z]{2,}", s)) <= said
        ]
        if found:
            out[ln] = found
    return out


class _PageText(HTMLParser):
    """A page's text as a reader sees it, a line per block (a paragraph, an item, a cell, a
    heading, a chart's label); what `<code>` and `<pre>` hold taken out, as the Markdown test
    takes out its code spans; the style sheet too."""

    BLOCK = frozenset(
        {"title", "h1", "h2", "h3", "p", "li", "tr", "th", "td", "ul", "ol", "table"}
        | {"section", "figure", "footer", "svg", "text"}
    )
    SKIP = frozenset(("code", "pre", "style"))

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self.skip += 1
            self.out.append(" ")
        elif tag in self.BLOCK:
            self.out.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skip -= 1
        elif tag in self.BLOCK:
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.out.append(data)


def page_text(html: str) -> str:
    parser = _PageText()
    parser.feed(html)
    parser.close()
    return "\n".join(ln.strip() for ln in "".join(parser.out).splitlines() if ln.strip())


@pytest.mark.parametrize("symptom", sorted(RUNS))
def test_zh_report_says_its_own_words_in_chinese(symptom: str) -> None:
    out = _diagnose(RUNS[symptom], "--lang", "zh")
    assert out.returncode == 0, out.stderr
    report = out.stdout
    assert "**结论：**" in report
    found = leaks(report, quoted=_ending(RUNS[symptom]))
    assert not found, found


def _ending(run: str) -> str:
    from advisor.api import diagnose

    folder = CORPUS / run
    label = json.loads((folder / "label.json").read_text(encoding="utf-8"))
    d = diagnose(folder / label["metrics_file"], config=folder / "job.yaml")
    ending = d.run.ending if d.run is not None else None
    return ending.message if ending is not None else ""


@pytest.mark.parametrize("symptom", ["P3", "NAN"])
def test_zh_html_page_says_its_own_words_in_chinese(symptom: str) -> None:
    out = _diagnose(RUNS[symptom], "--format", "html", "--lang", "zh")
    assert out.returncode == 0, out.stderr
    page = out.stdout
    assert page.startswith("<!DOCTYPE html>") and '<html lang="zh">' in page
    assert "<strong>结论：</strong>" in page and '<h2 id="run">运行信息</h2>' in page
    found = leaks(page_text(page), quoted=_ending(RUNS[symptom]))
    assert not found, found
    # the charts' axis and legend too
    assert ">步</text>" in page and "预热期（84 步）" in page and "起始：第 " in page
    english = _diagnose(RUNS[symptom], "--format", "html").stdout
    assert '<html lang="en">' in english and not re.search(r"[\u4e00-\u9fff]", english)
    assert ">step</text>" in english and "warm-up (84 steps)" in english
    assert _diagnose(RUNS[symptom], "--format", "html", "--lang", "en").stdout == english


def test_the_environment_variable_asks_for_it_too() -> None:
    by_flag = _diagnose(RUNS["P3"], "--lang", "zh").stdout
    by_env = _diagnose(RUNS["P3"], lang="zh_CN.UTF-8").stdout
    assert by_flag == by_env and "可能的原因" in by_env


def test_english_is_the_default_and_unchanged() -> None:
    plain = _diagnose(RUNS["P1"]).stdout
    assert _diagnose(RUNS["P1"], "--lang", "en").stdout == plain
    assert plain.startswith("# rl-advisor report") and not re.search(r"[\u4e00-\u9fff]", plain)


def test_json_keys_and_ids_stay() -> None:
    en = json.loads(_diagnose(RUNS["P3"], "--format", "json").stdout)
    zh = json.loads(_diagnose(RUNS["P3"], "--format", "json", "--lang", "zh").stdout)

    def keys(x: object) -> object:
        if isinstance(x, dict):
            return {k: keys(v) for k, v in x.items()}
        if isinstance(x, list):
            return [keys(v) for v in x]
        return None

    assert keys(en) == keys(zh)
    assert [f["id"] for f in en["findings"]] == [f["id"] for f in zh["findings"]]
    assert [c["id"] for c in en["config_findings"]] == [c["id"] for c in zh["config_findings"]]


def test_an_unknown_language_is_one_line_exit_2() -> None:
    out = _diagnose(RUNS["P1"], "--lang", "fr")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [
        "rl-advisor: error: --lang: expected one of en, zh, got 'fr'"
    ]


def test_validate_in_zh() -> None:
    out = _run(
        ["validate", str((CORPUS / RUNS["P1"] / "job.yaml").relative_to(ROOT)), "--lang", "zh"],
        None,
    )
    assert "原因:" in out.stdout and "条规则" in out.stdout


def test_loose_punctuation_is_found() -> None:  # the punctuation test can fail
    assert loose("- 来源: `x`（verl）", "markdown") == ["- 来源: `x`（verl）"]
    assert loose("为什么是这个幅度： 封顶在 7e-06。", "markdown")
    assert loose("第 1–9 步中 63 % 的组", "markdown")
    assert loose("<p><strong>结论：</strong> 1 个问题</p>", "html")
    assert not loose("**结论：** 1 个问题；`a` 0.2（推测） → 0.28 | 仍在持续（2 次） |", "markdown")
    assert not loose("<pre>- a: 1</pre><svg><text>预热期： x</text></svg>", "html")


def test_the_detector_finds_a_sentence() -> None:  # the leak test can fail
    assert english_sentences("原因：the policy drifts from the reference")
    assert not english_sentences("提高 `learning_rate` 到 ×1.5（P1 not-converging）")
    assert leaks("- 证据：reward_mean stayed flat over the run")
    quoted = "RuntimeError: probability tensor contains either nan"
    assert not leaks("- 结束方式: 异常 RuntimeError: probability tensor contains nan", quoted)
    assert leaks("- 结束方式: 异常 RuntimeError: the tensor holds a nan", quoted)
    assert not leaks("如何屏蔽：…；出处：knowledge.md §4 (switch to DAPO: longer than 4K)")
    # a page: its text outside code, a line per block; a sentence split by inline markup is
    # still one sentence, one in a cell of its own is found too
    page = (
        "<p>证据：<code>the policy drifts away</code></p><pre>a b c d e</pre>"
        "<p>原因：the <strong>policy</strong> drifts away</p>"
        "<table><tr><td>步数</td><td>not judged at all</td></tr></table>"
    )
    assert page_text(page).splitlines() == [
        "证据：",
        "原因：the policy drifts away",
        "步数",
        "not judged at all",
    ]
    assert list(leaks(page_text(page))) == ["原因：the policy drifts away", "not judged at all"]


# --- every golden case and every corpus run, in-process (one diagnosis each)


# Chinese punctuation as Chinese sets it: a label's colon and a gloss's parentheses full-width,
# no space after full-width punctuation (but before an arrow or a table's `|`), none inside a
# percentage
LOOSE = re.compile(r".{0,12}(?:[\u4e00-\u9fff]: |\d %|[：；，。（）] (?![→|-])).{0,12}")


def loose(report: str, fmt: str) -> list[str]:
    """The places a zh report sets Latin punctuation or spacing, in its text as read (an HTML
    page's text outside its charts and `<pre>`). The Markdown verdict's `**结论：** ` keeps its
    space: CommonMark closes a bold span after punctuation only before a space."""
    if fmt == "html":
        report = re.sub(r"<svg.*?</svg>|<pre>.*?</pre>", "", report, flags=re.S)
        report = html.unescape(re.sub(r"<[^>]+>", "", report))
    return LOOSE.findall(report.replace("**结论：** ", "**结论：**"))


def _zh_report(
    folder: Path, monkeypatch: pytest.MonkeyPatch, with_job: bool = True, fmt: str = "markdown"
) -> tuple[str, str, str, list[str]]:
    """The run's report (Markdown, or the HTML page's text) in zh and in English, its log's
    ending message and the zh report's `loose` places; without its job file the report speaks
    the run's framework's names (TRL's, verl's)."""
    from advisor.api import diagnose
    from advisor.report import render

    label = json.loads((folder / "label.json").read_text(encoding="utf-8"))
    job = folder / "job.yaml"
    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    d = diagnose(folder / label["metrics_file"], config=job if with_job and job.exists() else None)
    zh = render(d, fmt)
    monkeypatch.setenv("RL_ADVISOR_LANG", "en")
    en = render(d, fmt)
    spots = loose(zh, fmt)
    if fmt == "html":
        assert '<html lang="zh">' in zh and '<html lang="en">' in en
        zh, en = page_text(zh), page_text(en)
    ending = d.run.ending if d.run is not None else None
    return zh, en, ending.message if ending is not None and ending.message else "", spots


@pytest.mark.parametrize("fmt", ["markdown", "html"])
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_every_golden_case_in_zh_has_no_english_sentence(name: str, fmt: str, monkeypatch) -> None:
    zh, en, quoted, spots = _zh_report(CORPUS / GOLDEN[name], monkeypatch, fmt=fmt)
    assert leaks(en, quoted), "the leak test finds the English report's sentences"
    found = leaks(zh, quoted)
    assert not found, found
    assert not spots, spots


@pytest.mark.parametrize("fmt", ["markdown", "html"])
@pytest.mark.parametrize("with_job", [True, False], ids=["job-file", "framework-names"])
def test_every_corpus_run_in_zh_has_no_english_sentence(
    with_job: bool, fmt: str, monkeypatch
) -> None:
    runs = sorted(p.parent for p in CORPUS.glob("*/label.json"))
    assert len(runs) > 40
    found = {}
    for folder in runs:
        zh, _en, quoted, spots = _zh_report(folder, monkeypatch, with_job, fmt)
        found.update({f"{folder.name}: {ln}": s for ln, s in leaks(zh, quoted).items()})
        found.update({f"{folder.name}: {spot}": ["punctuation"] for spot in spots})
    assert not found, found


LIVEFIRE = ROOT / "tests" / "livefire" / "runs"


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_every_livefire_run_in_zh_has_no_english_sentence(fmt: str, monkeypatch) -> None:
    # real TRL runs, read without a job file: the sizing notes, fallbacks made concrete and
    # reader warnings the corpus does not show
    from advisor.api import diagnose
    from advisor.report import render

    runs = sorted(p for p in LIVEFIRE.iterdir() if (p / "label.json").exists())
    assert len(runs) > 5
    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    found = {}
    for folder in runs:
        d = diagnose(folder)
        out = render(d, fmt)
        ending = d.run.ending if d.run is not None else None
        quoted = ending.message if ending is not None and ending.message else ""
        text = page_text(out) if fmt == "html" else out
        found.update({f"{folder.name}: {ln}": s for ln, s in leaks(text, quoted).items()})
        found.update({f"{folder.name}: {spot}": ["punctuation"] for spot in loose(out, fmt)})
    assert not found, found


# --- every config rule case (tests/config/cases/) in zh: the messages the code composes too


def test_every_config_finding_in_zh_has_no_english_sentence(monkeypatch, tmp_path) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "config"))
    from test_config_cases import CASES, _job_file, _previous

    from advisor.api import validate_job
    from advisor.i18n import localise_config

    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    found, said = {}, 0
    for name, case in CASES:
        if not case["fires"]:
            continue
        folder = tmp_path / name
        folder.mkdir()
        _, diag = validate_job(
            _job_file(case, folder),
            case.get("sets", ()),
            training_samples=case.get("training_samples"),
            profile=case.get("profile"),
            hints=case.get("hints"),
            previous=_previous(case, folder),
        )
        for f in diag.config_findings:
            message = localise_config(f).message
            said += 1
            if english_sentences(message):
                found[f"{name} {f.id}"] = message
    assert said > 100
    assert not found, found


def test_the_run_history_in_zh(tmp_path) -> None:
    earlier = CORPUS / "p1-stall-verl-jsonl-s0004"
    report = _run(
        [
            "diagnose",
            str(earlier.relative_to(ROOT)),
            "--config",
            str((earlier / "job.yaml").relative_to(ROOT)),
            "--format",
            "json",
            "--fail-on",
            "never",
        ],
        None,
    )
    assert report.returncode == 0, report.stderr
    (tmp_path / "rl-advisor-report.json").write_text(report.stdout, encoding="utf-8")
    out = _diagnose(
        RUNS["P1"], "--previous", str(tmp_path / "rl-advisor-report.json"), "--lang", "zh"
    )
    assert out.returncode == 0, out.stderr
    assert "；当时的诊断建议提高 `learning_rate`。" in out.stdout
    assert not leaks(out.stdout)
