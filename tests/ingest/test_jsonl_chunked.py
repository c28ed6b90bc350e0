"""A large JSONL file is read in pieces (jsonfiles.STREAM_ABOVE); the pieces must make the run
the whole-file readers make, on every JSONL input here and on the awkward ones below, with the
pieces cut at every kind of place (tiny pieces)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from advisor.ingest import jsonfiles, load_run

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "ingest" / "fixtures"
FILES = sorted([*FIXTURES.glob("*.jsonl"), *(ROOT / "sample_metrics" / "corpus").glob("*/*.jsonl")])


def _verl(step: int, **extra: object) -> str:
    data = {"critic/rewards/mean": 0.1 + step / 100, "actor/entropy": 0.8, **extra}
    return json.dumps({"step": step, "data": data})


def _awkward(tmp: Path) -> dict[str, Path]:
    rows = [_verl(s) for s in range(1, 61)]
    cases = {
        "late-key": [
            *rows[:45],
            *(_verl(s, **{"val-core/x/reward/mean@1": 0.5}) for s in (46, 47)),
        ],
        "nan-token": [*rows[:30], rows[30].replace("0.8", "NaN"), *rows[31:]],
        "junk-line": [*rows[:20], "not json at all", *rows[20:40], "{oops", *rows[40:]],
        "cut-last": [*rows, rows[-1][:25]],
        "int-then-float": [
            json.dumps({"step": s, "loss": s if s < 30 else s + 0.5, "reward": 1})
            for s in range(1, 61)
        ],
        "flat-nested": [
            json.dumps({"step": s, "train": {"loss": 1.0 / s, "reward": s % 7}, "tags": [1]})
            for s in range(1, 61)
        ],
    }
    out = {}
    for name, lines in cases.items():
        path = tmp / f"{name}.jsonl"
        text = "\n".join(lines) + ("" if name == "cut-last" else "\n")
        path.write_text(text, encoding="utf-8")
        out[name] = path
    bom = tmp / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + ("\n".join(rows) + "\n").encode())
    out["bom"] = bom
    return out


def _same(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    whole = load_run(path)
    monkeypatch.setattr(jsonfiles, "STREAM_ABOVE", 0)
    monkeypatch.setattr(jsonfiles, "CHUNK", chunk)
    pieces = load_run(path)
    monkeypatch.undo()
    assert pieces.format == whole.format
    assert pieces.warnings == whole.warnings
    assert pieces.config_hints == whole.config_hints
    assert pieces.frame.columns == whole.frame.columns
    assert pieces.frame.equals(whole.frame, null_equal=True)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pieces_read_as_the_whole_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _same(path, monkeypatch, max(1000, path.stat().st_size // 7))


@pytest.mark.parametrize("chunk", [64, 333, 4096])
def test_awkward_files_in_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    for path in _awkward(tmp_path).values():
        _same(path, monkeypatch, chunk)


@pytest.mark.parametrize("chunk", [1, 2, 5, 64, 1 << 20])
def test_pieces_end_at_line_ends_and_count_the_lines_before(tmp_path: Path, chunk: int) -> None:
    rng = random.Random(chunk)
    for bom in (b"", b"\xef\xbb\xbf"):
        for _ in range(40):
            lines = [b"x" * rng.randrange(0, 30) for _ in range(rng.randrange(0, 12))]
            text = b"\n".join(lines) + rng.choice([b"", b"\n"])
            path = tmp_path / "t.jsonl"
            path.write_bytes(bom + text)
            pieces = list(jsonfiles._pieces(path, chunk))
            assert b"".join(p for _, p in pieces) == text
            assert all(p.endswith(b"\n") for _, p in pieces[:-1])
            assert all(p for _, p in pieces)
            assert all(len(p) >= chunk for _, p in pieces[:-1])  # no more pieces than needed
            assert [n for n, _ in pieces] == [
                sum(p.count(b"\n") for _, p in pieces[:i]) for i in range(len(pieces))
            ]
