"""What several renderers need to say the same thing: paths people can open, errors apart
from notes, problem groups in a fixed order, the location a result points at.

Paths: a report never shows an absolute path. One under the working directory (where the gate
ran: a CI job's checkout) is written relative to it, one outside it relative with `..`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from cbaudit.model import CheckResult, CheckStatus, Finding, Location, Report, Severity

#: The order problems are listed in: what blocks publication first, then what did not run.
PROBLEM_ORDER = (CheckStatus.ERROR, CheckStatus.FAILED, CheckStatus.NOT_RUN)
#: Worst first, for a group's status (a loop, a claim backed by several checks).
SEVERITY_ORDER = (CheckStatus.ERROR, CheckStatus.FAILED, CheckStatus.NOT_RUN, CheckStatus.PASSED)
LABEL = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "not_run": "NOT RUN"}


def display_path(path: str, cwd: Path | None = None) -> str:
    """`path` as a report shows it: relative (POSIX separators), never absolute."""
    p = Path(path)
    if not p.is_absolute():
        return p.as_posix()
    base = cwd if cwd is not None else Path(os.getcwd())
    try:
        return Path(os.path.relpath(p, base)).as_posix()
    except ValueError:  # another drive: no relative path exists
        return p.as_posix()


def render_location(loc: Location) -> str:
    """`file:line:col#/pointer` with the file as `display_path` writes it."""
    shown = Location(
        file=display_path(loc.file) if loc.file else None,
        pointer=loc.pointer,
        line=loc.line,
        column=loc.column,
    )
    return shown.render()


def errors(result: CheckResult) -> list[Finding]:
    """The findings that fail a check."""
    return [f for f in result.findings if f.severity is Severity.ERROR]


def notes(result: CheckResult) -> list[Finding]:
    """Warnings and notes: context, never a reason the check failed."""
    return [f for f in result.findings if f.severity is not Severity.ERROR]


def worst(statuses: Iterable[str]) -> str:
    present = set(statuses)
    for status in SEVERITY_ORDER:
        if status.value in present:
            return status.value
    return CheckStatus.PASSED.value


def problems(report: Report) -> list[tuple[CheckStatus, list[CheckResult]]]:
    """Errored, failed and not-run results, one group per status (never interleaved)."""
    out: list[tuple[CheckStatus, list[CheckResult]]] = []
    for status in PROBLEM_ORDER:
        group = [r for r in report.results if r.outcome is status]
        if group:
            out.append((status, group))
    return out


def primary_location(result: CheckResult) -> Location | None:
    """Where a result points: its first located error, else the check's declaration (a
    passing or not-run check is about its declaration), else its first located finding."""
    for f in errors(result):
        if f.location.file:
            return f.location
    if result.declared_at is not None and result.declared_at.file:
        return result.declared_at
    for f in result.findings:
        if f.location.file:
            return f.location
    return None
