"""`rl-advisor watch METRICS --config JOB.yaml`: follow a growing log and alert as it goes.

Follows a verl console log or a JSONL metrics file as `tail -F` does (partial lines wait for
their newline; rotation and truncation reopen the file from its start), prints each finding as
it fires (rich: coloured in a terminal, plain text otherwise; on stderr, so stdout carries only
the report), runs `--on-finding CMD` with the finding as JSON on stdin, and ends with the full
report when the run ends: its final status line (a clean finish ends it at once, a traceback
or an OOM within 10-60 s), a silence of 5x the longest gap seen between steps (at least 60 s:
a crash that printed nothing), no growth for `--idle` seconds, or Ctrl-C.
Exit codes as diagnose: 0 nothing at or above --fail-on, 1 something is, 2 unusable input.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding

from advisor.cli import FailOn, OutputFormat, app
from advisor.cli.diagnose import _check_outputs, exit_code, staged_report, write_all
from advisor.i18n import say, t
from advisor.ingest import is_regular, load_run
from advisor.integrations.follow import Sidecar, resolve_log
from advisor.online import Advisor
from advisor.resources import written_through
from advisor.types import Finding, InputError, no_metric_read

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
# What an alert's action may do online (contract: only safe actions are applied automatically).
_SAFETY = {"unsafe": " (advice: not applied automatically)", "display_only": " (for information)"}


class Alerts:
    """Prints findings as they fire and runs the --on-finding command."""

    def __init__(
        self,
        on_finding: str | None,
        timeout: float,
        console: Any = None,
        env: dict[str, str] | None = None,
        alerter: Any = None,
        advisor: Advisor | None = None,
    ) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.command = on_finding
        self.timeout = timeout
        self.failures = 0
        self.env = env or {}  # more variables for CMD (the platform job's id)
        self.alerter = alerter  # advisor.alerts.Alerter: Slack, Discord, a webhook, email
        self.advisor = advisor  # whose dialect the alerts' change is said in
        if alerter is not None and alerter._say is None:
            alerter._say = lambda line: self.console.print(f"[red]{escape(say(line))}[/]")

    def __call__(self, finding: Finding) -> None:
        self.show(finding)
        if self.command:
            self.run_command(finding)
        if self.alerter is not None:
            self.alerter(finding, self.advisor)

    def close(self) -> None:
        """Say the recoveries the end of the run settled and wait (bounded) for the alerts."""
        if self.alerter is None:
            return
        try:
            if self.advisor is not None:
                self.alerter.check(self.advisor, every=0)
            self.alerter.close()
        except KeyboardInterrupt:  # a second Ctrl-C: the report, without waiting for alerts
            self.console.print(f"[dim]{say('rl-advisor: alerts not waited for')}[/]")

    def show(self, f: Finding) -> None:
        # composed in English, said in the user's language (advisor.i18n)
        sev = f.severity.value
        where = f"step {f.onset_step}" if f.onset_step is not None else "end of run"
        seen = (
            f" (seen at step {f.detected_step})"
            if f.detected_step not in (None, f.onset_step)
            else ""
        )
        label = t(sev).upper()  # padded to 7 columns (a Chinese character takes two)
        self.console.print(
            f"[{_STYLE.get(sev, 'bold')}]{label}{' ' * (7 - cell_len(label))}[/] {escape(f.id)} "
            f"[bold]{escape(f.name)}[/] {escape(say(f'from {where}{seen}'))}"
        )
        for e in f.evidence[:2]:
            self.console.print(Padding(escape(say(e.summary)), (0, 0, 0, 8)))  # wraps indented
        if f.action is not None:
            safety = t(_SAFETY.get(f.action.safety, ""))
            advice = escape(say(f.action.advice))
            self.console.print(Padding(f"-> {advice}{safety}", (0, 0, 0, 8)))

    def run_command(self, f: Finding) -> None:
        """CMD gets the finding's JSON on stdin; its failure is reported, never fatal."""
        payload = f.to_json(indent=None)
        assert self.command is not None
        # the main fields as variables too, for one-line shell commands
        env = {
            **os.environ,
            "RL_ADVISOR_ID": f.id,
            "RL_ADVISOR_NAME": f.name,
            "RL_ADVISOR_SEVERITY": f.severity.value,
            "RL_ADVISOR_ONSET_STEP": "" if f.onset_step is None else str(f.onset_step),
            **self.env,
        }
        try:
            done = subprocess.run(
                self.command,
                shell=True,
                input=payload,
                text=True,
                capture_output=True,
                timeout=self.timeout,
                check=False,
                env=env,
            )
        except subprocess.TimeoutExpired:
            self._failed(f, f"timed out after {self.timeout:g} s")
            return
        except OSError as err:
            self._failed(f, str(err))
            return
        if done.returncode != 0:
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
            self._failed(f, f"exit {done.returncode}: {last[0][:200]}")

    def _failed(self, f: Finding, why: str) -> None:
        self.failures += 1
        said = say(f"rl-advisor: --on-finding command failed for {f.id}: {why}")
        self.console.print(f"[red]{escape(said)}[/]")


@app.command("watch")
def watch(
    metrics: Annotated[
        Path | None, typer.Argument(help="Log file (or run directory) being written (or --job).")
    ] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="The job YAML.")] = None,
    sets: Annotated[list[str] | None, typer.Option("--set", help="KEY=VALUE override.")] = None,
    on_finding: Annotated[
        str | None,
        typer.Option("--on-finding", help="Shell command run per finding, its JSON on stdin."),
    ] = None,
    on_finding_timeout: Annotated[
        float, typer.Option("--on-finding-timeout", min=0.1, help="Seconds before CMD is killed.")
    ] = 60.0,
    idle: Annotated[
        float,
        typer.Option(
            "--idle",
            min=0.0,
            help="End after this many seconds without growth (sooner once the steps' pace "
            "is known: 5x the longest gap between steps, at least 60 s).",
        ),
    ] = 900.0,
    poll: Annotated[
        float | None,
        typer.Option("--poll", min=0.01, help="Seconds between looks (file 1, --job 10)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the final report here.")
    ] = None,
    format: Annotated[OutputFormat, typer.Option("--format", "-f")] = OutputFormat.markdown,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Exit 1 at this severity.")] = (
        FailOn.error
    ),
    training_samples: Annotated[
        int | None, typer.Option("--training-samples", min=1, help="Epoch length for checkpoints.")
    ] = None,
    job: Annotated[
        str | None,
        typer.Option("--job", help="A platform job id: followed through its SDK until it ends."),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds a platform request may take.")
    ] = 30.0,
    alert: Annotated[
        list[str] | None,
        typer.Option(
            "--alert",
            help="Deliver each finding to slack, discord, webhook or email (repeatable); "
            "secrets from the environment (docs/online.md).",
        ),
    ] = None,
    alerts_file: Annotated[
        Path | None,
        typer.Option("--alerts", help="Alert settings file (YAML or TOML), instead of --alert."),
    ] = None,
    webhook_url: Annotated[
        str | None,
        typer.Option("--webhook-url", help="The --alert slack|discord|webhook URL (a secret)."),
    ] = None,
    alert_template: Annotated[
        Path | None,
        typer.Option("--alert-template", help="jinja2 template of --alert webhook's JSON body."),
    ] = None,
    email_to: Annotated[
        list[str] | None, typer.Option("--email-to", help="--alert email recipient (repeatable).")
    ] = None,
    alert_severity: Annotated[
        str, typer.Option("--alert-severity", help="Lowest severity alerted: info|warning|error.")
    ] = "warning",
    alert_cooldown: Annotated[
        float, typer.Option("--alert-cooldown", min=0.0, help="Seconds before a finding re-alerts.")
    ] = 600.0,
    alert_cap: Annotated[
        int, typer.Option("--alert-cap", min=0, help="Most alert messages in one run.")
    ] = 20,
) -> None:
    """Follow a growing log, alert on each finding as it fires, end with the full report."""

    if (metrics is None) == (job is None):
        raise InputError("watch: expected METRICS (a log being written) or --job JOB_ID, one")
    alerter = _alerter(
        alert, alerts_file, webhook_url, alert_template, email_to, alert_severity,
        alert_cooldown, alert_cap, f"job {job}" if job is not None else str(metrics),
    )  # fmt: skip
    if job is not None:
        code = watch_job(
            job, timeout, config, sets, on_finding, on_finding_timeout, poll or 10.0, output,
            format, fail_on, training_samples, alerter,
        )  # fmt: skip
        raise SystemExit(code)
    assert metrics is not None
    poll = poll or 1.0
    path = resolve_log(metrics)
    if os.path.lexists(path) and not is_regular(path):  # a pipe or a device never ends
        load_run(path)  # raises the reader's one-line refusal
    if output is not None and output.resolve() == path.resolve():
        raise InputError(f"--output {output}: is the log being watched; expected a new path")
    dests = _check_outputs(path, config, None, output, None)  # never overwrite an input
    kwargs: dict[str, Any] = {
        "sets": sets or (),
        "source": str(path),
        "training_samples": training_samples,
    }
    adv = Advisor.from_config(config, **kwargs) if config is not None else Advisor(**kwargs)
    alerts = Alerts(on_finding, on_finding_timeout, alerter=alerter, advisor=adv)
    sidecar = _Sidecar(path, adv, on_finding=alerts, poll=poll, idle=idle, alerter=alerter)
    said = say(f"rl-advisor: watching {path} (Ctrl-C to stop and report)")
    alerts.console.print(f"[dim]{escape(said)}[/]")
    why = sidecar.run()
    alerts.close()
    said = say(f"rl-advisor: stopped watching ({why}) after {adv.steps} steps")
    alerts.console.print(f"[dim]{escape(said)}[/]")
    if adv.steps == 0 and not path.exists():  # nothing was ever there to judge
        raise InputError(
            f"{path}: the log never appeared (watched until {why}); expected a training log "
            "being written"
        )
    if adv.steps == 0:
        # nothing followed: a file diagnose would refuse is refused here too (exit 2)

        load_run(path)
    d = adv.diagnosis()
    _report(d, output, dests, format)
    # SystemExit, not typer.Exit: in non-standalone mode click returns typer.Exit's code
    # instead of raising it, and main() would lose it (as diagnose and validate do).
    raise SystemExit(int(exit_code(d, fail_on)))


def _report(d: Any, output: Path | None, dests: dict[str, Path], format: OutputFormat) -> None:
    """The watch's final report, on stdout or into --output (with its charts); a run in which
    no canonical metric was read is refused instead (exit 2)."""
    if (unjudged := no_metric_read(d.run)) is not None:
        raise InputError(unjudged)
    beside = output is not None and not written_through(dests["--output"])  # not a stream
    out_dir = dests["--output"].parent if beside and format == OutputFormat.markdown else None
    text, items = staged_report(
        d, format.value, output.stem if output else "report", out_dir, "--output"
    )
    if output is not None:
        write_all([*items, ("--output", dests["--output"], text.encode("utf-8"))])
        typer.echo(f"rl-advisor: {say(f'report written to {output}')}", err=True)
    else:
        typer.echo(text, nl=False)


def watch_job(
    job_id: str,
    timeout: float,
    config: Path | None,
    sets: list[str] | None,
    on_finding: str | None,
    on_finding_timeout: float,
    poll: float,
    output: Path | None,
    format: OutputFormat,
    fail_on: FailOn,
    training_samples: int | None,
    alerter: Any = None,
) -> int:
    """`watch --job`: the job followed through the platform's SDK (its status, then its log's
    new lines, every `poll` seconds) until it ends or Ctrl-C, each finding said as it fires,
    then the full report, judged with the job's own settings unless --config names its file.
    A FAILED job exits 1 at least."""
    from advisor import platform
    from advisor.book.config import rulebook

    client = platform.Platform(timeout)
    job = client.job(job_id)
    alerts = Alerts(
        on_finding, on_finding_timeout, env={"RL_ADVISOR_JOB_ID": job_id}, alerter=alerter
    )
    lines = 0
    with tempfile.TemporaryDirectory(prefix="rl-advisor-job-") as tmp:
        folder = Path(tmp)
        dests = _check_outputs(folder / "job.log", config, None, output, None)
        settings = config
        if settings is None:
            settings = folder / "job.yaml"
            known = rulebook().hyper_parameters
            settings.write_text(platform.job_file(job, known.__contains__), encoding="utf-8")
        adv = Advisor.from_config(
            settings, sets=sets or (), source=f"job {job_id}", training_samples=training_samples
        )
        alerts.advisor = adv
        sidecar = _Sidecar(folder / "job.log", adv, on_finding=alerts, poll=poll, alerter=alerter)
        watching = say(
            f"rl-advisor: watching job {job_id} ({job.status}) on the platform (Ctrl-C to stop "
            "and report)"
        )
        alerts.console.print(f"[dim]{escape(watching)}[/]")
        why = "the job ended"
        try:
            for seen, new in client.follow(job_id, poll):
                job = seen
                lines += len(new)
                sidecar.feed_lines(new)
        except KeyboardInterrupt:  # the job goes on, the watch ends with its report
            why = "interrupted"
        sidecar.end()
    alerts.close()
    stopped = say(f"rl-advisor: stopped watching ({why}: {job.status}) after {adv.steps} steps")
    alerts.console.print(f"[dim]{escape(stopped)}[/]")
    if adv.steps == 0:
        if lines == 0:
            raise platform.no_log_yet(job)
        raise InputError(
            f"job {job_id}: {lines} log lines, no training step in them; expected a training log"
        )
    d = adv.diagnosis()
    _report(d, output, dests, format)
    said = platform.status_line(job)
    if said:
        typer.echo(f"rl-advisor: {say(said)}", err=True)
    code = int(exit_code(d, fail_on))
    if job.status == platform.FAILED and fail_on != FailOn.never:
        code = max(code, 1)
    return code


@dataclass
class _Sidecar(Sidecar):
    """The Sidecar that also says, after each batch of lines, the alerted findings that
    cleared (Slack, Discord, a webhook, email)."""

    alerter: Any = None

    def _feed(self, lines: list[str], last: bool = False) -> None:
        super()._feed(lines, last)
        if self.alerter is not None and lines:
            self.alerter.check(self.advisor)


def _alerter(
    kinds: list[str] | None,
    alerts_file: Path | None,
    webhook_url: str | None,
    template: Path | None,
    email_to: list[str] | None,
    severity: str,
    cooldown: float,
    cap: int,
    run: str,
) -> Any:
    """The watch's Alerter from --alert flags, --alerts FILE or the alerts table of the
    per-user settings file (rl-advisor.toml or pyproject.toml's [tool.rl-advisor], from the
    working directory up); None when none asks for alerts."""
    from advisor import alerts

    mine = None if kinds or alerts_file is not None else alerts.user_file(Path.cwd())
    if not kinds and alerts_file is None and mine is None:
        for flag, given in (
            ("--webhook-url", webhook_url), ("--alert-template", template), ("--email-to", email_to)
        ):  # fmt: skip
            if given:
                raise InputError(f"{flag}: expected --alert KIND with it")
        return None
    if kinds and alerts_file is not None:
        raise InputError("--alert and --alerts FILE: expected one of them")
    if severity not in ("info", "warning", "error"):
        raise InputError(f"--alert-severity {severity}: expected info, warning or error")
    if kinds:
        channels = alerts.channels_from_flags(
            kinds, os.environ, webhook_url=webhook_url, template=template, email_to=email_to or ()
        )
        return alerts.Alerter(channels, min_severity=severity, cooldown=cooldown, cap=cap, run=run)
    source = alerts_file or mine
    assert source is not None
    kwargs = alerts.load_config(source, os.environ, section=alerts_file is None)
    if kwargs is None:
        return None
    return alerts.Alerter(**kwargs, run=run)
