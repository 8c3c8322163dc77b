"""Human-readable text through rich; plain when color is off."""

from __future__ import annotations

import io
from collections.abc import Mapping
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
    if isinstance(value, list):
        if len(value) <= 8 and all(not isinstance(v, (dict, list)) for v in value):
            return "[" + ", ".join(_fmt_metric(v) for v in value) + "]"
        kind = "entries" if any(isinstance(v, (dict, list)) for v in value) else "values"
        return f"[{len(value)} {kind}]"
    if value is None:
        return "-"
    return str(value)


def _flatten(
    metrics: Mapping[str, Any], prefix: str = "", full: bool = False
) -> list[tuple[str, str]]:
    """Nested metrics as dotted keys with readable values, every level of nesting; long
    lists are summarized (`[80 values]`) unless `full`."""
    rows: list[tuple[str, str]] = []
    for key in sorted(metrics):
        value = metrics[key]
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            rows.extend(_flatten(value, name + ".", full))
        elif isinstance(value, Mapping):
            rows.append((name, "{}"))
        elif full and isinstance(value, list):
            rows.append((name, "[" + ", ".join(_fmt_metric(v) for v in value) + "]"))
        else:
            rows.append((name, _fmt_metric(value)))
    return rows


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
            # -v: every metric, every level; -vv also prints long lists in full
            table = Table(show_header=False, box=None, padding=(0, 2))
            for key, value in _flatten(result.metrics, full=verbosity > 1):
                # Text, not str: a value such as "[req-B:0, req-R:0]" is data, not rich markup
                table.add_row(Text(f"  {key}"), Text(value, overflow="fold"))
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
