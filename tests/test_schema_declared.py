"""schema.declared: a rulebook class built when first used as a dataclass, and then the same
dataclass `dataclasses.dataclass(kw_only=True)` makes; a warm diagnosis builds none."""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from advisor import schema
from advisor.schema import Plain, declared

ROOT = Path(__file__).resolve().parents[1]


def _pair(frozen: bool) -> tuple[type, type]:
    """The same class declared and as a plain dataclass (fresh classes: none built yet)."""

    class Row(Plain):
        a: int
        b: list[str] = dataclasses.field(default_factory=list)
        c: str = "x"

    class Eager(Plain):
        a: int
        b: list[str] = dataclasses.field(default_factory=list)
        c: str = "x"

    Eager.__name__, Eager.__qualname__ = Row.__name__, Row.__qualname__
    return declared(frozen=frozen)(Row), dataclasses.dataclass(kw_only=True, frozen=frozen)(Eager)


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize(
    "use",
    [
        lambda c, o: repr(o),
        lambda c, o: o == c(a=1),
        lambda c, o: [f.name for f in dataclasses.fields(c)],
        lambda c, o: dataclasses.is_dataclass(c),
        lambda c, o: dataclasses.asdict(o),
        lambda c, o: repr(dataclasses.replace(o, a=2)),
        lambda c, o: _outcome(lambda: hash(o)),
        lambda c, o: _outcome(lambda: setattr(o, "a", 3)) + repr(o),
        lambda c, o: _outcome(lambda: c(1)),
    ],
)
def test_an_unbuilt_class_answers_as_its_dataclass(frozen: bool, use: object) -> None:
    lazy, eager = _pair(frozen)
    # an object as the cache gives it: unpickled, no method of its class called
    obj = copy.copy(_unbuilt(lazy))
    assert lazy in schema._PENDING
    assert use(lazy, obj) == use(eager, eager(a=1))  # type: ignore[operator]
    assert lazy not in schema._PENDING


def _unbuilt(cls: type) -> object:
    obj = object.__new__(cls)
    obj.__dict__.update(a=1, b=[], c="x")
    return obj


def _outcome(call: object) -> str:
    try:
        return repr(call())  # type: ignore[operator]
    except Exception as err:  # the same error type and message as the dataclass's
        return f"{type(err).__name__}: {err}"


def test_a_subclass_builds_its_base_first() -> None:
    @declared()
    class Base(Plain):
        a: int

    @declared()
    class Sub(Base):
        b: int

    assert repr(Sub(a=1, b=2)) == "test_a_subclass_builds_its_base_first.<locals>.Sub(a=1, b=2)"
    assert Base not in schema._PENDING and [f.name for f in dataclasses.fields(Base)] == ["a"]


def test_the_cached_rulebooks_build_no_class(tmp_path: Path) -> None:
    """A warm diagnosis unpickles the rulebooks into their declared classes and builds none
    (the job file's FieldSpec is made by config.py: that one is)."""
    run = "sample_metrics/corpus/p3-step-verl-jsonl-s0003"
    code = (
        "import io, contextlib\n"
        "from advisor.cli import main\n"
        "from advisor import schema\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['diagnose', '{run}/metrics.jsonl', '--config', '{run}/job.yaml',\n"
        "          '--format', 'json', '--fail-on', 'never'])\n"
        "import advisor.book.config as c, advisor.book.dialects as d, advisor.book.symptoms as s\n"
        "declared = [v for m in (c, d, s) for v in vars(m).values() if isinstance(v, type)\n"
        "            and v.__module__ == m.__name__ and '__init__' in vars(v)]\n"
        "print(sorted(v.__name__ for v in declared if v not in schema._PENDING))\n"
    )
    env = {**os.environ, "RL_ADVISOR_CACHE_DIR": str(tmp_path)}
    env.pop("RL_ADVISOR_NO_CACHE", None)
    for _ in range(2):  # the first run fills the cache (pydantic builds every class)
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env
        )
        assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "['FieldSpec']"


def test_a_rulebook_pickles_back_the_same() -> None:
    from advisor.book.symptoms import load_symptom_rules

    book = load_symptom_rules()
    # (repr: a rule case's NaN value is no == of itself)
    assert repr(pickle.loads(pickle.dumps(book))) == repr(book)
