"""Data-driven rule cases (tests/config/cases/*.yaml): each rule fires on one config only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from config_helpers import BASES, load_cases, merge, read_yaml, write_yaml

from advisor.api import validate_job
from advisor.book.config import LoadCheck, rulebook

CASES = load_cases()


def _job_file(case: dict[str, Any], tmp_path: Path) -> Path:
    if "raw" in case:
        path = tmp_path / "job.yaml"
        path.write_text(case["raw"], encoding="utf-8")
        return path
    base = read_yaml(BASES / f"{case.get('base', '9b')}.yaml")
    data = merge(base, case.get("config") or {})
    for rel, text in (case.get("local_files") or {}).items():  # a local project beside the job
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    if lines := case.get("local_training_lines"):
        (tmp_path / "data").mkdir()
        rows = "".join(f'{{"prompt": "p{i}"}}\n' for i in range(lines))
        (tmp_path / "data" / "train.jsonl").write_text(rows, encoding="utf-8")
    return write_yaml(data, tmp_path / "job.yaml")


def _previous(case: dict[str, Any], tmp_path: Path) -> Path | None:
    """`previous:` patches the same base into the previous job of the case."""
    if "previous" not in case:
        return None
    base = read_yaml(BASES / f"{case.get('base', '9b')}.yaml")
    return write_yaml(merge(base, case["previous"]), tmp_path / "previous.yaml")


@pytest.mark.parametrize(("name", "case"), CASES, ids=[n for n, _ in CASES])
def test_rule_case(name: str, case: dict[str, Any], tmp_path: Path) -> None:
    path = _job_file(case, tmp_path)
    _, diag = validate_job(
        path, case.get("sets", ()), training_samples=case.get("training_samples"),
        profile=case.get("profile"), hints=case.get("hints"), previous=_previous(case, tmp_path),
    )  # fmt: skip
    hits = [f for f in diag.config_findings if f.id == case["rule"]]
    seen = [(f.id, f.message) for f in diag.config_findings]
    if not case["fires"]:
        assert not hits, f"{case['rule']} fired on a config meant to pass: {seen}"
        return
    assert hits, f"{case['rule']} did not fire; findings: {seen}"
    if "param" in case:
        assert any(case["param"] in f.params for f in hits), [f.params for f in hits]
    if "message_has" in case:
        assert any(case["message_has"] in f.message for f in hits), [f.message for f in hits]
    if "severity" in case:
        assert {f.severity.value for f in hits} == {case["severity"]}


def test_every_rule_has_a_firing_and_a_passing_case() -> None:
    fires = {c["rule"] for _, c in CASES if c["fires"]}
    passes = {c["rule"] for _, c in CASES if not c["fires"]}
    ids = {r.id for r in rulebook().rules}
    assert ids - fires == set(), "rules without a firing case"
    assert ids - passes == set(), "rules without a passing case"
    assert (fires | passes) - ids == set(), "cases for rules that do not exist"


@pytest.mark.parametrize("base", sorted(p.stem for p in BASES.glob("*.yaml")))
def test_bases_are_clean(base: str) -> None:
    """The bases must be sound, or a passing case could pass for the wrong reason. They are
    written in the guide's layout (the one the cases patch), which C008 notes once."""
    _, diag = validate_job(BASES / f"{base}.yaml")
    assert [(f.id, f.message) for f in diag.config_findings if f.id != "C008"] == []


def test_load_rules_are_documented_as_load_checks() -> None:
    load_ids = {r.id for r in rulebook().rules if isinstance(r.check, LoadCheck)}
    assert {"C001", "C002", "C003", "C004", "C005", "C006", "C901"} <= load_ids
