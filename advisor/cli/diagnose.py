"""`rl-advisor diagnose METRICS`: judge a run, report it, and write the patched job file.

Output: Markdown (default), JSON or one self-contained HTML file (its charts inline) on stdout,
or into `--output PATH`. Pictures are drawn only when they have a place to go: beside
`--output` (Markdown), or into `--plots-dir DIR`; with the
report on stdout and no `--plots-dir`, the report keeps its inline sparklines only. `--no-plots`
never draws. Every file is written atomically (temp file + rename), and nothing is written
when the input is unusable.

This module declares the command to the CLI framework (its help, its usage errors); the work
is `diagnose_core.execute`, which a plain call reaches without the framework (`main`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from advisor.cli import Exit, FailOn, ReportFormat, app
from advisor.cli.diagnose_core import (
    _check_outputs,
    echo,
    execute,
    exit_code,
    staged_report,
)
from advisor.resources import write_all
from advisor.resources import write_text_atomic as write_atomic
from advisor.types import InputError

# used by the other commands (watch, harness) and the tests
__all__ = [
    "_check_outputs",
    "diagnose",
    "exit_code",
    "staged_report",
    "write_all",
    "write_atomic",
]


@app.command("diagnose")
def diagnose(
    metrics: Annotated[
        Path | None, typer.Argument(help="Metrics file or run directory (or --job).")
    ] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="The job YAML.")] = None,
    sets: Annotated[list[str] | None, typer.Option("--set", help="KEY=VALUE override.")] = None,
    format: Annotated[ReportFormat, typer.Option("--format", "-f")] = ReportFormat.markdown,
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
    job: Annotated[
        str | None,
        typer.Option("--job", help="A platform job id: its log and settings, fetched by its SDK."),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds a platform request may take.")
    ] = 30.0,
    gpus: Annotated[
        int | None, typer.Option("--gpus", help="GPUs the run used (prices the waste).")
    ] = None,
    gpu_hour_price: Annotated[
        float | None, typer.Option("--gpu-hour-price", help="Price of one GPU-hour.")
    ] = None,
    currency: Annotated[
        str | None, typer.Option("--currency", help="The price's currency (default USD).")
    ] = None,
) -> None:
    """Diagnose a run: what is wrong, the evidence, the one change to make.

    Report on stdout, or in --output with an SVG chart per finding and metric beside it
    (--format html: one file, its charts inside).

    Exit 0: nothing at or above --fail-on; 1: findings at or above it; 2: unusable input.
    """
    if (metrics is None) == (job is None):
        raise InputError("diagnose: expected METRICS (a file or folder) or --job JOB_ID, one")
    if job is not None:
        code = diagnose_job(
            job, timeout, config, sets, format, output, patched_config, previous, fail_on,
            training_samples, ignore, plots_dir, no_plots,
            price=(gpus, gpu_hour_price, currency),
        )  # fmt: skip
        raise typer.Exit(code)
    assert metrics is not None
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
        gpus=gpus,
        gpu_hour_price=gpu_hour_price,
        currency=currency,
    )
    raise typer.Exit(code)


def diagnose_job(
    job_id: str,
    timeout: float,
    config: Path | None,
    sets: list[str] | None,
    format: ReportFormat,
    output: Path | None,
    patched_config: Path | None,
    previous: list[Path] | None,
    fail_on: FailOn,
    training_samples: int | None,
    ignore: list[str] | None,
    plots_dir: Path | None,
    no_plots: bool,
    price: tuple[int | None, float | None, str | None] = (None, None, None),
) -> int:
    """`diagnose --job`: the job and its whole log fetched through the platform's SDK into a
    private folder, judged there as a file is (with the job's own settings, unless --config
    names its file), the report naming the job. A FAILED job exits 1 at least."""
    from advisor import platform
    from advisor.book.config import rulebook

    if patched_config is not None and config is None:
        raise InputError(
            "--patched-config with --job: needs --config JOB.yaml (the job's file to patch: "
            "the platform keeps none)"
        )
    client = platform.Platform(timeout)
    job = client.job(job_id)
    lines = client.log_lines(job_id)
    if not any(line.strip() for line in lines):
        raise platform.no_log_yet(job)
    known = rulebook().hyper_parameters
    with tempfile.TemporaryDirectory(prefix="rl-advisor-job-") as tmp:
        folder = Path(tmp)
        log = folder / "job.log"
        log.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        if config is None:
            settings = folder / "job.yaml"
            settings.write_text(platform.job_file(job, known.__contains__), encoding="utf-8")
        code = execute(
            log, config if config is not None else settings, sets, format, output,
            patched_config, previous, fail_on, training_samples, ignore, plots_dir, no_plots,
            names=platform.private_names(folder, job),
            gpus=price[0], gpu_hour_price=price[1], currency=price[2],
        )  # fmt: skip
    said = platform.status_line(job)
    if not job.finished:
        said = f"job {job_id} is {job.status}: judged on its log so far ({len(lines)} lines)"
    if said:
        from advisor.i18n import say

        echo(f"rl-advisor: {say(said)}\n", err=True)
    if job.status == platform.FAILED and fail_on != FailOn.never:
        code = max(code, Exit.FINDINGS)
    return code
