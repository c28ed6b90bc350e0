"""Without a job file, rules that look only at assumed platform defaults stay silent."""

from __future__ import annotations

from pathlib import Path

from advisor.api import diagnose

CORPUS = Path(__file__).resolve().parents[2] / "sample_metrics" / "corpus"


def test_defaults_alone_raise_no_config_finding() -> None:
    run = CORPUS / "healthy-noisy-verl-console-s0001"
    bare = diagnose(run)
    assert not [f.id for f in bare.config_findings if f.id in ("C606", "C401")]
    # the same run judged with its job file: the file's values are the user's, and are checked
    with_job = diagnose(run, run / "job.yaml")
    assert len(with_job.config_findings) >= len(bare.config_findings)
    assert all(f.params for f in bare.config_findings)


def test_a_patch_from_an_assumed_value_says_so() -> None:
    """P9 raises max_length; without a job file its value is the platform default: said."""
    run = CORPUS / "p9-rising-verl-jsonl-s0002"  # a file logger: no config dump in it
    d = diagnose(run)
    assert d.patch is not None and [c.param for c in d.patch.changes] == ["max_length"]
    assert any("max_length is not in the job file nor the log" in a for a in d.assumptions)
    with_job = diagnose(run, run / "job.yaml")
    assert not any("the patch starts from the platform default" in a for a in with_job.assumptions)
