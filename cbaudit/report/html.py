"""The publish-gate report as one self-contained HTML file (inline CSS, SVG and one small
script; nothing is fetched).

Order: the verdict and what blocks publication (errored, then failed checks, each with its
first error and a link to its full row), what did not run here, then a sticky bar whose status
counts filter every row (and link to their sections when scripts are off) with a search box,
then one collapsible section per loop: its claims, charts, kill matrix (summarized per operator
family and per fixture, the full matrix behind a disclosure) and its checks grouped by status.
Findings are structured rows (code, location, message), errors apart from notes and warnings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from cbaudit.model import CheckResult, CheckStatus, Finding, Report
from cbaudit.report.charts import CELL_GLYPHS, render_chart
from cbaudit.report.html_assets import CSS, JS
from cbaudit.report.publish import (
    CAVEAT,
    EVIDENCE_NOTES,
    Loop,
    blocking,
    counts_line,
    loops,
    not_run,
    slug,
    verdict_sentence,
)
from cbaudit.report.view import LABEL, display_path, errors, notes, render_location

_GROUP_TITLE = {
    "error": "Errors (unusable input or a crash)",
    "failed": "Failed",
    "not_run": "Not run here",
    "passed": "Passed",
}
_CHIP_COLOUR = {
    "error": "var(--error)",
    "failed": "var(--fail)",
    "not_run": "var(--notrun)",
    "passed": "var(--pass)",
}
_BREAK_AFTER = re.compile(r"([:/._#=,])")
_KM_CLASS = {
    "killed": "km-k",
    "killed_by_other": "km-o",
    "killed_by_schema": "km-s",
    "equivalent": "km-eq",
    "timeout": "km-t",
    "survived": "km-bad",
    "oracle_error": "km-bad",
    "crashed": "km-bad",
    "not_applicable": "km-na",
}
_KM_BAD = ("survived", "oracle_error", "crashed")
_KM_ORDER = [
    "killed",
    "killed_by_other",
    "killed_by_schema",
    "survived",
    "timeout",
    "oracle_error",
    "crashed",
    "equivalent",
]


def wrap(text: str) -> str:
    """Escaped text with break opportunities after `: / . _ # = ,`, so a long identifier or
    path wraps between its parts instead of mid-word."""
    return _BREAK_AFTER.sub(r"\1<wbr>", escape(text))


def _badge(status: str) -> str:
    return f'<span class="badge b-{escape(status)}">{escape(LABEL.get(status, status))}</span>'


def _verdict_badge(verdict: str) -> str:
    return f'<span class="badge b-{escape(verdict)}">{escape(verdict.upper())}</span>'


class _Ids:
    """Unique element ids for check rows."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self.by_result: dict[int, str] = {}

    def of(self, r: CheckResult) -> str:
        key = id(r)
        if key not in self.by_result:
            base = "c-" + slug(r.subject)
            n = self.seen.get(base, 0)
            self.seen[base] = n + 1
            self.by_result[key] = base if n == 0 else f"{base}-{n + 1}"
        return self.by_result[key]


# --------------------------------------------------------------------------- findings


def _finding(f: Finding) -> str:
    first, _, rest = f.message.partition("\n")
    loc = render_location(f.location)
    body = f'<span class="msg">{escape(first)}</span>'
    if rest.strip():
        body += f'<pre class="msg">{escape(rest)}</pre>'
    return (
        f'<li class="finding sev-{f.severity.value}"><code class="code">{escape(f.code)}</code>'
        f' <span class="loc" title="{escape(loc)}">{wrap(loc)}</span>{body}</li>'
    )


def _findings(r: CheckResult) -> str:
    out = []
    errs = errors(r)
    if errs:
        out.append('<ul class="findings">' + "".join(_finding(f) for f in errs) + "</ul>")
    if r.reason:
        out.append(f'<div class="reason">{escape(r.reason)}</div>')
    rest = notes(r)
    if rest:
        n = len(rest)
        out.append(
            f'<details class="notes"><summary>{n} note{"s" if n != 1 else ""} and'
            f" warning{'s' if n != 1 else ''} (not why it {'failed' if errs else 'ran'})"
            '</summary><ul class="findings">'
            + "".join(_finding(f) for f in rest)
            + "</ul></details>"
        )
    return "".join(out)


def _metric_rows(metrics: Mapping[str, Any], prefix: str = "") -> list[str]:
    rows: list[str] = []
    for key in sorted(metrics):
        value = metrics[key]
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and len(prefix) < 60:
            rows.extend(_metric_rows(value, name + "."))
            continue
        text = str(value)
        if len(text) > 200:
            continue
        rows.append(f"<tr><td>{wrap(name)}</td><td>{escape(text)}</td></tr>")
    return rows


def _metrics(r: CheckResult) -> str:
    rows = _metric_rows(r.metrics)
    if not rows:
        return ""
    return (
        f'<details class="metrics"><summary>metrics ({len(rows)})</summary>'
        '<table><colgroup><col style="width:45%"><col></colgroup>'
        + "".join(rows)
        + "</table></details>"
    )


# --------------------------------------------------------------------------- top of the page


#: Blocking checks listed per status before the rest fold into "and N more".
BLOCKERS_SHOWN = 12


def _blocker(r: CheckResult, status: CheckStatus, ids: _Ids) -> str:
    errs = errors(r)
    first = errs[0] if errs else None
    if first is not None:
        more = f" <em>(+{len(errs) - 1} more)</em>" if len(errs) > 1 else ""
        line = first.message.splitlines()[0] if first.message else ""
        detail = (
            f'<span class="first"><code class="code">{escape(first.code)}</code> '
            f'<span class="loc">{wrap(render_location(first.location))}</span> '
            f"{escape(line)}{more}</span>"
        )
    else:
        detail = f'<span class="first reason">{escape(r.reason or "")}</span>'
    return (
        f'<li class="row blocker" data-status="{status.value}">{_badge(status.value)} '
        f'<a href="#{ids.of(r)}">{wrap(r.subject)}</a> '
        f'<span class="reason">{escape(r.check)}</span>{detail}</li>'
    )


def _blockers(report: Report, ids: _Ids) -> str:
    groups = blocking(report)
    if not groups:
        return (
            '<section id="blocking"><h2>What blocks publication</h2>'
            "<p>Nothing: every check that ran passed.</p></section>"
        )
    out = ['<section id="blocking"><h2>What blocks publication</h2>']
    for status, results in groups:
        items = [_blocker(r, status, ids) for r in results]
        shown, rest = items[:BLOCKERS_SHOWN], items[BLOCKERS_SHOWN:]
        more = (
            f'<details class="more"><summary>and {len(rest)} more</summary>'
            f'<ul class="blockers">{"".join(rest)}</ul></details>'
            if rest
            else ""
        )
        out.append(
            f'<div class="grouped"><h3 id="blockers-{status.value}">{_badge(status.value)} '
            f"{escape(_GROUP_TITLE[status.value])} ({len(results)})</h3>"
            f'<ul class="blockers">{"".join(shown)}</ul>{more}</div>'
        )
    out.append("</section>")
    return "".join(out)


def _not_run(report: Report, ids: _Ids) -> str:
    skipped = not_run(report)
    if not skipped:
        return ""
    items = "".join(
        f'<li class="row blocker" data-status="not_run">{_badge("not_run")} '
        f'<a href="#{ids.of(r)}">{wrap(r.subject)}</a> <span class="reason">{escape(r.check)}:'
        f" {escape(r.reason or 'not run')}</span></li>"
        for r in skipped
    )
    return (
        '<section id="not-run"><h2>Did not run here (not a pass)</h2>'
        f'<ul class="blockers">{items}</ul></section>'
    )


def _bar(report: Report) -> str:
    c = report.counts()
    chips = [
        f'<a class="chip" href="#loops" data-filter="all" aria-pressed="true">All'
        f" <b>{len(report.results)}</b></a>"
    ]
    targets = {
        "error": "#blockers-error",
        "failed": "#blockers-failed",
        "not_run": "#not-run",
        "passed": "#loops",
    }
    for status in ("error", "failed", "not_run", "passed"):
        n = c[status]
        chips.append(
            f'<a class="chip{" zero" if not n else ""}" href="{targets[status]}"'
            f' data-filter="{status}" aria-pressed="false">'
            f'<span class="dot" style="background:{_CHIP_COLOUR[status]}"></span>'
            f"{escape(LABEL[status])} <b>{n}</b></a>"
        )
    return (
        '<nav class="bar" aria-label="Filter checks by status or text">'
        + "".join(chips)
        + '<input class="js-only" type="search" placeholder="Search checks, codes, files (/)"'
        ' aria-label="Search checks">'
        '<span class="js-only match-count" aria-live="polite"></span>'
        '<button class="js-only" type="button" data-act="expand">Expand all</button>'
        '<button class="js-only" type="button" data-act="collapse">Collapse all</button>'
        "</nav>"
    )


# --------------------------------------------------------------------------- loops


def _loop_index(groups: list[Loop]) -> str:
    rows = [
        "<table><colgroup><col style='width:22%'><col style='width:9%'><col><col><col><col>"
        "<col><col style='width:28%'></colgroup><tr><th>loop</th><th>status</th>"
        "<th class=num>checks</th><th class=num>passed</th><th class=num>failed</th>"
        "<th class=num>errors</th><th class=num>not run</th><th>evidence classes</th></tr>"
    ]
    for g in groups:
        c = g.counts()
        rows.append(
            f'<tr><td><a href="#loop-{slug(g.name)}">{escape(g.name)}</a></td>'
            f"<td>{_badge(g.status)}</td><td class=num>{len(g.results)}</td>"
            f"<td class=num>{c['passed']}</td><td class=num>{c['failed']}</td>"
            f"<td class=num>{c['error']}</td><td class=num>{c['not_run']}</td>"
            f"<td>{escape(', '.join(g.classes))}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def _claims(g: Loop) -> str:
    if not g.claims:
        return ""
    rows = [
        "<h3>Claims</h3><table class='claims'><colgroup><col style='width:7rem'><col>"
        "<col style='width:9rem'><col style='width:30%'></colgroup>"
        "<tr><th>status</th><th>claim</th><th>evidence class</th><th>backed by</th></tr>"
    ]
    for cl in g.claims:
        more = (
            f" <span class='reason'>and {len(cl.checks) - 1} more</span>"
            if len(cl.checks) > 1
            else ""
        )
        rows.append(
            f'<tr class="row claim" data-status="{cl.status}"><td>{_badge(cl.status)}</td>'
            f"<td>{escape(cl.text)}</td><td>{escape(', '.join(sorted(cl.classes)))}</td>"
            f'<td title="{escape(", ".join(cl.checks))}"><code>{wrap(cl.checks[0])}</code>'
            f"{more}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def _family(name: str) -> str:
    return name.split(".", 1)[0] if "." in name else name


def _km_counts(cells: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in cells:
        out[c] = out.get(c, 0) + 1
    return out


def _km_summary_table(label: str, groups: Mapping[str, list[str]], statuses: list[str]) -> str:
    head = "".join(f"<th class=num>{escape(s.replace('_', ' '))}</th>" for s in statuses)
    rows = [
        "<table class='km-sum'><colgroup><col style='width:38%'><col>"
        + "<col>" * (len(statuses) + 1)
        + f"</colgroup><tr><th>{escape(label)}</th><th class=num>applicable cells</th>"
        f"{head}<th class=num>not applicable</th></tr>"
    ]
    for name, cells in groups.items():
        c = _km_counts(cells)
        applicable = len(cells) - c.get("not_applicable", 0)
        tds = "".join(
            f"<td class='num{' km-bad' if s in _KM_BAD and c.get(s) else ''}'>{c.get(s, 0)}</td>"
            for s in statuses
        )
        rows.append(
            f"<tr><td>{wrap(name)}</td><td class=num>{applicable}</td>{tds}"
            f"<td class=num>{c.get('not_applicable', 0)}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def _kill_matrix(spec: Mapping[str, Any], r: CheckResult) -> str:
    ops = [str(x) for x in spec.get("rows", [])]
    fixtures = [str(x) for x in spec.get("cols", [])]
    raw: Sequence[Sequence[Any]] = spec.get("cells", [])
    cells = [
        [str(raw[i][j]) if i < len(raw) and j < len(raw[i]) else "" for j in range(len(fixtures))]
        for i in range(len(ops))
    ]
    present = {c for row in cells for c in row}
    statuses = [s for s in _KM_ORDER if s in present]
    statuses += sorted(present - set(_KM_ORDER) - {"not_applicable", ""})
    by_family: dict[str, list[str]] = {}
    fam_ops: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        by_family.setdefault(_family(op), []).extend(cells[i])
        fam_ops.setdefault(_family(op), []).append(i)
    by_fixture = {f: [cells[i][j] for i in range(len(ops))] for j, f in enumerate(fixtures)}
    title = str(spec.get("title", "matrix"))
    anchor = "km-" + slug(r.subject)
    legend = " · ".join(
        f"<span class='{_KM_CLASS.get(s, '')}'>&nbsp;{escape(CELL_GLYPHS.get(s, '') or '·')}"
        f"&nbsp;</span> {escape(s.replace('_', ' '))}"
        for s in [*statuses, "not_applicable"]
    )
    full = [
        "<div class='scroll'><table class='km'><colgroup><col class='op' style='width:16rem'>"
        + "<col>" * len(fixtures)
        + "</colgroup><tr><th class='op'>operator \\ fixture</th>"
        + "".join(f"<th title='{escape(f)}'>F{j + 1}</th>" for j, f in enumerate(fixtures))
        + "</tr>"
    ]
    for fam, idxs in fam_ops.items():
        full.append(f"<tr class='fam'><th colspan='{len(fixtures) + 1}'>{escape(fam)}</th></tr>")
        for i in idxs:
            tds = "".join(
                f"<td class='{_KM_CLASS.get(c, '')}' title='{escape(ops[i])} x "
                f"{escape(fixtures[j])}: {escape(c.replace('_', ' '))}'>"
                f"{escape(CELL_GLYPHS.get(c, c[:1].upper()) or '·')}</td>"
                for j, c in enumerate(cells[i])
            )
            full.append(f"<tr><td class='op'>{wrap(ops[i])}</td>{tds}</tr>")
    full.append("</table></div>")
    key = "".join(
        f"<li><b>F{j + 1}</b> <code>{wrap(f)}</code></li>" for j, f in enumerate(fixtures)
    )
    survivors = sum(1 for row in cells for c in row if c in _KM_BAD)
    verdict = (
        f"<p><b>{survivors} cell(s) with a surviving or erroring mutant.</b></p>"
        if survivors
        else "<p>No operator x fixture cell has a surviving mutant.</p>"
    )
    return (
        f'<div class="killmatrix extra" id="{anchor}"><h3>{escape(title)}:'
        f" <code>{wrap(r.subject)}</code></h3>"
        f"<p class='legend-line'>{len(ops)} operators in {len(by_family)} families x"
        f" {len(fixtures)} fixtures; {(r.reason and escape(r.reason)) or ''}</p>{verdict}"
        "<h4>Per operator family</h4>"
        + _km_summary_table("operator family", by_family, statuses)
        + "<h4>Per fixture</h4>"
        + _km_summary_table("fixture", by_fixture, statuses)
        + f"<details class='km-full'><summary>Full matrix: {len(ops)} operators x"
        f" {len(fixtures)} fixtures (one letter per cell)</summary>"
        f"<p class='legend-line'>{legend}</p>"
        f"<ul class='plain legend-line km-key'>{key}</ul>" + "".join(full) + "</details></div>"
    )


def _charts(g: Loop) -> str:
    figures: list[str] = []
    matrices: list[str] = []
    for r, spec in g.charts:
        if spec.get("type") == "matrix":
            matrices.append(_kill_matrix(spec, r))
            continue
        figures.append(
            f'<figure class="chart">{render_chart(spec)}<figcaption>from'
            f" <code>{wrap(r.subject)}</code></figcaption></figure>"
        )
    out = ""
    if figures:
        out += (
            f'<div class="extra"><h3>Charts</h3><div class="charts">{"".join(figures)}</div></div>'
        )
    return out + "".join(matrices)


def _check_row(r: CheckResult, ids: _Ids, verbosity: int) -> str:
    metrics = _metrics(r) if verbosity > 0 else ""
    return (
        f'<tr class="row check" id="{ids.of(r)}" data-status="{r.outcome.value}">'
        f"<td>{_badge(r.outcome.value)}</td>"
        f'<td class="subject"><code>{wrap(r.subject)}</code>'
        f'<div class="kind">{escape(r.check)}</div></td>'
        f"<td>{escape(r.evidence_class.value)}</td>"
        f"<td>{_findings(r)}{metrics}</td></tr>"
    )


def _checks(g: Loop, ids: _Ids, verbosity: int) -> str:
    """One collapsible table per status, worst first: problems open, passes folded away
    when the loop has problems."""
    out = ["<h3>Checks</h3>"]
    has_problems = g.status != CheckStatus.PASSED.value
    for status, results in g.grouped():
        is_open = status is not CheckStatus.PASSED or not has_problems
        attrs = " open data-open" if is_open else ""
        out.append(
            f'<details class="grouped g-{status.value}"{attrs}><summary>{_badge(status.value)}'
            f" {escape(_GROUP_TITLE[status.value])} ({len(results)})</summary>"
            "<table class='checks'><colgroup><col style='width:6.5rem'>"
            "<col style='width:30%'><col style='width:8.5rem'><col></colgroup>"
            "<tr><th>status</th><th>check</th><th>evidence</th><th>findings</th></tr>"
            + "".join(_check_row(r, ids, verbosity) for r in results)
            + "</table></details>"
        )
    return "".join(out)


def _loop(g: Loop, ids: _Ids, verbosity: int) -> str:
    c = g.counts()
    is_open = g.status != CheckStatus.PASSED.value
    attrs = " open data-open" if is_open else ""
    classes = "".join(f'<span class="ev">{escape(x)}</span>' for x in g.classes)
    return (
        f'<details class="loop" id="loop-{slug(g.name)}" data-status="{g.status}"{attrs}>'
        f"<summary>{_badge(g.status)}<span class='name'>{escape(g.name)}</span>"
        f"<span class='counts'>{len(g.results)} checks: {escape(counts_line(c))}</span>"
        f"<span class='classes'>{classes}</span></summary><div class='loop-body'>"
        + _claims(g)
        + _charts(g)
        + (_checks(g, ids, verbosity) if g.results else "")
        + "</div></details>"
    )


def render_html(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del color
    ids = _Ids()
    groups = loops(report)
    verdict = report.verdict
    bundles = report.summary.get("bundles") or []
    bundle_text = (
        " · bundles: " + ", ".join(str(b.get("bundle")) for b in bundles) if bundles else ""
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>cbaudit {escape(report.command)}: {escape(verdict.upper())}</title>",
        f"<style>{CSS}</style></head><body><div class='page'>",
        f"<header id='top'><h1>cbaudit {escape(report.command)} {_verdict_badge(verdict)}</h1>",
        f"<div class='verdict v-{escape(verdict)}'><p class='headline'>"
        f"{escape(verdict_sentence(report))}</p>"
        f"<p class='meta'>cbaudit {escape(report.tool_version)} · exit code"
        f" {int(report.exit_code)} · {escape(counts_line(report.counts()))}"
        f"{escape(bundle_text)}</p></div></header>",
        _bar(report),
        _blockers(report, ids),
        _not_run(report, ids),
        f'<p class="caveat">{escape(CAVEAT)}</p>',
        '<section id="loops"><h2>Loops</h2>',
        _loop_index(groups),
        *[_loop(g, ids, verbosity) for g in groups],
        "</section>",
        '<section id="evidence"><h2>Evidence classes</h2><ul>',
        *[f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in EVIDENCE_NOTES.items()],
        "</ul></section>",
        f'<section id="inputs"><h2>Inputs</h2><details><summary>{len(report.inputs)} input'
        f" file(s) and their sha256</summary><ul class='plain'>",
        *[
            f"<li><code>{wrap(display_path(d.path))}</code> <code class='reason'>{d.sha256}"
            "</code></li>"
            for d in report.inputs
        ],
        "</ul></details></section>",
        f"</div><script>{JS}</script></body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
