"""Where shipped data lives: the rulebook (top-level `rulebook/`, packaged as advisor.rulebook)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


def rulebook_dir() -> Path:
    """The repo's `rulebook/` in a checkout, the packaged copy when installed."""
    repo = Path(__file__).resolve().parent.parent / "rulebook"
    if (repo / "__init__.py").exists():
        return repo
    from importlib.resources import files

    return Path(str(files("advisor.rulebook")))


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
    from ruamel.yaml import YAML

    data = YAML(typ="safe", pure=True).load(raw.decode("utf-8"))
    if cached is not None:
        _write_cache(cached, data)
    return data


def _cache_file(path: Path, raw: bytes) -> Path | None:
    base = os.environ.get("RL_ADVISOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "rl-advisor",
    )
    if os.environ.get("RL_ADVISOR_NO_CACHE"):
        return None
    digest = hashlib.sha256(raw).hexdigest()[:20]
    return Path(base) / f"{path.stem}-{digest}.json"


def write_text_atomic(dest: Path, text: str) -> None:
    """Write `text` to `dest` through a temp file renamed into place: a failure never leaves
    a partly written file, and a reader never sees one."""
    import tempfile

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_cache(dest: Path, data: Any) -> None:
    try:
        text = json.dumps(data)
        if json.loads(text) != data:  # not JSON-shaped (e.g. int keys): do not cache it
            return
        write_text_atomic(dest, text)
    except (OSError, TypeError, ValueError):
        return
