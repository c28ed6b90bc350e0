"""The HTML report: every finding, evidence line and chart of the Markdown report, in one
file that holds no script, no link outside it, and no markup from the run's own strings."""

from __future__ import annotations

import json
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_helpers import HP, Judgement, finding, make_rules, make_run

from advisor.api import assemble
from advisor.cli import main
from advisor.report import render
from advisor.types import ConfigFinding, Evidence, Severity

LIVEFIRE = Path(__file__).parents[1] / "livefire" / "runs"
HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">&amp;`x`'
# the elements the template writes and the charts draw: anything else came from a string
ALLOWED = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "strong", "code",
    "pre", "span", "table", "tr", "th", "td", "a", "ul", "ol", "li", "section", "figure",
    "footer", "svg", "rect", "defs", "clippath", "g", "line", "polyline", "path", "text",
    "circle", "polygon", "tspan",
}  # fmt: skip


class Page(HTMLParser):
    """The tags, attributes and text of a page; ids of the finding sections and svgs."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag]

    @property
    def body(self) -> str:
        return "".join(self.text)


def _diag(findings=None):
    fs = (
        [finding("P9", "warning", 40), finding("P1", strength=1.0)]
        if findings is None
        else findings
    )
    return assemble(
        make_run(),
        HP,
        Judgement(fs, status="issues"),
        rules=make_rules(),
        config_findings=[
            ConfigFinding(
                id="C1", severity=Severity.warning, params=["save_steps"], message="a | b"
            )
        ],
    )


def _self_contained(page: Page) -> None:
    tags = {t for t, _ in page.tags}
    assert tags <= ALLOWED, tags - ALLOWED
    for tag, attrs in page.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            assert not value or value.startswith("#"), (tag, key, value)  # in-page links only


def test_every_finding_its_evidence_and_charts_are_in_the_page() -> None:
    d = _diag()
    page = Page(render(d, "html"))
    _self_contained(page)
    sections = page.all("section")
    assert len(sections) == len({f.id for f in d.findings}) == 2
    links = {a["href"] for a in page.all("a")}
    assert links == {f"#{s['id']}" for s in sections}  # the table links each section
    for f in d.findings:
        assert f"{f.id} {f.name}" in page.body
        for e in f.evidence:
            assert e.summary in page.body
    # one chart per finding and metric with a series; each clip path its own id
    assert len(page.all("svg")) == 2
    clips = [a["id"] for a in page.all("clippath")]
    assert len(set(clips)) == len(clips) == 2
    assert "The change to make" in page.body and "learning_rate" in page.body
    assert "Configuration findings" in page.body and "a | b" in page.body
    assert page.body.count("Verdict:") == 1


def test_the_same_sections_as_the_markdown_report() -> None:
    d = _diag()
    md, page = render(d, "markdown"), Page(render(d, "html"))
    headings = [line.lstrip("#").strip() for line in md.splitlines() if line.startswith("#")]
    titles = [t for t in page.body.splitlines() if t.strip()]
    for h in headings[1:]:
        assert h.replace("\\_", "_") in titles, h


def test_markup_in_run_strings_stays_text() -> None:
    hostile_finding = replace(
        finding("P1"),
        name=HOSTILE,
        why=HOSTILE,
        causes=[HOSTILE],
        evidence=[Evidence(metric=HOSTILE, detector=HOSTILE, window=(150, 400), summary=HOSTILE)],
    )
    d = _diag([hostile_finding])
    steps, values = d.series["reward_mean"]
    d = replace(
        d,
        series={**d.series, HOSTILE: (steps, values)},
        assumptions=[HOSTILE],
        next_steps=[HOSTILE],
        config_findings=[
            ConfigFinding(id="C1", severity=Severity.warning, params=[HOSTILE], message=HOSTILE)
        ],
    )
    text = render(d, "html")
    page = Page(text)
    _self_contained(page)
    assert "<script" not in text and "<img" not in text
    assert len(page.all("svg")) == 1  # the chart of the hostile metric, its title escaped
    assert page.body.count("<script>alert(1)</script>") >= 6  # shown as the text it is


def test_diagnose_format_html_writes_one_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / HOSTILE.replace("/", "_")  # a folder whose name is markup
    run.mkdir()
    for name in ("train.log", "trainer_state.json"):
        (run / name).write_bytes((LIVEFIRE / "lr-tiny" / name).read_bytes())
    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()
    code = main(["diagnose", str(run), "--format", "html", "-o", str(out)])
    assert code == 1
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.html"]  # no picture beside
    assert sorted(p.name for p in run.iterdir()) == ["train.log", "trainer_state.json"]
    page = Page(out.read_text(encoding="utf-8"))
    _self_contained(page)
    expected = json.loads(capture_json(run, capsys))
    ids = {f["id"] for f in expected["findings"]}
    assert ids
    assert len(page.all("section")) == len(ids)
    for fid in ids:
        assert any(line.startswith(fid + " ") for line in page.body.splitlines())
    assert HOSTILE.replace("/", "_") in page.body


def capture_json(run: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    main(["diagnose", str(run), "--format", "json"])
    return capsys.readouterr().out


def test_html_is_a_choice_of_diagnose_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--format", "html"]) == 2
    assert "html" in capsys.readouterr().err


CORPUS = Path(__file__).parents[2] / "sample_metrics" / "corpus"
# one labelled run per symptom family, with its job file (the patch as a diff of it)
FAMILIES = sorted(
    {
        p.name.split("-")[0]: p
        for p in sorted(CORPUS.iterdir(), reverse=True)
        if (p / "job.yaml").exists()
    }.values()
)


@pytest.mark.parametrize("run", FAMILIES, ids=lambda p: p.name)
def test_each_symptom_family_has_the_markdown_reports_content(run: Path) -> None:
    from advisor.api import diagnose

    d = diagnose(run, run / "job.yaml")
    md, page = render(d, "markdown"), Page(render(d, "html"))
    _self_contained(page)
    body = page.body
    for line in md.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            assert line.lstrip("#").strip().replace("\\_", "_") in body, line
    charted = {(f.id, e.metric) for f in d.findings for e in f.evidence if e.metric in d.series}
    assert len(page.all("svg")) == len(charted)  # one chart per finding and metric
    for f in d.findings:
        for e in f.evidence:
            assert e.summary.replace("`", "") in body
    if d.patch and d.patch.override_args:
        assert d.patch.override_args in body
    for c in d.config_findings:
        assert c.id in body
    # the Run section's keys it could not read and metrics it lacks, as the Markdown lists them
    for key in d.unread_keys:
        assert key in body
    for metric, ids in d.lacking_metrics.items():
        assert f"{metric} ({', '.join(ids)})" in body


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("<>&\"'`/="),
        min_size=1,
        max_size=40,
    )
)
def test_any_text_in_a_finding_stays_text(text: str) -> None:
    f = replace(
        finding("P1"),
        name=text,
        why=text,
        causes=[text],
        evidence=[Evidence(metric=text, detector=text, window=(150, 400), summary=text)],
    )
    d = _diag([f])
    steps, values = d.series["reward_mean"]
    d = replace(d, series={**d.series, text: (steps, values)}, assumptions=[text])
    page = Page(render(d, "html"))
    _self_contained(page)
    assert f"P1 {text}" in page.body  # the section's title, as written
