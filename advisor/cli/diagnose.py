"""`rl-advisor diagnose METRICS`: judge a run, report it, and write the patched job file.

Output: Markdown (default) or JSON on stdout, or into `--output PATH`. Pictures are drawn only
when they have a place to go: beside `--output` (Markdown), or into `--plots-dir DIR`; with the
report on stdout and no `--plots-dir`, the report keeps its inline sparklines only. `--no-plots`
never draws. Every file is written atomically (temp file + rename), and nothing is written
when the input is unusable.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from advisor.cli import Exit, FailOn, OutputFormat, app
from advisor.resources import destination, write_all
from advisor.resources import write_text_atomic as write_atomic  # noqa: F401 (cli.harness)
from advisor.types import Diagnosis, InputError, Severity, without_surrogates

_FAIL_RANK = {FailOn.error: 2, FailOn.warning: 1, FailOn.info: 0}


def exit_code(d: Diagnosis, fail_on: FailOn) -> int:
    """0 nothing at or above --fail-on, 1 something is (run findings and config findings alike)."""
    if fail_on == FailOn.never:
        return Exit.OK
    worst: Severity | None = d.worst()
    return Exit.FINDINGS if worst is not None and worst.rank >= _FAIL_RANK[fail_on] else Exit.OK


@contextmanager
def _without_cyclic_gc() -> Iterator[None]:
    """The cyclic garbage collector off while a diagnosis runs, back as it was after.

    A diagnosis leaves few reference cycles (its objects die by reference count; the job
    file's YAML reader leaves a few hundred objects, whatever the run's length:
    tests/test_diagnose_gc.py), but the imports of numpy, polars and the engine create ~60k
    long-lived objects, which the collector scans again and again for nothing: ~30 ms of a cold
    `rl-advisor diagnose` on a quiet machine, up to ~100 ms on a busy one. A caller's own
    process (a test) gets the collector back."""
    was_on, frozen = gc.isenabled(), gc.get_freeze_count()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            if not frozen:  # (objects a caller froze on purpose stay frozen)
                # What was made meanwhile counts as old (freeze, then unfreeze: into the oldest
                # generation, still collectable), or the first collection would scan it all.
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (b.exists() and os.path.samefile(a, b))
    except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13)
        return False


def _check_outputs(
    metrics: Path,
    config: Path | None,
    previous: Path | None,
    output: Path | None,
    patched: Path | None,
    plots_dir: Path | None = None,
) -> dict[str, Path]:
    """Refuse, before any work, an output that would overwrite an input or that is no place
    for a file (see resources.destination); the checked destinations by flag."""
    inputs = [p for p in (metrics, config, previous) if p is not None]
    out: dict[str, Path] = {}
    for flag, path in (("--output", output), ("--patched-config", patched)):
        if path is None:
            continue
        for src in inputs:
            if _same_file(path, src):
                raise InputError(
                    f"{flag} {path}: resolves to the input {src}; "
                    "expected a new path (inputs are never overwritten)"
                )
        out[flag] = destination(flag, path)
    if output is not None and patched is not None and out["--output"] == out["--patched-config"]:
        raise InputError(f"--patched-config {patched}: the same file as --output")
    if plots_dir is not None:
        out["--plots-dir"] = destination("--plots-dir", plots_dir, want_dir=True)
    if patched is not None and config is None:
        raise InputError("--patched-config: needs --config JOB.yaml (the file to patch)")
    return out


def staged_report(
    d: Diagnosis, fmt: str, stem: str, out_dir: Path | None, flag: str
) -> tuple[str, list[tuple[str, Path, bytes]]]:
    """The report's text and its pictures as (flag, destination, bytes), drawn into a private
    folder first: nothing lands beside the report until every output of the call is ready."""
    import tempfile

    from advisor.report import render

    if out_dir is None:
        return render(d, fmt, stem=stem), []
    with tempfile.TemporaryDirectory(prefix="rl-advisor-plots-") as tmp:
        text = render(d, fmt, out_dir=Path(tmp), stem=stem)
        pictures = [(flag, out_dir / f.name, f.read_bytes()) for f in sorted(Path(tmp).iterdir())]
    return text, pictures


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
        Path | None, typer.Option("--previous", help="The previous job's YAML (already tried).")
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
    from advisor.api import diagnose as run_diagnose

    if training_samples is not None and training_samples < 1:
        raise InputError(f"--training-samples: expected a positive integer, got {training_samples}")
    dests = _check_outputs(metrics, config, previous, output, patched_config, plots_dir)
    out_dir = None
    if not no_plots and format == OutputFormat.markdown:
        out_dir = dests.get("--plots-dir") or (
            dests["--output"].parent if output is not None else None
        )
    stem = output.stem if output is not None else "report"
    with _without_cyclic_gc():
        d = run_diagnose(
            metrics, config, sets or (), previous, training_samples, ignore=ignore or ()
        )
        # Everything is computed before anything is written: a failure leaves nothing behind.
        text, items = staged_report(
            d, format.value, stem, out_dir, "--plots-dir" if plots_dir else "--output"
        )
    if patched_config is not None:
        from advisor.api import file_changes

        # Written even when nothing changes, so a CI step can always resubmit PATH.
        changes = file_changes(d.patch)
        items.append(("--patched-config", dests["--patched-config"], _patched(config, changes)))
    if output is not None:
        items.append(("--output", dests["--output"], text.encode("utf-8")))
    write_all(items)
    if output is None:
        typer.echo(text, nl=False)
    said = [f"report written to {output}"] if output is not None else []
    if patched_config is not None:
        said.append(f"patched job written to {patched_config}")
    if said:
        # one line for the person at the terminal; stdout stays the report's (or empty)
        from advisor.report.markdown import verdict

        typer.echo(f"rl-advisor: {verdict(d)} {'; '.join(said).capitalize()}.", err=True)
    raise typer.Exit(int(exit_code(d, fail_on)))


def _patched(config: Path | None, changes: dict[str, object]) -> bytes:
    from advisor.config import patched_text

    try:
        return without_surrogates(patched_text(config, changes)).encode("utf-8")
    except InputError:
        raise
    except Exception as err:  # a job shape the patcher cannot place the change in
        raise InputError(
            f"--patched-config: cannot apply {', '.join(changes)} to {config} "
            f"({type(err).__name__}: {err}); expected hyper_parameters as a mapping"
        ) from None
