"""`rl-advisor harness CORPUS_DIR`: the advisor's accuracy on a labelled corpus and the public runs.

Prints per-symptom precision and recall, the false-alarm rate on healthy runs, onset error and
detection delay, the confusion table, the public runs' pass/fail and, with `--livefire DIR`, the
live-fire range's (see advisor/harness.py and advisor/realruns.py for every definition).
`--check` exits 1 when the corpus misses the targets of the diagnosis issue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor import harness as h
from advisor.cli import Exit, OutputFormat, app
from advisor.cli.diagnose import write_atomic
from advisor.realruns import default_full_dir, default_real_dir
from advisor.types import InputError


@app.command("harness")
def harness(
    corpus: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Labelled sets: directories of run dirs each with a label.json (several are "
            "scored side by side)."
        ),
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="markdown or json.")
    ] = OutputFormat.markdown,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here.")] = None,
    real: Annotated[
        bool, typer.Option("--real/--no-real", help="Also score the public labelled runs.")
    ] = True,
    real_dir: Annotated[
        Path | None, typer.Option("--real-dir", help="Public runs (default ../shared/real_runs).")
    ] = None,
    real_labels: Annotated[
        Path | None, typer.Option("--real-labels", help="Their labels (YAML).")
    ] = None,
    full_dir: Annotated[
        Path | None,
        typer.Option(
            "--full-dir",
            help="Public full curves, labelled in sample_metrics/full_labels.yaml "
            "(default <real runs>/full when present).",
        ),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", "-j", min=1, help="Processes.")] = 1,
    failures: Annotated[int, typer.Option("--failures", help="Misses listed.")] = 20,
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 when the corpus misses the targets.")
    ] = False,
    table: Annotated[
        bool, typer.Option("--table", help="Print only the README results table (Markdown).")
    ] = False,
    livefire: Annotated[
        Path | None,
        typer.Option("--livefire", help="Also score a live-fire range (tests/livefire/runs)."),
    ] = None,
    use_config: Annotated[
        bool,
        typer.Option("--config/--no-config", help="Judge runs with their job.yaml (default)."),
    ] = True,
) -> None:
    """Score the advisor on a labelled corpus (and the public runs)."""

    if not corpus and not real and livefire is None and full_dir is None:
        raise InputError("harness: expected a CORPUS_DIR, --real or --livefire DIR")
    rdir = (real_dir or default_real_dir()) if real else None
    if real and real_dir is None and rdir is None and not corpus and livefire is None:
        raise InputError("harness --real: ../shared/real_runs not found; pass --real-dir")
    fdir = full_dir or (default_full_dir(rdir) if real else None)
    rep = h.run_harness(
        corpus,
        rdir,
        real_labels,
        workers,
        use_config=use_config,
        livefire_dir=livefire,
        full_dir=fdir,
    )
    if table and (len(rep.sets) > 1 or rep.livefire):
        text = "\n".join(h.summary_table(rep)) + "\n"
    elif table and rep.corpus is not None:
        text = "\n".join(h.results_table(rep.corpus)) + "\n"
    elif output_format == OutputFormat.json:
        text = rep.to_json() + "\n"
    else:
        text = h.render_markdown(rep, failures)
    if output is not None:
        write_atomic(output, text)
    else:
        typer.echo(text, nl=False)
    if check and any(not s.meets_targets for s in rep.sets):
        # SystemExit, not typer.Exit: click swallows Exit's code when not in standalone mode.
        raise SystemExit(int(Exit.FINDINGS))
