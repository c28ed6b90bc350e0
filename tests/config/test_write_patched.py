"""write_patched: the patched job file keeps comments, order and layout; the input never changes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from config_helpers import JOBS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.config import load_config, write_patched
from advisor.static import rulebook
from advisor.types import InputError


def _value(spec: Any) -> st.SearchStrategy[Any]:
    if spec.type == "choice":
        return st.sampled_from(spec.choices)
    if spec.type == "int":
        return st.integers(int(spec.min), int(spec.max if spec.max is not None else 10_000))
    lo = spec.min if spec.min is not None else 0.0
    return st.floats(lo, spec.max, exclude_min=spec.min_exclusive, allow_subnormal=False)


HP_CHANGES = st.dictionaries(
    st.sampled_from(sorted(rulebook().hyper_parameters)), st.nothing(), max_size=0
).flatmap(
    lambda _: st.fixed_dictionaries(
        {},
        optional={k: _value(s) for k, s in rulebook().hyper_parameters.items()},
    )
)


def _comments(text: str) -> list[str]:
    return [m.strip() for m in re.findall(r"#[^\n]*", text)]


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(changes=HP_CHANGES)
@pytest.mark.parametrize(
    "name", ["guide_config.yaml", "guide_run_kwargs.yaml", "guide_hyper_parameters.yaml"]
)
def test_patch_round_trips_and_keeps_comments(name: str, changes: dict, tmp_path: Path) -> None:
    src = tmp_path / name
    shutil.copy(JOBS / name, src)
    before = src.read_bytes()
    dest = tmp_path / f"patched-{name}"
    write_patched(src, changes, dest)
    assert src.read_bytes() == before  # the input is never changed
    orig, new = load_config(src), load_config(dest)
    assert new.hyper_parameters == orig.hyper_parameters | changes
    assert new.layout == orig.layout
    text = dest.read_text(encoding="utf-8")
    assert _comments(text) == _comments(before.decode())
    assert [f.id for f in new.findings if f.id in ("C001", "C002")] == []
    # key order: the original keys come first, in their order
    old_keys = [k for k in orig.lines if k in orig.hyper_parameters]
    new_keys = [k for k in new.lines if k in new.hyper_parameters]
    assert new_keys[: len(old_keys)] == old_keys


def test_empty_patch_is_byte_identical(tmp_path: Path) -> None:
    # block style survives byte for byte (ruamel re-flows multi-line flow mappings, though)
    for name in ("guide_config.yaml", "guide_hyper_parameters.yaml"):
        dest = tmp_path / name
        write_patched(JOBS / name, {}, dest)
        assert dest.read_text() == (JOBS / name).read_text(), name


def test_patch_keeps_end_of_line_comment_of_a_changed_key(tmp_path: Path) -> None:
    dest = tmp_path / "p.yaml"
    write_patched(JOBS / "guide_config.yaml", {"learning_rate": 4e-6, "kl_loss_coef": 0.01}, dest)
    text = dest.read_text()
    assert re.search(r"learning_rate: 4.0e-06 +# learning rate", text)  # YAML 1.1 reads it
    assert re.search(r"kl_loss_coef: 0.01 +# KL penalty", text)


def test_json_stays_json(tmp_path: Path) -> None:
    dest = tmp_path / "p.json"
    write_patched(JOBS / "guide_run_kwargs.json", {"learning_rate": 3e-6, "n_rollouts": 16}, dest)
    data = json.loads(dest.read_text())
    assert data["hyper_parameters"]["learning_rate"] == 3e-6
    assert data["hyper_parameters"]["n_rollouts"] == 16
    assert list(data) == list(json.loads((JOBS / "guide_run_kwargs.json").read_text()))


def test_dotted_paths_and_resources(tmp_path: Path) -> None:
    dest = tmp_path / "p.yaml"
    changes = {"mtu_capacity": 32, "functions.0.runtime.concurrency": 60}
    write_patched(JOBS / "guide_config.yaml", changes, dest)
    loaded = load_config(dest)
    assert loaded.config.resources.mtu_capacity == 32
    assert loaded.config.functions[0].runtime["concurrency"] == 60


def test_missing_hyper_parameters_block_is_created(tmp_path: Path) -> None:
    src = tmp_path / "job.yaml"
    src.write_text("model: qwen3.5-9b  # the base\nmode: reinforcement\n")
    dest = tmp_path / "p.yaml"
    write_patched(src, {"learning_rate": 5e-6}, dest)
    loaded = load_config(dest)
    assert loaded.hyper_parameters["learning_rate"] == 5e-6
    assert loaded.origin["learning_rate"] == "file"
    assert "# the base" in dest.read_text()


def test_no_source_writes_a_minimal_job(tmp_path: Path) -> None:
    dest = tmp_path / "p.yaml"
    write_patched(None, {"learning_rate": 5e-6}, dest)
    assert load_config(dest).hyper_parameters["learning_rate"] == 5e-6


def test_refuses_to_overwrite_the_source(tmp_path: Path) -> None:
    src = tmp_path / "job.yaml"
    shutil.copy(JOBS / "guide_config.yaml", src)
    before = src.read_bytes()
    with pytest.raises(InputError, match="must not overwrite its source"):
        write_patched(src, {"learning_rate": 1e-6}, tmp_path / "." / "job.yaml")
    assert src.read_bytes() == before


def test_unreadable_source_leaves_no_output(tmp_path: Path) -> None:
    src = tmp_path / "job.yaml"
    src.write_text("a: [1,\n")
    dest = tmp_path / "out" / "p.yaml"
    with pytest.raises(InputError):
        write_patched(src, {"learning_rate": 1e-6}, dest)
    assert not dest.exists()
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_json_patch_spells_exponents_as_yaml_1_1_reads_them(tmp_path: Path) -> None:
    """The SDK reads a job file with a YAML 1.1 loader, JSON too: json.dumps's 1e-05 would be
    the string '1e-05' there."""
    dest = tmp_path / "p.json"
    write_patched(JOBS / "guide_run_kwargs.json", {"learning_rate": 1e-05}, dest)
    text = dest.read_text()
    assert '"learning_rate": 1.0e-05' in text
    assert json.loads(text)["hyper_parameters"]["learning_rate"] == 1e-05
