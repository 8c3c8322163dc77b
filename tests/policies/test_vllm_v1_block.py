"""Decode blocks (`PlanBuilder.offer_block` / `take_block`): vllm-v1 taking the offered decodes
at once makes exactly the plan of its row-by-row running pass, and the builder's block is the
items `take` makes, written out whenever anyone reads them."""

from __future__ import annotations

import random
from typing import Any

import pytest

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.workload_records import Phase, Queue
from cbaudit.policies.base import BudgetsView, Plan, PlanBuilder, key_function
from cbaudit.policies.vllm_v1 import VllmV1Policy
from cbaudit.sim.engine import _View


def _decode(i: int, p: int, e: int, bs: int | None, client: str | None = None) -> LiveRequest:
    """A running request that is a ready decode at its frontier (`c = p + e - 1`)."""
    r = LiveRequest(i, f"d{i}", 0, p, 10_000, float(i), i, i % 3, client)
    r.e = e
    r.c = p + e - 1
    r.queue = Queue.RUNNING
    r.blocks = -(-r.c // bs) if bs else 0
    r.snapshot = 7 * i + e
    return r


def _plan_fields(plan: Plan) -> tuple[Any, ...]:
    """Everything a plan says, with requests by id."""
    return (
        plan.state_version,
        [(it.req.rid, it.start, it.end, it.phase, it.key, it.snapshot) for it in plan.items],
        [(r.rid, why) for r, why in plan.not_selected],
        [r.rid for r in plan.preempted],
        [r.rid for r in plan.admitted],
        plan.tokens_used,
        plan.sequences_used,
        plan.blocks_used,
        [r.rid for r in plan.rejected],
    )


def _cut(rng: random.Random) -> tuple[list[LiveRequest], list[LiveRequest], int, BudgetsView, int]:
    """A random cut whose running list starts with m ready decodes at their frontier (the
    block the engine may offer), perhaps followed by a request prefilling its prompt, with
    requests perhaps waiting; budgets from roomy to tight (so that the row-by-row pass stops
    at the token or sequence budget or preempts)."""
    bs = rng.choice([None, 1, 2, 3, 4, 7, 16, 17])
    m = rng.randint(1, 9)
    running = [_decode(i, rng.randint(1, 40), rng.randint(1, 40), bs) for i in range(m)]
    if rng.random() < 0.4:  # a request prefilling its prompt, last (where vLLM admits)
        r = LiveRequest(m, f"r{m}", 0, rng.randint(2, 90), 50, float(m), m, 1, None)
        r.c = rng.randint(0, r.p - 1)
        r.queue = Queue.RUNNING
        r.blocks = -(-r.c // bs) if bs else 0
        running.append(r)
    waiting = []
    for j in range(rng.choice([0, 0, 1, 3])):
        w = LiveRequest(20 + j, f"w{j}", 0, rng.randint(1, 50), 20, 50.0 + j, 20 + j, j, None)
        w.queue = Queue.WAITING
        waiting.append(w)
    held = sum(r.blocks for r in running)
    total = None if bs is None else held + rng.choice([0, 1, 2, 5, 1000])
    free = None if total is None else total - held
    budgets = BudgetsView(
        rng.choice([1, m - 1, m, m + 1, m + 30, 2048]) or 1,
        rng.choice([1, m - 1, m, m + 1, 256]) or 1,
        bs,
        total,
        rng.choice([None, 0, 1, 4, 512]),
    )
    need = 0 if bs is None or free is None else sum(r.c % bs == 0 for r in running[:m])
    return running, waiting, m, budgets, need


class _Counting(PlanBuilder):
    """A builder that notes each answer of `take_block`."""

    __slots__ = ("answers",)

    def __init__(self, view: Any, key_fn: Any) -> None:
        super().__init__(view, key_fn)
        self.answers: list[bool] = []

    def take_block(self) -> bool:
        got = super().take_block()
        self.answers.append(got)
        return got


@pytest.mark.instruments
@pytest.mark.parametrize("mode", ["fcfs", "priority"])
def test_the_block_is_the_running_pass_row_by_row(mode: str) -> None:
    """Over seeded random cuts (K/V pools from none to one block short, token and sequence
    budgets below, at and above the block, `max_model_len` clamping some decodes or none,
    thresholds, a prefilling request behind the decodes, requests waiting): the plan with the
    decodes offered as a block equals the plan without the offer, field by field, and the
    block is taken at once in some cuts and left to the row-by-row pass in others."""
    rng = random.Random(4021)
    taken = refused = 0
    for _ in range(3000):
        running, waiting, m, budgets, need = _cut(rng)
        options: dict[str, Any] = {"scheduling": mode}
        if rng.random() < 0.3:
            options["max_model_len"] = max(r.c for r in running[:m]) + rng.choice([0, 1, 2, 9])
        policy = VllmV1Policy(options)
        key_fn = key_function(policy.tie_break_key, policy.phase_order)
        plans = []
        for offer in (False, True):
            for r in running + waiting:  # (the pass itself never writes a request)
                assert r.queue is not None
            view = _View.of(3, 4, 9.0, budgets, list(running), list(waiting), None)
            view.free_blocks = (
                None if budgets.kv_total_blocks is None
                else budgets.kv_total_blocks - sum(r.blocks for r in running)
            )  # fmt: skip
            plan = _Counting(view, key_fn)
            if offer:
                plan.offer_block(m, need)
            policy.choose(view, plan)
            if offer:
                taken += plan.answers == [True]
                refused += plan.answers == [False]
            else:
                assert plan.answers == []  # (nothing offered: not asked)
            plans.append(_plan_fields(plan.build()))
        assert plans[0] == plans[1], (budgets, options, [(r.rid, r.c) for r in running])
    assert taken > 600 and refused > 600, (taken, refused)


def _builder(bs: int | None = 4, free: int | None = 100) -> tuple[PlanBuilder, list[LiveRequest]]:
    running = [_decode(i, 5 + i, 1 + 3 * i, bs, client="c") for i in range(4)]
    budgets = BudgetsView(2048, 256, bs, None if free is None else 10_000, None)
    view = _View.of(1, 1, 0.0, budgets, running, [], free)
    policy = VllmV1Policy({})
    return PlanBuilder(view, key_function(policy.tie_break_key, policy.phase_order)), running


def test_a_taken_block_is_the_items_take_makes() -> None:
    """The block written out (on reading `items`) is, item for item, what `take` gives each
    of its requests, and it takes the budgets `take` would."""
    block, running = _builder()
    need = sum(r.c % 4 == 0 for r in running)
    block.offer_block(4, need)
    assert block.take_block()
    assert block.taken_block() == 4 and block.rows_besides_block() == []
    rows, _ = _builder()
    for r in running:
        assert rows.take(r, 1) is None
    for a, b in zip(block.items, rows.items, strict=True):
        assert (a.req, a.start, a.end, a.phase, a.key, a.snapshot) == (
            b.req, b.start, b.end, b.phase, b.key, b.snapshot,
        )  # fmt: skip
        assert a.phase is Phase.DECODE_ROW
    assert block.taken_block() == 0  # written out: they are items now
    left = ("tokens_left", "seqs_left", "free_blocks")
    assert [getattr(block, k) for k in left] == [getattr(rows, k) for k in left]
    assert _plan_fields(block.build()) == _plan_fields(rows.build())


def test_take_block_refuses_what_row_by_row_would_not_take_at_once() -> None:
    """No offer, rows already taken, a second block, and budgets that cannot hold every row
    or every block the rows open: nothing is selected, and nothing is spent."""
    plan, running = _builder()
    assert not plan.take_block()  # nothing offered
    plan.offer_block(4, 2)
    assert plan.take(running[0], 1) is None
    assert not plan.take_block()  # only as the first selection
    for tokens, seqs, free, need in ((3, 256, 100, 0), (2048, 3, 100, 0), (2048, 256, 1, 2)):
        plan, _ = _builder(free=free)
        plan.tokens_left, plan.seqs_left = tokens, seqs
        plan.offer_block(4, need)
        assert not plan.take_block()
        assert (plan.tokens_left, plan.seqs_left, plan.free_blocks) == (tokens, seqs, free)
        assert plan.items == [] and plan.build().blocks_used == 0
    plan, _ = _builder()
    plan.offer_block(4, 0)
    assert plan.take_block() and not plan.take_block()  # one block a plan


def test_edits_after_a_block_see_its_rows() -> None:
    """A policy that reads or edits the plan after taking the block (`chosen`, `unselect`,
    `preempt`, `items`) works on the block's rows: they are written out first."""
    plan, running = _builder()
    plan.offer_block(4, 1)
    assert plan.take_block()
    assert plan.chosen(running[2])
    plan.unselect(running[2])
    assert [it.req.rid for it in plan.items] == ["d0", "d1", "d3"]
    assert (plan.tokens_left, plan.seqs_left) == (2048 - 3, 256 - 3)
    plan, running = _builder()
    plan.offer_block(4, 0)
    assert plan.take_block()
    plan.preempt(running[3])
    assert [it.req.rid for it in plan.items] == ["d0", "d1", "d2"]
    assert [r.rid for r in plan.preempted] == ["d3"]
    plan, running = _builder()
    plan.offer_block(4, 0)
    assert plan.take_block()
    plan.items[0].key = (-1,)  # a forged key lands on the written-out item
    assert plan.build().items[0].key == (-1,)
