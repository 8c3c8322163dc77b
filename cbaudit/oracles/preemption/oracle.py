"""Loop 9 oracle (article 0x0C): preemption intents, foreign receipts and resume tickets.

For each case of a `preemption-fixture` the oracle derives, from the request snapshot, the
`PreemptionIntent` and the receipts that arrived, whether a `ResumeTicket` exists, which
receipts are stale, what capacity may be published and what rebuild execution publishes
(`cbaudit.contract.preemption`). It then compares every declared value with the derivation.
The report counts resumable cases, stale receipts and the semantic service published during
rebuild (always zero by construction: rebuild restores K/V only), beside the telemetry the
article asks for (intents by mode and reason, stale receipts by differing field, overhead).

Synthetic contract evidence: no allocator, offload, placement, latency or vLLM/FastServe
reproduction is implied, and a fixture that claims otherwise is a finding.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cbaudit.contract.preemption import (
    Outcome,
    PreemptionIntent,
    Receipt,
    RequestSnapshot,
    check_case,
    derive_resume,
    execute_rebuild,
    find_physical_fields,
)
from cbaudit.io.schemas import validate
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError
from cbaudit.oracles.fixtures import LoadedFixture

NAME = "preemption-resume"
FIXTURE_SCHEMA = "preemption-fixture"
SCOPE_NOTE = (
    "synthetic contract evidence: not a production scheduler, allocator, offload or placement"
    " implementation, latency benchmark, vLLM policy reproduction or FastServe reproduction"
)


def _leaks(fixture: LoadedFixture) -> None:
    found: list[str] = []
    for i, case in enumerate(fixture.data.get("cases", []) or []):
        if not isinstance(case, Mapping):
            continue
        found += find_physical_fields(case.get("intent"), f"/cases/{i}/intent")
        declared = case.get("declared")
        if isinstance(declared, Mapping):
            found += find_physical_fields(declared.get("ticket"), f"/cases/{i}/declared/ticket")
    if found:
        raise InputError(
            [
                Finding(
                    "PREEMPT.PHYSICAL.LEAK",
                    f"{ptr.rsplit('/', 1)[-1]} is foreign implementation state; intents and"
                    " tickets carry only the logical binding and frontiers",
                    location=fixture.locate(ptr),
                )
                for ptr in found
            ]
        )


@dataclass
class _Tally:
    """What the cases add up to, across the fixture."""

    cases: dict[str, Any] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)
    stale_fields: Counter[str] = field(default_factory=Counter)
    intents: Counter[str] = field(default_factory=Counter)
    stale_total: int = 0
    rebuild_service: int = 0
    overhead: int = 0
    chart_rows: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        resumable = self.outcomes[Outcome.RESUMABLE.value]
        return {
            "cases": len(self.cases),
            "resumable": resumable,
            "no_ticket": len(self.cases) - resumable,
            "stale_receipts": self.stale_total,
            "semantic_service_during_rebuild": self.rebuild_service,
            "recompute_overhead_tokens": self.overhead,
        }


Add = Callable[[str, str, str], None]


def _case(i: int, case: Mapping[str, Any], tally: _Tally, add: Add) -> None:
    """Derive one case (intent, receipts, ticket), compare it with what it declares, tally it."""
    ptr = f"/cases/{i}"
    snapshot = RequestSnapshot.from_json(case["request"])
    intent = PreemptionIntent.from_json(case["intent"])
    receipts = [Receipt.from_json(r) for r in case["receipts"]]
    d = derive_resume(snapshot, intent, receipts, pointer=ptr)
    for issue in check_case(d, case["declared"], pointer=ptr):
        add(issue.code, issue.pointer, f"{case['case_id']}: {issue.message}")
    tally.outcomes[d.outcome.value] += 1
    tally.intents[f"{intent.mode.value}/{intent.reason}"] += 1
    tally.stale_total += len(d.stale)
    for _, fields in d.stale:
        tally.stale_fields.update(fields)
    entry: dict[str, Any] = {
        "outcome": d.outcome.value,
        "t_target": d.t_target,
        "t_ready": d.t_ready,
        "stale_receipts": [{"receipt_id": r, "differs_in": list(f)} for r, f in d.stale],
        "wrong_owner_receipts": list(d.wrong_owner),
        "published_capacity_bytes": d.published_capacity_bytes,
        "waiting_on": list(d.waiting_on),
        "ticket": d.ticket.to_json() if d.ticket is not None else None,
    }
    if d.ticket is not None:
        effect = execute_rebuild(d.ticket)
        entry["rebuild"] = effect.to_json()
        tally.rebuild_service += effect.service_debit
        tally.overhead += effect.recompute_overhead_tokens
        rb, nx = d.ticket.rebuild, d.ticket.next_ordinary
        spans = [[rb[0], rb[1], "rebuild"]] if rb[1] > rb[0] else []
        tally.chart_rows.append({"label": case["case_id"], "spans": [*spans, [*nx, "decode"]]})
    tally.cases[case["case_id"]] = entry


def _metrics(data: Mapping[str, Any], tally: _Tally) -> dict[str, Any]:
    return {
        "fixture": data["fixture"],
        "summary": tally.summary(),
        "outcomes": dict(sorted(tally.outcomes.items())),
        "telemetry": {
            "intents_by_mode_and_reason": dict(sorted(tally.intents.items())),
            "stale_receipts_by_field": dict(sorted(tally.stale_fields.items())),
            "recompute_overhead_tokens": tally.overhead,
            "semantic_service_tokens_during_rebuild": tally.rebuild_service,
        },
        "cases": tally.cases,
        "scope": SCOPE_NOTE,
        "evidence_class": EvidenceClass.SYNTHETIC.value,
    }


def evaluate(fixture: LoadedFixture) -> CheckResult:
    """Run the Loop 9 oracle on one fixture (InputError when it is unusable)."""
    _leaks(fixture)
    schema_findings = validate(
        dict(fixture.data), FIXTURE_SCHEMA, file=fixture.path, locate=fixture.locate
    )
    if schema_findings:
        raise InputError(schema_findings)
    data = fixture.data
    findings: list[Finding] = []

    def add(code: str, pointer: str, message: str) -> None:
        findings.append(Finding(code, message, location=fixture.locate(pointer)))

    claim = data["claim"]
    inflated = sorted(k for k, v in claim["scope"].items() if v)
    if claim["evidence_class"] != EvidenceClass.SYNTHETIC.value or inflated:
        add(
            "PREEMPT.CLAIM.INFLATED",
            "/claim",
            f"claim evidence_class {claim['evidence_class']!r}, scope {inflated}: {SCOPE_NOTE}",
        )
    tally = _Tally()
    for i, case in enumerate(data["cases"]):
        _case(i, case, tally, add)
    summary = tally.summary()
    for key, want in sorted((data.get("expect_summary") or {}).items()):
        if summary[key] != want:
            add(
                "PREEMPT.REPORT.COUNT",
                f"/expect_summary/{key}",
                f"{key}: declared {want}, derived {summary[key]}",
            )
    chart = {
        "type": "gantt",
        "title": "Resume tickets: rebuild [T_ready, T_target) then one ordinary decode row",
        "x_label": "token position",
        "rows": tally.chart_rows,
    }
    return CheckResult(
        check=NAME,
        subject=fixture.path,
        findings=tuple(findings),
        metrics=_metrics(data, tally),
        evidence_class=EvidenceClass.SYNTHETIC,
        reason=(
            f"{summary['resumable']} resumable, {summary['stale_receipts']} stale receipts,"
            f" {tally.rebuild_service} semantic service during rebuild"
        ),
        charts=(chart,) if tally.chart_rows else (),
    )
