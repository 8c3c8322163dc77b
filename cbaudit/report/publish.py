"""Publish-gate reports people read: Markdown, and one self-contained HTML file.

Both work for any report. The reader sees, in order: the verdict; what failed or could not run
(with every finding); a per-loop summary; the claims, grouped so that fifty negative fixtures
backing one sentence read as one row; and per-loop detail with charts. Gate reports carry the
claims in `summary["claims"]` (claim, loop, evidence class, backing check, status). The HTML
inlines SVG charts: no scripts, no network, no external CSS.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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
    "scheduler-level ratio, never GPU utilization. A check that could not run here is "
    "reported as not run, never as passed."
)
_ICON = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "not_run": "NOT RUN"}
_SEVERITY = [CheckStatus.ERROR, CheckStatus.FAILED, CheckStatus.NOT_RUN, CheckStatus.PASSED]


def _worst(statuses: Iterable[str]) -> str:
    present = set(statuses)
    for status in _SEVERITY:
        if status.value in present:
            return status.value
    return CheckStatus.PASSED.value


def _natural(text: str) -> list[Any]:
    """Sort key that puts "Loop 2" before "Loop 10"."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", text)]


@dataclass
class _Loop:
    name: str
    results: list[CheckResult] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in CheckStatus}
        for r in self.results:
            out[r.outcome.value] += 1
        return out

    @property
    def classes(self) -> list[str]:
        return sorted({r.evidence_class.value for r in self.results})

    @property
    def charts(self) -> list[Mapping[str, Any]]:
        return [c for r in self.results for c in r.charts]


@dataclass
class _Claim:
    loop: str
    text: str
    checks: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    classes: set[str] = field(default_factory=set)


def _loops(report: Report) -> list[_Loop]:
    claims = report.summary.get("claims") or []
    loop_of = {f"{c.get('bundle')}:{c.get('check')}": str(c.get("loop") or "other") for c in claims}
    groups: dict[str, _Loop] = {}
    for r in report.results:
        key = ":".join(r.subject.split(":")[:2])
        name = loop_of.get(key, "other" if loop_of else r.check)
        groups.setdefault(name, _Loop(name)).results.append(r)
    return sorted(groups.values(), key=lambda g: _natural(g.name))


def _claims(report: Report) -> list[_Claim]:
    grouped: dict[tuple[str, str], _Claim] = {}
    for c in report.summary.get("claims") or []:
        text = str(c.get("claim") or c.get("title") or c.get("check"))
        loop = str(c.get("loop") or "other")
        item = grouped.setdefault((loop, text), _Claim(loop, text))
        item.checks.append(f"{c.get('bundle')}:{c.get('check')}")
        item.statuses.append(str(c.get("status")))
        if c.get("evidence_class"):
            item.classes.add(str(c["evidence_class"]))
    return sorted(grouped.values(), key=lambda c: (_natural(c.loop), c.checks[0]))


def _problems(report: Report) -> list[CheckResult]:
    return [r for r in report.results if r.outcome is not CheckStatus.PASSED]


def _counts_line(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n) or "nothing"


# --------------------------------------------------------------------------- Markdown


def _md(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del color
    lines = [
        f"# cbaudit {report.command}: {report.verdict.upper()}",
        "",
        f"cbaudit {report.tool_version} · exit code {int(report.exit_code)} · "
        + _counts_line(report.counts()),
        "",
        f"> {CAVEAT}",
        "",
    ]
    problems = _problems(report)
    if problems:
        lines += ["## Failed, errored or not run", ""]
        for r in problems:
            lines.append(
                f"- **{_ICON[r.outcome.value]}** `{_md(r.subject)}` ({r.check})"
                + (f": {_md(r.reason)}" if r.reason else "")
            )
            for f in r.findings:
                first = f.message.splitlines()[0] if f.message else ""
                lines.append(f"  - `{f.code}` at `{f.location.render()}`: {_md(first)}")
        lines.append("")
    loops = _loops(report)
    lines += [
        "## Loops",
        "",
        "| loop | checks | passed | failed | errors | not run | evidence |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in loops:
        c = g.counts()
        lines.append(
            f"| {_md(g.name)} | {len(g.results)} | {c['passed']} | {c['failed']} | {c['error']}"
            f" | {c['not_run']} | {', '.join(g.classes)} |"
        )
    lines.append("")
    claims = _claims(report)
    if claims:
        lines += [
            "## Claims",
            "",
            "| status | loop | claim | evidence | backed by |",
            "|---|---|---|---|---|",
        ]
        for cl in claims:
            backing = f"`{cl.checks[0]}`" + (
                f" and {len(cl.checks) - 1} more" if len(cl.checks) > 1 else ""
            )
            lines.append(
                f"| {_ICON.get(_worst(cl.statuses), '?')} | {_md(cl.loop)} | {_md(cl.text)} | "
                f"{', '.join(sorted(cl.classes))} | {backing} |"
            )
        lines.append("")
    if verbosity > 0:
        for g in loops:
            lines += [
                f"## {g.name}",
                "",
                "| status | check | subject | findings |",
                "|---|---|---|---|",
            ]
            for r in g.results:
                codes = ", ".join(sorted({f.code for f in r.findings})) or (r.reason or "")
                lines.append(
                    f"| {_ICON[r.outcome.value]} | {r.check} | `{_md(r.subject)}` | {_md(codes)} |"
                )
            lines.append("")
    charts = sum(len(g.charts) for g in loops)
    if charts:
        lines += [f"_{charts} chart(s) are in the HTML report (`--html`)._", ""]
    lines += ["## Evidence classes", ""]
    lines += [f"- **{k}**: {v}" for k, v in EVIDENCE_NOTES.items()]
    lines += ["", "## Inputs", ""]
    lines += [f"- `{d.path}` sha256 `{d.sha256}`" for d in report.inputs] or ["- (none)"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- HTML

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1150px;color:#222;padding:0 1em}
h1{font-size:1.6em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;width:100%;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f5f5f5} code{font-size:.9em;word-break:break-all}
.badge{display:inline-block;padding:.1em .6em;border-radius:.3em;font-weight:bold;color:#fff}
.passed,.pass{background:#2e7d32} .failed,.fail{background:#c62828}
.error{background:#6a1b1a} .not_run{background:#b26a00}
.caveat{background:#fff8e1;border-left:4px solid #f0b429;padding:.5em 1em}
.charts{display:flex;flex-wrap:wrap;gap:1em}
.chart{margin:.4em 0}
.finding{font-family:monospace;white-space:pre-wrap;font-size:.85em;margin:.2em 0}
.num{text-align:right} details{margin:.5em 0} summary{cursor:pointer;font-weight:bold}
"""


def _badge(status: str) -> str:
    return (
        f'<span class="badge {escape(status)}">{escape(_ICON.get(status, status.upper()))}</span>'
    )


def _findings_html(r: CheckResult) -> str:
    return "".join(
        f'<div class="finding">{escape(f.code)} at {escape(f.location.render())}: '
        f"{escape(f.message)}</div>"
        for f in r.findings
    ) or escape(r.reason or "")


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


def _results_table(results: list[CheckResult], verbosity: int) -> str:
    rows = [
        "<table><tr><th>status</th><th>check</th><th>subject</th><th>evidence</th>"
        "<th>findings</th></tr>"
    ]
    for r in results:
        metrics = _metrics_table(r.metrics) if verbosity > 0 else ""
        rows.append(
            f"<tr><td>{_badge(r.outcome.value)}</td><td>{escape(r.check)}</td>"
            f"<td><code>{escape(r.subject)}</code>{metrics}</td>"
            f"<td>{escape(r.evidence_class.value)}</td><td>{_findings_html(r)}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def render_html(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del color
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>cbaudit {escape(report.command)}: {escape(report.verdict)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>cbaudit {escape(report.command)} {_badge(report.verdict)}</h1>",
        f"<p>cbaudit {escape(report.tool_version)} · exit code {int(report.exit_code)} · "
        f"{escape(_counts_line(report.counts()))}</p>",
        f'<p class="caveat">{escape(CAVEAT)}</p>',
    ]
    problems = _problems(report)
    if problems:
        parts.append("<h2>Failed, errored or not run</h2>")
        parts.append(_results_table(problems, verbosity))
    loops = _loops(report)
    parts.append(
        "<h2>Loops</h2><table><tr><th>loop</th><th>status</th><th class=num>checks</th>"
        "<th class=num>passed</th><th class=num>failed</th><th class=num>errors</th>"
        "<th class=num>not run</th><th>evidence classes</th></tr>"
    )
    for g in loops:
        c = g.counts()
        status = _worst(r.outcome.value for r in g.results)
        parts.append(
            f'<tr><td><a href="#loop-{escape(_slug(g.name))}">{escape(g.name)}</a></td>'
            f"<td>{_badge(status)}</td><td class=num>{len(g.results)}</td>"
            f"<td class=num>{c['passed']}</td><td class=num>{c['failed']}</td>"
            f"<td class=num>{c['error']}</td><td class=num>{c['not_run']}</td>"
            f"<td>{escape(', '.join(g.classes))}</td></tr>"
        )
    parts.append("</table>")
    claims = _claims(report)
    if claims:
        parts.append(
            "<h2>Claims</h2><table><tr><th>status</th><th>loop</th><th>claim</th>"
            "<th>evidence class</th><th>backed by</th></tr>"
        )
        for cl in claims:
            more = f" and {len(cl.checks) - 1} more" if len(cl.checks) > 1 else ""
            parts.append(
                f"<tr><td>{_badge(_worst(cl.statuses))}</td><td>{escape(cl.loop)}</td>"
                f"<td>{escape(cl.text)}</td><td>{escape(', '.join(sorted(cl.classes)))}</td>"
                f"<td><code>{escape(cl.checks[0])}</code>{escape(more)}</td></tr>"
            )
        parts.append("</table>")
    for g in loops:
        parts.append(f'<h2 id="loop-{escape(_slug(g.name))}">{escape(g.name)}</h2>')
        if g.charts:
            parts.append('<div class="charts">')
            parts += [f'<div class="chart">{render_chart(chart)}</div>' for chart in g.charts]
            parts.append("</div>")
        c = g.counts()
        parts.append(
            f"<details><summary>{len(g.results)} checks: {escape(_counts_line(c))}</summary>"
            f"{_results_table(g.results, verbosity)}</details>"
        )
    parts.append("<h2>Evidence classes</h2><ul>")
    parts += [f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in EVIDENCE_NOTES.items()]
    parts.append("</ul><h2>Inputs</h2><ul>")
    parts += [
        f"<li><code>{escape(d.path)}</code> sha256 <code>{d.sha256}</code></li>"
        for d in report.inputs
    ]
    parts.append("</ul></body></html>")
    return "\n".join(parts) + "\n"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
