"""TensorBoard event files: scalar tag = metric key, with its step.

Scalars are decoded here directly from the TFRecord framing and the few protobuf fields they use
(Event.step, Event.summary, Summary.Value.tag, simple_value, a scalar TensorProto), so reading a
run needs no TensorBoard or TensorFlow install. Anything else in the file (graphs, images,
histograms, text) is skipped.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from advisor import lazy
from advisor.ingest.frame import build_run
from advisor.types import InputError, Run

# TensorFlow DataType codes of the scalar tensors a summary writer emits
_DT_FLOAT, _DT_DOUBLE, _DT_INT32, _DT_INT64, _DT_HALF = 1, 2, 3, 9, 19


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of one protobuf message; unknown fields are skipped."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield field, wire, value
        elif wire == 1:
            yield field, wire, buf[pos : pos + 8]
            pos += 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            yield field, wire, buf[pos : pos + n]
            pos += n
        elif wire == 5:
            yield field, wire, buf[pos : pos + 4]
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise ValueError("truncated field")


def _tensor_scalar(buf: bytes) -> float | None:
    dtype, content, values = 0, b"", []
    for field, wire, v in _fields(buf):
        if field == 1 and wire == 0:
            dtype = int(v)  # type: ignore[arg-type]
        elif field == 4 and wire == 2:
            content = bytes(v)  # type: ignore[arg-type]
        elif field == 5:  # float_val (packed or not)
            raw = bytes(v)  # type: ignore[arg-type]
            values += list(struct.unpack(f"<{len(raw) // 4}f", raw))
        elif field == 6:  # double_val
            raw = bytes(v)  # type: ignore[arg-type]
            values += list(struct.unpack(f"<{len(raw) // 8}d", raw))
        elif field in (7, 10) and wire == 0:  # int_val, int64_val (not packed)
            values.append(float(v))  # type: ignore[arg-type]
    if values:
        return float(values[0])
    fmt = {_DT_FLOAT: "<f", _DT_DOUBLE: "<d", _DT_INT32: "<i", _DT_INT64: "<q", _DT_HALF: "<e"}
    if dtype in fmt and len(content) >= struct.calcsize(fmt[dtype]):
        return float(struct.unpack_from(fmt[dtype], content)[0])
    return None


def _summary_values(buf: bytes) -> Iterator[tuple[str, float]]:
    for field, wire, value in _fields(buf):
        if field != 1 or wire != 2:
            continue
        tag, x = "", None
        for f, w, v in _fields(bytes(value)):  # type: ignore[arg-type]
            if f == 1 and w == 2:
                tag = bytes(v).decode("utf-8", errors="replace")  # type: ignore[arg-type]
            elif f == 2 and w == 5:
                x = struct.unpack("<f", bytes(v))[0]  # type: ignore[arg-type]
            elif f == 8 and w == 2:
                x = _tensor_scalar(bytes(v))  # type: ignore[arg-type]
        if tag and x is not None:
            yield tag, float(x)


def read_events(path: Path) -> tuple[list[tuple[int, str, float]], bool]:
    """Scalars of one event file, and whether its last record was cut off."""
    data = path.read_bytes()
    out: list[tuple[int, str, float]] = []
    pos = 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        start, end = pos + 12, pos + 12 + length
        if end + 4 > len(data):
            return out, True
        step, summary = 0, None
        for field, wire, value in _fields(data[start:end]):
            if field == 2 and wire == 0:
                step = int(value)  # type: ignore[arg-type]
            elif field == 5 and wire == 2:
                summary = bytes(value)  # type: ignore[arg-type]
        if summary is not None:
            out.extend((step, tag, x) for tag, x in _summary_values(summary))
        pos = end + 4
    return out, pos != len(data)


def read_tensorboard(files: list[Path], source: str) -> Run:
    pl = lazy.polars

    rows: list[tuple[int, str, float]] = []
    warnings: list[str] = []
    for f in files:
        try:
            got, cut = read_events(f)
        except (ValueError, struct.error) as err:
            raise InputError(f"{f}: expected TensorBoard event records ({err})") from None
        if cut:
            warnings.append(f"{f}: the last event record is cut off; read the ones before it")
        rows += got
    if not rows:
        raise InputError(f"{source}: expected scalar summaries in the event files, found none")
    long = pl.DataFrame(rows, schema={"step": pl.Int64, "key": pl.String, "value": pl.Float64},
                        orient="row")  # fmt: skip
    wide = long.pivot(on="key", index="step", values="value", aggregate_function="last")
    return build_run(wide.sort("step"), source=source, fmt="tensorboard", warnings=warnings)
