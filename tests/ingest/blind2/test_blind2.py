"""The second blind reader round (see README.md): every case read as the trainer wrote it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor.ingest import load_run
from advisor.types import InputError

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("blind2")
    shutil.copy(HERE / "gen.py", root / "gen.py")
    subprocess.run([sys.executable, "gen.py"], cwd=root, check=True, capture_output=True)
    return root / "cases", json.loads((root / "expected.json").read_text())


def _problems(path: Path, want: dict[str, Any]) -> list[str]:
    if want["error"]:
        try:
            load_run(path)
        except InputError as err:
            return [] if "\n" not in str(err) else ["a multi-line error"]
        return ["read, expected an InputError"]
    info = load_run(path).info()
    got = (info.steps, info.first_step, info.last_step)
    out = [f"steps/first/last {got}"] if got != (want["steps"], want["first"], want["last"]) else []
    missing = sorted(set(want["metrics"]) - set(info.metrics))
    return out + ([f"missing {missing}"] if missing else [])


def test_every_blind_case_reads_as_written(cases: tuple[Path, dict[str, Any]]) -> None:
    root, expected = cases
    failed = {
        name: problems
        for name, want in expected.items()
        if (problems := _problems(root / name, want))
    }
    assert not failed, f"{len(failed)} of {len(expected)} cases: {failed}"
