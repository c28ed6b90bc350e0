"""The JSON depth guard (ingest/depth.py) counts as a byte-by-byte walk does, in any pieces."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from advisor.ingest import MAX_JSON_DEPTH, _check_depth, depth, json_depth, jsonfiles, load_run
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
    monkeypatch.setattr(depth, "WALK_IN_PYTHON", in_python)
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


def _walks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Records each depth walk made while reading: (the depth found, the bytes walked)."""
    walks: list[tuple[int, int]] = []
    real = depth._depth_of

    def spy(blocks: Any, per_line: bool) -> int:
        pieces = [bytes(b) for b in blocks]
        walks.append((real(pieces, per_line), sum(map(len, pieces))))
        return walks[-1][0]

    monkeypatch.setattr(depth, "_depth_of", spy)
    return walks


def _deep_lines(depth: int, late: bool) -> bytes:
    deep = b'{"step": 1, "x": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}\n"
    rows = b"".join(b'{"step": %d, "r": 1.0}\n' % s for s in range(2, 302))
    return rows + deep if late else deep + rows


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "pieces"])
@pytest.mark.parametrize("late", [False, True], ids=["first-line", "after-inference"])
@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1500, 50_000])
def test_a_deep_jsonl_file_is_refused_with_its_depth(
    depth: int, late: bool, stream: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # among the records polars infers its schema from, the walk refuses it before polars
    # reads it; after them polars reads it (within its own bound, 1,024 levels) and its
    # schema is that deep, or refuses it (past the bound) and the walk runs before the
    # Python parser would
    path = tmp_path / "deep.jsonl"
    path.write_bytes(_deep_lines(depth, late))
    if stream:
        monkeypatch.setattr(jsonfiles, "STREAM_ABOVE", 0)
        monkeypatch.setattr(jsonfiles, "CHUNK", 4096)
    with pytest.raises(InputError, match=f"nested {depth} levels deep"):
        load_run(path)


def test_a_jsonl_file_polars_reads_is_walked_only_where_polars_infers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks = _walks(monkeypatch)
    path = tmp_path / "m.jsonl"
    rows = [{"step": s, "data": {"a": s / 10, "b": [[1, 2], [3]]}} for s in range(1, 300)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    head = sum(len(json.dumps(r)) + 1 for r in rows[:100])
    assert load_run(path).frame.height == 299
    assert walks == [(4, head)]  # the 100 records polars infers its schema from, no more
    # a NaN token: polars refuses the file, the walk runs before Python parses its lines
    path.write_text(path.read_text().replace('"a": 0.1,', '"a": NaN,'), encoding="utf-8")
    walks.clear()
    assert load_run(path).frame.height == 299
    assert walks[-1] == (4, path.stat().st_size)


def test_objects_nested_deep_among_the_first_records_are_refused_at_once(
    tmp_path: Path,
) -> None:
    # polars' schema inference takes minutes over objects nested 400 levels deep
    import time

    path = tmp_path / "m.jsonl"
    deep = '{"a":' * 400 + "1" + "}" * 400
    good = "".join(f'{{"step": {s}, "r": 1.0}}\n' for s in range(2, 40))
    path.write_text('{"step": 1, "x": ' + deep + "}\n" + good)
    start = time.monotonic()
    with pytest.raises(InputError, match="nested 401 levels deep"):
        load_run(path)
    assert time.monotonic() - start < 5


def test_brackets_inside_strings_do_not_refuse_a_jsonl_file(tmp_path: Path) -> None:
    # the depth is that of the values polars read, not a count of the text's brackets
    path = tmp_path / "m.jsonl"
    rows = [{"step": s, "r": 0.5, "note": "[" * 300} for s in range(1, 50)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert load_run(path).frame["r"].to_list() == [0.5] * 49
