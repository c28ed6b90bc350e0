"""The user's rules file (rl-advisor.toml, pyproject [tool.rl-advisor], --rules-config) through
the real entry point: a rule off, its severity, its thresholds; a typo is one line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "sample_metrics" / "corpus" / "p1-stall-verl-console-s0001"


def _diagnose(cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RL_ADVISOR_")}
    return subprocess.run(
        [sys.executable, "-m", "advisor", "diagnose", str(RUN), "-c", str(RUN / "job.yaml"),
         "--no-plots", "--format", "json", *extra],
        capture_output=True, text=True, cwd=cwd, env=env, check=False,
    )  # fmt: skip


def _findings(out: subprocess.CompletedProcess[str]) -> dict[str, str]:
    import json

    assert out.returncode in (0, 1), out.stderr
    return {f["id"]: f["severity"] for f in json.loads(out.stdout)["findings"]}


def test_no_file_no_change(tmp_path: Path) -> None:
    assert _findings(_diagnose(tmp_path)) == {"P1": "error"}


def test_severity_from_rl_advisor_toml_in_a_folder_above(tmp_path: Path) -> None:
    (tmp_path / "rl-advisor.toml").write_text('[rules.P1]\nseverity = "warning"\n')
    (tmp_path / "deep" / "er").mkdir(parents=True)
    out = _diagnose(tmp_path / "deep" / "er")
    assert _findings(out) == {"P1": "warning"}
    assert out.returncode == 0  # --fail-on error: a warning no longer fails the call


def test_a_rule_turned_off(tmp_path: Path) -> None:
    (tmp_path / "rl-advisor.toml").write_text("[rules.P1]\nenabled = false\n")
    out = _diagnose(tmp_path)
    assert _findings(out) == {} and out.returncode == 0


def test_a_threshold_changed(tmp_path: Path) -> None:
    # the plateau is judged from step min_steps: past this run's 282 steps it cannot fire
    (tmp_path / "rl-advisor.toml").write_text("[rules.P1.params]\nmin_steps = 400\n")
    assert "P1" not in _findings(_diagnose(tmp_path))


def test_pyproject_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.rl-advisor.rules.P1]\nseverity = "info"\n'
    )
    assert _findings(_diagnose(tmp_path)) == {"P1": "info"}


def test_rules_config_flag_wins(tmp_path: Path) -> None:
    (tmp_path / "rl-advisor.toml").write_text("[rules.P1]\nenabled = false\n")
    mine = tmp_path / "mine.toml"
    mine.write_text('[rules.P1]\nseverity = "warning"\n')
    assert _findings(_diagnose(tmp_path, "--rules-config", str(mine))) == {"P1": "warning"}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[rules.P1]\nsevrity = "warning"\n', "rules.P1.sevrity: unknown key, expected one of "
         "enabled, severity, params (did you mean severity?)"),
        ("[rules.P11]\nenabled = false\n", "rules.P11: no such rule (did you mean P1?)"),
        ("[rules.P1.params]\nmax_pp = 0.01\n", "rules.P1.params.max_pp: P1 has no parameter "
         "max_pp (did you mean max_p?); `rl-advisor rules P1` lists them"),
        ('[rules.P1]\nseverity = "warn"\n', "rules.P1.severity: expected one of error, warning, "
         "info, found 'warn' (did you mean warning?)"),
        ("[rules.P1.params]\nmax_p = 7\n", "rules.P1.params.max_p: expected"),
        ("[rules.P1]\nenabled = 0\n", "rules.P1.enabled: expected true or false, found 0"),
        (
            "[rule.P1]\nenabled = false\n",
            "rule: unknown key, expected one of rules, alerts (did you mean rules?)",
        ),
        ("[rules.P1\n", "not valid TOML"),
    ],
)  # fmt: skip
def test_a_typo_is_one_line_exit_2(tmp_path: Path, text: str, said: str) -> None:
    conf = tmp_path / "rl-advisor.toml"
    conf.write_text(text)
    out = _diagnose(tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rl-advisor: error: {conf}: "), lines
    assert said in lines[0]
    assert conf.read_text() == text and sorted(p.name for p in tmp_path.iterdir()) == [conf.name]


def test_a_missing_rules_config_file(tmp_path: Path) -> None:
    out = _diagnose(tmp_path, "--rules-config", str(tmp_path / "none.toml"))
    assert out.returncode == 2
    assert (
        out.stderr.strip()
        == f"rl-advisor: error: {tmp_path / 'none.toml'}: --rules-config: no such file"
    )


def test_an_alerts_table_beside_the_rules_is_the_alerts_own(tmp_path) -> None:
    """One rl-advisor.toml holds the rules and the alerts of watch: diagnose reads its rules
    and leaves the alerts table to the alerts, which check it themselves."""
    from advisor.userconf import check

    table = {"rules": {"P2": {"enabled": False}}, "alerts": {"slack": {"cooldown": 60}}}
    assert check(table, "rl-advisor.toml: ") == {"P2": {"enabled": False}}
