"""verl step payloads read fast (advisor/ingest/payloads.py) against a plain reading.

The reference here parses each payload by itself, in Python: split at " - ", the key before the
first colon (stripped; no colon or an empty key is no pair), the value cast as polars casts a
string, else stripped and unwrapped from np.float64(...) / tensor(...); a key repeated in a row
keeps its last value; columns in the order the keys first appear. Mangled payloads (reordered and
missing keys, colons and " - " inside values, junk pieces) and mangled lines (Ray prefixes, ANSI
colours, Markdown, other output) must read exactly as the reference says.
"""

from __future__ import annotations

import math
import re
from itertools import pairwise
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.ingest import console, load_run
from advisor.ingest import payloads as reader
from advisor.types import InputError

_WRAPPED = re.compile(r"^(?:np\.\w+|tensor|torch\.tensor)\(\s*([^,)]*).*$")


def _cast(text: str) -> float | None:
    return pl.Series([text], dtype=pl.String).cast(pl.Float64, strict=False)[0]


def _value(raw: str) -> float | None:
    value = _cast(raw)
    if value is None:
        value = _cast(_WRAPPED.sub(r"\1", raw.strip()).strip())
    return value


def reference(payloads: list[str]) -> dict[str, list[float | None]]:
    """Column name -> values (None where the row lacks the key or it is no number)."""
    rows: list[dict[str, float | None]] = []
    for payload in payloads:
        row: dict[str, float | None] = {}
        for piece in payload.split(" - "):
            key, sep, raw = piece.partition(":")
            key = key.strip()
            if sep and key:
                row[key] = _value(raw)
        rows.append(row)
    names = list(dict.fromkeys(k for row in rows for k in row))
    return {k: [row.get(k) for row in rows] for k in names}


def _same(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return x is None and y is None
    return x == y or (math.isnan(x) and math.isnan(y))


def _check(payloads: list[str]) -> pl.DataFrame | None:
    """payloads_to_frame of these payloads equals the reference; the frame (None if refused)."""
    want = reference(payloads)
    steps = list(range(1, len(payloads) + 1))
    try:
        got = reader.payloads_to_frame(payloads, [0] * len(payloads), steps, "x")
    except InputError as err:
        assert not want and "no 'key:value' metric" in str(err)
        return None
    assert got.columns == ["step", *want]
    assert got["step"].to_list() == steps
    for name, values in want.items():
        col = got[name].to_list()
        assert all(_same(a, b) for a, b in zip(col, values, strict=True)), (name, col, values)
    return got


KEYS = ["a", "b", "c", "val-core/x/mean@1", " d", "d ", "e:x", "", "a b", "-", "a -"]
VALUES = [
    "1", "-2.5", "1e-05", "nan", "inf", "-inf", "np.float64(3)", "tensor(0.5, device='cuda:0')",
    "x", " 4 ", "", "1 - 2", "5:6", "-", " -", "- ", "7 -", "0.1234567890123456789",
]  # fmt: skip
JUNK = ["", "-", " -", "- ", ":", "::", "a", " - "]


@st.composite
def mangled_payloads(draw: st.DrawFn) -> list[str]:
    """Rows from a few key sequences (so that blocks form), values of every kind, now and then
    a junk piece, a dropped or a duplicated pair."""
    templates = draw(
        st.lists(st.lists(st.sampled_from(KEYS), min_size=1, max_size=6), min_size=1, max_size=3)
    )
    out = []
    for _ in range(draw(st.integers(1, 12))):
        keys = list(draw(st.sampled_from(templates)))
        pieces = [f"{k}:{draw(st.sampled_from(VALUES))}" for k in keys]
        change = draw(st.sampled_from(["none", "none", "junk", "drop", "dup"]))
        at = draw(st.integers(0, len(pieces)))
        if change == "junk":
            pieces.insert(at, draw(st.sampled_from(JUNK)))
        elif change == "drop" and len(pieces) > 1:
            pieces.pop(min(at, len(pieces) - 1))
        elif change == "dup":
            pieces.insert(at, f"{keys[0]}:{draw(st.sampled_from(VALUES))}")
        out.append(" - ".join(pieces))
    return out


@settings(max_examples=150, deadline=None)
@given(mangled_payloads())
def test_mangled_payloads_read_as_the_reference(payloads: list[str]) -> None:
    _check(payloads)


@settings(max_examples=40, deadline=None)
@given(mangled_payloads(), st.integers(2, 4))
def test_reading_in_parts_changes_nothing(payloads: list[str], parts: int) -> None:
    """A big log is read as consecutive parts on their own threads: the same frame."""
    saved = reader._PART_CHARS, reader._PARTS
    reader._PART_CHARS, reader._PARTS = 1, parts  # (many examples per test: no monkeypatch)
    try:
        _check(payloads)
    finally:
        reader._PART_CHARS, reader._PARTS = saved


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=30), st.integers(1, 9))
def test_parts_cover_every_row_once(texts: list[str], parts: int) -> None:
    saved = reader._PART_CHARS, reader._PARTS
    reader._PART_CHARS, reader._PARTS = 1, parts
    try:
        bounds = reader._parts(texts)
    finally:
        reader._PART_CHARS, reader._PARTS = saved
    assert bounds[0][0] == 0 and bounds[-1][1] == len(texts)
    assert all(a < b for a, b in bounds) and all(b == c for (_, b), (c, _) in pairwise(bounds))
    assert len(bounds) <= parts


def test_rows_with_other_keys_are_read_as_blocks_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three key sequences with the same pair count, interleaved (the first row has the rarest):
    every row is read in the block rounds, none through the scatter."""
    seqs = [["a", "b", "c"], ["a", "c", "b"], ["x", "y", "z"]]
    payloads = [
        " - ".join(f"{k}:{i}.{j}" for j, k in enumerate(seqs[0 if i == 0 else 1 + i % 2]))
        for i in range(30)
    ]

    def no_scatter(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a row went through the general scatter")

    monkeypatch.setattr(reader, "_general_part", no_scatter)
    got = _check(payloads)
    assert got is not None and got.columns == ["step", "a", "b", "c", "x", "y", "z"]


def test_more_pair_counts_than_a_round_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of many different lengths: what the rounds (the colon round, then `_ROUNDS` at
    " - ") leave goes through the scatter, same values; nan printed stays nan, a missing key
    is null."""
    monkeypatch.setattr(reader, "_LENGTHS", 2)
    scattered: list[int] = []
    general = reader._general_part

    def spy(kv: Any, lens: Any, starts: Any, rows: Any) -> Any:
        scattered.extend(rows.tolist())
        return general(kv, lens, starts, rows)

    monkeypatch.setattr(reader, "_general_part", spy)
    payloads = [
        " - ".join(f"k{j}:{'nan' if j == i else j}" for j in range(i + 1)) for i in range(9)
    ]
    got = _check(payloads)
    assert got is not None and len(scattered) == 9 - 2 * (reader._ROUNDS + 1)
    assert math.isnan(got["k0"][0]) and got["k1"][0] is None and got["k1"][2] == 1


def test_values_the_dash_split_cuts_elsewhere_are_not_read_at_colons(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows with a colon per pair are first read split at ":"; one whose value holds " - " or
    ends in " -" (the " - " split then cuts it elsewhere) must be read the other way."""
    rounds: list[list[int]] = []
    dash = reader._dash_rounds

    def spy(series: Any, text: Any) -> Any:
        rounds.append(list(range(series.len())))
        return dash(series, text)

    monkeypatch.setattr(reader, "_dash_rounds", spy)
    payloads = ["a:1 - b:2", "a:x - - b:3", "a:1 - 2 - b:3", "a:np.float64(4) - b:5", "a:6 - b:7"]
    got = _check(payloads)
    assert got is not None and got["a"].to_list() == [1, None, 1, 4, 6]
    assert [len(r) for r in rounds] == [2]  # only the two odd rows left the colon round


def test_wrapped_values_in_block_rows() -> None:
    payloads = [f"a:np.float64({i}.5) - b:tensor({i}, device='cuda:0') - c:{i}" for i in range(5)]
    got = _check(payloads)
    assert got is not None and got["a"].to_list() == [0.5, 1.5, 2.5, 3.5, 4.5]


PREFIXES = ["", "(TaskRunner pid=7) ", "\x1b[36m(TaskRunner pid=7)\x1b[0m ", "[2025-01-01] "]
LINE_KEYS = ["m/a", "m/b", "m/c", "m/d", "e:x", "m e"]


@st.composite
def mangled_log(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A log (lines with prefixes, colours inside the payload, Markdown backticks, Ray's dedup
    suffix, other output between) and the payloads it holds, as printed."""
    lines, payloads = [], []
    base = draw(st.lists(st.sampled_from(LINE_KEYS), min_size=1, max_size=5, unique=True))
    for step in range(1, draw(st.integers(2, 10)) + 1):
        keys = base if draw(st.booleans()) else draw(st.permutations(base))
        payload = " - ".join(f"{k}:{draw(st.sampled_from(VALUES[:10]))}" for k in keys)
        payload = payload.strip()
        payloads.append(payload)
        shown = payload
        if draw(st.booleans()):  # a colour code inside the payload is dropped
            cut = draw(st.integers(0, len(shown)))
            shown = shown[:cut] + "\x1b[32m" + shown[cut:] + "\x1b[0m"
        line = f"{draw(st.sampled_from(PREFIXES))}step:{step} - {shown}"
        wrap = draw(st.sampled_from(["", "`", "repeat"]))
        if wrap == "`":
            line = f"`{line}`"
        elif wrap == "repeat":
            line += " [repeated 2x across cluster]"
        lines.append(line)
        if draw(st.booleans()):
            lines.append("(WorkerDict pid=9) some other output, step: not a metric line")
    return "\n".join(lines) + "\n", payloads


@settings(max_examples=60, deadline=None)
@given(mangled_log())
def test_mangled_lines_read_as_the_reference(
    tmp_path_factory: pytest.TempPathFactory, log: tuple[str, list[str]]
) -> None:
    text, payloads = log
    path = tmp_path_factory.mktemp("log") / "run.log"
    path.write_text(text)
    want = reference(payloads)
    if not want:
        with pytest.raises(InputError):
            load_run(path)
        return
    frame = console.read_console(path, str(path)).frame
    assert frame["step"].to_list() == list(range(1, len(payloads) + 1))
    for name, values in want.items():
        col = frame[name].to_list()
        assert all(_same(a, b) for a, b in zip(col, values, strict=True)), (name, col, values)


@pytest.mark.parametrize("tail", ["", "\x1b]0;title\x1b\\"])
@pytest.mark.parametrize("at", [100, 117, 119, 121, 300])
def test_a_colour_code_anywhere_in_a_long_line_is_dropped(at: int, tail: str) -> None:
    """Codes are cleaned only up to the last one; one across the 120th character (where the
    reader used to stop looking) is dropped whole."""
    payload = " - ".join(f"m/key{i:03d}:{i}.5" for i in range(20))
    line = f"(TaskRunner pid=7) step:1 - {payload}"
    st_ = console._State(source="x")
    console._line(st_, 1, line[:at] + "\x1b[32m" + line[at:] + tail, False)
    assert st_.verl_payloads[0] == payload
