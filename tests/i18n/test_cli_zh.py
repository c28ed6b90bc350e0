"""The CLI's own lines in zh, through the real entry point: each status line and each one-line
refusal (exit 2) of a sample of every kind says no English sentence, keeps its exit code and
its place (the file, the line), and the English lines are byte for byte the same with
`--lang en`, `RL_ADVISOR_LANG=en` and neither. Click's own usage errors stay English after
the translated `rl-advisor: 错误：` (its messages are not in the catalogue)."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_zh_report import CODE, IDENT
from test_zh_report import leaks as report_leaks

from advisor.cli import main

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "sample_metrics" / "corpus" / "p1-stall-verl-console-s0001"
CRASH = ROOT / "sample_metrics" / "corpus" / "nan-crash-verl-console-s0000"
HAN = re.compile(r"[\u4e00-\u9fff]")
sys.path.insert(0, str(ROOT / "tests" / "platform"))
from platformkit import advisor_cli, platform_server  # noqa: E402

__all__ = ["platform_server"]  # the fixture, used below

# two English words in a row (identifiers, paths, numbers and code spans taken out first): a
# line of the CLI is short, a leak of two words is one
WORDS = re.compile(r"\b[A-Za-z]{2,}(?:[ ,;:'()]+[A-Za-z]{2,})+\b")


def leaks(text: str, quoted: str = "") -> list[str]:
    """The English words in a row of `text`, but those a library or the OS wrote (`quoted`)."""
    said = set(re.findall(r"[A-Za-z]{2,}", quoted))
    bare = re.sub(r"'[^'\n]*'", " ", CODE.sub(" ", text))  # a format's own words: 'key: value'
    bare = re.sub(r"--[\w-]+(?: \w+)?", " ", bare)  # a flag and its value: --alert email
    found = WORDS.findall(IDENT.sub(" ", bare))
    return [w for w in found if not set(re.findall(r"[A-Za-z]{2,}", w)) <= said]


def _log(tmp: Path, data: bytes, name: str = "train.log") -> str:
    (tmp / name).write_bytes(data)
    return str(tmp / name)


def _deep(tmp: Path) -> str:
    return _log(tmp, ("[" * 300 + "]" * 300 + "\n").encode(), "m.json")


def _fifo(tmp: Path) -> str:
    os.mkfifo(tmp / "pipe")
    return str(tmp / "pipe")


def _job(tmp: Path, text: bytes, name: str = "job.yaml") -> str:
    (tmp / name).write_bytes(text)
    return str(tmp / name)


def _judged(*extra: str) -> list[str]:
    """diagnose of a corpus run with its job file, and `extra`."""
    return ["diagnose", str(RUN), "--config", str(RUN / "job.yaml"), *extra]


def _report_dir(tmp: Path) -> str:
    (tmp / "prev").mkdir()
    return str(tmp / "prev")


# name -> (the call's arguments, made in a fresh folder; a library's or the OS's own words the
# line quotes, left as written)
CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "missing": (lambda d: ["diagnose", str(d / "nope.log")], ""),
    "empty": (lambda d: ["diagnose", _log(d, b"")], ""),
    "binary": (lambda d: ["diagnose", _log(d, b"\x00\x01\x02\xff" * 64)], ""),
    "compressed": (lambda d: ["diagnose", _log(d, gzip.compress(b"step:1 - a:1\n"), "x.gz")], ""),
    "too_deep": (lambda d: ["diagnose", _deep(d)], ""),
    "not_regular": (lambda d: ["diagnose", _fifo(d)], ""),
    "unknown_format": (
        lambda d: ["diagnose", _log(d, b"hello there, this is a diary\nnothing to see\n")],
        "",
    ),
    "no_metric_judged": (lambda d: ["diagnose", _log(d, b"step:1 - foo:1\nstep:2 - foo:2\n")], ""),
    "empty_folder": (lambda d: ["diagnose", str(d)], ""),
    "jsonl_bad": (lambda d: ["diagnose", _log(d, b"{not json\n{nor this\n", "m.jsonl")], ""),
    "config_missing": (lambda d: ["diagnose", str(RUN), "--config", str(d / "no.yaml")], ""),
    "config_empty": (lambda d: ["diagnose", str(RUN), "--config", _job(d, b"")], ""),
    "config_list": (lambda d: ["validate", _job(d, b"- a: 1\n- b: 2\n")], ""),
    "config_latin1": (lambda d: ["validate", _job(d, b"job_name: x\n# caf\xe9\n")], ""),
    "config_dir": (lambda d: ["validate", str(d)], ""),
    "config_bad_json": (
        lambda d: ["validate", _job(d, b'{"algorithm": "gspo",\n "batch_size": }\n', "j.json")],
        "Expecting value",
    ),
    "previous_missing": (
        lambda d: _judged("--previous", str(d / "old.json")),
        "",
    ),
    "previous_dir": (
        lambda d: _judged("--previous", _report_dir(d)),
        "",
    ),
    "previous_not_json": (
        lambda d: _judged("--previous", _job(d, b"{oops", "old.json")),
        "Expecting property name enclosed in double quotes: line column (char)",
    ),
    "output_is_input": (
        lambda d: _judged("--output", str(RUN / "train.log")),
        "",
    ),
    "patched_without_config": (
        lambda d: ["diagnose", str(RUN), "--patched-config", str(d / "p.yaml")],
        "",
    ),
    "convert_without_output": (
        lambda d: ["validate", str(RUN / "job.yaml"), "--convert-to", "sdk"],
        "",
    ),
    "unknown_rule": (lambda d: ["rules", "P99"], ""),
    "unknown_demo": (lambda d: ["demo", "nosuch"], "demo nosuch"),  # the call as typed
    "set_bad": (lambda d: ["diagnose", str(RUN), "--set", "learning_rate"], ""),
    "gpus": (lambda d: _judged("--gpus", "0"), ""),
    "rules_config": (
        lambda d: _judged("--rules-config", _job(d, b"[rules.P99]\nenabled = false\n", "r.toml")),
        "",
    ),
    "rules_config_severity": (
        lambda d: _judged("--rules-config", _job(d, b'[rules.P1]\nseverity = "erorr"\n', "r.toml")),
        "error warning info",  # the values a severity takes
    ),
    "alert_no_recipient": (lambda d: ["watch", _log(d, b""), "--alert", "email"], ""),
    "alert_severity": (
        lambda d: ["watch", _log(d, b""), "--alert", "slack", "--alert-severity", "loud"],
        "",
    ),
}


def _call(capsys, monkeypatch, args: list[str], env: str | None) -> tuple[int, str, str]:
    # main() sets these from --lang and --rules-config: set here first, so undone after
    for name in ("RL_ADVISOR_LANG", "RL_ADVISOR_RULES_CONFIG"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    if env is not None:
        monkeypatch.setenv("RL_ADVISOR_LANG", env)
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_refusal_is_said_in_zh(case: str, tmp_path, capsys, monkeypatch) -> None:
    make, quoted = CASES[case]
    args = make(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    en_code, en_out, en = _call(capsys, monkeypatch, args, None)
    assert en_code == 2 and en_out == "" and en.count("\n") == 1, en
    assert en.startswith("rl-advisor: error: ")
    assert leaks(en), "the leak test finds the English line's sentence"
    # English: the same bytes however it is asked for
    assert _call(capsys, monkeypatch, [*args, "--lang", "en"], None)[2] == en
    assert _call(capsys, monkeypatch, args, "en")[2] == en
    zh_code, zh_out, zh = _call(capsys, monkeypatch, [*args, "--lang", "zh"], None)
    assert (zh_code, zh_out) == (2, "") and zh.count("\n") == 1, zh
    assert zh.startswith("rl-advisor: 错误：") and HAN.search(zh[len("rl-advisor: 错误：") :])
    assert not leaks(zh, quoted), (en, zh)
    # the place stays: every path and `file:line` the English line names
    for place in re.findall(r"(?:/[\w.\-]+)+(?::\d+)*", en):
        assert place in zh, (place, zh)
    assert sorted(tmp_path.rglob("*")) == before  # nothing left beside the inputs


def test_click_usage_errors_stay_english_after_the_prefix(capsys, monkeypatch) -> None:
    code, _, err = _call(capsys, monkeypatch, ["diagnose", str(RUN), "--bogus"], "zh")
    assert code == 2 and err.startswith("rl-advisor: 错误：")
    code, _, en = _call(capsys, monkeypatch, ["diagnose", str(RUN), "--bogus"], None)
    assert code == 2 and en.startswith("rl-advisor: error: ")
    assert err.removeprefix("rl-advisor: 错误：") == en.removeprefix("rl-advisor: error: ")


def test_the_status_line_after_a_report(tmp_path, capsys, monkeypatch) -> None:
    def diagnose(lang: str | None, *extra: str) -> tuple[str, str]:
        out = tmp_path / (lang or "none")
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        args = ["diagnose", str(RUN), "--config", str(RUN / "job.yaml"), "--no-plots"]
        args += ["--fail-on", "never", "--output", str(out / "Report.md")]
        args += ["--patched-config", str(out / "Patched.yaml"), *extra]
        code, stdout, err = _call(capsys, monkeypatch, args, lang)
        assert code == 0 and stdout == ""
        return err.replace(str(out), "OUT"), (out / "Report.md").read_text(encoding="utf-8")

    en, report = diagnose(None)
    # the verdict the report begins with, then what was written where (a path's capitals kept)
    verdict = report.split("**Verdict:** ")[1].split("\n")[0]
    assert en == (
        f"rl-advisor: {verdict} Report written to OUT/Report.md; patched job written to "
        "OUT/Patched.yaml.\n"
    )
    assert diagnose("en")[0] == en and diagnose(None, "--lang", "en")[0] == en
    zh, report = diagnose("zh")
    verdict = report.split("**结论：** ")[1].split("\n")[0]
    assert zh == (
        f"rl-advisor: {verdict}报告已写入 OUT/Report.md；"
        "修改后的作业配置已写入 OUT/Patched.yaml。\n"
    )
    assert not leaks(zh)


def _watch(tmp: Path, lang: str) -> tuple[int, str]:
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "RL_ADVISOR_LANG"}
    env.update(RL_ADVISOR_LANG=lang, COLUMNS="200")
    args = ["--config", str(CRASH / "job.yaml"), "--idle", "2", "--poll", "0.2"]
    args += ["--output", str(tmp / f"{lang}.md"), "--on-finding", "exit 3"]
    out = subprocess.run(
        [sys.executable, "-m", "advisor", "watch", str(CRASH / "train.log"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    return out.returncode, out.stderr.replace(str(tmp), "OUT")


def test_watch_says_its_lines_in_zh(tmp_path) -> None:
    en_code, en = _watch(tmp_path, "en")
    zh_code, zh = _watch(tmp_path, "zh")
    assert en_code == zh_code == 1
    assert "rl-advisor: watching " in en and "stopped watching (ending) after 275 steps" in en
    assert "--on-finding command failed for NAN: exit 3" in en
    assert "(advice: not applied automatically)" in en and "from step 252 (seen at step 263)" in en
    assert en.endswith("rl-advisor: report written to OUT/en.md\n")
    assert "rl-advisor: 已停止监控（日志已写出结束行），共 275 步" in zh
    assert "始于第 252 步（第 263 步发现）" in zh and "错误    NAN" in zh
    assert zh.endswith("rl-advisor: 报告已写入 OUT/zh.md\n")
    assert not leaks(zh), zh
    assert len(zh.splitlines()) == len(en.splitlines())


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        (None, "平台上没有这个作业（HTTP 404"),
        ({"error": [401, "InvalidApiKey", "Invalid key."]}, "平台拒绝了 DASHSCOPE_API_KEY"),
        ({"delay": 2.0}, "平台在 0.3 秒内没有应答作业信息（已试 3 次）"),
    ],
    ids=["404", "401", "timeout"],
)
def test_platform_errors_in_zh(platform_server, spec, says) -> None:
    env = platform_server({} if spec is None else {"ft-x": spec})
    args = ("diagnose", "--job", "ft-x", "--timeout", "0.3")
    en = advisor_cli(env, *args, timeout=120)
    zh = advisor_cli({**env, "RL_ADVISOR_LANG": "zh"}, *args, timeout=120)
    assert en.returncode == zh.returncode == 2 and zh.stdout == ""
    assert en.stderr.startswith("rl-advisor: error: job ft-x: ") and leaks(en.stderr)
    assert zh.stderr.startswith("rl-advisor: 错误：作业 ft-x：") and says in zh.stderr
    said = re.search(r"\(HTTP \d+ ([^)]*)\)", en.stderr)  # the platform's own words
    assert not leaks(zh.stderr, said.group(1) if said else ""), zh.stderr
    none = advisor_cli({**env, "DASHSCOPE_API_KEY": "", "RL_ADVISOR_LANG": "zh"}, *args)
    assert none.stderr.startswith("rl-advisor: 错误：--job：没有设置 DASHSCOPE_API_KEY")


def test_a_line_no_message_reads_stays_as_written(monkeypatch) -> None:
    from advisor.cli import error_line

    monkeypatch.setenv("RL_ADVISOR_LANG", "zh")
    assert error_line("x.log: something new went wrong") == (
        "rl-advisor: 错误：x.log: something new went wrong"
    )
    assert leaks(error_line("x.log: something new went wrong"))  # so a test above can fail
    monkeypatch.setenv("RL_ADVISOR_LANG", "en")
    assert error_line("x.log: something") == "rl-advisor: error: x.log: something"


def test_validate_says_its_summary_and_assumptions_in_zh(capsys, monkeypatch) -> None:
    # the job's training file is not beside it: the assumption that says so, in zh too
    args = ["validate", str(RUN / "job.yaml")]
    _, en, _ = _call(capsys, monkeypatch, args, None)
    _, zh, _ = _call(capsys, monkeypatch, args, "zh")
    assert "not found locally" in en and report_leaks(en)
    assert "本地找不到训练文件" in zh and not report_leaks(zh), report_leaks(zh)
