"""GitHub Actions workflow commands: annotations plus a full step summary.

Annotations are quiet on green: only the findings of checks that failed or errored become
annotations (errors as `::error`, their warnings and notes as `::warning`/`::notice`). Actions
shows only the first few annotations of a step, so every finding also goes to the step summary
(Markdown) named by `GITHUB_STEP_SUMMARY`. GitHub places an annotation on a file only when
`file=` is relative to the repository root; the caller passes `relpath`, which maps a finding's
file (as its check reported it) to that path, or to None when it cannot (the annotation is then
shown without a file rather than at a wrong one).
"""

from __future__ import annotations

from collections.abc import Callable

from cbaudit.model import CheckStatus, Report, Severity
from cbaudit.report.markdown import render_markdown
from cbaudit.report.view import display_path

#: (a finding's file, the subject of its result) -> the repository-relative path, or None.
RelPath = Callable[[str, str], str | None]

MAX_ANNOTATIONS = 50
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_annotations(
    report: Report, limit: int = MAX_ANNOTATIONS, *, relpath: RelPath | None = None
) -> str:
    """`::error file=..,line=..,title=CODE::message` lines for the first `limit` findings of
    failed and errored checks (none for a passing report)."""
    out: list[str] = []
    blocking = (CheckStatus.FAILED, CheckStatus.ERROR)
    findings = [(f, r.subject) for r in report.results if r.outcome in blocking for f in r.findings]
    for finding, subject in findings[:limit]:
        props = [f"title={_escape_prop(finding.code)}"]
        file: str | None = finding.location.file
        if file:
            file = relpath(file, subject) if relpath is not None else display_path(file)
        if file:
            props.insert(0, f"file={_escape_prop(file)}")
        if finding.location.line is not None:
            props.append(f"line={finding.location.line}")
        if finding.location.column is not None:
            props.append(f"col={finding.location.column}")
        message = finding.message.splitlines()[0] if finding.message else finding.code
        out.append(f"::{_LEVEL[finding.severity]} {','.join(props)}::{_escape_data(message)}")
    hidden = len(findings) - limit
    if hidden > 0:
        out.append(f"::notice title=cbaudit::{hidden} more finding(s) in the step summary")
    return "\n".join(out) + ("\n" if out else "")


def step_summary(report: Report) -> str:
    """The full Markdown report, for `$GITHUB_STEP_SUMMARY`."""
    return render_markdown(report, 0, False)
