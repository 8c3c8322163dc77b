"""The engine's in-memory cut, plan and result as contract JSON (the records of 0x01A).

Used for `--trace-out` lines and for validating through `cbaudit.contract.validator`. A
published state lists the live requests (waiting and running): finished generations leave the
cut once their terminal result is published, which keeps a state proportional to the live set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.workload_records import semantic_rows
from cbaudit.policies.base import Plan, PlanItem

#: The readiness reason a published view carries when its request is not ready and names none.
UNSTATED_REASON = "NOT_READY"


def view_json(r: LiveRequest) -> dict[str, Any]:
    assert r.queue is not None  # only arrived requests are published
    out: dict[str, Any] = {
        "request_id": r.rid,
        "request_generation": r.gen,
        "snapshot_version": r.snapshot,
        "prompt_tokens": r.p,
        "emitted_tokens": r.e,
        "computed_tokens": r.c,
        "committed_tokens": r.c,
        "ready": r.ready,
        "terminal": r.terminal,
        "queue": r.queue.value,
        "priority": r.priority,
        "arrival_order": r.arrival_order,
    }
    if not r.ready:
        out["readiness_reason"] = r.readiness_reason or UNSTATED_REASON
    if r.client is not None:
        out["client"] = r.client
    floor = r.rebuild_floor
    if floor is not None:
        out["rebuild_floor"] = floor
    return out


def state_json(
    workload_id: str,
    version: int,
    now: float,
    live: Iterable[LiveRequest],
    service: Mapping[str, int],
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "workload_id": workload_id,
        "decision_id": version,
        "state_version": version,
        "monotonic_now": now,
        "requests": [view_json(r) for r in live],
        "completed_service": dict(sorted(service.items())),
    }


def item_json(item: PlanItem) -> dict[str, Any]:
    r = item.req
    return {
        "request_id": r.rid,
        "request_generation": r.gen,
        "snapshot_version": item.snapshot,
        "start": item.start,
        "end": item.end,
        "phase": str(item.phase),
        "positions": list(range(item.start, item.end)),
        "tie_break_key": list(item.key),
    }


def plan_json(
    plan: Plan, version: int, policy_id: str, policy_version: str, budgets: Mapping[str, int]
) -> dict[str, Any]:
    intents = [
        {"request_id": r.rid, "request_generation": r.gen, "action": "admit"} for r in plan.admitted
    ]
    intents += [
        {"request_id": r.rid, "request_generation": r.gen, "action": "preempt"}
        for r in plan.preempted
    ]
    out: dict[str, Any] = {
        "schema_version": 1,
        "decision_id": version,
        "input_state_version": plan.state_version,  # the version the policy read
        "policy_id": policy_id,
        "policy_version": policy_version,
        "selected": [item_json(i) for i in plan.items],
        "budget_ledger": {
            "token_budget": budgets["token_budget"],
            "tokens_used": plan.tokens_used,
            "sequence_budget": budgets["sequence_budget"],
            "sequences_used": plan.sequences_used,
        },
        "not_selected": [
            {"request_id": r.rid, "request_generation": r.gen, "reason": reason}
            for r, reason in plan.not_selected
        ],
    }
    if intents:
        out["queue_intent"] = intents
    return out


def progress_json(e: int, c: int, p: int) -> dict[str, Any]:
    return {
        "emitted_tokens": e,
        "computed_tokens": c,
        "committed_tokens": c,
        "logical_length": p + e,
    }


def result_json(
    version: int,
    done: Iterable[tuple[PlanItem, int, int]],
    terminal: Iterable[tuple[LiveRequest, str]],
) -> dict[str, Any]:
    """`done` holds (item, emitted_before, computed_before) for every executed item."""
    items = []
    outputs = []
    debits: dict[str, int] = {}
    for item, e0, c0 in done:
        r = item.req
        items.append(
            {
                "request_id": r.rid,
                "request_generation": r.gen,
                "snapshot_version": item.snapshot,
                "planned": {"start": item.start, "end": item.end},
                "completed": {"start": item.start, "end": item.end},
                "before": progress_json(e0, c0, r.p),
                "after": progress_json(r.e, r.c, r.p),
            }
        )
        if r.e > e0:
            outputs.append({"request_id": r.rid, "request_generation": r.gen, "output_index": r.e})
        if r.client is not None:  # semantic service: rows that only rebuild K/V are not debited
            debits[r.client] = debits.get(r.client, 0) + semantic_rows(
                r.p, e0, item.start, item.end, r.floor if e0 == 0 else 0
            )
    return {
        "schema_version": 1,
        "decision_id": version,
        "input_state_version": version,
        "items": items,
        "output_events": outputs,
        "terminal_events": [
            {"request_id": r.rid, "request_generation": r.gen, "reason": why} for r, why in terminal
        ],
        "service_debits": [{"client": k, "tokens": v} for k, v in sorted(debits.items())],
    }
