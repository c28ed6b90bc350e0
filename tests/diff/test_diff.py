"""`rl-advisor diff`: the parting test against its own noise, and the command on the live-fire
runs (one TRL setting changed from the sane run each) and on corpus runs of two frameworks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from advisor.cli import main
from advisor.diff import parting

ROOT = Path(__file__).parents[2]
RUNS = ROOT / "tests" / "livefire" / "runs"
CORPUS = ROOT / "sample_metrics" / "corpus"


def _ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    e = rng.normal(size=n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


# ----------------------------------------------------------------------------- the test
@pytest.mark.parametrize("phi", [0.0, 0.3, 0.6])
@pytest.mark.parametrize("n", [50, 200, 1000])
def test_two_runs_of_one_curve_do_not_part(phi: float, n: int) -> None:
    """The null: one trend, independent noise correlated from step to step (a smooth metric
    such as entropy is); over 200 pairs, at most 1 in 100 is said to part ways."""
    steps = list(range(1, n + 1))
    trend = np.linspace(0, 3, n) ** 1.5
    parted = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        a, b = trend + 0.2 * _ar1(rng, n, phi), trend + 0.2 * _ar1(rng, n, phi)
        parted += parting("m", (steps, list(a)), (steps, list(b))).step is not None
    assert parted <= 2


# derandomized: a shift at the bottom of the range (4 sigmas, 120 steps) can be found late by
# chance in a rare draw (seed 522, n 120); CI draws the same examples every run
@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(120, 600),
    at=st.floats(0.2, 0.7),
    shift=st.floats(4.0, 8.0),
    up=st.booleans(),
)
def test_a_lasting_shift_is_found_where_it_starts(
    seed: int, n: int, at: float, shift: float, up: bool
) -> None:
    """B leaves A by `shift` step-noise sigmas (0.1) from step `at` x n on, on a learning curve
    rising to its plateau: found within a window before that step and two after, on the side
    it went."""
    rng = np.random.default_rng(seed)
    steps = list(range(n))
    base = 0.6 * (1 - np.exp(-np.arange(n) / (n / 4)))
    a = base + 0.1 * rng.normal(size=n)
    start = int(at * n)
    b = (
        base
        + 0.1 * rng.normal(size=n)
        + np.where(np.arange(n) >= start, shift * 0.1, 0) * (1 if up else -1)
    )
    p = parting("m", (steps, list(a)), (steps, list(b)))
    assert p.step is not None and p.window is not None
    assert start - p.window <= p.step <= start + 2 * p.window
    assert p.higher == ("b" if up else "a")


def test_too_few_common_steps_are_not_judged() -> None:
    p = parting("val_reward", ([0, 20, 40, 60], [0.1, 0.2, 0.3, 0.4]), ([0, 20], [0.9, 0.9]))
    assert p.step is None and "too few" in p.note and p.compared == 2


def test_nan_and_missing_points_are_left_out() -> None:
    n = 200
    steps = list(range(n))
    a = [float("nan") if i % 7 == 0 else 0.5 + 0.01 * (i % 3) for i in steps]
    b = [0.5 + 0.01 * (i % 3) for i in steps]
    p = parting("m", (steps, a), (steps, b))
    assert p.step is None and p.compared == n - len(range(0, n, 7))


# ----------------------------------------------------------------------------- the command
def _diff(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["diff", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("case", "param", "key", "only_b"),
    [
        ("lr-tiny", "learning_rate", "learning_rate", {"P1"}),
        ("beta-huge", "kl_loss_coef", "beta", {"KL0"}),
        ("cap-tiny", "max_length", "max_completion_length", {"P1"}),
    ],
)
def test_one_setting_changed_from_the_sane_run(
    capsys: pytest.CaptureFixture[str], case: str, param: str, key: str, only_b: set[str]
) -> None:
    code, out, err = _diff(capsys, str(RUNS / "sane"), str(RUNS / case), "--format", "json")
    assert code == 1 and err == ""
    r = json.loads(out)
    label = json.loads((RUNS / case / "label.json").read_text())
    delta = [d for d in r["config_delta"] if d["trains"]]
    assert [d["param"] for d in delta] == [param] and delta[0]["b"]["key"] == key  # TRL's name
    assert delta[0]["b"]["value"] == next(iter(label["config"].values()))
    assert r["a"]["framework"] == r["b"]["framework"] == "trl" and r["confounded"] is False
    reward = next(m for m in r["metrics"] if m["metric"] == "reward_mean")
    assert reward["logged_as"] == {"a": "reward", "b": "reward"}  # TRL's name
    assert reward["parted_at"] is not None and reward["higher"] == "a"  # sane learns
    assert only_b <= {f["id"] for f in r["findings"]["only_b"]}
    assert r["findings"]["only_a"] == [] and r["differ"] is True


def test_a_run_against_itself_is_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _diff(capsys, str(RUNS / "lr-tiny"), str(RUNS / "lr-tiny"), "-f", "json")
    r = json.loads(out)
    assert code == 0 and r["config_delta"] == [] and r["differ"] is False
    assert all(m["parted_at"] is None for m in r["metrics"]) and len(r["metrics"]) == 6
    assert r["findings"]["only_a"] == r["findings"]["only_b"] == []
    assert set(r["findings"]["both"]) == {"P1", "KL0"}


def test_two_frameworks_each_in_its_names_and_confounded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    a = CORPUS / "healthy-noisy-verl-console-s0001"
    b = CORPUS / "healthy-slow-gain-trl-state-s0003"
    code, out, _ = _diff(capsys, str(a), str(b), "-f", "json")
    r = json.loads(out)
    assert code == 1 and r["confounded"] is True and r["training_settings_changed"] > 1
    lr_like = {d["param"]: d for d in r["config_delta"]}
    assert lr_like["n_rollouts"]["a"]["key"] == "actor_rollout_ref.rollout.n"  # verl Hydra
    assert lr_like["n_rollouts"]["b"]["key"] == "num_generations"  # TRL
    assert lr_like["eval_steps"]["trains"] is False  # how often it validates: no confound
    logged = {m["metric"]: m["logged_as"] for m in r["metrics"]}
    assert logged["reward_mean"] == {"a": "critic/rewards/mean", "b": "reward"}
    assert "kl_ref" not in logged and "ppo_kl" not in logged  # A logs one KL, B the other
    code, md, _ = _diff(capsys, str(a), str(b))
    assert code == 1 and "Confounded:" in md and "`actor_rollout_ref.rollout.n`" in md


def test_a_config_file_gives_the_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = CORPUS / "healthy-noisy-verl-jsonl-s0011"
    code, out, _ = _diff(
        capsys, str(run), str(run), "--config-a", str(run / "job.yaml"), "-f", "json"
    )
    r = json.loads(out)
    assert code == 0 and r["differ"] is False
    assert all(m["parted_at"] is None for m in r["metrics"])


def test_the_markdown_report_holds_no_markup_from_a_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "<img src=x onerror=alert(1)> *b* [l](x)"
    run.mkdir()
    for name in ("train.log", "trainer_state.json"):
        (run / name).write_bytes((RUNS / "sane" / name).read_bytes())
    code, md, _ = _diff(capsys, str(RUNS / "sane"), str(run))
    assert code == 0
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    kinds = {c.type for t in tokens for c in (t.children or [])} | {t.type for t in tokens}
    assert not kinds & {"html_inline", "html_block", "link_open", "image", "em_open"}
    assert "## Where the curves part ways" in md and "The test:" in md


def test_unusable_input_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "d.md"
    code, stdout, err = _diff(capsys, str(RUNS / "sane"), str(tmp_path / "nope"), "-o", str(out))
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1
    assert "nope" in err and not out.exists()
    same = RUNS / "sane" / "train.log"
    before = same.read_bytes()
    code, _, err = _diff(capsys, str(RUNS / "sane"), str(RUNS / "lr-tiny"), "-o", str(same))
    assert code == 2 and "same file" in err and same.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d.json"
    code, stdout, _ = _diff(
        capsys, str(RUNS / "sane"), str(RUNS / "beta-zero"), "-f", "json", "-o", str(out)
    )
    assert code == 1 and stdout == ""
    r = json.loads(out.read_text())
    assert r["kind"] == "diff" and r["schema_version"] == 1


def test_through_the_installed_command(tmp_path: Path) -> None:
    import subprocess
    import sys

    call = [sys.executable, "-m", "advisor", "diff", str(RUNS / "sane"), str(RUNS / "beta-zero")]
    done = subprocess.run([*call, "-f", "json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stderr == ""
    assert json.loads(done.stdout)["config_delta"][0]["b"]["key"] == "beta"
    missing = [*call[:5], str(RUNS / "sane"), "--config-b", str(tmp_path / "none.yaml")]
    done = subprocess.run(missing, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == "" and "none.yaml" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
