"""Human-readable text: rich styles on a terminal, plain lines otherwise.

A report is first laid out as lines of (text, style) spans and metric tables. Without color
(the usual CI run) the lines are joined as they are, and a metric table whose cells are
printable ASCII and fit the width is laid out the way rich lays it out, all without loading
rich; otherwise rich prints them. Both give the same characters (tests hold them equal): every
line is printed unwrapped, so a long finding stays on one line.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


Span = tuple[str, str]
"""A piece of a line and its rich style ("" for none)."""


@dataclass(frozen=True)
class Line:
    """One printed line."""

    spans: tuple[Span, ...]

    def plain(self) -> str:
        return "".join(text for text, _ in self.spans)


@dataclass(frozen=True)
class Rows:
    """Metric rows (dotted key, value), printed as a two-column table."""

    rows: tuple[tuple[str, str], ...]


def layout(report: Report, verbosity: int) -> list[Line | Rows]:
    """The report as styled lines, with a table of rows where metrics are shown."""
    out: list[Line | Rows] = []
    for result in report.results:
        outcome = result.outcome
        if verbosity < 0 and outcome is CheckStatus.PASSED:
            continue
        head = [
            (f"{outcome.value.upper():8}", _STATUS_STYLE[outcome]),
            (f" {result.check}  {result.subject}", ""),
        ]
        if result.reason:
            head.append((f"  ({result.reason})", "dim"))
        out.append(Line(tuple(head)))
        for finding in result.findings:
            severity = f"{finding.severity.value} {finding.code}"
            out.append(
                Line(
                    (
                        ("  ", ""),
                        (finding.location.render(), "bold"),
                        (": ", ""),
                        (severity, _SEVERITY_STYLE[finding.severity]),
                        (f": {finding.message}", ""),
                    )
                )
            )
        if verbosity > 0 and result.metrics:
            # -v: every metric, every level; -vv also prints long lists in full
            out.append(Rows(tuple(_flatten(result.metrics, full=verbosity > 1))))
    counts = report.counts()
    parts = [f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n]
    verdict = report.verdict.upper()
    style = {"PASS": "green bold", "FAIL": "red bold"}.get(verdict, "red bold")
    checked = ", ".join(parts) if parts else "nothing checked"
    out.append(Line(((verdict, style), (f": {report.command}: {checked}", ""))))
    if report.executor is not None and verbosity > 0:
        ex = report.executor
        hosts = ", ".join(str(h) for h in ex.get("hosts", ())) or "none"
        where = f"ran on {ex.get('kind')} at {ex.get('address')}"
        out.append(Line(((f"{where}: {ex.get('workers')} workers; hosts {hosts}", ""),)))
    return out


WIDTH = 120
"""The console width reports are laid out at."""


def plain_table(rows: Rows) -> list[str] | None:
    """The lines rich prints for `rows` (no box, two spaces of padding around each cell, the
    key indented by two) when every cell is printable ASCII and the table fits `WIDTH`;
    None when rich would have to measure, shrink or fold something."""
    keys = [f"  {key}" for key, _ in rows.rows]
    values = [value for _, value in rows.rows]
    if not keys or not all(c.isascii() and c.isprintable() for c in (*keys, *values)):
        return None
    w1, w2 = max(map(len, keys)), max(map(len, values))
    if 2 + w1 + 4 + w2 + 2 > WIDTH:
        return None
    return [f"  {k:<{w1}}    {v:<{w2}}  " for k, v in zip(keys, values, strict=True)]


def render_text(report: Report, verbosity: int = 0, color: bool = False) -> str:
    blocks = layout(report, verbosity)
    if not color:
        lines: list[str] = []
        for block in blocks:
            table = [block.plain()] if isinstance(block, Line) else plain_table(block)
            if table is None:
                return render_rich(blocks, color)
            lines.extend(table)
        return "".join(line + "\n" for line in lines)
    return render_rich(blocks, color)


def render_rich(blocks: list[Line | Rows], color: bool) -> str:
    """Print laid-out blocks through rich: styles when `color`, tables always."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buf = io.StringIO()
    console = Console(
        file=buf,
        force_terminal=color,
        no_color=not color,
        width=WIDTH,
        highlight=False,
        emoji=False,
    )
    for block in blocks:
        if isinstance(block, Line):
            text = Text()
            for piece, style in block.spans:
                text.append(piece, style=style or None)
            console.print(text, soft_wrap=True)
        else:
            table = Table(show_header=False, box=None, padding=(0, 2))
            for key, value in block.rows:
                # Text, not str: a value such as "[req-B:0, req-R:0]" is data, not rich markup
                table.add_row(Text(f"  {key}"), Text(value, overflow="fold"))
            console.print(table)
    return buf.getvalue()
