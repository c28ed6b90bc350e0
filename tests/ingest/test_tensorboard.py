"""TensorBoard event files, written here by a tiny protobuf encoder (the test's own writer)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from advisor.ingest import load_run
from advisor.types import InputError


def _varint(n: int) -> bytes:
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _field(num: int, wire: int, payload: bytes) -> bytes:
    key = _varint((num << 3) | wire)
    return key + (_varint(len(payload)) + payload if wire == 2 else payload)


def _scalar(tag: str, value: float, as_tensor: bool) -> bytes:
    if as_tensor:  # TF2 style: a DT_FLOAT scalar TensorProto with tensor_content
        tensor = _field(1, 0, _varint(1)) + _field(4, 2, struct.pack("<f", value))
        body = _field(1, 2, tag.encode()) + _field(8, 2, tensor)
    else:  # torch SummaryWriter.add_scalar: simple_value
        body = _field(1, 2, tag.encode()) + _field(2, 5, struct.pack("<f", value))
    return _field(1, 2, body)


def _event(step: int, values: list[tuple[str, float]], as_tensor: bool = False) -> bytes:
    summary = b"".join(_scalar(t, v, as_tensor) for t, v in values)
    ev = _field(1, 1, struct.pack("<d", 1.7e9)) + _field(2, 0, _varint(step))
    ev += _field(5, 2, summary)
    return struct.pack("<Q", len(ev)) + b"\0\0\0\0" + ev + b"\0\0\0\0"


def _write(path: Path, as_tensor: bool = False) -> None:
    version = _field(1, 1, struct.pack("<d", 1.7e9)) + _field(3, 2, b"brain.Event:2")
    data = struct.pack("<Q", len(version)) + b"\0" * 4 + version + b"\0" * 4
    for s in range(1, 5):
        vals = [("critic/rewards/mean", 0.1 * s), ("actor/entropy", 1.0 - 0.1 * (s - 1))]
        if s % 2 == 0:
            vals.append(("val-core/gsm8k/reward/mean@1", 0.2 * s))
        data += _event(s, vals, as_tensor)
    path.write_bytes(data)


@pytest.mark.parametrize("as_tensor", [False, True])
def test_event_file_scalars(tmp_path: Path, as_tensor: bool) -> None:
    p = tmp_path / "events.out.tfevents.1700000000.host"
    _write(p, as_tensor)
    for target in (p, tmp_path):
        run = load_run(target)
        assert run.format == "tensorboard"
        assert run.frame["step"].to_list() == [1, 2, 3, 4]
        assert run.frame["reward_mean"].to_list() == pytest.approx([0.1, 0.2, 0.3, 0.4])
        assert run.frame["entropy"].to_list() == pytest.approx([1.0, 0.9, 0.8, 0.7])
        assert run.frame["val_reward"].to_list() == pytest.approx([None, 0.4, None, 0.8])


def test_cut_event_file_keeps_complete_records(tmp_path: Path) -> None:
    p = tmp_path / "events.out.tfevents.1.host"
    _write(p)
    p.write_bytes(p.read_bytes()[:-10])
    run = load_run(p)
    assert run.steps == 3
    assert any("cut off" in w for w in run.warnings)


def test_event_file_without_scalars(tmp_path: Path) -> None:
    p = tmp_path / "events.out.tfevents.2.host"
    p.write_bytes(b"\x00" * 32)
    with pytest.raises(InputError, match=r"scalar summaries|event records"):
        load_run(p)
