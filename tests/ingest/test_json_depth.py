"""The JSON depth guard (ingest.json_depth) counts as a byte-by-byte walk does, in any pieces."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from advisor import ingest
from advisor.ingest import MAX_JSON_DEPTH, _check_depth, json_depth
from advisor.types import InputError


def _walk(data: bytes, per_line: bool) -> int:
    depth = deepest = 0
    for ch in data:
        if ch in b"[{":
            depth += 1
        elif ch in b"]}":
            depth -= 1
        elif ch == 10 and per_line:
            depth = 0
        deepest = max(deepest, depth)
    return deepest


CASES = [
    b"",
    b'{"step": 1, "data": {"a": 1}}\n{"step": 2, "data": {"a": [1, [2]]}}\n',
    b'{"a": "[[[[[[[["}\n\n{}',
    b"}}}}{{{\n{",
    b"\n\n[[\n]]]]]][[[[[[[[[",
    b"[" * 150 + b"\n" + b"]" * 150,
]
rng = random.Random(7)
CASES += [bytes(rng.choice(b'[]{}\na" ') for _ in range(rng.randrange(1, 80))) for _ in range(200)]


@pytest.mark.parametrize("in_python", [0, 1 << 30], ids=["numpy", "python"])
@pytest.mark.parametrize("chunk", [1 << 24, 7, 2])
def test_depth_as_a_walk_counts_it(
    chunk: int, in_python: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "WALK_IN_PYTHON", in_python)
    for data in CASES:
        for per_line in (True, False):
            assert json_depth(data, per_line, chunk) == _walk(data, per_line), (data, per_line)


def test_deep_file_refused_read_in_pieces(tmp_path: Path) -> None:
    deep = tmp_path / "deep.jsonl"
    deep.write_bytes(b'{"step": 1}\n' * 1000 + b"[" * (MAX_JSON_DEPTH + 1) + b"\n")
    with pytest.raises(InputError, match=f"nested {MAX_JSON_DEPTH + 1} levels"):
        _check_depth(deep, per_line=True, chunk=64)
    ok = tmp_path / "ok.jsonl"
    ok.write_bytes(b'{"step": 1, "data": {"a": 1}}\n' * 1000)
    _check_depth(ok, per_line=True, chunk=64)
