"""The one jinja2 environment of every Markdown template (the report, `validate`, `rules`),
all in advisor/report/templates.

Markdown, not HTML: every `{{ value }}` is escaped by `finalize` (advisor.report.escape); the
filters are the escaping contexts and the value formatters (advisor.report.values).
"""

from __future__ import annotations

import contextlib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor import i18n, lazy
from advisor.report.escape import FILTERS, Md, finalize
from advisor.report.values import change_text, clause, fmt, steps_text

if TYPE_CHECKING:
    import jinja2

TEMPLATES = Path(__file__).parent / "templates"


def _bytecode_cache(jinja2: Any) -> Any:
    class _Quiet(jinja2.FileSystemBytecodeCache):  # type: ignore[misc, name-defined]
        """A cache that never fails a report: a full or read-only disk just means no cache."""

        def load_bytecode(self, bucket: Any) -> None:
            with contextlib.suppress(OSError):
                super().load_bytecode(bucket)

        def dump_bytecode(self, bucket: Any) -> None:
            with contextlib.suppress(OSError):
                super().dump_bytecode(bucket)

    try:
        return _Quiet()
    except (OSError, RuntimeError):  # no private temp dir can be made: compile every time
        return None


def _t(text: str, /, **fields: Any) -> Md:
    """A template's own phrase in the asked language (advisor.i18n): the phrase is Markdown as
    the template writes it, each field escaped as a `{{ value }}` would be."""
    said = i18n.t(text)
    if not fields:
        return Md(said)
    return Md(said.format(**{k: str(finalize(v)) for k, v in fields.items()}))


@cache
def environment() -> jinja2.Environment:
    """The environment, made once per process."""
    jinja2 = lazy.jinja2
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=False,  # Markdown, not HTML: escaped by `finalize` (advisor.report.escape)
        finalize=finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        # Compiling the templates costs more than importing jinja2: keep the compiled code in
        # jinja2's per-user temp cache (keyed by the template's checksum, so never stale).
        bytecode_cache=_bytecode_cache(jinja2),
    )
    env.filters.update(FILTERS)
    env.filters.update(fmt=fmt, change=change_text, clause=clause, steps=steps_text)
    env.globals["t"] = _t
    return env


def render(name: str, /, **context: Any) -> str:
    """Render the template `name` (e.g. "validate.md.j2") with `context`."""
    return environment().get_template(name).render(**context)
