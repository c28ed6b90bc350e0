"""`rl-advisor validate JOB.yaml`: check a job config before it costs GPU hours."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.api import validate_job
from advisor.book.config import rulebook
from advisor.book.expressions import fmt
from advisor.cli import Exit, FailOn, OutputFormat, app
from advisor.report.templating import render
from advisor.types import Severity

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from advisor.config import LoadedConfig
    from advisor.types import ConfigFinding, Diagnosis

_JOB_HELP = (
    "Job config: the SDK's job file, the guide's YAML layout, run() keywords (YAML/JSON), a "
    "hyper_parameters dict, or a job object the platform returns."
)
_SET_HELP = (
    "Override KEY=VALUE (repeatable); KEY is a hyperparameter or a dotted path such as "
    "resources.mtu_capacity; VALUE is read as YAML."
)
_SAMPLES_HELP = "Training-set size for the cadence checks (else a local training JSONL is counted)."
_PROFILE_HELP = "Compare against a starting point: 9b-quick, 9b-full, 35b-a3b-moe."
_CONVERT_HELP = (
    "Write JOB in the platform SDK's layout (what `dashscope rl run -c` reads) to --output, "
    "then check that file."
)


@app.command("validate")
def validate(
    job: Annotated[Path, typer.Argument(help=_JOB_HELP)],
    set_: Annotated[list[str] | None, typer.Option("--set", help=_SET_HELP)] = None,
    fmt: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = (
        OutputFormat.markdown
    ),
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Exit 1 on a finding at or above this severity.")
    ] = FailOn.error,
    show_config: Annotated[
        bool, typer.Option("--show-config", help="Also print the merged config and origins.")
    ] = False,
    training_samples: Annotated[
        int | None, typer.Option("--training-samples", min=1, help=_SAMPLES_HELP)
    ] = None,
    profile: Annotated[str | None, typer.Option("--profile", help=_PROFILE_HELP)] = None,
    previous: Annotated[
        Path | None, typer.Option("--previous", help="The previous job file: flag several changes.")
    ] = None,
    convert_to: Annotated[Layout | None, typer.Option("--convert-to", help=_CONVERT_HELP)] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Where --convert-to writes the job.")
    ] = None,
) -> None:
    """Check a job config against the platform guide's rules (exit 0/1/2 like a linter)."""
    if convert_to is not None or output is not None:
        job = _convert(job, output)

    loaded, diag = validate_job(
        job, set_ or (), training_samples=training_samples, profile=profile, previous=previous
    )
    if fmt is OutputFormat.json:
        data = diag.to_dict()
        if show_config:
            data["config"] = loaded.merged()
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        typer.echo(_markdown(job, loaded, diag, show_config, len(rulebook().rules)), nl=False)
    # SystemExit, not typer.Exit: in non-standalone mode click returns typer.Exit's code
    # instead of raising it, and main() would then report 0.
    raise SystemExit(int(exit_code(diag.config_findings, fail_on)))


class Layout(StrEnum):
    sdk = "sdk"


def _convert(job: Path, output: Path | None) -> Path:
    """Write `job` in the SDK's layout to `output`; the path to check from then on."""
    from advisor.config import sdk_layout_text
    from advisor.resources import destination, write_all, written_through
    from advisor.types import InputError

    if output is None:
        raise InputError("--convert-to sdk: give --output PATH for the converted job file")
    dest = destination("--output", output)  # before any work: no place for a file is refused
    if dest.resolve() == job.resolve():
        raise InputError(f"{output}: the converted job must not overwrite {job}")
    text, notes = sdk_layout_text(job)
    write_all([("--output", dest, text.encode("utf-8"))])
    from advisor.i18n import say

    for note in notes:
        typer.echo(say(f"note: {note}"), err=True)
    typer.echo(say(f"wrote {output}: {job} in the platform SDK's layout"), err=True)
    # written through to a stream (/dev/null, stdout): nothing to read back, the job is
    # checked as given (the same values, in its own layout)
    return job if written_through(dest) else output


def exit_code(findings: Sequence[ConfigFinding], fail_on: FailOn) -> int:
    """1 when a finding is at or above --fail-on, else 0."""
    if fail_on is FailOn.never:
        return Exit.OK

    bar = Severity(fail_on.value).rank
    return Exit.FINDINGS if any(f.severity.rank >= bar for f in findings) else Exit.OK


def _markdown(
    job: Path, loaded: LoadedConfig, diag: Diagnosis, show_config: bool, n_rules: int
) -> str:

    from advisor.i18n import localise_config, say

    findings = [_view(localise_config(f), fmt) for f in diag.config_findings]
    by_sev = {s: [f for f in findings if f["severity"] == s] for s in ("error", "warning", "info")}
    merged = None
    if show_config:
        merged = loaded.merged()
        for item in merged["hyper_parameters"].values():
            item["value_text"] = fmt(item["value"])
        merged["resources_text"] = fmt(merged.get("resources") or {})
    return render(
        "validate.md.j2",
        source=str(job),
        layout=loaded.layout,
        n_rules=n_rules,
        findings=findings,
        by_severity=by_sev,
        counts={s: len(v) for s, v in by_sev.items()},
        assumptions=[say(a) for a in diag.assumptions],
        merged=merged,
        training_samples=loaded.training_samples,
    )


def _view(finding: ConfigFinding, fmt: Callable[[object], str]) -> dict[str, Any]:
    view = finding.to_dict()
    view["suggested_text"] = _suggested_text(finding, fmt)
    return view


def _suggested_text(finding: ConfigFinding, fmt: Callable[[object], str]) -> str:
    if finding.suggested is None:
        return ""
    value = fmt(finding.suggested)
    if finding.id == "C001":  # the suggestion is a key name, not a value
        return f"rename to {value}"
    params = [p for p in finding.params if p not in ("model", "mtu_spec_code")]
    return f"{params[0]}: {value}" if params else value
