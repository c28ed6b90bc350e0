"""JSON depth counts structure, never the insides of strings: a console log inside a JSON
string (each colour code opens a `[`) is one level deep, and a document truly nested past the
limit is still refused before a parser recurses into it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.ingest import MAX_JSON_DEPTH, _check_depth, json_depth
from advisor.types import InputError

_TEXT = st.text(alphabet=st.sampled_from('[]{}"\\\x1b ab\n:,'), max_size=40)
_LEAF = st.one_of(st.integers(), st.floats(allow_nan=False), _TEXT, st.none())
_DOCS = st.recursive(
    _LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=12,
)


def _depth(doc: Any) -> int:
    if isinstance(doc, dict):
        return 1 + max((_depth(v) for v in doc.values()), default=0)
    if isinstance(doc, list):
        return 1 + max((_depth(v) for v in doc), default=0)
    return 0


def _nest(doc: Any, levels: int) -> Any:
    for i in range(levels):
        doc = [doc] if i % 2 else {"k": doc}
    return doc


@settings(max_examples=150, deadline=None)
@given(doc=_DOCS, extra=st.integers(0, 2 * MAX_JSON_DEPTH), indent=st.sampled_from([None, 1]))
def test_depth_is_the_structures(doc: Any, extra: int, indent: int | None) -> None:
    doc = _nest(doc, extra)
    want = _depth(doc)
    text = json.dumps(doc, indent=indent).encode()
    for chunk in (1 << 24, 7):  # one piece, and pieces cut at line ends
        got = json_depth(text, per_line=False, chunk=chunk)
        if got > MAX_JSON_DEPTH:  # a refusal is the structure's, never its strings'
            assert got == want
        strings_close = any(c in s for s in _strings(doc) for c in "]}")
        if not strings_close:  # then nothing too deep gets past
            assert got >= min(want, MAX_JSON_DEPTH + 1)


def _strings(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        return [*doc, *(s for v in doc.values() for s in _strings(v))]
    if isinstance(doc, list):
        return [s for v in doc for s in _strings(v)]
    return [doc] if isinstance(doc, str) else []


def test_a_log_in_a_string_is_one_level_deep(tmp_path: Path) -> None:
    line = "\x1b[36m(TaskRunner pid=1)\x1b[0m step:1 - a:[1] - b:{2}"
    for body in ({"job_id": "j", "logs": "\n".join([line] * 5000)}, {"logs": [line] * 5000}):
        p = tmp_path / "logs.json"
        p.write_text(json.dumps(body, indent=2), encoding="utf-8")
        _check_depth(p, per_line=False, chunk=1000)  # not refused
        assert json_depth(p.read_bytes(), per_line=False) == _depth(body)


def test_a_truly_deep_document_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "deep.json"
    doc = _nest({"logs": "[" * 500}, MAX_JSON_DEPTH + 5)
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=f"nested {MAX_JSON_DEPTH + 6} levels deep"):
        _check_depth(p, per_line=False, chunk=64)
