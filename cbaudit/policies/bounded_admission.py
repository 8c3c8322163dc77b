"""`bounded-admission`: a live cap in front of least-slack selection (article 0x07).

At every cut the policy keeps at most `live_cap` live requests: running requests count first,
then waiting requests in queue order; every waiting request beyond the cap is rejected for
good (`REJECTED_LIVE_CAP`). A rejection is a user-visible outcome in the offered-cohort
ledger, never a free SLO success. The requests it keeps are served in least-slack order (all
of `least-slack`'s options apply). The cap is a teaching device that makes the accounting
consequence mechanical, not a recommended overload controller.

Options: `live_cap` (int >= 1, required) plus the `least-slack` options.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.policies.base import PlanBuilder, StateView, option
from cbaudit.policies.least_slack import LeastSlackPolicy, SlackView

REJECTED_LIVE_CAP = "REJECTED_LIVE_CAP"


class BoundedAdmissionPolicy(LeastSlackPolicy):
    policy_id: str = "bounded-admission"
    policy_version: str = "1"

    def __init__(self, options: Mapping[str, Any]) -> None:
        opts = dict(options)
        if "live_cap" not in opts:
            raise ValueError("policy option 'live_cap' is required")
        cap = option(opts, "live_cap", 0, int)
        if cap < 1:
            raise ValueError("policy option 'live_cap' must be >= 1")
        self.live_cap: int = cap
        del opts["live_cap"]
        self._take_options(opts)
        if opts:
            raise ValueError(f"unknown policy options {sorted(opts)}")

    def choose_from(self, view: StateView, plan: PlanBuilder, candidates: list[SlackView]) -> None:
        room = self.live_cap - sum(1 for r in view.running if not r.terminal)
        rejected = set()
        for r in view.waiting:
            if room > 0:
                room -= 1
            else:
                plan.reject(r, REJECTED_LIVE_CAP)
                rejected.add(r.idx)
        for r in (*view.running, *view.waiting):
            if not r.ready and not r.terminal and r.idx not in rejected:
                plan.defer(r, r.readiness_reason or "NOT_READY")
        kept = [s for s in candidates if s.req.idx not in rejected]
        self.select(view, plan, kept)
