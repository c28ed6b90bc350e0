"""`rl-advisor diff RUN_A RUN_B`: what differs between two runs of a job, and whether the
comparison says what changed it.

Each run is diagnosed as `diagnose` would (advisor.api) and compared on four counts:

- the config delta: every setting known for at least one run whose values differ, said in
  each run's dialect (TRL's field names for a TRL run, verl's Hydra keys for a verl run, the
  guide's for the platform); a value only assumed (a default) is marked so;
- where each core metric parts ways: the difference a - b of the two curves at their common
  steps, averaged over a window of `w` steps (an eighth of them, 3 to 20), beyond `Z` times
  the noise such a mean has, in the same direction for `w` window positions in a row (so over
  2w - 1 steps). The noise is the runs' own, read from a - b itself (`mean_noise`: how much a
  w-step mean moves from one block of w steps to the next; a trend the runs share cancels in
  a - b). The step given is the first of the first such window. On two runs of one trend with
  independent AR(1) noise, 200 pairs of 50 to 1,000 steps, a parting is found in at most 1 of
  100 for phi 0 to 0.6 (tests/diff); noise as slow as phi 0.9 gives 1 in 8 at 50 steps;
- the findings each run has and the other does not (by rule id);
- whether the comparison is confounded: more than one setting that changes the training
  differs (how often a run is validated or saved does not count), so no single change explains
  what the metrics show;
- the prompts the runs score most apart, where both runs' folders hold per-prompt records
  (verl's generation dumps, TRL's completion logs, rlprobe's samples: advisor.prompts). A
  listing, not a test: it does not change the exit code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor import prompts as records
from advisor.types import Change, Diagnosis

SCHEMA_VERSION = 1
# the curves compared, in the order they are reported; the KL is the first of its names both
# runs have
CORE_METRICS: tuple[tuple[str, ...], ...] = (
    ("reward_mean",),
    ("val_reward",),
    ("kl_ref", "ppo_kl"),
    ("entropy",),
    ("response_length",),
    ("grad_norm",),
)
# settings that change what a run logs or keeps, not what it learns: listed, never a confound
OBSERVING = frozenset({"eval_steps", "save_steps", "save_strategy", "save_total_limit"})
Z = 4.0  # the mean difference over a window must exceed Z sigma of such a mean
WINDOW_MIN, WINDOW_MAX = 3, 20
MIN_BLOCKS = 5
TEST = (
    "the difference of the two curves at their common steps, averaged over w steps, exceeds "
    f"{Z:g} sigma of such a mean, in the same direction for w windows in a row; sigma from the "
    "runs' own noise: how a w-step mean of their difference moves from one block of w steps "
    "to the next (1.4826 x MAD / sqrt 2)"
)


@dataclass(slots=True)
class Side:
    """One run as the diff shows it."""

    source: str
    framework: str
    steps: int
    status: str
    findings: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class Setting:
    """One setting whose values differ: the guide's name, and each run's key and value."""

    param: str
    a: dict[str, Any]
    b: dict[str, Any]


@dataclass(slots=True)
class Parting:
    """Where one core metric parts ways between the runs (`step` None: it does not)."""

    metric: str  # the advisor's (canonical) name
    compared: int  # common steps with a finite value in both
    logged: dict[str, str] = field(default_factory=dict)  # "a"/"b" -> the name in the run's log
    step: int | None = None
    higher: str | None = None  # "a" or "b": whose curve is above from the parting on
    gap: float | None = None  # mean of a - b from the parting on
    noise: float | None = None  # sigma of a `window`-step mean of a - b
    window: int | None = None
    note: str = ""


@dataclass(slots=True)
class Prompts:
    """The per-prompt records of each run and the comparisons of those that pair up."""

    sources_a: list[records.Source] = field(default_factory=list)
    sources_b: list[records.Source] = field(default_factory=list)
    compared: list[records.Comparison] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources_a": [_source_dict(s) for s in self.sources_a],
            "sources_b": [_source_dict(s) for s in self.sources_b],
            "compared": [
                {
                    "a": c.a.where,
                    "b": c.b.where,
                    "prompts_a": c.prompts_a,
                    "prompts_b": c.prompts_b,
                    "common": c.common,
                    "differ": c.differ,
                    "prefix": c.prefix,
                    "top": [
                        {
                            "prompt": g.text,
                            "score_a": _finite(g.score_a),
                            "score_b": _finite(g.score_b),
                            "gap": _finite(g.gap),
                            "higher": "a" if g.gap > 0 else "b",
                            "samples_a": g.samples_a,
                            "samples_b": g.samples_b,
                            "step_a": g.step_a,
                            "step_b": g.step_b,
                        }
                        for g in c.top
                    ],
                }
                for c in self.compared
            ],
            "score": PROMPT_SCORE,
            "note": self.note,
        }


PROMPT_SCORE = (
    "a prompt's score in a run is the mean score of its samples at the latest step both runs "
    "scored it at, else at each run's latest; a verl dump's `score`, the sum of a TRL "
    "completion's reward columns, an rlprobe sample's `reward_total`"
)


def _source_dict(s: records.Source) -> dict[str, Any]:
    return {
        "kind": s.kind,
        "where": s.where,
        "files": len(s.files),
        "files_read": s.read,
        "samples": len(s.records),
        "prompts": len({r.key for r in s.records}),
        "skipped": s.skipped,
    }


@dataclass(slots=True)
class RunDiff:
    a: Side
    b: Side
    settings: list[Setting]
    confounded: bool
    metrics: list[Parting]
    only_a: list[dict[str, Any]]
    only_b: list[dict[str, Any]]
    both: list[str]
    prompts: Prompts = field(default_factory=Prompts)

    @property
    def training(self) -> list[Setting]:
        """The settings that differ and change what the run learns (not only what it logs)."""
        return [s for s in self.settings if s.param not in OBSERVING]

    @property
    def differ(self) -> bool:
        """The runs differ in what they show: a curve parts ways or a finding is not shared."""
        return bool(self.only_a or self.only_b or any(m.step is not None for m in self.metrics))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "diff",
            "a": _side_dict(self.a),
            "b": _side_dict(self.b),
            "config_delta": [
                {"param": s.param, "a": s.a, "b": s.b, "trains": s.param not in OBSERVING}
                for s in self.settings
            ],
            "settings_changed": len(self.settings),
            "training_settings_changed": len(self.training),
            "confounded": self.confounded,
            "metrics": [
                {
                    "metric": m.metric,
                    "logged_as": m.logged,
                    "parted_at": m.step,
                    "higher": m.higher,
                    "gap": _finite(m.gap),
                    "noise": _finite(m.noise),
                    "window": m.window,
                    "steps_compared": m.compared,
                    "note": m.note,
                }
                for m in self.metrics
            ],
            "test": TEST,
            "findings": {"only_a": self.only_a, "only_b": self.only_b, "both": self.both},
            "prompts": self.prompts.to_dict(),
            "differ": self.differ,
        }


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _side_dict(s: Side) -> dict[str, Any]:
    return {
        "source": s.source,
        "framework": s.framework,
        "steps": s.steps,
        "status": s.status,
        "findings": [f["id"] for f in s.findings],
    }


# ----------------------------------------------------------------------------- the test
def mean_noise(values: Sequence[float], w: int) -> float:
    """The noise of a mean over `w` consecutive steps of `values`: the difference of each
    such mean and the next one w steps on (two neighbouring blocks: batch means, which keep
    the noise's correlation from step to step that a smooth metric such as entropy has),
    1.4826 x the MAD of those differences, over sqrt 2. Differencing takes out a trend; the
    MAD, a parting that covers only some of them. NaN with fewer than MIN_BLOCKS blocks."""
    np = _np()
    x = np.asarray(values, dtype=float)
    if len(x) // w < MIN_BLOCKS:
        return math.nan
    means = np.convolve(x, np.ones(w) / w, mode="valid")
    d = means[w:] - means[:-w]
    mad = float(np.median(np.abs(d - np.median(d))))
    return 1.4826 * mad / math.sqrt(2)


def parting(
    metric: str,
    a: tuple[Sequence[int], Sequence[float]],
    b: tuple[Sequence[int], Sequence[float]],
) -> Parting:
    """Where curve `a` and curve `b` part ways beyond their noise (module docstring)."""
    np = _np()
    fa = {s: v for s, v in zip(*a, strict=True) if v is not None and math.isfinite(v)}
    fb = {s: v for s, v in zip(*b, strict=True) if v is not None and math.isfinite(v)}
    common = sorted(set(fa) & set(fb))
    out = Parting(metric=metric, compared=len(common))
    w = max(WINDOW_MIN, min(WINDOW_MAX, len(common) // 8))
    if len(common) < 2 * w:
        out.note = f"too few common steps ({len(common)}) to judge"
        return out
    d = np.array([fa[s] - fb[s] for s in common])
    sigma = mean_noise(d, w)  # the noise of a w-step mean of a - b
    if math.isnan(sigma):
        out.note = f"too few steps for the noise of a {w}-step mean"
        return out
    out.noise, out.window = sigma, w
    if sigma == 0:  # two noiseless curves: any difference that lasts is a parting
        sigma = float(np.finfo(float).eps) * max(1.0, float(np.max(np.abs(d))))
    means = np.convolve(d, np.ones(w) / w, mode="valid")  # means[i]: steps i .. i + w - 1
    beyond = np.sign(means) * (np.abs(means) > Z * sigma)
    run = 0
    for i in range(len(beyond)):
        run = (
            run + 1
            if beyond[i] != 0 and (run == 0 or beyond[i] == beyond[i - 1])
            else (1 if beyond[i] != 0 else 0)
        )
        if run == w:
            first = i - w + 1
            out.step = int(common[first])
            tail = d[first:]
            out.gap = float(np.mean(tail))
            out.higher = "a" if out.gap > 0 else "b"
            return out
    return out


def _np() -> Any:
    from advisor import lazy

    return lazy.numpy


# ----------------------------------------------------------------------------- the runs
@dataclass(slots=True)
class _Read:
    d: Diagnosis
    job: Any


def _read(metrics: Path, config: Path | None) -> _Read:
    from advisor.api import diagnose_job
    from advisor.reading import Reading
    from advisor.types import InputError, no_metric_read

    d, job = diagnose_job(Reading(metrics), config)
    if (unjudged := no_metric_read(d.run)) is not None:
        raise InputError(unjudged)
    return _Read(d, job)


def _said(r: _Read, param: str, value: Any) -> dict[str, Any]:
    """A setting's value in the run's dialect: its key there, the value the run has for it
    (converted where the framework counts it otherwise), known or assumed."""
    from advisor.dialect import Speaker

    speaker = Speaker(r.job.framework, r.job.hp, r.job.loaded.facts, r.job.origin)
    known = r.job.origin.get(param, "default") != "default"
    keys = speaker.keys(Change(param=param, from_=value, to=value))
    if keys and keys[0].from_ is not None:
        return {"key": keys[0].key, "value": keys[0].from_, "known": known}
    # no key in the framework, or one counted otherwise with a value the run does not show
    # (TRL's gradient_accumulation_steps for the batch size): the guide's name and value
    return {"key": param, "value": value, "known": known}


def _settings(a: _Read, b: _Read) -> list[Setting]:
    ha, hb = a.job.hp, b.job.hp
    oa, ob = a.job.origin, b.job.origin
    out = []
    for param in sorted(set(ha) | set(hb)):
        va, vb = ha.get(param), hb.get(param)
        if va == vb:
            continue
        if oa.get(param, "default") == "default" and ob.get(param, "default") == "default":
            continue  # two defaults: a difference of the assumptions, not of the runs
        out.append(Setting(param, _said(a, param, va), _said(b, param, vb)))
    return out


def _series(r: _Read, names: Sequence[str]) -> tuple[str, tuple[list[int], list[float]]] | None:
    frame = r.job.run.frame
    for name in names:
        if name in frame.columns:
            cols = frame.select("step", name).drop_nulls()
            return name, (cols["step"].to_list(), [float(v) for v in cols[name].to_list()])
    return None


def _logged(r: _Read, canonical: str) -> str:
    """The name the run's log gives a canonical metric (its highest-ranked key present:
    TRL's `reward`, verl's `critic/rewards/mean`), else the canonical name."""
    from advisor.ingest.names import lookup, val_rank

    keys = []
    for col in r.job.run.frame.columns:
        if col == canonical:
            continue
        if canonical == "val_reward":
            rank = val_rank(col)
        else:
            hit = lookup(col)
            rank = hit[1] if hit is not None and hit[0] == canonical else None
        if rank is not None:
            keys.append((rank, col))
    return min(keys)[1] if keys else canonical


def _findings(d: Diagnosis) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for f in d.findings:
        if f.id not in seen:
            seen[f.id] = {
                "id": f.id,
                "name": f.name,
                "severity": f.severity.value,
                "onset_step": f.onset_step,
                "recovered": f.recovered_from is not None,
            }
    return list(seen.values())


def diff_runs(
    run_a: Path,
    run_b: Path,
    config_a: Path | None = None,
    config_b: Path | None = None,
    top_prompts: int = records.TOP,
) -> RunDiff:
    """Diagnose both runs and compare them (module docstring); `top_prompts` prompts listed
    (0: no per-prompt records read)."""
    a, b = _read(run_a, config_a), _read(run_b, config_b)
    metrics = []
    for names in CORE_METRICS:
        # the first name both runs logged: a KL to the reference is never set against the
        # KL between the old and the new policy
        both = [n for n in names if _series(a, (n,)) and _series(b, (n,))]
        if not both:
            continue
        sa, sb = _series(a, both[:1]), _series(b, both[:1])
        assert sa is not None and sb is not None
        p = parting(both[0], sa[1], sb[1])
        p.logged = {"a": _logged(a, both[0]), "b": _logged(b, both[0])}
        metrics.append(p)
    fa, fb = _findings(a.d), _findings(b.d)
    ids_a, ids_b = {f["id"] for f in fa}, {f["id"] for f in fb}
    settings = _settings(a, b)
    return RunDiff(
        a=_side(a, fa),
        b=_side(b, fb),
        settings=settings,
        confounded=sum(s.param not in OBSERVING for s in settings) > 1,
        metrics=metrics,
        only_a=[f for f in fa if f["id"] not in ids_b],
        only_b=[f for f in fb if f["id"] not in ids_a],
        both=[f["id"] for f in fa if f["id"] in ids_b],
        prompts=(
            _prompts(run_a, run_b, a, b, top_prompts)
            if top_prompts > 0
            else Prompts(note="Per-prompt records not read (--prompts 0).")
        ),
    )


NO_RECORDS = (
    "verl's dumps of trainer.validation_data_dir or trainer.rollout_data_dir, TRL's "
    "completions/ of log_completions=True, an rlprobe recording's samples/"
)


def _reward_names(r: _Read) -> set[str]:
    """The reward functions a TRL run's log names (`rewards/<name>/mean`)."""
    import re

    found = (re.fullmatch(r"(?:eval_)?rewards/(.+)/mean", c) for c in r.job.run.frame.columns)
    return {m.group(1) for m in found if m}


# the job file's keys that name folders of per-prompt records: verl's dump folders, TRL's
# output dir (its completions/)
RECORD_KEYS = (
    ("trainer", "validation_data_dir"),
    ("trainer", "rollout_data_dir"),
    ("output_dir",),
)


def _named(r: _Read, run: Path) -> list[tuple[str, Path]]:
    """The record folders the run's job file names, each as the file says it and where it
    is: an absolute path as it is; a relative one from the working directory (where the
    training was started, as a rule), else the job file's folder, else the run's."""
    from collections.abc import Mapping

    file = r.job.loaded.file
    if file is None or not isinstance(file.document, Mapping):
        return []
    out = []
    for keys in RECORD_KEYS:
        node: Any = file.document.get(".".join(keys))  # a flat key, as an override says it
        if node is None:
            node = file.document
            for k in keys:
                node = node.get(k) if isinstance(node, Mapping) else None
        if not isinstance(node, str) or not node.strip():
            continue
        given = Path(node.strip()).expanduser()
        bases = [Path.cwd(), file.path.parent, run if run.is_dir() else run.parent]
        tried = [given] if given.is_absolute() else [b / given for b in bases]
        found = next((t for t in tried if t.is_dir()), None)
        if found is not None:
            out.append((node.strip(), found))
    return out


def _prompts(run_a: Path, run_b: Path, a: _Read, b: _Read, top: int) -> Prompts:
    """Each run's per-prompt records (its folder's, its job file's folders), and the prompts
    scored most apart."""
    out = Prompts(records.find(run_a, _named(a, run_a)), records.find(run_b, _named(b, run_b)))
    files = [
        f"{who} is a file" for who, p in (("RUN_A", run_a), ("RUN_B", run_b)) if not p.is_dir()
    ]
    where = (
        f" ({' and '.join(files)}: records are looked for in a run's folder and in the folders "
        "its job file names)"
        if files
        else ""
    )
    if not out.sources_a and not out.sources_b:
        out.note = f"Neither run has per-prompt records ({NO_RECORDS}){where}."
        return out
    if not out.sources_a or not out.sources_b:
        has, lacks = ("A", "B") if out.sources_a else ("B", "A")
        out.note = (
            f"Only {has} has per-prompt records; {lacks} has none to set them against "
            f"({NO_RECORDS}){where}."
        )
        return out
    pairs = records.pair(out.sources_a, out.sources_b)
    if not pairs:
        out.note = "The runs' per-prompt records are of kinds that do not pair up."
        return out
    names_a, names_b = _reward_names(a), _reward_names(b)
    for sa, sb in pairs:
        records.read(sa, names_a)
        records.read(sb, names_b)
        out.compared.append(records.compare(sa, sb, top))
    if all(c.common == 0 for c in out.compared):
        out.note = "No prompt is in the records of both runs."
    return out


def _side(r: _Read, findings: list[dict[str, Any]]) -> Side:
    run = r.d.run
    return Side(
        source=run.source if run else "",
        framework=r.d.framework,
        steps=run.steps if run else 0,
        status=r.d.status,
        findings=findings,
    )


# ----------------------------------------------------------------------------- the report
def verdict(r: RunDiff) -> str:
    """One line: what the comparison shows and whether it can be read as one setting's effect."""
    parted = [m for m in r.metrics if m.step is not None]
    trains = r.training
    if r.confounded:
        what = f"{len(trains)} training settings differ (confounded)"
    elif trains:
        what = f"one training setting differs ({trains[0].param})"
    else:
        what = "no known training setting differs"
    if parted:
        first = min(parted, key=lambda m: m.step or 0)
        curves = (
            f"{len(parted)} of {len(r.metrics)} core curves part ways, first "
            f"{first.logged.get('a', first.metric)} at step {first.step}"
        )
    else:
        curves = f"none of {len(r.metrics)} core curves parts ways beyond its noise"
    found = f"findings only in A: {len(r.only_a)}, only in B: {len(r.only_b)}"
    return f"{what}; {curves}; {found}."


def render(r: RunDiff, fmt: str = "markdown") -> str:
    """The comparison as Markdown (the report's templates and escaping) or JSON."""
    import json

    from advisor.types import without_surrogates

    if fmt == "json":
        return without_surrogates(json.dumps(r.to_dict(), indent=2, ensure_ascii=False) + "\n")
    from advisor.report.templating import render as render_template

    return without_surrogates(
        render_template(
            "diff.md.j2",
            a=r.a,
            b=r.b,
            settings=r.settings,
            training=r.training,
            observing=OBSERVING,
            confounded=r.confounded,
            metrics=r.metrics,
            only_a=r.only_a,
            only_b=r.only_b,
            both=r.both,
            prompts=r.prompts,
            kinds=records.KIND_NAMES,
            score=PROMPT_SCORE,
            shown=records.SHOWN,
            test=TEST,
            verdict=verdict(r),
        )
    )
