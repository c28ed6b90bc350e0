"""`rl-advisor watch` (placeholder until its issue lands)."""

from __future__ import annotations

from advisor.cli import app


@app.command("watch")
def watch() -> None:
    """Not implemented yet."""
    raise NotImplementedError("watch")
