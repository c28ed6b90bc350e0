"""Regenerate reports/: the Markdown report of one corpus run per symptom id and one healthy run
(reports/zh/: the same in Chinese, `--lang zh`).

    python scripts/make_reports.py            # rewrite reports/
    python scripts/make_reports.py --check    # exit 1 when reports/ is stale (text only)

It also copies one of the P3 report's charts to docs/report-p3-kl_ref.svg, the README's picture.

Each report is `rl-advisor diagnose RUN --config job.yaml` rendered with its plots
(advisor.api.diagnose + advisor.report.render). Paths are repo-relative and nothing carries a
date, so the text and the SVG charts are a pure function of the code, the rulebook and the
corpus; other files are compared by name only.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path("sample_metrics") / "corpus"
REPORTS = ROOT / "reports"
# The README's picture: one plot of one report, copied beside the docs.
PICTURE = "P3-P3-kl_ref.svg"
DOCS_PICTURE = ROOT / "docs" / "report-p3-kl_ref.svg"

# One run per report, from the committed corpus (a console log wherever the family has one):
# the runs `rl-advisor demo` ships, named once in advisor.cli.demo.


def runs() -> dict[str, str]:
    """Report name -> corpus run."""
    from advisor.cli.demo import RUNS

    return RUNS


def _metrics_file(run_dir: Path) -> Path:
    import json

    label = json.loads((ROOT / run_dir / "label.json").read_text(encoding="utf-8"))
    return run_dir / label["metrics_file"]


def render_all(dest: Path) -> list[Path]:
    """Write every report (and its PNGs) into `dest`; return the Markdown files."""
    from advisor.api import diagnose
    from advisor.report import render

    dest.mkdir(parents=True, exist_ok=True)
    written = []
    verdicts: dict[str, str] = {}
    for name, run_id in runs().items():
        run_dir = CORPUS / run_id
        d = diagnose(_metrics_file(run_dir), config=run_dir / "job.yaml")
        text = render(d, "markdown", out_dir=dest, stem=name)
        out = dest / f"{name}.md"
        out.write_text(text, encoding="utf-8")
        written.append(out)
        verdicts[name] = _verdict(text)
    (dest / "README.md").write_text(_index(verdicts), encoding="utf-8")
    return written + _render_zh(dest / "zh")


def _render_zh(dest: Path) -> list[Path]:
    """The same reports in Chinese (`--lang zh`), without the charts (reports/ has them)."""
    import os

    from advisor.api import diagnose
    from advisor.report import render

    dest.mkdir(parents=True, exist_ok=True)
    was = os.environ.get("RL_ADVISOR_LANG")
    os.environ["RL_ADVISOR_LANG"] = "zh"
    written = []
    try:
        for name, run_id in runs().items():
            run_dir = CORPUS / run_id
            d = diagnose(_metrics_file(run_dir), config=run_dir / "job.yaml")
            out = dest / f"{name}.md"
            out.write_text(render(d, "markdown"), encoding="utf-8")
            written.append(out)
    finally:
        if was is None:
            os.environ.pop("RL_ADVISOR_LANG", None)
        else:
            os.environ["RL_ADVISOR_LANG"] = was
    return written


def _verdict(report: str) -> str:
    line = next((ln for ln in report.splitlines() if ln.startswith("**Verdict:**")), "")
    return line.removeprefix("**Verdict:**").strip().replace("|", "/")


def _index(verdicts: dict[str, str]) -> str:
    lines = [
        "# Example reports",
        "",
        "Rendered from the labelled corpus by `python scripts/make_reports.py` (golden files:",
        "`tests/corpus/test_reports.py` fails when they are stale). Each is the output of",
        "`rl-advisor diagnose <run> --config <run>/job.yaml --output reports/<ID>.md`.",
        "",
        "| report | run (sample_metrics/corpus/) | verdict |",
        "|---|---|---|",
    ]
    lines += [
        f"| [{name}]({name}.md) | `{run_id}` | {verdicts.get(name, '')} |"
        for name, run_id in runs().items()
    ]
    return "\n".join(lines) + "\n"


def check(reports: Path) -> list[str]:
    """Differences between reports/ and a fresh rendering (empty = up to date)."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        render_all(fresh)
        return _compare(fresh, reports)


def _compare(fresh: Path, reports: Path, where: str = "reports/") -> list[str]:
    problems = []
    want = {p.name for p in fresh.iterdir()}
    have = {p.name for p in reports.iterdir()} if reports.is_dir() else set()
    problems += [f"missing: {where}{n}" for n in sorted(want - have)]
    problems += [f"stale extra file: {where}{n}" for n in sorted(have - want)]
    for name in sorted(want & have):
        if (fresh / name).is_dir():
            problems += _compare(fresh / name, reports / name, f"{where}{name}/")
            continue
        if not name.endswith((".md", ".svg")):
            continue  # anything else (a binary picture): compare presence only
        a = (reports / name).read_text(encoding="utf-8").splitlines()
        b = (fresh / name).read_text(encoding="utf-8").splitlines()
        if a != b:
            diff = list(difflib.unified_diff(a, b, f"{where}{name}", "fresh", n=0, lineterm=""))
            problems.append(f"stale: {where}{name}\n" + "\n".join(diff[:12]))
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when reports/ is stale")
    args = ap.parse_args(argv)
    import os

    os.chdir(ROOT)  # repo-relative paths in the reports
    sys.path.insert(0, str(ROOT))
    if args.check:
        problems = check(REPORTS)
        copy = REPORTS / PICTURE
        if not DOCS_PICTURE.exists() or DOCS_PICTURE.read_bytes() != copy.read_bytes():
            problems.append(f"stale: docs/{DOCS_PICTURE.name} (a copy of reports/{PICTURE})")
        for p in problems:
            print(p)
        print("reports/ is up to date" if not problems else
              "reports/ is stale: run python scripts/make_reports.py")
        return 1 if problems else 0
    with tempfile.TemporaryDirectory() as tmp:
        render_all(Path(tmp))  # render fully first: a failure leaves reports/ untouched
        if REPORTS.exists():
            shutil.rmtree(REPORTS)
        shutil.copytree(tmp, REPORTS)
    shutil.copyfile(REPORTS / PICTURE, DOCS_PICTURE)
    print(f"wrote {len(runs())} reports to reports/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
