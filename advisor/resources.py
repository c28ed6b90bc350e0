"""Where shipped data lives: the rulebook (top-level `rulebook/`, packaged as advisor.rulebook)."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import importlib.util
import json
import os
import pickle
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

from advisor import lazy
from advisor.codecache import cache_dir
from advisor.types import InputError

T = TypeVar("T")


@functools.cache
def rulebook_dir() -> Path:
    """The repo's `rulebook/` in a checkout, the packaged copy when installed (beside this
    module in an installed wheel; else where importlib finds the package); found once."""
    here = Path(__file__).resolve().parent
    for folder in (here.parent / "rulebook", here / "rulebook"):
        if (folder / "__init__.py").exists():
            return folder
    from importlib.resources import files

    return Path(str(files("advisor.rulebook")))


def detectors_yaml() -> Path:
    """The detectors' declared parameters (advisor/book/paramspec.py), which the symptom
    rulebook's loader checks every leaf against."""
    return rulebook_dir() / "detectors.yaml"


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

    try:
        data = lazy.yaml.YAML(typ="safe", pure=True).load(raw.decode("utf-8"))
    except lazy.yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise RulebookYAMLError(
            where, getattr(err, "problem", None) or str(err).splitlines()[0]
        ) from None
    if cached is not None:
        _write_cache(cached, data)
    return data


def read_rulebook_data(path: Path, what: str) -> Any:
    """`read_yaml_data` for a rulebook file, its failures as one InputError naming the file
    (and the line of a YAML error); `what` says which rulebook it is."""
    try:
        return read_yaml_data(path)
    except OSError as err:
        raise InputError(f"{path}: cannot read the {what}: {err}") from None
    except RulebookYAMLError as err:
        raise InputError(f"{path}{err.where}: not valid YAML ({err.what})") from None


def load_validated(
    path: Path, build: Callable[[Path], T], schema_module: str, also: Sequence[Path] = ()
) -> T:
    """`build(path)` (read and schema-check a shipped rulebook), through a pickle of the result.

    Schema-checking a rulebook makes pydantic build the validators of every class in it, which
    costs more at each start than judging a 2,000-step run. The checked object (plain
    dataclasses: advisor/schema.py) is cached keyed by the file's bytes, the source of the
    module defining the schema, the files `also` names (other data the check reads) and
    pydantic's version, so an edited rulebook or schema is checked afresh; reading it back
    imports no pydantic. The cache is the user's own folder (as for the JSON cache); any
    failure to read or write it only costs time.
    """
    raw = path.read_bytes() + b"".join(p.read_bytes() for p in also)
    source = Path(sys.modules[schema_module].__file__ or "").read_bytes()

    cached = _cache_file(path, raw + source + _pydantic_version(), suffix=".pickle")
    if cached is not None and cached.exists():
        try:
            with cached.open("rb") as fh:
                return pickle.load(fh)  # written by build() below, by this user
        except Exception:  # a stale or broken cache (any unpickling error) is rebuilt
            pass
    obj = build(path)
    if cached is not None:
        _write_pickle(cached, obj)
    return obj


@functools.cache
def _pydantic_version() -> bytes:
    """pydantic's version file (its VERSION), read without importing pydantic."""
    spec = importlib.util.find_spec("pydantic")
    if spec is None or spec.origin is None:
        return b""
    try:
        return (Path(spec.origin).parent / "version.py").read_bytes()
    except OSError:
        return b""


def _write_pickle(dest: Path, obj: Any) -> None:
    try:
        write_atomic(dest, lambda fh: pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL), True)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        return


def _cache_file(path: Path, raw: bytes, suffix: str = ".json") -> Path | None:
    base = cache_dir()
    if base is None:
        return None
    digest = hashlib.sha256(raw).hexdigest()[:20]
    return Path(base) / f"{path.stem}-{digest}{suffix}"


def write_text_atomic(dest: Path, text: str) -> None:
    """Write `text` (UTF-8) to `dest` atomically (see `write_atomic`)."""
    write_atomic(dest, lambda fh: fh.write(text))


def write_atomic(dest: Path, fill: Callable[[IO[Any]], object], binary: bool = False) -> None:
    """`fill(fh)` writes the content; it goes to a temp file beside `dest`, renamed into place:
    a failure never leaves a partly written file, and a reader never sees one. A stream
    (see `written_through`) is written through; a link, to the file it names."""

    if written_through(dest):
        with open(dest, "wb") if binary else open(dest, "w", encoding="utf-8") as fh:
            fill(fh)
        return
    if os.path.islink(dest):
        dest = Path(os.path.realpath(dest))
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


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


# /proc/<pid>/fd (and /proc/self/fd, /dev/fd, /dev/stdout, which lead there): a process's
# open descriptors
_FD_DIR = re.compile(r"/proc/[^/]+(?:/task/[^/]+)?/fd")
# /dev/mem, /dev/kmem, /dev/port: character devices no report is written onto
_MEMORY_DEVICES = {(1, 1), (1, 2), (1, 4)}


def written_through(path: Path) -> bool:
    """Whether an output to `path` is opened and written as it is, as a shell's `>` would: a
    character device (/dev/null, a terminal) other than memory, or an open descriptor
    (/dev/stdout, /dev/fd/N, a link to one). Never renamed over: a device node replaced by
    a regular file is a broken /dev/null for everyone on the machine, and a file the shell
    opened for stdout, replaced, is not the one its descriptor writes to."""
    cur = os.path.abspath(path)
    for _ in range(40):  # the kernel's own bound on the links followed
        if _FD_DIR.fullmatch(os.path.realpath(os.path.dirname(cur))):
            return True
        if not os.path.islink(cur):
            break
        cur = os.path.join(os.path.dirname(cur), os.readlink(cur))
    try:
        st = os.stat(path)
    except OSError:
        return False
    device = (os.major(st.st_rdev), os.minor(st.st_rdev))
    return stat.S_ISCHR(st.st_mode) and device not in _MEMORY_DEVICES


def destination(flag: str, path: Path, want_dir: bool = False) -> Path:
    """Where an output of `flag` goes, checked before any work: the path itself, or the file
    a symbolic link points to; a stream (`written_through`) as given. Refused (InputError): a
    directory (a file when `want_dir`), a memory device, a block device, a named pipe or a
    socket, a link to one of them or to nothing, a link loop, a parent that is not a folder,
    a name too long for the file system."""
    p = Path(path)
    what = "expected a folder for the pictures" if want_dir else "expected a file path"
    if not want_dir and written_through(p):
        return p
    try:
        st: os.stat_result | None = os.stat(p)
    except FileNotFoundError:
        st = None
        if os.path.islink(p):
            raise InputError(f"{flag} {p}: a symbolic link to nothing; {what}") from None
    except OSError as err:
        why = {errno.ELOOP: "a symbolic link loop", errno.ENOTDIR: "a parent is not a folder",
               errno.ENAMETOOLONG: "the name is too long"}.get(err.errno or 0)  # fmt: skip
        raise InputError(f"{flag} {p}: {why or err.strerror}; {what}") from None
    if st is not None:
        kind = next((name for test, name in _KINDS if test(st.st_mode)), None)
        if want_dir and kind != "a directory":
            raise InputError(f"{flag} {p}: {kind or 'a file'}; {what}")
        if not want_dir and kind is not None:
            raise InputError(f"{flag} {p}: {kind}; {what}")
    real = Path(os.path.realpath(p)) if os.path.islink(p) else p
    folder = real if want_dir else real.parent
    for up in [folder, *folder.parents]:  # the nearest existing ancestor must be a folder
        try:
            if not stat.S_ISDIR(os.stat(up).st_mode):
                raise InputError(f"{flag} {p}: {up} is not a folder; {what}")
            break
        except FileNotFoundError:
            continue
        except OSError as err:
            raise InputError(f"{flag} {p}: {err.strerror}; {what}") from None
    if not want_dir and len(os.fsencode(real.name)) > 200:
        raise InputError(f"{flag} {p}: the file name is too long; {what}")
    return real


def write_all(items: list[tuple[str, Path, bytes]]) -> None:
    """Write every (flag, dest, content) or none: each goes to a temp file beside its
    destination, and only when all are written in full are they renamed into place. A
    failure (a full disk, a folder that refuses writing) removes the temp files, the files
    this call already put in place that did not exist before and the folders it made, and is
    an InputError naming the output. A stream (`written_through`: /dev/null, stdout) is
    written once every file is staged, before any is renamed into place."""

    staged: list[tuple[str, Path, str, bool]] = []
    made: list[Path] = []
    placed: list[Path] = []
    streams = [item for item in items if written_through(item[1])]
    flag, dest = "", Path()
    try:
        for item in items:
            flag, dest, data = item
            if any(item is stream for stream in streams):
                continue
            missing = [d for d in [dest.parent, *dest.parent.parents] if not d.exists()]
            dest.parent.mkdir(parents=True, exist_ok=True)
            made += reversed(missing)
            fd, tmp = tempfile.mkstemp(prefix=f".{dest.name[:80]}.", suffix=".tmp",
                                       dir=dest.parent)  # fmt: skip
            existed = os.path.lexists(dest)
            staged.append((flag, dest, tmp, existed))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, _mode_for(dest))
        for flag, dest, data in streams:  # noqa: B007 (named in the error below)
            # written through once every file is staged
            with open(dest, "wb") as fh:
                fh.write(data)
        for flag, dest, tmp, _existed in staged:  # noqa: B007 (named in the error below)
            if os.path.lexists(dest) and not stat.S_ISREG(os.stat(dest).st_mode):
                raise IsADirectoryError(errno.EISDIR, "no longer a regular file")
            os.replace(tmp, dest)
            placed.append(dest)
    except OSError as err:
        for _flag, d, tmp, existed in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if d in placed and not existed:
                with contextlib.suppress(OSError):
                    os.unlink(d)
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise InputError(f"{flag} {dest}: cannot write ({err.strerror or err})") from None


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
