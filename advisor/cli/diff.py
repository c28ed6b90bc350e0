"""`rl-advisor diff RUN_A RUN_B`: two runs compared (advisor.diff); exit 0 when they show the
same, 1 when a core curve parts ways or a finding is not shared, 2 on unusable input."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from advisor.cli import Exit, app


class DiffFormat(StrEnum):
    markdown = "markdown"
    json = "json"


@app.command("diff")
def diff(
    run_a: Annotated[Path, typer.Argument(help="The first run (a metrics file or folder).")],
    run_b: Annotated[Path, typer.Argument(help="The run to compare it with.")],
    config_a: Annotated[Path | None, typer.Option("--config-a", help="RUN_A's job config.")] = None,
    config_b: Annotated[Path | None, typer.Option("--config-b", help="RUN_B's job config.")] = None,
    fmt: Annotated[DiffFormat, typer.Option("--format", "-f", help="Output format.")] = (
        DiffFormat.markdown
    ),
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Report file.")] = None,
    prompts: Annotated[
        int,
        typer.Option(
            "--prompts",
            min=0,
            help="Prompts listed from the runs' per-prompt records, largest gaps first (0: "
            "none read).",
        ),
    ] = 10,
) -> None:
    """The settings that differ, where each core curve parts ways, the findings not shared,
    the prompts scored most apart."""
    from advisor.diff import diff_runs, render
    from advisor.resources import destination, write_all
    from advisor.types import InputError

    inputs = [p for p in (run_a, run_b, config_a, config_b) if p is not None]
    dest = None
    if output is not None:
        dest = destination("--output", output)
        for src in inputs:
            if _overwrites(dest, src):
                raise InputError(
                    f"--output {output}: the same file as the input {src} or one in it; "
                    "expected a new path (inputs are never overwritten)"
                )
    result = diff_runs(run_a, run_b, config_a, config_b, prompts)
    text = render(result, fmt.value)
    if dest is not None:
        write_all([("--output", dest, text.encode("utf-8"))])
    else:
        typer.echo(text, nl=False)
    raise SystemExit(int(Exit.FINDINGS if result.differ else Exit.OK))


def _overwrites(dest: Path, src: Path) -> bool:
    """`dest` is the input `src`, or a file already inside the run folder `src` (any of its
    files may be what the run is read from)."""
    try:
        target, source = dest.resolve(), src.resolve()
    except (OSError, RuntimeError):  # a link loop
        return False
    return target == source or (
        source.is_dir() and target.is_relative_to(source) and target.exists()
    )
