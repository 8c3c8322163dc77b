"""`least-slack`: serve the legal work with the least predicted slack first (article 0x07).

For each ready request the deadline comes from factual clocks only: a request with no output
yet has the first-token deadline `arrival + TTFT`; a live stream has the next-token deadline
`last emission + TBT`. No clock restarts at admission, retry or resume. Predicted slack is
`deadline - predicted_finish` under the named cost model `exclusive_endpoint_lower_bound_v1`:

    waiting first token:  predicted_finish = now + remaining_prefill_units * tick
    active next token:    predicted_finish = now + tick

a synthetic, unmeasured lower bound (negative slack: infeasible even with exclusive service;
positive slack: no guarantee). Candidates are taken in (slack, phase, arrival order, request
id) order while the budgets allow; a request with no declared SLO has infinite slack. Every
candidate left out is recorded with its reason.

Options: `ttft_ms`, `tbt_ms` (defaults for requests without their own SLO; in milliseconds,
converted with `tick_ms`), `tick_ms` (milliseconds per clock unit, default 1), `tick` (clock
units per iteration under the cost model, default 1), `chunk_tokens` (prefill rows per unit;
default: the token budget).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import Phase, Queue
from cbaudit.policies.base import PlanBuilder, StateView, option

COST_MODEL_ID = "exclusive_endpoint_lower_bound_v1"
DEFERRED_SLACK_ORDER = "DEFERRED_SLACK_ORDER"


class SlackView(NamedTuple):
    """Deadline, headroom, predicted finish and slack of one candidate at one cut (a named
    tuple: read-only, and made for every ready request at every cut, where a frozen
    dataclass's `__init__` costs four times as much)."""

    req: LiveRequest
    target: str  # "first" (TTFT clock) | "next" (TBT clock)
    deadline: float
    headroom: float
    predicted_finish: float
    slack: float


def _number(options: Mapping[str, Any], name: str, default: float | None) -> float | None:
    value = options.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"policy option {name!r} must be a positive number, got {value!r}")
    return float(value)


class LeastSlackPolicy:
    policy_id: str = "least-slack"
    policy_version: str = "1"
    tie_break_key: tuple[str, ...] = (
        "phase_rank",
        "arrival_order",
        "request_id",
        "request_generation",
    )
    phase_order: tuple[Phase, ...] = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        opts = dict(options)
        self._take_options(opts)
        if opts:
            raise ValueError(f"unknown policy options {sorted(opts)}")

    def _take_options(self, opts: dict[str, Any]) -> None:
        """Consume this policy's options from `opts` (subclasses consume theirs first)."""
        tick_ms = _number(opts, "tick_ms", 1.0) or 1.0
        ttft = _number(opts, "ttft_ms", None)
        tbt = _number(opts, "tbt_ms", None)
        self.default_ttft = None if ttft is None else ttft / tick_ms
        self.default_tbt = None if tbt is None else tbt / tick_ms
        self.tick = _number(opts, "tick", 1.0) or 1.0
        chunk = opts.get("chunk_tokens")
        if chunk is not None:
            option(opts, "chunk_tokens", 0, int)
            if chunk < 1:
                raise ValueError("policy option 'chunk_tokens' must be >= 1")
        self.chunk: int | None = chunk
        for name in ("tick_ms", "ttft_ms", "tbt_ms", "tick", "chunk_tokens"):
            opts.pop(name, None)

    def slack_of(self, r: LiveRequest, now: float, token_budget: int) -> SlackView:
        """The candidate's factual deadline and predicted slack at `now`."""
        chunk = self.chunk or token_budget
        if r.e == 0:
            limit = r.ttft_limit if r.ttft_limit is not None else self.default_ttft
            deadline = math.inf if limit is None else r.arrival + limit
            units = math.ceil((r.p - r.c) / chunk)
            target = "first"
        else:
            limit = r.tbt_limit if r.tbt_limit is not None else self.default_tbt
            origin = r.last_emit if r.last_emit is not None else r.arrival
            deadline = math.inf if limit is None else origin + limit
            units = max(1, math.ceil(r.remaining / chunk))  # a rebuild before the next token
            target = "next"
        predicted = now + units * self.tick
        return SlackView(r, target, deadline, deadline - now, predicted, deadline - predicted)

    def candidates(self, view: StateView) -> list[SlackView]:
        """Ready, non-terminal requests in least-slack order (stable tie-break)."""
        tb = view.budgets.token_budget
        out = [
            self.slack_of(r, view.now, tb)
            for r in (*view.running, *view.waiting)
            if r.ready and not r.terminal
        ]
        out.sort(
            key=lambda s: (
                s.slack,
                0 if s.req.is_decode else 1,
                s.req.arrival_order,
                s.req.rid,
                s.req.gen,
            )
        )
        return out

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        self.choose_from(view, plan, self.candidates(view))

    def choose_from(self, view: StateView, plan: PlanBuilder, candidates: list[SlackView]) -> None:
        """`choose` given the cut's `candidates(view)` (a caller that logs them, such as the
        SLO oracle's recorder, computes them once)."""
        for r in (*view.running, *view.waiting):
            if not r.ready and not r.terminal:
                plan.defer(r, r.readiness_reason or "NOT_READY")
        self.select(view, plan, candidates)

    def select(self, view: StateView, plan: PlanBuilder, ordered: list[SlackView]) -> None:
        """Take candidates in order while the budgets allow; record why the others wait."""
        for s in ordered:
            r = s.req
            want = 1 if r.is_decode else min(r.remaining, plan.tokens_left)
            if want <= 0:
                plan.defer(r, DEFERRED_SLACK_ORDER)
                continue
            reason = plan.take(r, want, admit=r.queue is Queue.WAITING)
            if reason is not None:
                plan.defer(r, reason)
