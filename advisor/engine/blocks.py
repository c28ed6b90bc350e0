"""Folding steps into blocks (the first of Monitor's jobs)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from advisor.book.symptoms import Settings, SymptomRule, SymptomRulebook
from advisor.detectors import (
    COUNT,
    END,
    HI,
    LO,
    MEAN,
    RECORD_WIDTH,
    SD,
    START,
    WANDER_BLOCKS,
    Baseline,
    Series,
    median,
    percentile,
    robust_scale,
    span_sd,
)
from advisor.engine.plans import _layout
from advisor.engine.records import (
    ACC_BAD,
    ACC_N,
    _add_wander,
    _Ahead,
    _new_acc,
    _record,
    _slide,
    _Track,
)


class _BlockFolding:
    """Folding steps into blocks (the first of Monitor's jobs): each tracked metric's open-block
    accumulators, its bounded window of block records, its run-wide references (peaks,
    trough, first block, long-run wander) and its warm-up baseline; the window as the Series
    a detector reads."""

    # set by Monitor.__init__: the job as the rules see it
    rules: SymptomRulebook
    hp: dict[str, Any]
    algorithm: str | None
    eval_steps: int
    warmup_steps: int
    block_steps: int
    _st: Settings
    _notes: dict[str, str]  # the assumptions said, by key (in the order first said)
    _pred: dict[str, bool]  # the job's facts (_predicates)
    _rules: list[SymptomRule]  # resolved for the job (_RuleEvaluation._compile)
    _by_id: dict[str, SymptomRule]

    # what this job keeps
    _tracks: dict[str, _Track]  # per metric the rules read
    _at_peak: list[tuple[str, str]]  # (companion, metric): level kept at the companion's best
    _first: int | None  # the first step pushed
    _last: int | None  # the latest step pushed
    _block: int  # the open block's index (-1: none yet)
    _block_first: int | None  # the open block's first step
    _warm_done: bool
    _closed_blocks: int
    _logged_end: int | None  # end of the latest block any metric was logged in
    # push_columns' block records per metric while it closes blocks: (rows, the record count
    # before the first row, the metric's peak before the new rows, the first new row, its best
    # 3-block mean before them and the means of its last counted blocks then), read by the
    # detectors' screens (_RuleEvaluation._quiet)
    _columns: dict[str, tuple[np.ndarray, int, float | None, int, float | None, tuple[float, ...]]]
    _ahead: _Ahead | None  # the blocks those records close (None: no screens)
    _calls: int  # push_columns calls that closed blocks with screens
    _epoch: int  # baselines set so far: screens made before a new one are stale

    def _init_blocks(self) -> None:
        st = self._st
        metrics, self._at_peak, wanders = _layout(self._rules)
        stores = {m: np.empty((2 * st.window_blocks, RECORD_WIDTH)) for m in metrics}
        self._tracks = {
            m: _Track(buf=store[: st.window_blocks], store=store, wanders=m in wanders)
            for m, store in stores.items()
        }
        self._first = self._last = None
        self._block, self._block_first = -1, None
        self._warm_done = False
        self._closed_blocks = 0
        self._logged_end = None
        self._columns = {}
        self._ahead = None
        self._calls = self._epoch = 0

    @property
    def tracked(self) -> list[str]:
        """The canonical metrics the rules read (others pushed are ignored)."""
        return sorted(self._tracks)

    def _start(self, step: int) -> int:
        """The first step pushed (returned). A log that begins past 50 steps and two logging
        intervals is a resumed run's (or a cut-out part): what it shows first is not where the
        run began."""
        self._first = step
        every = self.hp.get("logging_steps")
        every = every if isinstance(every, int | float) and every > 0 else 1
        self._pred["late_start"] = step > max(50, 2 * every)
        return step

    def _block_of(self, step: int) -> int:
        assert self._first is not None
        return (step - self._first) // self.block_steps

    def _forward(self, steps: Sequence[int | None]) -> tuple[list[int], list[int]]:
        """The rows push would take (row index, step): a step, and above every step before."""
        last = self._last
        if len(steps) and None not in steps:  # at once: a step above the running maximum before it
            at = np.asarray(steps, dtype=np.int64)
            keep = np.empty(len(at), dtype=bool)
            keep[0] = last is None or at[0] > last
            before = np.maximum.accumulate(at)[:-1]
            keep[1:] = at[1:] > (before if last is None else np.maximum(before, last))
            return np.flatnonzero(keep).tolist(), at[keep].tolist()
        rows: list[int] = []
        kept: list[int] = []
        for i, step in enumerate(steps):
            if step is None:
                continue
            s = int(step)
            if last is None or s > last:
                rows.append(i)
                kept.append(s)
                last = s
        return rows, kept

    def _fold_block(self, trends: bool = True) -> tuple[int, bool]:
        """Close the open block: its records into the windows, the run-wide references and
        the warm-up; (its last step, whether the rules judge trends at it)."""
        start, end, first = self._block_first, self._last, self._first
        assert start is not None and end is not None and first is not None
        new_peak3: set[int] = set()
        logged = False
        for t in self._tracks.values():
            row: Sequence[float] | None = t.ready  # the record push_columns made at once
            if row is None:
                acc = t.acc
                if acc[ACC_N] == 0 and acc[ACC_BAD] == 0:
                    continue  # not logged in this block (_record's None)
                row = _record(acc, start, end)
                assert row is not None
                t.acc = _new_acc()
            else:
                t.ready = None
            n, mean, lo, hi, sd = row[COUNT], row[MEAN], row[LO], row[HI], row[SD]
            t.seen = True
            if t.nb < len(t.buf):
                t.buf[t.nb] = row
                t.nb += 1
            else:  # bounded: drop the oldest block
                _slide(t, row)
            t.total += 1
            t.version += 1
            if t.wanders and t.total % WANDER_BLOCKS == 0:
                _add_wander(t, t.total, t.buf[max(0, t.nb - WANDER_BLOCKS) : t.nb])
            logged = True
            if n:
                if not math.isfinite(t.first[0]):
                    t.first = (mean, lo, hi, sd)
                if t.peak is None or mean > t.peak:
                    t.peak, t.peak_step = mean, end
                t.last3 = [*t.last3[-2:], (mean, end, start)]
                if len(t.last3) == 3:
                    m3 = (t.last3[0][0] + t.last3[1][0] + t.last3[2][0]) / 3.0
                    if t.peak3 is None or m3 > t.peak3:
                        t.peak3, t.peak3_step = m3, t.last3[1][1]
                        new_peak3.add(id(t))
                if t.trough is None or mean < t.trough:
                    t.trough, t.trough_step = mean, end
                if not self._warm_done or t.baseline is None:
                    t.warm.append((mean, sd, t.nb))
        if new_peak3:
            self._keep_at_peak(new_peak3)
        if logged:
            self._logged_end = end
        self._closed_blocks += 1
        in_warmup = not self._warm_done
        if in_warmup and end - first + 1 >= self.warmup_steps:
            if self._closed_blocks >= self._st.warmup_blocks:
                self._warm_done = True
            elif "warmup" not in self._notes:
                # Sparse logging (TRL logs every 10 steps by default): a baseline needs a few
                # points, so the warm-up runs on until it has `warmup_blocks` of them.
                self._notes["warmup"] = (
                    f"sparse logging: the warm-up was extended past {self.warmup_steps} steps "
                    f"to collect {self._st.warmup_blocks} logged blocks for the baseline."
                )
            if self._warm_done and end - first + 1 > self.warmup_steps:
                self.warmup_steps = end - first + 1
        if self._warm_done:
            for name, t in self._tracks.items():
                if t.baseline is None and len(t.warm) >= 3 - in_warmup:
                    t.baseline = self._baseline(t, end, name)
                    t.version += 1
                    self._epoch += 1
        return end, self._warm_done and not in_warmup and trends

    def _keep_at_peak(self, new_peak3: set[int]) -> None:
        """At a companion's new best 3-block mean, keep each paired metric's mean level over the
        steps of those 3 blocks: the level to compare with once the best has left the window."""
        for comp, name in self._at_peak:
            c, t = self._tracks.get(comp), self._tracks.get(name)
            if c is None or t is None or id(c) not in new_peak3 or not t.nb:
                continue
            rows = t.buf[: t.nb]
            inside = (rows[:, START] >= c.last3[0][2]) & np.isfinite(rows[:, MEAN])
            c.peak3_ctx[name] = float(np.mean(rows[inside, MEAN])) if inside.any() else math.nan

    def _foldable(self) -> np.ndarray:
        """The blocks push_columns closes that _fold_span may fold: no metric without a
        baseline is logged in them (its warm-up would grow), and every block mean in them is
        finite (the running peaks, troughs and 3-block means are then plain maxima)."""
        ah = self._ahead
        assert ah is not None
        if ah.foldable is not None and ah.foldable[0] == self._epoch:
            return ah.foldable[1]
        ok = np.ones(ah.n, dtype=bool)
        for name, i in ah.rows.items():
            rows, _, _, new, *_ = self._columns[name]
            logged = i > np.r_[new - 1, i[:-1]]
            if self._tracks[name].baseline is None:
                ok &= ~logged
            else:
                r = rows[np.maximum(i, 0)]
                ok &= ~(logged & (r[:, COUNT] != 0) & ~np.isfinite(r[:, MEAN]))
        ah.foldable = (self._epoch, ok)
        return ok

    def _fold_span(self, k: int, stop: int) -> None:
        """_fold_block of push_columns' blocks k .. stop - 1, at once: each track's window,
        counts, wander chunks, run-wide peaks, trough, first block and best 3-block mean (with
        its companions' levels) as closing each in turn leaves them. Only where _foldable:
        past the warm-up, no baseline set, finite means."""
        ah = self._ahead
        assert ah is not None and self._warm_done
        width = len(next(iter(self._tracks.values())).buf)
        events: dict[str, tuple[int, int]] = {}  # companion -> (block, start) of its best
        for name, i in ah.rows.items():
            t = self._tracks[name]
            t.ready = None
            rows, offset, _, new, *_ = self._columns[name]
            before, last = (int(i[k - 1]) if k else new - 1), int(i[stop - 1])
            if last == before:
                continue  # not logged in these blocks
            t.seen = True
            lo = max(0, last + 1 - width)
            t.nb = last + 1 - lo
            t.buf[: t.nb] = rows[lo : last + 1]
            total, t.total = t.total, offset + last + 1
            t.version += t.total - total
            first_chunk = total - total % WANDER_BLOCKS + WANDER_BLOCKS
            for chunk in range(first_chunk, t.total + 1, WANDER_BLOCKS) if t.wanders else ():
                h = chunk - offset  # the chunk's last row + 1: the window's latest rows then
                _add_wander(t, chunk, rows[h - min(WANDER_BLOCKS, width, h) : h])
            fresh = rows[before + 1 : last + 1]
            counted = np.flatnonzero(fresh[:, COUNT] != 0)
            if not len(counted):
                continue
            got = fresh[counted]
            means = got[:, MEAN]
            if not math.isfinite(t.first[0]):
                t.first = (
                    float(means[0]), float(got[0, LO]), float(got[0, HI]), float(got[0, SD])
                )
            top, low = int(np.argmax(means)), int(np.argmin(means))
            if t.peak is None or means[top] > t.peak:
                t.peak, t.peak_step = float(means[top]), int(got[top, END])
            if t.trough is None or means[low] < t.trough:
                t.trough, t.trough_step = float(means[low]), int(got[low, END])
            triple = [*t.last3, *zip(means.tolist(), got[:, END].astype(int).tolist(),
                                     got[:, START].astype(int).tolist(), strict=True)]  # fmt: skip
            q = np.arange(max(2, len(t.last3)), len(triple))
            if len(q):
                x = np.array([m for m, _, _ in triple])
                m3 = (x[q - 2] + x[q - 1] + x[q]) / 3.0
                best = int(np.argmax(m3))
                if t.peak3 is None or m3[best] > t.peak3:
                    at = int(q[best])
                    t.peak3, t.peak3_step = float(m3[best]), triple[at - 1][1]
                    # the block of that triple's last record, and the triple's first step
                    row = before + 1 + int(counted[at - len(t.last3)])
                    events[name] = (int(np.searchsorted(i, row)), triple[at - 2][2])
            t.last3 = triple[-3:]
        for comp, name in self._at_peak:
            if comp not in events:
                continue
            block, first = events[comp]
            c, t = self._tracks[comp], self._tracks[name]
            if name in ah.rows:
                r = int(ah.rows[name][block])
                window = self._columns[name][0][max(0, r + 1 - width) : r + 1]
            else:
                window = t.buf[: t.nb]
            if not len(window):
                continue
            inside = (window[:, START] >= first) & np.isfinite(window[:, MEAN])
            c.peak3_ctx[name] = float(np.mean(window[inside, MEAN])) if inside.any() else math.nan
        end = ah.logged_end[stop - 1]
        if not math.isnan(end):
            self._logged_end = int(end)
        self._closed_blocks += stop - k

    def _baseline(self, t: _Track, end: int, name: str = "") -> Baseline:
        arr = np.asarray(t.warm, dtype=float)
        x = arr[:, 0]
        med = float(median(x))
        st = self._st
        floor = max(st.rel_scale_floor * abs(med), st.abs_scale_floor)
        scale = robust_scale(x, floor)
        if name in st.early_break:
            med, scale = self._early_break(name, arr, med, scale, floor)
        start = float(median(x[:2]))
        # Residual sd over spans of SPAN blocks, from the warm-up blocks still in the window.
        blocks = t.buf[: int(arr[-1, 2])]
        spans = span_sd(blocks)
        ok = np.isfinite(spans)
        # The lower quartile, not the median: an oscillation that starts inside the warm-up must
        # not set its own yardstick (the early spans are still clean).
        sd = percentile(spans[ok], 25) if ok.any() else floor
        within = arr[:, 1][np.isfinite(arr[:, 1])]
        step_sd = float(median(within)) if len(within) else math.nan
        t.warm = []
        return Baseline(
            med, scale, start, max(sd, floor), len(x), end, first=float(x[0]), step_sd=step_sd
        )

    def _early_break(
        self, name: str, arr: np.ndarray, med: float, scale: float, floor: float
    ) -> tuple[float, float]:
        """The warm-up's level and noise, or those before it when it broke away inside the
        warm-up (an entropy blow-up at step 20 of a 30-step warm-up: the jump would inflate
        the noise too): far in the noise before AND by a ratio, so a warm-up that merely learns
        fast or eases keeps its own."""
        st = self._st
        arr = arr[np.isfinite(arr[:, 0])]
        x, within = arr[:, 0], arr[:, 1]
        for k in range(2, len(x) - 1):  # the earliest break with 2 blocks before and after
            a, b = float(median(x[:k])), float(median(x[k:]))
            # the noise of the blocks before: of their means from three on; with two, the
            # spread of their single steps (wider than a block mean's: harder to pass)
            if k >= 3:
                noise = robust_scale(x[:k], floor)
            else:
                steps = within[:k][np.isfinite(within[:k])]  # sparse logs: no spread (nan)
                noise = max(float(steps.max()), floor) if len(steps) else math.inf
            far = abs(b - a) > st.early_break_z * noise
            apart = a > 0 and b > 0 and max(a / b, b / a) >= st.early_break_ratio
            way = st.early_break[name]
            if far and apart and (way == "both" or (way == "up") == (b > a)):
                break
        else:
            return med, scale
        self._notes[f"early_break:{name}"] = (
            f"{name} moved from {a:.3g} to {b:.3g} inside the warm-up: its baseline is the "
            f"warm-up's first {k} blocks (a symptom that starts in the warm-up is judged "
            "against the run before it)."
        )
        return a, noise

    def _series(self, name: str, cache: dict[str, Series | None]) -> Series | None:
        if name in cache:
            return cache[name]
        t = self._tracks[name]
        s = None
        if t.nb:
            arr = t.buf[: t.nb]
            s = Series(
                metric=name,
                raw=arr,
                baseline=t.baseline,
                peak=t.peak,
                peak_step=t.peak_step,
                peak3=t.peak3,
                peak3_step=t.peak3_step,
                peak3_ctx=dict(t.peak3_ctx),
                trough=t.trough,
                trough_step=t.trough_step,
                blocks_total=t.total,
                wander=tuple(t.wander),
                span_wander=tuple(t.span_wander),
                first=t.first[0],
                first_range=(t.first[1], t.first[2]),
                run_end=self._logged_end,
            )
        cache[name] = s
        return s
