"""The report: verdict, table, evidence with sparklines and plots, diff, checkpoint, JSON."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import pytest
from report_helpers import HP, Judgement, finding, make_rules, make_run

from advisor.api import assemble
from advisor.report import render
from advisor.report.markdown import sparkline
from advisor.types import ConfigFinding, InputError, Severity


def diag(findings=None, status="issues", **kw):
    fs = (
        [finding("P9", "warning", 40), finding("P1", strength=1.0)]
        if findings is None
        else findings
    )
    return assemble(
        make_run(**kw),
        HP,
        Judgement(fs, status=status),
        rules=make_rules(),
        config_findings=[
            ConfigFinding(
                id="C1", severity=Severity.warning, params=["save_steps"], message="a | b"
            )
        ],
    )


def test_verdict_names_the_one_change() -> None:
    md = render(diag(), "markdown")
    first = next(line for line in md.splitlines() if line.startswith("**Verdict:**"))
    assert "2 issues (1 error, 1 warning)" in first
    # no job file and no origin: the old value is the platform default, said to be assumed
    assert "`learning_rate` 2e-06 (assumed) → 4e-06" in first and "P1" in first


def test_findings_table_and_sections_in_priority_order() -> None:
    md = render(diag(), "markdown")
    rows = [line for line in md.splitlines() if line.startswith("| [")]
    assert [r.split("]")[0][3:] for r in rows] == ["P1", "P9"]
    assert md.index("### P1") < md.index("### P9")
    assert "onset at step 200" in md
    assert "--ignore P1" in md


def test_patch_is_a_diff_block() -> None:
    md = render(diag(), "markdown")
    block = md.split("```diff\n", 1)[1].split("```", 1)[0]
    assert block.startswith(" hyper_parameters:\n")
    # an assumed old value is no line of the user's file: only the change is shown
    assert "-  learning_rate" not in block and "+  learning_rate: 4e-06" in block
    assert "max_length" not in block  # one variable at a time


def test_table_cells_are_escaped_and_config_findings_listed() -> None:
    assert "| C1 | warning | save_steps | a &#124; b |" in render(diag(), "markdown")


def test_checkpoint_section_says_the_best_was_not_kept() -> None:
    md = render(diag(), "markdown")
    assert "step 150" in md and "no checkpoint of that step survives" in md
    assert "| 0.515 | 150 | 200, 300, 400 | no | 400 |" in md


def test_healthy_and_insufficient_verdicts() -> None:
    assert "Healthy: no symptom (trends judged after a warm-up of 150 steps)" in render(
        diag([], "healthy")
    )
    short = render(diag([], "insufficient_data", steps=100))
    assert "Not enough data to judge yet: 100 steps read, the warm-up alone is 150" in short


def test_plots_written_beside_the_report(tmp_path) -> None:
    md = render(diag(), "markdown", out_dir=tmp_path, stem="job")
    svg = (tmp_path / "job-P1-reward_mean.svg").read_text()
    assert svg.startswith("<svg ") and svg.rstrip().endswith("</svg>")
    assert "<polyline " in svg and "onset " in svg and "P1 window " in svg
    assert "](job-P1-reward_mean.svg)" in md
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_no_out_dir_no_plot_links() -> None:
    assert ".svg)" not in render(diag(), "markdown")


def test_json_follows_the_contract() -> None:
    data = json.loads(render(diag(nan_at=120), "json"))
    assert data["schema_version"] == 1 and data["tool"]["name"] == "rl-advisor"
    assert data["status"] == "issues" and data["warmup_steps"] == 150
    assert data["run"]["metrics"] == ["reward_mean", "entropy", "val_reward"]
    change = data["findings"][0]["action"]["changes"][0]
    assert set(change) >= {"param", "from", "to", "op", "factor"} and "from_" not in change
    assert data["patch"]["from_finding"] == "P1"
    assert data["patch"]["hyper_parameters"]["learning_rate"] == 4e-6
    assert "series" not in data
    assert data["config_findings"][0]["params"] == ["save_steps"]


def test_unknown_format_is_an_input_error() -> None:
    with pytest.raises(InputError, match="--format"):
        render(diag(), "pdf")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, 2, 3, 4, 5, 6, 7, 8], "▁▂▃▄▅▆▇█"),
        ([2.0, 2.0, 2.0], "▅▅▅"),  # constant: mid-height, not the floor
        ([0.0, math.nan, 1.0], "▁×█"),
        ([0.0, None, 1.0], "▁ █"),
        ([], ""),
    ],
)
def test_sparkline(values, expected) -> None:
    assert sparkline(values) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [  # 3 blocks of 2 steps: the middle one
        ([0.0, 0.0, math.inf, 1.0, 1.0, 1.0], "▁×█"),  # a non-finite value
        ([0.0, 0.0, None, -math.inf, 1.0, 1.0], "▁×█"),  # beside a step without one
        ([0.0, 0.0, 1.7e308, 1.7e308, 1.0, 1.0], "▁×█"),  # a mean that overflows
        ([0.0, 0.0, None, None, 1.0, 1.0], "▁ █"),  # no value at all
        ([0.0, 0.0, None, 0.5, 1.0, 1.0], "▁▅█"),  # the mean of the values it has
    ],
)
def test_sparkline_blocks(values, expected) -> None:
    assert sparkline(values, width=3) == expected


def test_sparkline_width_is_bounded() -> None:
    assert len(sparkline(list(range(5000)), width=40)) == 40


def test_divergence_says_where_to_restart() -> None:
    d = diag([finding("DIV", onset=250)])
    assert d.next_steps[0].startswith("Restart from the checkpoint of step 200")
    early = diag([finding("DIV", onset=150)])
    assert "No kept checkpoint precedes the divergence at step 150" in early.next_steps[0]
    # recovered from a first collapse, ended in a second: restart before the second
    first = replace(finding("DIV", onset=150), cleared_step=180)
    again = diag([first, finding("DIV", onset=250)])
    assert again.next_steps[0].startswith("Restart from the checkpoint of step 200")


def test_all_silenced_is_healthy() -> None:
    d = assemble(make_run(), HP, Judgement([finding("P1")]), silenced={"P1"}, rules=make_rules())
    assert d.status == "healthy" and d.findings == []
    assert "Silenced with --ignore: P1." in d.assumptions


def test_episodes_of_one_rule_are_one_section() -> None:
    a = replace(finding("P2", "warning", 30, onset=160), cleared_step=220)
    b = finding("P2", "warning", 30, onset=300)
    md = render(diag([a, b]), "markdown")
    assert md.count("### P2 ") == 1
    assert "Seen 2 times: from step 160 to 220 (cleared); from step 300 (active)" in md
    row = next(line for line in md.splitlines() if line.startswith("| [P2]"))
    assert "| 160 | active (2 episodes) |" in row
    assert "confidence, onset at step 160." in md  # the section agrees with the table
    assert "**Verdict:** 1 issue (1 warning)" in md  # two episodes, one issue


def test_verdict_tells_an_abnormal_ending() -> None:
    from advisor.types import RunEnding

    d = diag([], "insufficient_data", steps=100)
    d.run.ending = RunEnding(kind="disk_full", step=100)
    first = next(x for x in render(d).splitlines() if x.startswith("**Verdict:**"))
    assert first.endswith("The run ended abnormally: disk full at step 100.")


def test_run_block_shows_the_headline_curves() -> None:
    run_block = render(diag()).split("## Run", 1)[1]
    assert "- `val_reward` `" in run_block and "at step 50 → 0.44 at step 400" in run_block


def test_json_is_strict_even_with_non_finite_statistics() -> None:
    f = finding("NAN")
    f.evidence[0].statistic.update(first_nan=float("nan"), peak=float("inf"))

    def no_constants(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    data = json.loads(render(diag([f]), "json"), parse_constant=no_constants)
    assert data["findings"][0]["evidence"][0]["statistic"]["first_nan"] is None


def test_sparkline_any_input() -> None:
    from hypothesis import example, given
    from hypothesis import strategies as st

    values = st.lists(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)))

    @given(values, st.integers(1, 60))
    @example([1e308, -1e308, 1e308], 3)  # hi - lo overflows
    @example([1e308, 1e308], 1)  # the block mean overflows
    def check(vs, width) -> None:
        line = sparkline(vs, width)
        assert len(line) == min(width, len(vs))
        assert set(line) <= set("▁▂▃▄▅▆▇█× ")

    check()


def test_plots_survive_non_finite_and_empty_curves(tmp_path) -> None:
    d = diag([finding("NAN")])
    d.series["reward_mean"] = ([1, 2, 3, 4], [0.1, float("inf"), float("nan"), None])
    d2 = diag([finding("NAN")])
    d2.series["reward_mean"] = ([1, 2], [float("nan"), float("nan")])
    for i, dd in enumerate((d, d2)):
        render(dd, "markdown", out_dir=tmp_path, stem=f"r{i}")
        svg = (tmp_path / f"r{i}-NAN-reward_mean.svg").read_text()
        coords = re.findall(r'(?:x|y|x1|x2|y1|y2|width|points|d)="([^"]*)"', svg)
        assert "NaN/inf" in svg and not any("nan" in c or "inf" in c for c in coords)


def test_nan_also_says_where_to_restart() -> None:
    d = diag([finding("NAN", onset=320)])
    assert d.next_steps[0] == (
        "Restart from the checkpoint of step 300, the last kept one before the first "
        "non-finite metrics at step 320."
    )


def test_charts_are_well_formed_and_keep_spikes_of_long_series(tmp_path) -> None:
    from xml.etree import ElementTree

    n = 200_000
    d = diag()
    d.series["reward_mean"] = (list(range(1, n + 1)), [0.5] * n)
    d.series["reward_mean"][1][123_456] = 9.0  # one spike among 200k flat points
    render(d, "markdown", out_dir=tmp_path, stem="long")
    path = tmp_path / "long-P1-reward_mean.svg"
    root = ElementTree.parse(path).getroot()
    assert path.stat().st_size < 100_000  # a few points per pixel column, not 200k
    (line,) = root.iter("{http://www.w3.org/2000/svg}polyline")
    ys = [float(p.split(",")[1]) for p in line.get("points", "").split()]
    assert min(ys) < 40  # the spike reaches the top of the plot


def test_the_templates_loaded_ahead_are_the_report_and_every_one_it_includes() -> None:
    """The command loads markdown.TEMPLATES while the run is read: the report's template
    first, then each template it (or one of those) includes, so none is left to the render."""
    from jinja2 import meta

    from advisor.report.markdown import TEMPLATES
    from advisor.report.templating import TEMPLATES as FOLDER
    from advisor.report.templating import environment

    env = environment()
    found, todo = [], [TEMPLATES[0]]
    while todo:
        name = todo.pop(0)
        found.append(name)
        source = (FOLDER / name).read_text(encoding="utf-8")
        todo += [n for n in meta.find_referenced_templates(env.parse(source)) if n not in found]
    assert TEMPLATES[0] == "report.md.j2"
    assert sorted(TEMPLATES) == sorted(found)


def test_the_charts_escape_text_as_html_escape_does() -> None:
    """plots.escape writes html.escape's entities (a chart's bytes stay what they were)."""
    import html

    from hypothesis import example, given, settings
    from hypothesis import strategies as st

    from advisor.report.plots import escape

    @settings(max_examples=500, deadline=None)
    @given(st.text())
    @example("&amp; <a href=\"x\">'it's'</a> &&")
    def check(text: str) -> None:
        assert escape(text) == html.escape(text)

    check()
