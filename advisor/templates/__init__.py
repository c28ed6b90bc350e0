"""Markdown templates of the `validate` and `rules` commands (the report templates live in
advisor/report/templates)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any


@cache
def _env() -> Any:
    import jinja2

    from advisor.report.escape import FILTERS, finalize

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent)),
        autoescape=False,  # Markdown, not HTML: escaped by `finalize` (advisor.report.escape)
        finalize=finalize,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(FILTERS)
    return env


def render(name: str, **context: Any) -> str:
    """Render `name` (e.g. "validate.md.j2") with `context`."""
    return _env().get_template(name).render(**context)
