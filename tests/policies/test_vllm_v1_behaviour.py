"""vllm-v1's rules one by one on small cuts: what it selects and the reason it records."""

from __future__ import annotations

from typing import Any

from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.replay import parse_initial
from cbaudit.sim.snapshot import decide_snapshot
from cbaudit.sim.workload import workload_from_data

PRIORITY_KEY = ["priority_rank", "arrival_order", "request_id", "request_generation"]


def _snapshot(
    requests: list[tuple[str, int, int, int]],
    views: dict[str, tuple[str, int, int]],
    budgets: dict[str, int],
    key: list[str] | None = None,
) -> tuple[Any, Any]:
    """requests: (id, prompt, max_output, priority); views: id -> (queue, emitted, computed)."""
    wl = workload_from_data(
        {
            "schema_version": 1,
            "workload_id": "cut",
            "clock": {"unit": "tick"},
            "policy": {
                "policy_id": "vllm-v1",
                "policy_version": "x",
                "tie_break": {
                    "key": key or ["arrival_order", "request_id", "request_generation"],
                    "phase_order": ["DECODE_ROW", "PREFILL_CHUNK"],
                },
            },
            "budgets": budgets,
            "requests": [
                {"request_id": rid, "arrival": i, "arrival_order": i, "prompt_tokens": p,
                 "max_output_tokens": o, "priority": prio}
                for i, (rid, p, o, prio) in enumerate(requests)
            ],
        },
        "cut.json",
    )  # fmt: skip
    state = {
        "requests": [
            {"request_id": rid, "queue": q, "emitted_tokens": e, "computed_tokens": c}
            for rid, (q, e, c) in views.items()
        ]
    }
    return wl, parse_initial(state, "cut.json")


def test_a_waiting_request_needs_blocks_for_its_whole_sequence() -> None:
    """Free blocks fit the first chunk but not the whole prompt: held back, and the reason says
    so; with full_sequence_must_fit off it is admitted with its first chunk."""
    wl, init = _snapshot(
        [("A", 4, 8, 0), ("W", 40, 4, 0)],
        {"A": ("running", 1, 4), "W": ("waiting", 0, 0)},
        {"token_budget": 8, "sequence_budget": 4, "kv_block_size": 4, "kv_total_blocks": 6},
    )
    on = decide_snapshot(wl, init, "vllm-v1", {}, source="t")
    assert on["selected"] == ["A[4,5) DECODE_ROW"]
    assert on["not_selected"] == ["W: DEFERRED_KV_FULL_SEQUENCE"] and on["findings"] == []
    off = decide_snapshot(wl, init, "vllm-v1", {"full_sequence_must_fit": False}, source="t")
    assert off["selected"] == ["A[4,5) DECODE_ROW", "W[0,7) PREFILL_CHUNK"]


def test_priority_explains_every_waiting_request_ranked_ahead_after_a_preemption() -> None:
    """A step that preempts admits nobody; each waiting request ranked ahead of the selected
    work gets a reason, in priority order (it once took the first in arrival order)."""
    wl, init = _snapshot(
        [("R1", 4, 50, 1), ("R2", 4, 50, 5), ("W1", 4, 5, 3), ("W2", 4, 5, 0)],
        {"R1": ("running", 4, 7), "R2": ("running", 1, 4),
         "W1": ("waiting", 0, 0), "W2": ("waiting", 0, 0)},
        {"token_budget": 8, "sequence_budget": 4, "kv_block_size": 4, "kv_total_blocks": 3},
        key=PRIORITY_KEY,
    )  # fmt: skip
    d = decide_snapshot(wl, init, "vllm-v1", {"scheduling": "priority"}, source="t")
    assert d["preempted"] == ["R2"] and d["selected"] == ["R1[7,8) DECODE_ROW"]
    assert "W2: DEFERRED_AFTER_PREEMPTION" in d["not_selected"]
    assert not any(n.startswith("W1") for n in d["not_selected"])  # ranks behind R1: no reason
    assert d["findings"] == []


def test_a_refused_head_explains_the_higher_ranked_requests_behind_it() -> None:
    """The waiting pass stops at the first request that does not fit; those ranked ahead of
    selected work behind it are DEFERRED_BEHIND_QUEUE_HEAD."""
    wl, init = _snapshot(
        [("R", 4, 50, 9), ("H", 40, 5, 0), ("W", 4, 5, 1)],
        {"R": ("running", 1, 4), "H": ("waiting", 0, 0), "W": ("waiting", 0, 0)},
        {"token_budget": 8, "sequence_budget": 4, "kv_block_size": 4, "kv_total_blocks": 6},
        key=PRIORITY_KEY,
    )
    d = decide_snapshot(wl, init, "vllm-v1", {"scheduling": "priority"}, source="t")
    assert d["selected"] == ["R[4,5) DECODE_ROW"]
    assert d["not_selected"] == ["H: DEFERRED_KV_FULL_SEQUENCE", "W: DEFERRED_BEHIND_QUEUE_HEAD"]
    assert d["findings"] == []


def test_max_model_len_clamps_a_running_request() -> None:
    """A running request asks for at most max_model_len - 1 - computed tokens."""
    wl, init = _snapshot(
        [("A", 20, 8, 0)],
        {"A": ("running", 0, 16)},
        {"token_budget": 64, "sequence_budget": 4, "kv_block_size": 4, "kv_total_blocks": 20},
    )
    d = decide_snapshot(wl, init, "vllm-v1", {"max_model_len": 19}, source="t")
    assert d["selected"] == ["A[16,18) PREFILL_CHUNK"]


def test_a_step_that_only_preempts_is_an_iteration() -> None:
    """The running head ranks worst and needs a block: it preempts itself, nothing runs, and
    that empty step still takes one iteration (vLLM's engine runs it)."""
    wl, init = _snapshot(
        [("X", 4, 8, 9), ("Y", 4, 8, 1)],
        {"X": ("running", 1, 4), "Y": ("running", 1, 4)},
        {"token_budget": 8, "sequence_budget": 2, "kv_block_size": 4, "kv_total_blocks": 2},
        key=PRIORITY_KEY,
    )
    seen: list[Any] = []
    policy = POLICIES.create("vllm-v1", {"scheduling": "priority"})
    run = Engine(wl, policy, UnitCostModel(), validation=Validation.CONTRACT, initial=init,
                 horizon=3, step_observer=seen.append).run()  # fmt: skip
    assert run.findings == []
    first = seen[0]
    assert (first.iteration, first.scheduled, first.preempted) == (1, (), ("X",))
    assert seen[1].iteration == 2 and dict(seen[1].scheduled) == {"Y": 1}


def test_the_running_pass_needs_the_blocks_kv_needed_gives() -> None:
    """The running pass's inline copy of `kv_needed` (the general form, and the one-row form
    `c % bs == 0`): the blocks every scheduled running request takes from the pool are
    `blocks_needed(c, n, bs)`, for decodes and chunks at every offset in a block, block
    sizes 1 to 17, a pool large enough that nobody is preempted."""
    from cbaudit.contract.live_request import LiveRequest
    from cbaudit.contract.workload_records import Queue
    from cbaudit.policies.base import BudgetsView, PlanBuilder, key_function
    from cbaudit.policies.budget import blocks_needed
    from cbaudit.policies.vllm_v1 import VllmV1Policy
    from cbaudit.sim.engine import _View

    policy = VllmV1Policy({})
    key_fn = key_function(policy.tie_break_key, policy.phase_order)
    checked = ones = 0
    for bs in range(1, 18):
        for c0 in range(0, 3 * bs + 2):
            running = []
            for i, (p, e) in enumerate([(c0 + 1, 0), (c0 + 5, 0), (c0 + 1 - min(c0, 1), 1)]):
                r = LiveRequest(i, f"r{i}", 0, p, 100, float(i), i, 0, None)
                r.e = e
                r.c = c0 if e == 0 else p + e - 1  # a prefill at c0 (1 or 5 rows), a decode
                r.queue = Queue.RUNNING
                r.blocks = -(-r.c // bs)
                running.append(r)
            budgets = BudgetsView(2048, 256, bs, 100_000, None)
            for one in running:  # each alone: the blocks it took are the pool's change
                view = _View.of(1, 1, 0.0, budgets, [one], [], 100_000)
                plan = PlanBuilder(view, key_fn)
                policy.choose(view, plan)
                (item,) = plan.items
                n = item.end - item.start
                assert 100_000 - plan.free_blocks == blocks_needed(one.c, n, bs), (bs, one)
                ones += n == 1
                checked += 1
    assert checked > 1000 and ones > 500


def test_the_running_pass_asks_what_new_tokens_gives() -> None:
    """The running pass's inline copy of `_new_tokens(..., running=True)`: every scheduled
    running request gets exactly the tokens the rule method gives at its turn (remaining
    stream, threshold on or off or not positive, the tokens left, `max_model_len`), over
    seeded random cuts of prefills, decodes and rebuilds."""
    import random

    from cbaudit.contract.live_request import LiveRequest
    from cbaudit.contract.workload_records import Queue
    from cbaudit.policies.base import BudgetsView, PlanBuilder, key_function
    from cbaudit.policies.vllm_v1 import VllmV1Policy
    from cbaudit.sim.engine import _View

    rng = random.Random(16)
    checked = 0
    for _ in range(400):
        max_len = rng.choice([None, None, 40, 70, 200])
        policy = VllmV1Policy({} if max_len is None else {"max_model_len": max_len})
        key_fn = key_function(policy.tie_break_key, policy.phase_order)
        running = []
        for i in range(rng.randint(1, 8)):
            p = rng.randint(1, 60)
            r = LiveRequest(i, f"r{i}", 0, p, 100, float(i), i, 0, None)
            r.e = rng.choice([0, 0, rng.randint(1, 30)])
            top = p + r.e - 1 if r.e else p - 1
            if max_len is not None:
                top = min(top, max_len - 2)
            r.c = rng.randint(0, max(0, top))
            r.queue = Queue.RUNNING
            r.blocks = -(-r.c // 16)
            running.append(r)
        budgets = BudgetsView(
            rng.randint(1, 200), 256, 16, 10_000, rng.choice([None, -1, 0, 1, 8, 32])
        )
        view = _View.of(1, 1, 0.0, budgets, running, [], 10_000)
        plan = PlanBuilder(view, key_fn)
        policy.choose(view, plan)
        left = budgets.token_budget
        by_req = {item.req.idx: item for item in plan.items}
        for r in running:
            if left <= 0:
                break
            want = policy._new_tokens(r, view, left, running=True)
            item = by_req.get(r.idx)
            if want <= 0:
                assert item is None
                continue
            assert item is not None and item.end - item.start == want
            left -= want
            checked += 1
    assert checked > 1000
