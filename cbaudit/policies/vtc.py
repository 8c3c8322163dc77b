"""`vtc` and `vtc-completion-reconciled`: virtual token counters per client (article 0x09A).

`vtc` follows the shape of VTC's Algorithm 2 in the engine's iteration loop: running requests
keep their next legal interval each iteration (the running batch); admissions come from the
active client with the smallest counter (ties by client id), its earliest waiting request,
while it fits. A request is charged `w_p * prompt_tokens` when it enters the running batch and
each completed output row is charged `w_q` at the next cut. A client that becomes active is
lifted to `max(c_i, min over the other active counters)`, or to the counter of the last client
that left when no other client is active, so idle time earns no credit.

`vtc-completion-reconciled` is the article's teaching adaptation
`completion_reconciled_vtc_teaching_v1`, a different algorithm: every selected interval
reserves its predicted weighted cost in the provisional counter `C_select`; at the next cut
the completed rows move `W_done` (authoritative service) and settle `C_select` by
actual - predicted, and work that did not complete is rolled back. Candidates (running and
waiting alike) are taken in (C_select, client, arrival order) order, the counter rising with
each reservation inside one plan. VTC's service theorem does not transfer to it.

Options: `w_p`, `w_q` (defaults 1 and 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.contract.records import Phase, Queue
from cbaudit.policies.base import PlanBuilder, StateView, option
from cbaudit.policies.budget import Reason
from cbaudit.policies.least_service import (
    DEFERRED_FAIR_SHARE,
    CompletedService,
    client_of,
    live,
    next_width,
    weighted_rows,
)


def _weights(options: Mapping[str, Any]) -> tuple[int, int]:
    unknown = sorted(set(options) - {"w_p", "w_q"})
    if unknown:
        raise ValueError(f"unknown policy options {unknown} (known: w_p, w_q)")
    w_p: int = option(options, "w_p", 1, int)
    w_q: int = option(options, "w_q", 2, int)
    if w_p < 0 or w_q < 0:
        raise ValueError("policy options 'w_p' and 'w_q' must be >= 0")
    return w_p, w_q


class _Lift:
    """Active-set tracking and the counter lift that prevents idle credit."""

    def __init__(self) -> None:
        self.active: set[str] = set()
        self.last_counter = 0

    def update(self, counters: dict[str, int], now_active: set[str]) -> None:
        for gone in sorted(self.active - now_active):
            self.last_counter = counters.get(gone, 0)
        staying = self.active & now_active
        for client in sorted(now_active - self.active):
            others = [counters.get(c, 0) for c in staying]
            floor = min(others) if others else self.last_counter
            counters[client] = max(counters.get(client, 0), floor)
        self.active = set(now_active)


class VtcPolicy:
    policy_id = "vtc"
    policy_version = "1"
    tie_break_key = ("phase_rank", "arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.w_p, self.w_q = _weights(options)
        self.counters: dict[str, int] = {}
        self.lift = _Lift()
        self.outputs = CompletedService(0, self.w_q)  # charges completed output rows only

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        for client, units in self.outputs.observe(view).items():
            self.counters[client] = self.counters.get(client, 0) + units
        self.lift.update(self.counters, {client_of(r) for r in live(view) if r.ready})
        for r in view.running:  # the running batch continues
            if not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
                continue
            n = next_width(r, plan.tokens_left)
            why = plan.take(r, n) if n > 0 else Reason.DEFERRED_TOKEN_BUDGET
            if why is not None:
                plan.defer(r, why)
        waiting = [r for r in view.waiting if r.ready]
        for r in view.waiting:
            if not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
        while waiting:
            client = min(
                {client_of(r) for r in waiting}, key=lambda c: (self.counters.get(c, 0), c)
            )
            r = min((w for w in waiting if client_of(w) == client), key=lambda w: w.arrival_order)
            n = next_width(r, plan.tokens_left)
            why = plan.take(r, n, admit=True) if n > 0 else Reason.DEFERRED_TOKEN_BUDGET
            if why is not None:
                for rest in waiting:
                    plan.defer(rest, why if rest is r else DEFERRED_FAIR_SHARE)
                break
            self.counters[client] = self.counters.get(client, 0) + self.w_p * r.p
            waiting.remove(r)
        self.outputs.remember(plan)


class VtcCompletionReconciledPolicy:
    policy_id = "vtc-completion-reconciled"
    policy_version = "completion_reconciled_vtc_teaching_v1"
    tie_break_key = ("phase_rank", "arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.w_p, self.w_q = _weights(options)
        self.c_select: dict[str, int] = {}
        self.done = CompletedService(self.w_p, self.w_q)  # W_done
        self.lift = _Lift()
        self._reserved: dict[int, tuple[str, int, int]] = {}  # idx -> (client, prompt, cost)

    @property
    def w_done(self) -> dict[str, int]:
        """Authoritative completed weighted service per client."""
        return dict(self.done.service)

    def _settle(self, view: StateView) -> None:
        """Move W_done by completed rows and settle (or roll back) last plan's reservations."""
        before = dict(self.done.counted)
        self.done.observe(view)
        for idx, (client, p, predicted) in self._reserved.items():
            counted = before.get(idx, 0)
            actual = weighted_rows(
                counted, self.done.counted.get(idx, counted), p, self.w_p, self.w_q
            )
            self.c_select[client] = self.c_select.get(client, 0) + actual - predicted
        self._reserved = {}

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        self._settle(view)
        candidates = [r for r in live(view) if r.ready]
        for r in live(view):
            if not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
        self.lift.update(self.c_select, {client_of(r) for r in candidates})
        while candidates:
            client = min(
                {client_of(r) for r in candidates}, key=lambda c: (self.c_select.get(c, 0), c)
            )
            r = min(
                (w for w in candidates if client_of(w) == client),
                key=lambda w: (w.queue is not Queue.RUNNING, w.arrival_order, w.rid),
            )
            candidates.remove(r)
            n = next_width(r, plan.tokens_left)
            why = (
                plan.take(r, n, admit=r.queue is Queue.WAITING)
                if n > 0 and plan.seqs_left > 0
                else DEFERRED_FAIR_SHARE
            )
            if why is not None:
                plan.defer(r, why)
                continue
            semantic_start = max(r.c, self.done.counted.get(r.idx, r.c))
            predicted = weighted_rows(semantic_start, r.c + n, r.p, self.w_p, self.w_q)
            self.c_select[client] = self.c_select.get(client, 0) + predicted
            self._reserved[r.idx] = (client, r.p, predicted)
        self.done.remember(plan)
