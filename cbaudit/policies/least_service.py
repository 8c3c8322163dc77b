"""`least-service`: serve the client with the least completed weighted service (article 0x09A).

The protected identity is the request's `client` (requests without one share the identity
`""`). Service is published only from completed work: at each cut the policy reads the
factual computed frontier of every request it has seen (and of those it selected last time,
which may have finished since) and counts only rows beyond the highest frontier already
counted, so recompute rebuild after a preemption is never service. A row below the prompt
length costs `w_p`, a later row `w_q` (defaults 1 and 2, the article's teaching weights).

Candidates are ordered by (client service, client id, arrival order, request id); each gets
its next legal interval (one decode row, or a prefill chunk cut to the remaining token budget)
while the budgets allow. Everything not selected is recorded with its reason.

This module also holds what the other client-fairness policies share: `weighted_rows`,
`CompletedService` and `select_in_order`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import Phase, Queue
from cbaudit.policies.base import PlanBuilder, StateView, option
from cbaudit.policies.budget import Reason

DEFERRED_FAIR_SHARE = "DEFERRED_FAIR_SHARE"


def weighted_rows(start: int, end: int, prompt_tokens: int, w_p: int, w_q: int) -> int:
    """Weighted service of completed rows [start, end): w_p per input row, w_q per output row."""
    if end <= start:
        return 0
    n_p = max(0, min(end, prompt_tokens) - start)
    return w_p * n_p + w_q * (end - start - n_p)


def client_of(r: LiveRequest) -> str:
    return r.client if r.client is not None else ""


class CompletedService:
    """Completed weighted service per client, read from published frontiers only."""

    def __init__(self, w_p: int, w_q: int) -> None:
        self.w_p = w_p
        self.w_q = w_q
        self.counted: dict[int, int] = {}  # request index -> highest frontier counted
        self.service: dict[str, int] = {}
        self._selected: list[LiveRequest] = []

    def observe(self, view: StateView) -> dict[str, int]:
        """Publish service completed since the last cut; returns this cut's deltas."""
        delta: dict[str, int] = {}
        for r in (*self._selected, *view.running, *view.waiting):
            seen = self.counted.get(r.idx)
            if seen is None:
                self.counted[r.idx] = r.c  # work before the first sighting is not ours to count
                continue
            if r.c > seen:
                units = weighted_rows(seen, r.c, r.p, self.w_p, self.w_q)
                c = client_of(r)
                delta[c] = delta.get(c, 0) + units
                self.service[c] = self.service.get(c, 0) + units
                self.counted[r.idx] = r.c
        self._selected = []
        return delta

    def remember(self, plan: PlanBuilder) -> None:
        """Keep the selected requests so their completion is observed even if they finish."""
        self._selected = [item.req for item in plan.items]

    def of(self, client: str) -> int:
        return self.service.get(client, 0)


def next_width(r: LiveRequest, tokens_left: int) -> int:
    """The next legal interval's width: one decode row, or the prefill cut to the budget."""
    if r.is_decode:
        return 1 if tokens_left >= 1 else 0
    return min(r.remaining, tokens_left)


def select_in_order(
    view: StateView, plan: PlanBuilder, ordered: Iterable[LiveRequest], reason: str
) -> None:
    """Take each candidate's next interval in order; defer the rest with their reason."""
    for r in ordered:
        if plan.chosen(r):
            continue
        if not r.ready:
            plan.defer(r, Reason.NOT_READY_REMOTE_KV)
            continue
        n = next_width(r, plan.tokens_left)
        if n <= 0 or plan.seqs_left <= 0:
            plan.defer(r, reason)
            continue
        why = plan.take(r, n, admit=r.queue is Queue.WAITING)
        if why is not None:
            plan.defer(r, why)


def live(view: StateView) -> list[LiveRequest]:
    return [*view.running, *view.waiting]


class LeastServicePolicy:
    policy_id = "least-service"
    policy_version = "1"
    tie_break_key = ("phase_rank", "arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        unknown = sorted(set(options) - {"w_p", "w_q"})
        if unknown:
            raise ValueError(f"unknown policy options {unknown} (known: w_p, w_q)")
        w_p: int = option(options, "w_p", 1, int)
        w_q: int = option(options, "w_q", 2, int)
        if w_p < 0 or w_q < 0:
            raise ValueError("policy options 'w_p' and 'w_q' must be >= 0")
        self.ledger = CompletedService(w_p, w_q)

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        self.ledger.observe(view)
        ordered = sorted(
            live(view),
            key=lambda r: (self.ledger.of(client_of(r)), client_of(r), r.arrival_order, r.rid),
        )
        select_in_order(view, plan, ordered, DEFERRED_FAIR_SHARE)
        self.ledger.remember(plan)
