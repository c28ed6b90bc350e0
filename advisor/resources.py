"""Where shipped data lives: the rulebook (top-level `rulebook/`, packaged as advisor.rulebook)."""

from __future__ import annotations

from pathlib import Path


def rulebook_dir() -> Path:
    """The repo's `rulebook/` in a checkout, the packaged copy when installed."""
    repo = Path(__file__).resolve().parent.parent / "rulebook"
    if (repo / "__init__.py").exists():
        return repo
    from importlib.resources import files

    return Path(str(files("advisor.rulebook")))
