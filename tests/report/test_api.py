"""The public API: diagnose, validate, diagnose_many (batch), --previous."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_helpers import JOB_YAML, write_verl_jsonl

from advisor.api import diagnose, diagnose_many, validate
from advisor.types import Diagnosis, InputError


@pytest.fixture
def job(tmp_path: Path) -> Path:
    p = tmp_path / "job.yaml"
    p.write_text(JOB_YAML)
    return p


def test_validate_has_no_run_and_no_findings(job) -> None:
    d = validate(job, ["learning_rate=5e-5"])
    assert d.run is None and d.findings == [] and d.patch is None
    assert d.hyper_parameters["learning_rate"] == 5e-5
    assert any("learning_rate" in c.params for c in d.config_findings)  # SFT-level lr


def test_set_wins_and_is_the_patch_base(tmp_path, job) -> None:
    metrics = tmp_path / "kl.jsonl"
    write_verl_jsonl(metrics, 400, "kl_blowup")
    d = diagnose(metrics, job, ["kl_loss_coef=0.002"])
    assert d.hyper_parameters["kl_loss_coef"] == 0.002
    kl = [c for c in d.patch.changes if c.param == "kl_loss_coef"]
    assert kl and kl[0].from_ == 0.002 and kl[0].to > 0.002


def test_previous_job_that_already_raised_kl_moves_to_the_fallback(tmp_path, job) -> None:
    metrics = tmp_path / "kl.jsonl"
    write_verl_jsonl(metrics, 400, "kl_blowup")
    first = diagnose(metrics, job)
    assert first.patch.from_finding == "P3" and first.patch.kind == "primary"
    prev = tmp_path / "prev.yaml"
    prev.write_text(JOB_YAML.replace("kl_loss_coef: 0.001", "kl_loss_coef: 0.0002"))
    again = diagnose(metrics, job, previous=prev)
    assert again.patch.kind == "fallback"
    assert any("already changed kl_loss_coef" in n for n in again.patch.notes)
    assert [c.param for c in again.patch.changes] == ["learning_rate"]


def test_without_config_the_assumptions_say_what_was_taken(tmp_path) -> None:
    metrics = tmp_path / "kl.jsonl"
    write_verl_jsonl(metrics, 400, "kl_blowup")
    d = diagnose(metrics)
    text = " ".join(d.assumptions)
    assert "taken from the run's log: trainer.test_freq=20" in text  # a verl log: verl's names
    assert "kl_loss_coef" in text  # the patched value starts from an assumed default


def test_batch_keeps_order_and_returns_errors_in_place(tmp_path) -> None:
    paths = []
    for i, kind in enumerate(["healthy", "nan_crash", "kl_blowup"]):
        p = tmp_path / f"r{i}.jsonl"
        write_verl_jsonl(p, 200, kind, seed=i)
        paths.append(p)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a log\n")
    paths.insert(1, bad)
    out = diagnose_many(paths, workers=2)
    assert isinstance(out[1], InputError) and "bad.jsonl" in str(out[1])
    good = [o for o in out if isinstance(o, Diagnosis)]
    assert [Path(o.run.source).name for o in good] == ["r0.jsonl", "r1.jsonl", "r2.jsonl"]
    serial = diagnose_many(paths, workers=1)  # a pure function: same answer in any process
    assert [o.to_dict() if isinstance(o, Diagnosis) else str(o) for o in serial] == [
        o.to_dict() if isinstance(o, Diagnosis) else str(o) for o in out
    ]


def test_save_interval_from_the_log_means_saving_by_steps(tmp_path) -> None:
    from report_helpers import HP, Judgement, make_rules, make_run

    from advisor.api import assemble

    hp = {**HP, "save_strategy": "epoch", "save_steps": 100, "save_total_limit": 3}
    origin = {"save_steps": "run", "save_strategy": "default", "save_total_limit": "default"}
    d = assemble(make_run(), hp, Judgement([]), origin=origin, rules=make_rules())
    assert d.checkpoint["kept_steps"] == [200, 300, 400]
    assert any("saving by steps was assumed" in a for a in d.assumptions)
    assert any("save_total_limit is not in the job file" in a for a in d.assumptions)


def test_ignore_drops_config_findings_too(tmp_path, job) -> None:
    metrics = tmp_path / "ok.jsonl"
    write_verl_jsonl(metrics, 200, "healthy")
    loud = diagnose(metrics, job, ["learning_rate=5e-5"])
    ids = {c.id for c in loud.config_findings}
    assert ids
    quiet = diagnose(metrics, job, ["learning_rate=5e-5"], ignore=[",".join(ids)])
    assert quiet.config_findings == []
    with pytest.raises(InputError, match="--ignore C999"):
        diagnose(metrics, job, ignore=["C999"])
