"""Alerts from where findings are made: the library hook and the TRL callback replaying real
corpus runs, and `rl-advisor watch --alert ...` through its real entry point on a log that
grows while it runs; settings from flags, an alerts file or rl-advisor.toml."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from advisor.api import diagnose
from advisor.ingest import load_run
from advisor.integrations.hook import make_hook
from advisor.types import InputError, Severity

from .conftest import CORPUS, Endpoint, rows

SECRET = "XOXB-0000-s3cr3t-hook"
RL_ADVISOR = Path(sys.executable).parent / "rl-advisor"


def _run(name: str) -> Path:
    path = CORPUS / name
    if not (path / "job.yaml").exists():
        pytest.skip(f"{name} is not in the corpus")
    return path


def _replay(path: Path, alerts: Any) -> Any:
    run = load_run(path)
    hook = make_hook(path / "job.yaml", alerts=alerts)
    hook.advisor.add_hints(run.config_hints)
    for step, metrics in rows(run):
        hook(step, metrics)
    hook.close(run.ending)
    return hook


def test_the_hook_says_each_finding_once_and_its_recovery(endpoint: Endpoint) -> None:
    path = _run("kl0-flat-verl-jsonl-s0002")  # not-converging clears at 159, then returns
    hook = _replay(path, {"channels": [{"kind": "webhook", "url": endpoint.url}], "backoff": 0})
    said = [(b["event"], b["id"], b["onset_step"]) for b in endpoint.wait(4)]
    found = hook.advisor.findings
    fired = [("fired", f.id, f.onset_step) for f in found if f.severity.rank >= 1]
    fired += [("fired", f.id, f.onset_step) for f in found if f.recovered_from is not None]
    cleared = [("recovered", f.id, f.onset_step) for f in found if f.cleared_step is not None]
    assert cleared, "the run has an episode that ends"
    assert sorted(said) == sorted(set(fired + cleared))
    assert said.index(cleared[0]) < max(i for i, s in enumerate(said) if s[0] == "fired")
    for body in endpoint.bodies():
        f = next(x for x in found if (x.id, x.onset_step) == (body["id"], body["onset_step"]))
        if body["event"] == "recovered":
            assert f"cleared at step {f.cleared_step}" in body["text"]
            continue
        # the evidence as it stood when the finding fired (it grows as the run goes on)
        assert body["evidence"] == [e["summary"] for e in body["finding"]["evidence"]] != []
        assert [e["metric"] for e in body["finding"]["evidence"]] == [e.metric for e in f.evidence]
        assert f"Onset: step {f.onset_step}" in body["text"]
        assert f.action is not None and body["advice"]
        for change in f.action.changes:  # the platform's dialect: --set name=value
            assert f"--set {change.param}=" in body["override"]
    assert hook.alerts.stats.failed == 0 and hook.errors == 0


def test_a_failing_receiver_never_slows_the_hook(endpoint: Endpoint) -> None:
    path = _run("kl0-flat-verl-jsonl-s0002")
    run = load_run(path)
    data = list(rows(run))
    endpoint.delay = 2.0  # every delivery hangs past its timeout
    alerts = {"channels": [{"kind": "webhook", "url": endpoint.url}], "timeout": 0.5}
    timed: dict[str, list[float]] = {}
    for label, cfg in (("plain", None), ("alerts", alerts)):
        hook = make_hook(path / "job.yaml", alerts=cfg)
        hook.advisor.add_hints(run.config_hints)
        times = timed.setdefault(label, [])
        for step, metrics in data:
            t0 = time.perf_counter()
            hook(step, metrics)
            times.append(time.perf_counter() - t0)
        if hook.alerts is not None:
            assert hook.alerts.stats.sent == 0
            hook.alerts.close(timeout=0.5)
    # the slowest step with a hung receiver is no slower than a network round trip would be
    assert max(timed["alerts"]) < 0.5
    assert sum(timed["alerts"]) < sum(timed["plain"]) * 2 + 0.5


def test_the_trl_callback_delivers_from_process_zero(
    endpoint: Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("transformers")
    from transformers import TrainerControl, TrainerState, TrainingArguments
    from transformers.trainer_callback import CallbackHandler

    from advisor.integrations.transformers import AdvisorCallback

    path = _run("p2-sine-trl-state-s0004")
    run = load_run(path / "trainer_state.json")
    cfg = tmp_path / "alerts.yaml"
    cfg.write_text("channels:\n  - kind: slack\nbackoff: 0\n", encoding="utf-8")
    monkeypatch.setenv("RL_ADVISOR_SLACK_WEBHOOK_URL", f"{endpoint.url}/services/{SECRET}")
    cb = AdvisorCallback(config=path / "job.yaml", alerts=cfg)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to="none")
    data = list(rows(run))
    state, control = TrainerState(max_steps=data[-1][0]), TrainerControl()
    handler = CallbackHandler([cb], None, None, None, None)
    handler.on_train_begin(args, state, control)
    for step, metrics in data:
        state.global_step = step
        handler.on_log(args, state, control, metrics)
    handler.on_train_end(args, state, control)
    texts = [b["text"] for b in endpoint.bodies()]
    alerted = {f.id for f in cb.findings if (f.recovered_from or f.severity).rank >= 1}
    assert alerted and {t.split()[2] for t in texts} == alerted
    assert any("RECOVERED" in t for t in texts) == any(f.cleared_step for f in cb.findings)
    assert all(p.startswith("/services/") for p, _ in endpoint.posts)
    # another process of the world judges too, but says nothing
    quiet = AdvisorCallback(config=path / "job.yaml", alerts=cfg)
    state = TrainerState(max_steps=data[-1][0])
    state.is_world_process_zero = False
    CallbackHandler([quiet], None, None, None, None).on_train_begin(args, state, control)
    assert quiet.hook.alerts is None
    monkeypatch.delenv("RL_ADVISOR_SLACK_WEBHOOK_URL")
    with pytest.raises(InputError, match="RL_ADVISOR_SLACK_WEBHOOK_URL"):  # said before training
        AdvisorCallback(config=path / "job.yaml", alerts=cfg)


# ----------------------------------------------------------------------------- the CLI
def _console_run(prefix: str) -> Path:
    runs = sorted(p for p in CORPUS.glob(f"{prefix}*-verl-console-*") if (p / "job.yaml").exists())
    if not runs:
        pytest.skip(f"no {prefix} verl-console run in the corpus")
    return runs[0]


def _grow(dest: Path, lines: list[str], tail: str) -> threading.Thread:
    def write() -> None:
        with dest.open("a", encoding="utf-8") as fh:
            for i, line in enumerate(lines):
                fh.write(line + "\n")
                fh.flush()
                if i % 40 == 0:
                    time.sleep(0.01)
            fh.write(tail)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RL_ADVISOR), *args], cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **env},
    )  # fmt: skip


def test_watch_alert_webhook_on_a_growing_log(endpoint: Endpoint, tmp_path: Path) -> None:
    src = _console_run("p3")
    log, report = tmp_path / "train.log", tmp_path / "report.md"
    endpoint.script = [500]  # the first delivery fails once, then goes through
    writer = _grow(log, (src / "train.log").read_text(encoding="utf-8").splitlines(),
                   "Job 'raysubmit_1' succeeded\n")  # fmt: skip
    done = _cli(
        ["watch", str(log), "--config", str(src / "job.yaml"), "--poll", "0.05", "--idle", "20",
         "--alert", "webhook", "--webhook-url", f"{endpoint.url}/hook/{SECRET}",
         "--output", str(report), "--fail-on", "never"],
        tmp_path,
    )  # fmt: skip
    writer.join(5)
    assert done.returncode == 0, done.stderr
    bodies = endpoint.bodies()
    printed = {line.split()[1] for line in done.stderr.splitlines()
               if line.split()[:1] in (["WARNING"], ["ERROR"])}  # fmt: skip
    assert printed and sorted({b["id"] for b in bodies if b["event"] == "fired"}) == sorted(printed)
    assert len(bodies) == len({(b["id"], b["event"], b["onset_step"]) for b in bodies})
    assert all(b["run"] == str(log) for b in bodies)
    # the change as diagnose's patch says it, for the finding the patch follows
    batch = diagnose(src / "train.log", src / "job.yaml")
    assert batch.patch is not None and batch.patch.override_args
    top = [b for b in bodies if b["id"] == batch.patch.from_finding and b["event"] == "fired"]
    assert top and top[0]["override"] == batch.patch.override_args
    assert "failed (attempt 1): OSError: HTTP 500; retrying" in done.stderr
    for text in (done.stdout, done.stderr, report.read_text(encoding="utf-8")):
        assert SECRET not in text and endpoint.url not in text


def test_watch_alerts_from_a_file_with_the_secret_in_the_environment(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    src = _run("kl0-flat-verl-jsonl-s0002")  # two findings, one of them recovers
    log = tmp_path / "metrics.jsonl"
    log.write_text((src / "metrics.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "body.j2").write_text('{"msg": {{ title | tojson }}}', encoding="utf-8")
    (tmp_path / "alerts.toml").write_text(
        '[alerts]\ncap = 1\nbackoff = 0\n[[alerts.channels]]\nkind = "webhook"\n'
        'url_env = "MY_HOOK"\ntemplate = "body.j2"\n',
        encoding="utf-8",
    )
    args = ["watch", str(log), "--config", str(src / "job.yaml"), "--poll", "0.05",
            "--idle", "0.5", "--fail-on", "never"]  # fmt: skip
    done = _cli([*args, "--alerts", "alerts.toml"], tmp_path, MY_HOOK=f"{endpoint.url}/{SECRET}")
    assert done.returncode == 0, done.stderr
    [body] = endpoint.bodies()
    assert list(body) == ["msg"] and body["msg"].startswith("rl-advisor: ")
    assert "alert cap reached (1 this run)" in done.stderr
    # the same table in rl-advisor.toml of the working directory, no flag
    (tmp_path / "alerts.toml").rename(tmp_path / "rl-advisor.toml")
    done = _cli(args, tmp_path, MY_HOOK=f"{endpoint.url}/{SECRET}")
    assert done.returncode == 0 and len(endpoint.bodies()) == 2
    assert SECRET not in done.stdout + done.stderr
    # or pyproject.toml's [tool.rl-advisor.alerts], found from a folder below it
    text = (tmp_path / "rl-advisor.toml").read_text(encoding="utf-8")
    (tmp_path / "rl-advisor.toml").unlink()
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n" + text.replace("[alerts", "[tool.rl-advisor.alerts"),
        encoding="utf-8",
    )
    (tmp_path / "sub").mkdir()
    done = _cli(args, tmp_path / "sub", MY_HOOK=f"{endpoint.url}/{SECRET}")
    assert done.returncode == 0 and len(endpoint.bodies()) == 3
    # a pyproject.toml without the table: no alerts
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    done = _cli(args, tmp_path / "sub", MY_HOOK=f"{endpoint.url}/{SECRET}")
    assert done.returncode == 0 and len(endpoint.bodies()) == 3


@pytest.mark.parametrize(
    ("args", "files", "env", "said"),
    [
        (["--alert", "slack"], {}, {}, "--alert slack: no webhook URL; expected --webhook-url URL "
         "or the environment variable RL_ADVISOR_SLACK_WEBHOOK_URL"),
        (["--alert", "pager"], {}, {}, "--alert pager: unknown; expected one of slack, discord, "
         "webhook, email"),
        (["--webhook-url", f"https://{SECRET}"], {}, {}, "--webhook-url: expected --alert KIND "
         "with it"),
        (["--alert", "webhook", "--webhook-url", f"gopher://{SECRET}"], {}, {},
         "--alert webhook: the webhook URL is not an http(s) URL (not shown: it is a secret)"),
        (["--alert", "email"], {}, {"RL_ADVISOR_SMTP_HOST": "127.0.0.1"},
         "--alert email: no recipient; expected --email-to ADDRESS"),
        (["--alerts", "a.yaml"], {"a.yaml": "channels:\n  - kind: slack\n    urlenv: X\n"}, {},
         "a.yaml: alerts: channels.0.urlenv: Extra inputs are not permitted"),
        (["--alerts", "a.yaml"], {"a.yaml": "channels: []\n"}, {},
         "a.yaml: alerts: channels: List should have at least 1 item"),
        (["--alerts", "a.toml"], {"a.toml": "cap = [\n"}, {}, "a.toml: not valid toml"),
    ],
)  # fmt: skip
def test_bad_alert_settings_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], files: dict[str, str], env: dict[str, str], said: str
) -> None:
    src = _console_run("p3")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    done = _cli(["watch", str(src / "train.log"), "--idle", "0.1", *args], tmp_path, **env)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert said in line and SECRET not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)  # nothing left behind


def test_severity_of_a_recovered_message_is_the_one_it_had() -> None:
    from advisor.alerts import Message
    from advisor.types import Finding

    f = Finding(id="P2", name="x", severity=Severity.info, recovered_from=Severity.error,
                onset_step=3, cleared_step=9)  # fmt: skip
    msg = Message(f, "recovered")
    assert msg.severity == "error" and msg.title == "rl-advisor: RECOVERED P2 x"
    assert msg.lines() == [
        "x (error) from step 3 cleared at step 9: the symptom went away; no change to make for it."
    ]


def test_verl_hook_takes_its_alerts_file_from_the_environment(
    endpoint: Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    from advisor.integrations import verl

    cfg = {"trainer": {"default_local_dir": str(tmp_path / "ckpt"), "total_training_steps": 50}}
    good = tmp_path / "alerts.yaml"
    good.write_text("alerts:\n  channels:\n    - kind: webhook\n", encoding="utf-8")
    monkeypatch.setenv("RL_ADVISOR_WEBHOOK_URL", endpoint.url)
    monkeypatch.setenv(verl.ENV_ALERTS, str(good))
    hook = verl.make_hook(cfg)
    assert hook.alerts is not None and hook.alerts.run == "verl"
    assert [c.kind for c in hook.alerts.channels] == ["webhook"]
    # a bad file inside the actor: said once, the run goes on without alerts
    good.write_text("alerts:\n  channels:\n    - kind: webhook\n      colour: red\n", "utf-8")
    hook = verl.make_hook(cfg)
    assert hook.alerts is None and hook.errors == 1
    assert "alerts failed: InputError" in caplog.text and "colour" in caplog.text
