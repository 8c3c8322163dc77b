"""A replay holds objects for live requests only: a request's `LiveRequest` and `RequestStats`
are made when it arrives and folded into the `RequestTable` (C arrays) when it finishes or is
rejected; the metrics read the table's columns, and the objects rebuilt from it are the ones
the engine held."""

from __future__ import annotations

import random
from typing import Any

import pytest
from fields import slot_names

from cbaudit.contract.records import Queue
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import _MAKE_AHEAD, Engine, ReplayRun
from cbaudit.sim.metrics import _per_request, ms_converter, request_times, summarize
from cbaudit.sim.replay import make_cost_model
from cbaudit.sim.request_table import (
    QUEUES,
    REASONS,
    RequestStats,
    RequestTable,
    new_live_request,
)
from cbaudit.sim.workload import workload_from_data
from tests.sim.helpers import manifest

ROOFLINE = {"hardware": "nvidia-h100-sxm", "model": "llama-3-8b-gqa-fp16"}


def _staggered(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "request_id": f"r{i}",
            "arrival": i // 3,
            "prompt_tokens": rng.randint(1, 12),
            "max_output_tokens": rng.randint(1, 9),
        }
        for i in range(n)
    ]


def _budgets(policy: str) -> dict[str, Any]:
    budgets: dict[str, Any] = {"token_budget": 16, "sequence_budget": 4}
    if policy == "vllm-v1":  # preempts on a K/V shortage
        budgets |= {"kv_block_size": 2, "kv_total_blocks": 14}
    return budgets


@pytest.mark.parametrize("policy", ["vllm-v1", "orca", "sarathi-serve", "static"])
@pytest.mark.parametrize("stretches", [True, False])
def test_the_engine_holds_objects_for_live_requests_only(policy: str, stretches: bool) -> None:
    """After every iteration the engine's objects and stats are those of the queued requests
    and of at most the next `_MAKE_AHEAD` arrivals (made together when the next arrival is
    looked at); at the end of a completed run it holds none, and every row says finished."""
    spread = [{**r, "arrival": 2 * i} for i, r in enumerate(_staggered(300))]
    wl = manifest(spread, _budgets(policy))
    engine = Engine(wl, POLICIES.create(policy), UnitCostModel(), stretches=stretches)
    engine.start()
    peak = peak_made = 0
    while engine.stop is None and engine.finished < engine.target:
        engine.iterate()
        queued = {r.idx for r in engine.running} | {r.idx for r in engine.waiting}
        made = {i for i, st in enumerate(engine.stats) if st is not None}
        assert made == set(engine._live) and queued <= made
        ahead = set(engine._pending._order[engine._next : engine._next + _MAKE_AHEAD])
        assert made - queued <= ahead
        peak = max(peak, len(queued))
        peak_made = max(peak_made, len(made))
    run = engine.report()
    assert run.stop_reason == "completed" and run.findings == []
    assert 0 < peak <= peak_made <= peak + _MAKE_AHEAD < 300
    assert engine._live == {} and engine.stats == [None] * 300
    assert list(run.table.queue) == [QUEUES.index(Queue.FINISHED)] * 300
    assert all(st.finish_reason in ("eos", "max_output_tokens") for st in run.stats)


def test_the_table_gives_back_what_it_stored() -> None:
    """Random views and stats (None clocks, int and float clocks, every reason, readiness
    reasons, queues) stored and rebuilt: the same values, None where None."""
    rng = random.Random(7)
    wl = manifest(_staggered(30), {"token_budget": 8, "sequence_budget": 2})
    table = RequestTable(30)
    kept: dict[int, tuple[Any, Any]] = {}
    for i in rng.sample(range(30), 20):
        r = new_live_request(wl, i)
        r.e, r.c, r.blocks, r.snapshot = (rng.randint(0, 10**12) for _ in range(4))
        r.last_served = rng.choice([-1, rng.randint(0, 10**9)])
        r.preemptions, r.floor = rng.randint(0, 9), rng.randint(0, 99)
        r.last_emit = rng.choice([None, rng.random() * 1e6, rng.randint(0, 10**6)])
        r.queue = rng.choice(QUEUES)
        r.terminal, r.ready = rng.random() < 0.5, rng.random() < 0.5
        r.readiness_reason = rng.choice([None, "swapped_out", "other"])

        def clock() -> float | None:
            return rng.choice([None, rng.random() * 1e5, rng.randint(0, 10**6), -0.0])

        st = None
        if rng.random() < 0.8:
            st = RequestStats(
                clock(),
                rng.choice([None, rng.randint(0, 10**6)]),
                clock(),
                clock(),
                clock(),
                rng.choice(REASONS),
                rng.random(),
                rng.randint(0, 10**6),
                rng.randint(0, 10**6),
                rng.randint(0, 10**9),
                rng.randint(0, 10**6),
            )
        table.store(r, st)
        kept[i] = (r, st)
    for i in range(30):
        r, st = kept.get(i, (new_live_request(wl, i), None))
        back = table.live_request_at(wl, i)
        for name in slot_names(type(r)):
            assert getattr(back, name) == getattr(r, name), (i, name)
        want = st if st is not None else RequestStats()
        assert table.stats_at(i) == want


def _runs() -> list[ReplayRun]:
    """Completed, preempting and horizon-stopped runs (requests left waiting and running),
    a tick clock with tick_ms and a millisecond clock under the roofline model."""
    runs = []
    for policy in ("vllm-v1", "sarathi-serve"):
        wl = manifest(_staggered(60, 3), _budgets(policy))
        runs.append(Engine(wl, POLICIES.create(policy), UnitCostModel()).run())
        runs.append(Engine(wl, POLICIES.create(policy), UnitCostModel(), horizon=12).run())
    reqs = [
        {**r, "arrival": i * 3 if i % 2 == 0 else i * 3 + 0.375}  # ints and floats
        for i, r in enumerate(_staggered(60, 5))
    ]
    ms = workload_from_data(
        {
            "workload_id": "ms",
            "clock": {"unit": "ms"},
            "budgets": {"token_budget": 32, "sequence_budget": 8},
            "requests": reqs,
        }
    )
    cost = make_cost_model("roofline", ROOFLINE, file=None, base_dir=None)
    runs.append(Engine(ms, POLICIES.create("vllm-v1"), cost).run())
    ticks = workload_from_data(
        {
            "workload_id": "tk",
            "clock": {"unit": "tick", "tick_ms": 2.5},
            "budgets": {"token_budget": 16, "sequence_budget": 4},
            "requests": _staggered(40, 9),
        }
    )
    runs.append(Engine(ticks, POLICIES.create("orca"), UnitCostModel()).run())
    return runs


def test_metrics_from_the_columns_are_the_metrics_from_the_objects() -> None:
    """The default report reads the table's columns; `--per-request` and the samples read
    rebuilt objects: the same samples, totals and figures, bit for bit."""
    runs = _runs()
    assert {r.stop_reason for r in runs} == {"completed", "horizon"}
    for run in runs:
        to_ms = ms_converter(run)
        cols = _per_request(run, to_ms, False)
        objs = _per_request(run, to_ms, True)
        q, t1, e2e, tp = [], [], [], []
        for r, st in zip(run.requests, run.stats, strict=True):
            times = request_times(r, st)
            for out, v in zip((q, t1, e2e, tp), times, strict=True):
                if v is not None:
                    out.append(v)
        for a, b, ref in zip(
            (cols.qdelay, cols.ttft, cols.e2e, cols.tpot),
            (objs.qdelay, objs.ttft, objs.e2e, objs.tpot),
            (q, t1, e2e, tp),
            strict=True,
        ):
            assert list(a) == list(b) == ref
        assert (cols.outputs, cols.recompute, cols.finished) == (
            objs.outputs,
            objs.recompute,
            objs.finished,
        )
        assert cols.outputs == sum(r.e for r in run.requests)
        brief = summarize(run, per_request=False)
        full = summarize(run)
        assert full.pop("requests").keys() == {r.rid for r in run.requests}
        assert brief == full


def test_a_report_taken_twice_is_the_same_and_keeps_the_live_requests() -> None:
    """A horizon stop leaves requests running and waiting: the report stores them in the table
    without dropping them, so a second report is the same and the engine can be read on."""
    wl = manifest(_staggered(60, 3), _budgets("vllm-v1"))
    engine = Engine(wl, POLICIES.create("vllm-v1"), UnitCostModel(), horizon=12)
    first = engine.run()
    assert first.stop_reason == "horizon"
    queues = {r.queue for r in first.requests}
    assert {Queue.RUNNING, Queue.WAITING, Queue.FINISHED, None} <= queues
    live = dict(engine._live)
    assert live and all(r.queue is not Queue.FINISHED for r in live.values())
    for i, r in live.items():  # the rows of the live requests are their objects now
        assert first.requests[i].c == r.c and first.requests[i].queue is r.queue
        assert first.stats[i] == engine.stats[i]
    second = engine.report()
    assert summarize(second) == summarize(first)
    assert engine._live == live


def test_the_table_widens_once_and_refuses_what_8_bytes_cannot_hold() -> None:
    """Writes go through memoryviews, which say ValueError where an array says OverflowError:
    a count past 2**31 still widens every integer column (rows stored before are kept, the
    row is stored whole), and one past 2**63 is still an OverflowError."""
    wl = manifest(_staggered(3), {"token_budget": 8, "sequence_budget": 2})
    table = RequestTable(3)
    small = new_live_request(wl, 0)
    small.e, small.c = 5, 9
    table.store(small, RequestStats(first_scheduled=1.5, served_iterations=3))
    big = new_live_request(wl, 1)
    big.c, big.e = 2**40, 7
    table.store(big, RequestStats(scheduled_tokens=2**35, tbt_max=0.25))
    assert table.e.typecode == table.c.typecode == "q" and table.first_token.typecode == "d"
    assert (table.e[0], table.c[0], table.e[1], table.c[1]) == (5, 9, 7, 2**40)
    assert table.stats_at(0) == RequestStats(first_scheduled=1.5, served_iterations=3)
    assert table.stats_at(1) == RequestStats(scheduled_tokens=2**35, tbt_max=0.25)
    huge = new_live_request(wl, 2)
    huge.c = 2**63
    with pytest.raises(OverflowError):
        table.store(huge, None)
