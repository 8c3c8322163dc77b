"""The engine's named steps, each on its own: admit, idle, choose, validate, execute, publish."""

from __future__ import annotations

from typing import Any

import pytest
from fields import slot_names

from cbaudit.contract.records import Phase, Queue
from cbaudit.policies.base import PlanBuilder, StateView
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, Executed, InitialView, Validation, step_shape
from cbaudit.sim.metrics import summarize
from tests.sim.helpers import manifest

FCFS = ("arrival_order", "request_id", "request_generation")


def _req(rid: str, arrival: float, prompt: int = 4, max_out: int = 3) -> dict[str, Any]:
    return {
        "request_id": rid,
        "arrival": arrival,
        "prompt_tokens": prompt,
        "max_output_tokens": max_out,
        "client": "c",
    }


def _engine(
    requests: list[dict[str, Any]],
    policy: Any = None,
    budgets: dict[str, Any] | None = None,
    hidden: dict[str, int] | None = None,
    **kw: Any,
) -> Engine:
    wl = manifest(requests, budgets or {"token_budget": 16, "sequence_budget": 4}, hidden)
    return Engine(wl, policy or POLICIES.create("sarathi-serve"), UnitCostModel(), **kw)


class _Scripted:
    """A policy that does what the test says, once per cut."""

    policy_id = "scripted"
    policy_version = "1"
    tie_break_key = FCFS
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, action: str) -> None:
        self.action = action

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        if self.action == "preempt" and view.running:
            plan.preempt(view.running[0])
        elif self.action == "reject" and view.waiting:
            plan.reject(view.waiting[0], "REJECTED_LIVE_CAP")
        elif self.action == "serve":
            for r in [*view.running, *view.waiting]:
                plan.take(r, min(r.remaining, plan.tokens_left), admit=r in view.waiting)


def _planned(eng: Engine) -> Any:
    """The next cut's plan, validated (the result check needs the plan it answers)."""
    plan = eng.choose()
    assert eng.validate(plan), eng.findings
    return plan


def test_start_refuses_a_request_larger_than_the_pool() -> None:
    """A request whose rows never fit the K/V pool stops the replay before its first cut."""
    eng = _engine(
        [_req("big", 0, prompt=40)],
        budgets={
            "token_budget": 64,
            "sequence_budget": 2,
            "kv_block_size": 4,
            "kv_total_blocks": 3,
        },
    )
    eng.start()
    assert eng.stop == "kv_capacity"
    assert [f.code for f in eng.findings] == ["REPLAY.KV.REQUEST_EXCEEDS_POOL"]
    assert eng.report().stop_reason == "kv_capacity"


@pytest.mark.parametrize(("prompt", "refused"), [(10, False), (11, True)])
def test_start_refuses_exactly_the_requests_beyond_the_pool(prompt: int, refused: bool) -> None:
    """The pool's edge: 3 blocks of 4 hold 12 rows; a request with 3 outputs computes p + 2
    rows, so p = 10 fits exactly and p = 11 never does (only that request is named)."""
    eng = _engine(
        [_req("small", 0, prompt=2), _req("edge", 1, prompt=prompt), _req("tail", 2, prompt=5)],
        budgets={
            "token_budget": 64,
            "sequence_budget": 2,
            "kv_block_size": 4,
            "kv_total_blocks": 3,
        },
        hidden={"small": 3, "edge": 3, "tail": 3},
    )
    eng.start()
    if refused:
        assert eng.stop == "kv_capacity"
        assert [f.code for f in eng.findings] == ["REPLAY.KV.REQUEST_EXCEEDS_POOL"]
        assert eng.findings[0].message.startswith("edge needs 13 K/V rows")
    else:
        assert eng.stop is None and not eng.findings


def test_start_places_initial_views_in_their_queues() -> None:
    """Initial views go to their queues with their frontiers; running ones hold K/V blocks."""
    eng = _engine(
        [_req("a", 0), _req("b", 0), _req("c", 9)],
        budgets={
            "token_budget": 16,
            "sequence_budget": 4,
            "kv_block_size": 2,
            "kv_total_blocks": 10,
        },
        initial={
            "a": InitialView(emitted=1, computed=4, queue=Queue.RUNNING),
            "b": InitialView(emitted=0, computed=0, queue=Queue.WAITING),
        },
    )
    eng.start()
    assert [r.rid for r in eng.running] == ["a"] and [r.rid for r in eng.waiting] == ["b"]
    assert eng.running[0].blocks == 2 and eng.free == 8
    assert [r.rid for r in eng._pending] == ["c"]  # only undeclared-by-the-state requests arrive


def test_admit_moves_only_arrived_requests_in_order() -> None:
    """Requests that have arrived by `now` join the back of the waiting queue; later ones wait."""
    eng = _engine([_req("a", 0), _req("b", 0), _req("c", 5)])
    eng.start()
    eng.admit()
    assert [r.rid for r in eng.waiting] == ["a", "b"]
    assert all(r.queue is Queue.WAITING for r in eng.waiting)
    assert eng.reqs[2].queue is None
    eng.now = 5.0
    eng.admit()
    assert [r.rid for r in eng.waiting] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("horizon", "now", "rows", "stop"), [(None, 4.0, 4, None), (2, 2.0, 2, "horizon")]
)
def test_idle_jumps_the_slot_clock_to_the_next_arrival(
    horizon: int | None, now: float, rows: int, stop: str | None
) -> None:
    """With nothing live the clock jumps to the next arrival (empty ticks) or to the horizon."""
    eng = _engine([_req("a", 3.5)], horizon=horizon)
    eng.start()
    eng.admit()
    assert not eng.waiting
    eng.idle()
    assert (eng.now, eng.iteration, list(eng.rows), eng.stop) == (now, rows, [0] * rows, stop)
    assert list(eng.tokens_iter) == [0] * rows


def test_idle_with_nothing_pending_completes_the_replay() -> None:
    """No live request and no arrival left: the replay is complete."""
    eng = _engine([_req("a", 0)])
    eng.start()
    eng._next = len(eng._pending)
    eng.idle()
    assert eng.stop == "completed"


def test_at_limit_names_the_bound_that_ends_the_replay() -> None:
    """The horizon, the iteration cap and the decision cap each end the replay by name."""
    for kw, attr, value, stop in (
        ({"horizon": 3}, "iteration", 3, "horizon"),
        ({"max_iterations": 2}, "iteration", 2, "max_iterations"),
        ({"max_decisions": 1}, "version", 1, "max_decisions"),
    ):
        eng = _engine([_req("a", 0)], **kw)
        eng.start()
        assert not eng.at_limit()
        setattr(eng, attr, value)
        assert eng.at_limit() and eng.stop == stop


def test_choose_publishes_a_new_version_and_returns_the_policy_plan() -> None:
    """Each cut gets the next state version; the plan reads it and holds the policy's choice."""
    eng = _engine([_req("a", 0), _req("b", 0)], policy=_Scripted("serve"))
    eng.start()
    eng.admit()
    plan = eng.choose()
    assert eng.version == 1 and plan.state_version == 1
    assert [(i.req.rid, i.start, i.end, i.phase) for i in plan.items] == [
        ("a", 0, 4, Phase.PREFILL_CHUNK),
        ("b", 0, 4, Phase.PREFILL_CHUNK),
    ]
    assert [r.rid for r in plan.admitted] == ["a", "b"]
    assert eng.choose().state_version == 2


def test_validate_passes_a_clean_plan_and_stops_on_a_forged_one() -> None:
    """A contract finding in the plan stops the replay before anything runs, at the next
    iteration's index."""
    eng = _engine([_req("a", 0)], policy=_Scripted("serve"))
    eng.start()
    eng.admit()
    plan = eng.choose()
    assert eng.validate(plan) and eng.stop is None
    plan.items[0].snapshot += 1
    assert not eng.validate(plan)
    assert eng.stop == "contract_violation"
    assert [(f.code, f.iteration, f.record) for f in eng.findings] == [
        ("PLAN.SNAPSHOT.STALE", 1, "plan")
    ]


def test_validate_refuses_a_plan_beyond_the_free_kv_pool() -> None:
    """A plan needing more K/V blocks than are free (after its preemptions) is refused."""
    eng = _engine(
        [_req("a", 0)],
        policy=_Scripted("serve"),
        budgets={
            "token_budget": 16,
            "sequence_budget": 4,
            "kv_block_size": 2,
            "kv_total_blocks": 10,
        },
    )
    eng.start()
    eng.admit()
    plan = eng.choose()
    eng.free = 1  # the pool shrank behind the policy's back
    assert not eng.validate(plan)
    assert [f.code for f in eng.findings] == ["REPLAY.KV.BUDGET_EXCEEDED"]


class _Underreporting(_Scripted):
    """Serves every request, telling `take` its rows open no K/V block (a ledger that lies)."""

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        for r in [*view.running, *view.waiting]:
            plan.take(r, min(r.remaining, plan.tokens_left), 0, admit=r in view.waiting)


class _Stretching(_Scripted):
    """Serves the running requests' rows, then takes the first waiting request's first 4
    prompt rows and widens the item to the whole prompt behind the builder's back (its
    ledger still counts 4 rows)."""

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        for r in view.running:
            plan.take(r, 1)
        if view.waiting:
            r = view.waiting[0]
            plan.take(r, 4, admit=True)
            plan.items[-1].end = r.p


_TIGHT = {"token_budget": 16, "sequence_budget": 4, "kv_block_size": 4}


def test_a_ledger_that_says_fewer_kv_blocks_is_refused_at_that_plan() -> None:
    """The engine counts the blocks a plan's items open whenever they could exceed the pool,
    so a policy whose ledger under-reports is stopped at the plan that over-commits, before
    it runs (the pool never goes negative), not one iteration later."""
    # two 4-row prompts in 3 blocks of 4: iteration 1 fills 2 blocks, and the two decode rows
    # of iteration 2 would open 2 more with 1 free
    eng = _engine(
        [_req("a", 0), _req("b", 0)],
        policy=_Underreporting("serve"),
        budgets={**_TIGHT, "kv_total_blocks": 3},
    )
    eng.run()
    assert [(f.code, f.iteration, f.record) for f in eng.findings] == [
        ("REPLAY.KV.BUDGET_EXCEEDED", 2, "plan")
    ]
    assert eng.findings[0].message == "plan needs 2 KV blocks, 1 are free after preemption"
    assert eng.free == 1 and eng.iteration == 1


def test_an_item_widened_behind_the_ledger_is_refused_before_it_runs() -> None:
    """An item edited after `take` (the ledger counted 4 rows, the item holds 8) needs the
    blocks of all 8: the plan is refused at its own iteration."""
    # b's prompt fills 1 of 3 blocks; at iteration 2 b's decode row opens one, and a's
    # widened prompt two (the ledger says one): 3 against the 2 free
    eng = _engine(
        [_req("b", 0), _req("a", 0.5, prompt=8, max_out=1)],
        policy=_Stretching("serve"),
        budgets={**_TIGHT, "kv_total_blocks": 3},
    )
    eng.run()
    assert [(f.code, f.iteration) for f in eng.findings] == [("REPLAY.KV.BUDGET_EXCEEDED", 2)]
    assert eng.findings[0].message == "plan needs 3 KV blocks, 2 are free after preemption"
    assert eng.free == 2 and eng.iteration == 1


def test_validate_with_validation_off_checks_nothing() -> None:
    """With validation off every plan passes (speed comparisons only)."""
    eng = _engine([_req("a", 0)], policy=_Scripted("serve"), validation=Validation.OFF)
    eng.start()
    eng.admit()
    plan = eng.choose()
    plan.items[0].start += 1
    assert eng.validate(plan) and eng.findings == []


def test_execute_runs_one_iteration_of_the_selected_work() -> None:
    """Executing advances the clock and the frontiers; a prefill reaching p emits token 1."""
    eng = _engine([_req("a", 0), _req("b", 0, prompt=6)], policy=_Scripted("serve"))
    eng.start()
    eng.admit()
    plan = eng.choose()
    step = eng.execute(plan)
    assert isinstance(step, Executed)
    assert (eng.iteration, step.start, eng.now, step.n_tokens) == (1, 0.0, 1.0, 10)
    a, b = eng.reqs
    assert (a.c, a.e, b.c, b.e) == (4, 1, 6, 1)
    assert step.progressed and step.terminal == []
    assert step.done is not None and [(it.req.rid, e0, c0) for it, e0, c0 in step.done] == [
        ("a", 0, 0),
        ("b", 0, 0),
    ]
    assert eng.service == {"c": 10}
    assert eng.stats[0].first_scheduled == 0.0 and eng.stats[0].first_token == 1.0


def test_execute_preempts_by_recompute_and_requeues_at_the_front() -> None:
    """A preempted request keeps its output, loses its computed rows and waits at the front;
    a plan that only preempts runs no iteration."""
    eng = _engine([_req("a", 0), _req("b", 0)], policy=_Scripted("serve"))
    eng.start()
    eng.admit()
    eng.publish(eng.execute(_planned(eng)))  # both prefilled and running
    eng.policy = _Scripted("preempt")
    assert eng.execute(_planned(eng)) is None
    a = eng.reqs[0]
    assert [r.rid for r in eng.waiting] == ["a"] and [r.rid for r in eng.running] == ["b"]
    assert (a.e, a.c, a.floor, a.preemptions, a.queue) == (1, 0, 4, 1, Queue.WAITING)
    assert eng.preemptions == 1 and eng.iteration == 1


def test_execute_rejects_for_good() -> None:
    """A rejected request is terminal, leaves the waiting queue and counts as finished."""
    eng = _engine([_req("a", 0), _req("b", 0)], policy=_Scripted("reject"))
    eng.start()
    eng.admit()
    assert eng.execute(_planned(eng)) is None
    assert [r.rid for r in eng.waiting] == ["b"] and eng.finished == 1
    assert eng.reqs[0].terminal and eng.table.stats_at(0).finish_reason == "rejected"


def test_wait_idles_to_the_next_arrival_or_reports_no_progress() -> None:
    """A plan that ran nothing idles to the next arrival; with none left it is a stall."""
    eng = _engine([_req("a", 0), _req("b", 7)], policy=_Scripted("nothing"))
    eng.start()
    eng.admit()
    plan = eng.choose()
    assert eng.execute(plan) is None
    eng.wait(plan)
    assert (eng.now, eng.iteration, eng.stop) == (7.0, 7, None)
    eng.admit()
    plan = eng.choose()
    eng.wait(plan)
    assert eng.stop == "no_progress"
    assert [f.code for f in eng.findings] == ["REPLAY.NO_PROGRESS"]


def test_publish_admits_retires_and_records_the_iteration() -> None:
    """Admitted requests run; finished ones leave and release K/V; the iteration is recorded."""
    eng = _engine(
        [_req("a", 0), _req("b", 0)],
        policy=_Scripted("serve"),
        budgets={
            "token_budget": 16,
            "sequence_budget": 4,
            "kv_block_size": 2,
            "kv_total_blocks": 8,
        },
        hidden={"a": 1, "b": 2},
    )
    eng.start()
    eng.admit()
    step = eng.execute(_planned(eng))
    assert step is not None and [(r.rid, why) for r, why in step.terminal] == [("a", "eos")]
    eng.publish(step)
    assert [r.rid for r in eng.running] == ["b"] and not eng.waiting
    assert eng.finished == 1 and eng.reqs[0].queue is Queue.FINISHED
    assert eng.free == 6  # a released its 2 blocks; b holds 2
    assert (list(eng.rows), list(eng.tokens_iter), eng.now) == ([2], [8], 1.0)
    assert eng.table.stats_at(0).finished == 1.0 and eng.stop is None


def test_publish_stops_on_a_result_finding_but_records_the_iteration() -> None:
    """A result the contract refuses stops the replay; the executed iteration still counts."""
    eng = _engine([_req("a", 0)], policy=_Scripted("serve"))
    eng.start()
    eng.admit()
    step = eng.execute(_planned(eng))
    assert step is not None
    eng.reqs[0].e += 1  # the executor emitted a token the output clock does not allow
    eng.publish(step)
    assert eng.stop == "contract_violation" and list(eng.rows) == [1]
    assert "RESULT.OUTPUT_CLOCK.WRONG" in {f.code for f in eng.findings}


def test_step_shape_splits_decode_rows_from_chunks() -> None:
    """The cost model sees decode contexts (end of the row) and prefill chunk intervals."""
    eng = _engine([_req("a", 0), _req("b", 0)], policy=_Scripted("serve"))
    eng.start()
    eng.admit()
    eng.publish(eng.execute(_planned(eng)))
    shape = step_shape(_planned(eng).items)
    assert shape.decode_context_lens == (5, 5) and shape.prefill_chunks == ()


def test_run_is_the_steps_in_order() -> None:
    """`run` gives exactly what iterating the steps by hand gives."""
    reqs = [_req(f"q{i}", i, prompt=3 + i, max_out=4) for i in range(5)]
    hidden = {f"q{i}": 2 + i % 3 for i in range(5)}
    budgets = {"token_budget": 6, "sequence_budget": 3}
    whole = _engine(reqs, budgets=budgets, hidden=hidden).run()
    eng = _engine(reqs, budgets=budgets, hidden=hidden)
    eng.start()
    while eng.stop is None and eng.finished < eng.target:
        eng.iterate()
    stepped = eng.report()
    assert whole.stop_reason == stepped.stop_reason == "completed"
    assert summarize(whole) == summarize(stepped)


def test_the_step_time_from_totals_is_the_shapes_bit_for_bit() -> None:
    """The roofline's totals form, summed by the engine, gives the float `step_time_ms`
    gives for the step's shape, on random mixes of decode rows and chunks, with and without
    an overhead; a shape `StepShape` refuses still raises its error; a cost model without
    the form (here the unit model's class) is asked with the shape."""
    import random

    from cbaudit.policies.base import PlanItem
    from cbaudit.sim.replay import make_cost_model

    rng = random.Random(16)
    for options in (
        {"hardware": "nvidia-h100-sxm", "model": "llama-3-8b-gqa-fp16", "mfu": 0.7},
        {"hardware": "nvidia-h100-sxm", "model": "llama-3-8b-gqa-fp16", "overhead_ms": 0.3},
    ):
        cost = make_cost_model("roofline", options, file=None, base_dir=None)
        engine = _engine([_req("a", 0)])
        engine.cost = cost
        engine._totals = cost.totals_step_ms
        req = engine.reqs[0]
        for _ in range(300):
            items = []
            for _ in range(rng.randint(1, 12)):
                if rng.random() < 0.6:
                    c = rng.randint(0, 40_000)
                    items.append(PlanItem.of(req, c, c + 1, Phase.DECODE_ROW, ()))
                else:
                    lo = rng.randint(0, 8_000)
                    hi = lo + rng.randint(1, 2_048)
                    items.append(PlanItem.of(req, lo, hi, Phase.PREFILL_CHUNK, ()))
            want = cost.step_time_ms(step_shape(items))
            got = engine._model_ms(items)
            assert got == want and type(got) is float
        for bad in (
            PlanItem.of(req, 5, 5, Phase.PREFILL_CHUNK, ()),
            PlanItem.of(req, -1, 0, Phase.DECODE_ROW, ()),
        ):
            with pytest.raises(ValueError):
                engine._model_ms([bad])
    assert _engine([_req("a", 0)])._totals is None  # the unit model has no totals form


def test_engine_cut_sets_every_slot_as_view_of_does() -> None:
    """`Engine.cut` makes its view without `_View.of`'s frame (a copy on purpose): every slot
    holds what `_View.of` with the engine's budgets, queues and state pool would hold."""
    from cbaudit.sim.engine import _View

    engine = _engine(
        [_req("a", 0.0), _req("b", 0.0)],
        budgets={
            "token_budget": 16,
            "sequence_budget": 4,
            "kv_block_size": 4,
            "kv_total_blocks": 32,
        },
    )
    engine.start()
    engine.iterate()
    cut = engine.cut(7, 3, 2.5, 11)
    made = _View.of(
        7, 3, 2.5, engine.budgets, engine.running, engine.waiting, 11, engine.state_pool
    )
    assert {s: getattr(cut, s) for s in slot_names(_View)} == {
        s: getattr(made, s) for s in slot_names(_View)
    }
