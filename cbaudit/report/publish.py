"""Publish-gate reports people read: Markdown, and one self-contained HTML file.

Both work for any report. Gate reports carry a claims table in `summary["claims"]`
(claim, evidence class, backing check, status); results are grouped by the loop their
check declares. The HTML inlines SVG charts (no scripts, no network, no external CSS).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from cbaudit.model import CheckResult, CheckStatus, Report
from cbaudit.report.charts import render_chart

EVIDENCE_NOTES = {
    "derived": "exact arithmetic on declared fixtures",
    "synthetic": "simulated under a declared model",
    "source_reported": "copied from a paper or document, with its coordinates",
    "modeled": "roofline or fitted prediction",
    "measured_cpu": "measured by the runner on a CPU (not GPU evidence)",
    "measured_gpu": "measured by the runner on a GPU, with its manifest",
}
CAVEAT = (
    "Evidence classes are never upgraded by this report. Logical slot occupancy is a "
    "scheduler-level ratio, never GPU utilization."
)
_ICON = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "not_run": "NOT RUN"}


def _loop_of(report: Report) -> dict[str, str]:
    """Map result subject prefixes (bundle:check) to their declared loop."""
    out: dict[str, str] = {}
    for claim in report.summary.get("claims", []) or []:
        key = f"{claim.get('bundle')}:{claim.get('check')}"
        out[key] = str(claim.get("loop") or "other")
    return out


def _group(report: Report) -> list[tuple[str, list[CheckResult]]]:
    loops = _loop_of(report)
    groups: dict[str, list[CheckResult]] = {}
    for r in report.results:
        key = ":".join(r.subject.split(":")[:2])
        groups.setdefault(loops.get(key, r.check if not loops else "other"), []).append(r)
    return sorted(groups.items(), key=lambda kv: _natural(kv[0]))


def _natural(text: str) -> list[Any]:
    """Sort key that puts "Loop 2" before "Loop 10"."""
    import re

    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", text)]


def _md_cell(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del color
    counts = report.counts()
    lines = [
        f"# cbaudit {report.command}: {report.verdict.upper()}",
        "",
        f"cbaudit {report.tool_version} · exit code {int(report.exit_code)} · "
        + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items()),
        "",
        f"> {CAVEAT}",
        "",
    ]
    claims = report.summary.get("claims") or []
    if claims:
        lines += [
            "## Claims",
            "",
            "| status | claim | evidence class | check |",
            "|---|---|---|---|",
        ]
        for c in claims:
            lines.append(
                f"| {_ICON.get(str(c.get('status')), c.get('status'))} | "
                f"{_md_cell(c.get('claim') or c.get('title') or '')} | "
                f"{_md_cell(c.get('evidence_class'))} | `{c.get('bundle')}:{c.get('check')}` |"
            )
        lines.append("")
    for loop, results in _group(report):
        lines += [f"## {loop}", "", "| status | check | subject | findings |", "|---|---|---|---|"]
        for r in results:
            codes = ", ".join(sorted({f.code for f in r.findings})) or (r.reason or "")
            status = _ICON[r.outcome.value]
            lines.append(f"| {status} | {r.check} | `{_md_cell(r.subject)}` | {_md_cell(codes)} |")
        lines.append("")
        failing = [r for r in results if r.findings and r.outcome is not CheckStatus.PASSED]
        for r in failing if verbosity >= 0 else []:
            lines.append(f"**{_md_cell(r.subject)}**")
            lines.append("")
            for f in r.findings:
                lines.append(
                    f"- `{f.code}` at `{f.location.render()}`: {f.message.splitlines()[0]}"
                )
            lines.append("")
        charts = sum(len(r.charts) for r in results)
        if charts:
            lines += [f"_{charts} chart(s) for this section are in the HTML report._", ""]
    lines += ["## Evidence classes", ""]
    lines += [f"- **{k}**: {v}" for k, v in EVIDENCE_NOTES.items()]
    lines += ["", "## Inputs", ""]
    lines += [f"- `{d.path}` sha256 `{d.sha256}`" for d in report.inputs] or ["- (none)"]
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;width:100%;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f5f5f5} code{font-size:.95em}
.badge{display:inline-block;padding:.1em .6em;border-radius:.3em;font-weight:bold;color:#fff}
.passed,.pass{background:#2e7d32} .failed,.fail{background:#c62828}
.error{background:#6a1b1a} .not_run{background:#b26a00}
.caveat{background:#fff8e1;border-left:4px solid #f0b429;padding:.5em 1em}
.charts{display:flex;flex-wrap:wrap;gap:1em} .chart{margin:.8em 0}
.finding{font-family:monospace;white-space:pre-wrap;font-size:.85em}
"""


def _badge(status: str) -> str:
    return (
        f'<span class="badge {escape(status)}">{escape(_ICON.get(status, status.upper()))}</span>'
    )


def _metrics_table(metrics: Mapping[str, Any]) -> str:
    rows = []
    for key in sorted(metrics):
        value = metrics[key]
        if isinstance(value, (dict, list)) and len(str(value)) > 160:
            continue
        rows.append(f"<tr><td><code>{escape(key)}</code></td><td>{escape(str(value))}</td></tr>")
    if not rows:
        return ""
    return "<details><summary>metrics</summary><table>" + "".join(rows) + "</table></details>"


def render_html(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del color
    counts = report.counts()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>cbaudit {escape(report.command)}: {escape(report.verdict)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>cbaudit {escape(report.command)} {_badge(report.verdict)}</h1>",
        f"<p>cbaudit {escape(report.tool_version)} · exit code {int(report.exit_code)} · "
        + " · ".join(f"{n} {escape(k.replace('_', ' '))}" for k, n in counts.items())
        + "</p>",
        f'<p class="caveat">{escape(CAVEAT)}</p>',
    ]
    claims = report.summary.get("claims") or []
    if claims:
        parts.append(
            "<h2>Claims</h2><table><tr><th>status</th><th>claim</th>"
            "<th>evidence class</th><th>backing check</th></tr>"
        )
        for c in claims:
            parts.append(
                f"<tr><td>{_badge(str(c.get('status')))}</td>"
                f"<td>{escape(str(c.get('claim') or c.get('title') or ''))}</td>"
                f"<td>{escape(str(c.get('evidence_class') or ''))}</td>"
                f"<td><code>{escape(str(c.get('bundle')))}:{escape(str(c.get('check')))}</code></td></tr>"
            )
        parts.append("</table>")
    for loop, results in _group(report):
        parts.append(f"<h2>{escape(loop)}</h2>")
        parts.append(
            "<table><tr><th>status</th><th>check</th><th>subject</th>"
            "<th>evidence</th><th>findings</th></tr>"
        )
        for r in results:
            findings = "".join(
                f'<div class="finding">{escape(f.code)} at {escape(f.location.render())}: '
                f"{escape(f.message)}</div>"
                for f in r.findings
            ) or escape(r.reason or "")
            parts.append(
                f"<tr><td>{_badge(r.outcome.value)}</td><td>{escape(r.check)}</td>"
                f"<td><code>{escape(r.subject)}</code>"
                f"{_metrics_table(r.metrics) if verbosity > 0 else ''}</td>"
                f"<td>{escape(r.evidence_class.value)}</td><td>{findings}</td></tr>"
            )
        parts.append("</table>")
        charts = [chart for r in results for chart in r.charts]
        if charts:
            parts.append('<div class="charts">')
            parts += [f'<div class="chart">{render_chart(chart)}</div>' for chart in charts]
            parts.append("</div>")
    parts.append("<h2>Evidence classes</h2><ul>")
    parts += [f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in EVIDENCE_NOTES.items()]
    parts.append("</ul><h2>Inputs</h2><ul>")
    parts += [
        f"<li><code>{escape(d.path)}</code> sha256 <code>{d.sha256}</code></li>"
        for d in report.inputs
    ]
    parts.append("</ul></body></html>")
    return "\n".join(parts) + "\n"
