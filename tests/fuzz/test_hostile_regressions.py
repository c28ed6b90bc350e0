"""Every class of issue 16 pinned: tracebacks, hangs, cost, changed inputs, outputs, markup,
contract. Each test is one reproduction from the issue, with the behaviour it must keep."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from advisor.api import diagnose, validate
from advisor.cli import main
from advisor.ingest import load_run
from advisor.types import InputError

sys.path.insert(0, str(Path(__file__).parent))
from hostile import CORPUS, FIXTURES, PAYLOADS, _yaml_bomb, injected

RUN = CORPUS / "p1-stall-verl-console-s0001"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------------------- tracebacks
@pytest.mark.parametrize(
    "body",
    [
        '{"step": 1, "x": ' + "[" * 1000 + "]" * 1000 + '}\n{"step": 2, "x": 1}\n',
        '{"log_history": ' + "[" * 3000 + "]" * 3000 + "}",
        '{"step": ' + "9" * 5000 + ', "reward": 1}\n{"step": 2, "reward": 2}\n',
        "step:18446744073709551617 - critic/rewards/mean:0.1\n" * 3,
    ],
)
def test_deep_or_huge_json_is_one_line(tmp_path: Path, body: str) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text(body)
    try:
        load_run(p)  # a result, or one line naming the file
    except InputError as err:
        assert "\n" not in str(err) and str(p) in str(err)


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(f"{'  ' * i}k{i}:" for i in range(1000)) + " 1",
        "[" * 100_000,
        "? !!pairs [a: 1]\n: 2\n",
        "training:\n  hyper_parameters:\n    max_length: " + "9" * 400 + "\n",
    ],
)
def test_odd_job_files_are_findings_or_one_line(tmp_path: Path, text: str) -> None:
    p = tmp_path / "job.yaml"
    p.write_text(text)
    try:
        validate(p)
    except InputError as err:
        assert "\n" not in str(err)


def test_python_job_with_a_tuple_key(tmp_path: Path) -> None:
    p = tmp_path / "job.py"
    p.write_text("client.run(hyper_parameters={(1, 2): 3, 'learning_rate': 1e-6})\n")
    d = validate(p)
    assert any(f.id == "C001" for f in d.config_findings)


@pytest.mark.parametrize("value", ["[" * 2000, "9" * 400, "a\nb"])
def test_set_values_are_one_line(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, _, err = cli(capsys, "validate", RUN / "job.yaml", "--set", f"max_length={value}")
    assert code in (1, 2)
    assert code == 1 or len(err.strip().splitlines()) == 1
    code, _, err = cli(capsys, "validate", RUN / "job.yaml", "--set", "x\ny=1")
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_lone_surrogate_in_a_key_keeps_json_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "job.json"
    p.write_text('{"hyper_parameters": {"learning_rate\\ud800": 1e-6}}')
    code, out, _ = cli(capsys, "validate", p, "--format", "json")
    assert code in (1, 2)
    assert json.loads(out)["config_findings"] if code == 1 else out == ""


def _stores(tmp_path: Path) -> tuple[list[Path], sqlite3.Connection]:
    ml = tmp_path / "mlflow.db"
    con = sqlite3.connect(ml)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(
        "CREATE TABLE runs (run_uuid, name, status, start_time, lifecycle_stage);"
        "CREATE TABLE metrics (key, value, timestamp, step, is_nan, run_uuid);"
        "CREATE TABLE params (key, value, run_uuid);"
        "INSERT INTO runs VALUES ('r', '<b>x</b>', 'FAILED', 1, 'active');"
    )
    rows = [("critic/rewards/mean", 0.1 * s, s, s, 0, "r") for s in range(1, 30)]
    rows += [(None, 1, 1, 1, 0, "r"), ("k", "text", 1, 1, 0, "r"), ("k", 1, 1, 1e20, 0, "r")]
    con.executemany("INSERT INTO metrics VALUES (?,?,?,?,?,?)", rows)
    con.commit()
    tr = tmp_path / "trackio.db"
    con2 = sqlite3.connect(tr)
    con2.executescript(
        "CREATE TABLE metrics (id INTEGER PRIMARY KEY, timestamp, run_name, step, metrics);"
    )
    cells = [(str(s), "r", s, json.dumps({"train/reward": 0.1})) for s in range(1, 30)]
    cells += [("x", "r", None, "[" * 5000), ("y", "r", "x", None), ("z", None, 1e20, 5)]
    con2.executemany("INSERT INTO metrics (timestamp, run_name, step, metrics) VALUES (?,?,?,?)",
                     cells)  # fmt: skip
    con2.commit()
    con2.close()
    return [ml, tr], con  # the MLflow writer stays open: its WAL stays live


def test_sqlite_cells_of_the_wrong_type_and_no_file_appears(tmp_path: Path) -> None:
    dbs, writer = _stores(tmp_path)
    for db in dbs:
        before = sorted(os.listdir(tmp_path))
        run = load_run(db)
        assert run.steps >= 29
        assert sorted(os.listdir(tmp_path)) == before  # no -shm / -wal made by reading
    writer.close()


# ----------------------------------------------------------------------------- cost
def test_decreasing_steps_are_linear(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text(
        "".join(json.dumps({"step": 20000 - i, "reward": 0.1}) + "\n" for i in range(20000))
    )
    t = time.monotonic()
    run = load_run(p)
    assert time.monotonic() - t < 5 and len(run.warnings) <= 7


def test_far_steps_do_not_build_a_trillion_checkpoints(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    rows = [{"step": s, "reward": 0.1, "val_reward": 0.2} for s in (1, 2, 3, 10**12)]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = load_run(p)
    assert run.info().last_step == 3 and any("beyond" in w for w in run.warnings)
    diagnose(p, sets=["save_steps=1", "save_strategy=steps"])


def test_billion_laughs_and_many_unknown_keys_are_quick(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_yaml_bomb())
    t = time.monotonic()
    with pytest.raises(InputError, match="aliases expand"):
        validate(bomb)
    many = tmp_path / "many.yaml"
    many.write_text("training:\n  hyper_parameters:\n"
                    + "".join(f"    unknown_key_{i}: {i}\n" for i in range(4000)))  # fmt: skip
    d = validate(many)
    assert sum(f.id == "C001" for f in d.config_findings) <= 51
    assert time.monotonic() - t < 10


@pytest.mark.parametrize("what", ["fifo", "zero", "loop"])
def test_files_that_are_not_files_are_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    p = tmp_path / "events.out.tfevents.1"
    if what == "fifo":
        os.mkfifo(p)
    elif what == "zero":
        p.symlink_to("/dev/zero")
    else:
        p.symlink_to(p)
    code, _, err = cli(capsys, "diagnose", p, "-o", tmp_path / "r.md")
    assert code == 2 and len(err.strip().splitlines()) == 1
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "events.out.tfevents.2").symlink_to("/dev/zero")
    (folder / "train.log").write_bytes((FIXTURES / "verl_console.log").read_bytes())
    assert load_run(folder).steps == 4


# ----------------------------------------------------------------------------- outputs
@pytest.mark.parametrize("kind", ["device", "devlink", "dir"])
def test_output_onto_a_device_or_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    bad = tmp_path / "bad"
    if kind == "device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(bad, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    elif kind == "devlink":
        bad.symlink_to("/dev/null")
    else:
        bad.mkdir()
    patched = tmp_path / "next.yaml"
    code, _, err = cli(capsys, "diagnose", RUN / "train.log", "--config", RUN / "job.yaml",
                       "-o", bad, "--patched-config", patched)  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert not patched.exists()
    if kind == "device":
        assert stat.S_ISCHR(os.lstat(bad).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_failed_write_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import advisor.resources as res

    real = res.os.replace
    calls = []

    def full(src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(res.os, "replace", full)
    out, patched = tmp_path / "o" / "r.md", tmp_path / "o" / "next.yaml"
    code, _, err = cli(capsys, "diagnose", RUN / "train.log", "--config", RUN / "job.yaml",
                       "-o", out, "--patched-config", patched)  # fmt: skip
    assert code == 2 and "No space left" in err
    assert not (tmp_path / "o").exists()


def test_report_to_a_file_says_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.md"
    code, stdout, err = cli(capsys, "diagnose", RUN, "--config", RUN / "job.yaml", "-o", out,
                            "--fail-on", "never")  # fmt: skip
    assert code == 0 and stdout == "" and out.exists()
    assert len(err.strip().splitlines()) == 1 and "report written to" in err.lower() and "P1" in err


# ----------------------------------------------------------------------------- markup
@pytest.mark.parametrize("payload", PAYLOADS)
def test_markup_from_inputs_stays_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: str
) -> None:
    log = tmp_path / "train.log"
    crash = payload.replace("\n", " ")
    log.write_text((FIXTURES / "verl_console.log").read_text() + f"\nRuntimeError: {crash}\n")
    job = tmp_path / "job.yaml"
    text = (RUN / "job.yaml").read_text().replace('"p1-stall-verl-console-s0001"',
                                                  json.dumps(payload))  # fmt: skip
    job.write_text(text)
    code, out, _ = cli(capsys, "diagnose", log, "--config", job, "--fail-on", "never")
    assert code == 0 and injected(out) == []
    code, out, _ = cli(capsys, "validate", job, "--fail-on", "never", "--show-config")
    assert code in (0, 2) and injected(out) == []


def test_a_diff_holding_backticks_keeps_its_fence() -> None:
    from advisor.report.escape import code, fence, prose

    assert fence("a ```` b") == "`````"
    assert code("a``b") == "```a``b```"
    assert "&#124;" in prose("a|b") and "\\" in prose("a\\|b")


# ----------------------------------------------------------------------------- contract
def test_validate_refuses_what_is_not_a_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "a.json"
    p.write_text('{"a": 1}')
    assert cli(capsys, "validate", p)[0] == 1
    assert cli(capsys, "validate", FIXTURES / "trainer_state.json")[0] == 1


def test_watch_refuses_what_diagnose_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "m.bin"
    p.write_bytes(bytes(range(256)) * 4)
    code, _, err = cli(capsys, "watch", p, "--idle", "0.2", "--poll", "0.05")
    assert code == 2 and "binary" in err


@pytest.mark.parametrize("body", ["[" * 100_000, '{"a": ' * 5000])
@pytest.mark.parametrize("sets", [[], ["learning_rate=" + "[" * 2000]])
def test_a_deep_json_job_is_refused_before_json_reads_it(
    tmp_path: Path, body: str, sets: list[str]
) -> None:
    p = tmp_path / "job.json"
    p.write_text(body)
    with pytest.raises(InputError, match="levels deep") as err:
        validate(p, sets)
    assert "\n" not in str(err.value) and str(p) in str(err.value)


def test_console_lines_built_to_backtrack_are_read_in_linear_time(tmp_path: Path) -> None:
    # each line defeats one pattern that once retried every split of a long run: digits
    # before a tqdm count, "job " without "failed", spaces after a lead step, an exception
    # name of repeated words after a traceback
    src = (FIXTURES / "verl_v05_crlf.log").read_bytes()
    hostile = [
        "Training Progress: " + ("9" * 5000 + " ") * 10 + "3/3 [00:01<00:00]",
        "job " * 20_000,
        "RuntimeError: " * 8000,
        "step 1" + " " * 60_000 + "{'loss': 0.1}",
        "Traceback (most recent call last):",
        "Error" * 20_000 + "!",
    ]
    p = tmp_path / "verl.log"
    p.write_bytes(src + "\r\n".join(hostile).encode() + b"\r\n" + src)
    t = time.monotonic()
    try:
        load_run(p)
    except InputError as err:
        assert "\n" not in str(err)
    assert time.monotonic() - t < 5


@pytest.mark.parametrize("shape", ["[1, 2]", "5", "'text'"])
def test_a_job_with_no_place_for_the_change_is_said_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shape: str
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(f"training:\n  hyper_parameters: {shape}\n")
    d = diagnose(RUN / "train.log", job)  # the diagnosis, with the reason the diff is missing
    assert d.patch is not None and d.patch.changes and d.patch_diff is None
    assert any(f"{job}:2: training.hyper_parameters is a" in n for n in d.patch.notes)
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = cli(
        capsys, "diagnose", RUN / "train.log", "--config", job, "--no-plots",
        "--patched-config", out / "next.yaml", "-o", out / "report.md",
    )  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1 and "expected a mapping" in err
    assert os.listdir(out) == []


# ----------------------------------------------------------------------------- watch's end
def _step_line(step: int) -> str:
    return f"step:{step} - critic/rewards/mean:{0.1 + step / 100:.3f} - actor/entropy:0.5\n"


def _write_steps(log: Path, steps: range, every: float, tail: str = "") -> threading.Thread:
    def run() -> None:
        with log.open("a", encoding="utf-8") as fh:
            for s in steps:
                fh.write(_step_line(s))
                fh.flush()
                time.sleep(every)
            fh.write(tail)
            fh.flush()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_watch_ends_on_a_silence_paced_by_the_steps(tmp_path: Path) -> None:
    from advisor.integrations.follow import Sidecar
    from advisor.online import Advisor

    log = tmp_path / "train.log"
    log.write_text("".join(_step_line(s) for s in range(1, 4)))  # read at start: no pace
    writer = _write_steps(log, range(4, 9), every=0.1)  # then a crash that prints nothing
    sidecar = Sidecar(log, Advisor(source=str(log)), poll=0.02, idle=60, min_quiet=0.5)
    t = time.monotonic()
    assert sidecar.run() == "idle"
    writer.join(5)
    assert time.monotonic() - t < 10  # 5x the longest gap (at least 0.5 s), not --idle
    run = sidecar.advisor.diagnosis().run
    assert run is not None and any("no final status line" in w for w in run.warnings)


def test_watch_ends_soon_after_a_traceback(tmp_path: Path) -> None:
    from advisor.integrations.follow import Sidecar
    from advisor.online import Advisor

    log = tmp_path / "train.log"
    tail = 'Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: boom\n'
    writer = _write_steps(log, range(1, 8), every=0.05, tail=tail)
    sidecar = Sidecar(log, Advisor(source=str(log)), poll=0.02, idle=60, error_floor=0.3)
    t = time.monotonic()
    assert sidecar.run() == "ending"
    writer.join(5)
    assert time.monotonic() - t < 5


@pytest.mark.slow
def test_watch_cli_after_a_crash_ends_within_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "".join(_step_line(s) for s in range(1, 30)) + "Traceback (most recent call last):\n"
        "torch.OutOfMemoryError: CUDA out of memory\n"
    )
    t = time.monotonic()
    code, _, err = cli(capsys, "watch", log, "--idle", "900", "--poll", "0.2", "--fail-on", "never")
    assert code == 0 and "ending" in err and time.monotonic() - t < 20


def test_an_mlflow_folder_of_thousands_of_metric_files_is_read_in_part(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "metrics" / "critic" / "rewards").mkdir(parents=True)
    (run / "meta.yaml").write_text("status: 3\n")
    rows = "".join(f"1700000000{s:03d} {0.1 + s / 1000} {s}\n" for s in range(100))
    (run / "metrics" / "critic" / "rewards" / "mean").write_text(rows)
    (run / "metrics" / "zzz").mkdir()
    for i in range(3000):  # the known metric sorts after these by name
        (run / "metrics" / "zzz" / f"m{i:04d}").write_text(rows)
    t = time.monotonic()
    loaded = load_run(run)
    assert time.monotonic() - t < 10
    assert "reward_mean" in loaded.frame.columns and loaded.frame.width < 400
    assert any("3,001 metric files" in w for w in loaded.warnings)


def test_following_a_big_existing_log_is_linear(tmp_path: Path) -> None:
    from advisor.integrations.follow import Follower

    log = tmp_path / "train.log"
    log.write_bytes(_step_line(1).encode() * 1_000_000)  # ~60 MB already written
    t = time.monotonic()
    lines = Follower(log).poll()
    assert len(lines) == 1_000_000 and time.monotonic() - t < 10
