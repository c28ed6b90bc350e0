"""`rl-advisor diff`'s prompts section: per-prompt records in the formats verl, TRL and
rlprobe write (tests/diff/records, made by each tool's own writer), read from the run
folders through the real command, and the reader's parts on their own."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from advisor import prompts
from advisor.cli import main

ROOT = Path(__file__).parents[2]
RECORDS = ROOT / "tests" / "diff" / "records"
CORPUS = ROOT / "sample_metrics" / "corpus"
VERL_METRICS = CORPUS / "healthy-steady-verl-jsonl-s0010" / "metrics.jsonl"


def _diff(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["diff", *argv])
    out = capsys.readouterr()
    assert out.err == ""
    return code, out.out


def _verl_run(tmp_path: Path, name: str) -> Path:
    """A verl run folder: a corpus run's metrics and the recorded dumps of `name`."""
    run = tmp_path / name
    shutil.copytree(RECORDS / name, run)
    shutil.copy(VERL_METRICS, run / "metrics.jsonl")
    return run


def _question(prompt: str) -> str:
    return prompt.split("user\n")[1].split("\n")[0]


def test_verl_validation_dumps_at_the_latest_step_both_runs_validated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _verl_run(tmp_path, "verl-a"), _verl_run(tmp_path, "verl-b")
    code, out = _diff(capsys, str(a), str(b), "-f", "json")
    chat_prefix = "system\nYou are a helpful assistant.\nuser\n"
    assert code == 0  # the same metrics: the prompts' gaps are a listing, not a verdict
    p = json.loads(out)["prompts"]
    assert [(s["kind"], s["where"]) for s in p["sources_a"]] == [
        ("verl", "rollout_data"), ("verl", "val_generations")
    ]  # fmt: skip
    assert [(s["where"], s["files"]) for s in p["sources_b"]] == [("val_generations", 4)]
    [c] = p["compared"]  # A's rollouts have nothing to pair with
    assert (c["a"], c["b"], c["common"], c["differ"]) == ("val_generations",) * 2 + (5, 3)
    # make_verl.py: at step 40 (B's step 60 has no counterpart in A) A gets 4, 3, 1 of four
    # right on apples, trains, bakery; B 1, 1, 4; the other two prompts alike
    got = [(_question(g["prompt"])[:9], g["score_a"], g["score_b"], g["gap"]) for g in c["top"]]
    assert got == [
        ("A bakery ", 0.25, 1.0, -0.75),
        ("Janet has", 1.0, 0.25, 0.75),
        ("A train t", 0.75, 0.25, 0.5),
    ]
    assert {(g["step_a"], g["step_b"], g["samples_a"], g["samples_b"]) for g in c["top"]} == {
        (40, 40, 4, 4)
    }
    assert [g["higher"] for g in c["top"]] == ["b", "a", "a"] and p["note"] == ""
    code, md = _diff(capsys, str(a), str(b))
    assert "## Prompts scored most apart" in md
    assert "verl generation dumps in `val_generations` of A (3 of 3 files read)" in md
    assert "Every prompt below begins with ` system You are a helpful assistant. user  `" in md
    assert "\n| A bakery sells 12 rolls a dozen." in md  # the chat template's turn said once
    assert json.loads(out)["prompts"]["compared"][0]["prefix"] == chat_prefix


def test_trl_completion_logs_of_two_real_runs(capsys: pytest.CaptureFixture[str]) -> None:
    a, b = RECORDS / "trl-sane", RECORDS / "trl-lr-tiny"
    _, out = _diff(capsys, str(a), str(b), "-f", "json")
    r = json.loads(out)
    assert r["a"]["framework"] == r["b"]["framework"] == "trl"
    [c] = r["prompts"]["compared"]
    assert c["a"] == c["b"] == "completions" and c["common"] == 10

    # the same figures from the files by another road: polars, latest common step per prompt
    def table(run: Path) -> pl.DataFrame:
        return pl.concat([pl.read_parquet(f) for f in sorted((run / "completions").iterdir())])

    ta, tb = table(a), table(b)
    steps = ta.select("prompt", "step").unique().join(tb.select("prompt", "step").unique(),
                                                      on=["prompt", "step"])  # fmt: skip
    last = steps.group_by("prompt").agg(pl.col("step").max())

    def scores(t: pl.DataFrame) -> dict[str, float]:
        at = t.join(last, on=["prompt", "step"])  # the reward function's column: copy_digit
        return dict(at.group_by("prompt").agg(pl.col("copy_digit").mean()).iter_rows())

    sa, sb = scores(ta), scores(tb)
    want = sorted(
        ((sa[k] - sb[k], k) for k in sa if sa[k] != sb[k]),
        key=lambda x: (-round(abs(x[0]), 9), x[1]),
    )
    assert [(g["prompt"], pytest.approx(g["gap"])) for g in c["top"]] == [
        (k, pytest.approx(gap)) for gap, k in want[:10]
    ]
    assert c["differ"] == len(want)


def test_rlprobe_recordings(capsys: pytest.CaptureFixture[str]) -> None:
    a, b = RECORDS / "rlprobe-a", RECORDS / "rlprobe-b"
    _, out = _diff(capsys, str(a), str(b), "-f", "json")
    p = json.loads(out)["prompts"]
    assert p["sources_a"][0] | {"skipped": None} == {
        "kind": "rlprobe", "where": ".", "files": 1, "files_read": 1, "samples": 48,
        "prompts": 6, "skipped": None,
    }  # fmt: skip
    [c] = p["compared"]
    # make_rlprobe.py: at step 40 the runs differ on three prompts, by (final A - final B)
    # x the share of the way trained (1 - e^-40/12)
    done = 1 - math.exp(-40 / 12)
    assert [(g["prompt"], g["step_a"]) for g in c["top"]] == [
        ("7 * 7 =", 40), ("7 + 5 =", 40), ("2 + 2 =", 40)
    ]  # fmt: skip
    assert [g["gap"] for g in c["top"]] == pytest.approx(
        [0.6 * done, 0.5 * done, -0.45 * done], abs=2e-6
    )  # the recorded rewards are rounded to 6 places


def test_neither_run_has_records_said_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = CORPUS / "healthy-noisy-verl-jsonl-s0011"
    b = CORPUS / "healthy-steady-verl-jsonl-s0010"
    _, out = _diff(capsys, str(a), str(b), "-f", "json")
    p = json.loads(out)["prompts"]
    assert p["compared"] == [] and p["sources_a"] == p["sources_b"] == []
    assert p["note"].startswith("Neither run has per-prompt records (verl's dumps of")
    _, md = _diff(capsys, str(a / "metrics.jsonl"), str(b))
    assert "Neither run has per-prompt records" in md
    assert "(RUN_A is a file: records are looked for in a run's folder and in the" in md
    assert "| prompt |" not in md
    one = _verl_run(tmp_path, "verl-a")
    _, out = _diff(capsys, str(one), str(b), "-f", "json")
    note = json.loads(out)["prompts"]["note"]
    assert note.startswith("Only A has per-prompt records; B has none to set them against")


def test_a_broken_dump_is_left_out_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _verl_run(tmp_path, "verl-a"), _verl_run(tmp_path, "verl-b")
    with (b / "val_generations" / "40.jsonl").open("a") as f:
        f.write('{"input": "cut sh\n')
    _, out = _diff(capsys, str(a), str(b), "-f", "json")
    p = json.loads(out)["prompts"]
    assert p["sources_b"][0]["skipped"] == ["40.jsonl: line 21 is not JSON"]
    [c] = p["compared"]
    assert {(g["step_a"], g["step_b"]) for g in c["top"]} == {(20, 20)}  # 40 gone from B
    _, md = _diff(capsys, str(a), str(b))
    assert "Left out of B's records: 40.jsonl: line 21 is not JSON." in md


def test_a_prompt_cannot_break_the_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evil = "<img src=x onerror=alert(1)> | *b* [l](x)\n# head " + "x" * 200
    runs = []
    for name, score in (("a", 1.0), ("b", 0.0)):
        run = tmp_path / name
        (run / "dumps").mkdir(parents=True)
        shutil.copy(VERL_METRICS, run / "metrics.jsonl")
        row = {"input": evil, "output": "o", "gts": "g", "score": score, "step": 3}
        (run / "dumps" / "3.jsonl").write_text(json.dumps(row) + "\n")
        runs.append(str(run))
    _, md = _diff(capsys, *runs)
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    kinds = {c.type for t in tokens for c in (t.children or [])} | {t.type for t in tokens}
    assert not kinds & {"html_inline", "html_block", "link_open", "image", "em_open"}
    [line] = [ln for ln in md.splitlines() if "onerror" in ln]
    assert line.count(" | ") == 5 and "x" * 40 + "..." in line and "x" * 200 not in line


# ----------------------------------------------------------------------------- the parts
def test_trl_conversations_and_logged_extras(tmp_path: Path) -> None:
    """TRL's table for conversational prompts (a list of messages per row, as pandas writes
    it: a list of structs) with a `log_extra` column: the run's reward names pick the
    reward columns, NaN (a function that does not score the sample) is left out of the sum."""
    folder = tmp_path / "completions"
    folder.mkdir()
    conv = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2 + 2?"},
    ]
    pl.DataFrame(
        {
            "step": [5, 5, 5],
            "prompt": [conv, conv, conv[1:]],
            "completion": [[{"role": "assistant", "content": "4"}]] * 3,
            "accuracy": [1.0, 0.0, 1.0],
            "format": [0.5, float("nan"), 0.5],
            "answer_len": [1, 3, 1],  # logged with log_extra: not a reward
            "advantage": [0.7, -0.7, 0.0],
        }
    ).write_parquet(folder / "completions_00005.parquet")
    [src] = prompts.find(tmp_path)
    assert (src.kind, src.where) == ("trl", "completions")
    got = prompts.read(src, {"accuracy", "format"}).records
    assert [(r.text, r.step, r.score) for r in got] == [
        ("What is 2 + 2?", 5, 1.5), ("What is 2 + 2?", 5, 0.0), ("What is 2 + 2?", 5, 1.5)
    ]  # fmt: skip
    assert got[0].key == got[1].key != got[2].key  # the system prompt tells them apart
    every = prompts.read(prompts.find(tmp_path)[0]).records  # no names known: all numeric
    assert [r.score for r in every] == [2.5, 3.0, 2.5]


def test_a_file_that_is_not_parquet_is_left_out(tmp_path: Path) -> None:
    folder = tmp_path / "completions"
    folder.mkdir()
    (folder / "completions_00001.parquet").write_bytes(b"PAR1 not really")
    [src] = prompts.find(tmp_path)
    assert prompts.read(src).records == []
    assert src.skipped[0].startswith("completions_00001.parquet: not a readable parquet file")


def test_numbered_jsonl_that_are_not_dumps_are_not_records(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "1.jsonl").write_text('{"step": 1, "loss": 0.3}\n')
    assert prompts.find(tmp_path) == []
    assert prompts.find(tmp_path / "logs" / "1.jsonl") == []  # a file: no folder searched


def test_pairing() -> None:
    def s(kind: str, where: str) -> prompts.Source:
        return prompts.Source(kind, where)

    a = [s("verl", "val"), s("verl", "rollout"), s("trl", "completions")]
    b = [s("verl", "rollout"), s("verl", "validation"), s("rlprobe", ".")]
    got = [(x.kind, x.where, y.kind, y.where) for x, y in prompts.pair(a, b)]
    # the same folder first; then the one verl folder each has left; then one of each left
    assert got == [
        ("verl", "rollout", "verl", "rollout"),
        ("verl", "val", "verl", "validation"),
        ("trl", "completions", "rlprobe", "."),
    ]
    assert prompts.pair([s("trl", "c")], []) == []


@given(st.text())
def test_a_text_prompt_is_itself(text: str) -> None:
    assert prompts.prompt_of(text) == (text, text)


@given(
    st.lists(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["system", "user", "assistant"]), "content": st.text()}
        ),
        min_size=1,
        max_size=5,
    )
)
def test_a_conversation_is_keyed_by_its_messages(messages: list[dict[str, str]]) -> None:
    said = prompts.prompt_of(messages)
    assert said is not None
    key, shown = said
    assert json.loads(key) == messages  # every message, in order
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert shown == (users[-1] if users else messages[-1]["content"])
    assert prompts.prompt_of([{"content": m["content"], "role": m["role"]} for m in messages]) == (
        key,
        shown,
    )  # the same whatever the order of a message's fields


def test_the_readme_rows_are_what_the_command_says(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = [ln for ln in readme.splitlines() if ln.startswith(("| 1 = |", "| 2 = |"))]
    assert len(rows) == 2
    _, md = _diff(capsys, str(RECORDS / "trl-sane"), str(RECORDS / "trl-lr-tiny"))
    assert all(row in md.splitlines() for row in rows)


def _gap(text: str) -> prompts.Gap:
    return prompts.Gap(text, text, 1.0, 0.0, 1, 1, 0, 0)


@given(st.lists(st.text(alphabet="ab \n", max_size=40), max_size=6))
def test_a_shared_prefix_splits_no_word_and_leaves_each_prompt_some_text(
    texts: list[str],
) -> None:
    p = prompts.shared_prefix([_gap(t) for t in texts])
    assert all(t.startswith(p) and len(t) > len(p) for t in texts) or p == ""
    assert p == "" or (len(p) >= prompts.PREFIX_MIN and p[-1] in " \n" and len(texts) >= 2)


def test_a_short_or_lone_beginning_is_not_left_out() -> None:
    assert prompts.shared_prefix([_gap("What is 2 + 2?"), _gap("What is 3 + 3?")]) == ""
    assert prompts.shared_prefix([_gap("system\nBe brief and exact.\nuser\nHi")]) == ""
    both = [
        _gap("system\nBe brief and exact.\nuser\nHi"),
        _gap("system\nBe brief and exact.\nuser\nYo"),
    ]
    assert prompts.shared_prefix(both) == "system\nBe brief and exact.\nuser\n"


def test_a_long_run_is_read_from_its_latest_files(monkeypatch: pytest.MonkeyPatch) -> None:
    [_, val] = prompts.find(RECORDS / "verl-a")
    sizes = [f.stat().st_size for f in val.files]  # steps 0, 20, 40
    monkeypatch.setattr(prompts, "MAX_BYTES", sizes[-1] + sizes[-2])
    prompts.read(val)
    assert val.read == 2 and {r.step for r in val.records} == {20, 40}
    monkeypatch.setattr(prompts, "MAX_BYTES", 1)
    [_, val] = prompts.find(RECORDS / "verl-a")
    assert prompts.read(val).read == 1  # the latest, however large


VERL_JOB = """\
data:
  train_batch_size: 128
actor_rollout_ref:
  actor:
    optim:
      lr: 1.0e-06
  rollout:
    n: 4
trainer:
  test_freq: 20
  validation_data_dir: {where}
"""


def test_the_dump_folders_a_verl_job_file_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Metrics files side by side in one folder (no run folder to search) with each run's
    job file naming its validation dumps: relative to the job file, or absolute."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("a", "b"):
        shutil.copy(VERL_METRICS, logs / f"{name}.jsonl")
    shutil.copytree(RECORDS / "verl-a" / "val_generations", tmp_path / "jobs" / "val-a")
    shutil.copytree(RECORDS / "verl-b" / "val_generations", tmp_path / "elsewhere" / "val-b")
    job_a, job_b = tmp_path / "jobs" / "a.yaml", tmp_path / "jobs" / "b.yaml"
    job_a.write_text(VERL_JOB.format(where="val-a"))
    job_b.write_text(VERL_JOB.format(where=tmp_path / "elsewhere" / "val-b"))
    _, out = _diff(capsys, str(logs / "a.jsonl"), str(logs / "b.jsonl"),
                   "--config-a", str(job_a), "--config-b", str(job_b), "-f", "json")  # fmt: skip
    p = json.loads(out)["prompts"]
    assert [s["where"] for s in p["sources_a"]] == ["val-a"]
    assert [s["where"] for s in p["sources_b"]] == [str(tmp_path / "elsewhere" / "val-b")]
    [c] = p["compared"]
    assert [_question(g["prompt"])[:9] for g in c["top"]] == ["A bakery ", "Janet has", "A train t"]
    job_b.write_text(VERL_JOB.format(where="nowhere"))  # a folder that is not there: none
    _, out = _diff(capsys, str(logs / "a.jsonl"), str(logs / "b.jsonl"),
                   "--config-a", str(job_a), "--config-b", str(job_b), "-f", "json")  # fmt: skip
    p = json.loads(out)["prompts"]
    assert p["sources_b"] == [] and p["note"].startswith("Only A has per-prompt records")
    assert "RUN_A is a file and RUN_B is a file" in p["note"]


def test_how_many_prompts_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    a, b = str(RECORDS / "trl-sane"), str(RECORDS / "trl-lr-tiny")
    _, out = _diff(capsys, a, b, "--prompts", "3", "-f", "json")
    [c] = json.loads(out)["prompts"]["compared"]
    assert len(c["top"]) == 3 and c["differ"] == 10
    _, out = _diff(capsys, a, b, "--prompts", "0", "-f", "json")
    p = json.loads(out)["prompts"]
    assert p["sources_a"] == p["compared"] == [] and "not read (--prompts 0)" in p["note"]
    capsys.readouterr()
    assert main(["diff", a, b, "--prompts", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--prompts" in err and "Traceback" not in err
