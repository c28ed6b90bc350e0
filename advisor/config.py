"""The job config: its shapes, layering (defaults < file < run < --set), and patching.

Shapes the platform accepts (knowledge.md section 1, and its SDK), all read into one `JobConfig`:
- "sdk":     the SDK's own job file, what `TuningModel.to_yaml` writes and `dashscope rl run -c`
             reads (name, model: {name}, teacher_model, functions, datasets, training: {type,
             hyper_parameters, resources}, observability);
- "yaml":    the guide's config.yaml layout (job_name, workspace_dir, model as a string, mode,
             datasets, functions, training: {...}), which the SDK's TuningModel refuses;
- "platform": a job object the platform returns (`dashscope rl list -o json`: job_id, status,
             model, training_type, hyper_parameters, ...);
- "keyword": the keyword arguments of run() / submit_job() written as YAML or JSON
             (top-level hyper_parameters, resources, functions, training_datasets, ...);
- "flat":    a bare hyperparameter dict ({"algorithm": "gspo", "batch_size": 64, ...}).

Loading is one pass that collects every problem as a ConfigFinding (unknown keys with the
nearest valid name, wrong types, out-of-range and bad-choice values, missing required
hyperparameters) instead of stopping at the first; a bad value is reported and replaced by the
default, so the static rules still run. Only an unreadable file is an InputError (exit 2).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any, Literal, NoReturn, cast

from advisor import lazy
from advisor.book.config import FieldSpec, rulebook
from advisor.book.expressions import fmt
from advisor.dialect import (
    dialects,
    framework_key_params,
    framework_of_document,
    set_names,
    trl_hints,
    verl_facts,
)
from advisor.ingest.depth import json_depth
from advisor.ingest.hints import verl_hints
from advisor.pyconfig import LinedDict, read_python_job
from advisor.resources import write_text_atomic
from advisor.types import ConfigFinding, InputError, Scalar, Severity

# A job's values by name (a choice is its string), what the engine, the remedy and the hooks take.
HyperParams = Mapping[str, Scalar]
Origin = Literal["default", "file", "run", "set"]
Layout = Literal["sdk", "yaml", "platform", "keyword", "flat", "none"]

# Top-level keys of each shape (KB 1 and the seed's run()/submit_job() examples).
_YAML_TOP = (
    "job_name",
    "workspace_dir",
    "model",
    "teacher_model",
    "mode",
    "tuned_model_name",
    "datasets",
    "functions",
    "training",
)
_KEYWORD_TOP = (
    "job_name",
    "workspace_dir",
    "model",
    "teacher_model",
    "mode",
    "tuned_model_name",
    "functions",
    "hyper_parameters",
    "resources",
    "training_datasets",
    "validation_datasets",
    "training_file_ids",
    "validation_file_ids",
    "datasets",
    *("rollout_id", "reward_ids", "rollout_runtime", "reward_runtimes"),
)
# The SDK's job file (dashscope TuningModel, pydantic with extra="forbid": it refuses every other
# top-level key), and the guide's keys it refuses with where the SDK keeps the same setting.
_SDK_TOP = ("name", "model", "teacher_model", "functions", "datasets", "training", "observability")
# where the SDK takes any key (plain dicts): an unknown one there is the platform's to judge
_SDK_OPEN = ("training.hyper_parameters.", "training.resources.")
_GUIDE_ONLY = {
    "job_name": "name",
    "mode": "training.type",
    "workspace_dir": "functions[i].fcmodel.zipdir",
    "tuned_model_name": None,
}
# A job object the platform returns (the SDK's FineTuneOutput, `dashscope rl list -o json`).
_PLATFORM_JOB = (
    "job_id",
    "job_name",
    "status",
    "model",
    "base_model",
    "finetuned_output",
    "training_file_ids",
    "validation_file_ids",
    "hyper_parameters",
    "training_type",
    "create_time",
    "end_time",
    "user_identity",
    "modifier",
    "creator",
    "group",
    "usage",
)
_FUNCTION_TYPES = ("rollout", "reward", "group_reward")
_DATASET_TYPES = ("training", "validation", "testing")
_TRAINING_TYPES = ("reinforcement", "pg_opd")
_DATA_SOURCES = ("file_id", "download_url", "oss_mount")
# submit_job() with registered entity ids (the seed's `dashscope rl submit --rollout-id
# --reward-ids` and its FAQ "reward_runtimes must be as long as reward_ids"): read as functions.
_ENTITY_KEYS = ("rollout_id", "reward_ids", "rollout_runtime", "reward_runtimes")
# what the SDK fills in on a registered function (instance_status an int, the others strings)
_INSTANCE_KEYS = ("instance_id", "instance_status", "instance_url", "instance_token")
_FUNCTION_KEYS = (
    "type",
    "name",
    "timeout",
    "weight",
    "reward_metric_weight",
    "fcmodel",
    "entity_id",
    "runtime",
    *_INSTANCE_KEYS,
)
# fcmodel: the code by classpath, or by filepath + classname, under zipdir (the SDK's
# FunctionComponentModel); oss_* are filled in by the SDK at registration.
_FCMODEL_KEYS = (
    "zipdir",
    "classpath",
    "filepath",
    "classname",
    "requirements_path",
    "extra_files",
    "oss_id",
    "oss_signed_url",
)
_DATASET_KEYS = (
    "type",
    "data_source_type",
    "file_name",
    "file_id",
    "download_url",
    "mount_storage",
)
_KEYWORD_DATASET_KEYS = _DATASET_KEYS[1:]
_MOUNT_KEYS = ("region", "bucket", "file_path")
# Advisor-only settings accepted by --set and run hints (not platform fields).
_EXTRAS: dict[str, Literal["float", "int"]] = {
    "expected_step_seconds": "float",
    "training_samples": "int",
}


# ---------------------------------------------------------------------------------------------
# The job (what the rest of the advisor reads). Plain data: the walker below is the job's
# validator (it reports every bad value with its line and replaces it by the default), so what
# it hands over is already of these types and is not checked a second time.

@dataclass(frozen=True, slots=True, kw_only=True)
class FcModel:
    """A function's code package on the platform (its `fcmodel`)."""

    classpath: str | None = None
    zipdir: str | None = None
    filepath: str | None = None
    classname: str | None = None
    requirements_path: str | None = None
    extra_files: list[str] | None = None
    oss_id: str | None = None
    oss_signed_url: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Function:
    """One of the job's functions: a rollout, reward or group reward function."""

    type: Literal["rollout", "reward", "group_reward"] | None = None
    name: str | None = None
    timeout: int | None = None
    weight: float | None = None
    reward_metric_weight: dict[str, float] | None = None
    fcmodel: FcModel | None = None
    entity_id: str | None = None
    runtime: dict[str, Any] | None = None  # as given; platform defaults are in the rulebook


@dataclass(frozen=True, slots=True, kw_only=True)
class Dataset:
    """One of the job's datasets: training, validation or testing data."""

    type: Literal["training", "validation", "testing"] | None = None
    data_source_type: str | None = None
    file_name: str | None = None
    file_id: str | None = None
    download_url: str | None = None
    mount_storage: dict[str, str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Resources:
    """What the job runs on: its charge type and compute spec."""

    charge_type: str | None = None
    mtu_spec_code: str | None = None
    mtu_capacity: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class JobConfig:
    """The platform's job, after layering; `hyper_parameters` holds all 25, defaults filled."""

    job_name: str | None = None
    workspace_dir: str | None = None
    model: str | None = None
    teacher_model: str | None = None
    mode: Literal["reinforcement", "pg_opd"] | None = None  # the SDK's training.type
    tuned_model_name: str | None = None
    datasets: list[Dataset] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    hyper_parameters: dict[str, Any] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)

    @classmethod
    def of(cls, walked: Mapping[str, Any]) -> JobConfig:
        """The job from the walker's output (checked values, nested as dicts)."""
        top = {k: v for k, v in walked.items() if k not in ("datasets", "functions", "resources")}
        return cls(
            **top,
            datasets=[Dataset(**d) for d in walked.get("datasets", ())],
            functions=[
                Function(**{**f, "fcmodel": FcModel(**f["fcmodel"])} if f.get("fcmodel") else f)
                for f in walked.get("functions", ())
            ],
            resources=Resources(**walked.get("resources", {})),
        )

    def to_dict(self) -> dict[str, Any]:
        """The job as data, its unset (None) fields left out, at every level."""
        return _given(self)


def _given(value: Any) -> Any:
    if isinstance(value, FcModel | Function | Dataset | Resources | JobConfig):
        return {
            f.name: _given(v)
            for f in fields(value)
            if (v := getattr(value, f.name)) is not None
        }
    if isinstance(value, list):
        return [_given(v) for v in value]
    return copy.deepcopy(value)


@dataclass
class LoadedConfig:
    """A job config after the load pass."""

    config: JobConfig
    findings: list[ConfigFinding]
    hyper_parameters: dict[str, Scalar]
    origin: dict[str, Origin]
    source: Path | None
    layout: Layout = "none"
    training_samples: int | None = None
    notes: list[str] = field(default_factory=list)  # assumptions made while loading
    extras: dict[str, Any] = field(default_factory=dict)  # advisor-only settings
    lines: dict[str, int] = field(default_factory=dict)  # param or dotted path -> file line
    # params / dotted paths the file gave no valid value for (invalid: C002-C004, or required
    # and missing: C005); rules reading them skip rather than judge the assumed default
    unjudged: frozenset[str] = frozenset()
    # per function, the paths its fields were written at when not functions[i] (entity ids)
    function_paths: list[dict[str, str]] = field(default_factory=list)
    # the framework the file is written for ("trl", "verl"); None for the platform's job
    framework: str | None = None
    # what a framework's file says beyond the guide's values (verl's use_kl_loss, TRL's
    # gradient_accumulation_steps): the dialect's facts
    facts: dict[str, Any] = field(default_factory=dict)
    # the `defaults` of load_config that stood (no file, hint or --set gave the value): the
    # run's framework's own defaults, assumptions as the platform's are
    defaults_taken: dict[str, Scalar] = field(default_factory=dict)
    # the job file as read once (None without one): the diff and the patched copy start from it
    file: JobFile | None = None

    def line_of(self, params: Sequence[str]) -> int | None:
        """The file line of the first param that has one."""
        for param in params:
            while param:  # functions[0].runtime.min_capacity -> functions[0].runtime -> ...
                if self.lines.get(param):
                    return self.lines[param]
                param = param.rsplit(".", 1)[0] if "." in param else ""
        return None

    def merged(self) -> dict[str, Any]:
        """The merged config for --show-config: each hyperparameter with its origin."""
        cfg = self.config.to_dict()
        del cfg["hyper_parameters"]
        if self.layout == "sdk":  # in the SDK's own names
            named = {"name": cfg.pop("job_name")} if "job_name" in cfg else {}
            if "model" in cfg:
                cfg["model"] = {"name": cfg["model"]}
            if "mode" in cfg:
                cfg["training_type"] = cfg.pop("mode")
            cfg = {**named, **cfg}
        cfg["hyper_parameters"] = {
            k: {"value": v, "origin": self.origin.get(k, "default")}
            for k, v in self.hyper_parameters.items()
        }
        return cfg


# ---------------------------------------------------------------------------------------------
# Reading a file.


@cache
@cache
def _function_fields() -> dict[str, FieldSpec]:
    """A function's own fields beside its runtime, as a job file and `--set` check them."""
    return {
        "name": _spec("str"),
        "entity_id": _spec("str"),
        "timeout": _spec("int", 1),
        "weight": _spec("float", 0),
    }


def _spec(
    kind: Literal["int", "float", "choice", "str", "list"],
    low: float | None = None,
    choices: tuple[str, ...] | None = None,
) -> FieldSpec:
    """The spec of one of the job's own fields (a function's timeout, a dataset's type), for
    the walker's checks. Built unchecked, as a plain FieldSpec: its values are literals of
    their declared types (the rulebook's specs come checked from its cache)."""
    return FieldSpec(
        type=kind, min=low, choices=list(choices) if choices is not None else None
    )


def _yaml(typ: str = "rt") -> Any:
    y = lazy.yaml.YAML(typ=typ, pure=True)
    y.preserve_quotes = True
    return y


_SURROGATE = re.compile("[\ud800-\udfff]")


def _joined_surrogates(obj: Any) -> Any:
    """Strings as Python text: a JSON escape pair (\\ud800\\udc00 for U+10000) is read by
    the YAML parser as two halves; they are joined, and a lone half becomes U+FFFD."""
    if isinstance(obj, str):
        if not _SURROGATE.search(obj):
            return obj
        return obj.encode("utf-16", "surrogatepass").decode("utf-16", errors="replace")
    if isinstance(obj, dict):
        return {k: _joined_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_joined_surrogates(v) for v in obj]
    return obj


@dataclass(frozen=True)
class JobFile:
    """A job file read and parsed once, handed on to what loads, diffs and patches it: `raw` as
    read (the diff's old side), `text` as parsed (a Python file's `job =` stripped) and the
    parsed `document`, which is never changed (a patch is applied to a copy). `yaml11`: its
    YAML 1.1 texts (yaml11_texts) as the parse found them, None where it did not look."""

    path: Path
    raw: str
    text: str
    document: Any
    yaml11: dict[str, tuple[str, int]] | None = None


def read_document(path: Path) -> Any:
    """Parse a YAML or JSON job file (ruamel, YAML 1.2: `1e-6` is a float) keeping line info."""
    return read_job_file(path).document


def read_job_file(path: Path) -> JobFile:
    """`read_document`, with the text it read (see JobFile)."""

    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a YAML or JSON job file")
    if not path.is_file():  # a pipe or a device: a read that may never end
        raise InputError(f"{path}: {_not_a_file(path)}; expected a YAML or JSON job file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raw = path.read_bytes()
        line = raw[: err.start].count(b"\n") + 1
        what = "saved as UTF-16" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else "not UTF-8 text"
        raise InputError(
            f"{path}:{line}: {what} (byte 0x{err.object[err.start]:02x}); "
            "expected a YAML or JSON job file saved as UTF-8"
        ) from None
    except OSError as err:
        raise InputError(f"{path}: cannot be read ({err.strerror or err})") from None
    if path.suffix.lower() == ".json":
        _check_nesting(path, text)  # before json.loads, which recurses once per level
        _json_error(path, text, always=True)  # a .json file must be JSON, not any YAML
    if path.suffix.lower() == ".py" and (pydoc := _python_job(text)) is not None:
        return JobFile(path, text, text, pydoc)
    source_text, text = text, _strip_assignment(text)
    _check_nesting(path, text)
    try:
        # YAML.load, in its two steps: the node tree's YAML 1.1 texts are read in between
        yaml = _yaml()
        root = yaml.compose(text)
        yaml11 = _yaml11_nodes(root)  # (constructing rewrites a merge key's mapping node)
        doc = None if root is None else yaml.constructor.construct_document(root)
    except lazy.yaml.error.MarkedYAMLError as err:
        if (pydoc := _python_job(source_text)) is not None:
            # client.run(...) written in Python, as the guide shows it
            return JobFile(path, source_text, text, pydoc)
        _json_error(path, text)  # a JSON file: JSON's own message is more precise
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        what = (err.problem or err.context or "syntax error").strip()
        if "another document" in what:  # ruamel's "but found another document"
            what = "a second YAML document (---) starts here; a job file holds one"
        raise InputError(f"{where}: not valid YAML/JSON: {what}") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply for a job file") from None
    except ValueError as err:
        if "digits" not in str(err):
            raise InputError(f"{path}: not valid YAML/JSON: {_first_line(err)}") from None
        raise InputError(_too_many_digits(path, text)) from None
    except Exception as err:
        # ruamel's own errors, and what its constructor raises on shapes it does not expect
        # (a sequence as a mapping key, `!!pairs` as a key): the file is no usable job
        raise InputError(f"{path}: not valid YAML/JSON: {_first_line(err)}") from None
    _check_expansion(path, doc)
    if doc is None:
        raise InputError(f"{path}:1: empty file, expected a mapping of job config keys")
    if not isinstance(doc, Mapping):
        raise InputError(f"{path}:1: expected a mapping of job config keys, got a {_kind(doc)}")
    return JobFile(path, source_text, text, doc, yaml11)


def _not_a_file(path: Path) -> str:
    import stat

    try:
        mode = path.stat().st_mode
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _first_line(err: Exception) -> str:
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return first[:200]


# A job file is a few levels deep; YAML nested past this (by indentation or brackets) is
# refused before the recursive parser meets it, and aliases may not expand past _MAX_NODES.
_MAX_NESTING = 64
_CONTENT_LINE = re.compile(r"^[ \t-]*[^\s#]", re.MULTILINE)
_MAX_NODES = 200_000


_MAX_LINES = 5_000  # a job file is a few dozen lines; ruamel reads ~4,000 lines a second


def _check_nesting(path: Path | str, text: str) -> None:
    lines = text.count("\n") + text.count("\r") + 1
    if lines > _MAX_LINES and len(_CONTENT_LINE.findall(text)) > _MAX_LINES:
        raise InputError(
            f"{path}: {lines:,} lines; expected a job file (at most {_MAX_LINES:,} lines of "
            "keys and values)"
        )

    depth = json_depth(text.encode("utf-8", "surrogatepass"), per_line=False)
    indents: list[int] = []
    if depth <= _MAX_NESTING:
        for line in text.splitlines():
            body = line.lstrip(" \t-")
            if not body or body.startswith("#"):
                continue
            indent = len(line) - len(body)
            while indents and indents[-1] >= indent:
                indents.pop()
            indents.append(indent)
            depth = max(depth, len(indents))
            if depth > _MAX_NESTING:
                break
    if depth > _MAX_NESTING:
        raise InputError(
            f"{path}: nested {depth}+ levels deep; expected a job file (at most "
            f"{_MAX_NESTING} levels)"
        )


def _check_expansion(path: Path | str, doc: Any) -> None:
    """Refuse a document whose aliases expand to more values than any job holds (the
    "billion laughs"): every later step that walks the values would walk them all. Counted
    once per distinct node, so the count costs as much as the file."""
    sizes: dict[int, int] = {}

    def size(node: Any, depth: int = 0) -> int:
        if not isinstance(node, Mapping | list):
            return 1
        known = sizes.get(id(node))
        if known is not None:
            return known
        if depth > _MAX_NESTING:
            raise InputError(f"{path}: nested too deeply for a job file")
        sizes[id(node)] = 0  # a recursive alias counts as nothing more
        items = node.values() if isinstance(node, Mapping) else node
        total = 1 + sum(size(v, depth + 1) for v in items)
        sizes[id(node)] = total
        if total > _MAX_NODES:
            raise InputError(
                f"{path}: YAML aliases expand to over {_MAX_NODES:,} values; expected a job "
                "file (each alias is copied where it is used)"
            )
        return total

    size(doc)


_ASSIGNMENT = re.compile(
    r"\A(?:[ \t]*(?:#[^\n]*)?\n)*"  # blank and comment lines
    r"[ \t]*([A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*)(?=[{\[])"  # name = {
)


def _strip_assignment(text: str) -> str:
    """`hyper_parameters = {...}` pasted from the guide's Python: read the dict literal.

    Python's dict literal (double or single quotes, trailing commas, # comments) is a YAML flow
    mapping; only the `name = ` in front is not. It is blanked out so lines and columns stay.
    """
    m = _ASSIGNMENT.match(text)
    if not m:
        return text
    return text[: m.start(1)] + " " * len(m[1]) + text[m.end(1) :]


def _python_job(text: str) -> Mapping[str, Any] | None:
    """The keyword arguments of a run()/submit_job() call written in Python, if any."""

    return read_python_job(text)


def _json_error(path: Path, text: str, always: bool = False) -> None:
    """Raise JSON's own error (line, column) for a file that looks like JSON."""
    if not always and not text.lstrip().startswith(("{", "[")):
        return
    if not text.strip():
        return  # empty: reported as such by the caller

    try:
        json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}:{err.colno}: not valid JSON: {err.msg}") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply for a job file") from None
    except ValueError:  # Python's bound on the digits of an integer it converts
        raise InputError(_too_many_digits(path, text)) from None


def _too_many_digits(path: Path | str, text: str) -> str:
    """The one line for a number longer than any job value (Python converts at most 4,300
    digits to an integer): where it starts and how long it is."""
    limit = sys.get_int_max_str_digits()
    m = re.search(rf"(?<![\d.eE])\d{{{limit + 1},}}", text)
    if m is None:
        return f"{path}: a number too long to read; expected a job value"
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    return (
        f"{path}:{line}:{col}: a number of {len(m[0]):,} digits; expected a job value "
        f"(at most {limit:,} digits)"
    )


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def _plain(value: Any) -> Any:
    """ruamel's commented/scalar types -> plain Python."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def detect_layout(doc: Mapping[str, Any]) -> Layout:
    if isinstance(doc, LinedDict):  # a run() / submit_job() call written in Python
        return "keyword"
    keys = set(map(str, doc))
    if "job_id" in keys and keys & {"status", "hyper_parameters", "training_type", "base_model"}:
        return "platform"
    training = doc.get("training")
    model = doc.get("model")
    guide = bool(keys & set(_GUIDE_ONLY))  # a model string alone is either layout's slip
    signs = (
        keys & {"teacher_model", "observability"}
        or (isinstance(training, Mapping) and "type" in training)
        or ("name" in keys and keys & {"training", "functions", "datasets"})
    )
    if (isinstance(model, Mapping) and "name" in model) or (signs and not guide):
        return "sdk"
    if "training" in keys or keys & {"datasets", "mode", "workspace_dir"}:
        return "yaml"
    if "hyper_parameters" in keys:
        return "keyword"
    if keys & set(_hp_names()):  # a hyperparameter dict, perhaps with model / job_name beside
        return "flat"
    if keys & set(_KEYWORD_TOP):
        return "keyword"
    return "flat"


def _hp_names() -> list[str]:
    return list(rulebook().hyper_parameters)


# ---------------------------------------------------------------------------------------------
# The load pass.


def _close(word: str, candidates: list[str], cutoff: float = 0.6) -> list[str]:
    """The candidate nearest to `word` (difflib's, imported only when a name is unknown)."""
    import difflib

    return difflib.get_close_matches(word, candidates, n=1, cutoff=cutoff)


class _Pass:
    """Walks one document, collecting findings and the cleaned canonical values."""

    def __init__(self, label: str, lines: dict[str, int]) -> None:
        self.book = rulebook()
        self.label = label
        self.findings: list[ConfigFinding] = []
        self.lines = lines
        # params / paths given with an invalid value: rules reading them are skipped, so no
        # finding rests on the default that replaced the user's value
        self.invalid: set[str] = set()
        self.unknown_keys = 0
        # plain scalars YAML 1.1 (the SDK) reads as strings, YAML 1.2 as numbers, by path; a
        # field that is a string to the SDK takes the text (yaml11_taken), others get C009
        self.yaml11: dict[str, tuple[str, int]] = {}
        self.yaml11_taken: set[str] = set()

    # -- findings
    def add(
        self,
        rule_id: str,
        params: list[str],
        message: str,
        *,
        severity: Severity | None = None,
        suggested: Any = None,
        line: int | None = None,
    ) -> None:
        rule = self.book.rule(rule_id)
        self.findings.append(
            rule.finding(params, message, severity=severity, suggested=suggested, line=line)
        )

    def unknown(self, path: str, key: str, candidates: Mapping[str, str], line: int | None) -> None:
        """C001 with the nearest valid name; candidates: plain name -> full suggested path.
        Past _SAID_UNKNOWN keys they are only counted (a file of 20,000 made-up keys would
        cost seconds of name matching and a report nobody reads)."""
        self.unknown_keys += 1
        if self.unknown_keys > _SAID_UNKNOWN:
            return
        near = _close(key, list(candidates), cutoff=0.6)
        alias = self.book.hp_aliases.get(key.lower())
        if alias and alias.param in candidates:  # another framework's name: lr, beta, rollout_n
            near = [alias.param]
        if key in candidates:  # a valid name, at the wrong level
            hint = f"; did you mean {candidates[key]}?"
        else:
            hint = f"; did you mean {candidates[near[0]]}?" if near else ""
        if alias and alias.param in candidates and alias.note:
            hint += f" ({alias.note})"
        sugg = candidates.get(key) or (candidates[near[0]] if near else None)
        severity = None
        if getattr(self, "layout", None) == "sdk" and not path.startswith(_SDK_OPEN):
            # the SDK's models forbid extra fields: the file is refused, not only misread
            severity, hint = Severity.error, hint + "; the SDK refuses a file with it"
        self.add("C001", [path], f"{path} is not a known field{hint}", suggested=sugg, line=line,
                 severity=severity)  # fmt: skip

    def as_sdk_reads(self, path: str, raw: Any, kind: str) -> Any:
        """`raw` as the SDK's YAML 1.1 loader reads it where a string is what the SDK takes
        (`0e0` is the string '0e0' to it, the number 0.0 to YAML 1.2)."""
        if kind in ("str", "choice") and path in self.yaml11:
            self.yaml11_taken.add(path)
            return self.yaml11[path][0]
        if kind == "list" and isinstance(raw, list):
            out = list(raw)
            for i in range(len(out)):
                if (item := f"{path}[{i}]") in self.yaml11:
                    self.yaml11_taken.add(item)
                    out[i] = self.yaml11[item][0]
            return out
        if kind == "mapping":  # the runtime's env: values of any type, sent as they are read
            self.yaml11_taken.update(p for p in self.yaml11 if p.startswith(path + "."))
        return raw

    # -- scalars
    def value(
        self, path: str, raw: Any, spec: Any, line: int | None, param: str | None = None
    ) -> Any:
        """Validate one scalar against a FieldSpec; return the clean value or None if invalid."""
        name = param or path
        if self.yaml11:
            raw = self.as_sdk_reads(path, raw, spec.type)

        def invalid(rule_id: str, problem: str, suggested: Any) -> None:
            self.invalid.add(name)
            message = f"{path} = {_show(raw)} {problem}"
            self.add(rule_id, [name], message, line=line, suggested=suggested)

        try:
            value = _coerce(raw, spec)
        except _Bad as bad:
            invalid("C002", f"must be {bad}", spec.default)
            return None
        if spec.type == "choice" and value not in spec.choices:
            near = _close(str(value).lower(), list(map(str, spec.choices)))
            hint = f"; did you mean {near[0]}?" if near else ""
            allowed = ", ".join(map(str, spec.choices))
            what = f"must be {allowed}" if len(spec.choices) == 1 else f"is not one of {allowed}"
            invalid("C004", f"{what}{hint}", near[0] if near else spec.default)
            return None
        if not _in_range(value, spec):
            invalid("C003", f"is outside {_range_text(spec)}", _clamp(value, spec))
            return None
        return value


_SAID_UNKNOWN = 50


class _Bad(Exception):
    """A value of the wrong type; the message says what was expected."""


def _show(raw: Any, limit: int = 80) -> str:
    """A value as a message quotes it: at most `limit` characters, whatever its size."""

    if raw is None:
        return "null (no value)"
    if isinstance(raw, int) and not isinstance(raw, bool) and raw.bit_length() > 64:
        return f"an integer of about {int(raw.bit_length() * 0.30103) + 1} digits"
    if isinstance(raw, str):
        text = repr(raw[:limit])
    elif isinstance(raw, Mapping | list | tuple):
        text = _short(raw, limit)
    else:
        text = fmt(raw)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short(raw: Any, limit: int) -> str:
    """A container's repr cut short: walks only as many values as fit in `limit` characters
    (an alias-expanded structure is never walked whole)."""
    out: list[str] = []
    budget = [limit]

    def put(text: str) -> bool:
        out.append(text)
        budget[0] -= len(text)
        return budget[0] > 0

    def walk(node: Any, depth: int) -> bool:
        if depth > 8:
            return put("...")
        if isinstance(node, Mapping):
            if not put("{"):
                return False
            for i, (k, v) in enumerate(node.items()):
                if (
                    (i and not put(", "))
                    or not put(f"{str(k)[:limit]!r}: ")
                    or not walk(v, depth + 1)
                ):
                    return False
            return put("}")
        if isinstance(node, list | tuple):
            if not put("["):
                return False
            for i, v in enumerate(node):
                if (i and not put(", ")) or not walk(v, depth + 1):
                    return False
            return put("]")
        return put(_show(node, limit))

    walk(raw, 0)
    return "".join(out)


def _coerce(raw: Any, spec: Any) -> Any:
    kind = spec.type
    if kind in ("int", "float"):
        if isinstance(raw, bool) or raw is None:
            raise _Bad(f"a{'n integer' if kind == 'int' else ' number'}")
        if isinstance(raw, str):  # the guide itself passes "2e-4" as a string
            try:
                raw = float(raw.strip().replace("_", ""))
            except ValueError:
                raise _Bad(f"a{'n integer' if kind == 'int' else ' number'}") from None
        if not isinstance(raw, int | float):
            raise _Bad(f"a{'n integer' if kind == 'int' else ' number'}, not a {_kind(raw)}")
        if isinstance(raw, int) and abs(raw) >= 2**63:
            raise _Bad(f"a{'n integer' if kind == 'int' else ' number'} of a sensible size")
        if not math.isfinite(raw):
            raise _Bad("a finite number")
        if kind == "int":
            if float(raw) != int(raw):
                raise _Bad("an integer")
            return int(raw)
        return float(raw)
    if kind == "choice":
        if raw is False and "no" in spec.choices:  # YAML 1.1 reads `no` as false
            return "no"
        if not isinstance(raw, str):
            raise _Bad("one of " + ", ".join(map(str, spec.choices)))
        return raw
    if kind == "str":
        if not isinstance(raw, str):
            raise _Bad("a string")
        return raw
    if kind == "bool":
        # yes / no / on / off: booleans to YAML 1.1 (the SDK's loader), strings to YAML 1.2
        if isinstance(raw, str) and raw.lower() in ("true", "false", "yes", "no", "on", "off"):
            return raw.lower() in ("true", "yes", "on")
        if not isinstance(raw, bool):
            raise _Bad("true or false")
        return raw
    if kind == "list":
        if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
            raise _Bad("a list of strings")
        return [str(v) for v in raw]
    if not isinstance(raw, Mapping):  # mapping
        raise _Bad("a mapping")
    return _plain(raw)


def _in_range(value: Any, spec: Any) -> bool:
    if spec.type not in ("int", "float"):
        return True
    if spec.min is not None and (value < spec.min or (spec.min_exclusive and value == spec.min)):
        return False
    return spec.max is None or value <= spec.max


def _range_text(spec: Any) -> str:
    lo = "(" if spec.min_exclusive else "["
    if spec.max is None:
        return f">= {fmt(spec.min)}" if not spec.min_exclusive else f"> {fmt(spec.min)}"
    return f"{lo}{fmt(spec.min)}, {fmt(spec.max)}]"


def _clamp(value: Any, spec: Any) -> Any:
    if spec.min is not None and value < spec.min:
        return spec.default if spec.min_exclusive else type(value)(spec.min)
    if spec.max is not None and value > spec.max:
        return type(value)(spec.max)
    return spec.default


def _line(node: Any, key: Any) -> int | None:
    """1-based line of `key` in a ruamel mapping (or item `key` of a sequence)."""
    try:
        lc = node.lc
        return (lc.item(key) if isinstance(key, int) else lc.key(key))[0] + 1
    except (AttributeError, KeyError, IndexError, TypeError):
        return None


class _Walker(_Pass):
    """Reads the three shapes into the canonical dict."""

    def __init__(self, label: str, lines: dict[str, int], layout: Layout) -> None:
        super().__init__(label, lines)
        self.layout = layout
        self.hp: dict[str, Any] = {}
        # given, even if invalid (then reported, not "missing"), in the file's order
        self.seen_hp: dict[str, None] = {}
        self.out: dict[str, Any] = {"datasets": [], "functions": [], "resources": {}}
        hp_at = {
            "yaml": "training.hyper_parameters.",
            "sdk": "training.hyper_parameters.",
            "keyword": "hyper_parameters.",
            "platform": "hyper_parameters.",
        }
        self.hp_prefix = hp_at.get(layout, "")
        self.entity_args: dict[str, tuple[Any, int | None]] = {}
        # per function, where its fields were written when not under functions[i]
        self.fn_paths: list[dict[str, str]] = []
        self.platform: dict[str, Any] = {}  # a platform job object's own fields (job_id, status)

    def walk(self, doc: Mapping[str, Any]) -> None:
        tops = {"yaml": _YAML_TOP, "sdk": _SDK_TOP, "platform": _PLATFORM_JOB}
        top = tops.get(self.layout, _KEYWORD_TOP)
        if self.layout == "flat":
            self.lines["hyper_parameters"] = 1
            hp = {k: v for k, v in doc.items() if str(k) not in top}
            self.hyper_parameters(_Sub(doc, hp), "")
            for key, raw in doc.items():
                if str(key) in top:
                    self.section(str(key), raw, str(key), _line(doc, key))
            self.entity_functions()
            return
        candidates = {k: k for k in top}
        if self.layout == "sdk":
            candidates |= {k: v for k, v in _GUIDE_ONLY.items() if v}
        for key, raw in doc.items():
            key, line = str(key), _line(doc, key)
            if key in top:
                self.section(key, raw, key, line)
            elif self.layout == "platform":
                continue  # the platform's own bookkeeping, written by no user
            elif self.layout == "sdk" and key in _GUIDE_ONLY:
                self.guide_key(key, raw, line)
            elif key in self.book.hyper_parameters:  # a hyperparameter at the top: use it, warn
                self.unknown(key, key, {key: self.hp_prefix + key}, line)
                self.hp_value(key, raw, key, line)
            elif key in ("hyper_parameters", "resources"):  # keyword form inside the YAML layout
                self.unknown(key, key, {key: f"training.{key}"}, line)
                self.section(key, raw, key, line)
            else:
                self.unknown(key, key, candidates | self._hp_candidates(), line)
        self.entity_functions()

    def entity_functions(self) -> None:
        """rollout_id / reward_ids (+ rollout_runtime / reward_runtimes) -> functions."""
        args = self.entity_args
        if not args:
            return
        self.fn_paths += [{} for _ in self.out["functions"]]
        if "rollout_id" in args or "rollout_runtime" in args:
            self.entity_function("rollout", args.get("rollout_id"), args.get("rollout_runtime"))
        ids_raw, ids_line = args.get("reward_ids", (None, None))
        rts_raw, rts_line = args.get("reward_runtimes", (None, None))
        ids = self.entity_list("reward_ids", ids_raw, ids_line)
        runtimes = self.entity_list("reward_runtimes", rts_raw, rts_line)
        if ids is not None and runtimes is not None and len(ids) != len(runtimes):
            self.add(
                "C520",
                ["reward_runtimes", "reward_ids"],
                f"reward_runtimes lists {len(runtimes)} runtime(s) but reward_ids lists "
                f"{len(ids)} reward function(s): the submission fails unless they match",
                line=rts_line or ids_line,
            )
        for i in range(max(len(ids or []), len(runtimes or []))):
            rid = (ids[i], _line(ids_raw, i) or ids_line) if ids and i < len(ids) else None
            rt = (
                (runtimes[i], _line(rts_raw, i) or rts_line)
                if runtimes and i < len(runtimes)
                else None
            )
            self.entity_function("reward", rid, rt, index=i)

    def entity_list(self, key: str, raw: Any, line: int | None) -> list[Any] | None:
        if raw is None:
            return None
        if isinstance(raw, str) and key == "reward_ids":  # the CLI's '["rw-xxx"]' or one id
            try:
                raw = json.loads(raw) if raw.strip().startswith("[") else [raw]
            except json.JSONDecodeError:
                raw = [raw]
        if not isinstance(raw, list):
            self.invalid.add(key)
            self.add("C002", [key], f"{key} = {_show(raw)} must be a list", line=line)
            return None
        return list(raw)

    def entity_function(
        self,
        kind: str,
        entity: tuple[Any, int | None] | None,
        runtime: tuple[Any, int | None] | None,
        index: int | None = None,
    ) -> None:

        at = "" if index is None else f"[{index}]"
        id_path = f"{kind}_id" if index is None else f"reward_ids{at}"
        rt_path = f"{kind}_runtime" if index is None else f"reward_runtimes{at}"
        fn: dict[str, Any] = {"type": kind}
        if entity is not None:
            self.lines[id_path] = entity[1] or 0
            fn["entity_id"] = self.value(id_path, entity[0], _spec("str"), entity[1])
        if runtime is not None:
            self.lines[rt_path] = runtime[1] or 0
            fn["runtime"] = self.runtime(runtime[0], rt_path, runtime[1])
        elif index is not None and "reward_runtimes" in self.entity_args:
            self.invalid.add(rt_path)  # no runtime for this id: C520 says so; judge no default
        self.out["functions"].append({k: v for k, v in fn.items() if v is not None})
        self.fn_paths.append({"entity_id": id_path, "runtime": rt_path})

    def _hp_candidates(self) -> dict[str, str]:
        return {k: self.hp_prefix + k for k in self.book.hyper_parameters}

    def guide_key(self, key: str, raw: Any, line: int | None) -> None:
        """A key of the guide's layout in an SDK file: the SDK refuses it; say where the SDK
        keeps the same setting (its value is still read, so the rules judge the job)."""
        where = _GUIDE_ONLY[key]
        hint = f"; the SDK's TuningModel refuses it: write it as {where}" if where else (
            "; the SDK's TuningModel refuses it and has no such field: remove it"
        )
        self.add("C001", [key], f"{key} is not a field of the SDK's job file{hint}",
                 severity=Severity.error, suggested=where, line=line)  # fmt: skip
        if key == "mode":
            self.training_type(raw, key, line)
        elif key != "workspace_dir":
            self.top_scalar("job_name" if key == "job_name" else key, raw, key, line)

    def training_type(self, raw: Any, path: str, line: int | None) -> None:
        if isinstance(raw, str):  # TrainingType.PG_OPD written as PG_OPD
            raw = raw.split(".")[-1].lower()
        value = self.value(path, raw, _spec("choice", choices=_TRAINING_TYPES), line)
        if value is not None:
            self.out["mode"] = value
            self.lines["mode"] = self.lines["training_type"] = line or 0

    def sdk_model(self, raw: Any, path: str, line: int | None) -> None:
        """The SDK's `model: {name: ...}` (a FoundationModel)."""
        if isinstance(raw, str):  # the guide's form: the SDK refuses it, its meaning is plain
            self.add("C002", [path], f"{path} = {_show(raw)} must be a mapping {{name: {raw}}} "
                     "in the SDK's job file", suggested={"name": raw}, line=line)  # fmt: skip
            self.top_scalar("model", raw, path, line)
            return
        m = self.mapping(raw, path, line)
        for key, sub in (m or {}).items():
            key, sub_line = str(key), _line(m, key)
            if key == "name":
                self.top_scalar("model", sub, f"{path}.name", sub_line)
            else:
                self.unknown(f"{path}.{key}", key, {"name": f"{path}.name"}, sub_line)

    def section(self, key: str, raw: Any, path: str, line: int | None) -> None:
        if line:
            self.lines.setdefault(path, line)  # C516/C517/C701 point at `functions:` etc.
        if self.layout == "sdk" and key == "name":
            self.top_scalar("job_name", raw, path, line)
        elif self.layout == "sdk" and key == "model":
            self.sdk_model(raw, path, line)
        elif key == "observability":
            self.mapping(raw, path, line)  # the SDK's Observability takes any fields
            self.as_sdk_reads(path, raw, "mapping")
        elif key == "training_type":
            self.training_type(raw, path, line)
        elif key in ("model", "base_model") and self.layout == "platform":
            if key == "model" or "model" not in self.out:
                self.top_scalar("model", raw, path, line)
        elif self.layout == "platform" and key not in ("job_name", "hyper_parameters") and (
            key not in ("training_file_ids", "validation_file_ids")
        ):
            self.platform[key] = _plain(raw)
        elif key == "training":
            self.training(raw, path, line)
        elif key == "hyper_parameters":
            self.hyper_parameters(raw, path + ".", line)
        elif key == "resources":
            self.resources(raw, path, line)
        elif key == "functions":
            self.functions(raw, path, line)
        elif key in ("datasets", "training_datasets", "validation_datasets"):
            self.datasets(key, raw, path, line)
        elif key in ("training_file_ids", "validation_file_ids"):
            self.file_ids(key, raw, path, line)
        elif key in _ENTITY_KEYS:
            self.entity_args[key] = (raw, line)
        else:
            self.top_scalar(key, raw, path, line)

    def mapping(self, raw: Any, path: str, line: int | None) -> Mapping[str, Any] | None:
        if isinstance(raw, Mapping):
            return raw
        self.invalid.add(path)
        self.add("C002", [path], f"{path} = {_show(raw)} must be a mapping", line=line)
        return None

    def top_scalar(self, key: str, raw: Any, path: str, line: int | None) -> None:
        if key == "mode":
            self.training_type(raw, path, line)
            return
        value = self.value(path, raw, _spec("str"), line)
        if value is not None:
            self.out[key] = value
            self.lines[key] = line or 0

    def training(self, raw: Any, path: str, line: int | None) -> None:
        m = self.mapping(raw, path, line)
        for key, sub in (m or {}).items():
            key, sub_line = str(key), _line(m, key)
            if key == "hyper_parameters":
                self.hyper_parameters(sub, f"{path}.{key}.", sub_line)
            elif key == "resources":
                self.resources(sub, f"{path}.{key}", sub_line)
            elif key == "type" and self.layout == "sdk":
                self.training_type(sub, f"{path}.type", sub_line)
            elif key in self.book.hyper_parameters:
                self.unknown(
                    f"{path}.{key}", key, {key: f"{path}.hyper_parameters.{key}"}, sub_line
                )
                self.hp_value(key, sub, f"{path}.{key}", sub_line)
            else:
                cands = {
                    "hyper_parameters": f"{path}.hyper_parameters",
                    "resources": f"{path}.resources",
                }
                if self.layout == "sdk":
                    cands |= {"type": f"{path}.type", "mode": f"{path}.type"}
                self.unknown(f"{path}.{key}", key, cands, sub_line)

    def hyper_parameters(self, raw: Any, prefix: str, line: int | None = None) -> None:
        if line:
            self.lines["hyper_parameters"] = line
        m = raw if not prefix else self.mapping(raw, prefix.rstrip("."), line)
        for key, sub in (m or {}).items():
            key, sub_line = str(key), _line(m, key)
            if key in self.book.hyper_parameters:
                self.hp_value(key, sub, prefix + key, sub_line)
            else:
                self.unknown(prefix + key, key, self._hp_candidates(), sub_line)

    def hp_value(self, key: str, raw: Any, path: str, line: int | None) -> None:
        value = self.value(path, raw, self.book.hyper_parameters[key], line, param=key)
        self.seen_hp[key] = None
        if line:
            self.lines[key] = line
        if value is not None:
            self.hp[key] = value

    def resources(self, raw: Any, path: str, line: int | None) -> None:
        m = self.mapping(raw, path, line)
        specs = self.book.resources
        for key, sub in (m or {}).items():
            key, sub_line = str(key), _line(m, key)
            if key not in specs:
                self.unknown(f"{path}.{key}", key, {k: f"{path}.{k}" for k in specs}, sub_line)
                continue
            value = self.value(f"{path}.{key}", sub, specs[key], sub_line, param=key)
            self.lines[key] = sub_line or 0
            if value is not None:
                self.out["resources"][key] = value

    def functions(self, raw: Any, path: str, line: int | None) -> None:
        if not isinstance(raw, list):
            self.invalid.add(path)
            self.add("C002", [path], f"{path} must be a list of functions", line=line)
            return
        for i, item in enumerate(raw):
            self.function(item, f"{path}[{i}]", _line(raw, i) or line)

    def function(self, raw: Any, path: str, line: int | None) -> None:
        m = self.mapping(raw, path, line)
        if m is None:
            return
        fn: dict[str, Any] = {}
        self.lines[path] = line or 0
        specs = _function_fields()
        for key, sub in m.items():
            key, sub_line = str(key), _line(m, key)
            full = f"{path}.{key}"
            if sub_line:
                self.lines[full] = sub_line
            if key == "type":
                fn["type"] = self.function_type(sub, full, sub_line)
            elif key in specs:
                fn[key] = self.value(full, sub, specs[key], sub_line)
            elif key == "reward_metric_weight":
                fn[key] = self.metric_weights(sub, full, sub_line)
            elif key == "fcmodel":
                fn[key] = self.fcmodel(sub, full, sub_line)
            elif key == "runtime":
                fn[key] = self.runtime(sub, full, sub_line)
            elif key in _INSTANCE_KEYS:  # filled in by the SDK; checked, not judged
                kind: Literal["int", "str"] = "int" if key == "instance_status" else "str"
                self.value(full, sub, _spec(kind), sub_line)
            else:
                self.unknown(full, key, {k: f"{path}.{k}" for k in _FUNCTION_KEYS}, sub_line)
        if fn.get("type") is None and "type" not in m:
            fn["type"] = _infer_type(fn)
            if fn["type"] is None and self.layout == "sdk":
                fn["type"] = "rollout"  # the SDK's own default for a function without a type
            elif fn["type"] is None:
                self.add(
                    "C002",
                    [f"{path}.type"],
                    f"{path}.type is missing: must be rollout, reward or group_reward",
                    line=line,
                )
        self.out["functions"].append({k: v for k, v in fn.items() if v is not None})

    def function_type(self, raw: Any, path: str, line: int | None) -> str | None:
        if isinstance(raw, str):  # FunctionType.ROLLOUT written as ROLLOUT
            raw = raw.split(".")[-1].lower()
        return self.value(path, raw, _spec("choice", choices=_FUNCTION_TYPES), line)

    def metric_weights(self, raw: Any, path: str, line: int | None) -> dict[str, float] | None:
        m = self.mapping(raw, path, line)
        if m is None:
            return None
        spec = _spec("float", 0)
        clean = {str(k): self.value(f"{path}.{k}", v, spec, _line(m, k)) for k, v in m.items()}
        return {k: v for k, v in clean.items() if v is not None}

    def fcmodel(self, raw: Any, path: str, line: int | None) -> dict[str, Any] | None:
        m = self.mapping(raw, path, line)
        out = {}
        for key, sub in (m or {}).items():
            key, sub_line = str(key), _line(m, key)
            if key in _FCMODEL_KEYS:
                kind: Literal["list", "str"] = "list" if key == "extra_files" else "str"
                out[key] = self.value(f"{path}.{key}", sub, _spec(kind), sub_line)
                if sub_line:
                    self.lines[f"{path}.{key}"] = sub_line
            else:
                self.unknown(f"{path}.{key}", key, {k: f"{path}.{k}" for k in _FCMODEL_KEYS},
                             sub_line)  # fmt: skip
        return {k: v for k, v in out.items() if v is not None} if m is not None else None

    def runtime(self, raw: Any, path: str, line: int | None) -> dict[str, Any] | None:
        m = self.mapping(raw, path, line)
        if m is None:
            return None
        specs = self.book.function_runtime
        out = {}
        for key, sub in m.items():
            key, sub_line = str(key), _line(m, key)
            if key not in specs:
                self.unknown(f"{path}.{key}", key, {k: f"{path}.{k}" for k in specs}, sub_line)
                continue
            value = self.value(f"{path}.{key}", sub, specs[key], sub_line)
            if sub_line:
                self.lines[f"{path}.{key}"] = sub_line  # findings point at the field itself
            if value is not None:
                out[key] = value
        return out

    def datasets(self, key: str, raw: Any, path: str, line: int | None) -> None:
        if not isinstance(raw, list):
            self.invalid.add(path)
            self.add("C002", [path], f"{path} must be a list of datasets", line=line)
            return
        keyword = key != "datasets"
        allowed = _KEYWORD_DATASET_KEYS if keyword else _DATASET_KEYS
        for i, item in enumerate(raw):
            ipath, iline = f"{path}[{i}]", _line(raw, i) or line
            m = self.mapping(item, ipath, iline)
            ds: dict[str, Any] = {"type": key.split("_")[0]} if keyword else {}
            for k, sub in (m or {}).items():
                k, sub_line = str(k), _line(m, k)
                if k not in allowed:
                    self.unknown(f"{ipath}.{k}", k, {a: f"{ipath}.{a}" for a in allowed}, sub_line)
                    continue
                if k == "mount_storage":
                    ds[k] = self.mount_storage(sub, f"{ipath}.{k}", sub_line)
                    continue
                choices = {"type": _DATASET_TYPES, "data_source_type": _DATA_SOURCES}.get(k)
                spec = _spec("choice", choices=choices) if choices else _spec("str")
                if choices and isinstance(sub, str):  # DatasetType.TRAINING / "Training"
                    sub = sub.split(".")[-1].lower()
                ds[k] = self.value(f"{ipath}.{k}", sub, spec, sub_line)
            if m is not None:
                self.out["datasets"].append({k: v for k, v in ds.items() if v is not None})

    def mount_storage(self, raw: Any, path: str, line: int | None) -> dict[str, str] | None:
        m = self.mapping(raw, path, line)
        out = {}
        for key, sub in (m or {}).items():
            key, sub_line = str(key), _line(m, key)
            if key in _MOUNT_KEYS:
                out[key] = self.value(f"{path}.{key}", sub, _spec("str"), sub_line)
            else:
                self.unknown(f"{path}.{key}", key, {k: f"{path}.{k}" for k in _MOUNT_KEYS},
                             sub_line)  # fmt: skip
        return {k: v for k, v in out.items() if v is not None} if m is not None else None

    def file_ids(self, key: str, raw: Any, path: str, line: int | None) -> None:
        ids = raw if isinstance(raw, list) else [raw]
        for i, fid in enumerate(ids):
            if not isinstance(fid, str):
                self.add(
                    "C002",
                    [path],
                    f"{path}[{i}] = {_show(fid)} must be a file id string",
                    line=line,
                )
                continue
            self.out["datasets"].append({"type": key.split("_")[0], "file_id": fid})


class _Sub(dict):  # type: ignore[type-arg]
    """Some keys of a ruamel mapping, keeping its line information."""

    def __init__(self, parent: Any, items: Mapping[str, Any]) -> None:
        super().__init__(items)
        self.lc = getattr(parent, "lc", None)


def _infer_type(fn: Mapping[str, Any]) -> str | None:
    ref = str(fn.get("entity_id") or "") + " " + str((fn.get("fcmodel") or {}).get("classpath", ""))
    if ref.startswith("ro-") or "rollout" in ref.lower():
        return "rollout"
    if ref.startswith("rw-") or "reward" in ref.lower():
        return "reward"
    return None


# ---------------------------------------------------------------------------------------------
# --set and run hints.


def parse_set(item: str) -> tuple[str, Any]:
    """'KEY=VALUE' -> (key, YAML scalar); InputError on bad syntax."""
    key, eq, text = item.partition("=")
    key = key.strip()
    if not eq or not key:
        raise InputError(f"--set {item}: expected KEY=VALUE (e.g. --set learning_rate=1e-5)")
    where = f"--set {item}"
    _check_nesting(where, text)
    try:
        value = _yaml("safe").load(text) if text.strip() else ""
    except RecursionError:
        raise InputError(f"{where}: nested too deeply for a value") from None
    except Exception as err:  # ruamel's errors, and its constructor's on odd shapes
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise InputError(f"{where}: value is not a YAML scalar ({first[:200]})") from None
    _check_expansion(where, value)
    return key, value


def _set_target(key: str) -> tuple[str, str]:
    """Where a --set key lands: ('hp'|'resources'|'extra'|'top'|'function', name)."""

    book = rulebook()
    said = set_names()
    if key in said and key not in book.hyper_parameters:  # TRL's beta, verl's Hydra keys
        return "hp", said[key]
    for fw in ("trl", "verl"):
        if key in framework_key_params(fw):
            return "converted", key
    parts = key.split(".")
    sdk_names = {"model.name": "model", "name": "job_name", "training.type": "mode"}
    if key in sdk_names:  # the SDK's names of the job's own fields
        return "top", sdk_names[key]
    for prefix in (["training", "hyper_parameters"], ["hyper_parameters"]):
        if parts[: len(prefix)] == prefix and len(parts) == len(prefix) + 1:
            parts = parts[len(prefix) :]
            if parts[0] in book.hyper_parameters:
                return "hp", parts[0]
    for prefix in (["training", "resources"], ["resources"]):
        if parts[: len(prefix)] == prefix and len(parts) == len(prefix) + 1:
            parts = parts[len(prefix) :]
    if len(parts) == 1:
        name = parts[0]
        if name in book.hyper_parameters:
            return "hp", name
        if name in book.resources:
            return "resources", name
        if name in _EXTRAS:
            return "extra", name
        if name in ("model", "teacher_model", "job_name", "tuned_model_name", "workspace_dir",
                    "mode"):  # fmt: skip
            return "top", name
    if len(parts) >= 3 and parts[0] == "functions" and parts[1].isdigit():
        return "function", key
    known = [*book.hyper_parameters, *book.resources, *_EXTRAS, "model", *said]
    known += [k for fw in ("trl", "verl") for k in framework_key_params(fw)]
    near = _close(key, known) or _close(parts[-1], known)
    hint = f"; did you mean {near[0]}?" if near else ""
    raise InputError(f"--set {key}: unknown key{hint}")


def _apply_function_set(walker: _Walker, key: str, value: Any) -> None:
    _, idx, *rest = key.split(".")
    fns = walker.out["functions"]
    i = int(idx)
    if i >= len(fns):
        raise InputError(f"--set {key}: the config has {len(fns)} function(s), no index {i}")
    if rest[0] == "runtime" and len(rest) == 2:
        spec = walker.book.function_runtime.get(rest[1])
        if spec is None:
            raise InputError(f"--set {key}: unknown runtime field {rest[1]}")
        clean = walker.value(f"--set {key}", value, spec, None)
        if clean is not None:
            fns[i].setdefault("runtime", {})[rest[1]] = clean
        return
    spec = _function_fields().get(rest[0])
    if spec is not None and len(rest) == 1:
        clean = walker.value(f"--set {key}", value, spec, None)
        if clean is not None:
            fns[i][rest[0]] = clean
        return
    raise InputError(
        f"--set {key}: only functions.N.runtime.FIELD, timeout, weight, name, entity_id can be set"
    )


# ---------------------------------------------------------------------------------------------
# The public loader.


def load_config(
    path: Path | str | None,
    sets: Sequence[str] = (),
    hints: Mapping[str, object] | None = None,
    training_samples: int | None = None,
    defaults: Mapping[str, Scalar] | None = None,
    job_file: JobFile | None = None,
) -> LoadedConfig:
    """Load a job config (any of the three shapes), layer defaults < run hints < file < --set.

    `defaults`: values that replace the platform's defaults (the run's framework's own, e.g.
    TRL's algorithm); their origin stays "default", as assumptions. `job_file`: the file at
    `path` already read and parsed (read_job_file), not read again.
    Raises InputError only when the file or a --set is unusable; everything else is a finding.
    """

    book = rulebook()
    source = Path(path) if path is not None else None
    lines: dict[str, int] = {}
    layout: Layout = "none"
    walker = _Walker(str(source or "<none>"), lines, "none")
    framework: str | None = None
    facts: dict[str, Any] = {}
    if source is None:
        job_file = None
    else:
        if job_file is None or job_file.path != source:
            job_file = read_job_file(source)
        doc = job_file.document
        framework, facts = _framework_file(doc)
        if framework is not None:
            # a TRL or verl file: its values in the guide's names, read as a flat job; the
            # file's other settings are the framework's own, not unknown keys of the job
            walker = _Walker(str(source), lines, "flat")
            walker.walk({k: v for k, v in facts.items() if k in book.hyper_parameters})
            lines.update(_framework_lines(doc, framework))
        else:
            doc = _one_platform_job(doc, source)
            layout = detect_layout(doc)
            walker = _Walker(str(source), lines, layout)
            if layout in ("yaml", "sdk"):  # the layouts `dashscope rl run -c` is given
                walker.yaml11 = yaml11_texts(job_file)
            walker.walk(doc)
            _not_a_job(walker, source, doc, layout)
            if layout == "yaml":
                _guide_layout(walker, source, doc)
            _yaml11_strings(walker)
    origin: dict[str, Origin] = {k: "file" for k in walker.hp}
    extras: dict[str, Any] = {}
    _layer_hints(walker, hints or {}, origin, source is not None, extras)
    for item in sets:
        _layer_set(walker, item, origin, extras)
    hp, notes = _fill_defaults(
        walker, origin, report_missing=source is not None and framework is None
    )
    taken = {k: v for k, v in (defaults or {}).items() if k in hp and origin.get(k) == "default"}
    hp.update(taken)
    if walker.platform:
        job = walker.platform
        notes.append(
            f"a job object the platform returned (job_id {job.get('job_id', '?')}, status "
            f"{job.get('status', '?')}): its model and hyper_parameters are judged; its "
            "functions and resources are not in it"
        )
    samples = _training_samples(training_samples, extras, walker.out, source, notes)
    walker.out["hyper_parameters"] = hp
    walked = _joined_surrogates(walker.out)  # a new tree: the job shares no dict with `hp`
    cfg = JobConfig.of(walked)
    del book
    return LoadedConfig(
        config=cfg,
        findings=walker.findings,
        hyper_parameters=hp,
        origin=origin,
        source=source,
        layout=layout,
        training_samples=samples,
        notes=notes,
        extras=extras,
        lines=lines,
        unjudged=frozenset(walker.invalid - walker.hp.keys() - walked["resources"].keys()),
        function_paths=walker.fn_paths,
        framework=framework,
        facts=facts,
        defaults_taken=taken,
        file=job_file,
    )


def _one_platform_job(doc: Mapping[str, Any], source: Path) -> Mapping[str, Any]:
    """The job of a platform listing (`dashscope rl list -o json`: {jobs: [...], ...}) that
    holds one; a listing of several is refused (which one is meant cannot be guessed)."""
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or "job_id" in doc:
        return doc
    found = [j for j in jobs if isinstance(j, Mapping) and "job_id" in j]
    if len(found) == 1:
        return found[0]
    if found:
        ids = ", ".join(str(j["job_id"]) for j in found[:3]) + (", ..." if len(found) > 3 else "")
        raise InputError(
            f"{source}:{_line(doc, 'jobs') or 1}: a listing of {len(found)} platform jobs "
            f"({ids}); expected one job: save one, e.g. `jq '.jobs[0]' {source.name}`"
        )
    return doc


def _framework_file(doc: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(framework, its values in the guide's names plus the framework's own facts) for a verl
    config tree (a copy of ppo_trainer.yaml, a Hydra dump .hydra/config.yaml) or TRL arguments
    (a `trl grpo --config` YAML, a saved TrainingArguments JSON); (None, {}) for a job file."""

    framework = framework_of_document(doc)
    if framework is None:
        return None, {}
    plain = _plain(doc)
    facts = {**verl_hints(plain), **verl_facts(plain)} if framework == "verl" else trl_hints(plain)
    response = facts.get("max_response_length")
    if "max_length" not in facts and isinstance(response, int):
        # the guide's max_length is prompt + response; TRL >= 1.0 caps only the completion:
        # the prompt budget is the file's or the guide's, and the dialect subtracts the same

        prompt = facts.get("max_prompt_length")
        if not isinstance(prompt, int):
            prompt = rulebook().hyper_parameters["max_prompt_length"].default
        facts["max_length"] = prompt + response
    return framework, facts


def _framework_lines(doc: Mapping[str, Any], framework: str) -> dict[str, int]:
    """Guide parameter -> line of its framework key in the file (top-level keys: TRL's)."""

    out: dict[str, int] = {}
    for param, per in dialects().names.items():
        entry = per.get(framework)
        if entry is None or not entry.key:
            continue
        node: Any = doc
        parts = entry.key.split(".")
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping) and parts[-1] in node:
            line = _line(node, parts[-1])
            if line:
                out[param] = line
    return out


def _not_a_job(walker: _Walker, source: Path, doc: Mapping[str, Any], layout: Layout) -> None:
    """Errors for a document that is no job at all (a trainer_state.json, `{"a": 1}`: none of
    its keys is a job field or a hyperparameter), and the count of unknown keys not listed."""
    extra = walker.unknown_keys - _SAID_UNKNOWN
    if extra > 0:
        walker.add("C001", [], f"... and {extra:,} more unknown keys (the first "
                   f"{_SAID_UNKNOWN} are listed)", line=None)  # fmt: skip
    known = set(_hp_names()) | set(_YAML_TOP) | set(_KEYWORD_TOP) | set(_SDK_TOP)
    known |= set(walker.book.hp_aliases)
    keys = [str(k) for k in doc]
    if layout == "flat" and "log_history" in keys:
        walker.add(
            "C001",
            ["log_history"],
            f"{source} is a trainer state (metrics: log_history), not a job file; expected a "
            "job config (`rl-advisor diagnose` reads this file)",
            severity=Severity.error,
            line=_line(doc, "log_history"),
        )
    elif layout == "flat" and not any(k in known for k in keys):
        shown = ", ".join(_show(k, 30) for k in keys[:3]) + (", ..." if len(keys) > 3 else "")
        walker.add(
            "C001",
            [],
            f"{source} is not a job file: none of its {len(keys)} top-level keys ({shown}) is "
            "a job field or a hyperparameter",
            severity=Severity.error,
            line=1,
        )


def _guide_layout(walker: _Walker, source: Path, doc: Mapping[str, Any]) -> None:
    """C008: a file in the guide's layout holds keys the platform SDK refuses; one finding
    naming them and the command that writes the same job in the SDK's layout."""
    refused = [str(k) for k in doc if str(k) in _GUIDE_ONLY]
    if "model" in doc and not isinstance(doc["model"], Mapping):
        refused.append("model")
    if not refused:
        return
    where = [w for k in refused if (w := _line(doc, k))]
    shown = ", ".join("model (a string)" if k == "model" else k for k in refused)
    walker.add(
        "C008",
        refused,
        f"the guide's layout: {shown}; the platform SDK's job file (TuningModel.load_from_yaml, "
        "`dashscope rl run -c`) refuses these keys; `rl-advisor validate "
        f"{source.name} --convert-to sdk -o {source.stem}.sdk.yaml` writes the same job in the "
        "SDK's layout",
        line=min(where) if where else 1,
    )


# YAML 1.1 (PyYAML's SafeLoader, what the SDK loads job files with) reads a number only in these
# shapes: `1e-05` and `2e-6` (no dot, or an unsigned exponent) are strings to it, numbers to
# YAML 1.2. From the YAML 1.1 type repository (float and int).
_YAML11_FLOAT = re.compile(
    r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_YAML11_INT = re.compile(
    r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
    r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"
)
_NUMBER_TAGS = ("tag:yaml.org,2002:float", "tag:yaml.org,2002:int")


def yaml11_number(value: float) -> str:
    """A float as YAML 1.1 and 1.2 both read it as a number: `1.0e-05`, never `1e-05`."""
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    if not e or not math.isfinite(value):
        return {"inf": ".inf", "-inf": "-.inf", "nan": ".nan"}.get(text, text)
    if "." not in mantissa:
        mantissa += ".0"
    if exponent[0] not in "+-":
        exponent = "+" + exponent
    return f"{mantissa}e{exponent}"


def yaml11_texts(job_file: JobFile) -> dict[str, tuple[str, int]]:
    """Path -> (text, line) of each plain scalar YAML 1.2 reads as a number and YAML 1.1 (the
    SDK's loader) as a string: `2e-6`, `0e0`. Paths as the walker writes them; the scalars as
    written, from the text the job file was read from."""
    if job_file.path.suffix.lower() == ".py":
        return {}
    if job_file.yaml11 is not None:  # found while the file was parsed
        return dict(job_file.yaml11)
    try:
        root = _yaml().compose(job_file.text)
    except Exception:  # read once already; a document composed differently is not judged
        return {}
    found: dict[str, tuple[str, int]] = {}
    _visit_numbers(root, "", found)
    return found


def _visit_numbers(
    node: Any,
    path: str,
    found: dict[str, tuple[str, int]],
    budget: list[int] | None = None,
    depth: int = 0,
) -> None:
    """yaml11_texts' scalars under `node` into `found`. With `budget` ([nodes left]), a tree
    whose aliases repeat it past _MAX_NODES nodes or _MAX_NESTING levels is not walked to the
    end: _Exhausted (the file's own checks refuse such a document once it is constructed)."""
    if budget is not None:
        budget[0] -= 1
        if budget[0] < 0 or depth > _MAX_NESTING:
            raise _Exhausted
    kind = type(node).__name__
    if kind == "MappingNode":
        for key, value in node.value:
            where = f"{path}.{key.value}" if path else str(key.value)
            _visit_numbers(value, where, found, budget, depth + 1)
    elif kind == "SequenceNode":
        for i, value in enumerate(node.value):
            _visit_numbers(value, f"{path}[{i}]", found, budget, depth + 1)
    elif kind == "ScalarNode" and node.style is None and node.tag in _NUMBER_TAGS:
        raw = str(node.value)
        if not (_YAML11_FLOAT.fullmatch(raw) or _YAML11_INT.fullmatch(raw)):
            found[path] = (raw, node.start_mark.line + 1)


class _Exhausted(Exception):
    pass


def _yaml11_nodes(root: Any) -> dict[str, tuple[str, int]] | None:
    """yaml11_texts of a composed node tree, before it is constructed; None where the walk
    stops short (see _visit_numbers) or fails: yaml11_texts then composes the text again."""
    found: dict[str, tuple[str, int]] = {}
    try:
        _visit_numbers(root, "", found, [_MAX_NODES])
    except Exception:
        return None
    return found


def _yaml11_strings(walker: _Walker) -> None:
    """C009 where the file has a number the SDK's YAML 1.1 loader reads as a string (a field
    that is a string to the SDK took the text as written: no finding there)."""
    for path, (raw, line) in walker.yaml11.items():
        if path in walker.yaml11_taken:
            continue
        try:
            number = float(raw.replace("_", ""))
        except ValueError:
            continue
        if not math.isfinite(number):
            continue  # 1e999: no number either way
        safe = yaml11_number(number) if number != int(number) or "e" in raw.lower() else raw
        name = path.rsplit(".", 1)[-1]
        param = name if name in walker.book.hyper_parameters else path
        walker.add(
            "C009",
            [param],
            f"{path} = {raw}: the platform SDK reads job files as YAML 1.1 (PyYAML's "
            f"SafeLoader), which takes {raw} for the string '{raw}', not a number; write "
            f"{safe}",
            suggested=safe,
            line=line,
        )


def _layer_hints(
    walker: _Walker,
    hints: Mapping[str, Any],
    origin: dict[str, Origin],
    have_file: bool,
    extras: dict[str, Any],
) -> None:
    """Values the run's own log reports: they fill what the file leaves out.

    An explicit job file wins over them: the patch is a diff
    of the file the user will resubmit. A disagreement is reported as C006 so it is never silent.
    """

    specs = walker.book.hyper_parameters
    hints = _with_max_length(hints, walker)
    for key, raw in hints.items():
        if key == "model" and isinstance(raw, str) and not walker.out.get("model"):
            walker.out["model"] = raw
            continue
        if key in _EXTRAS and isinstance(raw, int | float) and not isinstance(raw, bool):
            extras[key] = raw  # e.g. expected_step_seconds measured from the run
            continue
        if key not in specs:
            continue
        try:
            value = _coerce(raw, specs[key])
        except _Bad:
            continue
        choices = specs[key].choices
        if not _in_range(value, specs[key]) or (choices and value not in choices):
            continue
        old = walker.hp.get(key)
        if have_file and old is not None:
            if not _same_value(old, value):
                walker.add(
                    "C006",
                    [key],
                    f"{key}: the run's log says {fmt(value)}, the file says "
                    f"{fmt(old)}; the file's value is used",
                    line=walker.lines.get(key),
                    suggested=value,
                )
            continue
        walker.hp[key] = value
        origin[key] = "run"


def _with_max_length(hints: Mapping[str, Any], walker: _Walker) -> Mapping[str, Any]:
    """The platform has one limit, max_length = prompt + response. A run that shows only its
    response cap (verl's max_response_length without the prompt's, a TRL run's cut
    completions) gives max_length with the prompt budget of the hints, else the file's, else
    the platform default."""
    response = hints.get("max_response_length")
    if "max_length" in hints or "max_length" in walker.hp:  # a file's max_length stands alone
        return hints
    if not isinstance(response, int) or isinstance(response, bool):
        return hints
    prompt = hints.get("max_prompt_length", walker.hp.get("max_prompt_length"))
    if not isinstance(prompt, int) or isinstance(prompt, bool):
        prompt = walker.book.hyper_parameters["max_prompt_length"].default
    if not isinstance(prompt, int):
        return hints
    return {**hints, "max_length": prompt + response}


def _same_value(a: Any, b: Any) -> bool:
    """Equal, or for numbers within 2%: a logged lr is the schedule sampled at logging steps
    and printed to a few digits (a 1e-5 run logs a peak of 9.99e-6), not a different lr."""
    numbers = isinstance(a, int | float) and isinstance(b, int | float)
    if numbers and (isinstance(a, float) or isinstance(b, float)):
        return math.isclose(float(a), float(b), rel_tol=0.02)
    return bool(a == b)


def _layer_set(
    walker: _Walker, item: str, origin: dict[str, Origin], extras: dict[str, Any]
) -> None:
    key, value = parse_set(item)
    where, name = _set_target(key)
    if where == "converted":
        name, value = _converted(walker, key, value)
        where = "hp"
    if where == "function":
        _apply_function_set(walker, name, value)
        return
    if where == "extra":
        clean = walker.value(f"--set {key}", value, _spec(_EXTRAS[name], 0), None)
        if clean is not None:
            extras[name] = clean
        return
    if where == "top":
        walker.top_scalar(name, value, f"--set {key}", None)
        return
    specs = walker.book.hyper_parameters if where == "hp" else walker.book.resources
    before = len(walker.findings)
    clean = walker.value(f"--set {key}", value, specs[name], None, param=name)
    if clean is None:
        # A value typed on the command line that cannot be used is an unusable call (exit 2),
        # not a finding about the job: the run would otherwise be judged on the file's value.
        errors = [f for f in walker.findings[before:] if f.severity == Severity.error]
        if errors:
            raise InputError(errors[0].message)
        return
    if where == "hp":
        walker.hp[name] = clean
        origin[name] = "set"
        walker.lines.pop(name, None)
    else:
        walker.out["resources"][name] = clean


def _converted(walker: _Walker, key: str, value: Any) -> tuple[str, Any]:
    """A framework key whose value is not the guide's (TRL's max_completion_length is
    max_length minus max_prompt_length; verl's ppo_mini_batch_size counts prompts):
    (guide parameter, the guide's value)."""

    specs = walker.book.hyper_parameters
    for fw in ("trl", "verl"):
        param = framework_key_params(fw).get(key)
        if param is None:
            continue
        entry = dialects().names[param][fw]
        if not isinstance(value, int) or isinstance(value, bool):
            raise InputError(f"--set {key}={value!r}: expected a whole number")
        if entry.minus is not None:
            base = walker.hp.get(entry.minus, specs[entry.minus].default)
            return param, value + base
        if entry.divide_by is not None:
            per = walker.hp.get(entry.divide_by, specs[entry.divide_by].default)
            return param, value * per
    raise InputError(f"--set {key}: unknown key")


def _fill_defaults(
    walker: _Walker, origin: dict[str, Origin], report_missing: bool
) -> tuple[dict[str, Any], list[str]]:

    specs = walker.book.hyper_parameters
    hp: dict[str, Any] = {}
    notes: list[str] = []
    given = walker.hp.keys() | walker.seen_hp
    missing = [k for k, s in specs.items() if s.required and k not in given]
    invalid = [k for k in walker.seen_hp if k not in walker.hp]
    for key, spec in specs.items():
        hp[key] = walker.hp.get(key, spec.default)
        origin.setdefault(key, "default")
    have_file = report_missing
    if any(p.endswith("hyper_parameters") for p in walker.invalid):
        report_missing = False  # the block itself is reported as C002
    if report_missing and len(missing) > 5:  # one finding, not a wall of them
        walker.add(
            "C005",
            missing,
            f"{len(missing)} required hyperparameters are missing; the advisor assumes the "
            "guide's example values: " + ", ".join(f"{k}={fmt(specs[k].default)}" for k in missing),
            line=walker.lines.get("hyper_parameters"),
        )
    elif report_missing:
        for key in missing:
            walker.add(
                "C005",
                [key],
                f"{key} is missing; the advisor assumes the default "
                f"{fmt(specs[key].default)} (the guide's example value)" + _misspelt(walker, key),
                suggested=specs[key].default,
                line=walker.lines.get("hyper_parameters"),
            )
    if invalid:
        notes.append(
            "invalid values replaced by defaults: "
            + ", ".join(f"{k}={fmt(hp[k])}" for k in invalid)
        )
    if missing and have_file:
        walker.invalid.update(missing)  # judged by no rule: C005 already names the assumption
        notes.append(
            "assumed defaults for missing "
            + ", ".join(f"{k}={fmt(hp[k])}" for k in missing)
            + " (no rule judges them: give the values to have them checked)"
        )
    elif missing:
        notes.append("assumed defaults for " + ", ".join(f"{k}={fmt(hp[k])}" for k in missing))
    return hp, notes


def _misspelt(walker: _Walker, key: str) -> str:
    """'; is X (line N) a misspelling of it?' when an unknown key's nearest name is `key`."""
    for f in walker.findings:
        near = f.suggested if f.id == "C001" and isinstance(f.suggested, str) else ""
        if near.rsplit(".", 1)[-1] == key:
            where = f" (line {f.line})" if f.line else ""
            return f"; is {f.params[0]}{where} a misspelling of it?"
    return ""


def _training_samples(
    explicit: int | None,
    extras: Mapping[str, Any],
    out: Mapping[str, Any],
    source: Path | None,
    notes: list[str],
) -> int | None:
    """--training-samples, else --set training_samples, else count a local training JSONL."""
    if explicit is not None:
        return explicit
    if extras.get("training_samples") is not None:
        return int(extras["training_samples"])
    if source is None:
        return None
    base = source.parent / (out.get("workspace_dir") or ".")
    total, found = 0, False
    for ds in out.get("datasets", []):
        if ds.get("type") != "training" or not ds.get("file_name"):
            continue
        for cand in (base / ds["file_name"], source.parent / ds["file_name"]):
            if cand.is_file():
                total += _count_lines(cand)
                found = True
                break
        else:
            notes.append(
                f"training file {ds['file_name']} not found locally: the total step "
                "count is unknown (pass --training-samples N for the cadence checks)"
            )
    return total if found else None


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.strip())


# ---------------------------------------------------------------------------------------------
# Writing a patched job file.


def write_patched(
    source: Path | JobFile | None, changes: Mapping[str, Any], dest: Path
) -> None:
    """Write `source` with `changes` applied to `dest`, keeping comments, order and layout.

    Keys of `changes` are hyperparameter names (placed where the file keeps its
    hyper_parameters), resources field names, or dotted paths. JSON stays JSON. Refuses
    dest == source; writes atomically (a temp file renamed into place).
    """
    dest = Path(dest)
    path = source.path if isinstance(source, JobFile) else source
    if path is not None and Path(path).resolve() == dest.resolve():
        raise InputError(f"{dest}: the patched config must not overwrite its source")
    write_text_atomic(dest, patched_text(source, changes))


def patched_text(source: Path | JobFile | None, changes: Mapping[str, Any]) -> str:
    """The text `write_patched` writes: `source` with `changes` applied (nothing written). A
    JobFile is patched without reading or parsing the file again."""
    clean = {str(k): _plain(_scalar(v)) for k, v in changes.items()}
    if source is None:
        doc: Any = {"training": {"hyper_parameters": dict(clean)}}
        text, is_json = None, False
    else:
        if isinstance(source, JobFile):
            read, doc = source, copy.deepcopy(source.document)
        else:
            read = read_job_file(Path(source))
            doc = read.document
        source, text = read.path, read.text
        is_json = text.lstrip().startswith("{")
        job = _one_platform_job(doc, source)
        _apply_changes(job, clean, detect_layout(job), source)
        if not hasattr(doc, "ca"):  # read from Python source: written as the YAML keyword form
            doc, text, is_json = _plain(doc), None, False
    return _dump(doc, text, is_json)


# ---------------------------------------------------------------------------------------------
# Converting a job to the SDK's layout.


def sdk_layout_text(source: Path) -> tuple[str, list[str]]:
    """(the job of `source` as the SDK's job file, notes on what has no place in it).

    A file in the guide's layout is edited where it stands, comments and order kept: job_name
    becomes name, model a mapping {name}, mode training.type, workspace_dir each function's
    fcmodel.zipdir. Other layouts (run() keywords, a hyperparameter dict, a platform job) are
    written from the job read. Numbers are written as YAML 1.1 reads them (1.0e-06).
    """
    source = Path(source)
    doc = read_document(source)
    framework = framework_of_document(doc)
    if framework is not None:
        raise InputError(f"{source}: a {framework} config, not a platform job; nothing to convert")
    layout = detect_layout(doc)
    notes: list[str] = []
    if layout == "sdk":
        notes.append(f"{source.name} is in the SDK's layout already: copied, numbers respelt")
    elif layout == "yaml" and hasattr(doc, "ca"):
        _guide_to_sdk(doc, notes)
    else:
        doc = _job_to_sdk(load_config(source), notes)
    _respell_numbers(doc)
    text = None if not hasattr(doc, "ca") else _strip_assignment(source.read_text("utf-8"))
    return _dump(doc, text, False), notes


def _rename(m: Any, old: str, new: str, value: Any) -> None:
    """Key `old` of the ruamel mapping `m` becomes `new` (holding `value`), in its place."""
    pos = list(m).index(old)
    comment = m.ca.items.pop(old, None)
    del m[old]
    m.insert(pos, new, value)
    if comment:
        m.ca.items[new] = comment


def _guide_to_sdk(doc: Any, notes: list[str]) -> None:
    mapping = type(doc)
    if "job_name" in doc:
        _rename(doc, "job_name", "name", doc["job_name"])
    if "model" in doc and not isinstance(doc["model"], Mapping):
        _rename(doc, "model", "model", mapping([("name", doc["model"])]))
    if "mode" in doc:
        training = doc.get("training")
        if not isinstance(training, Mapping):
            doc["training"] = training = mapping()
        training.insert(0, "type", doc["mode"])
        doc.ca.items.pop("mode", None)
        del doc["mode"]
    if "workspace_dir" in doc:
        for fn in doc.get("functions") or ():
            fc: Any = fn.get("fcmodel") if isinstance(fn, Mapping) else None
            if isinstance(fc, Mapping) and "zipdir" not in fc:
                cast(Any, fc).insert(0, "zipdir", doc["workspace_dir"])  # a ruamel mapping
        doc.ca.items.pop("workspace_dir", None)
        del doc["workspace_dir"]
    if "tuned_model_name" in doc:
        notes.append(
            f"tuned_model_name {doc['tuned_model_name']} left out: the SDK's job file has no "
            "such field"
        )
        doc.ca.items.pop("tuned_model_name", None)
        del doc["tuned_model_name"]


def _job_to_sdk(loaded: LoadedConfig, notes: list[str]) -> dict[str, Any]:
    cfg = loaded.config.to_dict()
    out: dict[str, Any] = {}
    if "job_name" in cfg:
        out["name"] = cfg["job_name"]
    if "model" in cfg:
        out["model"] = {"name": cfg["model"]}
    if "teacher_model" in cfg:
        out["teacher_model"] = cfg["teacher_model"]
    functions = cfg.get("functions") or []
    for fn in functions:
        if "workspace_dir" in cfg and "fcmodel" in fn:
            fn["fcmodel"] = {"zipdir": cfg["workspace_dir"], **fn["fcmodel"]}
    if functions:
        out["functions"] = functions
    if cfg.get("datasets"):
        out["datasets"] = cfg["datasets"]
    training: dict[str, Any] = {"type": cfg["mode"]} if "mode" in cfg else {}
    given = {k: v for k, v in loaded.hyper_parameters.items() if loaded.origin.get(k) == "file"}
    if given:
        training["hyper_parameters"] = given
    if cfg.get("resources"):
        training["resources"] = cfg["resources"]
    if training:
        out["training"] = training
    if "tuned_model_name" in cfg:
        notes.append(f"tuned_model_name {cfg['tuned_model_name']} left out: the SDK's job file "
                     "has no such field")  # fmt: skip
    return out


def _respell_numbers(node: Any) -> None:
    """Floats the file spelt in exponent form become plain floats, written as 1.0e-06."""
    items = node.items() if isinstance(node, Mapping) else enumerate(node) if isinstance(
        node, list) else ()  # fmt: skip
    for key, value in list(items):
        if isinstance(value, float) and getattr(value, "_exp", None):
            node[key] = float(value)
        elif isinstance(value, Mapping | list):
            _respell_numbers(value)


def _scalar(value: Any) -> Any:
    """numpy scalars and the like -> Python (so ruamel and json can write them)."""
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, list | dict) else value


def _apply_changes(
    doc: Any, changes: Mapping[str, Any], layout: Layout, source: Path | str = "the job file"
) -> None:
    """Put each change where the file keeps it, making the mappings that are absent; a value
    of another kind on the way (`hyper_parameters: [1, 2]`) is an InputError, not replaced."""

    book = rulebook()
    hp_path = {
        "yaml": ["training", "hyper_parameters"],
        "sdk": ["training", "hyper_parameters"],
        "keyword": ["hyper_parameters"],
        "platform": ["hyper_parameters"],
    }.get(layout, [])
    res_path = {"yaml": ["training", "resources"], "sdk": ["training", "resources"]}.get(
        layout, ["resources"]
    )
    for key, value in changes.items():
        if "." in key:
            path = key.split(".")
        elif key in book.hyper_parameters:
            path = [*hp_path, key]
        elif key in book.resources:
            path = [*res_path, key]
        else:
            path = [*hp_path, key]
        node = doc
        for depth, part in enumerate(path[:-1]):
            if isinstance(node, list):
                if not (part.isdigit() and int(part) < len(node)):
                    _cannot_patch(source, node, part, path[:depth], node, key)
                child = node[int(part)]
            else:
                child = node.get(part)
                if child is None:
                    node[part] = child = type(doc)() if isinstance(doc, Mapping) else {}
            if not isinstance(child, Mapping | list):
                _cannot_patch(source, node, part, path[: depth + 1], child, key)
            node = child
        last = path[-1]
        if isinstance(node, list):
            if not (last.isdigit() and int(last) < len(node)):
                _cannot_patch(source, node, last, path[:-1], node, key)
            node[int(last)] = value
        else:
            node[last] = value


def _cannot_patch(
    source: Path | str, node: Any, part: str, where: list[str], found: Any, key: str
) -> NoReturn:
    line = ""
    lc: Any = getattr(node, "lc", None)  # ruamel's line info, when the node has one
    with contextlib.suppress(Exception):  # ruamel's line of the key, when it has one
        line = f":{lc.key(part)[0] + 1}" if isinstance(node, Mapping) else f":{lc.line + 1}"
    raise InputError(
        f"{source}{line}: {'.'.join(where)} is a {_kind(found)}; expected a mapping to put "
        f"{key} in (the patched config is not written)"
    )


# A JSON string, or a number in exponent form (json.dumps writes 1e-05)
_JSON_EXPONENT = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?[eE][-+]?\d+')


def _dump(doc: Any, text: str | None, is_json: bool) -> str:
    if is_json:
        out = json.dumps(_plain(doc), indent=2, ensure_ascii=False) + "\n"
        # a lone surrogate (a key read from a `\ud800` escape) has no UTF-8 form: it is
        # written back as the escape it was read from
        out = _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", out)
        # the SDK reads a job file with a YAML 1.1 loader, JSON included: 1e-05 -> 1.0e-05
        return _JSON_EXPONENT.sub(
            lambda m: m[0] if m[0][0] == '"' else yaml11_number(float(m[0])), out
        )
    y = _yaml()
    y.Representer = _yaml11_representer()
    if text is not None:
        # ruamel's guess reads the text's lines; the document it would also load (its `yaml`)
        # is the one already read and patched, so its loader is one that loads nothing
        # (a line of dashes and blanks alone, `  -` with its item cut off, is left out: the
        # guess reads past the end of such a line)
        lines = [ln if ln.strip(" -") else "" for ln in text.splitlines()]
        _, seq, offset = lazy.yaml.util.load_yaml_guess_indent(
            "\n".join(lines), yaml=_NoLoad()
        )
        y.indent(mapping=_mapping_indent(text), sequence=seq or 2, offset=offset or 0)
    y.width = 4096
    buf = io.StringIO()
    y.dump(doc, buf)
    return buf.getvalue()


@cache
def _yaml11_representer() -> type:
    """ruamel's round-trip representer, new floats written as YAML 1.1 reads them as numbers
    (`1.0e-05`: the SDK loads job files with PyYAML's SafeLoader). The file's own numbers keep
    their spelling (ruamel's ScalarFloat has its own representer)."""

    class Yaml11Floats(lazy.yaml.representer.RoundTripRepresenter):  # type: ignore[misc,name-defined]
        pass

    def represent(rep: Any, value: float) -> Any:
        return rep.represent_scalar("tag:yaml.org,2002:float", yaml11_number(value))

    Yaml11Floats.add_representer(float, represent)
    return Yaml11Floats


class _NoLoad:
    def load(self, stream: str) -> None:
        return None


def _mapping_indent(text: str) -> int:
    """The indent of the first nested block mapping (ruamel's guess covers sequences only)."""

    match = re.search(
        r"^([^\s#-][^\n]*):[ \t]*(?:#[^\n]*)?\n((?:[ \t]*#[^\n]*\n)*)( +)[^\s-]", text, re.M
    )
    return len(match[3]) if match else 2
