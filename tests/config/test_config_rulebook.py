"""The config rulebook: schema, docs complete, expressions use known names, schema export fresh."""

from __future__ import annotations

import ast
import json
import re
import tempfile
from pathlib import Path

import pytest

from advisor.book.config import LoadCheck, RequireCheck, export_schema, profiles, rulebook
from advisor.book.expressions import FUNCTIONS, Unknown, evaluate, fmt, render
from advisor.resources import rulebook_dir
from advisor.static import function_scopes, job_scope, model_scale

BOOK = rulebook()
DOC_FIELDS = ("summary", "why", "example", "use_instead", "source")


@pytest.mark.parametrize("rule", BOOK.rules, ids=lambda r: r.id)
def test_every_rule_has_every_doc_section(rule) -> None:
    for name in DOC_FIELDS:
        assert getattr(rule, name).strip(), f"{rule.id} lacks {name}"
    assert rule.name == rule.name.lower() and " " not in rule.name


def _names(expr: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}


def test_expressions_only_use_names_the_scope_provides() -> None:
    from advisor.config import load_config

    loaded = load_config(Path(__file__).parent / "bases" / "9b.yaml", training_samples=1000)
    job = job_scope(loaded)
    fn = function_scopes(loaded, job)[0]
    for rule in BOOK.rules:
        if isinstance(rule.check, LoadCheck):  # messages are written by the loader
            continue
        known = (
            set(fn if rule.scope == "function" else job)
            | set(FUNCTIONS)
            | {"True", "False", "None"}
        )
        exprs = [rule.when, rule.suggested]
        if isinstance(rule.check, RequireCheck):
            exprs.append(rule.check.expr)
        exprs += re.findall(r"\{([^{}]+)\}", rule.message)
        for expr in filter(None, exprs):
            assert _names(expr) <= known, (rule.id, expr, _names(expr) - known)


def test_schema_export_is_fresh() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "schema.json"
        export_schema(fresh)
        committed = rulebook_dir() / "schema_config.json"
        assert json.loads(committed.read_text()) == json.loads(fresh.read_text()), (
            "run: python -c 'from pathlib import Path;"
            " from advisor.book.config import export_schema;"
            ' export_schema(Path("rulebook/schema_config.json"))\''
        )


def test_profiles_use_hyperparameter_names_and_valid_values() -> None:
    for name, prof in profiles().profiles.items():
        assert set(prof.hyper_parameters) <= set(BOOK.hyper_parameters), name
        assert model_scale(prof.model)[0] != "unknown"
        for key, value in prof.hyper_parameters.items():
            spec = BOOK.hyper_parameters[key]
            for v in value if isinstance(value, list) else [value]:
                assert spec.choices is None or v in spec.choices
                assert spec.min is None or v >= spec.min
                assert spec.max is None or v <= spec.max


@pytest.mark.parametrize(
    ("name", "kind", "params", "active"),
    [
        ("qwen3.5-9b", "dense", 9, None),
        ("Qwen3.5-35B-A3B", "moe", 35, 3),
        ("qwen3-30b-a3b-instruct", "moe", 30, 3),
        ("qwen2.5-7b-instruct", "dense", 7, None),
        ("Qwen2.5-0.5B", "dense", 0.5, None),
        ("mixtral-8x7b", "moe", 56, None),
        ("deepseek-moe-16b", "moe", None, None),
        ("my-model", "unknown", None, None),
        ("", "unknown", None, None),
        ("qwen3.5-9b-ft-20260101", "dense", 9, None),
    ],
)
def test_model_scale(name: str, kind: str, params: float | None, active: float | None) -> None:
    got = model_scale(name)
    assert got[0] == kind
    if kind == "moe" and params is None:
        return
    assert got[1:] == (params, active)


@pytest.mark.parametrize(
    ("expr", "scope", "expected"),
    [
        ("a * b <= c", {"a": 2, "b": 3, "c": 6}, True),
        ("a if a is not None else 5", {"a": None}, 5),
        ("x or y", {"x": None, "y": "ro-1"}, "ro-1"),
        ("startswith(e, 'ro-')", {"e": "ro-9"}, True),
        ("sum(values(w))", {"w": {"a": 0.25, "b": 0.75}}, 1.0),
        ("not truthy(get(env, 'T'))", {"env": {"T": "true"}}, False),
        ("1 <= a <= 3", {"a": 2}, True),
        ("a in ('gspo', 'dapo')", {"a": "dapo"}, True),
        ("ceil(a / b)", {"a": 7, "b": 2}, 4),
    ],
)
def test_evaluate(expr: str, scope: dict, expected: object) -> None:
    assert evaluate(expr, scope) == expected


@pytest.mark.parametrize(
    ("expr", "scope"),
    [("a > 1", {}), ("a > 1", {"a": None}), ("a / b", {"a": 1, "b": 0}), ("a + 1", {"a": "x"})],
)
def test_unknown_values_skip(expr: str, scope: dict) -> None:
    with pytest.raises(Unknown):
        evaluate(expr, scope)


@pytest.mark.parametrize(
    "expr", ["__import__('os')", "a.b", "open('x')", "[x for x in y]", "a[0]", "lambda: 1"]
)
def test_unsafe_expressions_are_refused(expr: str) -> None:
    with pytest.raises(ValueError):
        evaluate(expr, {"a": 1, "y": [1]})


def test_fmt_and_render() -> None:
    assert (
        fmt(2e-6) == "2e-6" and fmt(0.002) == "0.002" and fmt(64.0) == "64" and fmt(5e-05) == "5e-5"
    )
    assert render("{a} x {b} = {a * b} {missing}", {"a": 2, "b": 4}) == "2 x 4 = 8 ?"
