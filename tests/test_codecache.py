"""advisor.codecache: the methods dataclasses generates, run from code kept between runs of the
command, make the same classes as dataclasses compiling them afresh."""

from __future__ import annotations

import dataclasses
import inspect
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor import codecache

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_metrics/corpus/healthy-noisy-verl-jsonl-s0011/metrics.jsonl"

# dataclasses of every shape the generated methods differ by
SOURCE = '''
import dataclasses
from dataclasses import InitVar, KW_ONLY, dataclass, field
from typing import ClassVar


@dataclass
class Plain:
    a: int
    b: list = field(default_factory=list)
    c: str = field(default="x", repr=False, compare=False)
    k: ClassVar[int] = 3


@dataclass(frozen=True, slots=True)
class Frozen:
    a: float
    b: tuple = ()


@dataclass(order=True, kw_only=True)
class Ordered:
    a: int
    b: int = 2


@dataclass(eq=False)
class Identity:
    a: int
    _: KW_ONLY
    b: int = 0


@dataclass
class WithInit:
    a: int
    scale: InitVar[int] = 1

    def __post_init__(self, scale):
        self.a *= scale


@dataclass(unsafe_hash=True)
class Hashed:
    a: int
    b: str = "b"
'''
NAMES = ("Plain", "Frozen", "Ordered", "Identity", "WithInit", "Hashed")


def _classes(exec_: object | None, monkeypatch: pytest.MonkeyPatch) -> dict[str, type]:
    """SOURCE's classes, made with dataclasses running `exec_` (None: as it comes)."""
    with monkeypatch.context() as m:
        if exec_ is not None:
            m.setattr(dataclasses, "exec", exec_, raising=False)
        scope: dict[str, object] = {"__name__": "made"}
        sys.modules["made"] = type(sys)("made")  # (dataclasses reads the module's globals)
        try:
            exec(compile(SOURCE, "made.py", "exec", dont_inherit=True), scope)
            return {n: scope[n] for n in NAMES}  # type: ignore[misc]
        finally:
            del sys.modules["made"]


METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__",
           "__le__", "__gt__", "__ge__")  # fmt: skip


def _methods(cls: type) -> dict[str, object]:
    return {
        name: getattr(cls, name).__code__
        for name in METHODS
        if name in cls.__dict__ and hasattr(cls.__dict__[name], "__code__")
    }


def _same_code(a: object, b: object) -> None:
    assert a.co_code == b.co_code  # type: ignore[attr-defined]
    assert a.co_consts == b.co_consts  # type: ignore[attr-defined]
    assert a.co_names == b.co_names  # type: ignore[attr-defined]
    assert a.co_varnames == b.co_varnames  # type: ignore[attr-defined]
    assert a.co_filename == b.co_filename  # type: ignore[attr-defined]
    assert a.co_flags == b.co_flags  # type: ignore[attr-defined]


def test_kept_code_makes_the_classes_dataclasses_makes(tmp_path: Path, monkeypatch) -> None:
    plain = _classes(None, monkeypatch)
    cache = codecache.DataclassCode(str(tmp_path / "code.marshal"))
    first = _classes(cache.exec, monkeypatch)
    assert cache.compiled > 10
    cache.save()
    again = codecache.DataclassCode(str(tmp_path / "code.marshal"))
    second = _classes(again.exec, monkeypatch)
    assert again.compiled == 0, "a second run compiles nothing"
    for name in NAMES:
        want = _methods(plain[name])
        for made in (first[name], second[name]):
            got = _methods(made)
            assert got.keys() == want.keys()
            for method, code in want.items():
                _same_code(got[method], code)
            assert str(inspect.signature(made)) == str(inspect.signature(plain[name]))
            init = made.__init__  # type: ignore[misc]
            assert init.__annotations__.keys() == plain[name].__init__.__annotations__.keys()


def test_the_classes_behave_alike(tmp_path: Path, monkeypatch) -> None:
    cache = codecache.DataclassCode(str(tmp_path / "code.marshal"))
    for made in (_classes(None, monkeypatch), _classes(cache.exec, monkeypatch)):
        p = made["Plain"](1)
        assert repr(p) == "Plain(a=1, b=[])" and p == made["Plain"](1, [], "other")
        f = made["Frozen"](1.5)
        with pytest.raises(dataclasses.FrozenInstanceError):
            f.a = 2  # type: ignore[misc]
        assert hash(f) == hash(made["Frozen"](1.5)) and not hasattr(f, "__dict__")
        assert made["Ordered"](a=1) < made["Ordered"](a=2)
        with pytest.raises(TypeError):
            made["Ordered"](1)  # keyword-only
        assert made["Identity"](1) != made["Identity"](1)
        assert made["WithInit"](2, 3).a == 6
        assert {made["Hashed"](1), made["Hashed"](1)} == {made["Hashed"](1)}


def test_a_cache_file_that_is_not_ours_is_left_unread(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "code.marshal"
    for content in (
        b"not marshal at all",
        marshal.dumps([1, 2, 3]),
        marshal.dumps((("another python", 0), {b"x": compile("y = 1", "<string>", "exec")})),
        marshal.dumps((codecache._build(), {b"source": "not code"})),
        marshal.dumps((codecache._build(), {"a str key": compile("y = 1", "<string>", "exec")})),
    ):
        path.write_bytes(content)
        cache = codecache.DataclassCode(str(path))
        assert cache.code == {}
        _classes(cache.exec, monkeypatch)
        cache.save()
        assert codecache.DataclassCode(str(path)).code.keys() == cache.code.keys() != set()


def test_a_full_cache_keeps_only_what_the_last_run_used(tmp_path: Path, monkeypatch) -> None:
    path = str(tmp_path / "code.marshal")
    stale = {codecache._key(f"# {i}"): compile(f"# {i}", "<string>", "exec") for i in range(40)}
    with open(path, "wb") as fh:
        marshal.dump((codecache._build(), stale), fh)
    monkeypatch.setattr(codecache, "MAX_ENTRIES", 30)
    cache = codecache.DataclassCode(path)
    _classes(cache.exec, monkeypatch)
    cache.save()
    kept = codecache.DataclassCode(path).code
    assert kept and not kept.keys() & stale.keys()


def test_without_a_cache_folder_dataclasses_is_left_as_it_is(monkeypatch) -> None:
    monkeypatch.setenv("RL_ADVISOR_NO_CACHE", "1")
    monkeypatch.delattr(dataclasses, "exec", raising=False)
    assert codecache.kept_dataclass_code() is None
    assert "exec" not in vars(dataclasses)


def test_the_command_keeps_the_code_and_reuses_it(tmp_path: Path) -> None:
    """A fresh `rl-advisor` writes the cache once; the next run reads it and writes nothing,
    and says what the first said."""
    env = {**os.environ, "RL_ADVISOR_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("RL_ADVISOR_NO_CACHE", None)
    call = [sys.executable, "-c", "from advisor.cli import run; run()", "diagnose", str(SAMPLE),
            "--format", "json"]  # fmt: skip
    first = subprocess.run(call, env=env, capture_output=True, text=True, timeout=120)
    kept = tmp_path / "cache" / f"dataclass-code-{sys.implementation.cache_tag}.marshal"
    assert first.returncode == 0 and kept.is_file()
    stamp = kept.stat().st_mtime_ns
    second = subprocess.run(call, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert kept.stat().st_mtime_ns == stamp, "nothing new compiled: the file is not rewritten"
    assert [p.name for p in kept.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_no_cache_folder_without_a_home(monkeypatch) -> None:
    """With no home to put it under, no cache: a relative `~/.cache` would land wherever the
    command runs, beside its inputs."""
    monkeypatch.delenv("RL_ADVISOR_NO_CACHE", raising=False)
    monkeypatch.delenv("RL_ADVISOR_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # no home found
    assert codecache.cache_dir() is None
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert codecache.cache_dir() == "/somewhere/cache/rl-advisor"
    monkeypatch.setenv("RL_ADVISOR_CACHE_DIR", "mine")
    assert codecache.cache_dir() == "mine"
