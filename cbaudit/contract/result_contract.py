"""Result checks: planned vs completed, the output clock, and completed-service debits.

Semantic service (what fairness debits) is `records.semantic_rows`: every completed prompt row
of a request that has not emitted yet (at or above its view's `rebuild_floor`, when a recompute
preemption discarded computed prompt rows), and for a request with e >= 1 only the row at
p + e - 1 that produces its next token. Rows rebuilt after a recompute preemption are overhead,
kept apart from service (article 0x0C).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cbaudit.contract.issues import Issue
from cbaudit.contract.workload_records import (
    Phase,
    RequestDecl,
    WorkloadManifest,
    semantic_rows,
)

if TYPE_CHECKING:  # the state, plan and result records: annotations only here
    from cbaudit.contract.records import (
        IterationPlan,
        IterationResult,
        RequestView,
        ResultItem,
        SchedulerState,
        WorkItem,
    )

_OUTPUT_TERMINALS = frozenset({"eos", "max_output_tokens"})
_PREFILL = Phase.PREFILL_CHUNK
_DECODE = Phase.DECODE_ROW
_REBUILD = Phase.RECOMPUTE_CHUNK


def check_result(
    workload: WorkloadManifest,
    state: SchedulerState,
    plan: IterationPlan,
    result: IterationResult,
) -> list[Issue]:
    """One result against the plan it answers and the state that plan read."""
    out = _binding_issues(plan, result)
    planned: dict[str, WorkItem] = {}
    for w in plan.selected:
        planned.setdefault(w.request_id, w)
    seen: set[str] = set()
    service = _Service()
    # (request_id, generation) -> (emitted before, emitted after, max output tokens)
    advanced: dict[tuple[str, int], tuple[int, int, int]] = {}
    rebuilding: set[tuple[str, int]] = set()  # items whose state view derives RECOMPUTE_CHUNK
    for j, item in enumerate(result.items):
        rid = item.request_id
        if rid in seen:
            out.append(
                Issue(
                    "RESULT.ITEM.DUPLICATE", "result", f"/items/{j}", f"{rid} has two result items"
                )
            )
            continue
        seen.add(rid)
        work = planned.get(rid)
        if not _bound_to_plan(out, j, item, work, plan):
            continue
        assert work is not None
        done_end = _completed_end(out, j, item, work)
        view = state.by_id.get(rid)
        decl = workload.by_id.get(rid)
        current = view is not None and view.request_generation == item.request_generation
        _count_service(service, view, current, decl, work, done_end)
        if view is None or not current:
            continue
        max_out = decl.max_output_tokens if decl is not None else None
        _item_progress(out, j, item, view, done_end, max_out)
        advanced[(rid, item.request_generation)] = (
            view.emitted_tokens,
            item.after.emitted_tokens,
            max_out if max_out is not None else -1,
        )
        if view.derived_phase() is Phase.RECOMPUTE_CHUNK:
            rebuilding.add((rid, item.request_generation))
    for rid, work in planned.items():
        if rid not in seen:
            out.append(
                Issue(
                    "RESULT.ITEM.MISSING",
                    "result",
                    "/items",
                    f"{rid}:{work.request_generation} was planned but the result says nothing"
                    " about it",
                )
            )
    out.extend(_check_events(result, advanced, rebuilding))
    out.extend(_check_debits(result, service))
    return out


def _binding_issues(plan: IterationPlan, result: IterationResult) -> list[Issue]:
    """The result answers the plan's decision and the state version the plan read."""
    out: list[Issue] = []
    if result.decision_id != plan.decision_id:
        out.append(
            Issue(
                "RESULT.DECISION.MISMATCH",
                "result",
                "/decision_id",
                f"result answers decision {result.decision_id!r}, the plan is {plan.decision_id!r}",
            )
        )
    if result.input_state_version != plan.input_state_version:
        out.append(
            Issue(
                "RESULT.STATE_VERSION.MISMATCH",
                "result",
                "/input_state_version",
                f"result is bound to state version {result.input_state_version}, the plan to"
                f" {plan.input_state_version}",
            )
        )
    return out


def _bound_to_plan(
    out: list[Issue], j: int, item: ResultItem, work: WorkItem | None, plan: IterationPlan
) -> bool:
    """Whether result item `j` answers planned work of the same generation and snapshot (it
    may still misstate the planned interval); False means it cannot publish anything."""
    base = f"/items/{j}"
    rid = item.request_id
    if work is None:
        out.append(
            Issue(
                "RESULT.ITEM.UNPLANNED",
                "result",
                base + "/request_id",
                f"{rid} was not selected by decision {plan.decision_id!r}; an unplanned"
                " completion cannot publish progress",
            )
        )
        return False
    if item.request_generation != work.request_generation:
        out.append(
            Issue(
                "RESULT.GENERATION.STALE",
                "result",
                base + "/request_generation",
                f"{rid}: completion for generation {item.request_generation} cannot advance"
                f" planned generation {work.request_generation}",
            )
        )
        return False
    if item.snapshot_version != work.snapshot_version:
        out.append(
            Issue(
                "RESULT.SNAPSHOT.STALE",
                "result",
                base + "/snapshot_version",
                f"{rid}: completion for snapshot {item.snapshot_version}, the plan bound"
                f" snapshot {work.snapshot_version}",
            )
        )
        return False
    if item.planned.start != work.start or item.planned.end != work.end:
        out.append(
            Issue(
                "RESULT.PLANNED.MISMATCH",
                "result",
                base + "/planned",
                f"{rid}: result says planned [{item.planned.start}, {item.planned.end}),"
                f" the plan says [{work.start}, {work.end})",
            )
        )
    return True


def _completed_end(out: list[Issue], j: int, item: ResultItem, work: WorkItem) -> int | None:
    """The end of the item's completed interval when it is a non-empty prefix of the planned
    one (None when nothing usable completed)."""
    done = item.completed
    if done is None:
        return None
    if done.start != work.start or not (done.start <= done.end <= work.end):
        out.append(
            Issue(
                "RESULT.INTERVAL.OUTSIDE_PLAN",
                "result",
                f"/items/{j}/completed",
                f"{item.request_id}: completed [{done.start}, {done.end}) is not a prefix of"
                f" planned [{work.start}, {work.end})",
            )
        )
        return None
    return done.end if done.end > done.start else None


def _count_service(
    service: _Service,
    view: RequestView | None,
    current: bool,
    decl: RequestDecl | None,
    work: WorkItem,
    done_end: int | None,
) -> None:
    """Tally the item's service for its client (the view's, else the declared one); only a
    current view's frontiers tell rebuild rows from service."""
    client = (view.client if view is not None else None) or (
        decl.client if decl is not None else None
    )
    if client is None:
        return
    frontiers = None
    if view is not None and current:
        frontiers = (view.prompt_tokens, view.emitted_tokens, view.service_floor)
    service.add(client, frontiers, work, done_end)


def _item_progress(
    out: list[Issue],
    j: int,
    item: ResultItem,
    view: RequestView,
    done_end: int | None,
    max_out: int | None,
) -> None:
    """`progress_issues` for one item against the current view of its request."""
    progress_issues(
        out,
        j,
        item.request_id,
        view.derived_phase(),
        view.prompt_tokens,
        view.emitted_tokens,
        view.computed_tokens,
        view.committed_tokens,
        item.before.emitted_tokens,
        item.before.computed_tokens,
        item.before.committed_tokens,
        item.after.emitted_tokens,
        item.after.computed_tokens,
        item.after.committed_tokens,
        item.after.logical_length,
        done_end,
        max_out,
    )


class _Service:
    """Per-client tallies of one result: semantic service and all rows, completed and planned."""

    def __init__(self) -> None:
        self.completed: dict[str, int] = {}  # semantic service of completed rows
        self.completed_rows: dict[str, int] = {}  # every completed row, rebuild included
        self.planned: dict[str, int] = {}  # semantic service had every plan completed
        self.planned_rows: dict[str, int] = {}

    def add(
        self,
        client: str,
        frontiers: tuple[int, int, int] | None,
        work: WorkItem,
        done_end: int | None,
    ) -> None:
        """Count one item; `frontiers` is the state view's (p, e, rebuild floor), None when
        there is no current view."""
        rows = done_end - work.start if done_end is not None else 0
        planned_rows = max(work.width, 0)
        if frontiers is None:  # nothing tells rebuild from service: every row counts
            sem, planned_sem = rows, planned_rows
        else:
            p, e, floor = frontiers
            sem = semantic_rows(p, e, work.start, done_end, floor) if done_end is not None else 0
            planned_sem = semantic_rows(p, e, work.start, work.end, floor)
        for tally, value in (
            (self.completed, sem),
            (self.completed_rows, rows),
            (self.planned, planned_sem),
            (self.planned_rows, planned_rows),
        ):
            tally[client] = tally.get(client, 0) + value


def progress_issues(
    out: list[Issue],
    index: int,
    rid: str,
    phase: Phase | None,
    p: int,
    e: int,
    c: int,
    k: int,
    e_before: int,
    c_before: int,
    k_before: int,
    e_after: int,
    c_after: int,
    k_after: int,
    logical: int | None,
    done_end: int | None,
    max_out: int | None,
) -> None:
    """The progress rules of result item `/items/{index}`, appended to `out`.

    `phase`, `p`, `e`, `c`, `k` are the state's view of the request; `*_before` / `*_after`
    the item's progress; `done_end` the end of a non-empty completed interval (None when
    nothing completed); `max_out` its declared cap. Checks before vs the state, the computed
    frontier after the completed work, the output clock, k <= c, the logical length and the
    output cap. The single implementation: `check_result` and the replay engine's incremental
    validator (`cbaudit.contract.live`) both call it. The checks are inline (this runs for
    every executed item of every replayed iteration); the issues are built out of line.
    """
    if e_before != e or c_before != c or k_before != k:
        out.append(_before_mismatch(index, rid, (e_before, c_before, k_before), (e, c, k)))
    want_c = done_end if done_end is not None else c
    if c_after != want_c:
        out.append(
            Issue(
                "RESULT.PROGRESS.COMPUTED_MISMATCH",
                "result",
                f"/items/{index}/after/computed_tokens",
                f"{rid}: computed after is {c_after}; the completed work leaves it at {want_c}",
            )
        )
    decode_row = done_end is not None and phase is _DECODE
    reaches_prompt = done_end is not None and phase is _PREFILL and done_end == p
    rebuilt = done_end is not None and phase is _REBUILD and done_end == p + e
    want_e = e + int(decode_row) + int(reaches_prompt) + int(rebuilt)
    if e_after != want_e:
        clock = (decode_row, reaches_prompt, rebuilt)
        out.append(_output_clock(index, rid, phase, p, e, c, e_after, done_end, clock))
    if k_after > c_after:
        out.append(
            Issue(
                "RESULT.COMMITTED.AHEAD",
                "result",
                f"/items/{index}/after/committed_tokens",
                f"{rid}: committed {k_after} runs ahead of computed {c_after}",
            )
        )
    if logical is not None and logical != p + e_after:
        out.append(
            Issue(
                "RESULT.LOGICAL_LENGTH.WRONG",
                "result",
                f"/items/{index}/after/logical_length",
                f"{rid}: logical length {logical}, but prompt + emitted = {p} + {e_after}"
                f" = {p + e_after}",
            )
        )
    if max_out is not None and e_after > max_out:
        out.append(
            Issue(
                "RESULT.OUTPUT.EXCEEDS_MAX",
                "result",
                f"/items/{index}/after/emitted_tokens",
                f"{rid}: emitted {e_after} > max_output_tokens {max_out}",
            )
        )


def _before_mismatch(
    index: int, rid: str, before: tuple[int, int, int], view: tuple[int, int, int]
) -> Issue:
    return Issue(
        "RESULT.PROGRESS.BEFORE_MISMATCH",
        "result",
        f"/items/{index}/before",
        f"{rid}: before (e, c, k) = {before}, the state says {view}",
    )


def _output_clock(
    index: int,
    rid: str,
    phase: Phase | None,
    p: int,
    e: int,
    c: int,
    e_after: int,
    done_end: int | None,
    clock: tuple[bool, bool, bool],
) -> Issue:
    """Emitted-after is not what the output clock gives: a rebuild that emitted before
    reaching p + e, or any other wrong count."""
    decode_row, reaches_prompt, rebuilt = clock
    if phase is _REBUILD and not rebuilt and e_after > e:
        return Issue(
            "RESULT.RECOMPUTE.EMITTED_EARLY",
            "result",
            f"/items/{index}/after/emitted_tokens",
            f"{rid}: the rebuild completed to {done_end if done_end is not None else c},"
            f" short of p + e = {p + e}, yet emitted after is {e_after} > {e}; a"
            " rebuild emits only when it reaches the logical stream",
        )
    want_e = e + int(decode_row) + int(reaches_prompt) + int(rebuilt)
    return Issue(
        "RESULT.OUTPUT_CLOCK.WRONG",
        "result",
        f"/items/{index}/after/emitted_tokens",
        f"{rid}: emitted after is {e_after}; the output clock gives {e} +"
        f" {int(decode_row)} (decode row) + {int(reaches_prompt)} (prefill reached"
        f" p) + {int(rebuilt)} (rebuild reached p + e) = {want_e}",
    )


def _check_events(
    result: IterationResult,
    advanced: dict[tuple[str, int], tuple[int, int, int]],
    rebuilding: set[tuple[str, int]],
) -> list[Issue]:
    """Output events match each item's emitted advance; terminal events match outputs."""
    return _output_event_issues(result, advanced, rebuilding) + _terminal_event_issues(
        result, advanced
    )


def _output_event_issues(
    result: IterationResult,
    advanced: dict[tuple[str, int], tuple[int, int, int]],
    rebuilding: set[tuple[str, int]],
) -> list[Issue]:
    out: list[Issue] = []
    indices: dict[tuple[str, int], list[int]] = {}
    for i, ev in enumerate(result.output_events):
        ident = (ev.request_id, ev.request_generation)
        if ident not in advanced:
            out.append(
                Issue(
                    "RESULT.OUTPUT_EVENT.MISMATCH",
                    "result",
                    f"/output_events/{i}",
                    f"output event for {ev.request_id}:{ev.request_generation}, which has no"
                    " valid completed item in this result",
                )
            )
            continue
        indices.setdefault(ident, []).append(ev.output_index)
    for ident, (e_before, e_after, _) in advanced.items():
        got = sorted(indices.get(ident, []))
        span = range(e_before + 1, e_after + 1)  # kept lazy: a hostile e_after may be enormous
        if len(span) == len(got) and got == list(span):
            continue
        if ident in rebuilding and any(i <= e_before for i in got):
            out.append(
                Issue(
                    "RESULT.RECOMPUTE.REEMITTED_OUTPUT",
                    "result",
                    "/output_events",
                    f"{ident[0]}:{ident[1]}: the rebuild publishes output indices"
                    f" {[i for i in got if i <= e_before]}, already emitted before it was"
                    f" preempted (emitted {e_before}); rebuilding never re-emits output",
                )
            )
        else:
            want = list(span) if len(span) <= 16 else f"{span.start}..{span.stop - 1}"
            out.append(
                Issue(
                    "RESULT.OUTPUT_EVENT.MISMATCH",
                    "result",
                    "/output_events",
                    f"{ident[0]}:{ident[1]}: output events {got}, but emitted advanced"
                    f" {e_before} -> {e_after} (want {want})",
                )
            )
    return out


def _terminal_event_issues(
    result: IterationResult, advanced: dict[tuple[str, int], tuple[int, int, int]]
) -> list[Issue]:
    out: list[Issue] = []
    terminated: set[tuple[str, int]] = set()
    for i, tev in enumerate(result.terminal_events):
        ident = (tev.request_id, tev.request_generation)
        terminated.add(ident)
        if ident not in advanced:
            out.append(
                Issue(
                    "RESULT.TERMINAL.UNPLANNED",
                    "result",
                    f"/terminal_events/{i}",
                    f"terminal event for {tev.request_id}:{tev.request_generation}, which has no"
                    " valid item in this result",
                )
            )
            continue
        e_before, e_after, _ = advanced[ident]
        if tev.reason in _OUTPUT_TERMINALS and e_after <= e_before:
            out.append(
                Issue(
                    "RESULT.TERMINAL.WITHOUT_OUTPUT",
                    "result",
                    f"/terminal_events/{i}/reason",
                    f"{tev.request_id}: {tev.reason} needs an output token in this iteration,"
                    " but none was emitted",
                )
            )
    for ident, (e_before, e_after, max_out) in advanced.items():
        if e_after > e_before and e_after == max_out and ident not in terminated:
            out.append(
                Issue(
                    "RESULT.TERMINAL.MISSING",
                    "result",
                    "/terminal_events",
                    f"{ident[0]}:{ident[1]} reached max_output_tokens {max_out} without a"
                    " terminal event",
                )
            )
    return out


def _check_debits(result: IterationResult, service: _Service) -> list[Issue]:
    out: list[Issue] = []
    completed = service.completed
    debited: set[str] = set()
    for i, debit in enumerate(result.service_debits):
        base = f"/service_debits/{i}"
        client = debit.client
        if client in debited:
            out.append(
                Issue(
                    "RESULT.DEBIT.DUPLICATE",
                    "result",
                    base + "/client",
                    f"{client} is debited twice in one result",
                )
            )
            continue
        debited.add(client)
        want = completed.get(client, 0)
        if debit.tokens == want:
            continue
        if client not in completed:
            out.append(
                Issue(
                    "RESULT.DEBIT.UNKNOWN_CLIENT",
                    "result",
                    base + "/client",
                    f"{client} has no item in this result, yet is debited {debit.tokens}",
                )
            )
        elif debit.tokens == service.completed_rows[client]:
            out.append(
                Issue(
                    "RESULT.DEBIT.REBUILD_AS_SERVICE",
                    "result",
                    base + "/tokens",
                    f"{client} debited {debit.tokens} completed rows, but"
                    f" {debit.tokens - want} of them only rebuild K/V after a recompute"
                    f" preemption; its semantic service is {want}",
                )
            )
        elif debit.tokens in (service.planned[client], service.planned_rows[client]):
            out.append(
                Issue(
                    "RESULT.DEBIT.PLANNED_SERVICE",
                    "result",
                    base + "/tokens",
                    f"{client} debited {debit.tokens} planned tokens; only {want} completed",
                )
            )
        else:
            out.append(
                Issue(
                    "RESULT.DEBIT.MISMATCH",
                    "result",
                    base + "/tokens",
                    f"{client} debited {debit.tokens}; its completed semantic service is {want}",
                )
            )
    for client in sorted(completed):
        if completed[client] > 0 and client not in debited:
            out.append(
                Issue(
                    "RESULT.DEBIT.MISMATCH",
                    "result",
                    "/service_debits",
                    f"{client} completed {completed[client]} tokens but is not debited",
                )
            )
    return out
