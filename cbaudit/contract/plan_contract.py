"""Plan checks (article 0x01A `validate_plan`): binding, intervals, budgets, tie-break."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise

from cbaudit.contract.issues import Issue
from cbaudit.contract.records import (
    IterationPlan,
    Phase,
    RequestView,
    SchedulerState,
    TieBreakValue,
    WorkloadManifest,
)

TieBreakKey = tuple[TieBreakValue, ...]

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
    tb = workload.policy.tie_break
    decl = workload.by_id.get(view.request_id)
    values: list[TieBreakValue] = []
    for name in tb.key:
        if name == "phase_rank":
            values.append(phase_rank(tb.phase_order, phase))
        elif name == "priority_rank":
            prio = view.priority
            if prio is None and decl is not None:
                prio = decl.priority
            values.append(prio if prio is not None else 0)
        elif name == "arrival_order":
            order = view.arrival_order
            if order is None and decl is not None:
                order = decl.arrival_order
            if order is None:
                order = workload.position_of.get(view.request_id, len(workload.requests))
            values.append(order)
        elif name == "request_id":
            values.append(view.request_id)
        else:  # request_generation
            values.append(view.request_generation)
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

    selected_ids: set[str] = set()
    tokens = 0
    keys: list[tuple[int, TieBreakKey]] = []
    for i, w in enumerate(plan.selected):
        base = f"/selected/{i}"
        rid = w.request_id
        width = w.end - w.start
        if width > 0:
            tokens += width
        if rid in selected_ids:
            out.append(
                Issue(
                    "PLAN.REQUEST.DUPLICATE",
                    "plan",
                    base + "/request_id",
                    f"{rid} is selected more than once in this plan",
                )
            )
        selected_ids.add(rid)
        if w.positions != tuple(range(w.start, w.end)):
            out.append(
                Issue(
                    "PLAN.POSITIONS.FORGED",
                    "plan",
                    base + "/positions",
                    f"{rid}: positions are not range({w.start}, {w.end})",
                )
            )
        if width <= 0:
            out.append(
                Issue(
                    "PLAN.INTERVAL.EMPTY",
                    "plan",
                    base + "/end",
                    f"{rid}: interval [{w.start}, {w.end}) selects no token",
                )
            )
        view = state.by_id.get(rid)
        if view is None:
            out.append(
                Issue(
                    "PLAN.REQUEST.UNKNOWN",
                    "plan",
                    base + "/request_id",
                    f"{rid} has no service view in state version {state.state_version}",
                )
            )
            continue
        if w.request_generation != view.request_generation:
            out.append(
                Issue(
                    "PLAN.GENERATION.STALE",
                    "plan",
                    base + "/request_generation",
                    f"{rid}: plan binds generation {w.request_generation}, the state holds"
                    f" generation {view.request_generation}",
                )
            )
        if w.snapshot_version != view.snapshot_version:
            out.append(
                Issue(
                    "PLAN.SNAPSHOT.STALE",
                    "plan",
                    base + "/snapshot_version",
                    f"{rid}: plan binds snapshot {w.snapshot_version}, the state holds snapshot"
                    f" {view.snapshot_version}",
                )
            )
        if view.terminal:
            out.append(
                Issue(
                    "PLAN.REQUEST.TERMINAL",
                    "plan",
                    base + "/request_id",
                    f"{rid}:{view.request_generation} is terminal",
                )
            )
        elif not view.ready:
            reason = f" ({view.readiness_reason})" if view.readiness_reason else ""
            out.append(
                Issue(
                    "PLAN.REQUEST.NOT_READY",
                    "plan",
                    base + "/request_id",
                    f"{rid} is not ready{reason}",
                )
            )
        phase = view.derived_phase()
        if phase is None:
            out.append(
                Issue(
                    "PLAN.INTERVAL.NO_LEGAL_WORK",
                    "plan",
                    base,
                    f"{rid}: frontiers p={view.prompt_tokens} e={view.emitted_tokens}"
                    f" c={view.computed_tokens} admit no legal interval",
                )
            )
            continue
        c = view.computed_tokens
        if w.start < c:
            out.append(
                Issue(
                    "PLAN.INTERVAL.BEFORE_FRONTIER",
                    "plan",
                    base + "/start",
                    f"{rid}: interval starts at {w.start}, before the computed frontier {c}",
                )
            )
        elif w.start > c:
            out.append(
                Issue(
                    "PLAN.INTERVAL.AFTER_FRONTIER",
                    "plan",
                    base + "/start",
                    f"{rid}: interval starts at {w.start}, leaving a gap after the computed"
                    f" frontier {c}",
                )
            )
        if w.phase is not phase:
            out.append(
                Issue(
                    "PLAN.PHASE.FORGED",
                    "plan",
                    base + "/phase",
                    f"{rid}: annotated {w.phase.value}, but its frontiers derive {phase.value}",
                )
            )
        if phase is Phase.PREFILL_CHUNK:
            if w.end > view.prompt_tokens:
                out.append(
                    Issue(
                        "PLAN.INTERVAL.BEYOND_PROMPT",
                        "plan",
                        base + "/end",
                        f"{rid}: prefill ends at {w.end}, beyond the prompt of"
                        f" {view.prompt_tokens} tokens",
                    )
                )
        elif phase is Phase.RECOMPUTE_CHUNK:
            stream = view.logical_length
            if w.end > stream:
                out.append(
                    Issue(
                        "PLAN.RECOMPUTE.BEYOND_STREAM",
                        "plan",
                        base + "/end",
                        f"{rid}: rebuild ends at {w.end}, beyond the logical stream p + e ="
                        f" {view.prompt_tokens} + {view.emitted_tokens} = {stream}",
                    )
                )
        elif width > 1:
            out.append(
                Issue(
                    "PLAN.DECODE.MULTI_ROW",
                    "plan",
                    base + "/end",
                    f"{rid}: ordinary decode is exactly one row [{c}, {c + 1}), not"
                    f" [{w.start}, {w.end})",
                )
            )
        key = ranks[rid]
        if w.tie_break_key != key:
            out.append(
                Issue(
                    "PLAN.TIE_BREAK.FORGED",
                    "plan",
                    base + "/tie_break_key",
                    f"{rid}: recorded key {_fmt(w.tie_break_key)}, the declared policy gives"
                    f" {_fmt(key)}",
                )
            )
        keys.append((i, key))

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

    out.extend(_check_budgets(workload, plan, tokens, len(selected_ids)))
    out.extend(_check_not_selected(state, plan, selected_ids, keys, ranks))
    return out


def _check_budgets(
    workload: WorkloadManifest, plan: IterationPlan, tokens: int, sequences: int
) -> list[Issue]:
    out: list[Issue] = []
    budgets = workload.budgets
    ledger = plan.budget_ledger
    if tokens > budgets.token_budget:
        out.append(
            Issue(
                "PLAN.BUDGET.TOKEN_EXCEEDED",
                "plan",
                "/selected",
                f"selected intervals use {tokens} tokens > token budget {budgets.token_budget}",
            )
        )
    if sequences > budgets.sequence_budget:
        out.append(
            Issue(
                "PLAN.BUDGET.SEQUENCE_EXCEEDED",
                "plan",
                "/selected",
                f"{sequences} requests selected > sequence budget {budgets.sequence_budget}",
            )
        )
    if ledger.token_budget != budgets.token_budget:
        out.append(
            Issue(
                "PLAN.LEDGER.BUDGET_MISMATCH",
                "plan",
                "/budget_ledger/token_budget",
                f"ledger token budget {ledger.token_budget}, workload {budgets.token_budget}",
            )
        )
    if ledger.sequence_budget != budgets.sequence_budget:
        out.append(
            Issue(
                "PLAN.LEDGER.BUDGET_MISMATCH",
                "plan",
                "/budget_ledger/sequence_budget",
                f"ledger sequence budget {ledger.sequence_budget},"
                f" workload {budgets.sequence_budget}",
            )
        )
    if ledger.tokens_used != tokens:
        out.append(
            Issue(
                "PLAN.LEDGER.TOKENS_DRIFT",
                "plan",
                "/budget_ledger/tokens_used",
                f"ledger says {ledger.tokens_used} tokens used; the selected widths sum to"
                f" {tokens}",
            )
        )
    if ledger.sequences_used != len(plan.selected):
        out.append(
            Issue(
                "PLAN.LEDGER.SEQUENCES_DRIFT",
                "plan",
                "/budget_ledger/sequences_used",
                f"ledger says {ledger.sequences_used} sequences used; {len(plan.selected)}"
                " are selected",
            )
        )
    return out


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
        base = f"/not_selected/{i}"
        explained.add(ns.request_id)
        if ns.request_id in selected_ids:
            out.append(
                Issue(
                    "PLAN.NOT_SELECTED.CONFLICT",
                    "plan",
                    base + "/request_id",
                    f"{ns.request_id} is both selected and recorded as not selected",
                )
            )
        elif ns.request_id not in state.by_id:
            out.append(
                Issue(
                    "PLAN.NOT_SELECTED.UNKNOWN",
                    "plan",
                    base + "/request_id",
                    f"{ns.request_id} has no service view in state version {state.state_version}",
                )
            )
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
            out.append(
                Issue(
                    "PLAN.TIE_BREAK.SKIPPED_UNEXPLAINED",
                    "plan",
                    pointer,
                    f"ready {rid}:{view.request_generation} ranks {_fmt(key)}, ahead of selected"
                    f" work at {_fmt(worst)}, but no not_selected reason is recorded",
                )
            )
    return out
