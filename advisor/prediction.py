"""What the advisor says of one run, as the accuracy harness scores it: its alarms (findings
at warning or above active at the run's end), its recovered episodes, how the run ended and
where the patch's one change comes from. `predict` runs `advisor.api.diagnose`; a run it
cannot judge is a Prediction with an error, never an abort.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from advisor.api import diagnose
from advisor.types import Diagnosis, InputError

ALARM_SEVERITIES = frozenset({"warning", "error"})
# The rows of the guide's troubleshooting table (knowledge.md §4), in its order: the order the
# harness lists the symptoms in. Which symptoms are scored is the rulebook's to say.
GUIDE_ORDER = ("P1", "P2", "P3", "KL0", "P4", "SLOW", "OOM", "P9", "P6")


@cache
def symptom_ids() -> tuple[str, ...]:
    """The scored symptoms: the rulebook's alarms (rules at warning or error), the guide's rows
    in the guide's order, then the others in the rulebook's."""
    from advisor.engine import load_symptom_rules

    alarms = [r.id for r in load_symptom_rules().rules if r.severity in ALARM_SEVERITIES]
    guide = [g for g in GUIDE_ORDER if g in alarms]
    return (*guide, *(a for a in alarms if a not in guide))


@dataclass
class Alarm:
    id: str
    severity: str
    onset_step: int | None
    detected_step: int | None
    recovered: bool = False  # an episode over before the end: `severity` is the one it had


@dataclass
class Prediction:
    run_id: str
    alarms: list[Alarm] = field(default_factory=list)  # every finding; info ones are not alarms
    status: str = ""
    error: str | None = None  # the advisor could not judge the run (counts as no alarm)
    ending: str | None = None  # how the run ended, as the report says (RunEnding.kind)
    patch_from: str | None = None  # the finding the one change of the patch comes from

    @property
    def alarm_ids(self) -> set[str]:
        """Ids alarmed at the run's end (recovered episodes are no alarm)."""
        return {a.id for a in self.alarms if a.severity in ALARM_SEVERITIES and not a.recovered}

    @property
    def found_ids(self) -> set[str]:
        """Ids alarmed or recovered: the symptoms the advisor reported seeing."""
        return {a.id for a in self.alarms if a.severity in ALARM_SEVERITIES}

    def alarm(self, sid: str) -> Alarm | None:
        """The alarm (or recovered episode) that scores `sid` when it fired more than once:
        the earliest onset."""
        hits = [a for a in self.alarms if a.id == sid and a.severity in ALARM_SEVERITIES]
        hits.sort(key=lambda a: (a.onset_step is None, a.onset_step or 0))
        return hits[0] if hits else None



Predictor = Callable[[Path, Path | None], Prediction]


def predict(metrics: Path, config: Path | None) -> Prediction:
    """Run the advisor (advisor.api.diagnose) on one run; errors become a Prediction.error."""

    run_id = metrics.parent.name if metrics.is_file() else metrics.name
    try:
        d = diagnose(metrics, config=config)
    except InputError as err:
        return Prediction(run_id, error=f"input: {_first_line(err)}")
    except Exception as err:  # the harness scores the tool; a crash is a result, not an abort
        return Prediction(run_id, error=f"{type(err).__name__}: {_first_line(err)}")
    return prediction_of(d, run_id)


def prediction_of(d: Diagnosis, run_id: str) -> Prediction:
    """What a diagnosis says, as the harness scores it (also for a Diagnosis made online)."""
    pred = Prediction(run_id, status=str(d.status))
    if d.run is not None and d.run.ending is not None:
        pred.ending = d.run.ending.kind
    if d.patch is not None and d.patch.kind != "none":
        pred.patch_from = (d.patch.from_finding or "").upper() or None
    for f in d.findings:
        was = f.recovered_from if f.recovered_from is not None else f.severity
        sev = str(getattr(was, "value", was))
        pred.alarms.append(
            Alarm(f.id.upper(), sev, f.onset_step, f.detected_step, f.recovered_from is not None)
        )
    return pred


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else ""
