"""`fastserve-mlfq`: a skip-join multi-level feedback queue (article 0x09A, FastServe-shaped).

Queues Q_0..Q_{m-1} have increasing quanta (`quanta`, in completed rows; default 1, 2, 4, 8).
A new request skip-joins the highest-priority queue whose quantum covers its profiled first
iteration (its next interval's width under the token budget). At each cut the policy first
reconciles the work that completed since the last cut: a request that has used its queue's
quantum is demoted by `demotion_distance` queues (default 1) and its usage reset. A request
that has waited `alpha` cuts without service (default 4) is promoted to Q_0. Then candidates
are taken in (queue, arrival order, request id) order while the budgets allow.

Promotion is a job-liveness rule: it bounds no weighted service between clients. Physical K/V
movement on preemption is not modelled (recompute and preservation belong to Loop 9).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from cbaudit.contract.records import Phase
from cbaudit.policies.base import PlanBuilder, StateView, option
from cbaudit.policies.least_service import live, next_width, select_in_order

DEFERRED_MLFQ_LEVEL = "DEFERRED_MLFQ_LEVEL"


class FastServeMlfqPolicy:
    policy_id = "fastserve-mlfq"
    policy_version = "skip-join-teaching.1"
    tie_break_key = ("phase_rank", "arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        unknown = sorted(set(options) - {"quanta", "alpha", "demotion_distance"})
        if unknown:
            raise ValueError(f"unknown policy options {unknown}")
        quanta = options.get("quanta", [1, 2, 4, 8])
        if (
            not isinstance(quanta, list)
            or not quanta
            or not all(isinstance(q, int) and not isinstance(q, bool) and q >= 1 for q in quanta)
            or any(b <= a for a, b in pairwise(quanta))
        ):
            raise ValueError("policy option 'quanta' must be a strictly increasing list of ints")
        self.quanta: list[int] = quanta
        self.alpha: int = option(options, "alpha", 4, int)
        self.eta: int = option(options, "demotion_distance", 1, int)
        if self.alpha < 1 or self.eta < 1:
            raise ValueError("policy options 'alpha' and 'demotion_distance' must be >= 1")
        self.level: dict[int, int] = {}
        self.used: dict[int, int] = {}
        self.wait: dict[int, int] = {}
        self.frontier: dict[int, int] = {}
        self._selected: list[Any] = []

    def _join(self, cost: int) -> int:
        for j, q in enumerate(self.quanta):
            if q >= cost:
                return j
        return len(self.quanta) - 1

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        for r in self._selected:  # reconcile returned jobs first
            done = max(0, r.c - self.frontier.get(r.idx, r.c))
            self.frontier[r.idx] = r.c
            self.used[r.idx] = self.used.get(r.idx, 0) + done
            if not r.terminal and self.used[r.idx] >= self.quanta[self.level[r.idx]]:
                self.level[r.idx] = min(self.level[r.idx] + self.eta, len(self.quanta) - 1)
                self.used[r.idx] = 0
        reqs = live(view)
        for r in reqs:
            if r.idx not in self.level:  # skip-join by the profiled first iteration
                self.level[r.idx] = self._join(max(1, next_width(r, view.budgets.token_budget)))
                self.used[r.idx] = 0
                self.wait[r.idx] = 0
                self.frontier[r.idx] = r.c
            elif self.wait[r.idx] >= self.alpha:
                self.level[r.idx] = 0
                self.used[r.idx] = 0
                self.wait[r.idx] = 0
        ordered = sorted(reqs, key=lambda r: (self.level[r.idx], r.arrival_order, r.rid))
        select_in_order(view, plan, ordered, DEFERRED_MLFQ_LEVEL)
        self._selected = [item.req for item in plan.items]
        chosen = {r.idx for r in self._selected}
        for r in reqs:
            self.wait[r.idx] = 0 if r.idx in chosen else self.wait[r.idx] + 1
