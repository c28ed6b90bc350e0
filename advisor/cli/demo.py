"""`rl-advisor demo [SYMPTOM]`: the advisor on a shipped run of that symptom, no run of your own
needed; without SYMPTOM, the list of them.

The runs are labelled runs of the corpus (sample_metrics/corpus), shipped in the wheel as
advisor.demo_runs (pyproject.toml lists them): a checkout reads them where they are.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated

import typer

from advisor.cli import OutputFormat, app
from advisor.types import InputError

# symptom id -> the corpus run that shows it (the runs of reports/: scripts/make_reports.py)
RUNS: dict[str, str] = {
    "healthy": "healthy-noisy-verl-console-s0001",
    "P1": "p1-stall-verl-console-s0001",
    "P2": "p2-sine-trl-state-s0000",
    "P3": "p3-step-verl-console-s0001",
    "KL0": "kl0-tiny-coef-verl-console-s0001",
    "P4": "p4-fast-verl-console-s0000",
    "SLOW": "slow-gen-climb-verl-console-s0000",
    "OOM": "oom-memory-climb-verl-console-s0000",
    "P9": "p9-rising-verl-console-s0000",
    "P6": "p6-peak-decline-verl-console-s0000",
    "NAN": "nan-crash-verl-console-s0000",
    "DIV": "div-entropy-blowup-verl-console-s0000",
}


def runs_dir() -> Path:
    """The repo's sample_metrics/corpus in a checkout, the packaged copy when installed."""
    here = Path(__file__).resolve().parents[1]  # the advisor package
    repo = here.parent / "sample_metrics" / "corpus"
    if repo.is_dir():
        return repo
    return here / "demo_runs"  # a data-only package: no __init__, so found by its place


def _pick(symptom: str) -> str:
    by_upper = {k.upper(): k for k in RUNS}
    if symptom.upper() in by_upper:
        return by_upper[symptom.upper()]
    near = difflib.get_close_matches(symptom, list(RUNS), n=1, cutoff=0.5)
    hint = f"; did you mean {near[0]}?" if near else ""
    raise InputError(f"demo {symptom}: no such demo (known: {', '.join(RUNS)}){hint}")


def _metrics_file(run: Path) -> Path:
    import json

    label = json.loads((run / "label.json").read_text(encoding="utf-8"))
    return run / str(label["metrics_file"])


@app.command("demo")
def demo(
    symptom: Annotated[
        str | None, typer.Argument(metavar="[SYMPTOM]", help="A symptom id (P1, P3, ...).")
    ] = None,
    fmt: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = (
        OutputFormat.markdown
    ),
) -> None:
    """Diagnose a shipped run of a symptom and print its report; without SYMPTOM, list them."""
    from advisor.i18n import t

    if symptom is None:
        from advisor.book.symptoms import load_symptom_rules

        names = {r.id: r.name for r in load_symptom_rules().rules}
        typer.echo(t("Shipped runs to try: rl-advisor demo SYMPTOM"))
        for key, run in RUNS.items():
            typer.echo(f"  {key:<8} {names.get(key, t('no symptom')):<20} {run}")
        return
    key = _pick(symptom)
    folder = runs_dir() / RUNS[key]
    from advisor.api import diagnose
    from advisor.report import render

    d = diagnose(_metrics_file(folder), config=folder / "job.yaml")
    typer.echo(render(d, fmt.value), nl=False)
