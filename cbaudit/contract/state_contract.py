"""Checks of the workload and of one scheduler state (frontiers, queues, readiness)."""

from __future__ import annotations

from cbaudit.contract.issues import Issue
from cbaudit.contract.records import Queue, SchedulerState, WorkloadManifest


def check_workload(workload: WorkloadManifest) -> list[Issue]:
    """Declarations that no state or plan could repair: duplicates and stray hidden truth."""
    out: list[Issue] = []
    seen: set[str] = set()
    orders: dict[int, str] = {}
    for i, req in enumerate(workload.requests):
        base = f"/requests/{i}"
        if req.request_id in seen:
            out.append(
                Issue(
                    "WORKLOAD.REQUEST.DUPLICATE",
                    "workload",
                    base + "/request_id",
                    f"request {req.request_id!r} is declared more than once",
                )
            )
        seen.add(req.request_id)
        if req.arrival_order is not None:
            other = orders.setdefault(req.arrival_order, req.request_id)
            if other != req.request_id:
                out.append(
                    Issue(
                        "WORKLOAD.ARRIVAL_ORDER.DUPLICATE",
                        "workload",
                        base + "/arrival_order",
                        f"arrival_order {req.arrival_order} is used by {other!r}"
                        f" and {req.request_id!r}; the tie-break would not be total",
                    )
                )
    if workload.hidden_truth is not None:
        for rid in sorted(workload.hidden_truth):
            if rid not in workload.by_id:
                token = rid.replace("~", "~0").replace("/", "~1")
                out.append(
                    Issue(
                        "WORKLOAD.HIDDEN_TRUTH.UNKNOWN_REQUEST",
                        "workload",
                        f"/fixture_only_hidden_truth/realized_output_tokens/{token}",
                        f"hidden truth names {rid!r}, which the workload does not declare",
                    )
                )
    return out


def check_state(workload: WorkloadManifest, state: SchedulerState) -> list[Issue]:
    """One scheduler cut against its workload: the article's frontier and queue invariants."""
    out: list[Issue] = []
    if state.workload_id != workload.workload_id:
        out.append(
            Issue(
                "STATE.WORKLOAD.MISMATCH",
                "state",
                "/workload_id",
                f"state is for workload {state.workload_id!r}, not {workload.workload_id!r}",
            )
        )
    seen: set[str] = set()
    for i, v in enumerate(state.requests):
        base = f"/requests/{i}"
        rid = v.request_id
        if rid in seen:
            out.append(
                Issue(
                    "STATE.REQUEST.DUPLICATE",
                    "state",
                    base + "/request_id",
                    f"request {rid!r} appears more than once in the state",
                )
            )
            continue
        seen.add(rid)
        decl = workload.by_id.get(rid)
        if decl is None:
            out.append(
                Issue(
                    "STATE.REQUEST.UNDECLARED",
                    "state",
                    base + "/request_id",
                    f"request {rid!r} is not declared in workload {workload.workload_id!r}",
                )
            )
        else:
            if v.prompt_tokens != decl.prompt_tokens:
                out.append(
                    Issue(
                        "STATE.PROMPT.MISMATCH",
                        "state",
                        base + "/prompt_tokens",
                        f"{rid}: prompt_tokens {v.prompt_tokens} but the workload declares"
                        f" {decl.prompt_tokens}",
                    )
                )
            if v.request_generation < decl.request_generation:
                out.append(
                    Issue(
                        "STATE.GENERATION.REGRESSED",
                        "state",
                        base + "/request_generation",
                        f"{rid}: generation {v.request_generation} is below the declared"
                        f" generation {decl.request_generation}",
                    )
                )
            if v.emitted_tokens > decl.max_output_tokens:
                out.append(
                    Issue(
                        "STATE.EMITTED.EXCEEDS_MAX",
                        "state",
                        base + "/emitted_tokens",
                        f"{rid}: emitted {v.emitted_tokens} > max_output_tokens"
                        f" {decl.max_output_tokens}",
                    )
                )
        p, e, c = v.prompt_tokens, v.emitted_tokens, v.computed_tokens
        if v.derived_phase() is None:
            out.append(
                Issue(
                    "STATE.FRONTIER.INCONSISTENT",
                    "state",
                    base + "/computed_tokens",
                    f"{rid}: p={p} e={e} c={c} fits neither unfinished prefill (e=0, c<p),"
                    f" ordinary decode (e>=1, c=p+e-1={p + e - 1}) nor a rebuild after"
                    f" recompute (e>=1, c<p+e-1)",
                )
            )
        if v.committed_tokens != c:
            out.append(
                Issue(
                    "STATE.COMMITTED.NOT_AT_COMPUTED",
                    "state",
                    base + "/committed_tokens",
                    f"{rid}: committed k={v.committed_tokens} but computed c={c};"
                    " the ordinary contract needs k = c at the decision boundary",
                )
            )
        if v.terminal != (v.queue is Queue.FINISHED):
            out.append(
                Issue(
                    "STATE.TERMINAL.QUEUE",
                    "state",
                    base + "/queue",
                    f"{rid}: terminal={str(v.terminal).lower()} but queue is {v.queue.value!r}",
                )
            )
        if v.terminal and v.ready:
            out.append(
                Issue(
                    "STATE.TERMINAL.READY",
                    "state",
                    base + "/ready",
                    f"{rid}: a terminal generation cannot be ready",
                )
            )
        elif not v.terminal and not v.ready and not v.readiness_reason:
            out.append(
                Issue(
                    "STATE.READY.REASON_MISSING",
                    "state",
                    base + "/ready",
                    f"{rid}: not ready, but no readiness_reason says which dependency is missing",
                )
            )
    return out
