"""Where shipped data lives: the rulebook (top-level `rulebook/`, packaged as advisor.rulebook)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

T = TypeVar("T")


def rulebook_dir() -> Path:
    """The repo's `rulebook/` in a checkout, the packaged copy when installed."""
    repo = Path(__file__).resolve().parent.parent / "rulebook"
    if (repo / "__init__.py").exists():
        return repo
    from importlib.resources import files

    return Path(str(files("advisor.rulebook")))


class RulebookYAMLError(ValueError):
    """A shipped YAML file that does not parse; `where` is ":LINE" or "" and `what` the
    parser's complaint. (Callers need not import ruamel just to catch its error.)"""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where, self.what = where, what


def read_yaml_data(path: Path) -> Any:
    """The plain data of a shipped YAML file (the rulebooks), through a JSON cache.

    ruamel's pure-Python parser takes ~0.3 s for the rulebooks, more than judging a whole run;
    its C parser would read YAML 1.1 (`no` as false, which save_strategy needs as a string).
    So the parsed data is cached as JSON under the user's cache folder, keyed by the file's
    content hash: an edited rulebook is read afresh, and any cache failure only costs time.
    """
    raw = path.read_bytes()
    cached = _cache_file(path, raw)
    if cached is not None:
        try:
            return json.loads(cached.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    from ruamel.yaml import YAML, YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(raw.decode("utf-8"))
    except YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise RulebookYAMLError(
            where, getattr(err, "problem", None) or str(err).splitlines()[0]
        ) from None
    if cached is not None:
        _write_cache(cached, data)
    return data


def load_validated(path: Path, build: Callable[[Path], T], schema_module: str) -> T:
    """`build(path)` (read and schema-check a shipped rulebook), through a pickle of the result.

    Schema-checking a rulebook makes pydantic build the validators of every class in it, which
    costs more at each start than judging a 2,000-step run. The checked object is cached keyed
    by the file's bytes, the source of the module defining the schema and pydantic's version, so
    an edited rulebook or schema is checked afresh. The cache is the user's own folder (as for
    the JSON cache); any failure to read or write it only costs time.
    """
    raw = path.read_bytes()
    source = Path(sys.modules[schema_module].__file__ or "").read_bytes()
    import pydantic

    cached = _cache_file(path, raw + source + pydantic.VERSION.encode(), suffix=".pickle")
    if cached is not None and cached.exists():
        import pickle

        try:
            with cached.open("rb") as fh:
                return pickle.load(fh)  # written by build() below, by this user
        except Exception:  # a stale or broken cache (any unpickling error) is rebuilt
            pass
    obj = build(path)
    if cached is not None:
        _write_pickle(cached, obj)
    return obj


def _write_pickle(dest: Path, obj: Any) -> None:
    import pickle

    try:
        write_atomic(dest, lambda fh: pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL), True)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        return


def _cache_file(path: Path, raw: bytes, suffix: str = ".json") -> Path | None:
    base = os.environ.get("RL_ADVISOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "rl-advisor",
    )
    if os.environ.get("RL_ADVISOR_NO_CACHE"):
        return None
    digest = hashlib.sha256(raw).hexdigest()[:20]
    return Path(base) / f"{path.stem}-{digest}{suffix}"


def write_text_atomic(dest: Path, text: str) -> None:
    """Write `text` (UTF-8) to `dest` atomically (see `write_atomic`)."""
    write_atomic(dest, lambda fh: fh.write(text))


def write_atomic(dest: Path, fill: Callable[[IO[Any]], object], binary: bool = False) -> None:
    """`fill(fh)` writes the content; it goes to a temp file beside `dest`, renamed into place:
    a failure never leaves a partly written file, and a reader never sees one."""
    import tempfile

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as fh:
            fill(fh)
        # mkstemp makes the file 0600; the user's file gets what open() would give it: an
        # existing file's mode, else 0666 less the umask (a report others can read)
        os.chmod(tmp, _mode_for(dest))
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(dest: Path) -> int:
    try:
        return dest.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


@functools.lru_cache(maxsize=1)
def _umask() -> int:
    """The process umask (read once: setting it to read it back is not thread-safe)."""
    try:  # Linux says it without changing it
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _write_cache(dest: Path, data: Any) -> None:
    try:
        text = json.dumps(data)
        if json.loads(text) != data:  # not JSON-shaped (e.g. int keys): do not cache it
            return
        write_text_atomic(dest, text)
    except (OSError, TypeError, ValueError):
        return
