"""Per-prompt records a run leaves in its folder, and the prompts two runs score most apart
(`rl-advisor diff`'s prompts section).

Three formats are read, found in the run's folder up to DEPTH levels down, and in the
folders the run's job file names (`find`'s `named`: the diff reads verl's
`trainer.validation_data_dir` and `trainer.rollout_data_dir`, TRL's `output_dir`):

- verl's generation dumps (`trainer.validation_data_dir`: the validation samples;
  `trainer.rollout_data_dir`: the training rollouts): one `<step>.jsonl` per dump, a line
  per sample with `input` (the prompt as the tokenizer decodes it), `output`, `gts`, `score`
  (the sample's summed token-level score), `step` and the reward function's extra fields.
- TRL's completion logs (`log_completions=True`): `completions/completions_<step>.parquet` in
  the output dir, a row per completion of the last generation batch at each logging step:
  `step`, `prompt` (a text, or a conversation: a list of messages), `completion`, a column
  per reward function (named after it), the columns reward functions add with `log_extra`,
  and `advantage`. A sample's score is the sum of its reward columns (`reward_weights` is not
  in the file: equal weights, TRL's default); when the run's own log names its reward
  functions (`rewards/<name>/mean`), only those columns count.
- rlprobe's recordings: `samples/*.parquet` beside its `manifest.json` (and under `rank-*/`),
  a row per kept sample with `step`, `prompt_id`, `prompt_text`, `completion_text` and
  `reward_total`.

A prompt is known by its text (a conversation by its messages; an rlprobe sample without a
text by its `prompt_id`), so records of two formats compare when the prompts are the same.
A prompt's score in a run is the mean over its samples at one step: the latest step both
runs scored it at, or, when they share none (training samples rarely do), each run's latest.

A record file that cannot be read is left out with a note: the records are an extra beside
the metrics, and one broken dump does not keep the diff from the rest.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor import lazy

DEPTH = 4  # folders below the run's folder searched for records
MAX_FILES = 20_000  # files looked at in that walk
# what is read of one source: its latest files (by step) up to this many bytes (a long run's
# rollout dumps can hold gigabytes; a prompt's latest scores are in its latest files)
MAX_BYTES = 256 * 2**20
TOP = 10  # prompts listed, the largest gaps first
SHOWN = 100  # characters of a prompt shown in the Markdown table
PREFIX_MIN = 20  # a shared beginning this long is said once instead of in every row

VERL_DUMP = re.compile(r"^(\d+)(?:_\d{6}_\d{6})?\.jsonl$")  # <step>.jsonl (a few forks add a time)
TRL_LOG = re.compile(r"^completions_(\d+)\.parquet$")
VERL_FIELDS = ("input", "output", "score")
TRL_NOT_REWARD = frozenset({"step", "prompt", "completion", "advantage", "image", "images"})

KIND_NAMES = {
    "verl": "verl generation dumps",
    "trl": "TRL completion logs",
    "rlprobe": "rlprobe samples",
}


@dataclass(slots=True)
class Record:
    key: str  # what the prompt is known by
    text: str  # the prompt as shown
    step: int
    score: float


@dataclass(slots=True)
class Source:
    """One set of records in a run's folder: a verl dump folder, a TRL completions folder or
    an rlprobe recording."""

    kind: str  # "verl" | "trl" | "rlprobe"
    where: str  # the folder, relative to the run's folder
    files: list[Path] = field(default_factory=list)  # oldest first
    read: int = 0  # files read, the latest ones
    records: list[Record] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "file: why", one per file left out

    @property
    def name(self) -> str:
        return f"{KIND_NAMES[self.kind]} in {self.where}"


@dataclass(slots=True)
class Gap:
    """One prompt both runs scored: its mean score in each, and a - b."""

    key: str
    text: str
    score_a: float
    score_b: float
    samples_a: int
    samples_b: int
    step_a: int
    step_b: int

    @property
    def gap(self) -> float:
        return self.score_a - self.score_b


@dataclass(slots=True)
class Comparison:
    """The records of run A set against those of run B (one source of each)."""

    a: Source
    b: Source
    prompts_a: int
    prompts_b: int
    common: int
    differ: int  # prompts both runs scored whose scores differ
    top: list[Gap]
    # the text every listed prompt begins with (a chat template's system turn), up to a
    # space; "" when shorter than PREFIX_MIN or fewer than two are listed
    prefix: str = ""


# ----------------------------------------------------------------------------- finding them
def _walk(root: Path) -> list[Path]:
    """Files under `root`, DEPTH levels down, hidden folders skipped, links not followed
    into folders (a link loop), at most MAX_FILES."""
    found: list[Path] = []
    level = [root]
    for _ in range(DEPTH + 1):
        nxt: list[Path] = []
        for folder in level:
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            for e in entries:
                if e.name.startswith("."):
                    continue
                try:
                    if e.is_dir() and not e.is_symlink():
                        nxt.append(e)
                    elif e.is_file():
                        found.append(e)
                except OSError:
                    continue
                if len(found) >= MAX_FILES:
                    return found
        level = nxt
    return found


def _rel(path: Path, root: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return "." if rel in ("", ".") else rel


def find(run: Path, named: Sequence[tuple[str, Path]] = ()) -> list[Source]:
    """The record sources in the run folder `run` (none when `run` is a file: the folder a
    metrics file sits in may hold other runs), then in the folders `named` (a job file's
    dump folders or output dir: (what the file says, the folder)) not already among them."""
    out = _scan(_walk(run), lambda d: _rel(d, run)) if run.is_dir() else []
    seen = {_real(s.files[0].parent) for s in out}
    for said, folder in named:
        try:
            if not folder.is_dir():
                continue
            files = [f for f in sorted(folder.iterdir()) if f.is_file()]
            sub = folder / "completions"  # TRL's output dir
            if sub.is_dir():
                files += [f for f in sorted(sub.iterdir()) if f.is_file()]
        except OSError:
            continue
        for s in _scan(files, lambda d, said=said, folder=folder: _said(d, folder, said)):
            if _real(s.files[0].parent) not in seen:
                seen.add(_real(s.files[0].parent))
                out.append(s)
    return out


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


def _said(d: Path, folder: Path, said: str) -> str:
    return said if d == folder else f"{said}/{d.relative_to(folder).as_posix()}"


def _scan(found: Iterable[Path], where: Any) -> list[Source]:
    """The sources among the files `found`; `where(folder)` names a source's folder."""
    verl: dict[Path, list[tuple[int, Path]]] = {}
    trl: dict[Path, list[tuple[int, Path]]] = {}
    probes: dict[Path, list[Path]] = {}
    for f in found:
        if m := VERL_DUMP.match(f.name):
            verl.setdefault(f.parent, []).append((int(m.group(1)), f))
        elif (m := TRL_LOG.match(f.name)) and f.parent.name == "completions":
            trl.setdefault(f.parent, []).append((int(m.group(1)), f))
        elif f.suffix == ".parquet" and f.parent.name == "samples":
            rec = f.parent.parent
            top = rec.parent if re.fullmatch(r"rank-\d+", rec.name) else rec
            if (rec / "manifest.json").is_file() and (top / "manifest.json").is_file():
                probes.setdefault(top, []).append(f)
    out: list[Source] = []
    for folder, numbered in sorted(verl.items()):
        ordered = [f for _, f in sorted(numbered)]
        if _looks_like_verl(ordered[-1]):
            out.append(Source("verl", where(folder), ordered))
    for folder, numbered in sorted(trl.items()):
        out.append(Source("trl", where(folder), [f for _, f in sorted(numbered)]))
    for folder, shards in sorted(probes.items()):
        out.append(Source("rlprobe", where(folder), sorted(shards)))
    return out


def _looks_like_verl(path: Path) -> bool:
    """A numbered .jsonl whose first record has verl's dump fields (other numbered .jsonl
    files, a metrics log split by step, are not records)."""
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    first = json.loads(line)
                    return isinstance(first, dict) and all(k in first for k in VERL_FIELDS)
    except (OSError, UnicodeDecodeError, ValueError):
        return True  # read (and said to be unreadable) with its folder
    return False


# ----------------------------------------------------------------------------- reading them
def read(source: Source, reward_names: Iterable[str] = ()) -> Source:
    """`source` with its records read, its latest files first up to MAX_BYTES (files that
    cannot be read are in `skipped`)."""
    names = set(reward_names)
    total = 0
    for f in reversed(source.files):
        try:
            size = f.stat().st_size
        except OSError:
            size = 0
        if source.read and total + size > MAX_BYTES:
            break
        total += size
        source.read += 1
        try:
            if source.kind == "verl":
                got = _read_verl(f)
            elif source.kind == "trl":
                got = _read_trl(f, names)
            else:
                got = _read_rlprobe(f)
        except _Unreadable as err:
            source.skipped.append(f"{f.name}: {err}")
            continue
        source.records += got
    return source


class _Unreadable(Exception):
    pass


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    x = float(value)
    return x if math.isfinite(x) else None


def _read_verl(path: Path) -> list[Record]:
    m = VERL_DUMP.match(path.name)
    assert m is not None
    file_step = int(m.group(1))
    out = []
    try:
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    raise _Unreadable(f"line {n} is not JSON") from None
                if not isinstance(row, dict) or not all(k in row for k in VERL_FIELDS):
                    raise _Unreadable(
                        f"line {n}: expected a JSON object with {', '.join(VERL_FIELDS)}"
                    )
                score = _score(row["score"])
                if score is None:
                    continue  # a sample without a finite score says nothing of its prompt
                step = row.get("step")
                step = step if isinstance(step, int) and not isinstance(step, bool) else file_step
                text = str(row["input"])
                out.append(Record(text, text, step, score))
    except (OSError, UnicodeDecodeError) as err:
        raise _Unreadable(type(err).__name__) from None
    return out


def _parquet(path: Path) -> Any:
    pl = lazy.polars
    try:
        return pl.read_parquet(path)
    except Exception as err:  # polars' own errors, an OSError: a file not parquet or cut short
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise _Unreadable(f"not a readable parquet file ({first[:120]})") from None


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # multimodal parts: their text
        return " ".join(
            str(p.get("text")) for p in content if isinstance(p, Mapping) and p.get("text")
        )
    return "" if content is None else str(content)


def prompt_of(value: Any) -> tuple[str, str] | None:
    """(key, shown text) of a prompt: a text as it is; a conversation (a list of messages)
    keyed by all its messages and shown as its last user message."""
    if isinstance(value, str):
        return value, value
    if isinstance(value, Sequence) and value and all(isinstance(m, Mapping) for m in value):
        messages = [
            {"role": str(m.get("role", "")), "content": _message_text(m.get("content"))}
            for m in value
        ]
        users = [m["content"] for m in messages if m["role"] == "user"]
        shown = users[-1] if users else messages[-1]["content"]
        return json.dumps(messages, ensure_ascii=False, sort_keys=True), shown
    return None


def _read_trl(path: Path, reward_names: set[str]) -> list[Record]:
    pl = lazy.polars
    df = _parquet(path)
    if "prompt" not in df.columns:
        raise _Unreadable("expected TRL's completions table (a `prompt` column)")
    numeric = [
        c
        for c, t in df.schema.items()
        if c not in TRL_NOT_REWARD and t.is_numeric() and t != pl.Boolean
    ]
    rewards = [c for c in numeric if c in reward_names] if reward_names else numeric
    if not rewards:
        raise _Unreadable("no reward column (expected one per reward function)")
    m = TRL_LOG.match(path.name)
    assert m is not None
    file_step = int(m.group(1))
    steps = df["step"].to_list() if "step" in df.columns else [file_step] * df.height
    columns = [df[c].to_list() for c in rewards]
    out = []
    for i, prompt in enumerate(df["prompt"].to_list()):
        said = prompt_of(prompt)
        values = [col[i] for col in columns]
        # TRL sums the reward functions ignoring NaN (a function that does not score a sample)
        finite = [x for v in values if (x := _score(v)) is not None]
        if said is None or not finite:
            continue
        step = steps[i] if isinstance(steps[i], int) else file_step
        out.append(Record(said[0], said[1], step, sum(finite)))
    return out


def _read_rlprobe(path: Path) -> list[Record]:
    df = _parquet(path)
    if "reward_total" not in df.columns or not {"prompt_text", "prompt_id"} & set(df.columns):
        raise _Unreadable("expected rlprobe's samples (reward_total, prompt_text or prompt_id)")
    n = df.height
    texts = df["prompt_text"].to_list() if "prompt_text" in df.columns else [None] * n
    ids = df["prompt_id"].to_list() if "prompt_id" in df.columns else [None] * n
    steps = df["step"].to_list() if "step" in df.columns else [None] * n
    out = []
    for text, pid, step, total in zip(texts, ids, steps, df["reward_total"].to_list(), strict=True):
        score = _score(total)
        if score is None or not isinstance(step, int):
            continue
        if isinstance(text, str):
            out.append(Record(text, text, step, score))
        elif pid is not None:
            out.append(Record(f"prompt_id {pid}", f"prompt_id {pid}", step, score))
    return out


# ----------------------------------------------------------------------------- comparing
def pair(a: Sequence[Source], b: Sequence[Source]) -> list[tuple[Source, Source]]:
    """Which of A's sources to set against which of B's: the same kind in the same folder;
    then, of a kind each run has once more, that one; then, when each run has one source
    left, those two (prompts match by text across formats)."""
    left_a, left_b = list(a), list(b)
    out = []
    for sa in list(left_a):
        sb = next((s for s in left_b if s.kind == sa.kind and s.where == sa.where), None)
        if sb is not None:
            out.append((sa, sb))
            left_a.remove(sa)
            left_b.remove(sb)
    for kind in KIND_NAMES:
        ka = [s for s in left_a if s.kind == kind]
        kb = [s for s in left_b if s.kind == kind]
        if len(ka) == 1 and len(kb) == 1:
            out.append((ka[0], kb[0]))
            left_a.remove(ka[0])
            left_b.remove(kb[0])
    if len(left_a) == 1 and len(left_b) == 1:
        out.append((left_a[0], left_b[0]))
    return out


def _by_prompt(records: Iterable[Record]) -> dict[str, dict[int, list[float]]]:
    out: dict[str, dict[int, list[float]]] = {}
    for r in records:
        out.setdefault(r.key, {}).setdefault(r.step, []).append(r.score)
    return out


def compare(a: Source, b: Source, top: int = TOP) -> Comparison:
    """The prompts both sources scored, the `top` largest gaps first (module docstring)."""
    ga, gb = _by_prompt(a.records), _by_prompt(b.records)
    shown = {r.key: r.text for r in (*a.records, *b.records)}
    gaps = []
    for key in ga.keys() & gb.keys():
        sa, sb = ga[key], gb[key]
        shared = sa.keys() & sb.keys()
        step_a = step_b = max(shared) if shared else 0
        if not shared:
            step_a, step_b = max(sa), max(sb)
        va, vb = sa[step_a], sb[step_b]
        gaps.append(
            Gap(key, shown[key], sum(va) / len(va), sum(vb) / len(vb), len(va), len(vb),
                step_a, step_b)
        )  # fmt: skip
    differ = [g for g in gaps if g.gap != 0]
    # ties (to 12 places: sums of the same scores in another order) by the prompt's text
    differ.sort(key=lambda g: (-round(abs(g.gap), 12), g.text, g.key))
    listed = differ[:top]
    return Comparison(a, b, len(ga), len(gb), len(gaps), len(differ), listed, shared_prefix(listed))


def shared_prefix(gaps: Sequence[Gap]) -> str:
    """The beginning all `gaps`' prompts share, cut after its last whitespace (so no word is
    split), when at least PREFIX_MIN long and some text is left in each prompt."""
    if len(gaps) < 2:
        return ""
    texts = [g.text for g in gaps]
    lo, hi = min(texts), max(texts)
    n = 0
    while n < len(lo) and lo[n] == hi[n]:
        n += 1
    cut = max(lo.rfind(" ", 0, n), lo.rfind("\n", 0, n)) + 1
    if cut < PREFIX_MIN or any(len(t) <= cut for t in texts):
        return ""
    return lo[:cut]
