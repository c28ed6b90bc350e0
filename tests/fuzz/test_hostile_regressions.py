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
def _null_node(path: Path) -> Path:
    """A private node with the null device's numbers (a fault that replaced it would break no
    one else's /dev/null); making one needs root."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return path


@pytest.mark.parametrize("kind", ["device", "devlink"])
@pytest.mark.parametrize("flag", ["-o", "--patched-config"])
def test_the_null_device_is_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, flag: str
) -> None:
    null = _null_node(tmp_path / "null")
    bad = null
    if kind == "devlink":
        bad = tmp_path / "devlink"
        bad.symlink_to(null)
    other = tmp_path / "o" / ("next.yaml" if flag == "-o" else "r.md")
    code, _, err = cli(capsys, "diagnose", RUN / "train.log", "--config", RUN / "job.yaml",
                       flag, bad, "--patched-config" if flag == "-o" else "-o", other,
                       "--fail-on", "never")  # fmt: skip
    assert code == 0, err
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.lstat(null).st_rdev == os.makedev(1, 3)
    assert os.path.islink(bad) == (kind == "devlink")
    assert other.exists()
    if flag == "-o":  # a report written through has no folder for pictures
        assert os.listdir(other.parent) == [other.name]
    assert sorted(os.listdir(tmp_path)) == sorted(["null", "o", *(["devlink"] * (bad != null))])


@pytest.mark.parametrize("target", ["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"])
def test_a_link_to_stdout_is_written_through(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], target: str
) -> None:
    link = tmp_path / "out.md"
    link.symlink_to(target)
    code = main(["diagnose", str(RUN / "train.log"), "-o", str(link), "--fail-on", "never"])
    out, err = capfd.readouterr()
    assert code == 0 and out.startswith("# rl-advisor report")
    assert "report written to" in err.lower()
    assert os.readlink(link) == target and os.listdir(tmp_path) == ["out.md"]


@pytest.mark.parametrize("chain", [1, 2])
@pytest.mark.parametrize("flag", ["-o", "--patched-config", "validate"])
def test_a_dangling_link_as_output_is_refused_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], chain: int, flag: str
) -> None:
    gone = tmp_path / "gone" / "x.md"
    link = tmp_path / "dangling.md"
    if chain == 2:
        (tmp_path / "mid.md").symlink_to(gone)
        link.symlink_to(tmp_path / "mid.md")
    else:
        link.symlink_to(gone)
    if flag == "validate":
        argv = ["validate", RUN / "job.yaml", "--convert-to", "sdk", "--output", link]
    else:
        argv = ["diagnose", RUN / "train.log", "--config", RUN / "job.yaml", flag, link]
    code, _, err = cli(capsys, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert str(link) in err and "symbolic link to nothing" in err
    assert os.path.islink(link) and not os.path.lexists(gone) and not gone.parent.exists()


@pytest.mark.parametrize("kind", ["device", "loop", "dir"])
def test_a_converted_job_never_replaces_what_is_not_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    if kind == "device":
        bad = _null_node(tmp_path / "null")
    elif kind == "loop":
        bad = tmp_path / "loop.md"
        bad.symlink_to(bad)
    else:
        bad = tmp_path / "adir"
        bad.mkdir()
    before = os.lstat(bad)
    code, _, err = cli(capsys, "validate", RUN / "job.yaml", "--convert-to", "sdk",
                       "--output", bad)  # fmt: skip
    after = os.lstat(bad)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    if kind == "device":
        assert code in (0, 1)
    else:
        assert code == 2 and len(err.strip().splitlines()) == 1 and str(bad) in err
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


@pytest.mark.parametrize("kind", ["dir", "fifo"])
def test_output_onto_a_folder_or_pipe_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    bad = tmp_path / "bad"
    if kind == "dir":
        bad.mkdir()
    else:
        os.mkfifo(bad)
    patched = tmp_path / "next.yaml"
    code, _, err = cli(capsys, "diagnose", RUN / "train.log", "--config", RUN / "job.yaml",
                       "-o", bad, "--patched-config", patched)  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert not patched.exists()


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


# ----------------------------------------------------------------------------- jobs to patch
def _job_json(hp: dict[str, object]) -> str:
    base = {"learning_rate": 5e-6, "kl_loss_coef": 0.001, "n_rollouts": 4, "batch_size": 256}
    return json.dumps({"job_name": "j", "training": {"hyper_parameters": {**base, **hp}}})


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
@pytest.mark.parametrize("command", ["validate", "diagnose"])
def test_a_number_past_the_digit_bound_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str, command: str
) -> None:
    job = tmp_path / f"job{suffix}"
    job.write_text(_job_json({"max_length": "@"}).replace('"@"', "9" * 5000))
    col = job.read_text().index("9999") + 1
    patched = tmp_path / "next.yaml"
    if command == "validate":
        code, _, err = cli(capsys, "validate", job)
    else:
        code, _, err = cli(capsys, "diagnose", RUN / "train.log", "--config", job,
                           "--patched-config", patched)  # fmt: skip
    assert code == 2 and err.count("\n") == 1
    assert f"{job}:1:{col}: a number of 5,000 digits; expected a job value" in err
    assert not patched.exists()


@pytest.mark.parametrize("key", ["kl_loss_coef\ud800", "x\udfff"])
def test_a_lone_surrogate_key_is_patched_as_the_escape_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    job = tmp_path / "job.json"
    job.write_text(_job_json({key: 1}))  # json.dumps writes the escape
    patched = tmp_path / "next.json"
    code, _, err = cli(capsys, "diagnose", RUN / "train.log", "--config", job,
                       "--patched-config", patched, "--fail-on", "never")  # fmt: skip
    assert code == 0, err
    hp = json.loads(patched.read_text(encoding="utf-8"))["training"]["hyper_parameters"]
    assert hp[key] == 1 and hp["learning_rate"] != 5e-6


@pytest.mark.parametrize("cut", ["dash", "everywhere"])
def test_a_crlf_job_cut_short_is_patched_or_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: str
) -> None:
    text = (RUN / "job.yaml").read_text().replace("\n", "\r\n")
    ends = [text.index("-", text.index("datasets")) + 1]
    if cut == "everywhere":
        ends = list(range(1, len(text), 7))
    job, patched = tmp_path / "job.yaml", tmp_path / "next.yaml"
    for end in ends:
        job.write_bytes(text[:end].encode())
        code, _, err = cli(capsys, "diagnose", RUN / "train.log", "--config", job,
                           "--patched-config", patched, "--fail-on", "never")  # fmt: skip
        assert code in (0, 2), (end, err)
        assert code == 0 or (err.count("\n") == 1 and str(job) in err and not patched.exists())
        if cut == "dash":
            assert code == 0 and patched.read_text().startswith("# synthetic job")
        patched.unlink(missing_ok=True)


@pytest.mark.parametrize("kind", ["fifo", "zero", "urandom", "dir", "binary", "log"])
def test_a_job_that_is_no_readable_file_is_refused_by_name_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    job = tmp_path / "job.yaml"
    if kind == "fifo":
        os.mkfifo(job)
    elif kind in ("zero", "urandom"):
        job.symlink_to(f"/dev/{kind}")
    elif kind == "dir":
        job.mkdir()
    elif kind == "binary":
        job.write_bytes(bytes(range(256)) * 8)
    else:
        job.write_bytes((RUN / "train.log").read_bytes())
    patched = tmp_path / "out" / "next.yaml"
    start = time.monotonic()
    for argv in (["validate", job], ["diagnose", RUN / "train.log", "--config", job,
                                     "--patched-config", patched]):  # fmt: skip
        code, _, err = cli(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and str(job) in err, err
    assert time.monotonic() - start < 10
    assert not patched.parent.exists()


@pytest.mark.parametrize("depth", [400, 1000])
@pytest.mark.parametrize("before", [0, 99, 150])
@pytest.mark.parametrize("objects", [True, False])
def test_jsonl_records_nested_hundreds_deep_are_refused_in_a_second(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int, before: int, objects: bool
) -> None:
    deep = '{"a":' * depth + "1" + "}" * depth if objects else "[" * depth + "]" * depth
    rows = [json.dumps({"step": s, "reward": 0.1}) for s in range(1, before + 1)]
    rows.append(f'{{"step": {before + 1}, "reward": 0.1, "x": {deep}}}')
    rows += [json.dumps({"step": s, "reward": 0.1}) for s in range(before + 2, before + 20)]
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(rows) + "\n")
    start = time.monotonic()
    code, _, err = cli(capsys, "diagnose", p)
    assert time.monotonic() - start < 5
    assert code == 2 and err.count("\n") == 1
    assert f"{p}: JSON nested {depth + 1} levels deep" in err


# ----------------------------------------------------------------------------- overflow
def test_values_whose_squares_overflow_are_judged_without_a_warning(tmp_path: Path) -> None:
    import warnings

    import numpy as np

    src = CORPUS / "healthy-noisy-verl-jsonl-s0011" / "metrics.jsonl"
    rows = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    t = np.arange(len(rows))
    for r, wave in zip(rows, np.sin(2 * np.pi * t / 40), strict=True):
        data = r["data"]
        for k, v in data.items():
            data[k] = (v + wave) * 1e300  # an oscillation (swing's fit) in huge values
    p = tmp_path / "metrics.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        d = diagnose(p)
    assert d.run.last_step == rows[-1]["step"] and d.run.metrics


def test_a_power_of_two_scale_is_exact() -> None:
    import numpy as np

    from advisor.detectors import _pow2_scale

    x = np.array([3.0e300, -1.5e299, 7.0])
    c = _pow2_scale(x)
    assert c < 1 and np.all((x * c) / c == x) and float(np.max(np.abs(x * c))) < 1
    assert _pow2_scale(np.array([1e150, -2.0])) == 1.0
    assert _pow2_scale(np.array([np.inf, 1e300])) == 1.0 and _pow2_scale(np.array([])) == 1.0
