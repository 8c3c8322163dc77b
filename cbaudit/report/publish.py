"""What the two publish-gate reports (Markdown and HTML) say, before either is rendered.

Both work for any report. The reader sees, in order: the verdict and what blocks publication
(errored, then failed checks), what did not run here, then each loop with its claims, evidence
classes and checks. Gate reports carry the claims in `summary["claims"]` (claim, loop,
evidence class, backing check, status); fifty negative fixtures backing one sentence read as
one claim. The renderers live in `markdown.py` and `html.py`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cbaudit.model import CheckResult, CheckStatus, Report
from cbaudit.report.view import SEVERITY_ORDER, problems, worst

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


def natural(text: str) -> list[Any]:
    """Sort key that puts "Loop 2" before "Loop 10"."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", text)]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def counts(results: list[CheckResult]) -> dict[str, int]:
    out = {s.value: 0 for s in CheckStatus}
    for r in results:
        out[r.outcome.value] += 1
    return out


_COUNT_WORD = {"passed": "passed", "failed": "failed", "error": "errored", "not_run": "not run"}


def counts_line(c: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {_COUNT_WORD.get(k, k)}" for k, n in c.items() if n) or "nothing"


@dataclass
class Claim:
    """One sentence and every check that backs it."""

    loop: str
    text: str
    checks: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    classes: set[str] = field(default_factory=set)

    @property
    def status(self) -> str:
        return worst(self.statuses)


@dataclass
class Loop:
    """One loop (or, outside the gate, one check kind) with its results and claims."""

    name: str
    results: list[CheckResult] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return counts(self.results)

    @property
    def status(self) -> str:
        return worst(r.outcome.value for r in self.results)

    @property
    def classes(self) -> list[str]:
        return sorted({r.evidence_class.value for r in self.results})

    @property
    def charts(self) -> list[tuple[CheckResult, Mapping[str, Any]]]:
        return [(r, c) for r in self.results for c in r.charts]

    def grouped(self) -> list[tuple[CheckStatus, list[CheckResult]]]:
        """The loop's results by status, worst first; one group per status."""
        return [
            (s, [r for r in self.results if r.outcome is s])
            for s in SEVERITY_ORDER
            if any(r.outcome is s for r in self.results)
        ]


def claim_key(result_subject: str) -> str:
    """`bundle:check[:sub]` -> `bundle:check`, the key claims are declared under."""
    return ":".join(result_subject.split(":")[:2])


def loops(report: Report) -> list[Loop]:
    """Results and claims grouped by loop, in natural order ("Loop 2" before "Loop 10")."""
    raw_claims = report.summary.get("claims") or []
    loop_of = {
        f"{c.get('bundle')}:{c.get('check')}": str(c.get("loop") or "other") for c in raw_claims
    }
    groups: dict[str, Loop] = {}
    for r in report.results:
        name = loop_of.get(claim_key(r.subject), "other" if loop_of else r.check)
        groups.setdefault(name, Loop(name)).results.append(r)
    by_text: dict[tuple[str, str], Claim] = {}
    for c in raw_claims:
        text = str(c.get("claim") or c.get("title") or c.get("check"))
        loop = str(c.get("loop") or "other")
        item = by_text.setdefault((loop, text), Claim(loop, text))
        item.checks.append(f"{c.get('bundle')}:{c.get('check')}")
        item.statuses.append(str(c.get("status")))
        if c.get("evidence_class"):
            item.classes.add(str(c["evidence_class"]))
    for claim in by_text.values():
        groups.setdefault(claim.loop, Loop(claim.loop)).claims.append(claim)
    for g in groups.values():
        g.claims.sort(key=lambda c: c.checks[0])
    return sorted(groups.values(), key=lambda g: natural(g.name))


def blocking(report: Report) -> list[tuple[CheckStatus, list[CheckResult]]]:
    """Errored and failed results: what blocks publication."""
    return [(s, rs) for s, rs in problems(report) if s is not CheckStatus.NOT_RUN]


def not_run(report: Report) -> list[CheckResult]:
    return [r for r in report.results if r.outcome is CheckStatus.NOT_RUN]


def verdict_sentence(report: Report) -> str:
    """One sentence: does anything block publication, and what did not run."""
    c = report.counts()
    parts = []
    if c["error"]:
        parts.append(f"{c['error']} errored")
    if c["failed"]:
        parts.append(f"{c['failed']} failed")
    head = (
        f"Publication is blocked: of {len(report.results)} checks, " + " and ".join(parts) + "."
        if parts
        else "Nothing blocks publication."
    )
    if c["not_run"]:
        head += (
            f" {c['not_run']} check{'s' if c['not_run'] != 1 else ''} did not run here"
            " (not a pass)."
        )
    return head
