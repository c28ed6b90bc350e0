"""A plain callable for any orchestrator: `hook(step, metrics) -> list[Finding]`.

The orchestrator's loop calls the hook after each step; the hook never raises into the training
loop (an advisor bug must not kill a run): it logs the error once and keeps going. `stop` tells
the loop whether an error-severity finding asked it to stop, when `stop_on` is set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from advisor.online import Advisor
from advisor.resources import write_text_atomic
from advisor.types import Finding, Severity

log = logging.getLogger("rl_advisor")


def severity_at_least(finding: Finding, level: str | Severity | None) -> bool:
    """True when `finding` is at or above `level` (None: never)."""
    if level is None or level == "never":
        return False
    return finding.severity.rank >= Severity(level).rank


class Hook:
    """`hook(step, metrics)`: feeds an Advisor, remembers whether to stop, never raises."""

    def __init__(
        self,
        advisor: Advisor | None = None,
        *,
        stop_on: str | Severity | None = None,
        on_finding: Callable[[Finding], None] | None = None,
        report_path: str | Path | None = None,
        alerts: Any = None,
    ) -> None:
        self.advisor = advisor if advisor is not None else Advisor()
        # Slack, Discord, a webhook, email (advisor.alerts): an Alerter, its settings file or
        # its keywords; delivered on a background thread, so a step never waits on a network
        self.alerts: Any = None
        if alerts is not None:
            from advisor.alerts import alerter_from

            self.alerts = alerter_from(alerts, run=self.advisor.source)
        self.stop_on = stop_on
        self.on_finding = on_finding
        self.report_path = Path(report_path) if report_path is not None else None
        self.stop = False  # set when a finding at or above stop_on fired
        self.stopped_by: Finding | None = None
        self.errors = 0

    def __call__(
        self, step: int, metrics: Mapping[str, Any], *, partial: bool = False
    ) -> list[Finding]:
        try:
            new = self.advisor.observe(step, metrics, partial=partial)
        except Exception as err:  # never break the training loop over the advisor
            self._error("observe", err)
            return []
        self._handle(new)
        if self.alerts is not None:
            self.alerts.check(self.advisor)  # no cost while no alerted finding is open
        return new

    def flush(self) -> list[Finding]:
        """Judge what `partial=True` held back."""
        try:
            new = self.advisor.flush()
        except Exception as err:
            self._error("flush", err)
            return []
        self._handle(new)
        return new

    def _handle(self, new: Sequence[Finding]) -> None:
        for finding in new:
            log.warning(
                "rl-advisor: %s %s (%s) from step %s: %s",
                finding.id,
                finding.name,
                finding.severity.value,
                finding.onset_step,
                finding.action.advice if finding.action else "see the report",
            )
            if self.on_finding is not None:
                try:
                    self.on_finding(finding)
                except Exception as err:
                    self._error("on_finding", err)
            if self.alerts is not None:
                self.alerts(finding, self.advisor)  # never raises
            if not self.stop and severity_at_least(finding, self.stop_on):
                self.stop, self.stopped_by = True, finding

    def _error(self, where: str, err: Exception) -> None:
        self.errors += 1
        if self.errors <= 3:  # one bad metric dict per step must not flood the log
            log.error("rl-advisor: %s failed: %s: %s", where, type(err).__name__, err)

    def finish(self, ending: Any = None) -> Path | None:
        """Close the advisor (the run ended) and write the report if `report_path` is set."""
        self.close(ending)
        return self.write()

    def close(self, ending: Any = None) -> None:
        try:
            self._handle(self.advisor.close(ending))
        except Exception as err:
            self._error("close", err)
        if self.alerts is not None:  # the recoveries the end settled, then the queue drained
            self.alerts.check(self.advisor, every=0)
            self.alerts.close()

    def write(self) -> Path | None:
        """Write the report (Markdown at report_path, JSON beside it); None if not written."""
        if self.report_path is None:
            return None
        try:
            return write_report(self.advisor, self.report_path)
        except Exception as err:
            self._error("report", err)
            return None


def write_report(advisor: Advisor, path: str | Path) -> Path:
    """Write the Markdown report at `path` and the JSON one beside it (`.json`), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, advisor.report(format="markdown", out_dir=path.parent))
    write_text_atomic(path.with_suffix(".json"), advisor.report(format="json"))
    return path


def make_hook(
    config: str | Path | None = None,
    *,
    hyper_parameters: Mapping[str, Any] | None = None,
    sets: Sequence[str] = (),
    stop_on: str | None = None,
    report_path: str | Path | None = None,
    on_finding: Callable[[Finding], None] | None = None,
    alerts: Any = None,
) -> Hook:
    """A ready hook: `make_hook("job.yaml", stop_on="error")(step, metrics)`; `alerts`: an
    alerts file, an `advisor.alerts.Alerter` or its keywords (docs/online.md)."""
    if config is not None:
        adv = Advisor.from_config(config, sets=sets, hyper_parameters=hyper_parameters)
    else:
        adv = Advisor(hyper_parameters=hyper_parameters, sets=sets)
    return Hook(adv, stop_on=stop_on, on_finding=on_finding, report_path=report_path, alerts=alerts)
