"""The holdout set: job files as users write them, each mistake named on the right parameter.

`tests/config/holdout/expectations.yaml` says, per file, which finding must appear on which
parameter at which severity, and which must not. Run this file as a script for the score:
`.venv/bin/python tests/config/test_config_holdout.py`.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

HOLDOUT = Path(__file__).resolve().parent / "holdout"


def load_expectations() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = YAML(typ="safe", pure=True).load(
        (HOLDOUT / "expectations.yaml").read_text(encoding="utf-8")
    )
    return data


EXPECTATIONS = load_expectations()


@functools.cache
def validate(name: str) -> tuple[int, list[dict[str, Any]]]:
    """Run `rl-advisor validate FILE --format json` through the real entry point."""
    from advisor.cli import main

    args = ["validate", str(HOLDOUT / name), "--format", "json", "--fail-on", "never"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, *map(str, EXPECTATIONS[name].get("args", []))])
    assert code == 0, err.getvalue()
    return code, json.loads(out.getvalue())["config_findings"]


def matches(finding: dict[str, Any], want: dict[str, Any]) -> bool:
    return (
        finding["id"] == want["id"]
        and want["param"] in finding["params"]
        and finding["severity"] == want["severity"]
        and want.get("says", "") in finding["message"]
    )


def expected_items() -> list[tuple[str, int]]:
    return [(n, i) for n, case in EXPECTATIONS.items() for i in range(len(case.get("expect", [])))]


def test_every_holdout_file_has_expectations() -> None:
    files = {p.name for p in HOLDOUT.iterdir() if p.suffix in {".yaml", ".json", ".txt"}}
    assert files - {"expectations.yaml"} == set(EXPECTATIONS)


@pytest.mark.parametrize(("name", "index"), expected_items())
def test_mistake_is_named_on_its_parameter(name: str, index: int) -> None:
    want = EXPECTATIONS[name]["expect"][index]
    _, findings = validate(name)
    assert any(matches(f, want) for f in findings), (want, findings)


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_no_unexpected_error_and_no_forbidden_finding(name: str) -> None:
    case = EXPECTATIONS[name]
    _, findings = validate(name)
    wanted_errors = [w for w in case.get("expect", []) if w["severity"] == "error"]
    stray = [
        f for f in findings
        if f["severity"] == "error" and not any(matches(f, w) for w in wanted_errors)
    ]  # fmt: skip
    assert not stray, stray
    forbidden = [f for f in findings if f["id"] in case.get("forbid", [])]
    assert not forbidden, forbidden


def score() -> str:
    """The figures for a report: mistakes named on the right parameter, false errors."""
    named = total = false_errors = sound = 0
    for name, case in EXPECTATIONS.items():
        _, findings = validate(name)
        for want in case.get("expect", []):
            total += 1
            named += any(matches(f, want) for f in findings)
        if not case.get("expect"):
            sound += 1
            false_errors += sum(f["severity"] == "error" for f in findings)
    return (
        f"holdout: {named}/{total} mistakes named on the right parameter at the expected "
        f"severity; {false_errors} error(s) on {sound} sound configs"
    )


if __name__ == "__main__":
    sys.exit(print(score()))


# rules about a value that is absent: their line points at the enclosing block instead
ABSENT_VALUE_RULES = {"C005", "C302", "C512", "C515", "C520", "C521"}


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_finding_lines_point_at_the_parameter(name: str) -> None:
    """A finding's file:line shows the line where its first parameter is written."""
    lines = (HOLDOUT / name).read_text(encoding="utf-8").splitlines()
    _, findings = validate(name)
    for f in findings:
        if f["line"] is None or f["id"] in ABSENT_VALUE_RULES or not f["params"]:
            continue
        key = f["params"][0].rsplit(".", 1)[-1].split("[")[0]
        if any(key in line for line in lines):
            assert key in lines[f["line"] - 1], (f["id"], key, f["line"], lines[f["line"] - 1])
