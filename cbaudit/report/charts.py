"""Inline SVG charts for the publish-gate report: no scripts, no network, plain markup.

A chart spec is a JSON-ready mapping with a `type` and a `title`:

- `gantt`: `rows: [{label, spans: [[start, end, state], ...]}]`, `x_label`, optional
  `slots` (capacity per column) — a request-over-iteration timeline; columns where fewer
  than `slots` requests run are shaded as idle slots.
- `histogram`: `series: {name: [values]}`, `x_label`, optional `bins`.
- `bars`: `categories: [...]`, `series: {name: [values per category]}`, `y_label`.
- `lines`: `series: {name: [[x, y], ...]}`, `x_label`, `y_label`.
- `scatter`: `points: [[x, y], ...]`, optional `line: [[x, y], ...]` (e.g. a roofline fit),
  `x_label`, `y_label`.
- `matrix`: `rows: [...]`, `cols: [...]`, `cells: [[text, ...], ...]` (e.g. a kill matrix);
  cells named killed/survived/... are coloured by status.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

W, H = 640, 300
ML, MR, MT, MB = 60, 20, 30, 45
PALETTE = ["#3b6ea8", "#d9822b", "#3a9a5b", "#b33a3a", "#7b5ea7", "#8c6d31", "#cc5a94", "#5f6b73"]
STATE_COLOURS = {
    "prefill": "#d9822b",
    "decode": "#3b6ea8",
    "run": "#3b6ea8",
    "rebuild": "#7b5ea7",
    "wait": "#e6e6e6",
    "idle": "#f4cccc",
    "preempted": "#b33a3a",
}
CELL_COLOURS = {
    "killed": "#cfe8d5",
    "killed_by_schema": "#dcefe0",
    "equivalent": "#eeeeee",
    "survived": "#f4cccc",
    "timeout": "#fde8c8",
    "oracle_error": "#f4cccc",
    "crashed": "#f4cccc",
    "not_applicable": "#ffffff",
}


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


def _poly(coords: str, colour: str, title: str = "", dash: bool = False) -> str:
    tip = f"<title>{escape(title)}</title>" if title else ""
    style = ' stroke-dasharray="5,3"' if dash else ""
    return (
        f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"{style}>'
        f"{tip}</polyline>"
    )


def _frame(title: str, body: list[str], width: int = W, height: int = H) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">'
        f"<title>{escape(title)}</title>"
        + _t(width / 2, 18, title, size=13, extra=' font-weight="bold"')
        + "".join(body)
        + "</svg>"
    )


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if value <= m * exp:
            return float(m * exp)
    return float(10 * exp)


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _axes(x0: float, x1: float, y0: float, y1: float, xl: str, yl: str) -> list[str]:
    pw, ph = W - ML - MR, H - MT - MB
    out = [
        f'<line x1="{ML}" y1="{H - MB}" x2="{W - MR}" y2="{H - MB}" stroke="#333"/>',
        f'<line x1="{ML}" y1="{MT}" x2="{ML}" y2="{H - MB}" stroke="#333"/>',
    ]
    for i in range(5):
        fx = x0 + (x1 - x0) * i / 4
        fy = y0 + (y1 - y0) * i / 4
        px = ML + pw * i / 4
        py = H - MB - ph * i / 4
        out.append(_t(px, H - MB + 14, _fmt(fx), size=10))
        out.append(_t(ML - 4, py + 3, _fmt(fy), anchor="end", size=10))
        out.append(f'<line x1="{ML}" y1="{py:.1f}" x2="{W - MR}" y2="{py:.1f}" stroke="#eee"/>')
    out.append(_t(ML + pw / 2, H - 8, xl))
    out.append(_t(14, MT + ph / 2, yl, extra=f' transform="rotate(-90 14 {MT + ph / 2:.1f})"'))
    return out


def _legend(names: Sequence[str]) -> list[str]:
    out = []
    for i, name in enumerate(names):
        x = ML + 10 + (i % 4) * 140
        y = MT + 6 + (i // 4) * 14
        colour = PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{colour}"/>')
        out.append(_t(x + 14, y + 9, str(name), anchor="start", size=10))
    return out


def gantt(spec: Mapping[str, Any]) -> str:
    rows = list(spec.get("rows", []))
    end = max((float(s[1]) for r in rows for s in r.get("spans", [])), default=1.0)
    start = min((float(s[0]) for r in rows for s in r.get("spans", [])), default=0.0)
    row_h = 16
    height = MT + 20 + row_h * max(len(rows), 1) + MB + 16
    pw = W - ML - MR - 40
    scale = pw / max(end - start, 1e-9)
    body: list[str] = []
    top = MT + 10
    slots = spec.get("slots")
    if slots:
        ncols = math.ceil(end - start)
        busy = [0] * max(ncols, 1)
        for r in rows:
            for s in r.get("spans", []):
                if s[2] in ("prefill", "decode", "run", "rebuild"):
                    for c in range(int(s[0] - start), math.ceil(s[1] - start)):
                        if 0 <= c < len(busy):
                            busy[c] += 1
        for c, n in enumerate(busy):
            if n < int(slots):
                x = ML + 40 + c * scale
                tip = f"{int(slots) - n} idle slot(s) at {start + c:g}"
                body.append(_rect(x, top - 6, scale, 5, "#b33a3a", tip))
    for i, r in enumerate(rows):
        y = top + i * row_h
        body.append(_t(ML + 36, y + 11, str(r.get("label", "")), anchor="end", size=10))
        for s in r.get("spans", []):
            x = ML + 40 + (float(s[0]) - start) * scale
            w = max((float(s[1]) - float(s[0])) * scale, 0.5)
            colour = STATE_COLOURS.get(str(s[2]), "#999")
            tip = f"{r.get('label', '')} {s[2]} [{_fmt(float(s[0]))}, {_fmt(float(s[1]))})"
            body.append(_rect(x, y, w, row_h - 3, colour, tip))
    axis_y = top + row_h * max(len(rows), 1) + 4
    body.append(
        f'<line x1="{ML + 40}" y1="{axis_y}" x2="{ML + 40 + pw}" y2="{axis_y}" stroke="#333"/>'
    )
    for i in range(5):
        v = start + (end - start) * i / 4
        body.append(_t(ML + 40 + pw * i / 4, axis_y + 14, _fmt(v), size=10))
    body.append(_t(ML + 40 + pw / 2, axis_y + 30, str(spec.get("x_label", "iteration"))))
    legend_states = sorted({str(s[2]) for r in rows for s in r.get("spans", [])})
    for j, state in enumerate(legend_states):
        x = ML + 40 + j * 90
        y = axis_y + 40
        body.append(_rect(x, y, 9, 9, STATE_COLOURS.get(state, "#999")))
        body.append(_t(x + 13, y + 8, state, anchor="start", size=9))
    return _frame(str(spec.get("title", "timeline")), body, height=int(height))


def histogram(spec: Mapping[str, Any]) -> str:
    series: Mapping[str, Sequence[float]] = spec.get("series", {})
    values = [float(v) for vs in series.values() for v in vs]
    if not values:
        return _frame(str(spec.get("title", "")), [_t(W / 2, H / 2, "no samples")])
    lo, hi = min(values), max(values)
    if hi == lo:
        hi = lo + 1
    bins = int(spec.get("bins", 20))
    width = (hi - lo) / bins
    counts = {
        name: [
            sum(1 for v in vs if min(int((float(v) - lo) / width), bins - 1) == b)
            for b in range(bins)
        ]
        for name, vs in series.items()
    }
    ymax = _nice_max(max(max(c) for c in counts.values()))
    pw, ph = W - ML - MR, H - MT - MB
    body = _axes(lo, hi, 0, ymax, str(spec.get("x_label", "")), "count")
    bw = pw / bins / max(len(counts), 1)
    for k, (name, cs) in enumerate(counts.items()):
        colour = PALETTE[k % len(PALETTE)]
        for b, c in enumerate(cs):
            h = ph * c / ymax
            x = ML + pw * b / bins + k * bw
            body.append(_rect(x, H - MB - h, bw, h, colour, f"{name}: {c}", ' fill-opacity="0.8"'))
    body += _legend(list(counts))
    return _frame(str(spec.get("title", "")), body)


def bars(spec: Mapping[str, Any]) -> str:
    cats = [str(c) for c in spec.get("categories", [])]
    series: Mapping[str, Sequence[float]] = spec.get("series", {})
    vmax = _nice_max(max((float(v) for vs in series.values() for v in vs), default=1.0))
    pw, ph = W - ML - MR, H - MT - MB
    body = [
        f'<line x1="{ML}" y1="{H - MB}" x2="{W - MR}" y2="{H - MB}" stroke="#333"/>',
        f'<line x1="{ML}" y1="{MT}" x2="{ML}" y2="{H - MB}" stroke="#333"/>',
    ]
    for i in range(5):
        py = H - MB - ph * i / 4
        body.append(_t(ML - 4, py + 3, _fmt(vmax * i / 4), anchor="end", size=10))
    body.append(
        _t(
            14,
            MT + ph / 2,
            str(spec.get("y_label", "")),
            extra=f' transform="rotate(-90 14 {MT + ph / 2:.1f})"',
        )
    )
    group = pw / max(len(cats), 1)
    bw = group * 0.8 / max(len(series), 1)
    for k, (name, vs) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        for i, v in enumerate(vs):
            h = ph * float(v) / vmax
            x = ML + group * i + group * 0.1 + k * bw
            cat = cats[i] if i < len(cats) else ""
            body.append(_rect(x, H - MB - h, bw, h, colour, f"{name} {cat}: {_fmt(float(v))}"))
    for i, c in enumerate(cats):
        body.append(_t(ML + group * i + group / 2, H - MB + 14, c, size=10))
    body += _legend(list(series))
    return _frame(str(spec.get("title", "")), body)


def _xy_bounds(pts: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    xs = [p[0] for p in pts] or [0.0, 1.0]
    ys = [p[1] for p in pts] or [0.0, 1.0]
    x0, x1 = min(0.0, min(xs)), max(xs)
    return x0, (x1 if x1 > x0 else x0 + 1), 0.0, _nice_max(max(ys))


def lines(spec: Mapping[str, Any]) -> str:
    series: Mapping[str, Sequence[Sequence[float]]] = spec.get("series", {})
    pts = [(float(p[0]), float(p[1])) for s in series.values() for p in s]
    x0, x1, y0, y1 = _xy_bounds(pts)
    pw, ph = W - ML - MR, H - MT - MB
    body = _axes(x0, x1, y0, y1, str(spec.get("x_label", "")), str(spec.get("y_label", "")))
    for k, (name, s) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        coords = " ".join(
            f"{ML + pw * (float(p[0]) - x0) / (x1 - x0):.1f},"
            f"{H - MB - ph * (float(p[1]) - y0) / (y1 - y0):.1f}"
            for p in s
        )
        body.append(_poly(coords, colour, name))
    body += _legend(list(series))
    return _frame(str(spec.get("title", "")), body)


def scatter(spec: Mapping[str, Any]) -> str:
    points = [(float(p[0]), float(p[1])) for p in spec.get("points", [])]
    line = [(float(p[0]), float(p[1])) for p in spec.get("line", [])]
    x0, x1, y0, y1 = _xy_bounds(points + line)
    pw, ph = W - ML - MR, H - MT - MB

    def px(x: float) -> float:
        return ML + pw * (x - x0) / (x1 - x0)

    def py(y: float) -> float:
        return H - MB - ph * (y - y0) / (y1 - y0)

    body = _axes(x0, x1, y0, y1, str(spec.get("x_label", "")), str(spec.get("y_label", "")))
    for x, y in points:
        body.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{PALETTE[0]}">'
            f"<title>({_fmt(x)}, {_fmt(y)})</title></circle>"
        )
    if line:
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in line)
        body.append(_poly(coords, PALETTE[1], str(spec.get("line_label", "model")), dash=True))
        body += _legend(["measured", str(spec.get("line_label", "model"))])
    return _frame(str(spec.get("title", "")), body)


def matrix(spec: Mapping[str, Any]) -> str:
    rows = [str(r) for r in spec.get("rows", [])]
    cols = [str(c) for c in spec.get("cols", [])]
    cells: Sequence[Sequence[Any]] = spec.get("cells", [])
    cw, ch, left, top = 90, 18, 200, 60
    width = left + cw * max(len(cols), 1) + 20
    height = top + ch * max(len(rows), 1) + 20
    body: list[str] = []
    for j, c in enumerate(cols):
        x = left + j * cw + cw / 2
        body.append(
            _t(x, top - 8, c[:14], size=9, extra=f' transform="rotate(-20 {x:.1f} {top - 8})"')
        )
    for i, r in enumerate(rows):
        y = top + i * ch
        body.append(_t(left - 6, y + 12, r[:32], anchor="end", size=10))
        for j in range(len(cols)):
            text = str(cells[i][j]) if i < len(cells) and j < len(cells[i]) else ""
            colour = CELL_COLOURS.get(text, "#ffffff")
            body.append(_rect(left + j * cw, y, cw - 2, ch - 2, colour, text, ' stroke="#ccc"'))
            body.append(_t(left + j * cw + cw / 2, y + 12, text.replace("_", " ")[:14], size=9))
    return _frame(str(spec.get("title", "")), body, width=int(width), height=int(height))


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
        return _frame(
            str(spec.get("title", "chart")),
            [_t(W / 2, H / 2, f"unknown chart type {spec.get('type')!r}")],
        )
    return func(spec)
