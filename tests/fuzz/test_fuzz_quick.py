"""The quick part of the fuzz suite: a fixed sample of hostile cases, every class at zero.

The long part is `python tests/fuzz/run.py --n 10000` (worker processes, hang and memory
watchdogs); this runs the same generator and checks in this process, under an alarm.
"""

from __future__ import annotations

import random
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from hostile import make_case
from run import execute


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Hang


@pytest.mark.parametrize("seed", range(36))
def test_hostile_case_shows_no_failure(tmp_path: Path, seed: int) -> None:
    case = make_case(random.Random(1600 + seed), tmp_path / "case")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(15)
    try:
        result = execute(case)
    except _Hang:
        pytest.fail(f"hang: {case.argv}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert result["found"] == {}, (case.kind, case.argv)
