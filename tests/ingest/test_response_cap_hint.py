"""Without a config, the response cap is the longest response of the steps that cut some."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.api import diagnose
from advisor.config import load_config
from advisor.ingest import load_run

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "real_runs" / "labelled"


def _history(tmp_path: Path, rows: list[tuple[float, float]]) -> Path:
    """TRL's log_history: (clipped_ratio, the longest completion) per step."""
    history = [
        {
            "step": i + 1,
            "reward": 0.1,
            "completions/clipped_ratio": clipped,
            "completions/max_length": longest,
        }
        for i, (clipped, longest) in enumerate(rows)
    ]
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history, "global_step": len(rows)}))
    return path


def test_cut_steps_show_the_cap(tmp_path: Path) -> None:
    rows = [(0.0, 300.0), (0.1, 512.0), (0.0, 400.0), (0.2, 512.0), (0.05, 512.0)]
    assert load_run(_history(tmp_path, rows)).config_hints["max_response_length"] == 512


def test_no_cut_no_cap(tmp_path: Path) -> None:
    rows = [(0.0, 300.0), (0.0, 512.0), (0.0, 400.0), (0.0, 380.0)]
    assert "max_response_length" not in load_run(_history(tmp_path, rows)).config_hints


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(1, 4096, allow_nan=False), min_size=3, max_size=12, unique=True))
def test_a_longest_response_that_varies_is_no_cap(longest: list[float]) -> None:
    """Cut steps whose longest responses all differ say nothing about one cap."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        run = load_run(_history(Path(tmp), [(0.3, x) for x in longest]))
    assert "max_response_length" not in run.config_hints


def test_max_length_is_prompt_budget_plus_the_cap() -> None:
    hints = {"max_response_length": 512}
    assert load_config(None, hints=hints).hyper_parameters["max_length"] == 1024 + 512
    both = {"max_response_length": 512, "max_prompt_length": 256}
    assert load_config(None, hints=both).hyper_parameters["max_length"] == 768


def test_a_job_file_wins_over_the_cap(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("max_length: 4096\nmax_prompt_length: 512\n")
    loaded = load_config(job, hints={"max_response_length": 512})
    assert loaded.hyper_parameters["max_length"] == 4096
    assert not [f for f in loaded.findings if f.id == "C006"]  # no clash with a composed value


@pytest.mark.skipif(not REAL.is_dir(), reason="needs ../shared/real_runs")
def test_truncated_trl_run_patches_from_its_own_cap() -> None:
    """The public TRL run cuts its completions at 512 tokens: the patch starts there, not at
    the platform's default 8192."""
    d = diagnose(REAL / "trl-grpo-lifelong-qwen7b-truncation-plateau")
    assert d.patch is not None
    (change,) = [c for c in d.patch.changes if c.param == "max_length"]
    assert (change.from_, change.to) == (1024 + 512, 1024 + 512 + 2048)
    assert any("response cap the log shows, 512" in a for a in d.assumptions)


FIX = Path(__file__).parent / "fixtures"


def test_one_step_that_cut_some_shows_the_cap() -> None:
    """verl, one step, a fifth of the responses cut: the longest is the cap."""
    assert load_run(FIX / "verl_one_step_cut.log").config_hints["max_response_length"] == 128


def test_one_swift_step_cut_whole_shows_the_cap() -> None:
    run = load_run(FIX / "swift_one_step_cut.txt")
    assert run.format == "swift-console"
    assert run.config_hints["max_response_length"] == 2048


def test_two_cut_steps_that_disagree_show_no_cap(tmp_path: Path) -> None:
    run = load_run(_history(tmp_path, [(0.1, 500.0), (0.2, 512.0)]))
    assert "max_response_length" not in run.config_hints


def test_the_patch_starts_from_the_cap_of_one_step() -> None:
    d = diagnose(FIX / "swift_one_step_cut.txt")
    assert d.patch is not None
    (change,) = [c for c in d.patch.changes if c.param == "max_length"]
    assert not change.assumed
    assert change.from_ == 1024 + 2048
    assert any("response cap the log shows, 2048" in a for a in d.assumptions)
