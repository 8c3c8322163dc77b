"""A replay's memory follows the live requests, not every request so far: what is kept per
request only while it runs is dropped when it finishes, and per-iteration figures are kept
as runs of equal values."""

from __future__ import annotations

from typing import Any

import pytest

from cbaudit.contract.records import Queue
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine
from tests.sim.helpers import manifest


def _staggered(n: int) -> list[dict[str, Any]]:
    return [
        {
            "request_id": f"r{i}",
            "arrival": i // 3,
            "prompt_tokens": 3 + i % 7,
            "max_output_tokens": 2 + i % 5,
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("policy", ["vllm-v1", "orca", "sarathi-serve", "static"])
@pytest.mark.parametrize("stretches", [True, False])
def test_the_live_validator_keeps_nothing_for_finished_requests(
    policy: str, stretches: bool
) -> None:
    """After every iteration the validator's per-request tables name unfinished requests
    only; at the end (everything finished) they are empty. K/V pressure makes vllm-v1
    preempt, so rebuild keys are made and dropped too."""
    budgets = {"token_budget": 16, "sequence_budget": 4}
    if policy == "vllm-v1":  # (the one here that preempts on a K/V shortage)
        budgets |= {"kv_block_size": 2, "kv_total_blocks": 14}
    wl = manifest(_staggered(40), budgets)
    engine = Engine(wl, POLICIES.create(policy), UnitCostModel(), stretches=stretches)
    engine.start()
    live = engine.live
    assert live is not None

    def tables() -> list[dict[int, Any]]:
        return [
            live._prefill_keys,
            live._decode_keys,
            live._rebuild_keys,
            live._decls,
            live._entry,
        ]

    peak = 0
    while engine.stop is None and engine.finished < engine.target:
        engine.iterate()
        for table in tables():
            assert all(engine.reqs[i].queue is not Queue.FINISHED for i in table)
            peak = max(peak, len(table))
    run = engine.report()
    assert run.stop_reason == "completed" and run.findings == []
    assert peak > 0  # (the tables were used)
    assert [len(t) for t in tables()] == [0, 0, 0, 0, 0]
    if policy == "vllm-v1":
        assert run.preemptions >= 1
