"""A zh report says no English sentence: through the real entry point (the report's own words,
every rulebook text and every sentence the code composes in Chinese, the English report
unchanged, the JSON's keys and ids as in English), and in-process for every golden case
(reports/, the runs `rl-advisor demo` ships) and every labelled corpus run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
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


def test_the_detector_finds_a_sentence() -> None:  # the leak test can fail
    assert english_sentences("原因：the policy drifts from the reference")
    assert not english_sentences("提高 `learning_rate` 到 ×1.5（P1 not-converging）")
    assert leaks("- 证据：reward_mean stayed flat over the run")
    quoted = "RuntimeError: probability tensor contains either nan"
    assert not leaks("- 结束方式: 异常 RuntimeError: probability tensor contains nan", quoted)
    assert leaks("- 结束方式: 异常 RuntimeError: the tensor holds a nan", quoted)
    assert not leaks("如何屏蔽：…；出处：knowledge.md §4 (switch to DAPO: longer than 4K)")


# --- every golden case and every corpus run, in-process (one diagnosis each)


def _zh_report(
    folder: Path, monkeypatch: pytest.MonkeyPatch, with_job: bool = True
) -> tuple[str, str, str]:
    """The run's Markdown report in zh and in English, and its log's ending message; without
    its job file the report speaks the run's framework's names (TRL's, verl's)."""
    from advisor.api import diagnose
    from advisor.report import render

    label = json.loads((folder / "label.json").read_text(encoding="utf-8"))
    job = folder / "job.yaml"
    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    d = diagnose(folder / label["metrics_file"], config=job if with_job and job.exists() else None)
    zh = render(d, "markdown")
    monkeypatch.setenv("RL_ADVISOR_LANG", "en")
    en = render(d, "markdown")
    ending = d.run.ending if d.run is not None else None
    return zh, en, ending.message if ending is not None and ending.message else ""


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_every_golden_case_in_zh_has_no_english_sentence(name: str, monkeypatch) -> None:
    zh, en, quoted = _zh_report(CORPUS / GOLDEN[name], monkeypatch)
    assert leaks(en, quoted), "the leak test finds the English report's sentences"
    found = leaks(zh, quoted)
    assert not found, found


@pytest.mark.parametrize("with_job", [True, False], ids=["job-file", "framework-names"])
def test_every_corpus_run_in_zh_has_no_english_sentence(with_job: bool, monkeypatch) -> None:
    runs = sorted(p.parent for p in CORPUS.glob("*/label.json"))
    assert len(runs) > 40
    found = {}
    for folder in runs:
        zh, _en, quoted = _zh_report(folder, monkeypatch, with_job)
        found.update({f"{folder.name}: {ln}": s for ln, s in leaks(zh, quoted).items()})
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
