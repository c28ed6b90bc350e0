"""`rl-advisor validate` and `rl-advisor rules` through the real entry point."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from config_helpers import JOBS

from advisor.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_clean_guide_config_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", str(JOBS / "guide_config.yaml"))
    assert code == 0, err
    assert out.startswith("# rl-advisor validate")
    assert "0 error(s)" in out


def test_validate_error_exits_1_and_names_the_param(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(
        capsys, "validate", str(JOBS / "moe_35b_a3b.yaml"), "--set", "algorithm=grpo"
    )
    assert code == 1
    assert "C301 moe-without-gspo" in out and "`algorithm`" in out


@pytest.mark.parametrize(
    ("fail_on", "code"), [("error", 0), ("warning", 1), ("info", 1), ("never", 0)]
)
def test_fail_on_threshold(capsys: pytest.CaptureFixture[str], fail_on: str, code: int) -> None:
    args = ["validate", str(JOBS / "guide_config.yaml"), "--set", "n_epochs=12"]
    assert run(capsys, *args, "--fail-on", fail_on)[0] == code


def test_validate_json_is_the_contract_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "validate", str(JOBS / "guide_config.yaml"), "--format", "json",
        "--set", "learning_rate=5e-5", "--show-config",
    )  # fmt: skip
    data = json.loads(out)
    assert code == 1  # an SFT-level learning rate diverges: an error (knowledge.md:81)
    assert data["schema_version"] == 1 and data["tool"]["name"] == "rl-advisor"
    assert data["run"] is None and data["findings"] == []
    c201 = [f for f in data["config_findings"] if f["id"] == "C201"]
    assert c201 and c201[0]["params"] == ["learning_rate"] and c201[0]["severity"] == "error"
    assert set(c201[0]) >= {"id", "severity", "params", "message"}
    assert data["config"]["hyper_parameters"]["learning_rate"] == {"value": 5e-5, "origin": "set"}


def test_show_config_lists_origins(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(
        capsys, "validate", str(JOBS / "guide_config.yaml"), "--show-config", "--set", "n_epochs=2"
    )
    assert "| n_epochs | 2 | set |" in out
    assert "| kl_loss_coef | 0.002 | file |" in out
    assert "| n_gpus_training | 8 | default |" in out


def test_profile_and_training_samples(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(
        capsys, "validate", str(JOBS / "guide_config.yaml"), "--profile", "9b-full",
        "--training-samples", "6400",
    )  # fmt: skip
    assert "C901 profile-difference" in out
    assert "C601 eval-too-frequent" in out  # 100 steps, eval every step


def test_unknown_profile_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "validate", str(JOBS / "guide_config.yaml"), "--profile", "9b-ful")
    assert code == 2 and "did you mean 9b-full?" in err


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("training:\n  hyper_parameters: [1,\n", "job.yaml:"),
        ("- a\n- b\n", "job.yaml:1: expected a mapping"),
        ("", "empty file"),
    ],
)
def test_unusable_file_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, needle: str
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    code, out, err = run(capsys, "validate", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_missing_file_and_bad_set_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "validate", str(tmp_path / "nope.yaml"))
    assert code == 2 and "no such file" in err
    code, _, err = run(capsys, "validate", str(JOBS / "guide_config.yaml"), "--set", "lr")
    assert code == 2 and "expected KEY=VALUE" in err


def test_validate_never_changes_the_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = tmp_path / "job.yaml"
    shutil.copy(JOBS / "guide_config.yaml", src)
    before = src.read_bytes()
    run(capsys, "validate", str(src), "--set", "learning_rate=1e-4")
    assert src.read_bytes() == before


def test_rules_lists_config_and_symptom_rules(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules")
    assert code == 0
    assert "| C201 | sft-level-learning-rate | config | error |" in out
    from markdown_it import MarkdownIt  # the list renders as one GFM table

    tokens = MarkdownIt("commonmark").enable("table").parse(out)
    assert sum(t.type == "table_open" for t in tokens) == 1


def test_rules_explains_one_in_the_ruff_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "c204")
    assert code == 0
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead",
                    "## Source"):  # fmt: skip
        assert section in out
    assert out.startswith("# C204 kl-disabled-outside-dapo (warning)")


def test_a_symptom_rule_shows_when_it_fires(capsys: pytest.CaptureFixture[str]) -> None:
    """The condition tree, with its thresholds (per algorithm where they differ), as data."""
    code, out, _ = run(capsys, "rules", "P3")
    assert code == 0
    when = out.split("## When it fires", 1)[1].split("## Source", 1)[0]
    assert "- any of:" in when and "`jump` on `kl_ref`" in when
    assert "grpo 0.5" in when  # the KL level is algorithm-aware
    code, out, _ = run(capsys, "rules", "P2")
    assert "  - not:" in out and "once reported, kept with wander_ratio=0" in out


def test_a_coupling_shows_how_the_remedy_repairs_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "C103")
    assert code == 0
    repair = out.split("## Repair", 1)[1].split("## ", 1)[0]
    first = "1. `max_length` = `max_prompt_length + 1024` (only when the change moved max_length)"
    assert first in repair
    assert "2. `max_prompt_length`" in repair
    code, out, _ = run(capsys, "rules", "C204")
    assert "## Repair" not in out  # no coupling, no repair


def test_rules_by_name_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "moe-without-gspo", "--format", "json")
    assert code == 0 and json.loads(out)["id"] == "C301"
    code, out, _ = run(capsys, "rules", "--format", "json")
    assert code == 0 and any(r["id"] == "C001" for r in json.loads(out))


def test_unknown_rule_exits_2_with_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "rules", "C2O1")
    assert code == 2 and out == "" and "did you mean" in err and "C201" in err


def test_rules_survive_a_missing_engine(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "advisor.engine", None)  # import now raises ImportError
    code, out, _ = run(capsys, "rules")
    assert code == 0 and "Symptom rules unavailable" in out and "| C101 |" in out


def test_every_listed_rule_can_be_explained(capsys: pytest.CaptureFixture[str]) -> None:
    from advisor.cli.rules import all_rule_docs

    docs, _ = all_rule_docs()
    for doc in docs:
        for section in (doc.summary, doc.why, doc.example, doc.use_instead, doc.source):
            assert section.strip(), (doc.id, "empty doc section")
    code, out, _ = run(capsys, "rules", docs[0].id)
    assert code == 0 and out.startswith(f"# {docs[0].id} ")
