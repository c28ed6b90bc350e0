"""`diagnose --job` and `watch --job` end to end: the real SDK, in the tool's own process started
through its entry point, against the loopback server. Judged with the job's own settings, the
findings are those of the same log and settings given as files; every platform error is one
line and the right exit code; the key is never shown; nothing is left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from platformkit import BIN, CORPUS, DUMMY_KEY, advisor_cli, job, requests_made
from ruamel.yaml import YAML

pytest.importorskip("dashscope")

STALL = "p1-stall-verl-console-s0001"  # P1, learning_rate 5e-06 -> 7e-06 with its job
HEALTHY = "healthy-gspo-clip-verl-console-s0006"


def _job_of(name: str, job_id: str, status: str = "SUCCEEDED") -> dict[str, Any]:
    """The platform's job object for a corpus run: its model and hyper_parameters, the values
    as strings where the platform writes them so (learning_rate "5e-06")."""
    doc = YAML(typ="safe").load((CORPUS / name / "job.yaml").read_text(encoding="utf-8"))
    hp = dict(doc["training"]["hyper_parameters"])
    hp["learning_rate"] = str(hp["learning_rate"])
    out = job(job_id, status, **hp)
    out["model"] = out["base_model"] = doc["model"]
    return out


def _spec(name: str, job_id: str, status: str = "SUCCEEDED", **more: Any) -> dict[str, Any]:
    return {
        "job": _job_of(name, job_id, status),
        "log_file": str(CORPUS / name / "train.log"),
        **more,
    }


def _findings(out: str) -> list[tuple[Any, ...]]:
    d = json.loads(out)
    return [(f["id"], f["severity"], f["onset_step"]) for f in d["findings"]]


@pytest.fixture
def tmpdir_env(tmp_path: Path) -> Path:
    """A TMPDIR of the test's own: whatever the tool leaves there is seen."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return tmp


def _env(env: dict[str, str], tmp: Path) -> dict[str, str]:
    return {**env, "TMPDIR": str(tmp)}


def test_diagnose_job_judges_with_the_jobs_own_settings(platform_server, tmp_path, tmpdir_env):
    env = _env(platform_server({"ft-stall": _spec(STALL, "ft-stall")}), tmpdir_env)
    out = advisor_cli(env, "diagnose", "--job", "ft-stall", "--format", "json")
    files = advisor_cli(
        env, "diagnose", str(CORPUS / STALL / "train.log"), "--config",
        str(CORPUS / STALL / "job.yaml"), "--format", "json",
    )  # fmt: skip
    assert out.returncode == files.returncode == 1, out.stderr
    assert _findings(out.stdout) == _findings(files.stdout) and _findings(out.stdout)
    got, want = json.loads(out.stdout), json.loads(files.stdout)
    assert got["patch"]["changes"] == want["patch"]["changes"]
    assert got["patch"]["changes"][0]["param"] == "learning_rate"
    assert got["run"]["source"] == "job ft-stall"
    assert str(tmpdir_env) not in out.stdout and list(tmpdir_env.iterdir()) == []
    asked = requests_made(tmp_path)
    assert [r["path"] for r in asked] == [
        "/api/v1/fine-tunes/ft-stall",
        "/api/v1/fine-tunes/ft-stall/logs",
    ]
    assert asked[1]["query"] == {"offset": "1", "line": "1000"} and all(r["auth"] for r in asked)


def test_the_log_is_read_page_by_page(platform_server, tmp_path):
    env = platform_server({"ft-stall": _spec(STALL, "ft-stall")})
    script = (
        "import json, advisor.platform as p\n"
        "p.PAGE = 100\n"
        "print(json.dumps(p.Platform().log_lines('ft-stall')))\n"
    )
    got = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    lines = (CORPUS / STALL / "train.log").read_text(encoding="utf-8").splitlines()
    assert json.loads(got.stdout) == lines
    offsets = [r["query"]["offset"] for r in requests_made(tmp_path) if r["path"].endswith("logs")]
    assert offsets == [str(n + 1) for n in range(0, len(lines), 100)]


def test_the_key_is_never_shown(platform_server, tmp_path, tmpdir_env):
    echo = [401, "InvalidApiKey", f"Invalid API-key provided: {DUMMY_KEY}"]
    env = _env(
        platform_server({"ft-stall": _spec(STALL, "ft-stall"), "ft-key": {"error": echo}}),
        tmpdir_env,
    )
    report = tmp_path / "out" / "report.md"
    report.parent.mkdir()
    ok = advisor_cli(env, "diagnose", "--job", "ft-stall", "--output", str(report))
    bad = advisor_cli(env, "diagnose", "--job", "ft-key")
    assert ok.returncode == 1 and bad.returncode == 2
    assert "refused the key in DASHSCOPE_API_KEY" in bad.stderr and "***" in bad.stderr
    shown = ok.stdout + ok.stderr + bad.stdout + bad.stderr
    shown += "".join(p.read_text(encoding="utf-8") for p in report.parent.iterdir())
    assert DUMMY_KEY not in shown


@pytest.mark.parametrize(
    ("spec", "says", "args"),
    [
        ({"error": [401, "InvalidApiKey", "Invalid API-key provided."]}, "refused the key", ()),
        ({"error": [403, "AccessDenied", "Access denied."]}, "refused the key", ()),
        (None, "no such job on the platform (HTTP 404", ()),
        (
            {"error": [429, "Throttling", "Requests rate limit exceeded"], "retry_after": 0},
            "throttled the job (HTTP 429 Throttling",
            (),
        ),
        (
            {"error": [500, "InternalError", "Internal error"], "retry_after": 0},
            "failed the job (HTTP 500",
            (),
        ),
        ({"delay": 2.0}, "did not answer the job within 0.3 s (3 tries)", ("--timeout", "0.3")),
        ({"html": True}, "the platform's answer for the job is not JSON", ()),
    ],
    ids=["401", "403", "404", "429", "500", "timeout", "html"],
)
@pytest.mark.parametrize("command", ["diagnose", "watch"])
def test_platform_errors_are_one_line_exit_2(
    platform_server, tmp_path, tmpdir_env, spec, says, args, command
):
    jobs = {} if spec is None else {"ft-x": spec}
    env = _env(platform_server(jobs), tmpdir_env)
    out = advisor_cli(env, command, "--job", "ft-x", *args, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    line = out.stderr.strip()
    assert "\n" not in line and line.startswith("rl-advisor: error: job ft-x: ") and says in line
    assert list(tmpdir_env.iterdir()) == []
    tries = len(requests_made(tmp_path))
    assert tries == (3 if spec and ("retry_after" in spec or "delay" in spec) else 1)


def test_a_passing_failure_is_tried_again(platform_server, tmp_path):
    spec = _spec(STALL, "ft-stall", fail_first=[503, 2], retry_after=0)
    env = platform_server({"ft-stall": spec})
    out = advisor_cli(env, "diagnose", "--job", "ft-stall", "--format", "json")
    assert out.returncode == 1 and out.stderr == "" and _findings(out.stdout)


def test_unreachable_platform_no_key_no_sdk(platform_server, tmp_path):
    env = platform_server({})
    unreachable = {**env, "DASHSCOPE_HTTP_BASE_URL": "http://127.0.0.1:9/api/v1"}
    out = advisor_cli(unreachable, "diagnose", "--job", "ft-x")
    assert out.returncode == 2 and "cannot reach http://127.0.0.1:9/api/v1" in out.stderr
    out = advisor_cli({**env, "DASHSCOPE_API_KEY": ""}, "diagnose", "--job", "ft-x")
    assert out.returncode == 2 and "DASHSCOPE_API_KEY is not set" in out.stderr
    # without the extra: a `dashscope` that cannot be imported (what an absent package raises)
    shadow = tmp_path / "shadow" / "dashscope"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'dashscope'\")\n")
    out = advisor_cli({**env, "PYTHONPATH": str(shadow.parent)}, "watch", "--job", "ft-x")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "pip install 'rl-advisor[platform]'" in out.stderr


def test_failed_canceled_and_pending_jobs(platform_server, tmp_path):
    env = platform_server(
        {
            "ft-failed": {
                **_spec(HEALTHY, "ft-failed", "FAILED"),
                "job": {**_job_of(HEALTHY, "ft-failed", "FAILED"), "message": "worker lost"},
            },
            "ft-early": {"job": {**job("ft-early", "FAILED"), "message": "bad dataset"}},
            "ft-canceled": _spec(HEALTHY, "ft-canceled", "CANCELED"),
            "ft-pending": {"job": job("ft-pending", "PENDING")},
        }
    )
    failed = advisor_cli(env, "diagnose", "--job", "ft-failed", "--format", "json")
    assert failed.returncode == 1 and json.loads(failed.stdout)["findings"] == []
    assert failed.stderr == "rl-advisor: job ft-failed FAILED on the platform: worker lost\n"
    never = advisor_cli(env, "diagnose", "--job", "ft-failed", "--fail-on", "never")
    assert never.returncode == 0
    watched = advisor_cli(env, "watch", "--job", "ft-failed", "--format", "json")
    assert watched.returncode == 1 and json.loads(watched.stdout)["findings"] == []
    assert watched.stderr.endswith(
        "rl-advisor: job ft-failed FAILED on the platform: worker lost\n"
    )
    canceled = advisor_cli(env, "diagnose", "--job", "ft-canceled", "--format", "json")
    assert canceled.returncode == 0 and "was CANCELED on the platform" in canceled.stderr
    for job_id, says in (("ft-early", "FAILED before its log held a line (bad dataset)"),
                         ("ft-pending", "PENDING, no training log yet")):  # fmt: skip
        out = advisor_cli(env, "diagnose", "--job", job_id)
        assert out.returncode == 2 and out.stdout == "" and says in out.stderr


def test_calls_that_are_not_one_job(platform_server, tmp_path):
    env = platform_server({"ft-stall": _spec(STALL, "ft-stall")})
    log = str(CORPUS / STALL / "train.log")
    for args in (("diagnose",), ("diagnose", log, "--job", "ft-stall"), ("watch",)):
        out = advisor_cli(env, *args)
        assert out.returncode == 2 and "or --job JOB_ID, one" in out.stderr
    patched = tmp_path / "next.yaml"
    out = advisor_cli(env, "diagnose", "--job", "ft-stall", "--patched-config", str(patched))
    assert out.returncode == 2 and "needs --config" in out.stderr and not patched.exists()
    # with the job's file named, it is what the patch is written from
    out = advisor_cli(
        env, "diagnose", "--job", "ft-stall", "--config", str(CORPUS / STALL / "job.yaml"),
        "--patched-config", str(patched),
    )  # fmt: skip
    assert out.returncode == 1
    doc = YAML(typ="safe").load(patched.read_text(encoding="utf-8"))
    assert doc["training"]["hyper_parameters"]["learning_rate"] == 7e-06


def test_watch_follows_a_running_job_to_its_end(platform_server, tmp_path, tmpdir_env):
    spec = _spec(STALL, "ft-run", "RUNNING", statuses=["PENDING", *["RUNNING"] * 5, "SUCCEEDED"])
    spec["grow"] = 100  # lines visible per look
    env = _env(platform_server({"ft-run": spec, "ft-stall": _spec(STALL, "ft-stall")}), tmpdir_env)
    said = tmp_path / "said.txt"
    cmd = f'echo "$RL_ADVISOR_JOB_ID $RL_ADVISOR_ID $RL_ADVISOR_SEVERITY" >> {said}'
    watched = advisor_cli(
        env, "watch", "--job", "ft-run", "--poll", "0.1", "--format", "json", "--on-finding", cmd
    )
    whole = advisor_cli(env, "diagnose", "--job", "ft-stall", "--format", "json")
    assert watched.returncode == 1, watched.stderr
    assert _findings(watched.stdout) == _findings(whole.stdout)
    assert "ERROR   P1 not-converging from step" in watched.stderr
    assert "stopped watching (the job ended: SUCCEEDED) after 282 steps" in watched.stderr
    assert said.read_text(encoding="utf-8") == "ft-run P1 error\n"
    looks = [r for r in requests_made(tmp_path) if r["path"] == "/api/v1/fine-tunes/ft-run/logs"]
    offsets = [int(r["query"]["offset"]) for r in looks]
    assert offsets == sorted(offsets) and len(set(offsets)) >= 5  # only the new lines asked
    assert list(tmpdir_env.iterdir()) == []


def test_interrupting_leaves_nothing_half_written(platform_server, tmp_path, tmpdir_env):
    env = _env(platform_server({"ft-slow": {**_spec(STALL, "ft-slow"), "delay": 30}}), tmpdir_env)
    report = tmp_path / "report.md"
    proc = subprocess.Popen(
        [str(BIN / "rl-advisor"), "diagnose", "--job", "ft-slow", "--output", str(report)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not requests_made(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)  # until the request is out (the SDK imported, the call waiting)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err
    assert not report.exists() and list(tmpdir_env.iterdir()) == []


def test_watch_interrupted_ends_with_its_report(platform_server, tmp_path, tmpdir_env):
    spec = _spec(STALL, "ft-run", "RUNNING")
    env = _env(platform_server({"ft-run": spec}), tmpdir_env)
    report = tmp_path / "report.json"
    proc = subprocess.Popen(
        [str(BIN / "rl-advisor"), "watch", "--job", "ft-run", "--poll", "0.2", "--format",
         "json", "--output", str(report)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while len(requests_made(tmp_path)) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)  # a few looks at the running job
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err  # P1, from the whole log read at the first look
    assert "stopped watching (interrupted: RUNNING)" in err
    assert json.loads(report.read_text(encoding="utf-8"))["run"]["source"] == "job ft-run"
    assert list(tmpdir_env.iterdir()) == []


REAL_VERL = Path("/work/shared/real_runs/labelled/verl-ppo-gsm8k-dstack/verl_demo.log")
if not REAL_VERL.is_file():
    REAL_VERL = (Path(__file__).resolve().parents[3] / "shared" / "real_runs" / "labelled" /
                 "verl-ppo-gsm8k-dstack" / "verl_demo.log")  # fmt: skip


@pytest.mark.skipif(not REAL_VERL.is_file(), reason="shared/real_runs not available")
def test_a_real_verl_log_over_several_pages(platform_server, tmp_path):
    env = platform_server({"ft-real": {"job": job("ft-real"), "log_file": str(REAL_VERL)}})
    out = advisor_cli(env, "diagnose", "--job", "ft-real", "--format", "json")
    raw = advisor_cli(env, "diagnose", str(REAL_VERL), "--format", "json")
    assert out.returncode == raw.returncode, out.stderr
    assert _findings(out.stdout) == _findings(raw.stdout)
    assert json.loads(out.stdout)["run"]["steps"] == json.loads(raw.stdout)["run"]["steps"]
    pages = [r for r in requests_made(tmp_path) if r["path"].endswith("/logs")]
    assert len(pages) == 3  # 2,919 lines
    assert os.environ.get("DASHSCOPE_API_KEY") != DUMMY_KEY  # the test's key stayed in its env


_SDK_JOB = """
import json, sys
from dashscope.finetune.reinforcement.common import model as sdk
from dashscope.finetune.reinforcement.common import model_types as types
hp = json.loads(sys.argv[2])
runtime = sdk.FunctionComponentRuntime(cpu=2.0, memory_size=4096)
functions = [
    sdk.RolloutFunctionComponent(
        type="rollout", name="rollout-1", timeout=1200, runtime=runtime,
        fcmodel=sdk.FunctionComponentModel(classpath="functions.rollout.cot.CotRollout"),
    ),
    sdk.RewardFunctionComponent(
        type="reward", name="reward-1", timeout=120, weight=1.0, runtime=runtime,
        fcmodel=sdk.FunctionComponentModel(classpath="functions.reward.math.MathReward"),
    ),
]
datasets = [
    sdk.Dataset(type="training", data_source_type="file_id", file_id="file-train-1"),
    sdk.Dataset(type="validation", data_source_type="file_id", file_id="file-val-1"),
]
sdk.TuningModel(
    name="sdk-job", model=sdk.FoundationModel(name="qwen3.5-9b"), functions=functions,
    datasets=datasets,
    training=sdk.Training(
        type=types.TrainingType("reinforcement"), hyper_parameters=hp,
        resources={"charge_type": "mtu_postpaid", "mtu_spec_code": "MTU4", "mtu_capacity": 24},
    ),
).to_yaml(sys.argv[1])
if len(sys.argv) > 3:  # load a patched file back, print its hyper_parameters
    loaded = sdk.TuningModel.load_from_yaml(sys.argv[3])
    print(json.dumps(loaded.training.hyper_parameters))
"""


def test_the_round_the_readme_gives(platform_server, tmp_path):
    """validate the SDK's job file, `diagnose --job -c job.yaml --patched-config`, and the
    patch is a file the SDK loads (what `dashscope rl run -c` reads), its one change a number."""
    doc = YAML(typ="safe").load((CORPUS / STALL / "job.yaml").read_text(encoding="utf-8"))
    hp = doc["training"]["hyper_parameters"]
    sdk_job, patched = tmp_path / "job.yaml", tmp_path / "job.next.yaml"
    made = subprocess.run(
        [sys.executable, "-c", _SDK_JOB, str(sdk_job), json.dumps(hp)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    env = platform_server({"ft-stall": _spec(STALL, "ft-stall")})
    out = advisor_cli(
        env, "diagnose", "--job", "ft-stall", "-c", str(sdk_job), "--patched-config",
        str(patched), "--format", "json",
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    whole = advisor_cli(env, "diagnose", "--job", "ft-stall", "--format", "json")
    assert _findings(out.stdout) == _findings(whole.stdout)
    loaded = subprocess.run(
        [sys.executable, "-c", _SDK_JOB, str(tmp_path / "again.yaml"), json.dumps(hp),
         str(patched)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr
    got = json.loads(loaded.stdout)
    assert got["learning_rate"] == 7e-06 and isinstance(got["learning_rate"], float)
    assert {k: v for k, v in got.items() if k != "learning_rate"} == {
        k: v for k, v in hp.items() if k != "learning_rate"
    }
