"""Chart rules, checked on the markup: round ticks, legends below the plot, every colour a
mark is drawn in named by a legend entry (the Gantt's idle band too)."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from cbaudit.report.charts import RENDERERS, nice_ticks, render_chart
from tests.report._m52 import GateRun
from tests.report._synthetic import gate_report

SVG = "{http://www.w3.org/2000/svg}"


def _is_round_step(step: float) -> bool:
    mantissa = step / 10 ** math.floor(math.log10(step))
    return any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (1, 2, 5, 10))


@given(
    lo=st.floats(-1e6, 1e6, allow_nan=False),
    span=st.floats(1e-6, 1e7, allow_nan=False),
    integer=st.booleans(),
)
def test_nice_ticks_are_round_and_cover_the_range(lo: float, span: float, integer: bool) -> None:
    """Ticks are evenly spaced by 1, 2 or 5 times a power of ten and cover [lo, lo+span]."""
    assume(span > abs(lo) * 1e-7)  # within what a float axis can tell apart
    hi = lo + span
    ticks, a, b = nice_ticks(lo, hi, integer=integer)
    step = ticks[1] - ticks[0]
    # covered up to float noise, measured in steps (a sliver of 1e-9 step is not a tick)
    assert a <= lo + 1e-6 * step and b >= hi - 1e-6 * step
    assert 2 <= len(ticks) <= 13
    steps = [y - x for x, y in itertools.pairwise(ticks)]
    assert all(math.isclose(s, step, rel_tol=1e-6, abs_tol=1e-9) for s in steps)
    assert _is_round_step(step)
    if integer:
        assert all(float(t).is_integer() for t in ticks)


def test_the_issues_tick_values_no_longer_appear() -> None:
    """A count axis up to 150 and a bar axis up to 250 tick at round values (not 62.5/187.5)."""
    assert nice_ticks(0, 150, max_ticks=5)[0] == [0, 50, 100, 150]
    assert nice_ticks(0, 250, max_ticks=5)[0] == [0, 50, 100, 150, 200, 250]


def _svg(spec: Mapping[str, Any]) -> ET.Element:
    return ET.fromstring(render_chart(spec))


def _fill(el: ET.Element) -> str:
    """The colour an element is drawn in: its fill, or its stroke for an unfilled line."""
    fill = el.get("fill")
    return fill if fill and fill != "none" else el.get("stroke") or ""


def check_chart_rules(spec: Mapping[str, Any]) -> None:
    """The three rules, on one chart."""
    root = _svg(spec)
    marks = [e for e in root.iter() if e.get("class") == "mark"]
    swatches = {e.get("data-key"): e for e in root.iter() if e.get("class") == "swatch"}
    for mark in marks:
        key = mark.get("data-key")
        assert key in swatches, f"{spec.get('title')}: {key!r} has no legend entry"
        assert _fill(swatches[key]) == _fill(mark), key
    area = next((e for e in root.iter() if e.get("class") == "plot-area"), None)
    if area is not None:
        bottom = float(area.get("y", 0)) + float(area.get("height", 0))
        for sw in swatches.values():
            y = float(sw.get("y") or sw.get("y1") or sw.get("cy") or 0)
            assert y > bottom + 20, f"{spec.get('title')}: legend inside the plot"
    for tick in root.iter(f"{SVG}text"):
        if "tick" not in (tick.get("class") or ""):
            continue
        value = float((tick.text or "").replace("\u2009", ""))
        assert re.fullmatch(r"-?\d+(\.\d{1,6})?", f"{value:g}") or value == 0
    values = sorted(
        float((t.text or "").replace("\u2009", ""))
        for t in root.iter(f"{SVG}text")
        if "ytick" in (t.get("class") or "")
    )
    if len(values) > 1:
        assert _is_round_step(values[1] - values[0])


def test_synthetic_charts_follow_the_rules() -> None:
    """Every chart of the synthetic report: round ticks, legend below, colours explained."""
    for result in gate_report().results:
        for spec in result.charts:
            check_chart_rules(spec)


def test_gantt_idle_band_has_a_legend_entry() -> None:
    """The idle band (fewer requests running than slots) is explained by the legend."""
    spec = {
        "type": "gantt",
        "title": "t",
        "slots": 2,
        "rows": [{"label": "A", "spans": [[0, 1, "prefill"], [1, 3, "decode"]]}],
    }
    root = _svg(spec)
    idle = [e for e in root.iter() if e.get("data-key") == "idle slot"]
    assert {e.get("class") for e in idle} == {"mark", "swatch"}
    check_chart_rules(spec)


def test_real_m52_charts_follow_the_rules(m52_pass: GateRun) -> None:
    """All charts the M5.2 gate draws (Gantt, histograms, bars, lines, scatter) obey the rules."""
    charts = [c for r in m52_pass.json()["results"] for c in r.get("charts", [])]
    kinds = {c["type"] for c in charts}
    assert {"gantt", "histogram", "bars", "lines", "scatter"} <= kinds
    for spec in charts:
        check_chart_rules(spec)


def test_matrix_labels_are_never_cut() -> None:
    """The SVG matrix writes full row labels and explains cells by a legend and a key."""
    spec = {
        "type": "matrix",
        "title": "m",
        "rows": ["plan.interval.before-frontier-and-a-long-name"],
        "cols": ["loop2/valid.case.json"],
        "cells": [["killed_by_other"]],
    }
    text = render_chart(spec)
    assert "plan.interval.before-frontier-and-a-long-name" in text
    assert "F1: loop2/valid.case.json" in text
    check_chart_rules(spec)


@pytest.mark.parametrize("kind", sorted(RENDERERS))
def test_empty_charts_are_well_formed(kind: str) -> None:
    """Every chart type renders parseable SVG with no data."""
    ET.fromstring(render_chart({"type": kind, "title": kind}))
