"""The wander chunks push_columns computes at once (detectors.wander_chunks) equal those the
incremental fold computes one chunk at a time (detectors.wander_of), bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.detectors import (
    COUNT,
    MEAN,
    RECORD_WIDTH,
    START,
    SUM_T,
    SUM_TT,
    SUM_X,
    SUM_XT,
    SUM_XX,
    wander_chunks,
    wander_of,
)  # fmt: skip


def _chunks(rng: np.random.Generator, k: int, w: int, holes: float) -> np.ndarray:
    """k chunks of w block records: AR-like means with a trend, some blocks short or NaN."""
    out = np.zeros((k, w, RECORD_WIDTH))
    steps = 5
    for c in range(k):
        start = 1 + c * w * steps + np.arange(w) * steps
        level = rng.normal(0, 1) * 10.0 ** rng.integers(-4, 3)
        for b in range(w):
            n = int(rng.integers(1, steps + 1)) if rng.random() < 0.2 else steps
            x = level + 0.01 * b + rng.normal(0, abs(level) * 0.05 + 1e-9, n)
            t = np.arange(n, dtype=float)
            out[c, b, START] = start[b]
            out[c, b, COUNT] = n
            out[c, b, MEAN] = x.mean() if rng.random() >= holes else np.nan
            out[c, b, SUM_X], out[c, b, SUM_XX] = x.sum(), (x * x).sum()
            out[c, b, SUM_T], out[c, b, SUM_TT] = t.sum(), (t * t).sum()
            out[c, b, SUM_XT] = (x * t).sum()
    return out


@pytest.mark.parametrize("w", [8, 9, 12, 16])
@pytest.mark.parametrize("holes", [0.0, 0.05, 0.6])
def test_chunks_at_once_equal_one_by_one(w: int, holes: float) -> None:
    rng = np.random.default_rng(w * 100 + int(holes * 100))
    chunks = _chunks(rng, 300, w, holes)
    chunks[::7, :, MEAN] = 0.25  # constant means: the floor decides
    got = wander_chunks(chunks)
    want = [wander_of(c) for c in chunks]
    assert [repr(g) for g in got] == [repr(x) for x in want]
    assert any(g[0] is not None for g in got)
    if holes == 0.0 and w - 2 >= 8:
        assert all(g[0] is not None and g[1] is not None for g in got)
