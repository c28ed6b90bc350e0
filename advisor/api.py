"""The public API: `diagnose` one run, `validate` one job file, `diagnose_many` in a process pool.

Each is a pure function of its inputs (files + arguments -> Diagnosis): that is what lets the
batch API fan out over processes now and over a cluster framework later (design.md).
A diagnosis resolves the job once (`resolve_job`) and hands it on: the judgement, the config
rules, the advice and the patch all read the same layered values and their origins.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import math
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from advisor import lazy
from advisor._version import __version__
from advisor.config import (
    JobFile,
    LoadedConfig,
    load_config,
    patched_text,
    read_job_file,
)
from advisor.dialect import Speaker, framework_assumed, framework_of_run
from advisor.i18n import t
from advisor.ingest.frame import has_epoch, trl_without_kl
from advisor.reading import Reading
from advisor.runfacts import concrete_fallback, run_facts
from advisor.static import (
    check,
    compare_previous,
    compare_profile,
    fmt,
    model_scale,
    rulebook,
    scale_caps,
    sort_findings,
)
from advisor.types import RUN_FILE, Diagnosis, Finding, InputError, Run, Severity

# Hyperparameters whose value changes a conclusion, and what it changes (for the assumptions).
# the notes that say the algorithm was a default (this module's, the engine's)
_ALGORITHM_ASSUMED = ("algorithm is not in the job file nor the log", "algorithm unknown:")
_WEIGHS_ON = {
    "eval_steps": "the warm-up (eval_steps x 3 steps) and the onset tolerance",
    "algorithm": "the clip-fraction and KL thresholds (they differ for GSPO / GRPO / DAPO)",
    "learning_rate": "the learning_rate the advice computes",
    "kl_loss_coef": "the kl_loss_coef the advice computes, and the KL findings",
    "n_epochs": "the overfitting advice",
    "max_length": "the patched max_length",
    "save_strategy": "the checkpoint advice",
    "save_steps": "the checkpoint advice",
    "save_total_limit": "the checkpoint advice",
}
# The series the report draws besides each finding's own metrics.
_ALWAYS_DRAWN = ("reward_mean", "val_reward")


def _rules() -> Any:
    """The symptom rulebook (cached per file by the engine, so a batch worker reads it once),
    with the user's own overrides (advisor.userconf: rl-advisor.toml, --rules-config)."""
    from advisor.engine import load_symptom_rules
    from advisor.userconf import rules_for_run

    return rules_for_run(load_symptom_rules())


@dataclasses.dataclass(frozen=True)
class Job:
    """The job a diagnosis is about, resolved once from the job file, the run's hints and
    --set (`config.load_config` layers them, each value with its origin), and handed on.

    `hp` / `origin` are what the advice, the config rules and the report use. The judgement
    reads `judged_hp` / `judged_origin`: the same values but for the hints that only the
    advice may start from (`advice_hints`: TRL's beta 0 read from a log without KL, see
    `frame.trl_without_kl`), which it sees as their platform defaults; and an algorithm the
    log's verl adv_estimator says where neither the file nor --set names one (`run_algorithm`:
    None, the neutral thresholds, for PPO with a critic). `run` is the run with
    every hint it gave, as the report shows it. `run_framework`: the framework the run's log
    comes from (dialect.framework_of_run). `framework_assumed`: the values that framework had by
    its own defaults (dialect.framework_assumed) where nothing else gave them."""

    loaded: LoadedConfig
    run: Run
    advice_hints: Mapping[str, Any]
    judged_hp: Mapping[str, Any]
    judged_origin: Mapping[str, str]
    run_framework: str

    @property
    def framework(self) -> str:
        """The dialect the advice speaks: the job file's (file_framework), else the run's."""
        return file_framework(self.loaded) or self.run_framework

    @property
    def hp(self) -> dict[str, Any]:
        return dict(self.loaded.hyper_parameters)

    @property
    def origin(self) -> dict[str, str]:
        return dict(self.loaded.origin)

    @property
    def framework_assumed(self) -> dict[str, Any]:
        return dict(self.loaded.defaults_taken)


def resolve_job(
    run: Run,
    config: Path | str | None = None,
    sets: Sequence[str] = (),
    training_samples: int | None = None,
    job_file: JobFile | None = None,
) -> Job:
    """The job of `run` (see Job), loaded once; `job_file`: `config` already read and parsed."""
    advice: dict[str, Any] = {}
    if "kl_loss_coef" not in run.config_hints and trl_without_kl(run.frame.columns):
        advice["kl_loss_coef"] = 0.0  # the advice starts from TRL's beta 0; the judgement not
    framework = framework_of_run(run.format, run.frame.columns, run.config_hints)
    assumed = framework_assumed(framework, run.config_hints)
    hints = {**run.config_hints, **advice}
    loaded = _load_config_once(config, sets, hints, training_samples, assumed, job_file)
    judged_hp: dict[str, Any] = dict(loaded.hyper_parameters)
    judged_origin = dict(loaded.origin)
    said = run_algorithm(run.config_hints, judged_origin)
    if said is not None:
        # the log's estimator names none of the platform's algorithms: the thresholds that
        # depend on the algorithm are those that fit it (its own family or the neutral
        # defaults), not the platform default's (GSPO)
        judged_hp["algorithm"] = said[1]
    specs = rulebook().hyper_parameters
    for key in advice:
        # taken only where neither the file nor --set gives the value (config._layer_hints):
        # without the hint the platform default stands there
        if judged_origin.get(key) == "run":
            judged_hp[key] = specs[key].default
            judged_origin[key] = "default"
    shown = dataclasses.replace(run, config_hints=hints) if advice else run
    return Job(loaded, shown, advice, judged_hp, judged_origin, framework)


# The jobs loaded during one batch (diagnose_many), by arguments: the runs of a batch share
# their job file and mostly their hints (the same trainer logs the same settings), so the file
# (and the training set it names, whose lines are counted) is read and layered once per
# distinct set of hints in each worker instead of once per run. A batch judges its inputs as
# they were when it started; a single diagnose reads them afresh.
_BATCH: dict[str, Any] = {"id": None, "loaded": {}}


def _load_config_once(
    config: Path | str | None,
    sets: Sequence[str] = (),
    hints: Mapping[str, Any] | None = None,
    training_samples: int | None = None,
    defaults: Mapping[str, Any] | None = None,
    job_file: JobFile | None = None,
) -> LoadedConfig:
    """`load_config`, remembered within a batch (see _BATCH); each caller gets its own copy."""
    if _BATCH["id"] is None:
        return load_config(config, sets, hints, training_samples, defaults, job_file)
    key = (
        str(config) if config is not None else None,
        tuple(sets),
        repr(sorted((hints or {}).items())),  # equal reprs: equal plain values
        training_samples,
        repr(sorted((defaults or {}).items())),
    )
    loaded = _BATCH["loaded"].get(key)
    if loaded is None:
        loaded = _BATCH["loaded"][key] = load_config(
            config, sets, hints, training_samples, defaults
        )
    return copy.deepcopy(loaded)


Previous = Path | str | Sequence[Path | str] | None


def previous_paths(previous: Previous) -> list[Path]:
    """`--previous` as a list of paths, oldest first (one path or several)."""
    if previous is None:
        return []
    if isinstance(previous, str | Path):
        return [Path(previous)]
    return [Path(p) for p in previous]


def previous_hp(previous: Previous) -> dict[str, Any] | None:
    """The settings the last of `--previous` is known to have run with, or None."""
    from advisor.history import read_history

    rounds = read_history(previous_paths(previous), _load_config_once)
    return dict(rounds[-1].hp) if rounds else None


def config_findings_of(loaded: Any) -> list[Any]:
    """The job config's findings: those found while loading it, then the static rules'."""
    origin = dict(getattr(loaded, "origin", {}) or {})
    # Without a job file or --set, the platform defaults are assumptions, not the user's job:
    # a rule that only looks at assumed values (save_total_limit 1, the default model's
    # memory) says nothing about this run, so it is left out rather than reported.
    no_job = not any(o in ("file", "set") for o in origin.values())
    seen: set[tuple[str, tuple[str, ...]]] = set()
    out = []
    for f in [*loaded.findings, *check(loaded)]:
        key = (f.id, tuple(f.params))
        if no_job and f.params and all(origin.get(p, "default") == "default" for p in f.params):
            continue
        if key not in seen:  # load-time and static rules may both report one problem
            seen.add(key)
            out.append(f)
    return out


def _silenced(ignore: Sequence[str]) -> set[str]:
    """Finding ids to drop (symptom or config rules), checked against both rulebooks."""
    ids = {i.strip().upper() for raw in ignore for i in raw.split(",") if i.strip()}
    if not ids:
        return ids
    rules = _rules()
    known = {k.upper() for k in rules.by_id} | {r.id.upper() for r in rulebook().rules}
    unknown = sorted(ids - known)
    if unknown:
        raise InputError(
            f"--ignore {', '.join(unknown)}: expected finding ids of the rulebooks "
            f"(symptoms {', '.join(sorted(rules.by_id))}; config C001...; see `rl-advisor rules`)"
        )
    return ids


def validate_job(
    path: Path | None,
    sets: Sequence[str] = (),
    training_samples: int | None = None,
    profile: str | None = None,
    hints: Mapping[str, object] | None = None,
    previous: Path | None = None,
) -> tuple[LoadedConfig, Diagnosis]:
    """Load, check and wrap as a Diagnosis (run null, findings empty): the one verdict on a job
    config, what `rl-advisor validate` prints and `advisor.validate` returns. Status "issues"
    when a finding is a warning or an error, else "healthy"."""
    loaded = load_config(path, sets, hints=hints, training_samples=training_samples)
    found = loaded.findings + check(loaded)
    notes = list(loaded.notes)
    model = loaded.config.model
    kind, params_b, active_b = model_scale(model)
    if model and kind != "unknown" and model.strip().lower() not in rulebook().models:
        size = f"{fmt(params_b)}B" if params_b else "size unknown"
        active = f", {fmt(active_b)}B active" if active_b else ""
        notes.append(f"model {model} read from its name as {kind} ({size}{active}): a heuristic")
    if profile:
        found += compare_profile(loaded, profile)
    if previous is not None:
        found += compare_previous(loaded, load_config(previous))
    found = sort_findings(found)
    worst = max((f.severity.rank for f in found), default=-1)
    diag = Diagnosis(
        tool={"name": "rl-advisor", "version": __version__},
        status="issues" if worst >= Severity.warning.rank else "healthy",
        config_findings=found,
        hyper_parameters=dict(loaded.hyper_parameters),
        assumptions=notes,
    )
    return loaded, diag


def validate(
    config: Path | str | None,
    sets: Sequence[str] = (),
    *,
    training_samples: int | None = None,
    profile: str | None = None,
    previous: Path | str | None = None,
) -> Diagnosis:
    """The static checks of a job file alone: the diagnose object with `run` None, and the
    verdict `rl-advisor validate` gives (`validate_job`, its one home)."""
    _, diagnosis = validate_job(
        Path(config) if config is not None else None,
        sets,
        training_samples=training_samples,
        profile=profile,
        previous=Path(previous) if previous is not None else None,
    )
    return diagnosis


def diagnose(
    metrics: Path | str,
    config: Path | str | None = None,
    sets: Sequence[str] = (),
    previous: Previous = None,
    training_samples: int | None = None,
    ignore: Sequence[str] = (),
) -> Diagnosis:
    """Read a run, judge it against its job config, and plan the one change to make.

    `ignore`: finding ids to silence (e.g. ["SLOW"]); they are dropped before the remedy, so
    the patch never follows a silenced finding. `previous`: the earlier runs of the same job,
    oldest first (advisor.history): what was tried, for the step's size and direction."""
    _silenced(ignore)  # a typo in --ignore is an unusable call: said before any work
    return diagnose_reading(
        Reading(Path(metrics)), config, sets, previous, training_samples, ignore
    )


def diagnose_reading(
    reading: Reading,
    config: Path | str | None = None,
    sets: Sequence[str] = (),
    previous: Previous = None,
    training_samples: int | None = None,
    ignore: Sequence[str] = (),
) -> Diagnosis:
    """`diagnose` of a run whose read has started (advisor.reading): the engine is imported
    while it reads. The command starts the read before it imports this module."""
    return diagnose_job(reading, config, sets, previous, training_samples, ignore)[0]


def diagnose_job(
    reading: Reading,
    config: Path | str | None = None,
    sets: Sequence[str] = (),
    previous: Previous = None,
    training_samples: int | None = None,
    ignore: Sequence[str] = (),
    alongside: Callable[[], object] | None = None,
) -> tuple[Diagnosis, Job]:
    """`diagnose_reading`, with the Job it resolved: its job file is read and parsed once
    (`loaded.file`), for the diff and for the patched copy the command writes. `alongside`:
    the caller's own work that needs no run (the report's templates), done while it reads."""
    silenced = _silenced(ignore)
    from advisor.history import read_history

    # unreadable: refused before any work; a batch loads each job file once
    history = read_history(previous_paths(previous), _load_config_once)
    # Everything the judgement and the advice import, imported before a read that starts
    # here (advisor.reading); then the job file is parsed while the run is read.
    from advisor import cost, engine, outlook, remedy  # noqa: F401
    from advisor.checkpoints import checkpoint_advice  # noqa: F401

    if config is not None:
        lazy.yaml  # noqa: B018
    early: JobFile | None = None
    # (a batch loads its job files once: nothing to parse alongside)
    parse = Path(config) if config is not None and _BATCH["id"] is None else None
    if reading.start(alongside=parse is not None or alongside is not None):
        if parse is not None:
            # A file that cannot be read is said after the run (read_job_file again, below):
            # a run that cannot be read is said before anything about its job.
            with contextlib.suppress(InputError):
                early = read_job_file(parse)
        if alongside is not None:
            alongside()
        from advisor.book import load_shipped

        load_shipped()  # the shipped rulebooks, loaded while the run is read
    run = _with_run_file(reading.metrics, reading.run())
    job = resolve_job(run, config, sets, training_samples, early)
    # origin lets the engine treat a defaulted eval_steps as unknown (and say what it assumed)
    judgement = engine.judge_run(run, job.judged_hp, rules=_rules(), origin=job.judged_origin)
    diagnosis = assemble(
        job.run,
        job.hp,
        judgement,
        config_findings=config_findings_of(job.loaded),
        origin=job.origin,
        config_given=config is not None,
        history=history,
        training_samples=training_samples,
        silenced=silenced,
        caps=scale_caps(job.loaded),
        framework=job.framework,
        framework_facts=job.loaded.facts,
        framework_assumed=job.framework_assumed,
    )
    return with_file_diff(diagnosis, job.loaded.file or config), job




def _with_run_file(metrics: Path, run: Run) -> Run:
    """`run` with what the live run knew (the callback's `rl-advisor-run.json` in the output
    dir: the TrainingArguments' hints and the framework) joined to its hints, so a later
    diagnose of the output dir judges with what the live Advisor judged with."""
    start = metrics if metrics.is_dir() else metrics.parent
    for folder in (start, start.parent, start.parent.parent):
        path = folder / RUN_FILE
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            note = f"{path}: not readable JSON; the run's arguments are unknown"
            return dataclasses.replace(run, warnings=[*run.warnings, note])
        hints = data.get("hints") if isinstance(data, dict) else None
        if not isinstance(hints, dict):
            return run
        joined = {**run.config_hints, **hints}
        args = data.get("training_arguments")
        sampled = args.get("temperature") if isinstance(args, dict) else None
        if isinstance(sampled, int | float) and not isinstance(sampled, bool):
            joined.setdefault("temperature", float(sampled))  # a record from before the hint
        if isinstance(data.get("framework"), str):
            joined.setdefault("framework", data["framework"])
        return dataclasses.replace(run, config_hints=joined)
    return run


def file_framework(loaded: Any) -> str | None:
    """The dialect a job file asks for: its framework's (a TRL or verl file), the platform's
    for the platform's job, None without a file (then the run's log tells)."""
    if getattr(loaded, "source", None) is None:
        return None
    return getattr(loaded, "framework", None) or "platform"


def file_changes(patch: Any) -> dict[str, Any]:
    """What a patched copy of the user's file gets: the framework's keys for a TRL or verl
    file, the guide's parameters for the platform's job; only the change, never an assumed
    value."""
    if patch is None:
        return {}
    if patch.framework in ("trl", "verl") and patch.settings:
        return dict(patch.settings)
    return {c.param: c.to for c in patch.changes}


def with_file_diff(diagnosis: Diagnosis, config: Path | str | JobFile | None) -> Diagnosis:
    """Add the patch as a diff of the user's job file (diagnose and the online Advisor alike);
    a JobFile (the job file as loaded) is not read again."""
    if config is not None and diagnosis.patch is not None and diagnosis.patch.changes:
        source = config if isinstance(config, JobFile) else Path(config)
        try:
            diagnosis.patch_diff = _file_diff(source, file_changes(diagnosis.patch))
        except InputError as err:  # a job shape the change has no place in: said, not raised
            diagnosis.patch.notes.append(f"Not applied to the job file: {err}")
    return diagnosis


def _file_diff(source: Path | JobFile, changes: Mapping[str, Any]) -> str:
    """The patch as the unified diff of the user's own job file (its layout and comments)."""
    import difflib  # (only a patch is diffed)

    path = source.path if isinstance(source, JobFile) else source
    new = patched_text(source, changes).splitlines()  # (as write_patched would write it)
    raw = source.raw if isinstance(source, JobFile) else path.read_text(encoding="utf-8")
    old = raw.splitlines()
    lines = difflib.unified_diff(old, new, path.name, f"{path.name} (patched)", n=2)
    return "\n".join(line.rstrip("\n") for line in lines)


def assemble(
    run: Run,
    hp: Mapping[str, Any],
    judgement: Any,
    config_findings: Sequence[Any] = (),
    origin: Mapping[str, str] | None = None,
    previous: Mapping[str, Any] | None = None,
    training_samples: int | None = None,
    rules: Any = None,
    silenced: Iterable[str] = (),
    config_given: bool = False,
    caps: Mapping[str, float] | None = None,
    framework: str | None = None,
    framework_facts: Mapping[str, Any] | None = None,
    framework_assumed: Mapping[str, Any] | None = None,
    history: Sequence[Any] = (),
) -> Diagnosis:
    """Judgement + job -> Diagnosis: remedy, checkpoint advice, assumptions, drawn series.

    Split from `diagnose` so the online Advisor can build the same object from its Monitor.
    """
    from advisor import remedy
    from advisor.checkpoints import checkpoint_advice

    silenced = set(silenced)
    findings: list[Finding] = [f for f in judgement.findings if f.id.upper() not in silenced]
    framework = framework or framework_of_run(run.format, run.frame.columns, run.config_hints)
    origin = _sampling_origin(run, framework_facts, origin)
    speaker = Speaker(framework, hp, {**run.config_hints, **(framework_facts or {})}, origin)
    facts = run_facts(run)
    status = judgement.status
    if status == "issues" and not findings:  # everything that fired was silenced
        status = "healthy"
    known = (framework_facts or {}).get("temperature")  # the job file's, over the log's
    if isinstance(known, int | float) and not isinstance(known, bool):
        facts["temperature"] = float(known)
    rules = rules if rules is not None else _rules()
    planned = remedy.plan(
        findings,
        hp,
        rules,
        previous,
        caps=caps,
        into_range=config_given,
        speaker=speaker,
        facts=facts,
        history=history,
        # A run with no warning or error is handed no change: an info finding's advice (a
        # switch to DAPO for a run that saturates) is for a next run, and may make this one sick.
        healthy=not any(f.severity.rank >= Severity.warning.rank for f in findings),
    )
    info = dataclasses.replace(run.info(), framework=framework)
    save_hp, save_notes = _save_settings(hp, origin or {})
    # Only a run that completed saved at its last step; a crash or a cut log did not (or may not).
    completed = info.ending is not None and info.ending.kind == "completed"
    checkpoint = checkpoint_advice(
        _points(run, "val_reward"), save_hp, info.last_step, training_samples, completed
    )
    if checkpoint is None or "best_step" not in checkpoint:
        save_notes = []  # no checkpoint advice rests on them
    said_algorithm = run_algorithm(run.config_hints, origin or {})
    estimator_skips, estimator_notes = _estimator(
        run.config_hints.get("adv_estimator"), said_algorithm
    )
    config_findings = overruled(config_findings, findings, status)
    said = spoken(planned, speaker, facts, origin or {})
    from advisor import cost, outlook  # the price of waste, the trends' crossings

    gpus = cost.gpus_of_job(hp, origin, speaker.framework)
    # the thresholds a trend is projected to: the shipped rulebook's (cached)
    algorithm = said_algorithm[1] if said_algorithm else str(hp.get("algorithm") or "").lower()
    goals = outlook.targets(_rules(), algorithm or None, hp, origin)
    return Diagnosis(
        tool={"name": "rl-advisor", "version": __version__},
        run=info,
        status=status,
        warmup_steps=judgement.warmup_steps,
        framework=speaker.framework,
        assumed_parameters=sorted(k for k in hp if (origin or {}).get(k, "default") == "default"),
        findings=_onsets_in_epochs(said.findings, run),
        config_findings=[  # said in the run's framework's names, as the findings are
            dataclasses.replace(c, message=speaker.text(c.message))
            for c in config_findings
            if c.id.upper() not in silenced | estimator_skips
        ],
        patch=said.patch,
        assumptions=[
            speaker.text(a)
            for a in _assumptions(
                judgement, hp, origin, planned, config_given, speaker, framework_assumed or {}
            )
            # the log's estimator said the algorithm: no default was assumed for it
            if not (said_algorithm and a.startswith(_ALGORITHM_ASSUMED))
        ]
        + [
            speaker.text(a)
            for a in save_notes
            + estimator_notes
        ]
        + ([f"Silenced with --ignore: {', '.join(sorted(silenced))}."] if silenced else []),
        next_steps=_restart_step(planned.findings, checkpoint) + planned.next_steps,
        history=_history_said(history, hp),
        checkpoint=_checkpoint_said(checkpoint, speaker),
        hyper_parameters=dict(hp),
        series=_series(run, planned.findings),
        unread_keys=_unread_keys(run),
        lacking_metrics=lacking_metrics(info.metrics, rules),
        cost=cost.of_run(run, said.findings, checkpoint, gpus, "job" if gpus else None),
        forecasts=outlook.forecasts(run, said.findings, goals),
    )


def _onsets_in_epochs(findings: list[Finding], run: Run) -> list[Finding]:
    """Each finding's onset, detection and clearing also as the epochs the log printed there,
    when its records count epochs (the steps are the records' numbers, the detectors' axis)."""
    if run.epochs is None:
        return findings
    return [
        dataclasses.replace(
            f,
            onset_epoch=run.epoch_of(f.onset_step),
            detected_epoch=run.epoch_of(f.detected_step),
            cleared_epoch=run.epoch_of(f.cleared_step),
        )
        for f in findings
    ]


def _unread_keys(run: Run) -> list[str]:
    """The log's metric names no canonical metric was read from (kept in the frame as they are);
    a log that counts epochs has its epoch read as its axis."""
    names = unread_names(run.frame.columns)
    return [n for n in names if not has_epoch([n])] if run.epochs is not None else names


def unread_names(names: Iterable[str]) -> list[str]:
    """Of a log's metric names, those no canonical metric is read from, sorted (a live run's
    callback meets them in another order than a reader of the file it leaves)."""
    from advisor.ingest.names import CANONICAL_SET, canonical_name, is_eval_key

    return sorted(
        c
        for c in names
        if c != "step"
        and c not in CANONICAL_SET
        and canonical_name(c) is None
        and not (is_eval_key(c) and "reward" in c.lower())
    )


def lacking_metrics(metrics: Sequence[str], rules: Any) -> dict[str, list[str]]:
    """Each canonical metric the run lacks -> the symptom rules that read it (what logging it
    would let the advisor judge)."""
    from advisor.book.symptoms import walk

    have = set(metrics)
    out: dict[str, list[str]] = {}
    for rule in getattr(rules, "rules", ()):  # a caller's own rulebook may be partial
        for _, leaf in walk(rule.when):
            if have & set(leaf.metrics):  # one of its alternatives is logged
                continue
            for m in leaf.metrics:
                if rule.id not in out.setdefault(m, []):
                    out[m].append(rule.id)
    return {m: ids for m, ids in sorted(out.items()) if ids}


def overruled(
    config_findings: Sequence[Any], findings: Sequence[Finding], status: str
) -> list[Any]:
    """The job's config findings beside what the run showed. A rule with `shows_as` is a
    prior (a value typical of other runs: an SFT-level learning rate diverges, a KL coefficient
    far above the typical one pins the policy); a run judged healthy past its warm-up that
    shows none of those symptoms, not even as a passed episode, has answered it for these
    settings. Its finding drops to info, says so, and suggests no value: a typical value
    offered against a run that learns can only make it worse (an lr of 5e-6 instead of the
    5e-3 a tiny model learns with leaves it flat)."""
    if status != "healthy":
        return list(config_findings)
    shown = {f.id for f in findings}
    rules = {r.id: r for r in rulebook().rules}
    out = []
    for c in config_findings:
        rule = rules.get(c.id)
        if rule is None or not rule.shows_as or shown & set(rule.shows_as):
            out.append(c)
            continue
        ids = ", ".join(rule.shows_as)
        out.append(
            dataclasses.replace(
                c,
                severity=Severity.info,
                suggested=None,
                message=f"{c.message}; but this run is healthy past its warm-up with none of "
                f"{ids}, what this setting is expected to cause: the run overrules the prior "
                "here (info; no change suggested while it learns)",
            )
        )
    return out


def _history_said(history: Sequence[Any], hp: Mapping[str, Any]) -> list[dict[str, Any]]:
    if not history:
        return []
    from advisor.history import said

    return said(history, hp)


def _sampling_origin(
    run: Run, framework_facts: Mapping[str, Any] | None, origin: Mapping[str, str] | None
) -> dict[str, str]:
    """`origin` with the sampling temperature's, a framework's own setting: the job file's,
    else the run's record of it (a known value, not an assumed one)."""
    out = dict(origin or {})
    for where, values in (("file", framework_facts or {}), ("run", run.config_hints)):
        value = values.get("temperature")
        if isinstance(value, int | float) and not isinstance(value, bool):
            out.setdefault("temperature", where)
    return out


def spoken(planned: Any, speaker: Any, facts: Mapping[str, Any], origin: Mapping[str, str]) -> Any:
    """The remedy's plan said in the run's dialect: advice sentences and changes in the
    framework's names (each change marked when its old value is assumed), the fallback made
    concrete with what the run showed, and a patch that carries only known values and the
    change, with the framework's settings and override line beside it."""

    def action(a: Any, fid: str | None = None) -> Any:
        if a is None:
            return None
        advice = speaker.text(a.advice)
        extra = concrete_fallback(fid, dict(facts)) if fid else None
        if extra:
            advice = advice.rstrip().rstrip(".") + ". " + extra
        return dataclasses.replace(a, advice=advice, changes=[speaker.said(c) for c in a.changes])

    findings = []
    for f in planned.findings:
        fb_id = f.id if f.action is not None and f.action.kind == "fallback" else None
        findings.append(
            dataclasses.replace(
                f, action=action(f.action, fb_id), fallback=action(f.fallback, f.id)
            )
        )
    patch = planned.patch
    if patch is not None:
        changes = [speaker.said(c) for c in patch.changes]
        changed = {c.param for c in changes}
        known = {
            k: v
            for k, v in patch.hyper_parameters.items()
            if k in changed or origin.get(k, "default") != "default"
        }
        assumed = [c.param for c in changes if c.assumed]
        notes = [speaker.text(n) for n in patch.notes] + [
            f"{speaker.name(p)}: its old value is assumed (not in the file nor the log); the "
            "new value is computed from it, so check it before resubmitting."
            for p in assumed
        ]
        patch = dataclasses.replace(
            patch,
            changes=changes,
            hyper_parameters=known,
            notes=notes,
            assumed=assumed,
            framework=speaker.framework,
            settings=speaker.settings(changes) if speaker.native else {},
            override=speaker.override_line(changes) if speaker.native else None,
            override_args=speaker.override_args(changes),
        )
    return SimpleNamespace(findings=findings, patch=patch)


def _checkpoint_said(checkpoint: dict[str, Any] | None, speaker: Any) -> dict[str, Any] | None:
    if checkpoint is None or "advice" not in checkpoint:
        return checkpoint
    return {**checkpoint, "advice": speaker.text(checkpoint["advice"])}


def run_algorithm(
    hints: Mapping[str, Any], origin: Mapping[str, str]
) -> tuple[str, str | None] | None:
    """(what the run is, the platform algorithm whose thresholds fit it, None for the neutral
    defaults) when the log's verl adv_estimator says the algorithm and neither the job file nor
    `--set` gives one the platform knows; None otherwise (the job's or the hints' algorithm
    stands)."""
    from advisor.ingest.hints import estimator_of

    if origin.get("algorithm", "default") != "default":
        return None
    return estimator_of(hints.get("adv_estimator"))


def _estimator(
    name: Any, said: tuple[str, str | None] | None = None
) -> tuple[set[str], list[str]]:
    """The config rules a run's own advantage estimator makes moot (a critic's GAE needs no
    group of rollouts), and the note that says what the run is and which thresholds it got
    (`said`: run_algorithm's answer, when the log's estimator stands for the algorithm)."""
    book = rulebook()
    notes = []
    if said is not None:
        what, family = said
        notes.append(
            f"algorithm read from the log: adv_estimator {name} is {what}; "
            f"{family.upper()}'s thresholds where a rule has its own for it."
            if family
            else f"algorithm read from the log: adv_estimator {name} is {what}; each threshold "
            "that depends on the algorithm takes its algorithm-neutral default "
            "(rulebook/symptoms.yaml), neither GSPO's, GRPO's nor DAPO's."
        )
    if not isinstance(name, str) or name not in book.other_estimators:
        return set(), notes
    skipped = set(book.group_rules)
    return skipped, [
        *notes,
        f"adv_estimator {name} (from the log): not one of the platform's group-relative "
        f"algorithms (GSPO / GRPO / DAPO), so {', '.join(sorted(skipped))} (group and KL "
        "checks for those) were not applied.",
    ]


def _save_settings(
    hp: Mapping[str, Any], origin: Mapping[str, str]
) -> tuple[dict[str, Any], list[str]]:
    """The save settings the checkpoint advice uses, and what was assumed about them.

    A log that gives the trainer's save interval (verl's save_freq) but no strategy saved by
    steps; the platform's default strategy (epoch) would misread it."""
    out, notes = dict(hp), []
    if origin.get("save_steps") == "run" and origin.get("save_strategy", "default") == "default":
        out["save_strategy"] = "steps"
        notes.append(
            f"The log gives save_steps={hp.get('save_steps')} (the trainer's save interval) but "
            "no save_strategy: saving by steps was assumed for the checkpoint advice."
        )
    if origin.get("save_total_limit", "default") == "default":
        notes.append(
            f"save_total_limit is not in the job file nor the log: {hp.get('save_total_limit')!r}"
            " (the platform default) was assumed, so which checkpoints survived is a guess."
        )
    return out, notes


# Findings whose action restarts from a checkpoint before the onset (knowledge.md §4: DIV,
# and NAN in this project's rulebook), and what to call the onset.
_RESTART = {"NAN": "the first non-finite metrics", "DIV": "the divergence"}


def _restart_step(findings: Sequence[Finding], checkpoint: Mapping[str, Any] | None) -> list[str]:
    """Where to restart from after a collapse: the last kept checkpoint before the onset of
    the collapse the run ended in (an earlier one it recovered from is past)."""
    found = [f for f in findings if f.id in _RESTART and f.onset_step is not None]
    f = next((f for f in found if f.cleared_step is None), found[0] if found else None)
    if f is None or f.onset_step is None:
        return []
    what, onset = t(_RESTART[f.id]), f.onset_step
    kept = (checkpoint or {}).get("kept_steps")
    if kept is None:
        return [
            t(
                "Restart from the last checkpoint saved before step {onset} ({what}); the save "
                "settings do not tell which one survived.",
                onset=onset,
                what=what,
            )
        ]
    before = [s for s in kept if s < onset]
    if before:
        return [
            t(
                "Restart from the checkpoint of step {step}, the last kept one before {what} "
                "at step {onset}.",
                step=before[-1],
                what=what,
                onset=onset,
            )
        ]
    return [
        t(
            "No kept checkpoint precedes {what} at step {onset}: restart from the base model (or "
            "the previous run's output).",
            what=what,
            onset=onset,
        )
    ]


def _columns(run: Run, metric: str) -> tuple[list[int], list[float]]:
    """The steps and the values (as floats) where both are logged; NaN is a value."""
    if metric not in run.frame.columns or "step" not in run.frame.columns:
        return [], []
    # Plain Series access: a select/drop_nulls query costs ~1 ms of planning per call. The
    # filter and the cast run in polars: a Python loop over 200,000 rows costs ~50 ms.
    col = run.frame.get_column(metric)
    if not col.dtype.is_numeric():
        return [], []
    steps = run.frame.get_column("step")
    logged = col.is_not_null() & steps.is_not_null()
    if not logged.all():
        col, steps = col.filter(logged), steps.filter(logged)
    return steps.to_list(), col.cast(lazy.polars.Float64).to_list()


def _points(run: Run, metric: str) -> list[tuple[int, float]]:
    return list(zip(*_columns(run, metric), strict=True))


def _series(
    run: Run, findings: Iterable[Finding]
) -> dict[str, tuple[list[int], list[float | None]]]:
    wanted = [*_ALWAYS_DRAWN, *(e.metric for f in findings for e in f.evidence)]
    out: dict[str, tuple[list[int], list[float | None]]] = {}
    for m in dict.fromkeys(wanted):
        steps, values = _columns(run, m)
        if steps:
            out[m] = (steps, cast("list[float | None]", values))
    return out


def _assumptions(
    judgement: Any,
    hp: Mapping[str, Any],
    origin: Mapping[str, str] | None,
    planned: Any,
    config_given: bool = False,
    speaker: Speaker | None = None,
    framework_assumed: Mapping[str, Any] | None = None,
) -> list[str]:
    """What was assumed, and which conclusions that weakens (contract: never invent silently):
    every value the patch or a next step starts from included; `framework_assumed`: values the
    run's framework had by its own defaults (dialect.framework_assumed)."""
    assumed = framework_assumed or {}
    out = list(getattr(judgement, "assumptions", []) or [])
    origin = origin or {}
    patch = planned.patch
    patched = {c.param for c in (patch.changes if patch else [])}
    advised = patched | {
        c.param for f in planned.findings for a in (f.action, f.fallback) if a for c in a.changes
    }
    from_log: list[str] = []
    how = "add it to the job file or pass" if config_given else "pass --config JOB.yaml or"
    for param, weighs in _WEIGHS_ON.items():
        where, value = origin.get(param), hp.get(param)
        # the engine has said it (its "eval_steps unknown: assumed 25 ..." replaces the default)
        if any(a.startswith(f"{param} ") or (param in a and str(value) in a) for a in out):
            continue
        if where == "default" and param in assumed:
            title = speaker.info.title if speaker is not None else "the framework"
            out.append(
                f"{param} is not in the job file nor the log: {title}'s default {value!r} was "
                f"assumed, which weakens {weighs}; {how} --set {param}=..."
            )
        elif where == "run" and not config_given:  # with a file, a clash is config finding C006
            from_log.append(f"{param}={value!r} ({_weighs(param, weighs, hp, origin)})")
        elif where == "default" and (param in advised or param in ("eval_steps", "algorithm")):
            out.append(
                f"{param} is not in the job file nor the log: the platform default {value!r} was "
                f"assumed, which weakens {weighs}; {how} --set {param}=..."
            )
    for param in sorted(advised - set(_WEIGHS_ON)):  # any other value the advice starts from
        if origin.get(param, "default") == "default" and param in hp:
            which = "the patch starts" if param in patched else "the advice starts"
            out.append(
                f"{param} is not in the job file nor the log: {which} from the platform "
                f"default {hp[param]!r}; check it, {how} --set {param}=..."
            )
    if from_log:
        out.append(
            "Without --config, these were taken from the run's log: " + "; ".join(from_log) + "."
        )
    return out


def _weighs(param: str, weighs: str, hp: Mapping[str, Any], origin: Mapping[str, str]) -> str:
    """What a value taken from the log weighs on; for max_length, what it is made of."""
    prompt, total = hp.get("max_prompt_length"), hp.get(param)
    if param != "max_length" or not isinstance(prompt, int) or not isinstance(total, int):
        return weighs
    default = " (the platform default)" if origin.get("max_prompt_length") == "default" else ""
    parts = f"the response cap the log shows, {total - prompt}, plus max_prompt_length {prompt}"
    return f"{weighs}: {parts}{default}"


# ----------------------------------------------------------------------------- batch
def _init_worker() -> None:
    # One polars thread per worker process: the pool already uses every core.
    os.environ.setdefault("POLARS_MAX_THREADS", "1")


def _one(args: tuple[Any, ...]) -> Diagnosis | InputError:
    """One run of batch `args[0]`: diagnose(*args[1:]), or the InputError it raised."""
    batch, call = args[0], args[1:]
    if _BATCH["id"] != batch:
        _BATCH.update(id=batch, loaded={})
    try:
        return diagnose(*call)
    except InputError as err:
        return err


def _in_process(jobs: Sequence[tuple[Any, ...]]) -> list[Diagnosis | InputError]:
    try:
        return [_one(j) for j in jobs]
    finally:  # what the batch loaded is not kept for this process's later calls
        _BATCH.update(id=None, loaded={})


def diagnose_many(
    paths: Sequence[Path | str],
    config: Path | str | None = None,
    sets: Sequence[str] = (),
    previous: Path | str | None = None,
    training_samples: int | None = None,
    workers: int | None = None,
) -> list[Diagnosis | InputError]:
    """Diagnose many runs with one job config, in order; an unusable run yields its InputError
    in its place instead of stopping the batch. `workers` defaults to the CPU count; 1 runs
    in this process. Workers are spawned (not forked: polars' thread pool does not survive a
    fork) and each diagnosis is independent, so the same function scales out to a cluster."""
    batch = uuid.uuid4().hex  # the scope of what its workers load once (see _BATCH)
    jobs = [(batch, str(p), config, tuple(sets), previous, training_samples, ()) for p in paths]
    n = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    if n == 1:
        return _in_process(jobs)
    ctx = lazy.multiprocessing.get_context("spawn")
    chunk = max(1, math.ceil(len(jobs) / (n * 8)))
    try:
        with lazy.pool.ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker) as pool:
            return list(pool.map(_one, jobs, chunksize=chunk))
    except lazy.pool.BrokenProcessPool:
        # A spawned worker cannot re-import a `__main__` read from stdin; run here instead.
        return _in_process(jobs)
