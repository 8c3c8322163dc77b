"""The public validator API: records in, located findings out.

`validate_plan` and `validate_result` take frozen records and run only the contract checks
(no JSON, no schema), so the replay engine can call them on every iteration. `validate_case`
takes a loaded plan-case document and does the whole pipeline: leak scan, schema, records,
contract. `validate_trace` (in `cbaudit.contract.trace`) streams a JSONL trace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cbaudit.contract.cases import load_case
from cbaudit.contract.issues import Issue, RecordKind
from cbaudit.contract.leaks import scan_leaks, strip_leaks
from cbaudit.contract.plan_contract import check_plan
from cbaudit.contract.records import (
    IterationPlan,
    IterationResult,
    Phase,
    SchedulerState,
    WorkloadManifest,
    rebuild_rows,
)
from cbaudit.contract.result_contract import check_result
from cbaudit.contract.state_contract import check_state, check_workload
from cbaudit.contract.trace import validate_trace
from cbaudit.io.integers import float_integer_findings, strictly_valid
from cbaudit.io.loader import Document
from cbaudit.io.schemas import is_valid, validate
from cbaudit.model import CheckResult, CheckStatus, EvidenceClass, Finding, Location
from cbaudit.model.findings import Locator

__all__ = [
    "CASE_PREFIXES",
    "check_case_data",
    "locate_issues",
    "validate_case",
    "validate_case_file",
    "validate_plan",
    "validate_result",
    "validate_state",
    "validate_trace",
]

CHECK_NAME = "plan-contract"

#: Where each record sits inside a plan-case document.
CASE_PREFIXES: Mapping[str, str] = {
    "workload": "/workload",
    "state": "/state",
    "plan": "/plan",
    "result": "/result",
}

_ONLINE: tuple[RecordKind, ...] = ("state", "plan", "result")


def locate_issues(
    issues: Iterable[Issue],
    *,
    file: str | None = None,
    locate: Locator | None = None,
    prefixes: Mapping[str, str] = CASE_PREFIXES,
) -> list[Finding]:
    """Turn unlocated issues into findings, pointers prefixed by their record's position."""
    out: list[Finding] = []
    for issue in issues:
        pointer = prefixes.get(issue.record, "") + issue.pointer
        loc = locate(pointer) if locate is not None else Location(file=file, pointer=pointer)
        out.append(Finding(code=issue.code, message=issue.message, location=loc))
    return out


def validate_state(
    workload: WorkloadManifest,
    state: SchedulerState,
    *,
    file: str | None = None,
    locate: Locator | None = None,
    prefixes: Mapping[str, str] = CASE_PREFIXES,
) -> list[Finding]:
    """Workload and state invariants (frontiers, queues, readiness, k = c)."""
    issues = check_workload(workload) + check_state(workload, state)
    return locate_issues(issues, file=file, locate=locate, prefixes=prefixes)


def validate_plan(
    workload: WorkloadManifest,
    state: SchedulerState,
    plan: IterationPlan,
    *,
    file: str | None = None,
    locate: Locator | None = None,
    check_state_first: bool = True,
    prefixes: Mapping[str, str] = CASE_PREFIXES,
) -> list[Finding]:
    """Every 0x01A plan rule; with `check_state_first` also the workload and state rules."""
    issues: list[Issue] = []
    if check_state_first:
        issues = check_workload(workload) + check_state(workload, state)
    issues += check_plan(workload, state, plan)
    return locate_issues(issues, file=file, locate=locate, prefixes=prefixes)


def validate_result(
    workload: WorkloadManifest,
    state: SchedulerState,
    plan: IterationPlan,
    result: IterationResult,
    *,
    file: str | None = None,
    locate: Locator | None = None,
    prefixes: Mapping[str, str] = CASE_PREFIXES,
) -> list[Finding]:
    """Result rules only: binding, planned vs completed, output clock, debits."""
    issues = check_result(workload, state, plan, result)
    return locate_issues(issues, file=file, locate=locate, prefixes=prefixes)


def _case_metrics(
    workload: WorkloadManifest,
    state: SchedulerState,
    plan: IterationPlan,
    result: IterationResult | None,
) -> dict[str, Any]:
    """The figures a case backs: order, budget use, and (with a result) what completed.

    A case whose state holds a rebuilding request (RECOMPUTE_CHUNK) also reports
    `recompute_overhead_tokens`: completed rows below p + e - 1, kept apart from the debits.
    """
    metrics: dict[str, Any] = {
        "selected_order": [f"{w.request_id}:{w.request_generation}" for w in plan.selected],
        "phases": [w.phase.value for w in plan.selected],
        "tokens_used": sum(max(w.end - w.start, 0) for w in plan.selected),
        "token_budget": workload.budgets.token_budget,
        "sequences_used": len(plan.selected),
        "sequence_budget": workload.budgets.sequence_budget,
        "not_selected": {n.request_id: n.reason for n in plan.not_selected},
        "has_result": result is not None,
    }
    if result is not None:
        metrics["tokens_completed"] = sum(
            max(i.completed.end - i.completed.start, 0)
            for i in result.items
            if i.completed is not None
        )
        metrics["after"] = {
            i.request_id: {
                "emitted": i.after.emitted_tokens,
                "computed": i.after.computed_tokens,
                "committed": i.after.committed_tokens,
                "logical_length": i.after.logical_length,
            }
            for i in result.items
        }
        metrics["debits"] = {d.client: d.tokens for d in result.service_debits}
        metrics["terminal"] = [f"{t.request_id}:{t.reason}" for t in result.terminal_events]
        overhead: int | None = None
        for i in result.items:
            view = state.by_id.get(i.request_id)
            if view is None or (
                view.derived_phase() is not Phase.RECOMPUTE_CHUNK and view.rebuild_floor is None
            ):
                continue
            done = i.completed
            p, e = view.prompt_tokens, view.emitted_tokens
            rows = (
                0 if done is None else rebuild_rows(p, e, done.start, done.end, view.service_floor)
            )
            overhead = (overhead or 0) + rows
        if overhead is not None:
            metrics["recompute_overhead_tokens"] = overhead
    return metrics


def check_case_data(
    data: Mapping[str, Any],
    *,
    file: str | None = None,
    locate: Locator | None = None,
) -> tuple[list[Finding], bool, dict[str, Any]]:
    """Validate plan-case data. Returns (findings, unusable, metrics).

    `unusable` is true when the data does not have the plan-case shape (after leaked members
    are named and removed), or writes an integer as a float (`SCHEMA.INTEGER.FLOAT`), so no
    contract check could run.
    """
    leaks: list[Issue] = []
    if not strictly_valid(data, "plan-case"):  # the usual case passes this one pass only
        data, leaks, refused = _shape_findings(data, file, locate)
        if refused:
            return refused, True, {}
    workload = WorkloadManifest.from_json(data["workload"])
    state = SchedulerState.from_json(data["state"])
    plan = IterationPlan.from_json(data["plan"])
    result = IterationResult.from_json(data["result"]) if "result" in data else None
    issues = leaks + check_workload(workload) + check_state(workload, state)
    issues += check_plan(workload, state, plan)
    if result is not None:
        issues += check_result(workload, state, plan, result)
    findings = locate_issues(issues, file=file, locate=locate)
    return findings, False, _case_metrics(workload, state, plan, result)


def _shape_findings(
    data: Mapping[str, Any], file: str | None, locate: Locator | None
) -> tuple[Mapping[str, Any], list[Issue], list[Finding]]:
    """Why a case is not strictly schema-valid: leaked members (named, then removed), schema
    findings, integers written as floats. Returns the data without leaks, the leak issues and
    the findings that make the case unusable (empty when only leaks were wrong)."""
    leaks: list[Issue] = []
    if not is_valid(data, "plan-case"):
        for record in _ONLINE:
            part = data.get(record) if isinstance(data, Mapping) else None
            if part is not None:
                leaks += scan_leaks(part, record)
        if leaks:
            data = {k: (strip_leaks(v) if k in _ONLINE else v) for k, v in data.items()}
        schema = validate(data, "plan-case", file=file, locate=locate)
        if schema:
            return data, leaks, locate_issues(leaks, file=file, locate=locate) + schema
    floats = float_integer_findings(data, "plan-case", file=file, locate=locate)
    if floats:  # -0.0 or 2.0 where an integer is required: never read as one
        return data, leaks, locate_issues(leaks, file=file, locate=locate) + floats
    return data, leaks, []


def validate_case(doc: Document, *, subject: str | None = None) -> CheckResult:
    """One loaded plan-case document -> one result (ERROR when its shape is unusable)."""
    findings, unusable, metrics = check_case_data(doc.data, file=doc.path, locate=doc.locate)
    return CheckResult(
        check=CHECK_NAME,
        subject=subject if subject is not None else doc.path,
        findings=tuple(findings),
        metrics=metrics,
        evidence_class=EvidenceClass.DERIVED,
        status=CheckStatus.ERROR if unusable else None,
    )


def validate_case_file(
    path: Path | str, *, display: str | None = None, root: Path | None = None
) -> tuple[CheckResult, tuple[Path, ...]]:
    """Load a case file (plain or patch form) and validate it; a broken file is a result.

    Returns the result and every file read (the case, and the base of a patch case). With
    `root`, a patch case's base must lie inside it.
    """
    name = display if display is not None else str(path)
    case = load_case(path, display=name, root=root)
    if case.error is not None:
        broken = CheckResult(
            check=CHECK_NAME,
            subject=name,
            findings=case.error,
            evidence_class=EvidenceClass.DERIVED,
            status=CheckStatus.ERROR,
        )
        return broken, case.files
    findings, unusable, metrics = check_case_data(case.data, file=name, locate=case.locate)
    result = CheckResult(
        check=CHECK_NAME,
        subject=name,
        findings=tuple(findings),
        metrics=metrics,
        evidence_class=EvidenceClass.DERIVED,
        status=CheckStatus.ERROR if unusable else None,
    )
    return result, case.files
