"""The result model and the reporters."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

import pytest

from cbaudit.model import (
    CheckResult,
    CheckStatus,
    EvidenceClass,
    ExitCode,
    Finding,
    InputDigest,
    Location,
    Report,
)
from cbaudit.report import REPORTERS, register_reporter


def _report() -> Report:
    bad = Finding(
        "PLAN.INTERVAL.BEFORE_FRONTIER",
        "start 2 is before frontier 3",
        location=Location("case.json", "/plan/selected/0/start", 12, 7),
    )
    return Report.build(
        "validate-plan",
        [
            CheckResult("plan_case", "good.json"),
            CheckResult("plan_case", "bad.json", findings=(bad,)),
            CheckResult("plan_case", "bad.json", findings=(bad,)),
            CheckResult("pin", "vllm", status=CheckStatus.NOT_RUN, reason="no source"),
        ],
        inputs=[InputDigest("b.json", "0" * 64), InputDigest("a.json", "1" * 64)],
    )


def test_finding_code_must_be_dotted_upper_case() -> None:
    """A finding code that is not an upper-case dotted code is refused."""
    with pytest.raises(ValueError):
        Finding("lower.case", "x")
    with pytest.raises(ValueError):
        Finding("NODOT", "x")


def test_exit_code_reflects_worst_outcome() -> None:
    """Failures give exit 1, unusable input 2, not-run alone never fails."""
    assert _report().exit_code is ExitCode.FINDINGS
    only_not_run = Report.build("gate", [CheckResult("pin", "x", status=CheckStatus.NOT_RUN)])
    assert only_not_run.exit_code is ExitCode.OK
    errored = Report.build("gate", [CheckResult("x", "y", status=CheckStatus.ERROR)])
    assert errored.exit_code is ExitCode.UNUSABLE


def test_json_report_is_deterministic_and_sorted() -> None:
    """Same report, same bytes; keys sorted; inputs sorted by path; schema_version present."""
    a = REPORTERS["json"](_report(), 0, False)
    b = REPORTERS["json"](_report(), 0, False)
    assert a == b
    doc = json.loads(a)
    assert doc["schema_version"] == 1
    assert [i["path"] for i in doc["inputs"]] == ["a.json", "b.json"]
    assert list(doc) == sorted(doc)
    assert doc["counts"] == {"error": 0, "failed": 2, "not_run": 1, "passed": 1}


def test_text_report_locates_findings_and_hides_passes_when_quiet() -> None:
    """Text names file:line:col#pointer and the code; quiet drops passing checks."""
    text = REPORTERS["text"](_report(), 0, False)
    assert "case.json:12:7#/plan/selected/0/start" in text
    assert "PLAN.INTERVAL.BEFORE_FRONTIER" in text
    assert "\x1b[" not in text
    quiet = REPORTERS["text"](_report(), -1, False)
    assert "good.json" not in quiet
    assert quiet.strip().endswith("1 not run")


def test_junit_has_unique_names_and_file_attributes() -> None:
    """Each testcase name is unique and failing cases carry the file attribute."""
    root = ET.fromstring(REPORTERS["junit"](_report(), 0, False).split("\n", 1)[1])
    cases = root.findall(".//testcase")
    names = [c.get("name") for c in cases]
    assert len(names) == len(set(names)) == 4
    failing = [c for c in cases if c.find("failure") is not None]
    assert {c.get("file") for c in failing} == {"case.json"}
    assert root.find(".//skipped") is not None


def test_sarif_has_rules_regions_and_fingerprints() -> None:
    """SARIF 2.1.0 output names rules by finding code and points at lines."""
    doc = json.loads(REPORTERS["sarif"](_report(), 0, False))
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["PLAN.INTERVAL.BEFORE_FRONTIER"]
    result = run["results"][0]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 12, "startColumn": 7}
    assert result["partialFingerprints"]["cbauditFinding/v1"]


def test_reporter_registry_refuses_duplicates() -> None:
    """Registering a reporter under an existing name is refused."""
    with pytest.raises(ValueError):
        register_reporter("json", REPORTERS["json"])


def test_evidence_classes_are_the_design_set() -> None:
    """The evidence classes are exactly the six of DESIGN.md."""
    assert {e.value for e in EvidenceClass} == {
        "derived",
        "synthetic",
        "source_reported",
        "modeled",
        "measured_cpu",
        "measured_gpu",
    }


def test_text_metrics_are_data_not_markup() -> None:
    """List metrics such as `[req-B:2, req-C:1]` print as written (rich would read markup)."""
    rep = Report.build(
        "validate-plan",
        [CheckResult("plan_case", "x.json", metrics={"order": ["req-B:2", "req-C:1"]})],
    )
    text = REPORTERS["text"](rep, 1, False)
    assert "[req-B:2, req-C:1]" in text


def test_plain_text_is_what_rich_prints_without_color() -> None:
    """Without color the text report skips rich, and its characters are rich's own."""
    from cbaudit.report.text import layout, render_rich, render_text

    long = Finding(
        "PLAN.BUDGET.TOKENS",
        "[bold]not markup[/bold] :b: " + "ünïcode " * 30,
        location=Location("dir/" + "x" * 90 + ".json", "/plan/selected/0", 1, 2),
    )
    reports = [
        _report(),
        Report.build("gate", [CheckResult("c" * 70, "s" * 70, findings=(long,), reason="r")]),
        Report.build("gate", []),
    ]
    for rep in reports:
        for verbosity in (-1, 0):
            plain = render_text(rep, verbosity, False)
            assert plain == render_rich(layout(rep, verbosity), False)
            assert len(plain.splitlines()) == len(layout(rep, verbosity))
