"""`rl-advisor diagnose` without the CLI framework: the command's work (its plain calls are
parsed by advisor.cli.argv)."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.cli import Exit, FailOn, ReportFormat, without_cyclic_gc
from advisor.reading import Reading
from advisor.report import render
from advisor.resources import destination, write_all, written_through
from advisor.types import (
    JOB_FILE,
    Diagnosis,
    InputError,
    Severity,
    no_metric_read,
    without_surrogates,
)

if TYPE_CHECKING:
    from advisor.config import JobFile

_FAIL_RANK = {FailOn.error: 2, FailOn.warning: 1, FailOn.info: 0}


def job_beside(metrics: Path) -> Path | None:
    """The callback's job file in the run's folder (`metrics` itself or the file's folder)."""
    path = (metrics if metrics.is_dir() else metrics.parent) / JOB_FILE
    return path if path.is_file() else None

def exit_code(d: Diagnosis, fail_on: FailOn) -> int:
    """0 nothing at or above --fail-on, 1 something is (run findings and config findings alike;
    a run that crashed counts as an error, whatever it showed before)."""
    if fail_on == FailOn.never:
        return Exit.OK
    worst: Severity | None = Severity.error if d.status == "crashed" else d.worst()
    return Exit.FINDINGS if worst is not None and worst.rank >= _FAIL_RANK[fail_on] else Exit.OK


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (b.exists() and os.path.samefile(a, b))
    except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13)
        return False


# files a report writes: an existing one inside a run folder is no input of the run
_REPORT_SUFFIXES = frozenset({".md", ".html", ".htm", ".svg", ".png"})


def _inside_run_folder(path: Path, folder: Path) -> bool:
    """`path` is an existing file somewhere inside the input folder `folder` that the run may
    be read from: the readers take a run folder's logs, states and checkpoints, so writing
    over one would change an input (reports and earlier patches are no input)."""
    try:
        if not folder.is_dir() or not path.is_file():
            return False
        target, root = path.resolve(), folder.resolve()
    except OSError:
        return False
    if not target.is_relative_to(root) or target.suffix.lower() in _REPORT_SUFFIXES:
        return False
    # a job file in the folder is read only as the job: the callback's, which diagnose takes
    # when --config names none; another (a patch written earlier) may be written again
    return target.suffix.lower() not in (".yaml", ".yml") or target.name == JOB_FILE


def _check_outputs(
    metrics: Path,
    config: Path | None,
    previous: Path | Sequence[Path] | None,
    output: Path | None,
    patched: Path | None,
    plots_dir: Path | None = None,
) -> dict[str, Path]:
    """Refuse, before any work, an output that would overwrite an input or that is no place
    for a file (see resources.destination); the checked destinations by flag."""
    earlier = [previous] if isinstance(previous, Path) else list(previous or [])
    inputs = [p for p in (metrics, config, *earlier) if p is not None]
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
            if _inside_run_folder(path, src):
                raise InputError(
                    f"{flag} {path}: an existing file inside the input folder {src}, which "
                    "the run may be read from; expected a new path or a report file "
                    "(inputs are never overwritten)"
                )
        out[flag] = destination(flag, path)
    if (
        output is not None
        and patched is not None
        and out["--output"] == out["--patched-config"]
        and not written_through(out["--output"])
    ):
        raise InputError(f"--patched-config {patched}: the same file as --output")
    if plots_dir is not None:
        out["--plots-dir"] = destination("--plots-dir", plots_dir, want_dir=True)
    if patched is not None and config is None:
        raise InputError(
            f"--patched-config: needs --config JOB.yaml (the file to patch) or a run folder "
            f"holding the TRL callback's {JOB_FILE}"
        )
    return out


def staged_report(
    d: Diagnosis, fmt: str, stem: str, out_dir: Path | None, flag: str
) -> tuple[str, list[tuple[str, Path, bytes]]]:
    """The report's text and its pictures as (flag, destination, bytes), drawn in memory:
    nothing lands beside the report until every output of the call is ready (write_all)."""
    if out_dir is None:
        return render(d, fmt, stem=stem), []
    charts: dict[str, str] = {}
    text = render(d, fmt, out_dir=out_dir, stem=stem, charts=charts)
    pictures = [(flag, out_dir / name, without_surrogates(charts[name]).encode("utf-8"))
                for name in sorted(charts)]  # fmt: skip
    return text, pictures


_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def echo(text: str, err: bool = False) -> None:
    """`text` on stdout (stderr) as click.echo writes it: ANSI escapes dropped unless the
    stream is a terminal."""
    out = sys.stderr if err else sys.stdout
    if not (hasattr(out, "isatty") and out.isatty()):
        text = _ANSI.sub("", text)
    out.write(text)
    out.flush()


def execute(
    metrics: Path,
    config: Path | None = None,
    sets: list[str] | None = None,
    format: ReportFormat = ReportFormat.markdown,
    output: Path | None = None,
    patched_config: Path | None = None,
    previous: Sequence[Path] | None = None,
    fail_on: FailOn = FailOn.error,
    training_samples: int | None = None,
    ignore: list[str] | None = None,
    plots_dir: Path | None = None,
    no_plots: bool = False,
    names: dict[str, str] | None = None,
    gpus: int | None = None,
    gpu_hour_price: float | None = None,
    currency: str | None = None,
    reading: Reading | None = None,
) -> int:
    """Diagnose, write the report (and the charts, and the patched job), return the exit code.

    `names`: paths the report names otherwise (a platform job's log and settings, fetched into a
    private folder, are named by the job). `reading`: the read of `metrics`, started by the
    caller (advisor.reading)."""
    if training_samples is not None and training_samples < 1:
        raise InputError(f"--training-samples: expected a positive integer, got {training_samples}")
    # The file a patch is written from: --config, else the job file the TRL callback left
    # beside the run (patched only: the judgement reads the run's own record of its settings).
    source = config if config is not None or patched_config is None else job_beside(metrics)
    from advisor.cost import check_price

    check_price(gpus, gpu_hour_price, currency)  # a bad flag refused before any work
    dests = _check_outputs(metrics, source, previous, output, patched_config, plots_dir)
    out_dir = None
    if not no_plots and format == ReportFormat.markdown:
        # a report written through to a stream (/dev/null, stdout) has no folder for pictures
        beside = output is not None and not written_through(dests["--output"])
        out_dir = dests.get("--plots-dir") or (dests["--output"].parent if beside else None)
    stem = output.stem if output is not None else "report"
    with without_cyclic_gc():
        if reading is None:
            # the read starts before the API's import (the rulebooks' models, the engine), the
            # report's renderer and the job file's parse, which it overlaps (advisor.reading)
            reading = Reading(metrics)
            reading.start(alongside=True)
        from advisor.api import diagnose_job, file_changes

        d, job = diagnose_job(
            reading,
            config,
            sets or (),
            previous,
            training_samples,
            ignore=ignore or (),
            alongside=_templates(format),
        )
        if names:
            d = _renamed(d, names)
            if config is not None and str(config) in names:  # a private file: no place in it
                d = dataclasses.replace(
                    d,
                    patch_diff=None,
                    config_findings=[
                        dataclasses.replace(c, line=None) for c in d.config_findings
                    ],
                )
        if gpus is not None or gpu_hour_price is not None or currency is not None:
            from advisor.cost import with_price

            d = with_price(d, gpus, gpu_hour_price, currency)
        if (unjudged := no_metric_read(d.run)) is not None:
            raise InputError(unjudged)
        # Everything is computed before anything is written: a failure leaves nothing behind.
        text, items = staged_report(
            d, format.value, stem, out_dir, "--plots-dir" if plots_dir else "--output"
        )
    if patched_config is not None:
        # Written even when nothing changes, so a CI step can always resubmit PATH.
        changes = file_changes(d.patch)
        # from the job file as the diagnosis read it: not read or parsed again
        patched = _patched(job.loaded.file or source, changes)
        items.append(("--patched-config", dests["--patched-config"], patched))
    if output is not None:
        items.append(("--output", dests["--output"], text.encode("utf-8")))
    write_all(items)
    if output is None:
        echo(text)
    said = [f"report written to {output}"] if output is not None else []
    if patched_config is not None:
        said.append(f"patched job written to {patched_config}")
        if source is not config:
            said[-1] += f" (from {source})"
    if said:
        from advisor.i18n import localise_diagnosis, say, t
        from advisor.report.markdown import verdict  # (a report on stdout says none)

        # one line for the person at the terminal; stdout stays the report's (or empty); said
        # in the user's language (the verdict as the report says it, the rest from
        # rulebook/i18n/messages.yaml)
        line = "; ".join(said)
        line = say(f"{line[:1].upper()}{line[1:]}.")
        echo(f"rl-advisor: {verdict(localise_diagnosis(d))}{t(' ')}{line}\n", err=True)
    return int(exit_code(d, fail_on))


def _templates(format: ReportFormat) -> Callable[[], object] | None:
    """The report's templates made ready while the run is read (advisor.reading): its renderer
    imported and its environment made now; the templates loaded (from jinja2's bytecode cache)
    by diagnose_job, alongside the job file's parse."""
    if format == ReportFormat.json:
        return None
    if format == ReportFormat.markdown:
        from advisor.report import markdown, templating

        env, names = templating.environment(), markdown.TEMPLATES
    else:
        from advisor.report import html

        env, names = html.environment(), ("report.html.j2",)
    return lambda: [env.get_template(name) for name in names]


def _renamed(d: Diagnosis, names: dict[str, str]) -> Diagnosis:
    """`d` with each path of `names` said as its name (the run's source, its warnings, the
    patch's diff, the assumptions and the config findings' messages)."""

    def said(text: str) -> str:
        for path, name in names.items():
            text = text.replace(path, name)
        return text

    run = d.run
    if run is not None:
        run = dataclasses.replace(
            run, source=said(run.source), warnings=[said(w) for w in run.warnings]
        )
    return dataclasses.replace(
        d,
        run=run,
        patch_diff=said(d.patch_diff) if d.patch_diff is not None else None,
        assumptions=[said(a) for a in d.assumptions],
        config_findings=[
            dataclasses.replace(c, message=said(c.message)) for c in d.config_findings
        ],
    )


def _patched(config: Path | JobFile | None, changes: dict[str, object]) -> bytes:
    from advisor.config import patched_text

    source = getattr(config, "path", config)  # a JobFile's path
    try:
        return without_surrogates(patched_text(config, changes)).encode("utf-8")
    except InputError:
        raise
    except Exception as err:  # a job shape the patcher cannot place the change in
        raise InputError(
            f"--patched-config: cannot apply {', '.join(changes)} to {source} "
            f"({type(err).__name__}: {err}); expected hyper_parameters as a mapping"
        ) from None
