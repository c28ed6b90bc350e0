"""Runtime dependencies earn their place: each is imported by the package, and the package
imports nothing a plain `pip install` leaves out."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# distribution name -> the module it provides
_MODULE = {"ruamel.yaml": "ruamel"}


def _runtime() -> list[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [re.split(r"[<>=!~ \[]", d, maxsplit=1)[0] for d in deps["dependencies"]]


def _imported() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "advisor").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r"^\s*(?:import|from) ([a-zA-Z_]\w*)", text, re.MULTILINE))
    return found


def test_every_runtime_dependency_is_imported() -> None:
    imported = _imported()
    unused = [d for d in _runtime() if _MODULE.get(d, d) not in imported]
    assert not unused, f"runtime dependencies the package never imports: {unused}"


def test_diagnose_runs_without_the_test_only_packages() -> None:
    # scipy, hypothesis, pytest: in the dev extra only. Blocked, a diagnosis still runs.
    run = "sample_metrics/corpus/p3-step-verl-console-s0001"
    code = (
        "import sys\n"
        "for m in ('scipy', 'hypothesis', 'pytest', 'transformers'):\n"
        "    sys.modules[m] = None\n"
        "from advisor.api import diagnose\n"
        "from advisor.report import render\n"
        f"d = diagnose('{run}/train.log', config='{run}/job.yaml')\n"
        "assert 'P3' in {f.id for f in d.findings}\n"
        "render(d, 'json')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]


def test_checking_a_job_imports_neither_numpy_nor_polars() -> None:
    # advisor/lazy.py: the engine, numpy and polars are imported by what reads or judges a run
    job = "sample_metrics/corpus/p3-step-verl-console-s0001/job.yaml"
    code = (
        "import io, sys, contextlib\n"
        "from advisor.cli import main\n"
        "import advisor.api, advisor.online\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['validate', '{job}'])\n"
        "assert code in (0, 1), code\n"
        "print(sorted(m for m in ('numpy', 'polars', 'advisor.engine') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("with_job", [True, False])
def test_a_diagnosis_imports_no_pool_and_no_yaml_parser_it_does_not_use(with_job: bool) -> None:
    # advisor/lazy.py: multiprocessing and concurrent.futures.process are diagnose_many's;
    # ruamel reads a job file (and a rulebook not yet cached: the first run below caches them);
    # numpy.ma (~6 ms) only by numpy's own median and unique, which the detectors do without;
    # the Markdown renderer (charts, templates) is no json report's; the detectors' parameter
    # schema checks a rulebook not yet cached; difflib diffs a patched job file (this run's
    # finding patches it) and matches unknown names
    run = "sample_metrics/corpus/p3-step-verl-jsonl-s0003"
    job = f", '--config', '{run}/job.yaml'" if with_job else ""
    code = (
        "import io, sys, contextlib\n"
        "from advisor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['diagnose', '{run}/metrics.jsonl'{job},\n"
        "                 '--format', 'json', '--fail-on', 'never'])\n"
        "assert code == 0, code\n"
        "unused = ('multiprocessing', 'concurrent.futures.process', 'ruamel.yaml', 'numpy.ma',\n"
        "          'advisor.report.markdown', 'advisor.book.paramspec', 'difflib')\n"
        "print(sorted(m for m in unused if m in sys.modules))\n"
    )
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
    cached = not os.environ.get("RL_ADVISOR_NO_CACHE")
    expected = [*(["advisor.book.paramspec"] if not cached else []),
                *(["difflib"] if with_job else []),
                *(["ruamel.yaml"] if with_job or not cached else [])]  # fmt: skip
    assert out.stdout.strip() == str(expected)


def test_importing_the_online_advisor_imports_no_costly_module() -> None:
    # advisor/lazy.py: a hook's import pays for neither judging nor the final report
    costly = (
        "numpy",
        "polars",
        "jinja2",
        "typer",
        "advisor.engine",
        "advisor.api",
        "advisor.report",
    )
    code = (
        "import sys\n"
        "import advisor.online, advisor.integrations.hook\n"
        f"print(sorted(m for m in {costly!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_version_imports_no_command() -> None:
    code = (
        "import io, sys, contextlib\n"
        "from advisor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    code = main(['--version'])\n"
        "assert code == 0 and out.getvalue().startswith('rl-advisor '), (code, out.getvalue())\n"
        "print(sorted(m for m in sys.modules if m.startswith('advisor.cli.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
