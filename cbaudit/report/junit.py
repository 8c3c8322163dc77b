"""JUnit XML for CI test views: one testsuite per check kind, one testcase per result.

Every testcase names the file and line it is about (its first located error, else its first
located finding, else where the check is declared) and, when the gate measured it, its wall
time. A failure's message and text hold the errors only; warnings and notes go to the
testcase's `system-out`, so a reader never mistakes context for the reason it failed.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

from cbaudit.model import CheckResult, CheckStatus, Finding, Report
from cbaudit.report.view import display_path, errors, notes, primary_location, render_location


def _line(f: Finding) -> str:
    return f"{render_location(f.location)}: {f.severity.value} {f.code}: {f.message}"


def _time(seconds: float | None) -> str | None:
    return None if seconds is None else f"{seconds:.3f}"


def _case(suite: ET.Element, result: CheckResult, name: str) -> None:
    attrs = {"classname": f"cbaudit.{result.check}", "name": name}
    loc = primary_location(result)
    if loc is not None and loc.file:
        attrs["file"] = display_path(loc.file)
        attrs["line"] = str(loc.line if loc.line is not None else 1)  # 1: the whole file
    seconds = _time(result.duration_s)
    if seconds is not None:
        attrs["time"] = seconds
    case = ET.SubElement(suite, "testcase", attrs)
    outcome = result.outcome
    errs = errors(result)
    if outcome in (CheckStatus.FAILED, CheckStatus.ERROR):
        tag = "failure" if outcome is CheckStatus.FAILED else "error"
        codes = sorted({f.code for f in errs})
        message = ", ".join(codes) or result.reason or outcome.value
        el = ET.SubElement(case, tag, message=message, type=codes[0] if codes else outcome.value)
        el.text = "\n".join(_line(f) for f in errs) or (result.reason or "")
    elif outcome is CheckStatus.NOT_RUN:
        ET.SubElement(case, "skipped", message=result.reason or "not run")
    rest = notes(result)
    if rest:
        out = ET.SubElement(case, "system-out")
        out.text = "\n".join(_line(f) for f in rest)


def render_junit(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del verbosity, color
    suites = ET.Element("testsuites", name=f"cbaudit {report.command}")
    by_check: dict[str, list[CheckResult]] = {}
    for result in report.results:
        by_check.setdefault(result.check, []).append(result)
    timed = [r.duration_s for r in report.results if r.duration_s is not None]
    if timed:
        suites.set("time", f"{sum(timed):.3f}")
    seen: dict[str, int] = {}
    for check in sorted(by_check):
        results = by_check[check]
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=check,
            tests=str(len(results)),
            failures=str(sum(r.outcome is CheckStatus.FAILED for r in results)),
            errors=str(sum(r.outcome is CheckStatus.ERROR for r in results)),
            skipped=str(sum(r.outcome is CheckStatus.NOT_RUN for r in results)),
        )
        times = [r.duration_s for r in results if r.duration_s is not None]
        if times:
            suite.set("time", f"{sum(times):.3f}")
        for result in results:
            base = f"{check}[{result.subject}]"
            n = seen.get(base, 0)
            seen[base] = n + 1
            _case(suite, result, base if n == 0 else f"{base}#{n + 1}")
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )
