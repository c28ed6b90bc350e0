"""A verl config dump that lost lines in a copy (each replaced by `commit:` and blanks, as in a
maintainer's published gemma-2 PPO log) is read by its pprint layout: every setting on a line
that survived, none filled in, and a reader warning that says so. The fixture
`fixtures/verl_damaged_dump.log` is a trimmed copy of that log's head (its dump with the damage,
the Ray prefixes and colours, a worker's line glued to a dump line) and its first steps."""

from __future__ import annotations

import pprint
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.ingest import load_run
from advisor.ingest.pdump import read_layout

FIXTURE = Path(__file__).parent / "fixtures" / "verl_damaged_dump.log"


def test_the_damaged_gemma_dump_keeps_every_key_that_survived() -> None:
    run = load_run(FIXTURE)
    hints = run.config_hints
    # from the dump's lines that survived: the estimator, the actor's optimiser and epochs, the
    # rollout's temperature, the validation cadence (trainer.test_freq, after the glued line)
    assert hints["adv_estimator"] == "gae"
    assert hints["learning_rate"] == 1e-06 and hints["ppo_epochs"] == 1
    assert hints["temperature"] == 1.0 and hints["entropy_coeff"] == 0.001
    assert hints["eval_steps"] == 10 and hints["n_epochs"] == 15
    assert any("config dump does not parse as a whole" in w for w in run.warnings)
    assert run.frame.height >= 5  # the steps are read as before


def _prefixed(cfg: dict[str, Any], prefix: str = "(main_task pid=1) ") -> str:
    return "".join(f"{prefix}{ln}\n" for ln in pprint.pformat(cfg).splitlines())


CFG = {
    "actor_rollout_ref": {
        "actor": {"optim": {"lr": 2e-06, "warmup_style": "constant"}, "ppo_epochs": 1},
        "rollout": {"temperature": 0.9, "n": 5, "response_length": 1024},
    },
    "algorithm": {"adv_estimator": "grpo", "kl_ctrl": {"kl_coef": 0.001, "type": "fixed"}},
    "data": {"train_batch_size": 256, "max_prompt_length": 512, "max_response_length": 1024},
    "trainer": {"test_freq": 5, "total_epochs": 3, "logger": ["console", "wandb"]},
}
STEPS = "".join(f"(main_task pid=1) step:{s} - critic/score/mean:0.{s} - actor/lr:2e-06\n"
                for s in range(1, 6))


def test_an_intact_dump_reads_as_it_did_without_a_warning(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text(_prefixed(CFG) + STEPS)
    run = load_run(p)
    assert run.config_hints["temperature"] == 0.9 and run.config_hints["eval_steps"] == 5
    assert not any("config dump" in w for w in run.warnings)


def test_a_dump_that_lost_its_closing_line_keeps_the_keys_after_it(tmp_path: Path) -> None:
    lines = _prefixed(CFG).splitlines()
    lost = next(i for i, ln in enumerate(lines) if "'warmup_style'" in ln)  # closes optim
    lines[lost] = "commit:"  # what the copy put in its place, then blanks
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines[:lost + 1]) + "\n\n\n\n" + "\n".join(lines[lost + 1:]) + "\n"
                 + STEPS)
    run = load_run(p)
    hints = run.config_hints
    assert hints["learning_rate"] == 2e-06 and hints["ppo_epochs"] == 1  # optim's first key
    assert hints["temperature"] == 0.9 and hints["eval_steps"] == 5
    assert any("config dump does not parse as a whole" in w for w in run.warnings)


def test_keys_of_a_dict_whose_opening_line_was_lost_are_dropped() -> None:
    lines: list[str | None] = list(pprint.pformat(CFG, width=40).splitlines())
    opening = next(i for i, ln in enumerate(lines) if ln and "'kl_ctrl'" in ln)
    assert "'type'" not in (lines[opening] or "")  # kl_ctrl's keys go on to the next line
    got, dropped = read_layout([*lines[:opening], None, *lines[opening + 1:]])
    # 'kl_ctrl' opened on the lost line; its 'type' (own line) has no dict to go to
    assert "kl_ctrl" not in got["algorithm"] and "type" not in got["algorithm"]
    assert got["data"] == CFG["data"] and got["trainer"] == CFG["trainer"]
    assert dropped >= 1


def test_a_wrapped_value_that_lost_a_line_is_not_read() -> None:
    cfg = {"trainer": {"logger": [f"logger_number_{i:03d}" for i in range(12)], "nnodes": 1}}
    lines: list[str | None] = list(pprint.pformat(cfg).splitlines())
    assert len(lines) > 4  # pprint wrapped the list
    got, _ = read_layout([*lines[:2], None, *lines[3:]])
    assert "logger" not in got["trainer"] and got["trainer"]["nnodes"] == 1


# --------------------------------------------------------------------------- property

_keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=14)
_leaf = st.one_of(
    st.integers(-10_000, 10_000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
    st.text(alphabet="abcdef /._-'\"{}:,", max_size=30),
    st.lists(st.text(alphabet="abcdefgh_", max_size=25), max_size=8),
)
_config = st.recursive(
    _leaf, lambda inner: st.dictionaries(_keys, inner, min_size=1, max_size=6), max_leaves=40
).filter(lambda d: isinstance(d, dict))


def _agrees(got: Any, want: Any) -> bool:
    """Every key read is at its place with its value (a sub-tree of the original)."""
    if isinstance(got, dict):
        return isinstance(want, dict) and all(
            k in want and _agrees(v, want[k]) for k, v in got.items()
        )
    return got == want or (isinstance(want, dict) and got == {})


@settings(max_examples=150, deadline=None)
@given(_config, st.data())
def test_whatever_lines_are_lost_nothing_is_misplaced(cfg: dict[str, Any], data: Any) -> None:
    lines: list[str | None] = list(pprint.pformat(cfg, width=60).splitlines())
    whole, dropped = read_layout(lines)
    assert whole == cfg and dropped == 0
    lost = data.draw(st.sets(st.integers(1, max(1, len(lines) - 1)), max_size=4))
    damaged = [None if i in lost else ln for i, ln in enumerate(lines)]
    got, _ = read_layout(damaged)
    assert _agrees(got, cfg)


def test_the_warning_in_zh() -> None:
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "advisor", "diagnose", str(FIXTURE), "--fail-on", "never",
           "--lang", "zh"]
    md = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "配置转储无法整体解析" in md


def test_a_sibling_whose_opening_line_was_lost_is_not_read_into_the_dict_before_it() -> None:
    # 'aaaa' and 'bbbb' have keys as long: bbbb's keys sit at aaaa's column. Lost: aaaa's
    # closing line and bbbb's opening line; bbbb's 'b0' sorts before aaaa's last key 'x1'
    cfg = {"top": {"aaaa": {"w1": "v" * 30, "x1": "v" * 30},
                   "bbbb": {"a0": "u" * 30, "b0": "u" * 30}}}
    lines: list[str | None] = list(pprint.pformat(cfg, width=50).splitlines())
    closing = next(i for i, ln in enumerate(lines) if ln and "'x1'" in ln)
    opening = next(i for i, ln in enumerate(lines) if ln and "'bbbb'" in ln)
    assert opening == closing + 1
    got, dropped = read_layout([*lines[:closing], None, *lines[opening + 1:]])
    assert got == {"top": {"aaaa": {"w1": "v" * 30}}} and dropped >= 1
