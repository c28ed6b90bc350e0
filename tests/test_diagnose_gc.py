"""`rl-advisor diagnose` runs with the cyclic garbage collector off (cli.diagnose): what that
rests on (a diagnosis leaves few reference cycles, whatever the run's length) and that the
caller gets the collector back."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

import advisor.api
from advisor.cli import main, without_cyclic_gc
from advisor.report import render
from sample_metrics.generate import make_run
from sample_metrics.writers import write_run

SAMPLE = (
    Path(__file__).resolve().parents[1]
    / "sample_metrics/corpus/healthy-noisy-verl-jsonl-s0011/metrics.jsonl"
)


@pytest.fixture
def gc_state():
    was_on = gc.isenabled()
    yield
    (gc.enable if was_on else gc.disable)()


def _cycles_left(metrics: Path) -> int:
    """Objects in reference cycles that one diagnosis (report included) leaves behind."""
    gc.collect()
    gc.disable()
    render(advisor.api.diagnose(metrics, metrics.parent / "job.yaml"), "markdown")
    return gc.collect()


@pytest.mark.parametrize(
    "framework,fmt",
    [("verl", "verl-jsonl"), ("verl", "verl-console"), ("trl", "trl-state"), ("verl", "wandb-csv")],
)
def test_a_diagnosis_leaves_few_cycles_whatever_the_run_length(
    framework: str, fmt: str, tmp_path: Path, gc_state
) -> None:
    """The premise of running without the collector: what a diagnosis leaves in cycles (the
    YAML reader of the job file) is a few hundred objects, the same for a run 10x longer."""
    left = {}
    for steps in (300, 3000):
        run = make_run("healthy", 3, n_steps=steps, framework=framework, fmt=fmt, variant="steady")
        metrics = write_run(run, tmp_path / f"{fmt}-{steps}")
        _cycles_left(metrics)  # first imports and caches
        left[steps] = _cycles_left(metrics)
    assert left[3000] == left[300] < 1000


@pytest.mark.parametrize("was_on", [True, False])
def test_the_command_runs_without_the_collector_and_restores_it(
    was_on: bool, gc_state, monkeypatch, capsys
) -> None:
    seen: list[bool] = []
    real = advisor.api.diagnose_job  # what the command calls, once the read started

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(advisor.api, "diagnose_job", spy)
    (gc.enable if was_on else gc.disable)()
    assert main(["diagnose", str(SAMPLE), "--format", "json"]) == 0
    assert capsys.readouterr().out.startswith("{")
    assert seen == [False]
    assert gc.isenabled() is was_on


def test_the_collector_comes_back_after_an_unusable_input(gc_state, tmp_path, capsys) -> None:
    gc.enable()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["diagnose", str(empty)]) == 2
    assert "empty file" in capsys.readouterr().err
    assert gc.isenabled()


def test_what_was_made_meanwhile_is_old_once_the_collector_is_back(gc_state) -> None:
    """Otherwise the first collection after the command scans everything it made (~20 ms)."""
    gc.enable()
    gc.collect()
    with without_cyclic_gc():
        kept = [[i] for i in range(50_000)]
    young = len(gc.get_objects(0)) + len(gc.get_objects(1))
    assert young < 20_000 <= len(gc.get_objects(2))
    assert len(kept) == 50_000


def test_a_fresh_command_makes_no_collection_from_its_imports_to_its_end(tmp_path) -> None:
    """In the command's own process (nothing imported before main): with the collector on
    between the imports and the work, its first collection scans every object the imports
    made (~12 ms of a 2,000-step diagnose)."""
    probe = (
        "import gc, sys\n"
        "from advisor.cli import main\n"
        "seen = []\n"
        "gc.callbacks.append(lambda phase, info: seen.append(info['generation']))\n"
        f"code = main(['diagnose', {str(SAMPLE)!r}, '-o', {str(tmp_path / 'r.md')!r}],"
        " fresh=True)\n"
        "gc.callbacks.clear()\n"
        "print(code, len(seen), gc.isenabled())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out == ["0", "0", "True"]
