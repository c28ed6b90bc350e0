"""The fast paths of the readers give what the plain reading gives.

The verl console reader reads the rows that repeat a key sequence as blocks and the others
through a general scatter, maps the file and decodes it in chunks. Each is checked here against
an independent reading of the same values (the flat JSONL reader, or the same log read with the
fast path switched off: `payloads._ROUNDS = 0` sends every row through the scatter).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.ingest import console, lines, load_run
from advisor.ingest import payloads as payload_reader

KEYS = [
    "critic/score/mean", "actor/entropy", "actor/grad_norm", "response_length/mean",
    "actor/kl_loss", "timing_s/step", "perf/extra/mean",
]  # fmt: skip
VAL = "val-core/gsm8k/reward/mean@1"
PREFIXES = ["", "(TaskRunner pid=7) ", "\x1b[36m(TaskRunner pid=7)\x1b[0m ", "[2025-01-01] "]


def _rows(seed: int, steps: int) -> list[dict[str, float]]:
    """Steps with the usual keys; every 5th adds a validation key in the middle, step 3 lacks
    two keys, step 4 prints them in another order."""
    rng = random.Random(seed)
    rows = []
    for step in range(1, steps + 1):
        keys = list(KEYS)
        if step % 5 == 0:
            keys.insert(2, VAL)
        if step == 3:
            keys = keys[:-2]
        if step == 4:
            keys = keys[::-1]
        rows.append(
            {k: rng.choice([rng.random(), -rng.random() * 1e-6, 1e5 * rng.random()]) for k in keys}
        )
    return rows


def _write_pair(tmp: Path, rows: list[dict[str, float]], seed: int) -> tuple[Path, Path]:
    """The same values as a verl console log (mixed prefixes, other output, np.float64 here
    and there) and as flat JSONL."""
    rng = random.Random(seed)
    log, flat = tmp / "run.log", tmp / "flat.jsonl"
    with log.open("w") as fh:
        for step, row in enumerate(rows, start=1):
            pairs = []
            for k, v in row.items():
                text = repr(v) if rng.random() > 0.1 else f"np.float64({v!r})"
                pairs.append(f"{k}:{text}")
            fh.write(f"{rng.choice(PREFIXES)}step:{step} - {' - '.join(pairs)}\n")
            if rng.random() < 0.2:
                fh.write("(WorkerDict pid=9) some other output step: not a metric line\n")
    with flat.open("w") as fh:
        for step, row in enumerate(rows, start=1):
            fh.write(json.dumps({"step": step, **row}) + "\n")
    return log, flat


def _same_values(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert a["step"].to_list() == b["step"].to_list()
    assert set(a.columns) == set(b.columns)
    for col in a.columns:
        for x, y in zip(a[col].to_list(), b[col].to_list(), strict=True):
            assert (x is None and y is None) or (
                x is not None and y is not None and (x == y or (math.isnan(x) and math.isnan(y)))
            ), (col, x, y)


@pytest.mark.parametrize("rounds", [3, 0])
def test_console_log_reads_as_its_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rounds: int
) -> None:
    monkeypatch.setattr(payload_reader, "_ROUNDS", rounds)  # 0: every row through the scatter
    log, flat = _write_pair(tmp_path, _rows(1, 60), 1)
    run, ref = load_run(log), load_run(flat)
    assert run.format == "verl-console" and run.steps == 60
    _same_values(run.frame, ref.frame)
    # the columns in the order the keys first appear in the file
    assert [c for c in run.frame.columns if c in KEYS] == KEYS


def test_block_and_general_reading_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows of the common key sequences read as blocks give what the general scatter gives
    when every row goes through it."""
    rows = _rows(2, 40)
    log, _ = _write_pair(tmp_path, rows, 2)
    st_ = console._State(source=str(log))
    for before, text, _last in console.iter_chunks(log, st_):
        console._scan_text(st_, before, text)
    block = payload_reader.payloads_to_frame(st_.verl_texts, st_.verl_offsets, st_.verl_rows, "x")
    monkeypatch.setattr(payload_reader, "_ROUNDS", 0)
    general = payload_reader.payloads_to_frame(st_.verl_texts, st_.verl_offsets, st_.verl_rows, "x")
    _same_values(block, general)
    assert block.columns == general.columns


@pytest.mark.parametrize("chunk", [61, 997])
def test_chunked_and_unmapped_reading_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Small chunks (lines longer than a chunk, cut everywhere) and the read() path for a file
    that cannot be mapped give the same run, the ending on a last line without newline included."""
    log, _ = _write_pair(tmp_path, _rows(3, 30), 3)
    with log.open("a") as fh:
        fh.write("step:31 - actor/entropy:0.5 - critic/score/mean:0.2 - actor/grad_norm:0.1\n")
        fh.write("Traceback (most recent call last):\ntorch.OutOfMemoryError: CUDA out of memory")
    whole = load_run(log)
    monkeypatch.setattr(lines, "_CHUNK", chunk)
    chunked = load_run(log)
    import mmap

    def refuse(*_a: Any, **_k: Any) -> Any:
        raise OSError("cannot map")

    monkeypatch.setattr(mmap, "mmap", refuse)
    unmapped = load_run(log)
    for other in (chunked, unmapped):
        _same_values(whole.frame, other.frame)
        assert other.ending == whole.ending and other.warnings == whole.warnings
    assert whole.steps == 31 and whole.ending is not None and whole.ending.kind == "oom"


def test_payload_view_gives_the_payload_strings() -> None:
    """`_State.verl_payloads` (what `watch` reads) is the payload text, by index and slice."""
    st_ = console._State(source="x")
    console._line(st_, 1, "(TaskRunner pid=1) step:1 - a:1 - b:2", False)
    console._line(st_, 2, "step:2 - a:3 - b:4 [repeated 2x across cluster]", False)
    assert len(st_.verl_payloads) == 2
    assert st_.verl_payloads[0] == "a:1 - b:2"
    assert st_.verl_payloads[:5] == ["a:1 - b:2", "a:3 - b:4"]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["a", "b", "c", " d", "e:x", ""]), min_size=0, max_size=5),
        min_size=1,
        max_size=8,
    ),
    st.lists(st.sampled_from(["1", "-2.5", "nan", "inf", "np.float64(3)", "x", " 4 ", ""])),
)
def test_any_payloads_agree_with_the_general_scatter(
    keys: list[list[str]], vals: list[str]
) -> None:
    """Whatever the key sequences (repeated, reordered, odd keys, junk values), the block-and-
    scatter reading equals the scatter of every row."""
    vals = vals or ["1"]
    payloads = [
        " - ".join(f"{k}:{vals[(i + j) % len(vals)]}" for j, k in enumerate(row))
        for i, row in enumerate(keys)
    ]
    steps = list(range(1, len(payloads) + 1))
    try:
        fast = payload_reader.payloads_to_frame(payloads, [0] * len(payloads), steps, "x")
    except Exception as err:  # no key at all: the same refusal either way
        assert "no 'key:value' metric" in str(err)
        return
    rounds = payload_reader._ROUNDS
    payload_reader._ROUNDS = 0  # (hypothesis runs many examples per test: no monkeypatch)
    try:
        general = payload_reader.payloads_to_frame(payloads, [0] * len(payloads), steps, "x")
    finally:
        payload_reader._ROUNDS = rounds
    _same_values(fast, general)
    assert fast.columns == general.columns


def test_jsonl_columns_keep_the_file_order(tmp_path: Path) -> None:
    keys = [f"metric_{i:03d}/{'xyz'[i % 3]}" for i in range(120)][::-1]
    path = tmp_path / "m.jsonl"
    path.write_text(
        "".join(json.dumps({"step": s, **{k: s * 0.5 for k in keys}}) + "\n" for s in range(1, 4))
    )
    run = load_run(path)
    assert [c for c in run.frame.columns if c.startswith("metric_")] == keys
