"""The user's cache folder, and code the command would otherwise compile at every start.

The folder (`cache_dir`) holds what rl-advisor would otherwise rebuild at every start: the
rulebooks' parsed and validated forms (advisor.resources) and the compiled code below. Any
failure to read or write it only costs time.

Two kinds of code are compiled the same way at every start of `rl-advisor`, by the modules
it imports (its own, polars, jinja2, numpy ...) and kept here between runs of the command:

- dataclasses writes the source of a class's `__init__`, `__repr__`, `__eq__` (and a frozen
  class's `__hash__`, `__setattr__`, `__delattr__`) when the class is made, and compiles it:
  ~0.1 ms a method, ~12 ms of a 2,000-step `rl-advisor diagnose` on a 2-core machine.
  `DataclassCode` has it execute code objects compiled as it compiles them.
- re parses each regular expression and generates its matching program: ~0.1 ms a pattern,
  ~10 ms for the ~100 a start compiles. `RegexPrograms` hands `_sre` the program this
  Python generated for the same pattern and flags on an earlier run.

Each is keyed by exactly what it was made from and by the interpreter's build, and a cached
entry is what this interpreter made itself, so a class or pattern made from it is the one
made afresh. Only the command's own process does this (advisor.cli.run), from its start; a
program that imports rl-advisor is left as it is. This module imports nothing that defines a
dataclass or compiles a pattern.
"""

from __future__ import annotations

import _thread
import builtins
import contextlib
import hashlib
import marshal
import os
import sys
import types
from typing import Any

# A cache file holds at most this many times what the latest run that wrote it used: past
# it, only those entries are kept. (A pattern made from a run's own data, a metric's name, is
# used once; a file read at every start stays the size of what a run needs.)
SLACK = 2


def cache_dir() -> str | None:
    """The user's rl-advisor cache folder: $RL_ADVISOR_CACHE_DIR, else rl-advisor under
    $XDG_CACHE_HOME or ~/.cache; None when RL_ADVISOR_NO_CACHE is set, or when no home is
    known (a folder relative to wherever the command runs would be left beside its inputs)."""
    if os.environ.get("RL_ADVISOR_NO_CACHE"):
        return None
    named = os.environ.get("RL_ADVISOR_CACHE_DIR")
    if named:
        return named
    base = os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "rl-advisor",
    )
    return base if os.path.isabs(base) else None


def _build() -> tuple[str, int]:
    """What compiled code depends on besides its input: the interpreter's exact build (its
    bytecode, its regular expression engine) and the optimisation level."""
    return sys.version, sys.flags.optimize


class _Kept:
    """Entries kept in a file between runs: read when made, written back by `save` when this
    run added any (atomically: a temp file renamed into place)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: dict[Any, Any] = {}
        self.used: set[Any] = set()
        self.added = 0
        try:
            with open(path, "rb") as fh:
                build, entries = marshal.loads(fh.read())  # (load(fh) reads in small pieces)
        except (OSError, EOFError, ValueError, TypeError):  # none yet, or not ours
            return
        if build == _build() and isinstance(entries, dict):
            self.entries = {k: v for k, v in entries.items() if self._valid(k, v)}

    @staticmethod
    def _valid(key: Any, value: Any) -> bool:
        raise NotImplementedError

    def _add(self, key: Any, value: Any) -> None:
        self.entries[key] = value
        self.added += 1

    def save(self) -> None:
        if not self.added:
            return
        keep = self.entries
        if len(keep) > SLACK * len(self.used):
            keep = {k: v for k, v in keep.items() if k in self.used}
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(tmp, "wb") as fh:
                marshal.dump((_build(), keep), fh)
            os.replace(tmp, self.path)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _key(source: str) -> bytes:
    """A source's key: its BLAKE2 digest (the sources run to kilobytes; the file holds ~200)."""
    return hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=20).digest()


class DataclassCode(_Kept):
    """dataclasses' `exec` of generated source, from code objects kept in `path`."""

    @staticmethod
    def _valid(key: Any, value: Any) -> bool:
        return isinstance(key, bytes) and isinstance(value, types.CodeType)

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        """builtins.exec(source, globals, locals) for dataclasses: its source compiled as
        `exec` compiles a string there (file "<string>", dataclasses' own compiler flags:
        none), or that code kept from an earlier run."""
        if not isinstance(source, str):
            builtins.exec(source, globals, locals)
            return
        key = _key(source)
        code = self.entries.get(key)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self._add(key, code)
        self.used.add(key)
        builtins.exec(code, globals, locals)


class RegexPrograms(_Kept):
    """re's compile of a pattern (re._compiler.compile), from the arguments this Python gave
    `_sre.compile` for the same pattern and flags on an earlier run: the pattern, its flags
    with those the pattern sets inline, its program, its groups and their names."""

    def __init__(self, path: str, compiler: Any) -> None:
        super().__init__(path)
        self._compile = compiler.compile  # re's own
        self._sre = compiler._sre
        self._seen: dict[int, tuple[Any, ...]] = {}  # by thread: the last call's arguments
        # re's compiler calls _sre through its module global: through this copy of the
        # module's names, whose `compile` notes what it was given
        self._recorder = types.SimpleNamespace(**vars(self._sre))
        self._recorder.compile = self._noted

    @staticmethod
    def _valid(key: Any, value: Any) -> bool:
        return (
            isinstance(key, tuple)
            and len(key) == 2
            and isinstance(key[0], str | bytes)
            and isinstance(key[1], int)
            and isinstance(value, tuple)
            and len(value) == 6
        )

    def _noted(self, *args: Any) -> Any:
        self._seen[_thread.get_ident()] = args
        return self._sre.compile(*args)

    def compile(self, p: Any, flags: int = 0) -> Any:
        """re._compiler.compile(p, flags), its program kept between runs."""
        if not isinstance(p, str | bytes) or flags & 128:  # a parsed pattern, or re.DEBUG
            return self._compile(p, flags)
        key = (p, flags)
        args = self.entries.get(key)
        if args is not None:
            self.used.add(key)
            pattern, final, code, groups, names, index = args
            return self._sre.compile(pattern, final, code, groups, dict(names), index)
        got = self._compile(p, flags)
        args = self._seen.pop(_thread.get_ident(), None)
        if args is not None and args[0] is p:
            pattern, final, code, groups, names, index = args
            # (the program's opcodes are int subclasses: the same numbers, kept as ints)
            self._add(key, (pattern, int(final), [int(c) for c in code], int(groups),
                            dict(names), tuple(index)))  # fmt: skip
            self.used.add(key)
        return got

    def install(self, compiler: Any) -> None:
        compiler._sre = self._recorder
        compiler.compile = self.compile


def kept_code(command: str) -> list[DataclassCode | RegexPrograms]:
    """dataclasses and re set to use the code kept in the user's cache (see above) for the
    rest of this process, a file of each per `command` (one of the CLI's commands, or "":
    what a command compiles is the same from run to run, and differs from another's); none
    (both left as they are) without a cache folder. `save` each once the output is out."""
    base = cache_dir()
    if base is None:
        return []
    import dataclasses
    import re

    tag = f"{sys.implementation.cache_tag or 'python'}-{command or 'rl-advisor'}"
    methods = DataclassCode(os.path.join(base, f"dataclass-code-{tag}.marshal"))
    # dataclasses calls the name `exec`, found in its module before the builtins
    dataclasses.exec = methods.exec  # type: ignore[attr-defined]
    kept: list[DataclassCode | RegexPrograms] = [methods]
    compiler = getattr(re, "_compiler", None)  # (re's compiler as 3.11 to 3.13 lay it out)
    if callable(getattr(compiler, "compile", None)) and hasattr(compiler, "_sre"):
        programs = RegexPrograms(os.path.join(base, f"regex-programs-{tag}.marshal"), compiler)
        programs.install(compiler)
        kept.append(programs)
    return kept
