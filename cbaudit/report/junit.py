"""JUnit XML: one testsuite per check kind, one testcase per result."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from cbaudit.model import CheckStatus, Report


def render_junit(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del verbosity, color
    suites = ET.Element("testsuites", name=f"cbaudit {report.command}")
    by_check: dict[str, list[int]] = {}
    for i, result in enumerate(report.results):
        by_check.setdefault(result.check, []).append(i)
    seen: dict[str, int] = {}
    for check in sorted(by_check):
        idxs = by_check[check]
        results = [report.results[i] for i in idxs]
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=check,
            tests=str(len(results)),
            failures=str(sum(r.outcome is CheckStatus.FAILED for r in results)),
            errors=str(sum(r.outcome is CheckStatus.ERROR for r in results)),
            skipped=str(sum(r.outcome is CheckStatus.NOT_RUN for r in results)),
        )
        for result in results:
            base = f"{check}[{result.subject}]"
            n = seen.get(base, 0)
            seen[base] = n + 1
            name = base if n == 0 else f"{base}#{n + 1}"
            attrs = {"classname": f"cbaudit.{check}", "name": name}
            first_file = next((f.location.file for f in result.findings if f.location.file), None)
            if first_file:
                attrs["file"] = first_file
            case = ET.SubElement(suite, "testcase", attrs)
            outcome = result.outcome
            body = "\n".join(f.render() for f in result.findings)
            if outcome is CheckStatus.FAILED or outcome is CheckStatus.ERROR:
                tag = "failure" if outcome is CheckStatus.FAILED else "error"
                codes = sorted({f.code for f in result.findings})
                el = ET.SubElement(case, tag, message=", ".join(codes) or outcome.value)
                el.text = body
            elif outcome is CheckStatus.NOT_RUN:
                ET.SubElement(case, "skipped", message=result.reason or "not run")
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )
