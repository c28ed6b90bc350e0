"""The README's waste line is what the public run it names gives today."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.realruns import default_real_dir

ROOT = Path(__file__).resolve().parents[2]
RUN = "labelled/trl-grpo-rho-qwen25-7b-collapse-s43/train.log"


def _real_dir() -> Path | None:
    for cand in (default_real_dir(), Path("/work/shared/real_runs")):
        if cand is not None and (cand / RUN).is_file():
            return cand
    return None


def test_the_readme_waste_line_is_the_runs(capsys) -> None:
    real = _real_dir()
    if real is None:
        pytest.skip("the public real runs (../shared/real_runs) are not here")
    readme = ROOT.joinpath("README.md").read_text(encoding="utf-8")
    quoted = re.search(r"^> (Waste: .*?)(?=\n\n)", readme, re.M | re.S)
    assert quoted is not None
    said = " ".join(line.removeprefix("> ") for line in quoted.group(1).splitlines())
    assert main(["diagnose", str(real / RUN), "--gpus", "8", "--gpu-hour-price", "2"]) in (0, 1)
    verdict = next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("**Verdict:**")
    )
    assert verdict.endswith(" " + said)
