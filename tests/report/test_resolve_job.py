"""A diagnosis resolves its job once (api.resolve_job): the judgement reads the values the log
and the file give, the advice also the hints only it may start from (TRL's beta 0 from a log
without KL); the run as read is never changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor import api
from advisor.api import RUN_FILE, _with_run_file, diagnose, previous_hp, resolve_job
from advisor.config import load_config
from advisor.ingest import load_run

ROOT = Path(__file__).resolve().parents[2]
TRL_NO_KL = ROOT / "tests" / "ingest" / "fixtures" / "trl_console.log"
VERL = ROOT / "tests" / "ingest" / "fixtures" / "verl_file_logger.jsonl"


def test_a_trl_log_without_kl_gives_the_advice_beta_zero_and_the_judgement_not() -> None:
    run = load_run(TRL_NO_KL)
    read_hints = dict(run.config_hints)
    assert "kl_loss_coef" not in read_hints
    job = resolve_job(run)
    assert job.hp["kl_loss_coef"] == 0.0 and job.origin["kl_loss_coef"] == "run"
    assert job.run.config_hints["kl_loss_coef"] == 0.0  # the report shows the hint
    # the judgement sees the job as the log alone gives it, on TRL's own defaults
    alone = load_config(None, hints={"algorithm": "grpo", **read_hints})
    assert job.judged_hp == alone.hyper_parameters
    assert job.judged_origin == {**alone.origin, "algorithm": "default"}
    assert run.config_hints == read_hints  # the run as read is unchanged


def test_a_trl_log_naming_no_algorithm_ran_trl_s_default_grpo() -> None:
    job = resolve_job(load_run(TRL_NO_KL))
    assert job.hp["algorithm"] == "grpo" and job.judged_hp["algorithm"] == "grpo"
    assert job.origin["algorithm"] == "default"  # assumed, said as such
    assert job.framework_assumed == {"algorithm": "grpo"}
    assert "algorithm" not in job.run.config_hints  # not shown as something the log said
    d = diagnose(TRL_NO_KL)
    said = [a for a in d.assumptions if a.startswith("algorithm ")]
    assert said and "TRL GRPOConfig's default 'grpo' was assumed" in said[0]
    assert "algorithm" in d.assumed_parameters
    # a job file or --set still decides
    given = resolve_job(load_run(TRL_NO_KL), None, ["algorithm=gspo"])
    assert given.hp["algorithm"] == "gspo" and given.framework_assumed == {}
    # a verl log keeps the platform's default
    assert resolve_job(load_run(VERL)).framework_assumed == {}


@pytest.mark.parametrize("sets", [["kl_loss_coef=0.01"], []])
def test_a_kl_given_by_set_or_absent_hint_leaves_both_views_alike(sets: list[str]) -> None:
    path = TRL_NO_KL if sets else VERL
    job = resolve_job(load_run(path), None, sets)
    assert job.judged_hp == job.hp and job.judged_origin == job.origin
    if sets:
        assert job.hp["kl_loss_coef"] == 0.01 and job.origin["kl_loss_coef"] == "set"


def test_the_run_file_joins_the_hints_of_a_new_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "out"
    run_dir.mkdir()
    (run_dir / "trainer.log").write_bytes(TRL_NO_KL.read_bytes())
    (run_dir / RUN_FILE).write_text('{"hints": {"save_total_limit": 5}, "framework": "trl"}')
    read = load_run(run_dir / "trainer.log")
    before = dict(read.config_hints)
    joined = _with_run_file(run_dir / "trainer.log", read)
    assert joined.config_hints == {**before, "save_total_limit": 5, "framework": "trl"}
    assert read.config_hints == before
    d = diagnose(run_dir / "trainer.log")
    assert d.run is not None and d.run.config_hints["save_total_limit"] == 5
    assert d.hyper_parameters["save_total_limit"] == 5


def test_a_single_diagnosis_reads_the_previous_job_afresh(tmp_path: Path) -> None:
    prev = tmp_path / "prev.yaml"
    prev.write_text("training:\n  hyper_parameters:\n    learning_rate: 1.0e-06\n")
    assert previous_hp(prev)["learning_rate"] == 1e-6  # type: ignore[index]
    prev.write_text("training:\n  hyper_parameters:\n    learning_rate: 3.0e-06\n")
    assert previous_hp(prev)["learning_rate"] == 3e-6  # type: ignore[index]
    assert previous_hp(None) is None


def test_a_batch_loads_its_job_once_per_set_of_hints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = ROOT / "sample_metrics" / "corpus"
    runs = sorted(corpus.glob("*-verl-jsonl-*/metrics.jsonl"))[:3]
    job = runs[0].parent / "job.yaml"
    alone = [diagnose(r, job, previous=job).to_json() for r in runs]
    loads: list[object] = []
    real = api.load_config

    def counted(config, *args, **kwargs):  # type: ignore[no-untyped-def]
        loads.append(config)
        return real(config, *args, **kwargs)

    monkeypatch.setattr(api, "load_config", counted)
    got = api.diagnose_many([*runs, *runs], job, previous=job, workers=1)
    assert [d.to_json() for d in got] == alone + alone  # type: ignore[union-attr]
    hints = {repr(sorted(load_run(r).config_hints.items())) for r in runs}
    assert loads.count(job) == len(hints) + 1  # each set of hints once, --previous once
    loads.clear()
    diagnose(runs[0], job)  # after the batch: read afresh
    assert loads == [job]
