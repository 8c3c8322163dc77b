"""The contract's plan and result rules, evaluated on the engine's own records.

This is a fast path for `replay`, not a second rulebook: it applies the rules of
`cbaudit.contract.plan_contract` / `result_contract` (article 0x01A) to the engine's in-memory
plan in O(selected) time, with the same finding codes, so a replay does not have to build and
walk a full SchedulerState per iteration. `tests/sim/test_fast_check.py` runs both paths over the
same replays and buggy policies and requires the same codes. Rules the engine makes true by
construction (positions are `range(start, end)`, ledgers are computed, not claimed) are not
re-evaluated here; the contract path and the trace check them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from cbaudit.contract.records import derive_phase
from cbaudit.policies.base import PREFILL_CHUNK, RECOMPUTE_CHUNK, KeyFn, Plan, QueueName, ReqState

Issue = tuple[str, str]  # (code, message)


def derived_phase(r: ReqState) -> str | None:
    """The only legal work for these frontiers (None: the contract admits none).

    The contract's own rule (`cbaudit.contract.records.derive_phase`), so both paths agree.
    """
    return derive_phase(r.p, r.e, r.c)


def check_plan_fast(
    plan: Plan,
    *,
    state_version: int,
    token_budget: int,
    sequence_budget: int,
    free_blocks: int | None,
    key_fn: KeyFn,
    live_below: Callable[[tuple[Any, ...]], Iterable[ReqState]],
) -> list[Issue]:
    """Plan rules; `live_below(worst)` yields at least every live request ranked below `worst`."""
    out: list[Issue] = []
    if plan.state_version != state_version:
        out.append(
            (
                "PLAN.STATE_VERSION.MISMATCH",
                f"plan reads state version {plan.state_version}, the state is {state_version}",
            )
        )
    seen: set[int] = set()
    tokens = 0
    prev_key: tuple[Any, ...] | None = None
    worst: tuple[Any, ...] | None = None
    for item in plan.items:
        r = item.req
        rid = r.rid
        width = item.end - item.start
        tokens += width
        if r.idx in seen:
            out.append(("PLAN.REQUEST.DUPLICATE", f"{rid} is selected more than once"))
        seen.add(r.idx)
        if width <= 0:
            out.append(("PLAN.INTERVAL.EMPTY", f"{rid}: [{item.start}, {item.end}) is empty"))
        if r.queue not in (QueueName.WAITING, QueueName.RUNNING):
            code = "PLAN.REQUEST.TERMINAL" if r.terminal else "PLAN.REQUEST.UNKNOWN"
            out.append((code, f"{rid} is not a live request of this state"))
            continue
        if item.snapshot != r.snapshot:
            out.append(
                (
                    "PLAN.SNAPSHOT.STALE",
                    f"{rid}: plan binds snapshot {item.snapshot}, the state holds {r.snapshot}",
                )
            )
        if not r.ready:
            out.append(("PLAN.REQUEST.NOT_READY", f"{rid} is not ready ({r.readiness_reason})"))
        phase = derived_phase(r)
        if phase is None:
            out.append(
                (
                    "PLAN.INTERVAL.NO_LEGAL_WORK",
                    f"{rid}: frontiers p={r.p} e={r.e} c={r.c} admit no legal interval",
                )
            )
            continue
        if item.start < r.c:
            out.append(
                ("PLAN.INTERVAL.BEFORE_FRONTIER", f"{rid}: starts at {item.start} < frontier {r.c}")
            )
        elif item.start > r.c:
            out.append(
                ("PLAN.INTERVAL.AFTER_FRONTIER", f"{rid}: starts at {item.start} > frontier {r.c}")
            )
        if item.phase != phase:
            out.append(("PLAN.PHASE.FORGED", f"{rid}: annotated {item.phase}, derives {phase}"))
        if phase == PREFILL_CHUNK:
            if item.end > r.p:
                out.append(
                    ("PLAN.INTERVAL.BEYOND_PROMPT", f"{rid}: prefill ends at {item.end} > {r.p}")
                )
        elif phase == RECOMPUTE_CHUNK:
            if item.end > r.p + r.e:
                out.append(
                    (
                        "PLAN.RECOMPUTE.BEYOND_STREAM",
                        f"{rid}: rebuild ends at {item.end} > p + e = {r.p + r.e}",
                    )
                )
        elif width > 1:
            out.append(("PLAN.DECODE.MULTI_ROW", f"{rid}: decode [{item.start}, {item.end})"))
        key = key_fn(r, phase)
        if item.key != key:
            out.append(("PLAN.TIE_BREAK.FORGED", f"{rid}: recorded key {item.key}, declared {key}"))
        if prev_key is not None and key < prev_key:
            out.append(("PLAN.TIE_BREAK.ORDER", f"{rid}: key {key} after larger {prev_key}"))
        prev_key = key
        if worst is None or key > worst:
            worst = key
    if tokens > token_budget:
        out.append(("PLAN.BUDGET.TOKEN_EXCEEDED", f"{tokens} tokens > token budget {token_budget}"))
    if len(seen) > sequence_budget:
        out.append(
            (
                "PLAN.BUDGET.SEQUENCE_EXCEEDED",
                f"{len(seen)} requests > sequence budget {sequence_budget}",
            )
        )
    if free_blocks is not None and plan.blocks_used > free_blocks:
        out.append(
            (
                "REPLAY.KV.BUDGET_EXCEEDED",
                f"plan needs {plan.blocks_used} KV blocks, {free_blocks} are free",
            )
        )
    explained = {r.idx for r, _ in plan.not_selected}
    for r, _ in plan.not_selected:
        if r.idx in seen:
            out.append(("PLAN.NOT_SELECTED.CONFLICT", f"{r.rid} is selected and not selected"))
    if worst is not None:
        for r in live_below(worst):
            if r.idx in seen or r.idx in explained or not r.ready:
                continue
            phase = derived_phase(r)
            if phase is None:
                continue
            key = key_fn(r, phase)
            if key < worst:
                out.append(
                    (
                        "PLAN.TIE_BREAK.SKIPPED_UNEXPLAINED",
                        f"ready {r.rid} ranks {key}, ahead of selected work at {worst},"
                        " without a not_selected reason",
                    )
                )
    return out
