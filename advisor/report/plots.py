"""Small SVG charts of a finding's metrics: the curve, the warm-up shaded, the evidence window
marked, the onset (and the clearing) as dashed lines, non-finite points as crosses.

Written as SVG text (numpy places the points): a chart costs a few milliseconds, where importing
a plotting library costs more than reading the run (issue 18). The charts are
vectors (any viewer, browser or Markdown renderer scales them) and their bytes depend on the
data only, so a report's pictures are as reproducible as its text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor import i18n, lazy
from advisor.resources import write_text_atomic
from advisor.types import Diagnosis, Evidence, Finding

# html.escape's entities (quotes too: the text may land in an attribute), in one pass and
# without importing html and its entity table
_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def escape(text: str) -> str:
    """`text` as SVG character data or an attribute value."""
    return text.translate(_XML)


# The chart's layout in pixels (the size of the PNGs this replaces: 6 x 2 inches at 100 dpi).
WIDTH, HEIGHT = 600, 200
LEFT, RIGHT, TOP, BOTTOM = 52, 10, 24, 34
CURVE, ONSET, CLEARED, WARMUP = "#1f4e79", "#d62728", "#2ca02c", "#e0e0e0"
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
EXT = ".svg"


def plot_name(stem: str, finding_id: str, metric: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in metric)
    return f"{stem}-{finding_id}-{safe}{EXT}"


def draw(
    d: Diagnosis, out_dir: Path, stem: str = "report", charts: dict[str, str] | None = None
) -> dict[str, str]:
    """Draw one chart per (finding, evidence metric) with a series; return `ID:metric` -> file
    name relative to `out_dir` (the report sits beside its pictures). `charts`: file name ->
    SVG text instead of files in `out_dir` (the caller writes them with its other outputs)."""
    out: dict[str, str] = {}
    if charts is None:
        out_dir.mkdir(parents=True, exist_ok=True)
    # a rule seen in several episodes is drawn with its latest, whose evidence the report shows
    latest = {f.id: f for f in sorted(d.findings, key=lambda f: f.onset_step or 0)}
    for f in latest.values():
        for e in f.evidence:
            key = f"{f.id}:{e.metric}"
            if key in out or e.metric not in d.series:
                continue
            name = plot_name(stem, f.id, e.metric)
            if charts is None:
                write_text_atomic(out_dir / name, chart(d, f, e))
            else:
                charts[name] = chart(d, f, e)
            out[key] = name
    return out


def chart(d: Diagnosis, f: Finding, e: Evidence) -> str:
    """The SVG document of finding `f`'s evidence `e` over the run's series of its metric."""
    np = lazy.numpy
    steps, values = d.series[e.metric]
    xs = np.asarray(steps, dtype=float)
    ys = np.array(values, dtype=float)  # (a missing value, None, reads NaN)
    ok = np.isfinite(ys)
    lo, hi = e.window
    x0, x1 = _limits(xs if len(xs) else np.array([lo, hi], dtype=float))
    y0, y1 = _limits(ys[ok] if ok.any() else np.array([0.0, 1.0]))
    ax = _Axes(x0, x1, y0, y1)
    px, py = ax.px(xs), ax.py(np.where(ok, ys, y0))
    legend: list[tuple[str, str]] = []  # (swatch markup at the origin, label)
    body: list[str] = []
    if d.warmup_steps and steps:
        end = min(steps[0] + d.warmup_steps - 1, steps[-1])
        body.append(ax.band(steps[0], end, f'fill="{WARMUP}"'))
        legend.append((_box(f'fill="{WARMUP}"'), i18n.t("warm-up ({n} steps)", n=d.warmup_steps)))
    shade = f'fill="{ONSET}" fill-opacity="0.15"'
    body.append(ax.band(lo, hi, shade))
    legend.append((_box(shade), i18n.t("{id} window {lo}-{hi}", id=f.id, lo=lo, hi=hi)))
    body.extend(ax.curve(px, py, ok))
    dashed = 'stroke-width="1" stroke-dasharray="4 2"'
    if f.onset_step is not None:
        body.append(ax.vline(f.onset_step, f'stroke="{ONSET}" {dashed}'))
        legend.append(
            (_dash(f'stroke="{ONSET}" {dashed}'), i18n.t("onset {step}", step=f.onset_step))
        )
    if f.cleared_step is not None:
        body.append(ax.vline(f.cleared_step, f'stroke="{CLEARED}" {dashed}'))
        legend.append(
            (_dash(f'stroke="{CLEARED}" {dashed}'), i18n.t("cleared {step}", step=f.cleared_step))
        )
    # NaN / inf points (a None is a step without the metric): the curve has gaps there, so
    # they are marked along the bottom, one cross per pixel column
    logged = np.array([v is not None for v in values], dtype=bool)
    bad = logged & ~ok
    if bad.any():
        from advisor.detectors.series import distinct  # np.unique's, without numpy.ma

        body.append(ax.crosses(distinct(px[bad].astype(int)), ONSET))
        legend.append((_cross(7, -3, ONSET), "NaN/inf"))
    title = f"{f.id} {f.name}: {e.metric}"
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="{FONT}">',
            f"<title>{escape(title)}</title>",
            f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
            f'<defs><clipPath id="plot"><rect x="{LEFT}" y="{TOP}" width="{ax.w}" '
            f'height="{ax.h}"/></clipPath></defs>',
            '<g clip-path="url(#plot)">',
            *body,
            "</g>",
            ax.frame(),
            f'<text x="{LEFT}" y="{TOP - 8}" font-size="12">{escape(title)}</text>',
            f'<text x="{LEFT + ax.w / 2:.1f}" y="{HEIGHT - 4}" font-size="11" '
            f'text-anchor="middle">{escape(i18n.t("step"))}</text>',
            _legend(ax, legend, px[ok], py[ok]),
            "</svg>",
            "",
        ]
    )


def _limits(vs: Any) -> tuple[float, float]:
    """The data range with a 5 % margin each side; a constant series gets a range around it."""
    lo, hi = float(vs.min()), float(vs.max())
    if hi - lo <= 1e-12 * max(abs(lo), abs(hi), 1e-300):
        pad = abs(lo) * 0.05 if lo else 0.05
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def _ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Round tick values within [lo, hi]: steps of 1, 2, 2.5 or 5 times a power of ten."""
    raw = (hi - lo) / target
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    out = []
    k = first
    while k * step <= hi + step * 1e-9:
        out.append(k * step)
        k += 1
    return out


def _labels(ticks: Sequence[float]) -> list[str]:
    """Tick labels with as many decimals as their spacing needs (scientific when tiny/huge)."""
    if len(ticks) < 2:
        return [f"{t:g}" for t in ticks]
    step = abs(ticks[1] - ticks[0])
    top = max(abs(t) for t in ticks)
    if top >= 1e6 or top < 1e-3:
        digits = max(1, math.ceil(math.log10(top / step)) + 1) if top else 1
        return [f"{t:.{digits}g}" if abs(t) > step * 1e-6 else "0" for t in ticks]
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    if f"{step:.{decimals}f}" != f"{step:.{decimals + 1}f}".rstrip("0").rstrip("."):
        decimals += 1  # 2.5 x 10^k needs one more
    return [f"{t:.{decimals}f}" if abs(t) > step * 1e-6 else "0" for t in ticks]


class _Axes:
    """Data coordinates -> pixels, and the marks drawn in them."""

    def __init__(self, x0: float, x1: float, y0: float, y1: float) -> None:
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1
        self.w, self.h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(self, x: Any) -> Any:
        """Pixel column of step(s) `x` (a number or an array)."""
        return LEFT + (x - self.x0) / (self.x1 - self.x0) * self.w

    def py(self, y: Any) -> Any:
        return TOP + (self.y1 - y) / (self.y1 - self.y0) * self.h

    def band(self, a: float, b: float, style: str) -> str:
        xa, xb = self.px(a), self.px(b)
        width = max(xb - xa, 1.0)
        return f'<rect x="{xa:.1f}" y="{TOP}" width="{width:.1f}" height="{self.h}" {style}/>'

    def vline(self, x: float, style: str) -> str:
        xp = self.px(x)
        return f'<line x1="{xp:.1f}" y1="{TOP}" x2="{xp:.1f}" y2="{TOP + self.h}" {style}/>'

    def curve(self, px: Any, py: Any, ok: Any) -> list[str]:
        """The series as polylines, broken where a value is missing or not finite. A run of
        points denser than the pixels keeps each pixel column's first, lowest, highest and
        last point, so every spike and drop still shows."""
        np = lazy.numpy
        idx = np.flatnonzero(ok)
        if not len(idx):
            return []
        cuts = np.flatnonzero(np.diff(idx) > 1) + 1
        out: list[str] = []
        singles = []
        for run in np.split(idx, cuts):
            if len(run) == 1:
                singles.append(run[0])
                continue
            x, y = px[run], py[run]
            if len(run) > 2 * self.w:
                keep = _decimated(x, y)
                x, y = x[keep], y[keep]
            coords = " ".join(map("{:.1f},{:.1f}".format, x.tolist(), y.tolist()))
            out.append(
                f'<polyline points="{coords}" fill="none" stroke="{CURVE}" stroke-width="1" '
                'stroke-linejoin="round"/>'
            )
        if singles:  # isolated points, one dot per pixel
            dots = {(round(float(px[i]), 1), round(float(py[i]), 1)) for i in singles}
            out += [
                f'<circle cx="{a:.1f}" cy="{b:.1f}" r="1.5" fill="{CURVE}"/>'
                for a, b in sorted(dots)
            ]
        return out

    def crosses(self, columns: Any, color: str) -> str:
        y = TOP + self.h - 4
        return "".join(_cross(float(x), y, color) for x in columns)

    def frame(self) -> str:
        parts = [
            f'<rect x="{LEFT}" y="{TOP}" width="{self.w}" height="{self.h}" fill="none" '
            'stroke="black" stroke-width="0.8"/>'
        ]
        bottom = TOP + self.h
        xt = _ticks(self.x0, self.x1, 8)
        for t, label in zip(xt, _labels(xt), strict=True):
            x = f"{self.px(t):.1f}"
            parts.append(_tick((x, bottom, x, bottom + 4), (x, bottom + 14), "middle", label))
        yt = _ticks(self.y0, self.y1, 5)
        for t, label in zip(yt, _labels(yt), strict=True):
            y = self.py(t)
            at = (LEFT - 6, f"{y + 3:.1f}")
            parts.append(_tick((LEFT - 4, f"{y:.1f}", LEFT, f"{y:.1f}"), at, "end", label))
        return "\n".join(parts)


def _decimated(x: Any, y: Any) -> Any:
    """Indices to keep of points in step order: per whole pixel column its first, lowest,
    highest and last point."""
    from advisor.detectors.series import distinct  # np.unique's, without numpy.ma

    np = lazy.numpy
    col = x.astype(np.int64)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(col)) + 1))
    ends = np.concatenate((starts[1:], [len(x)])) - 1
    # sorted by column, then by height: each column's first entry is its extreme
    top = np.lexsort((y, col))[starts]
    low = np.lexsort((-y, col))[starts]
    return distinct(np.concatenate((starts, ends, top, low)))


def _tick(line: tuple[object, ...], at: tuple[object, object], anchor: str, label: str) -> str:
    """An axis tick: its mark from (x1, y1) to (x2, y2) and its label at `at`, coordinates
    already formatted as they print."""
    x1, y1, x2, y2 = line
    return (
        f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="black" stroke-width="0.8"/>'
        f'<text x="{at[0]}" y="{at[1]}" font-size="9" text-anchor="{anchor}">{label}</text>'
    )


def _box(style: str) -> str:
    return f'<rect x="0" y="-7" width="14" height="7" {style}/>'


def _dash(style: str) -> str:
    return f'<line x1="0" y1="-3.5" x2="14" y2="-3.5" {style}/>'


def _cross(x: float, y: float, color: str, r: float = 3.0) -> str:
    return (
        f'<path d="M{x - r:.1f},{y - r:.1f}L{x + r:.1f},{y + r:.1f}M{x - r:.1f},{y + r:.1f}'
        f'L{x + r:.1f},{y - r:.1f}" stroke="{color}" stroke-width="1"/>'
    )


def _ems(label: str) -> float:
    """A label's width in Latin characters: a wide (CJK) one is nearly two."""
    return len(label) + 0.9 * sum(1 for ch in label if ord(ch) >= 0x2E80)


def _legend(ax: _Axes, entries: list[tuple[str, str]], px: Any, py: Any) -> str:
    """The legend where the curve crosses it least: a corner or the middle of the top or bottom
    (`px`, `py`: the finite points in pixels)."""
    line, width = 12, 20 + 5.2 * max(_ems(label) for _, label in entries)
    height = line * len(entries) + 4
    xs = (LEFT + ax.w - width - 4, LEFT + 4, LEFT + (ax.w - width) / 2)
    ys = (TOP + 4, TOP + ax.h - height - 4)
    # ties go to the top right, then top left, top centre, then the same along the bottom
    order = [(x, y) for y in ys for x in xs]

    def crossed(corner: tuple[float, float]) -> int:
        cx, cy = corner
        inside = (px >= cx) & (px <= cx + width) & (py >= cy) & (py <= cy + height)
        return int(inside.sum())

    x, y = min(order, key=crossed)
    rows = [
        f'<g transform="translate({x + 4:.1f},{y + line + 2 + i * line:.1f})">{swatch}'
        f'<text x="20" y="0" font-size="9">{escape(label)}</text></g>'
        for i, (swatch, label) in enumerate(entries)
    ]
    return (
        f'<g><rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height}" fill="white" '
        f'fill-opacity="0.8"/>{"".join(rows)}</g>'
    )
