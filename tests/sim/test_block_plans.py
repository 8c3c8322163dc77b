"""A decode block the policy takes and never reads stays a block in the plan (`Plan.block`).

On the fast path the engine offers the running decodes as a block it vouches for
(`PlanBuilder(vouched_block=...)`). When the policy takes it and nobody reads the items, the
plan keeps the block as its first rows (`PlanBuilder(pass_block=True)`): the contract checks
it as a block (`LiveContract._vouch_block`, the arrival orders for the key order), the
executor serves its rows first and the result check reads each request's emitted count
before its row. These tests hold that form to the written-out one: the same reports as the
per-iteration path, the same findings for policies that misuse a block they took, and, at
real cuts, the same issues for the block form and the written-out form of the same rows.
"""

from __future__ import annotations

from typing import Any

import pytest

from cbaudit.contract.issues import Issue
from cbaudit.contract.live import LiveContract
from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import Phase, Queue
from cbaudit.policies.base import BlockRow, Plan, PlanBuilder, PlanItem, StateView
from cbaudit.policies.budget import Reason
from cbaudit.policies.vllm_v1 import VllmV1Policy
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.workload import workload_from_data
from tests.sim.generated import busy_workload_doc
from tests.sim.test_stretch import (
    SEEDS,
    _alike_on_both_paths,
    _canonical,
    _cost,
    _long_workload,
    _run,
    _workload,
)


@pytest.mark.parametrize("cost", ["unit", "roofline"])
def test_blocks_stay_blocks_and_the_reports_are_the_per_iteration_paths(cost: str) -> None:
    """vllm-v1 on the generated workloads: plans with a decode block happen, under both cost
    models, and every report, finding and request state is the per-iteration path's."""
    plans = rows = 0
    for seed in SEEDS:
        for wl in (_workload(seed, "ms"), *([_long_workload(seed, "ms")] if seed < 4 else [])):
            fast = _run(wl, VllmV1Policy({}), _cost(cost), stretches=True)
            slow = _run(wl, VllmV1Policy({}), _cost(cost), stretches=False)
            assert _canonical(fast.report()) == _canonical(slow.report()), seed
            assert slow.block_plans == 0
            plans += fast.block_plans
            rows += fast.block_rows
    assert plans > 1000 and rows > plans, (plans, rows)


@pytest.mark.parametrize("cost", ["unit", "roofline"])
def test_busy_workloads_keep_large_blocks_with_the_per_iteration_paths_reports(cost: str) -> None:
    """Busy workloads (`generated.busy_workload_doc`: the running list at the sequence
    budget, requests waiting, a finish and an admission every few iterations, as a saturated
    trace): large kept blocks, and the per-iteration path's reports."""
    plans = rows = 0
    for seed in range(4):
        wl = workload_from_data(busy_workload_doc(seed, "tick" if cost == "unit" else "ms"), "b")
        fast = _run(wl, VllmV1Policy({}), _cost(cost), stretches=True)
        slow = _run(wl, VllmV1Policy({}), _cost(cost), stretches=False)
        assert _canonical(fast.report()) == _canonical(slow.report()), seed
        plans += fast.block_plans
        rows += fast.block_rows
    assert plans > 500 and rows > 10 * plans, (plans, rows)


def test_no_block_passes_where_every_row_is_written() -> None:
    """A trace or a cross-checked replay lists every row, and a key that does not start with
    the arrival order (vllm-v1's priority scheduling) is sorted row by row: no plan there
    keeps a block."""
    wl = _long_workload(1, "ms")
    priority = _run(wl, VllmV1Policy({"scheduling": "priority"}), _cost("roofline"), stretches=True)
    assert priority.stretch_iterations > 0 and priority.block_plans == 0
    checked = Engine(
        wl,
        VllmV1Policy({}),
        _cost("roofline"),
        validation=Validation.CONTRACT,
        cross_check=True,
    )
    checked.run()
    assert checked.block_plans == 0 and not checked.findings


def _selected(plan: PlanBuilder, view: StateView, r: LiveRequest) -> bool:
    """Whether `r` has a selected row, without writing out a taken block (`plan.items`
    would)."""
    n = plan.taken_block()
    return r in view.running[:n] or any(it.req is r for it in plan.rows_besides_block())


class _Misuse(VllmV1Policy):
    """vllm-v1 that, from cut `at` on, misuses the first running request's row after
    planning, without reading the items: it also explains that request as not selected
    (`explain`), or takes one more row for it (`twice`)."""

    def __init__(self, at: int, how: str, hits: list[int]) -> None:
        super().__init__({})
        self.at = at
        self.how = how
        self.hits = hits

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        super().choose(view, plan)
        if view.iteration < self.at or not view.running:
            return
        r = view.running[0]
        if not _selected(plan, view, r):
            return
        self.hits[plan.taken_block() > 0] += 1
        if self.how == "explain":
            plan.defer(r, Reason.DEFERRED_TOKEN_BUDGET)
        else:
            plan.select(r, 1)


@pytest.mark.parametrize(
    ("how", "code"),
    [("explain", "PLAN.NOT_SELECTED.CONFLICT"), ("twice", "PLAN.REQUEST.DUPLICATE")],
)
@pytest.mark.instruments
def test_a_policy_that_misuses_a_block_it_took_is_caught_at_the_same_iteration(
    how: str, code: str
) -> None:
    """The same findings at the same iteration, and the same report, on both paths; on the
    fast path the request misused was in a block the policy had taken."""
    hits = [0, 0]  # (no block taken, a block taken) at the misuse
    codes: set[str] = set()
    for seed in SEEDS:
        wl = _workload(seed, "ms")
        for at in (3, 11, 40):
            if _alike_on_both_paths(wl, lambda at: _Misuse(at, how, hits), at, seed):
                engine = _run(wl, _Misuse(at, how, [0, 0]), _cost("roofline"), stretches=False)
                codes |= {f.code for f in engine.findings}
    assert hits[1] > 10, hits
    assert code in codes, codes


# ---------------------------------------------------------------- block form vs rows


def _issues(
    live: LiveContract,
    plan: Plan,
    version: int,
    running: list[LiveRequest],
    waiting: list[LiveRequest],
) -> list[tuple[str, str, str]]:
    """`check_plan`'s issues, with the contract's state kept as it was (as `plan_passes`)."""
    touched, published = dict(live._touched), live._published
    try:
        found: list[Issue] = live.check_plan(plan, version, running, waiting)
    finally:
        live._touched, live._published = touched, published
    return [(i.code, i.pointer, i.message) for i in found]


def _written(plan: Plan, block: list[LiveRequest], key_fn: Any) -> Plan:
    """The same plan with `block`'s rows written out as vouched items, in that order."""
    rows: list[PlanItem] = []
    for r in block:
        row = BlockRow()
        row.req = r
        row.start = r.c
        row.end = r.c + 1
        row.phase = Phase.DECODE_ROW
        row.key = key_fn(r, Phase.DECODE_ROW)
        row.snapshot = r.snapshot
        rows.append(row)
    return Plan(
        plan.state_version,
        rows + plan.items,
        plan.not_selected,
        plan.preempted,
        plan.admitted,
        plan.tokens_used,
        plan.sequences_used,
        plan.blocks_used,
        plan.rejected,
    )


def _variants(engine: Engine, plan: Plan) -> list[tuple[str, Plan, list[LiveRequest]]]:
    """The plan and three changes of it (name, block plan, the running list of its cut)."""
    block = plan.block
    running = list(engine.running)
    out = [("as built", plan, running)]
    swapped = [running[1], running[0], *running[2:]]  # (the engine's order, changed)
    out.append(("arrival orders descend", _replace(plan, block=swapped[: len(block)]), swapped))
    explained = [*plan.not_selected, (block[0], Reason.DEFERRED_TOKEN_BUDGET.value)]
    out.append(("a block request explained", _replace(plan, not_selected=explained), running))
    extra = PlanItem.of(block[-1], block[-1].c, block[-1].c + 1, Phase.DECODE_ROW, (1 << 62,))
    twice = _replace(plan, items=[*plan.items, extra], sequences=plan.sequences_used + 1)
    out.append(("a block request twice", twice, running))
    return out


def _replace(
    plan: Plan,
    *,
    block: list[LiveRequest] | None = None,
    not_selected: list[tuple[LiveRequest, str]] | None = None,
    items: list[PlanItem] | None = None,
    sequences: int | None = None,
) -> Plan:
    return Plan(
        plan.state_version,
        plan.items if items is None else items,
        plan.not_selected if not_selected is None else not_selected,
        plan.preempted,
        plan.admitted,
        plan.tokens_used + (0 if items is None else 1),
        plan.sequences_used if sequences is None else sequences,
        plan.blocks_used,
        plan.rejected,
        plan.block if block is None else block,
    )


@pytest.mark.instruments
def test_the_block_form_gets_the_written_out_forms_issues(monkeypatch: pytest.MonkeyPatch) -> None:
    """At real cuts with a block of two or more rows: the plan as built, its block's order
    descending, a block request also explained, a block request selected twice. Each gets
    the same issues (codes, pointers, messages, in order) in block form as written out."""
    real = LiveContract.check_plan
    compared: dict[str, int] = {}
    codes: set[str] = set()
    engines: list[Engine] = []

    def check_plan(
        live: LiveContract,
        plan: Any,
        version: int,
        running: Any,
        waiting: Any,
    ) -> list[Issue]:
        engine = engines[-1]
        if len(plan.block) >= 2 and len(engine.running) >= 2 and engine.running is running:
            for name, variant, cut in _variants(engine, plan):
                block_form = _issues(live, variant, version, cut, list(waiting))
                written = _written(_replace(variant, block=[]), variant.block, engine.key_fn)
                assert block_form == _issues(live, written, version, cut, list(waiting)), name
                compared[name] = compared.get(name, 0) + 1
                codes.update(code for code, _, _ in block_form)
        return real(live, plan, version, running, waiting)

    monkeypatch.setattr(LiveContract, "check_plan", check_plan)
    for seed in SEEDS:
        engine = Engine(
            _workload(seed, "ms"),
            VllmV1Policy({}),
            _cost("roofline"),
            validation=Validation.CONTRACT,
        )
        engines.append(engine)
        engine.run()
        assert not engine.findings, seed
    assert len(compared) == 4 and min(compared.values()) > 20, compared
    assert {
        "PLAN.TIE_BREAK.ORDER",
        "PLAN.NOT_SELECTED.CONFLICT",
        "PLAN.REQUEST.DUPLICATE",
    } <= codes, codes


def test_a_block_that_is_not_the_running_prefix_is_an_engine_fault() -> None:
    """The contract takes a block only as the first running requests of the cut it checks;
    any other is the engine's fault and stops the replay with an error, not a pass."""
    wl = _workload(3, "ms")
    engine = Engine(wl, VllmV1Policy({}), _cost("roofline"), validation=Validation.CONTRACT)
    engine.start()
    while len(engine.running) < 2 and engine.stop is None:
        engine.iterate()
    assert engine.live is not None and len(engine.running) >= 2
    running = list(engine.running)
    plan = Plan(engine.version, [], [], [], [], 1, 1, 0, [], [running[1]])
    with pytest.raises(RuntimeError, match="vouched prefix"):
        engine.live.check_plan(plan, engine.version, running, list(engine.waiting))
    for r in running:
        assert r.queue is Queue.RUNNING
