"""The policy-side tie-break key equals the contract's declared key for every key shape."""

from __future__ import annotations

from itertools import permutations

import pytest

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.plan_contract import declared_key
from cbaudit.contract.records import Phase
from cbaudit.policies.base import key_function

FIELDS = ("phase_rank", "priority_rank", "arrival_order", "request_id", "request_generation")
ORDERS = (
    (Phase.DECODE_ROW, Phase.PREFILL_CHUNK),
    (Phase.PREFILL_CHUNK, Phase.DECODE_ROW),
    (Phase.RECOMPUTE_CHUNK, Phase.DECODE_ROW, Phase.PREFILL_CHUNK),
    (Phase.DECODE_ROW,),
)
SHAPES = sorted(
    {p for n in (1, 2, 3) for p in permutations(FIELDS, n)}
    | {FIELDS, FIELDS[1:], ("phase_rank", *FIELDS[2:]), ("phase_rank", "phase_rank", "request_id")}
)


@pytest.mark.parametrize("key", SHAPES, ids=lambda k: ",".join(k))
def test_key_function_matches_the_declared_key(key: tuple[str, ...]) -> None:
    """Whatever shape the key has, the fast key the builder records is the contract's key."""
    r = LiveRequest(3, "req-7", 2, 4, 8, 0.0, 11, -1, None)
    for order in ORDERS:
        fn = key_function(key, order)
        for phase in Phase:
            want = declared_key(key, order, phase, r.rid, r.gen, r.priority, r.arrival_order)
            assert fn(r, phase) == want, (key, order, phase)


def test_key_function_refuses_an_unknown_field() -> None:
    """A tie-break field the contract does not define is a programming error, not a key."""
    with pytest.raises(KeyError):
        key_function(("arrival_order", "shoe_size"), ORDERS[0])
