"""The record-level API the replay engine calls: validate_plan / validate_result."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from cbaudit.contract.records import (
    Interval,
    IterationPlan,
    IterationResult,
    SchedulerState,
    WorkloadManifest,
)
from cbaudit.contract.validator import validate_plan, validate_result, validate_state
from cbaudit.model import Location

Records = tuple[WorkloadManifest, SchedulerState, IterationPlan, IterationResult]


@pytest.fixture
def records(valid_data: dict[str, Any]) -> Records:
    """The valid case as frozen records."""
    return (
        WorkloadManifest.from_json(valid_data["workload"]),
        SchedulerState.from_json(valid_data["state"]),
        IterationPlan.from_json(valid_data["plan"]),
        IterationResult.from_json(valid_data["result"]),
    )


def test_valid_records_have_no_findings(records: Records) -> None:
    """The article's iteration-5 cut, plan and result satisfy every rule."""
    w, s, p, r = records
    assert validate_state(w, s) == []
    assert validate_plan(w, s, p) == []
    assert validate_result(w, s, p, r) == []


def test_stale_state_version_on_records(records: Records) -> None:
    """A plan made from state version 6 cannot run against version 7."""
    w, s, p, _ = records
    stale = dataclasses.replace(p, input_state_version=6)
    findings = validate_plan(w, s, stale, file="x.json")
    assert [f.code for f in findings] == ["PLAN.STATE_VERSION.MISMATCH"]
    assert findings[0].location == Location(file="x.json", pointer="/plan/input_state_version")


def test_locate_and_prefixes_are_used(records: Records) -> None:
    """Pointers are prefixed per record and handed to the caller's locator."""
    w, s, p, _ = records
    seen: list[str] = []

    def locate(pointer: str) -> Location:
        seen.append(pointer)
        return Location(file="trace.jsonl", pointer=pointer, line=42)

    multi = dataclasses.replace(
        p,
        selected=(dataclasses.replace(p.selected[0], end=5, positions=(3, 4)), *p.selected[1:]),
    )
    findings = validate_plan(w, s, multi, locate=locate, prefixes={"plan": "/data"})
    codes = {f.code for f in findings}
    assert "PLAN.DECODE.MULTI_ROW" in codes
    assert "/data/selected/0/end" in seen
    assert all(f.location.line == 42 for f in findings)


def test_policy_identity_and_tie_break(records: Records) -> None:
    """A different declared order makes the recorded keys forged and the order wrong."""
    w, s, p, _ = records
    prefill_first = dataclasses.replace(
        w.policy,
        tie_break=dataclasses.replace(
            w.policy.tie_break, phase_order=tuple(reversed(w.policy.tie_break.phase_order))
        ),
    )
    other = dataclasses.replace(w, policy=prefill_first)
    codes = {f.code for f in validate_plan(other, s, p)}
    assert codes == {"PLAN.TIE_BREAK.FORGED", "PLAN.TIE_BREAK.ORDER"}


def test_ready_request_ranked_ahead_needs_a_reason(records: Records) -> None:
    """Leaving out ready req-C while selecting req-A needs a not_selected reason."""
    w, s, p, _ = records
    without_c = dataclasses.replace(
        p,
        selected=(p.selected[0], p.selected[2]),
        budget_ledger=dataclasses.replace(p.budget_ledger, tokens_used=3, sequences_used=2),
    )
    assert [f.code for f in validate_plan(w, s, without_c)] == [
        "PLAN.TIE_BREAK.SKIPPED_UNEXPLAINED"
    ]
    explained = dataclasses.replace(
        without_c,
        not_selected=(
            *without_c.not_selected,
            dataclasses.replace(without_c.not_selected[0], request_id="req-C", reason="deferred"),
        ),
    )
    assert validate_plan(w, s, explained) == []


def test_late_completion_cannot_advance_new_generation(records: Records) -> None:
    """A completion for req-B generation 1 is rejected against generation 2."""
    w, s, p, r = records
    late = dataclasses.replace(r.items[0], request_generation=1)
    codes = [f.code for f in validate_result(w, s, p, dataclasses.replace(r, items=(late,)))]
    assert "RESULT.GENERATION.STALE" in codes


def test_partial_completion_debits_only_completed(records: Records) -> None:
    """req-A completing one of two planned rows debits client-alpha 2, not the planned 3."""
    w, s, p, r = records
    item = r.items[2]
    partial = dataclasses.replace(
        item,
        completed=Interval(0, 1),
        after=dataclasses.replace(item.after, computed_tokens=1, committed_tokens=1),
    )
    result = dataclasses.replace(r, items=(r.items[0], r.items[1], partial))
    assert [f.code for f in validate_result(w, s, p, result)] == ["RESULT.DEBIT.PLANNED_SERVICE"]
    fixed = dataclasses.replace(
        result,
        service_debits=(dataclasses.replace(r.service_debits[0], tokens=2), r.service_debits[1]),
    )
    assert validate_result(w, s, p, fixed) == []


def test_nothing_completed_publishes_nothing(records: Records) -> None:
    """A failed attempt keeps the frontiers, emits nothing and debits nothing."""
    w, s, p, r = records
    item = r.items[2]
    failed = dataclasses.replace(
        item,
        completed=None,
        failure="allocation rejected",
        after=dataclasses.replace(item.after, computed_tokens=0, committed_tokens=0),
    )
    result = dataclasses.replace(
        r,
        items=(r.items[0], r.items[1], failed),
        service_debits=(dataclasses.replace(r.service_debits[0], tokens=1), r.service_debits[1]),
    )
    assert validate_result(w, s, p, result) == []


def test_state_rules(records: Records) -> None:
    """A non-ready live request without a reason, and k != c, are state findings."""
    w, s, _, _ = records
    d = dataclasses.replace(s.by_id["req-D"], readiness_reason=None)
    c = dataclasses.replace(s.by_id["req-C"], committed_tokens=2)
    views = tuple(
        d if v.request_id == "req-D" else c if v.request_id == "req-C" else v for v in s.requests
    )
    codes = [f.code for f in validate_state(w, dataclasses.replace(s, requests=views))]
    assert sorted(codes) == ["STATE.COMMITTED.NOT_AT_COMPUTED", "STATE.READY.REASON_MISSING"]
