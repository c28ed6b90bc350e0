"""advisor.codecache: the methods dataclasses generates and the programs of regular expressions,
kept between runs of the command, make the same classes and patterns as compiling them afresh."""

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
    assert cache.added > 10
    cache.save()
    again = codecache.DataclassCode(str(tmp_path / "code.marshal"))
    second = _classes(again.exec, monkeypatch)
    assert again.added == 0, "a second run compiles nothing"
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
        assert cache.entries == {}
        _classes(cache.exec, monkeypatch)
        cache.save()
        assert codecache.DataclassCode(str(path)).entries.keys() == cache.entries.keys() != set()


def test_a_cache_holds_at_most_twice_what_a_run_used(tmp_path: Path, monkeypatch) -> None:
    """Entries a run did not use stay while the file holds no more than SLACK times what it
    used (another path of the same command); past that only the run's own are kept (patterns
    made from a run's data are used once)."""
    path = str(tmp_path / "code.marshal")
    for stale_count, kept_stale in ((5, True), (80, False)):
        stale = {
            codecache._key(f"# {i}"): compile(f"# {i}", "<string>", "exec")
            for i in range(stale_count)
        }
        with open(path, "wb") as fh:
            marshal.dump((codecache._build(), stale), fh)
        cache = codecache.DataclassCode(path)
        _classes(cache.exec, monkeypatch)
        cache.save()
        kept = codecache.DataclassCode(path).entries
        assert kept.keys() >= cache.used
        assert (kept.keys() >= stale.keys()) is kept_stale
        assert len(kept) <= codecache.SLACK * len(cache.used)


def test_without_a_cache_folder_dataclasses_and_re_are_left_as_they_are(monkeypatch) -> None:
    import re._compiler as compiler

    monkeypatch.setenv("RL_ADVISOR_NO_CACHE", "1")
    monkeypatch.delattr(dataclasses, "exec", raising=False)
    before = (compiler.compile, compiler._sre)
    assert codecache.kept_code("diagnose") == []
    assert "exec" not in vars(dataclasses)
    assert (compiler.compile, compiler._sre) == before


def test_the_command_keeps_the_code_and_reuses_it(tmp_path: Path) -> None:
    """A fresh `rl-advisor` writes the cache once; the next run reads it and writes nothing,
    and says what the first said."""
    env = {**os.environ, "RL_ADVISOR_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("RL_ADVISOR_NO_CACHE", None)
    call = [sys.executable, "-c", "from advisor.cli import run; run()", "diagnose", str(SAMPLE),
            "--format", "json"]  # fmt: skip
    first = subprocess.run(call, env=env, capture_output=True, text=True, timeout=120)
    tag = sys.implementation.cache_tag
    kept = [tmp_path / "cache" / f"{kind}-{tag}-diagnose.marshal"
            for kind in ("dataclass-code", "regex-programs")]  # fmt: skip
    assert first.returncode == 0 and all(k.is_file() for k in kept)
    stamps = [k.stat().st_mtime_ns for k in kept]
    second = subprocess.run(call, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert [k.stat().st_mtime_ns for k in kept] == stamps, "nothing new: no file rewritten"
    assert [p.name for p in kept[0].parent.iterdir() if p.name.endswith(".tmp")] == []


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


# patterns of every kind the programs differ by: flags (given and inline), named and numbered
# groups, bytes, Unicode classes, lookarounds, backreferences, repeats, alternations
PATTERNS = [
    (r"(?P<key>[A-Za-z_][\w.]*)\s*[:=]\s*(?P<value>\S+)", 0),
    (r"(?i)step\s+(\d+)/(\d+)", 0),
    (r"^\s*#.*$", 8),  # re.MULTILINE
    (rb"[ \t\r\n]*", 0),
    (r"(?<=\d)(?=(\d{3})+\b)", 0),
    (r"(a|b)\1{2,5}?", 0),
    (r"[\u4e00-\u9fff]+|\w+", 0),
    (r"\bnan\b|inf", 2),  # re.IGNORECASE
    (r"x*", 64),  # re.VERBOSE
]
SAMPLES = ["lr: 2e-06", "Step 12/300", "# a comment\nline", "1234567", "abbb aab",
           "熵 entropy 0.3", "NaN loss", "xxxx"]  # fmt: skip


def _compiled(monkeypatch: pytest.MonkeyPatch, programs: codecache.RegexPrograms | None) -> list:
    """Each of PATTERNS compiled by re's compiler (past re's own cache), `programs` installed."""
    import re._compiler as compiler

    with monkeypatch.context() as m:
        m.setattr(compiler, "compile", compiler.compile)  # (put back afterwards)
        m.setattr(compiler, "_sre", compiler._sre)
        if programs is not None:
            programs.install(compiler)
        return [compiler.compile(p, f) for p, f in PATTERNS]


def test_kept_programs_make_the_patterns_re_makes(tmp_path: Path, monkeypatch) -> None:
    import re

    path = str(tmp_path / "programs.marshal")
    plain = _compiled(monkeypatch, None)
    first = codecache.RegexPrograms(path, re._compiler)
    made = _compiled(monkeypatch, first)
    assert first.added == len(PATTERNS)
    first.save()
    again = codecache.RegexPrograms(path, re._compiler)
    kept = _compiled(monkeypatch, again)
    assert again.added == 0 and again.used == set(again.entries)
    for a, b, c in zip(plain, made, kept, strict=True):
        for x in (b, c):
            assert (x.pattern, x.flags, x.groups, x.groupindex) == (
                a.pattern, a.flags, a.groups, a.groupindex)  # fmt: skip
            for text in SAMPLES:
                sample: str | bytes = text.encode() if isinstance(a.pattern, bytes) else text
                try:
                    want = [m.span() for m in a.finditer(sample)]  # type: ignore[arg-type]
                except UnicodeEncodeError:
                    continue
                assert [m.span() for m in x.finditer(sample)] == want  # type: ignore[arg-type]
                assert [m.groups() for m in x.finditer(sample)] == [
                    m.groups() for m in a.finditer(sample)]  # type: ignore[arg-type]  # fmt: skip


def test_a_pattern_re_refuses_is_refused_as_before(tmp_path: Path, monkeypatch) -> None:
    import re

    programs = codecache.RegexPrograms(str(tmp_path / "p.marshal"), re._compiler)
    with monkeypatch.context() as m:
        m.setattr(re._compiler, "compile", re._compiler.compile)
        m.setattr(re._compiler, "_sre", re._compiler._sre)
        programs.install(re._compiler)
        with pytest.raises(re.error):
            re._compiler.compile("(unclosed", 0)
    assert programs.entries == {}


def test_a_programs_file_that_is_not_ours_is_left_unread(tmp_path: Path) -> None:
    import re

    path = tmp_path / "p.marshal"
    for content in (
        b"junk",
        marshal.dumps((("another python", 0), {("a", 0): ("a", 32, [1], 0, {}, ())})),
        marshal.dumps((codecache._build(), {"a": ("a", 32, [1], 0, {}, ())})),
        marshal.dumps((codecache._build(), {("a", 0): "not arguments"})),
    ):
        path.write_bytes(content)
        assert codecache.RegexPrograms(str(path), re._compiler).entries == {}
