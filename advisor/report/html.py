"""The HTML report: one self-contained file (inline CSS, inline SVG charts, no script, no
link to anything outside it) with the content of the Markdown report.

The view is the Markdown report's (advisor.report.markdown); the template is
`templates/report.html.j2`, rendered with jinja2's autoescape: every value a template prints is
HTML-escaped unless a filter here built it as `Markup` from escaped pieces. The rulebook's texts
mark names as Markdown code spans (`beta`): `inline` escapes the text first, then turns each
balanced span into `<code>`, so nothing in a metric name, a value or a message becomes markup.

The page speaks the report's language (advisor.i18n): its own phrases are the Markdown
report's, said by the template's `t` from the same catalogue (`rulebook/i18n/*.yaml`, keyed by
the English phrase), a phrase's code spans as `<code>`; `<html lang>` is the language's code.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from advisor import i18n, lazy
from advisor.report.markdown import (
    _checkpoint_view,
    _cost_view,
    _curves,
    _episodes,
    _finding_view,
    _forecast_view,
    _run_view,
    diff_lines,
    verdict,
)
from advisor.report.plots import chart
from advisor.report.templating import TEMPLATES
from advisor.report.values import clause, fmt, steps_text
from advisor.types import Change, Diagnosis

if TYPE_CHECKING:
    import jinja2

_SPAN = re.compile(r"(`+)(.+?)\1")
_CLIP = re.compile(r'\bid="plot"|url\(#plot\)')


def _markupsafe() -> Any:
    import markupsafe  # jinja2's own dependency

    return markupsafe


def inline(text: Any) -> Any:
    """Text with its Markdown code spans as `<code>`, everything else escaped."""
    ms = _markupsafe()
    escaped = str(ms.escape(str(text)))
    return ms.Markup(_SPAN.sub(lambda m: f"<code>{m.group(2).strip()}</code>", escaped))


def _from_markdown(text: str) -> str:
    """Text the Markdown renderer escaped (the verdict's change), back to what it says."""
    text = re.sub(r"\\([\\`*_\[\]~#|+\-.!()<>])", r"\1", text)
    return text.replace("&#124;", "|").replace("&lt;", "<").replace("&amp;", "&")


def change_html(c: Change) -> Any:
    """A change in the run's framework's names (`beta` 0 → 0.04), as markup."""
    ms = _markupsafe()
    esc = ms.escape

    def old(value: Any, assumed: bool) -> str:
        if value is None:
            return i18n.t("unset")
        return fmt(value) + (i18n.t(" (assumed)") if assumed else "")

    how = ""
    if c.factor is not None:
        how = f" (x{fmt(c.factor)})" if c.op == "multiply" else f" ({c.factor:+g})"
    notes = [c.note] if c.note else []
    if c.framework_keys:
        parts = [
            f"<code>{esc(k.key)}</code> {esc(old(k.from_, k.assumed))} → {esc(fmt(k.to))}"
            for k in c.framework_keys
        ]
        notes += [k.note for k in c.framework_keys if k.note]
        known = c.framework_keys[0].from_ is not None
        text = ", ".join(parts) + (str(esc(how)) if known and how else "")
    else:
        text = (
            f"<code>{esc(c.param)}</code> {esc(old(c.from_, c.assumed) + ' → ' + fmt(c.to) + how)}"
        )
    return ms.Markup(text + "".join(f" - {inline(n)}" for n in notes))


def _svg(d: Diagnosis, finding: Any, evidence: Any, n: int) -> Any:
    """The chart as an inline `<svg>` element; its clip path's id made unique in the page."""
    text = _CLIP.sub(
        lambda m: f'id="plot{n}"' if m.group(0).startswith("id") else f"url(#plot{n})",
        chart(d, finding, evidence),
    )
    return _markupsafe().Markup(text.strip())  # chart() escapes every text it holds


def code(text: Any) -> Any:
    """A name or a value as `<code>`, escaped."""
    return _markupsafe().Markup("<code>{}</code>").format(text)


def _t(text: str, /, **fields: Any) -> Any:
    """A template's own phrase in the asked language, as markup: the phrase's code spans as
    `<code>`, each field escaped unless it is markup already (a phrase said by `t`)."""
    said = i18n.t(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # (text, not an attribute: its quotes stay as written)
    markup = _markupsafe().Markup(_SPAN.sub(lambda m: f"<code>{m.group(2).strip()}</code>", said))
    return markup.format(**fields) if fields else markup


@cache
def environment() -> jinja2.Environment:
    jinja2 = lazy.jinja2
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(
        fmt=fmt,
        clause=clause,
        steps=steps_text,
        inline=inline,
        code=code,
        change=change_html,
    )
    env.globals.update(t=_t, plain=i18n.t)  # `plain`: a phrase as text, for a join
    return env


def render_html(d: Diagnosis) -> str:
    findings = [_finding_view(eps, d, {}) for eps in _episodes(d.findings)]
    n = 0
    for v in findings:
        drawn: set[str] = set()
        for e in v["evidence"]:
            metric = e["e"].metric
            e["svg"] = None
            if metric in d.series and metric not in drawn:
                drawn.add(metric)
                n += 1
                e["svg"] = _svg(d, v["f"], e["e"], n)
    view = {
        "lang": i18n.lang(),
        "d": d,
        "verdict": _from_markdown(verdict(d)),
        "findings": findings,
        "diff": diff_lines(d.patch.changes, d.framework) if d.patch else [],
        "framework": d.framework,
        "ckpt": d.checkpoint,
        "curves": _curves(d),
        "cost": _cost_view(d),
        "forecasts": _forecast_view(d),
        "ckpt_at": _checkpoint_view(d),
        "run_said": _run_view(d),
    }
    return environment().get_template("report.html.j2").render(**view)
