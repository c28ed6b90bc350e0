"""`rl-advisor diagnose METRICS`: judge a run, report it, and write the patched job file.

Output: Markdown (default) or JSON on stdout, or into `--output PATH`. Pictures are drawn only
when they have a place to go: beside `--output` (Markdown), or into `--plots-dir DIR`; with the
report on stdout and no `--plots-dir`, the report keeps its inline sparklines only. `--no-plots`
never draws. Every file is written atomically (temp file + rename), and nothing is written
when the input is unusable.

This module declares the command to the CLI framework (its help, its usage errors); the work
is `diagnose_core.execute`, which a plain call reaches without the framework (`main`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli import FailOn, OutputFormat, app
from advisor.cli.diagnose_core import (
    _check_outputs,
    _without_cyclic_gc,
    execute,
    exit_code,
    staged_report,
)
from advisor.resources import write_all
from advisor.resources import write_text_atomic as write_atomic

# used by the other commands (watch, harness) and the tests
__all__ = [
    "_check_outputs",
    "_without_cyclic_gc",
    "diagnose",
    "exit_code",
    "staged_report",
    "write_all",
    "write_atomic",
]


@app.command("diagnose")
def diagnose(
    metrics: Annotated[Path, typer.Argument(help="Metrics file or run directory.")],
    config: Annotated[Path | None, typer.Option("--config", "-c", help="The job YAML.")] = None,
    sets: Annotated[list[str] | None, typer.Option("--set", help="KEY=VALUE override.")] = None,
    format: Annotated[OutputFormat, typer.Option("--format", "-f")] = OutputFormat.markdown,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Report file.")] = None,
    patched_config: Annotated[
        Path | None, typer.Option("--patched-config", help="Write the patched job file here.")
    ] = None,
    previous: Annotated[
        list[Path] | None,
        typer.Option(
            "--previous",
            help="An earlier run of this job (job file, run directory, rl-advisor-run.json or "
            "rl-advisor-report.json); repeat it, oldest first.",
        ),
    ] = None,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Exit 1 at this severity.")] = (
        FailOn.error
    ),
    training_samples: Annotated[
        int | None, typer.Option("--training-samples", help="Epoch length for checkpoints.")
    ] = None,
    ignore: Annotated[
        list[str] | None, typer.Option("--ignore", help="Finding ids to silence (P1,SLOW).")
    ] = None,
    plots_dir: Annotated[
        Path | None, typer.Option("--plots-dir", help="Draw the charts here (default: by --output)")
    ] = None,
    no_plots: Annotated[bool, typer.Option("--no-plots", help="Draw no pictures.")] = False,
) -> None:
    """Diagnose a run: what is wrong, the evidence, the one change to make.

    Report on stdout, or in --output with an SVG chart per finding and metric beside it.

    Exit 0: nothing at or above --fail-on; 1: findings at or above it; 2: unusable input.
    """
    code = execute(
        metrics,
        config,
        sets,
        format,
        output,
        patched_config,
        previous,
        fail_on,
        training_samples,
        ignore,
        plots_dir,
        no_plots,
    )
    raise typer.Exit(code)
