"""Plan checks (article 0x01A `validate_plan`): binding, intervals, budgets, tie-break."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from cbaudit.contract.issues import Issue
from cbaudit.contract.workload_records import (
    Phase,
    TieBreakValue,
    WorkloadManifest,
    derive_phase,
)

if TYPE_CHECKING:  # the state, plan and result records: annotations only here
    from cbaudit.contract.records import (
        IterationPlan,
        RequestView,
        SchedulerState,
    )

TieBreakKey = tuple[TieBreakValue, ...]

_PREFILL = Phase.PREFILL_CHUNK
_REBUILD = Phase.RECOMPUTE_CHUNK

#: phase_rank of a phase the declared phase_order does not list.
UNLISTED_PHASE_RANK = 2


def phase_rank(phase_order: Sequence[str], phase: str) -> int:
    """The phase's index in `phase_order`.

    A RECOMPUTE_CHUNK that the order does not list ranks like PREFILL_CHUNK (a rebuild is
    prompt-shaped work), so workloads declaring only the two ordinary phases keep their keys.
    """
    if phase in phase_order:
        return list(phase_order).index(phase)
    if phase == Phase.RECOMPUTE_CHUNK and Phase.PREFILL_CHUNK in phase_order:
        return list(phase_order).index(Phase.PREFILL_CHUNK)
    return UNLISTED_PHASE_RANK


def expected_key(workload: WorkloadManifest, view: RequestView, phase: Phase) -> TieBreakKey:
    """The tie-break key the workload's declared policy gives `view` doing `phase` work.

    phase_rank is `phase_rank(phase_order, phase)`; priority_rank is the request's priority
    (lower is more urgent, default 0); arrival_order is the declared order, else the request's
    position in the workload.
    """
    priority, order = rank_fields(workload, view.request_id, view.priority, view.arrival_order)
    return declared_key(
        workload.policy.tie_break.key,
        workload.policy.tie_break.phase_order,
        phase,
        view.request_id,
        view.request_generation,
        priority,
        order,
    )


def rank_fields(
    workload: WorkloadManifest, rid: str, priority: int | None, arrival_order: int | None
) -> tuple[int, int]:
    """A view's priority_rank and arrival_order: its own values, else its declaration's,
    else 0 and its position in the workload."""
    decl = workload.by_id.get(rid)
    if priority is None and decl is not None:
        priority = decl.priority
    if arrival_order is None and decl is not None:
        arrival_order = decl.arrival_order
    if arrival_order is None:
        arrival_order = workload.position_of.get(rid, len(workload.requests))
    return (priority if priority is not None else 0), arrival_order


def declared_key(
    key: Sequence[str],
    phase_order: Sequence[str],
    phase: Phase,
    rid: str,
    generation: int,
    priority: int,
    arrival_order: int,
) -> TieBreakKey:
    """The declared tie-break key (field names `key`) of one request doing `phase` work."""
    values: list[TieBreakValue] = []
    for name in key:
        if name == "phase_rank":
            values.append(phase_rank(phase_order, phase))
        elif name == "priority_rank":
            values.append(priority)
        elif name == "arrival_order":
            values.append(arrival_order)
        elif name == "request_id":
            values.append(rid)
        else:  # request_generation
            values.append(generation)
    return tuple(values)


def rank_views(workload: WorkloadManifest, state: SchedulerState) -> dict[str, TieBreakKey]:
    """The declared key of every request whose frontiers derive legal work (computed once
    per state; pass it to `check_plan` when many plans read the same state)."""
    ranks: dict[str, TieBreakKey] = {}
    for rid, view in state.by_id.items():
        phase = view.derived_phase()
        if phase is not None:
            ranks[rid] = expected_key(workload, view, phase)
    return ranks


def _fmt(key: TieBreakKey) -> str:
    return "(" + ", ".join(repr(v) for v in key) + ")"


def check_plan(
    workload: WorkloadManifest,
    state: SchedulerState,
    plan: IterationPlan,
    *,
    ranks: Mapping[str, TieBreakKey] | None = None,
) -> list[Issue]:
    """Every plan rule of 0x01A against one workload and the state the plan claims to read.

    `ranks` is `rank_views(workload, state)`, precomputed by callers that check many plans
    against one state.
    """
    if ranks is None:
        ranks = rank_views(workload, state)
    out = _binding_issues(workload, state, plan)
    selected_ids, tokens, keys = _selected_issues(out, state, plan, ranks)
    out.extend(order_issues(keys))
    budgets = workload.budgets
    ledger = plan.budget_ledger
    budget_issues(out, budgets.token_budget, budgets.sequence_budget, tokens, len(selected_ids))
    ledger_issues(
        out,
        budgets.token_budget,
        budgets.sequence_budget,
        ledger.token_budget,
        ledger.sequence_budget,
        ledger.tokens_used,
        ledger.sequences_used,
        tokens,
        len(plan.selected),
    )
    out.extend(_check_not_selected(state, plan, selected_ids, keys, ranks))
    return out


def _binding_issues(
    workload: WorkloadManifest, state: SchedulerState, plan: IterationPlan
) -> list[Issue]:
    """The plan answers this state's version and decision, for the declared policy."""
    out: list[Issue] = []
    if plan.input_state_version != state.state_version:
        out.append(
            Issue(
                "PLAN.STATE_VERSION.MISMATCH",
                "plan",
                "/input_state_version",
                f"plan reads state version {plan.input_state_version},"
                f" but the state is version {state.state_version}",
            )
        )
    if plan.decision_id != state.decision_id:
        out.append(
            Issue(
                "PLAN.DECISION.MISMATCH",
                "plan",
                "/decision_id",
                f"plan is for decision {plan.decision_id!r}, the state for {state.decision_id!r}",
            )
        )
    policy = workload.policy
    if plan.policy_id != policy.policy_id:
        out.append(
            Issue(
                "PLAN.POLICY.ID_MISMATCH",
                "plan",
                "/policy_id",
                f"plan claims policy {plan.policy_id!r}; the workload declares"
                f" {policy.policy_id!r}",
            )
        )
    if plan.policy_version != policy.policy_version:
        out.append(
            Issue(
                "PLAN.POLICY.VERSION_MISMATCH",
                "plan",
                "/policy_version",
                f"plan claims policy version {plan.policy_version!r}; the workload declares"
                f" {policy.policy_version!r}",
            )
        )
    return out


def _selected_issues(
    out: list[Issue],
    state: SchedulerState,
    plan: IterationPlan,
    ranks: Mapping[str, TieBreakKey],
) -> tuple[set[str], int, list[tuple[int, TieBreakKey]]]:
    """Each selected item against its view; returns the selected ids, the tokens they use and
    the (index, declared key) of every item with legal work."""
    selected_ids: set[str] = set()
    tokens = 0
    keys: list[tuple[int, TieBreakKey]] = []
    for i, w in enumerate(plan.selected):
        rid = w.request_id
        width = w.end - w.start
        if width > 0:
            tokens += width
        if rid in selected_ids:
            out.append(duplicate_issue(i, rid))
        selected_ids.add(rid)
        if not _positions_are(w.positions, w.start, w.end):
            out.append(
                Issue(
                    "PLAN.POSITIONS.FORGED",
                    "plan",
                    f"/selected/{i}/positions",
                    f"{rid}: positions are not range({w.start}, {w.end})",
                )
            )
        if width <= 0:
            out.append(empty_issue(i, rid, w.start, w.end))
        view = state.by_id.get(rid)
        if view is None:
            out.append(unknown_issue(i, rid, state.state_version))
            continue
        phase = work_item_issues(
            out,
            i,
            rid,
            w.start,
            w.end,
            w.phase,
            w.request_generation,
            w.snapshot_version,
            view.request_generation,
            view.snapshot_version,
            view.terminal,
            view.ready,
            view.readiness_reason,
            view.prompt_tokens,
            view.emitted_tokens,
            view.computed_tokens,
        )
        if phase is None:
            continue
        key = ranks[rid]
        if w.tie_break_key != key:
            out.append(forged_key_issue(i, rid, w.tie_break_key, key))
        keys.append((i, key))
    return selected_ids, tokens, keys


# --------------------------------------------------------------------------- rule kernels
# The plan rules, each in one place. `check_plan` applies them to frozen records; the replay
# engine's incremental validator (`cbaudit.contract.live`) applies the same functions to its
# own request objects, so both paths agree by construction. Pointers are relative to the plan.


def duplicate_issue(index: int, rid: str) -> Issue:
    return Issue(
        "PLAN.REQUEST.DUPLICATE",
        "plan",
        f"/selected/{index}/request_id",
        f"{rid} is selected more than once in this plan",
    )


def empty_issue(index: int, rid: str, start: int, end: int) -> Issue:
    return Issue(
        "PLAN.INTERVAL.EMPTY",
        "plan",
        f"/selected/{index}/end",
        f"{rid}: interval [{start}, {end}) selects no token",
    )


def unknown_issue(index: int, rid: str, state_version: int) -> Issue:
    return Issue(
        "PLAN.REQUEST.UNKNOWN",
        "plan",
        f"/selected/{index}/request_id",
        f"{rid} has no service view in state version {state_version}",
    )


def forged_key_issue(index: int, rid: str, recorded: TieBreakKey, key: TieBreakKey) -> Issue:
    return Issue(
        "PLAN.TIE_BREAK.FORGED",
        "plan",
        f"/selected/{index}/tie_break_key",
        f"{rid}: recorded key {_fmt(recorded)}, the declared policy gives {_fmt(key)}",
    )


def _positions_are(positions: tuple[int, ...], start: int, end: int) -> bool:
    """Whether `positions` is exactly range(start, end), in time linear in the input.

    The range is built only once its length is known to equal the input's: an interval such
    as [0, 10**15) in a hostile plan must be a finding, not a memory error. Then one tuple
    comparison (C speed) checks every position.
    """
    if len(positions) != max(end - start, 0):
        return False
    return positions == tuple(range(start, end))


def work_item_issues(
    out: list[Issue],
    index: int,
    rid: str,
    start: int,
    end: int,
    annotated: str,
    generation: int,
    snapshot: int,
    view_generation: int,
    view_snapshot: int,
    terminal: bool,
    ready: bool,
    readiness_reason: str | None,
    p: int,
    e: int,
    c: int,
) -> Phase | None:
    """The rules binding selected interval [start, end) (annotated `annotated`, bound to
    `generation` / `snapshot`) to the state's view of its request (generation, snapshot,
    readiness, frontiers p, e, c). Appends to `out`; returns the derived phase, None when the
    frontiers admit no legal interval. The checks are inline (this runs for every selected
    item of every replayed iteration); the issues are built out of line, only when found."""
    if generation != view_generation:
        out.append(_stale_generation(index, rid, generation, view_generation))
    if snapshot != view_snapshot:
        out.append(_stale_snapshot(index, rid, snapshot, view_snapshot))
    if terminal or not ready:
        out.append(_not_selectable(index, rid, view_generation, terminal, readiness_reason))
    phase = derive_phase(p, e, c)
    if phase is None:
        out.append(_no_legal_work(index, rid, p, e, c))
        return None
    if start != c:
        out.append(_off_frontier(index, rid, start, c))
    if annotated != phase:
        out.append(_forged_phase(index, rid, annotated, phase))
    if phase is _PREFILL:
        if end > p:
            out.append(_beyond_prompt(index, rid, end, p))
    elif phase is _REBUILD:
        if end > p + e:
            out.append(_beyond_stream(index, rid, end, p, e))
    elif end - start > 1:
        out.append(_multi_row_decode(index, rid, start, end, c))
    return phase


def _stale_generation(index: int, rid: str, generation: int, view_generation: int) -> Issue:
    return Issue(
        "PLAN.GENERATION.STALE",
        "plan",
        f"/selected/{index}/request_generation",
        f"{rid}: plan binds generation {generation}, the state holds generation {view_generation}",
    )


def _stale_snapshot(index: int, rid: str, snapshot: int, view_snapshot: int) -> Issue:
    return Issue(
        "PLAN.SNAPSHOT.STALE",
        "plan",
        f"/selected/{index}/snapshot_version",
        f"{rid}: plan binds snapshot {snapshot}, the state holds snapshot {view_snapshot}",
    )


def _not_selectable(
    index: int, rid: str, view_generation: int, terminal: bool, readiness_reason: str | None
) -> Issue:
    """A selected request that is terminal, or else not ready."""
    if terminal:
        return Issue(
            "PLAN.REQUEST.TERMINAL",
            "plan",
            f"/selected/{index}/request_id",
            f"{rid}:{view_generation} is terminal",
        )
    reason = f" ({readiness_reason})" if readiness_reason else ""
    return Issue(
        "PLAN.REQUEST.NOT_READY",
        "plan",
        f"/selected/{index}/request_id",
        f"{rid} is not ready{reason}",
    )


def _no_legal_work(index: int, rid: str, p: int, e: int, c: int) -> Issue:
    return Issue(
        "PLAN.INTERVAL.NO_LEGAL_WORK",
        "plan",
        f"/selected/{index}",
        f"{rid}: frontiers p={p} e={e} c={c} admit no legal interval",
    )


def _off_frontier(index: int, rid: str, start: int, c: int) -> Issue:
    """An interval that does not start at the computed frontier."""
    if start < c:
        return Issue(
            "PLAN.INTERVAL.BEFORE_FRONTIER",
            "plan",
            f"/selected/{index}/start",
            f"{rid}: interval starts at {start}, before the computed frontier {c}",
        )
    return Issue(
        "PLAN.INTERVAL.AFTER_FRONTIER",
        "plan",
        f"/selected/{index}/start",
        f"{rid}: interval starts at {start}, leaving a gap after the computed frontier {c}",
    )


def _forged_phase(index: int, rid: str, annotated: str, phase: Phase) -> Issue:
    return Issue(
        "PLAN.PHASE.FORGED",
        "plan",
        f"/selected/{index}/phase",
        f"{rid}: annotated {annotated!s}, but its frontiers derive {phase.value}",
    )


def _beyond_prompt(index: int, rid: str, end: int, p: int) -> Issue:
    return Issue(
        "PLAN.INTERVAL.BEYOND_PROMPT",
        "plan",
        f"/selected/{index}/end",
        f"{rid}: prefill ends at {end}, beyond the prompt of {p} tokens",
    )


def _beyond_stream(index: int, rid: str, end: int, p: int, e: int) -> Issue:
    return Issue(
        "PLAN.RECOMPUTE.BEYOND_STREAM",
        "plan",
        f"/selected/{index}/end",
        f"{rid}: rebuild ends at {end}, beyond the logical stream p + e = {p} + {e} = {p + e}",
    )


def _multi_row_decode(index: int, rid: str, start: int, end: int, c: int) -> Issue:
    return Issue(
        "PLAN.DECODE.MULTI_ROW",
        "plan",
        f"/selected/{index}/end",
        f"{rid}: ordinary decode is exactly one row [{c}, {c + 1}), not [{start}, {end})",
    )


def order_issues(keys: Sequence[tuple[int, TieBreakKey]]) -> list[Issue]:
    """Selected work must run in non-decreasing key order (`keys`: (index, key) pairs)."""
    out: list[Issue] = []
    for (_, prev), (j, cur) in pairwise(keys):
        if cur < prev:
            out.append(
                Issue(
                    "PLAN.TIE_BREAK.ORDER",
                    "plan",
                    f"/selected/{j}",
                    f"key {_fmt(cur)} is selected after the larger key {_fmt(prev)}",
                )
            )
    return out


def budget_issues(
    out: list[Issue], token_budget: int, sequence_budget: int, tokens: int, sequences: int
) -> None:
    """`tokens` (positive widths) and distinct `sequences` selected against the budgets."""
    if tokens > token_budget:
        out.append(
            Issue(
                "PLAN.BUDGET.TOKEN_EXCEEDED",
                "plan",
                "/selected",
                f"selected intervals use {tokens} tokens > token budget {token_budget}",
            )
        )
    if sequences > sequence_budget:
        out.append(
            Issue(
                "PLAN.BUDGET.SEQUENCE_EXCEEDED",
                "plan",
                "/selected",
                f"{sequences} requests selected > sequence budget {sequence_budget}",
            )
        )


def ledger_issues(
    out: list[Issue],
    token_budget: int,
    sequence_budget: int,
    ledger_token_budget: int,
    ledger_sequence_budget: int,
    tokens_used: int,
    sequences_used: int,
    tokens: int,
    n_selected: int,
) -> None:
    """The plan's budget ledger against the workload's budgets and what it selected."""
    if ledger_token_budget != token_budget:
        out.append(
            Issue(
                "PLAN.LEDGER.BUDGET_MISMATCH",
                "plan",
                "/budget_ledger/token_budget",
                f"ledger token budget {ledger_token_budget}, workload {token_budget}",
            )
        )
    if ledger_sequence_budget != sequence_budget:
        out.append(
            Issue(
                "PLAN.LEDGER.BUDGET_MISMATCH",
                "plan",
                "/budget_ledger/sequence_budget",
                f"ledger sequence budget {ledger_sequence_budget}, workload {sequence_budget}",
            )
        )
    if tokens_used != tokens:
        out.append(
            Issue(
                "PLAN.LEDGER.TOKENS_DRIFT",
                "plan",
                "/budget_ledger/tokens_used",
                f"ledger says {tokens_used} tokens used; the selected widths sum to {tokens}",
            )
        )
    if sequences_used != n_selected:
        out.append(
            Issue(
                "PLAN.LEDGER.SEQUENCES_DRIFT",
                "plan",
                "/budget_ledger/sequences_used",
                f"ledger says {sequences_used} sequences used; {n_selected} are selected",
            )
        )


def not_selected_issue(index: int, rid: str, selected: bool, state_version: int) -> Issue:
    """A not_selected entry that names a selected request, or one the state does not hold."""
    if selected:
        return Issue(
            "PLAN.NOT_SELECTED.CONFLICT",
            "plan",
            f"/not_selected/{index}/request_id",
            f"{rid} is both selected and recorded as not selected",
        )
    return Issue(
        "PLAN.NOT_SELECTED.UNKNOWN",
        "plan",
        f"/not_selected/{index}/request_id",
        f"{rid} has no service view in state version {state_version}",
    )


def skipped_issue(
    rid: str, generation: int, key: TieBreakKey, worst: TieBreakKey, pointer: str
) -> Issue:
    """A ready request ranked ahead of selected work (`worst`) with no not_selected reason."""
    return Issue(
        "PLAN.TIE_BREAK.SKIPPED_UNEXPLAINED",
        "plan",
        pointer,
        f"ready {rid}:{generation} ranks {_fmt(key)}, ahead of selected"
        f" work at {_fmt(worst)}, but no not_selected reason is recorded",
    )


def _check_not_selected(
    state: SchedulerState,
    plan: IterationPlan,
    selected_ids: set[str],
    keys: list[tuple[int, TieBreakKey]],
    ranks: Mapping[str, TieBreakKey],
) -> list[Issue]:
    out: list[Issue] = []
    explained: set[str] = set()
    for i, ns in enumerate(plan.not_selected):
        explained.add(ns.request_id)
        if ns.request_id in selected_ids:
            out.append(not_selected_issue(i, ns.request_id, True, state.state_version))
        elif ns.request_id not in state.by_id:
            out.append(not_selected_issue(i, ns.request_id, False, state.state_version))
    if not keys:
        return out
    worst = max(k for _, k in keys)
    pointer = "/not_selected" if plan.not_selected else ""
    for rid, key in ranks.items():
        if rid in selected_ids or rid in explained:
            continue
        view = state.by_id[rid]
        if view.terminal or not view.ready:
            continue
        if key < worst:
            out.append(skipped_issue(rid, view.request_generation, key, worst, pointer))
    return out
