"""Property: any mapping of keys and values gives findings or an InputError, never a crash."""

from __future__ import annotations

import json
import string
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.config import load_config
from advisor.static import check, rulebook
from advisor.types import ConfigFinding, InputError

BOOK = rulebook()
NAMES = sorted(
    {*BOOK.hyper_parameters, *BOOK.function_runtime, *BOOK.resources}
    | {"training", "hyper_parameters", "resources", "functions", "datasets", "model", "type",
       "runtime", "fcmodel", "classpath", "entity_id", "timeout", "weight", "mode",
       "reward_metric_weight", "training_datasets", "file_name", "env", "workspace_dir",
       "rollout_id", "reward_ids", "rollout_runtime", "reward_runtimes"}
)  # fmt: skip
KEYS = st.one_of(st.sampled_from(NAMES), st.text(string.ascii_letters + "_.-", max_size=12))
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.sampled_from(["gspo", "dapo", "rollout", "reward", "qwen3.5-35b-a3b", "1e-6", "ro-1"]),
)  # fmt: skip
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
DOCS = st.dictionaries(KEYS, VALUES, max_size=6)


def _judge(path: Path) -> list[ConfigFinding]:
    try:
        loaded = load_config(path, training_samples=1000)
    except InputError:
        return []
    return loaded.findings + check(loaded)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(doc=DOCS)
def test_any_mapping_gives_findings_or_input_error(doc: dict, tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(doc))  # JSON is YAML; NaN/Infinity are read as strings
    assert all(isinstance(f, ConfigFinding) for f in _judge(path))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(hp=st.dictionaries(st.sampled_from(sorted(BOOK.hyper_parameters)), SCALARS))
def test_any_hyperparameter_values_in_the_yaml_layout(hp: dict, tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"model": "qwen3.5-35b-a3b", "training": {"hyper_parameters": hp}}))
    assert all(isinstance(f, ConfigFinding) for f in _judge(path))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=80), prefix=st.sampled_from(["", "hyper_parameters = {", "x=["]))
def test_any_text_gives_findings_or_input_error(text: str, prefix: str, tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(prefix + text, encoding="utf-8")
    assert all(isinstance(f, ConfigFinding) for f in _judge(path))


@settings(max_examples=30, deadline=None)
@given(items=st.lists(st.text(max_size=30), max_size=3))
def test_any_set_strings_give_findings_or_input_error(items: list[str]) -> None:
    from config_helpers import JOBS

    try:
        loaded = load_config(JOBS / "guide_hyper_parameters.yaml", sets=items)
    except InputError:
        return
    assert all(isinstance(f, ConfigFinding) for f in loaded.findings + check(loaded))


def test_json_escaped_astral_characters_are_text(tmp_path: Path) -> None:
    """json.dumps writes U+10000 as the pair \\ud800\\udc00, which the YAML parser reads as
    two halves (hypothesis found it): joined, and a lone half replaced, never a traceback."""
    from advisor.config import load_config

    path = tmp_path / "job.json"
    path.write_text(json.dumps({"rollout_id": "\U00010000", "job_name": "run \U0001f680"}))
    assert load_config(path).config.job_name == "run \U0001f680"
    path.write_text('{"job_name": "\\ud800x"}')
    assert load_config(path).config.job_name == "\ufffdx"

