"""The engine's TBT counts after each full iteration are the row-by-row counts (issue 16).

`Engine._serve` counts consecutive rows with the same gap in one dict update; the dict must
hold the same counts, with its keys in the same order of first appearance, as counting each
row on its own (a dict that was never folded goes into `--samples-out` in that order)."""

from __future__ import annotations

from typing import Any

import pytest

from cbaudit.policies.registry import POLICIES
from cbaudit.sim.engine import Engine, Validation
from tests.sim.test_stretch import SEEDS, _cost, _workload


def _checked(engine: Engine, seed: int, shared: list[int]) -> None:
    """Wrap the engine's `_serve`: each iteration's rows counted one by one beside it."""
    expected: dict[float, int] = {}
    serve = engine._serve

    def counted(plan: Any, start: float) -> Any:
        gaps = []
        for item in plan.items:  # the rows that emit a token after an earlier one
            r = item.req
            st = engine.stats[r.idx]
            if item.end == r.p + r.e and st.first_token is not None:
                gaps.append(engine.now - (st.last_token or 0.0))
        shared[0] += len(gaps) - len(set(gaps))
        for gap in gaps:
            expected[gap] = expected.get(gap, 0) + 1
        step = serve(plan, start)
        assert list(engine.tbt.items()) == list(expected.items()), (seed, engine.iteration)
        return step

    engine._serve = counted  # type: ignore[method-assign]


@pytest.mark.instruments
@pytest.mark.parametrize("policy_id", ["vllm-v1", "sarathi-serve", "orca"])
@pytest.mark.parametrize("cost", ["unit", "roofline"])
def test_the_dict_after_each_iteration_is_the_row_by_row_count(policy_id: str, cost: str) -> None:
    shared = [0]
    ran = 0
    for seed in SEEDS:
        engine = Engine(
            _workload(seed, "tick" if cost == "unit" else "ms"),
            POLICIES.create(policy_id, {}),
            _cost(cost),
            validation=Validation.CONTRACT,
            stretches=False,
        )
        _checked(engine, seed, shared)
        engine.run()
        ran += engine.iteration
    assert ran > 0
    assert shared[0] > 0  # rows that shared a gap were counted together
