"""The user's cache folder, and the compiled methods of dataclasses kept in it between runs.

The folder (`cache_dir`) holds what rl-advisor would otherwise rebuild at every start: the
rulebooks' parsed and validated forms (advisor.resources) and the code below. Any failure to
read or write it only costs time.

dataclasses writes the source of a class's `__init__`, `__repr__`, `__eq__` (and a frozen
class's `__hash__`, `__setattr__`, `__delattr__`) when the class is created, and compiles it:
~0.1 ms a method, a third of what importing rl-advisor's own modules costs (~12 ms of each
`rl-advisor` start on a 2-core machine). The same source compiles to the same code. So the
command's own process (`rl-advisor`, advisor.cli.run) has dataclasses execute code objects
kept from earlier runs (`DataclassCode`), compiled as dataclasses compiles them, and keyed by
the exact source and the interpreter's build: a class made with them is the class dataclasses
would make. A program that imports rl-advisor is left as it is. Imports nothing that defines
a dataclass: it is set up before they are made.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import marshal
import os
import sys
import types
from typing import Any

# The most code objects a cache file keeps: a run of the command makes ~400; past this, the
# file keeps only what the latest run used (methods of classes that no longer exist go).
MAX_ENTRIES = 4000


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


def _key(source: str) -> bytes:
    """A source's key: its BLAKE2 digest (the sources run to kilobytes; the file holds ~400)."""
    return hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=20).digest()


def _build() -> tuple[str, int]:
    """What the code depends on besides its source: the interpreter's exact build (its
    bytecode) and the optimisation level."""
    return sys.version, sys.flags.optimize


class DataclassCode:
    """dataclasses' `exec` of generated source, from code objects kept in `path` (read now;
    `save` writes back what was compiled meanwhile)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.code: dict[bytes, types.CodeType] = {}  # by _key of the source
        self.used: set[bytes] = set()
        self.compiled = 0
        try:
            with open(path, "rb") as fh:
                build, code = marshal.loads(fh.read())  # (one read: load(fh) reads in pieces)
        except (OSError, EOFError, ValueError, TypeError):  # none yet, or not ours
            return
        if build == _build() and isinstance(code, dict):
            self.code = {
                k: v
                for k, v in code.items()
                if isinstance(k, bytes) and isinstance(v, types.CodeType)
            }

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        """builtins.exec(source, globals, locals) for dataclasses: its source compiled as
        `exec` compiles a string there (file "<string>", dataclasses' own compiler flags:
        none), or that code kept from an earlier run."""
        if not isinstance(source, str):
            builtins.exec(source, globals, locals)
            return
        key = _key(source)
        code = self.code.get(key)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.code[key] = code
            self.compiled += 1
        self.used.add(key)
        builtins.exec(code, globals, locals)

    def save(self) -> None:
        """Write the code back when this run compiled any (atomically: a temp file renamed
        into place); a failure leaves the cache as it was."""
        if not self.compiled:
            return
        keep = self.code
        if len(keep) > MAX_ENTRIES:
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


def kept_dataclass_code() -> DataclassCode | None:
    """dataclasses set to run its generated methods from the user's cache (see above), for
    the rest of this process; None (and dataclasses left as it is) without a cache folder."""
    base = cache_dir()
    if base is None:
        return None
    import dataclasses

    tag = sys.implementation.cache_tag or "python"
    cache = DataclassCode(os.path.join(base, f"dataclass-code-{tag}.marshal"))
    # dataclasses calls the name `exec`, found in its module before the builtins
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    return cache
