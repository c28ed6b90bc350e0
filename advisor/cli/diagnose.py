"""`rl-advisor diagnose` (placeholder until its issue lands)."""

from __future__ import annotations

from advisor.cli import app


@app.command("diagnose")
def diagnose() -> None:
    """Not implemented yet."""
    raise NotImplementedError("diagnose")
