"""Renderers: a Diagnosis in, text out. Formats map to renderer functions (no if/elif chain).

`render(diagnosis, "markdown", out_dir=DIR, stem="report")` also draws one SVG chart per finding
and metric into DIR (`<stem>-<ID>-<metric>.svg`) and links them; without `out_dir` no picture
is drawn and the report keeps its inline sparklines.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

from advisor.i18n import localise_diagnosis
from advisor.types import Diagnosis, InputError, without_surrogates

# file name -> SVG text: the charts a caller writes itself (see render)
Charts: TypeAlias = dict[str, str] | None


def _json(diagnosis: Diagnosis, out_dir: Path | None, stem: str, charts: Charts = None) -> str:
    # strict JSON (NaN/inf as null), `from`, not `from_`; `render` replaces lone surrogates
    return diagnosis.to_json(indent=2) + "\n"


def _localised(diagnosis: Diagnosis) -> Diagnosis:
    """The diagnosis in the asked language (advisor.i18n), the rules' texts in the run's
    framework's names where the report speaks them."""
    from advisor.i18n import lang

    if lang() == "en":
        return diagnosis
    from advisor.dialect import Speaker

    run = diagnosis.run
    speaker = Speaker(
        diagnosis.framework,
        diagnosis.hyper_parameters,
        run.config_hints if run is not None else {},
        {p: "default" for p in diagnosis.assumed_parameters},
    )
    return localise_diagnosis(diagnosis, speaker.text if speaker.native else None)


def _markdown(diagnosis: Diagnosis, out_dir: Path | None, stem: str, charts: Charts = None) -> str:
    # the Markdown renderer (its charts, templates and escaping: ~2 ms) is no json report's
    from advisor.report.markdown import render_markdown

    return render_markdown(_localised(diagnosis), out_dir, stem, charts)


def _html(diagnosis: Diagnosis, out_dir: Path | None, stem: str, charts: Charts = None) -> str:
    # one self-contained file: its charts are inline, nothing is drawn into out_dir
    from advisor.report.html import render_html

    return render_html(_localised(diagnosis))


RENDERERS: dict[str, Callable[[Diagnosis, Path | None, str, Charts], str]] = {
    "markdown": _markdown,
    "json": _json,
    "html": _html,
}


def render(
    diagnosis: Diagnosis,
    format: str = "markdown",
    out_dir: Path | None = None,
    stem: str = "report",
    charts: Charts = None,
) -> str:
    """The report as text; pictures (Markdown only: the HTML holds its own) go to `out_dir`
    when it is given, or into `charts` (file name -> SVG text, for the caller to write into
    `out_dir` beside the report)."""
    try:
        renderer = RENDERERS[str(format)]
    except KeyError:
        raise InputError(
            f"--format: expected one of {', '.join(RENDERERS)}, got {format!r}"
        ) from None
    return without_surrogates(renderer(diagnosis, out_dir, stem, charts))


__all__ = ["RENDERERS", "render"]
