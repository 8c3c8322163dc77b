"""Inline SVG charts for the publish-gate report: no scripts, no network, plain markup.

A chart spec is a JSON-ready mapping with a `type` and a `title`:

- `gantt`: `rows: [{label, spans: [[start, end, state], ...]}]`, `x_label`, optional
  `slots` (capacity per column) — a request-over-iteration timeline; columns where fewer
  than `slots` requests run are marked by an idle band above the rows.
- `histogram`: `series: {name: [values]}`, `x_label`, optional `bins`.
- `bars`: `categories: [...]`, `series: {name: [values per category]}`, `y_label`.
- `lines`: `series: {name: [[x, y], ...]}`, `x_label`, `y_label`.
- `scatter`: `points: [[x, y], ...]`, optional `line: [[x, y], ...]` (e.g. a roofline fit),
  `x_label`, `y_label`.
- `matrix`: `rows: [...]`, `cols: [...]`, `cells: [[text, ...], ...]` (e.g. a kill matrix);
  cells named killed/survived/... are coloured by status and shown as one letter.

Every chart follows the same rules, which tests check on the markup: axis ticks are round
values (1, 2 or 5 times a power of ten, so never 62.5 or 187.5); the legend sits below the
plot, never over it; every colour a mark is drawn in has a legend entry (marks carry
`class="mark"` and their legend swatches `class="swatch"`, both with `data-key`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

W = 640
ML, MR, MT = 64, 24, 34  # left, right and top margins of the plot area
PLOT_H = 220  # height of the plot area
PALETTE = ["#3b6ea8", "#d9822b", "#3a9a5b", "#b33a3a", "#7b5ea7", "#8c6d31", "#cc5a94", "#5f6b73"]
DASHES = ["", "7,3", "2,3", "9,3,2,3"]
STATE_COLOURS = {
    "prefill": "#d9822b",
    "decode": "#3b6ea8",
    "run": "#3b6ea8",
    "rebuild": "#7b5ea7",
    "wait": "#d6d6d6",
    "preempted": "#b33a3a",
}
IDLE_COLOUR = "#e05a5a"
CELL_COLOURS = {
    "killed": "#cfe8d5",
    "killed_by_schema": "#dcefe0",
    "killed_by_other": "#e6f2d0",
    "equivalent": "#eeeeee",
    "survived": "#f4b6b6",
    "timeout": "#fde8c8",
    "oracle_error": "#f4b6b6",
    "crashed": "#f4b6b6",
    "not_applicable": "#ffffff",
}
CELL_GLYPHS = {
    "killed": "K",
    "killed_by_schema": "S",
    "killed_by_other": "O",
    "equivalent": "=",
    "survived": "!",
    "timeout": "T",
    "oracle_error": "E",
    "crashed": "C",
    "not_applicable": "",
}
CHAR_W = 6.2  # average width of a 10 px sans-serif character, for layout estimates


def _t(
    x: float, y: float, text: str, anchor: str = "middle", size: int = 11, extra: str = ""
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{extra}>'
        f"{escape(text)}</text>"
    )


def _rect(
    x: float, y: float, w: float, h: float, fill: str, title: str = "", extra: str = ""
) -> str:
    tip = f"<title>{escape(title)}</title>" if title else ""
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}"{extra}>'
        f"{tip}</rect>"
    )


def _mark(key: str) -> str:
    return f' class="mark" data-key="{escape(key)}"'


# --------------------------------------------------------------------------- ticks


def nice_step(span: float, max_ticks: int = 6) -> float:
    """The smallest step of 1, 2 or 5 times a power of ten that covers `span` in at most
    `max_ticks` intervals."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max_ticks
    exp = math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        step = m * 10.0**exp
        if step >= raw * (1 - 1e-12):
            return step
    return 10.0 ** (exp + 1)


def nice_ticks(
    lo: float, hi: float, max_ticks: int = 6, integer: bool = False
) -> tuple[list[float], float, float]:
    """Round tick values covering [lo, hi], and the axis range they span."""
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        hi = lo + 1.0
    step = nice_step(hi - lo, max_ticks)
    if integer:
        step = max(1.0, round(step))
    k0 = math.floor(lo / step + 1e-9)
    k1 = math.ceil(hi / step - 1e-9)
    digits = max(0, -math.floor(math.log10(step))) + 1
    ticks = [_clean(round(k * step, digits)) for k in range(k0, k1 + 1)]
    return ticks, ticks[0], ticks[-1]


def _clean(v: float) -> float:
    """Drop float noise (0.30000000000000004 -> 0.3)."""
    return float(f"{v:.15g}")


def fmt_tick(v: float) -> str:
    if float(v).is_integer():
        return f"{int(v):,}".replace(",", "\u2009") if abs(v) >= 10000 else str(int(v))
    return f"{v:.10g}"


def _fmt(v: float) -> str:
    return f"{v:.4g}"


# --------------------------------------------------------------------------- frame and legend


def _legend(
    entries: Sequence[tuple[str, str, str]], top: float, width: int = W
) -> tuple[list[str], float]:
    """Legend rows below the plot: (key, colour, kind) entries, kind `box`, `line:DASH` or
    `dot`. Returns the markup and the height it takes."""
    out = ['<g class="legend">']
    x, y = float(ML), float(top)
    row_h = 16
    for key, colour, kind in entries:
        w = 22 + CHAR_W * len(key) + 14
        if x + w > width - 8 and x > ML:
            x, y = float(ML), y + row_h
        if kind.startswith("line"):
            dash = kind.partition(":")[2]
            style = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(
                f'<line class="swatch" data-key="{escape(key)}" x1="{x:.1f}" y1="{y + 5:.1f}"'
                f' x2="{x + 16:.1f}" y2="{y + 5:.1f}" stroke="{colour}" stroke-width="2.5"'
                f"{style}/>"
            )
        elif kind == "dot":
            out.append(
                f'<circle class="swatch" data-key="{escape(key)}" cx="{x + 8:.1f}"'
                f' cy="{y + 5:.1f}" r="3.5" fill="{colour}"/>'
            )
        else:
            out.append(
                _rect(
                    x + 3,
                    y,
                    11,
                    11,
                    colour,
                    "",
                    f' class="swatch" data-key="{escape(key)}" stroke="#999" stroke-width="0.5"',
                )
            )
        out.append(_t(x + 20, y + 9.5, key, anchor="start", size=10))
        x += w
    out.append("</g>")
    return out, (y - top) + row_h if entries else 0.0


def _frame(title: str, body: list[str], height: float, width: int = W) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}"'
        f' height="{height:.0f}" viewBox="0 0 {width} {height:.0f}" font-family="sans-serif">'
        f"<title>{escape(title)}</title>"
        + _t(width / 2, 18, title, size=13, extra=' font-weight="bold"')
        + "".join(body)
        + "</svg>"
    )


class _Plot:
    """A plot area with round ticks on both axes."""

    def __init__(
        self,
        xr: tuple[float, float],
        yr: tuple[float, float],
        *,
        x_integer: bool = False,
        y_integer: bool = False,
        width: int = W,
    ) -> None:
        self.width = width
        self.xticks, self.x0, self.x1 = nice_ticks(*xr, integer=x_integer)
        self.yticks, self.y0, self.y1 = nice_ticks(*yr, max_ticks=5, integer=y_integer)
        self.left, self.right = ML, width - MR
        self.top, self.bottom = MT, MT + PLOT_H

    def px(self, x: float) -> float:
        return self.left + (self.right - self.left) * (x - self.x0) / (self.x1 - self.x0)

    def py(self, y: float) -> float:
        return self.bottom - (self.bottom - self.top) * (y - self.y0) / (self.y1 - self.y0)

    def axes(self, x_label: str, y_label: str, x_ticks: bool = True) -> list[str]:
        out = [
            f'<rect class="plot-area" x="{self.left}" y="{self.top}"'
            f' width="{self.right - self.left}" height="{self.bottom - self.top}" fill="none"/>'
        ]
        for v in self.yticks:
            y = self.py(v)
            out.append(
                f'<line x1="{self.left}" y1="{y:.1f}" x2="{self.right}" y2="{y:.1f}"'
                ' stroke="#e6e6e6"/>'
            )
            out.append(_t(self.left - 5, y + 3.5, fmt_tick(v), "end", 10, ' class="tick ytick"'))
        if x_ticks:
            for v in self.xticks:
                x = self.px(v)
                out.append(
                    f'<line x1="{x:.1f}" y1="{self.bottom}" x2="{x:.1f}" y2="{self.bottom + 4}"'
                    ' stroke="#333"/>'
                )
                out.append(
                    _t(x, self.bottom + 15, fmt_tick(v), size=10, extra=' class="tick xtick"')
                )
        out.append(
            f'<line x1="{self.left}" y1="{self.bottom}" x2="{self.right}" y2="{self.bottom}"'
            ' stroke="#333"/>'
        )
        out.append(
            f'<line x1="{self.left}" y1="{self.top}" x2="{self.left}" y2="{self.bottom}"'
            ' stroke="#333"/>'
        )
        if x_label:
            out.append(_t((self.left + self.right) / 2, self.bottom + 32, x_label))
        if y_label:
            mid = (self.top + self.bottom) / 2
            out.append(_t(16, mid, y_label, extra=f' transform="rotate(-90 16 {mid:.1f})"'))
        return out

    @property
    def legend_top(self) -> float:
        return self.bottom + 46


def _empty(spec: Mapping[str, Any], what: str) -> str:
    return _frame(str(spec.get("title", "")), [_t(W / 2, 90, what)], 140)


# --------------------------------------------------------------------------- chart types


def gantt(spec: Mapping[str, Any]) -> str:
    rows = list(spec.get("rows", []))
    spans = [s for r in rows for s in r.get("spans", [])]
    if not spans:
        return _empty(spec, "no spans")
    start = min(float(s[0]) for s in spans)
    end = max(float(s[1]) for s in spans)
    label_w = max([6 + CHAR_W * len(str(r.get("label", ""))) for r in rows] + [30.0])
    left = ML + max(0.0, label_w - ML + 10)
    xticks, x0, x1 = nice_ticks(start, end, max_ticks=8, integer=True)
    right = W - MR
    scale = (right - left) / max(x1 - x0, 1e-9)
    row_h = 16
    top = MT + 16
    body: list[str] = []
    slots = int(spec.get("slots") or 0)
    idle_drawn = False
    if slots:
        ncols = max(math.ceil(end - start), 1)
        busy = [0] * ncols
        for s in spans:
            if s[2] in ("prefill", "decode", "run", "rebuild"):
                for c in range(int(float(s[0]) - start), math.ceil(float(s[1]) - start)):
                    if 0 <= c < ncols:
                        busy[c] += 1
        for c, n in enumerate(busy):
            if n < slots:
                x = left + (start + c - x0) * scale
                tip = f"{slots - n} of {slots} slot(s) idle at {start + c:g}"
                body.append(_rect(x, top - 9, scale, 6, IDLE_COLOUR, tip, _mark("idle slot")))
                idle_drawn = True
    for i, r in enumerate(rows):
        y = top + i * row_h
        body.append(_t(left - 6, y + 11, str(r.get("label", "")), anchor="end", size=10))
        for s in r.get("spans", []):
            x = left + (float(s[0]) - x0) * scale
            w = max((float(s[1]) - float(s[0])) * scale, 0.5)
            state = str(s[2])
            colour = STATE_COLOURS.get(state, "#999999")
            tip = f"{r.get('label', '')} {state} [{_fmt(float(s[0]))}, {_fmt(float(s[1]))})"
            body.append(_rect(x, y, w, row_h - 3, colour, tip, _mark(state)))
    axis_y = top + row_h * len(rows) + 3
    body.append(f'<line x1="{left:.1f}" y1="{axis_y}" x2="{right}" y2="{axis_y}" stroke="#333"/>')
    for v in xticks:
        x = left + (v - x0) * scale
        body.append(
            f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" stroke="#333"/>'
        )
        body.append(_t(x, axis_y + 15, fmt_tick(v), size=10, extra=' class="tick xtick"'))
    body.append(_t((left + right) / 2, axis_y + 31, str(spec.get("x_label", "iteration"))))
    states = sorted({str(s[2]) for s in spans})
    entries = [(s, STATE_COLOURS.get(s, "#999999"), "box") for s in states]
    if idle_drawn:
        entries.append(("idle slot", IDLE_COLOUR, "box"))
    legend, lh = _legend(entries, axis_y + 44)
    body += legend
    if idle_drawn:
        body.append(
            _t(
                ML,
                axis_y + 44 + lh + 10,
                f"idle slot: a column where fewer than {slots} requests run (band above the rows)",
                anchor="start",
                size=10,
                extra=' fill="#555"',
            )
        )
        lh += 14
    return _frame(str(spec.get("title", "timeline")), body, axis_y + 48 + lh)


def histogram(spec: Mapping[str, Any]) -> str:
    series: Mapping[str, Sequence[float]] = spec.get("series", {})
    values = [float(v) for vs in series.values() for v in vs]
    if not values:
        return _empty(spec, "no samples")
    lo, hi = min(values), max(values)
    want = int(spec.get("bins", 20))
    step = nice_step(max(hi - lo, 1e-9), max(want, 1))
    if all(float(v).is_integer() for v in values):
        step = max(1.0, round(step))
    first = math.floor(lo / step) * step
    nbins = max(1, math.floor((hi - first) / step) + 1)
    counts = {
        name: [
            sum(1 for v in vs if min(int((float(v) - first) // step), nbins - 1) == b)
            for b in range(nbins)
        ]
        for name, vs in series.items()
    }
    top = max(max(c) for c in counts.values())
    plot = _Plot((first, first + nbins * step), (0, top), y_integer=True)
    body = plot.axes(str(spec.get("x_label", "")), "count")
    bin_w = (plot.right - plot.left) * step / (plot.x1 - plot.x0)
    bw = bin_w * 0.9 / max(len(counts), 1)
    entries = []
    for k, (name, cs) in enumerate(counts.items()):
        colour = PALETTE[k % len(PALETTE)]
        entries.append((name, colour, "box"))
        for b, c in enumerate(cs):
            if not c:
                continue
            lo_edge = first + b * step
            x = plot.px(lo_edge) + bin_w * 0.05 + k * bw
            y = plot.py(c)
            tip = f"{name}: {c} in [{_fmt(lo_edge)}, {_fmt(lo_edge + step)})"
            body.append(_rect(x, y, bw, plot.bottom - y, colour, tip, _mark(name)))
    legend, lh = _legend(entries, plot.legend_top)
    return _frame(str(spec.get("title", "")), body + legend, plot.legend_top + lh + 6)


def bars(spec: Mapping[str, Any]) -> str:
    cats = [str(c) for c in spec.get("categories", [])]
    series: Mapping[str, Sequence[float]] = spec.get("series", {})
    vals = [float(v) for vs in series.values() for v in vs]
    if not cats or not vals:
        return _empty(spec, "no values")
    integer = all(v.is_integer() for v in vals)
    plot = _Plot((0, 1), (min(0.0, min(vals)), max(vals)), y_integer=integer)
    body = plot.axes("", str(spec.get("y_label", "")), x_ticks=False)
    group = (plot.right - plot.left) / len(cats)
    bw = group * 0.8 / max(len(series), 1)
    entries = []
    for k, (name, vs) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        entries.append((name, colour, "box"))
        for i, v in enumerate(vs):
            x = plot.left + group * i + group * 0.1 + k * bw
            y_top, y_base = plot.py(max(float(v), 0.0)), plot.py(min(float(v), 0.0))
            cat = cats[i] if i < len(cats) else ""
            body.append(
                _rect(
                    x,
                    y_top,
                    bw,
                    max(y_base - y_top, 0.0),
                    colour,
                    f"{name}, {cat}: {_fmt(float(v))}",
                    _mark(name),
                )
            )
    rotate = max(len(c) for c in cats) * CHAR_W > group - 6
    for i, c in enumerate(cats):
        x = plot.left + group * i + group / 2
        if rotate:
            body.append(
                _t(
                    x,
                    plot.bottom + 12,
                    c,
                    "end",
                    10,
                    f' transform="rotate(-30 {x:.1f} {plot.bottom + 12})"',
                )
            )
        else:
            body.append(_t(x, plot.bottom + 15, c, size=10))
    drop = (max(len(c) for c in cats) * CHAR_W * 0.5 + 10) if rotate else 0.0
    legend, lh = _legend(entries, plot.legend_top - 16 + drop)
    return _frame(str(spec.get("title", "")), body + legend, plot.legend_top - 10 + drop + lh)


def _xy_plot(pts: list[tuple[float, float]], spec: Mapping[str, Any]) -> _Plot:
    xs = [p[0] for p in pts] or [0.0, 1.0]
    ys = [p[1] for p in pts] or [0.0, 1.0]
    return _Plot(
        (min(0.0, min(xs)), max(xs)),
        (min(0.0, min(ys)), max(ys)),
        x_integer=all(float(x).is_integer() for x in xs),
        y_integer=all(float(y).is_integer() for y in ys),
    )


def lines(spec: Mapping[str, Any]) -> str:
    series: Mapping[str, Sequence[Sequence[float]]] = spec.get("series", {})
    pts = [(float(p[0]), float(p[1])) for s in series.values() for p in s]
    if not pts:
        return _empty(spec, "no points")
    plot = _xy_plot(pts, spec)
    body = plot.axes(str(spec.get("x_label", "")), str(spec.get("y_label", "")))
    entries = []
    for k, (name, s) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        dash = DASHES[(k // 2) % len(DASHES)] if len(series) > 2 else ""
        entries.append((name, colour, f"line:{dash}"))
        coords = " ".join(f"{plot.px(float(p[0])):.1f},{plot.py(float(p[1])):.1f}" for p in s)
        style = f' stroke-dasharray="{dash}"' if dash else ""
        body.append(
            f'<polyline{_mark(name)} points="{coords}" fill="none" stroke="{colour}"'
            f' stroke-width="2"{style}><title>{escape(name)}</title></polyline>'
        )
    legend, lh = _legend(entries, plot.legend_top)
    return _frame(str(spec.get("title", "")), body + legend, plot.legend_top + lh + 6)


def scatter(spec: Mapping[str, Any]) -> str:
    points = [(float(p[0]), float(p[1])) for p in spec.get("points", [])]
    line = [(float(p[0]), float(p[1])) for p in spec.get("line", [])]
    if not points and not line:
        return _empty(spec, "no points")
    plot = _xy_plot(points + line, spec)
    body = plot.axes(str(spec.get("x_label", "")), str(spec.get("y_label", "")))
    point_label = str(spec.get("point_label", "measured"))
    entries = []
    if points:
        entries.append((point_label, PALETTE[0], "dot"))
    for x, y in points:
        body.append(
            f'<circle{_mark(point_label)} cx="{plot.px(x):.1f}" cy="{plot.py(y):.1f}" r="3"'
            f' fill="{PALETTE[0]}"><title>({_fmt(x)}, {_fmt(y)})</title></circle>'
        )
    if line:
        label = str(spec.get("line_label", "model"))
        entries.append((label, PALETTE[1], "line:5,3"))
        coords = " ".join(f"{plot.px(x):.1f},{plot.py(y):.1f}" for x, y in line)
        body.append(
            f'<polyline{_mark(label)} points="{coords}" fill="none" stroke="{PALETTE[1]}"'
            f' stroke-width="2" stroke-dasharray="5,3"><title>{escape(label)}</title></polyline>'
        )
    legend, lh = _legend(entries, plot.legend_top)
    return _frame(str(spec.get("title", "")), body + legend, plot.legend_top + lh + 6)


def matrix(spec: Mapping[str, Any]) -> str:
    """A compact matrix: one letter per cell, full row labels, numbered columns with a key."""
    rows = [str(r) for r in spec.get("rows", [])]
    cols = [str(c) for c in spec.get("cols", [])]
    cells: Sequence[Sequence[Any]] = spec.get("cells", [])
    if not rows or not cols:
        return _empty(spec, "no cells")
    cw, ch = 22, 16
    left = 12 + CHAR_W * max(len(r) for r in rows)
    top = MT + 22
    width = int(max(left + cw * len(cols) + 20, 360))
    body: list[str] = []
    for j in range(len(cols)):
        body.append(_t(left + j * cw + cw / 2, top - 6, f"F{j + 1}", size=9))
    used: set[str] = set()
    for i, r in enumerate(rows):
        y = top + i * ch
        body.append(_t(left - 6, y + 11.5, r, anchor="end", size=10))
        for j in range(len(cols)):
            text = str(cells[i][j]) if i < len(cells) and j < len(cells[i]) else ""
            colour = CELL_COLOURS.get(text, "#ffffff")
            used.add(text)
            body.append(
                _rect(
                    left + j * cw,
                    y,
                    cw - 2,
                    ch - 2,
                    colour,
                    f"{r} x {cols[j]}: {text}",
                    _mark(text) + ' stroke="#ccc"',
                )
            )
            glyph = CELL_GLYPHS.get(text, text[:1].upper())
            if glyph:
                body.append(_t(left + j * cw + cw / 2 - 1, y + 11, glyph, size=9))
    bottom = top + ch * len(rows) + 10
    present = [s for s in CELL_COLOURS if s in used]
    legend, lh = _legend([(s, CELL_COLOURS[s], "box") for s in present], bottom, width)
    key_top = bottom + lh + 6
    key = [
        _t(ML, key_top + 12 * (j + 1), f"F{j + 1}: {c}", anchor="start", size=10)
        for j, c in enumerate(cols)
    ]
    return _frame(
        str(spec.get("title", "")), body + legend + key, key_top + 12 * len(cols) + 10, width
    )


RENDERERS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "gantt": gantt,
    "histogram": histogram,
    "bars": bars,
    "lines": lines,
    "scatter": scatter,
    "matrix": matrix,
}


def render_chart(spec: Mapping[str, Any]) -> str:
    """SVG markup for one chart spec; an unknown type renders as a labelled placeholder."""
    func = RENDERERS.get(str(spec.get("type")))
    if func is None:
        return _empty(spec, f"unknown chart type {spec.get('type')!r}")
    return func(spec)
