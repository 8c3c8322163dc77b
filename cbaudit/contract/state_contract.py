"""Checks of the workload and of one scheduler state (frontiers, queues, readiness)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cbaudit.contract.issues import Issue
from cbaudit.contract.workload_records import (
    Queue,
    RequestDecl,
    WorkloadManifest,
    derive_phase,
)

if TYPE_CHECKING:  # the state, plan and result records: annotations only here
    from cbaudit.contract.records import (
        SchedulerState,
    )

_FINISHED = Queue.FINISHED  # a module constant: an Enum member read off its class costs more


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
    by_id = workload.by_id
    for i, v in enumerate(state.requests):
        rid = v.request_id
        if rid in seen:
            out.append(
                Issue(
                    "STATE.REQUEST.DUPLICATE",
                    "state",
                    f"/requests/{i}/request_id",
                    f"request {rid!r} appears more than once in the state",
                )
            )
            continue
        seen.add(rid)
        view_issues(
            out,
            workload,
            by_id.get(rid),
            i,
            rid,
            v.request_generation,
            v.prompt_tokens,
            v.emitted_tokens,
            v.computed_tokens,
            v.committed_tokens,
            v.ready,
            v.terminal,
            v.queue,
            v.readiness_reason,
            v.rebuild_floor,
        )
    _service_issues(out, workload, state)
    return out


def _service_issues(out: list[Issue], workload: WorkloadManifest, state: SchedulerState) -> None:
    """The completed-service ledger: present whenever a client is named, and only for clients
    the workload or the state's views name (fairness debits advance it). The workload's
    clients are known once per workload, so a state costs only a pass over its own views."""
    service = state.completed_service
    declared = workload.clients
    if service is None:
        if declared or any(v.client is not None for v in state.requests):
            named = sorted(declared | {v.client for v in state.requests if v.client is not None})
            more = f", ... ({len(named)} in all)" if len(named) > 5 else ""
            shown = ", ".join(named[:5]) + more
            out.append(
                Issue(
                    "STATE.COMPLETED_SERVICE.MISSING",
                    "state",
                    "/completed_service",
                    f"the workload names clients ({shown}) but the state publishes no"
                    " completed_service, so no result's debits can be checked against it",
                )
            )
        return
    unknown = [client for client in service if client not in declared]
    if not unknown:
        return
    viewed = {v.client for v in state.requests if v.client is not None}
    for client in sorted(unknown):
        if client not in viewed:
            token = client.replace("~", "~0").replace("/", "~1")
            out.append(
                Issue(
                    "STATE.COMPLETED_SERVICE.UNKNOWN_CLIENT",
                    "state",
                    f"/completed_service/{token}",
                    f"completed_service counts {service[client]} tokens for {client!r}, a"
                    " client no request of the workload or view of the state names",
                )
            )


def _floor_issues(out: list[Issue], index: int, rid: str, p: int, e: int, floor: int) -> None:
    """A rebuild floor marks re-prefilled prompt rows: only before output, never past p."""
    where = f"/requests/{index}/rebuild_floor"
    if e != 0:
        out.append(
            Issue(
                "STATE.REBUILD_FLOOR.AFTER_OUTPUT",
                "state",
                where,
                f"{rid}: rebuild_floor={floor} with e={e}; after the first token the frontiers"
                f" already mark rebuild rows (below p+e-1={p + e - 1}), so no floor is declared",
            )
        )
    elif floor > p:
        out.append(
            Issue(
                "STATE.REBUILD_FLOOR.BEYOND_PROMPT",
                "state",
                where,
                f"{rid}: rebuild_floor={floor} exceeds the prompt p={p}; before the first token"
                " only prompt rows can have been computed",
            )
        )


def view_issues(
    out: list[Issue],
    workload: WorkloadManifest,
    decl: RequestDecl | None,
    index: int,
    rid: str,
    generation: int,
    p: int,
    e: int,
    c: int,
    k: int,
    ready: bool,
    terminal: bool,
    queue: Queue,
    readiness_reason: str | None,
    rebuild_floor: int | None = None,
) -> None:
    """The rules of one request view (the view at `/requests/{index}`), appended to `out`.

    The single implementation of the per-view state rules: `check_state` calls it for every
    view of a state, the replay engine's incremental validator (`cbaudit.contract.live`) for
    every view that changed since the last published state. `decl` is the workload's
    declaration of `rid` (None when undeclared). The checks are inline and cheap; the issues
    are built out of line, only when one is found.
    """
    if decl is None:
        out.append(_undeclared_issue(workload, index, rid))
    elif (
        p != decl.prompt_tokens
        or generation < decl.request_generation
        or e > decl.max_output_tokens
    ):
        _declaration_issues(out, decl, index, rid, generation, p, e)
    if derive_phase(p, e, c) is None:
        out.append(_frontier_issue(index, rid, p, e, c))
    if rebuild_floor is not None:
        _floor_issues(out, index, rid, p, e, rebuild_floor)
    if k != c:
        out.append(
            Issue(
                "STATE.COMMITTED.NOT_AT_COMPUTED",
                "state",
                f"/requests/{index}/committed_tokens",
                f"{rid}: committed k={k} but computed c={c};"
                " the ordinary contract needs k = c at the decision boundary",
            )
        )
    if terminal != (queue is _FINISHED):
        out.append(
            Issue(
                "STATE.TERMINAL.QUEUE",
                "state",
                f"/requests/{index}/queue",
                f"{rid}: terminal={str(terminal).lower()} but queue is {queue.value!r}",
            )
        )
    if terminal and ready:
        out.append(_terminal_ready_issue(index, rid))
    elif not terminal and not ready and not readiness_reason:
        out.append(_reason_missing_issue(index, rid))


def _undeclared_issue(workload: WorkloadManifest, index: int, rid: str) -> Issue:
    return Issue(
        "STATE.REQUEST.UNDECLARED",
        "state",
        f"/requests/{index}/request_id",
        f"request {rid!r} is not declared in workload {workload.workload_id!r}",
    )


def _frontier_issue(index: int, rid: str, p: int, e: int, c: int) -> Issue:
    return Issue(
        "STATE.FRONTIER.INCONSISTENT",
        "state",
        f"/requests/{index}/computed_tokens",
        f"{rid}: p={p} e={e} c={c} fits neither unfinished prefill (e=0, c<p),"
        f" ordinary decode (e>=1, c=p+e-1={p + e - 1}) nor a rebuild after"
        f" recompute (e>=1, c<p+e-1)",
    )


def _terminal_ready_issue(index: int, rid: str) -> Issue:
    return Issue(
        "STATE.TERMINAL.READY",
        "state",
        f"/requests/{index}/ready",
        f"{rid}: a terminal generation cannot be ready",
    )


def _reason_missing_issue(index: int, rid: str) -> Issue:
    return Issue(
        "STATE.READY.REASON_MISSING",
        "state",
        f"/requests/{index}/ready",
        f"{rid}: not ready, but no readiness_reason says which dependency is missing",
    )


def _declaration_issues(
    out: list[Issue], decl: RequestDecl, index: int, rid: str, generation: int, p: int, e: int
) -> None:
    base = f"/requests/{index}"
    if p != decl.prompt_tokens:
        out.append(
            Issue(
                "STATE.PROMPT.MISMATCH",
                "state",
                base + "/prompt_tokens",
                f"{rid}: prompt_tokens {p} but the workload declares {decl.prompt_tokens}",
            )
        )
    if generation < decl.request_generation:
        out.append(
            Issue(
                "STATE.GENERATION.REGRESSED",
                "state",
                base + "/request_generation",
                f"{rid}: generation {generation} is below the declared"
                f" generation {decl.request_generation}",
            )
        )
    if e > decl.max_output_tokens:
        out.append(
            Issue(
                "STATE.EMITTED.EXCEEDS_MAX",
                "state",
                base + "/emitted_tokens",
                f"{rid}: emitted {e} > max_output_tokens {decl.max_output_tokens}",
            )
        )
