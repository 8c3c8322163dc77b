"""The fast path against the per-iteration path at a real trace's scale and shape.

`test_stretch.py` holds the two paths to the same report on many small generated workloads.
Here the workloads look like the traces issue 16 measures: 1,500 requests with heavy-tailed
prompt and output lengths (medians about 1,000 and 150 tokens, as in the Splitwise traces),
Poisson arrivals at a conversation trace's rate and at 4 and 8 times it (saturated: requests
wait, prompts are chunked beside decode blocks), the issue's budgets (2,048 tokens, 256
sequences, 16-token K/V blocks, 26,312 blocks) or a pool small enough to preempt, and the
roofline cost model. Every report must be the same, byte for byte, and the fast path must have
taken stretches (decode and chunk) and, where requests wait, the engine's decode blocks.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from cbaudit.policies.registry import POLICIES
from cbaudit.sim.engine import Engine
from cbaudit.sim.workload import Workload
from tests.sim.test_stretch import _canonical, _cost, _generated, _run

pytestmark = pytest.mark.slow

ISSUE_BUDGETS = {
    "token_budget": 2048,
    "sequence_budget": 256,
    "kv_block_size": 16,
    "kv_total_blocks": 26_312,
}


def _trace_like(seed: int, rate_per_s: float, blocks: int, n: int = 1500) -> Workload:
    """`n` requests: Poisson arrivals at `rate_per_s`, lognormal prompt and output lengths
    (clipped to 1..8,000 and 1..1,500), a declared cap at or above each realized output."""
    rnd = random.Random(seed)
    t = 0.0
    reqs: list[dict[str, Any]] = []
    hidden: dict[str, int] = {}
    for i in range(n):
        t += rnd.expovariate(rate_per_s) * 1000.0
        prompt = min(8000, max(1, round(rnd.lognormvariate(math.log(1000), 0.9))))
        out = min(1500, max(1, round(rnd.lognormvariate(math.log(150), 1.0))))
        rid = f"q{i}"
        reqs.append(
            {
                "request_id": rid,
                "arrival": round(t, 3),
                "prompt_tokens": prompt,
                "max_output_tokens": out + rnd.choice([0, 0, 50]),
                "priority": rnd.randint(0, 2),
            }
        )
        hidden[rid] = out
    budgets = {**ISSUE_BUDGETS, "kv_total_blocks": blocks}
    return _generated(f"trace-like-{seed}-{rate_per_s}-{blocks}", "ms", budgets, reqs, hidden)


CASES = [
    # (policy, options, arrivals per second, K/V blocks)
    ("vllm-v1", {}, 5.0, 26_312),  # a conversation trace's own rate
    ("vllm-v1", {}, 20.0, 26_312),  # 4x: queues build at bursts
    ("vllm-v1", {}, 40.0, 26_312),  # 8x: saturated, requests wait, chunks beside decode blocks
    ("vllm-v1", {"scheduling": "priority"}, 40.0, 26_312),
    ("vllm-v1", {}, 40.0, 2_000),  # a pool that runs out: preemption by recompute
    ("sarathi-serve", {}, 20.0, 26_312),
]


@pytest.mark.instruments
@pytest.mark.parametrize(("policy_id", "options", "rate", "blocks"), CASES)
def test_trace_sized_workloads_give_the_same_report_on_both_paths(
    policy_id: str,
    options: dict[str, Any],
    rate: float,
    blocks: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wl = _trace_like(16, rate, blocks)
    offers: list[int] = []
    real_choose = Engine.choose

    def choose(engine: Engine) -> Any:
        if engine.decode_block is not None and engine.waiting:
            offers.append(engine.iteration)  # a block offered at a cut where requests wait
        return real_choose(engine)

    monkeypatch.setattr(Engine, "choose", choose)
    fast = _run(wl, POLICIES.create(policy_id, options), _cost("roofline"), stretches=True)
    slow = _run(wl, POLICIES.create(policy_id, options), _cost("roofline"), stretches=False)
    assert fast.stretch_claim_refused is None
    assert not fast.findings and not slow.findings
    assert fast.report().stop_reason == slow.report().stop_reason == "completed"
    assert _canonical(fast.report()) == _canonical(slow.report())
    # the fast path did its work here: stretches (most iterations, where the pool holds),
    # chunk stretches, and (busy cases) blocks offered where requests wait
    assert fast.stretch_iterations > 0 and fast.chunk_stretch_iterations > 0
    if blocks < ISSUE_BUDGETS["kv_total_blocks"]:
        assert slow.preemptions > 100  # (few stretches between preemptions)
    else:
        assert fast.stretch_iterations > fast.iteration // 2, (
            fast.stretch_iterations,
            fast.iteration,
        )
    if rate >= 40.0:
        assert offers
