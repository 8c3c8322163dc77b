"""`static-priority` and `priority-aging` (article 0x09A's liveness counterexample).

`static-priority` serves live requests in (priority, arrival order, request id) order, lower
numbers first: a steady stream of more urgent requests gives an old low-priority request zero
completed events. `priority-aging` uses the teaching score

    p_eff(r, t) = p_base(r) - floor((t - a_r) / q_age)

with `q_age` in clock units (option, default 2), so a waiting request's numeric priority
improves until it wins. This is an adversarial finite trace, not a bounded-wait proof: it
relies on finite priorities, the deterministic tie-break, continued eligibility and no
priority floor the request cannot cross.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from cbaudit.contract.records import Phase
from cbaudit.policies.base import PlanBuilder, StateView, option
from cbaudit.policies.least_service import live, select_in_order

DEFERRED_PRIORITY = "DEFERRED_PRIORITY"


class StaticPriorityPolicy:
    policy_id = "static-priority"
    policy_version = "1"
    tie_break_key = ("priority_rank", "arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        if options:
            raise ValueError(f"this policy takes no options (got {sorted(options)})")

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        ordered = sorted(live(view), key=lambda r: (r.priority, r.arrival_order, r.rid))
        select_in_order(view, plan, ordered, DEFERRED_PRIORITY)


class PriorityAgingPolicy:
    policy_id = "priority-aging"
    policy_version = "1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        unknown = sorted(set(options) - {"q_age"})
        if unknown:
            raise ValueError(f"unknown policy options {unknown} (known: q_age)")
        self.q_age: int = option(options, "q_age", 2, int)
        if self.q_age < 1:
            raise ValueError("policy option 'q_age' must be >= 1")

    def effective(self, priority: int, now: float, arrival: float) -> int:
        return priority - math.floor((now - arrival) / self.q_age)

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        ordered = sorted(
            live(view),
            key=lambda r: (self.effective(r.priority, view.now, r.arrival), r.arrival_order, r.rid),
        )
        select_in_order(view, plan, ordered, DEFERRED_PRIORITY)
