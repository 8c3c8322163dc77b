"""Human-readable text through rich; plain when color is off."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cbaudit.model import CheckStatus, Report, Severity

_STATUS_STYLE = {
    CheckStatus.PASSED: "green",
    CheckStatus.FAILED: "red",
    CheckStatus.ERROR: "red bold",
    CheckStatus.NOT_RUN: "yellow",
}
_SEVERITY_STYLE = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.NOTE: "cyan"}


def _fmt_metric(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, dict)):
        text = repr(value)
        return text if len(text) <= 100 else text[:97] + "..."
    return str(value)


def render_text(report: Report, verbosity: int = 0, color: bool = False) -> str:
    buf = io.StringIO()
    console = Console(
        file=buf,
        force_terminal=color,
        no_color=not color,
        width=120,
        highlight=False,
        emoji=False,
    )
    for result in report.results:
        outcome = result.outcome
        if verbosity < 0 and outcome is CheckStatus.PASSED:
            continue
        line = Text()
        line.append(f"{outcome.value.upper():8}", style=_STATUS_STYLE[outcome])
        line.append(f" {result.check}  {result.subject}")
        if result.reason:
            line.append(f"  ({result.reason})", style="dim")
        console.print(line, soft_wrap=True)
        for finding in result.findings:
            ftext = Text("  ")
            ftext.append(finding.location.render(), style="bold")
            ftext.append(": ")
            ftext.append(
                f"{finding.severity.value} {finding.code}", style=_SEVERITY_STYLE[finding.severity]
            )
            ftext.append(f": {finding.message}")
            console.print(ftext, soft_wrap=True)
        if verbosity > 0 and result.metrics:
            table = Table(show_header=False, box=None, padding=(0, 2))
            for key in sorted(result.metrics):
                table.add_row(f"  {key}", _fmt_metric(result.metrics[key]))
            console.print(table)
    counts = report.counts()
    parts = [f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n]
    verdict = report.verdict.upper()
    style = {"PASS": "green bold", "FAIL": "red bold"}.get(verdict, "red bold")
    summary = Text()
    summary.append(verdict, style=style)
    summary.append(f": {report.command}: {', '.join(parts) if parts else 'nothing checked'}")
    console.print(summary)
    return buf.getvalue()
