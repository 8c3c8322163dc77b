"""The publish-gate report in Markdown, for reviews and CI step summaries.

A short summary comes first and reads on its own: the verdict, what blocks publication (one
line per errored or failed check: its first error and where), what did not run here. The full
detail follows behind `<details>`: every finding of those checks (multi-line messages such as
drift diffs in code blocks), the loops, the claims, and the inputs with their sha256. No
absolute path is ever written (see `view.display_path`).
"""

from __future__ import annotations

from typing import Any

from cbaudit.model import CheckResult, Finding, Report
from cbaudit.report.publish import (
    CAVEAT,
    EVIDENCE_NOTES,
    blocking,
    counts_line,
    loops,
    not_run,
    verdict_sentence,
)
from cbaudit.report.view import (
    LABEL,
    display_path,
    errors,
    notes,
    primary_location,
    render_location,
)

#: Rows of the summary's blocking table; the rest are counted and left to the details.
SUMMARY_ROWS = 25


def _md(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _first_line(f: Finding) -> str:
    return f.message.splitlines()[0] if f.message else ""


def _where(r: CheckResult) -> str:
    loc = primary_location(r)
    return _code(render_location(loc)) if loc is not None and loc.file else ""


def _summary(report: Report) -> list[str]:
    lines = [
        f"# cbaudit {report.command}: {report.verdict.upper()}",
        "",
        f"**{verdict_sentence(report)}**",
        "",
        f"cbaudit {report.tool_version} · exit code {int(report.exit_code)} · "
        + counts_line(report.counts()),
        "",
    ]
    rows = [(s, r) for s, rs in blocking(report) for r in rs]
    if rows:
        lines += [
            "## What blocks publication",
            "",
            "| status | check | first error | where |",
            "|---|---|---|---|",
        ]
        for status, r in rows[:SUMMARY_ROWS]:
            errs = errors(r)
            first = f"{_code(errs[0].code)}: {_md(_first_line(errs[0]))}" if errs else _md(r.reason)
            more = f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""
            lines.append(
                f"| {LABEL[status.value]} | {_code(r.subject)} | {first}{more} | {_where(r)} |"
            )
        if len(rows) > SUMMARY_ROWS:
            lines.append(
                f"| | _and {len(rows) - SUMMARY_ROWS} more: see the full report below_ | | |"
            )
        lines.append("")
    skipped = not_run(report)
    if skipped:
        lines += ["## Did not run here (not a pass)", ""]
        lines += [f"- {_code(r.subject)} ({r.check}): {_md(r.reason)}" for r in skipped]
        lines.append("")
    lines += [f"> {CAVEAT}", ""]
    return lines


def _finding_lines(f: Finding) -> list[str]:
    head = f"- {f.severity.value} {_code(f.code)} at {_code(render_location(f.location))}"
    body = f.message.splitlines()
    if len(body) <= 1:
        return [f"{head}: {_md(f.message)}"]
    return [f"{head}: {_md(body[0])}", "", "  ```diff", *[f"  {ln}" for ln in body[1:]], "  ```"]


def _problem_detail(report: Report) -> list[str]:
    out: list[str] = []
    for status, results in blocking(report):
        out += [f"### {LABEL[status.value]} ({len(results)})", ""]
        for r in results:
            out.append(f"#### {_code(r.subject)} ({r.check})")
            out.append("")
            if r.reason:
                out += [_md(r.reason), ""]
            for f in errors(r):
                out += _finding_lines(f)
            extra = notes(r)
            if extra:
                out += ["", f"Notes and warnings ({len(extra)}):", ""]
                for f in extra:
                    out += _finding_lines(f)
            out.append("")
    return out


def render_markdown(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del color
    lines = _summary(report)
    lines += [
        "<details>",
        "<summary>Full report: every finding, loops, claims, inputs</summary>",
        "",
    ]
    detail = _problem_detail(report)
    if detail:
        lines += ["## Findings of errored and failed checks", "", *detail]
    groups = loops(report)
    lines += [
        "## Loops",
        "",
        "| loop | status | checks | passed | failed | errors | not run | evidence |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g in groups:
        c = g.counts()
        lines.append(
            f"| {_md(g.name)} | {LABEL[g.status]} | {len(g.results)} | {c['passed']} |"
            f" {c['failed']} | {c['error']} | {c['not_run']} | {', '.join(g.classes)} |"
        )
    lines.append("")
    claims = [cl for g in groups for cl in g.claims]
    if claims:
        lines += [
            "## Claims",
            "",
            "| status | loop | claim | evidence | backed by |",
            "|---|---|---|---|---|",
        ]
        for cl in claims:
            backing = _code(cl.checks[0]) + (
                f" and {len(cl.checks) - 1} more" if len(cl.checks) > 1 else ""
            )
            lines.append(
                f"| {LABEL.get(cl.status, '?')} | {_md(cl.loop)} | {_md(cl.text)} | "
                f"{', '.join(sorted(cl.classes))} | {backing} |"
            )
        lines.append("")
    if verbosity > 1:
        for g in groups:
            if not g.results:
                continue
            lines += [
                f"### {g.name}: every check",
                "",
                "| status | check | subject | findings |",
                "|---|---|---|---|",
            ]
            for _, rs in g.grouped():
                for r in rs:
                    codes = ", ".join(sorted({f.code for f in r.findings})) or (r.reason or "")
                    lines.append(
                        f"| {LABEL[r.outcome.value]} | {r.check} | {_code(r.subject)} |"
                        f" {_md(codes)} |"
                    )
            lines.append("")
    charts = sum(len(g.charts) for g in groups)
    if charts:
        lines += [f"_{charts} chart(s) are in the HTML report (`--html`)._", ""]
    lines += ["## Evidence classes", ""]
    lines += [f"- **{k}**: {v}" for k, v in EVIDENCE_NOTES.items()]
    lines += ["", "## Inputs", ""]
    lines += [f"- {_code(display_path(d.path))} sha256 `{d.sha256}`" for d in report.inputs] or [
        "- (none)"
    ]
    lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
