"""Runs fed step by step end with the findings `diagnose` gives on the whole file, found early."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from advisor.api import diagnose
from advisor.ingest import load_run
from advisor.integrations.follow import Sidecar
from advisor.online import Advisor

from .conftest import corpus_runs, ids, one_per_symptom, replay

pytestmark = pytest.mark.usefixtures("corpus_available")


def _check_same(path: Path) -> None:
    run = load_run(path)
    batch = diagnose(path, path / "job.yaml")
    adv, alerted = replay(run, path / "job.yaml")
    assert ids(adv.findings) == ids(batch.findings), path.name
    # every firing, with its onset (a symptom that cleared and came back fires twice in both)
    assert sorted((f.id, f.onset_step) for f in adv.findings) == sorted(
        (f.id, f.onset_step) for f in batch.findings
    )
    assert adv.status == batch.status
    assert adv.warmup_steps == batch.warmup_steps
    steps = run.frame["step"].to_list()
    for f in batch.findings:
        step = alerted[(f.id, f.onset_step)]
        if f.detected_step is None or step is None:
            continue  # judged at the end of the run (an ending), in both
        # alerted as soon as the engine can know: at the first step after the one the batch
        # judgement became conclusive at (a block closes when the next step arrives)
        later = [s for s in steps if s > f.detected_step]
        assert step <= (later[0] if later else f.detected_step), (path.name, f.id)


@pytest.mark.parametrize("path", one_per_symptom(), ids=lambda p: p.name)
def test_same_findings_and_onsets_as_diagnose(path: Path) -> None:
    _check_same(path)


@pytest.mark.slow
@pytest.mark.parametrize("path", corpus_runs(), ids=lambda p: p.name)
def test_whole_corpus_same_as_diagnose(path: Path) -> None:
    _check_same(path)


def _log_of(path: Path) -> Path | None:
    for name in ("train.log", "metrics.jsonl"):
        if (path / name).exists():
            return path / name
    return None


def _log_runs(per_format: int = 3) -> list[Path]:
    """A few runs of each followable format (verl console log, verl file logger JSONL)."""
    out: list[Path] = []
    for fmt in ("verl-console", "verl-jsonl"):
        runs = [p for p in one_per_symptom() + corpus_runs() if fmt in p.name and _log_of(p)]
        out += list(dict.fromkeys(runs))[:per_format]
    return out


@pytest.mark.parametrize("path", _log_runs(), ids=lambda p: p.name)
def test_the_sidecar_judges_a_log_as_the_reader(path: Path) -> None:
    _check_sidecar(path)


@pytest.mark.slow
@pytest.mark.parametrize("path", _log_runs(per_format=1000), ids=lambda p: p.name)
def test_the_sidecar_on_every_corpus_log(path: Path) -> None:
    _check_sidecar(path)


def _check_sidecar(path: Path) -> None:
    """watch's line parsing (the reader's state machine, line by line) and hints from the
    printed config give what load_run + diagnose give on the whole file."""
    log = _log_of(path)
    assert log is not None
    batch = diagnose(log, path / "job.yaml")
    adv = Advisor.from_config(path / "job.yaml", source=str(log))  # as watch builds it
    sidecar = Sidecar(log, adv, idle=0.0, poll=0.01)
    assert sidecar.run() in {"idle", "ending"}  # a finished file: read at once, then quiet
    assert ids(adv.findings) == ids(batch.findings), path.name
    assert sorted((f.id, f.onset_step) for f in adv.findings) == sorted(
        (f.id, f.onset_step) for f in batch.findings
    )
    assert batch.run is not None
    info = adv.run_info()
    assert (info.format, info.steps, info.last_step) == (
        batch.run.format,
        batch.run.steps,
        batch.run.last_step,
    )
    assert (adv.ending.kind if adv.ending else None) == (
        batch.run.ending.kind if batch.run.ending else None
    )


def test_each_symptom_fires_once_until_it_clears() -> None:
    """Over every replay: an id fires again only after its previous firing cleared."""
    for path in one_per_symptom():
        run = load_run(path)
        adv, _ = replay(run, path / "job.yaml")
        by_id: dict[str, list] = {}
        for f in adv.findings:
            by_id.setdefault(f.id, []).append(f)
        for fid, fs in by_id.items():
            for earlier, later in itertools.pairwise(fs):
                assert earlier.cleared_step is not None, (path.name, fid)
                assert earlier.cleared_step <= (later.onset_step or later.detected_step or 0)


def test_a_long_run_reports_as_diagnose_from_the_thinned_history(tmp_path: Path) -> None:
    """1,600 steps (the plot history thins past 1,024 points): the JSON report, checkpoint
    advice and all, is still the one diagnose writes from the whole file."""
    import json
    import math
    import random
    import re

    rnd = random.Random(3)
    log = tmp_path / "metrics.jsonl"
    with log.open("w", encoding="utf-8") as fh:
        for s in range(1, 1601):
            d = {
                "critic/rewards/mean": 0.2 + 0.5 * (1 - math.exp(-s / 400)) + rnd.gauss(0, 0.03),
                "actor/entropy": 0.6 + rnd.gauss(0, 0.01),
                "actor/grad_norm": 0.5 + rnd.gauss(0, 0.05),
                "actor/ppo_kl": 0.002 + abs(rnd.gauss(0, 0.0005)),
                "actor/kl_loss": 0.01 + rnd.gauss(0, 0.001),
                "response_length/clip_ratio": 0.3 if 1000 < s < 1300 else 0.01,
            }
            if s % 25 == 0:
                d["val-core/gsm8k/reward/mean@1"] = 0.3 + 0.4 * math.sin(s / 450)
            fh.write(json.dumps({"step": s, "data": d}) + "\n")
    template = next(p for p in corpus_runs() if (p / "job.yaml").exists()) / "job.yaml"
    job = tmp_path / "job.yaml"
    text = template.read_text(encoding="utf-8")
    job.write_text(re.sub(r"eval_steps: \d+", "eval_steps: 25", text), encoding="utf-8")
    batch = json.loads(diagnose(log, job).to_json())
    adv = Advisor.from_config(job, source=str(log))
    Sidecar(log, adv, idle=0.0, poll=0.01).run()
    assert max(len(s.steps) for s in adv._series.values()) < 1024  # it did thin
    assert json.loads(adv.diagnosis().to_json()) == batch
    assert batch["findings"] and batch["checkpoint"]["best_step"] == 700


@pytest.mark.parametrize("path", one_per_symptom()[:3], ids=lambda p: p.name)
def test_the_judgement_is_the_engines_typed_one(path: Path) -> None:
    """The report is built from the engine's own Judgement, as judge_run gives it to diagnose."""
    from advisor.engine import Judgement

    batch = diagnose(path, path / "job.yaml")
    adv, _ = replay(load_run(path), path / "job.yaml")
    j = adv.judgement()
    assert isinstance(j, Judgement)
    assert (j.status, j.warmup_steps) == (batch.status, batch.warmup_steps)
    assert [(f.id, f.onset_step) for f in j.findings] == [
        (f.id, f.onset_step) for f in adv.findings
    ]


def test_before_the_first_step_the_judgement_is_of_no_steps() -> None:
    adv = Advisor(hyper_parameters={"eval_steps": 10})
    j = adv.judgement()
    assert j.status == "insufficient_data" and j.findings == [] and j.warmup_steps == 30
    assert adv.diagnosis().status == "insufficient_data"
    adv.observe(1, {"critic/rewards/mean": 0.4})  # the throwaway judgement started nothing
    assert adv.steps == 1
