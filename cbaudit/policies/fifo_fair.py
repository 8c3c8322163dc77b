"""`fifo`: request FIFO, client-blind (the baseline of article 0x09A's client flood).

Every live request in arrival order (arrival order, request id) gets its next legal interval
while the budgets allow. No request starves while arrivals are finite, yet one client with
many requests can take every slot while another client stays backlogged: request liveness and
client fairness are different contracts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.contract.records import Phase
from cbaudit.policies.base import PlanBuilder, StateView
from cbaudit.policies.least_service import live, select_in_order

DEFERRED_FIFO_ORDER = "DEFERRED_FIFO_ORDER"


class FifoPolicy:
    policy_id = "fifo"
    policy_version = "1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        if options:
            raise ValueError(f"this policy takes no options (got {sorted(options)})")

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        ordered = sorted(live(view), key=lambda r: (r.arrival_order, r.rid))
        select_in_order(view, plan, ordered, DEFERRED_FIFO_ORDER)
