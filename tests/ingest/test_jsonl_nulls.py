"""A JSONL file that writes explicit nulls (`"key": null`, as polars and pandas write a missing
value) is read once; every key is kept all the same, a key that only ever holds null and first
appears after the schema-inference rows included."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from advisor.ingest import jsonfiles, load_run


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _reads(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[str]]:
    """(how many times polars read the file, the run's columns)."""
    calls: list[dict[str, Any]] = []
    real = pl.read_ndjson

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(pl, "read_ndjson", spy)
    run = load_run(path)
    monkeypatch.undo()
    return len(calls), run.frame.columns


def _verl(step: int, **data: Any) -> dict[str, Any]:
    return {"step": step, "data": {"critic/rewards/mean": step / 300, **data}}


def test_explicit_nulls_are_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [_verl(s, **{"val-core/x/reward/mean@1": 0.5 if s % 50 == 0 else None})
            for s in range(1, 301)]  # fmt: skip
    n, columns = _reads(_write(tmp_path / "nulls.jsonl", rows), monkeypatch)
    assert n == 1
    assert "val_reward" in columns


@pytest.mark.parametrize(
    "late",
    [
        {"late/only_null": None},  # a key seen only as null, after the inference rows
        {"late/value": 1.5},  # a key with values, after the inference rows
        {'late "quoted"': None},  # ... whose name json.dumps writes with escaped quotes
        {"late\\slash": None},
        {"late, x": None},  # a name that ends with a known one (x)
    ],
)
def test_a_key_first_seen_late_is_kept(
    late: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [_verl(s, **({"x": None} if s % 2 else {}), **(late if s > 250 else {}))
            for s in range(1, 301)]  # fmt: skip
    n, columns = _reads(_write(tmp_path / "late.jsonl", rows), monkeypatch)
    assert n == 2  # the second read infers from every line
    assert next(iter(late)) in columns


@pytest.mark.parametrize(
    "text",
    [
        'a\\":null',  # an escaped quote and `:null` inside a string value
        "x:null",  # `:null` inside a string
        "x: nullish",
    ],
)
def test_null_tokens_inside_strings_do_not_fool_the_count(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "strings.jsonl"
    rows = [_verl(s, note=text, **({"late/value": 1.5} if s > 250 else {})) for s in range(1, 301)]
    path.write_text(
        "".join(json.dumps(r).replace(json.dumps(text), f'"{text}"') + "\n" for r in rows),
        encoding="utf-8",
    )
    n, columns = _reads(path, monkeypatch)
    assert "late/value" in columns
    assert n == 2


def _every_null(text: bytes, start: int, end: int) -> list[int]:
    found, at = [], text.find(b"null", start)
    while at >= 0 and at + 4 <= end:
        found.append(at)
        at = text.find(b"null", at + 1)
    return found


@pytest.mark.parametrize("block", [2, 6, 64, 1 << 18])
def test_null_words_finds_every_null_as_a_search_does(block: int) -> None:
    # at even and odd places, next to `ll`/`ul` look-alikes, across block edges, at the ends
    rng = random.Random(block)
    alphabet = [b"null", b"nul", b"ull", b"ll", b"ul", b"n", b"u", b"l", b":", b" ", b'"', b"x"]
    for _ in range(300):
        text = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
        array = np.frombuffer(text, dtype=np.uint8)
        start = rng.randrange(0, len(text) + 1)
        end = rng.randrange(start, len(text) + 1)
        got = jsonfiles._null_words(array, start, end, block).tolist()
        assert got == _every_null(text, start, end), (text, start, end)
