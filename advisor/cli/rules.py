"""`rl-advisor rules` (placeholder until its issue lands)."""

from __future__ import annotations

from advisor.cli import app


@app.command("rules")
def rules() -> None:
    """Not implemented yet."""
    raise NotImplementedError("rules")
