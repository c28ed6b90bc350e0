"""`rl-advisor validate` (placeholder until its issue lands)."""

from __future__ import annotations

from advisor.cli import app


@app.command("validate")
def validate() -> None:
    """Not implemented yet."""
    raise NotImplementedError("validate")
