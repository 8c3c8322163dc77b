"""`decode-first` and `prefill-first`: one phase takes the token budget before the other.

Both are teaching policies for the article's starvation counterexamples (0x09): under
persistent pressure the other phase receives zero rows. Options bound that:

* `decode-first`: `prefill_reserve` (tokens kept for prefill whenever prefill work is ready)
  and `rotate_decodes` (serve the least recently served decode rows first). With both, the
  article's bounded variant serves both phases.
* `prefill-first`: `decode_reserve` (tokens kept for decode rows whenever decodes are ready).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import Phase
from cbaudit.policies.base import PlanBuilder, StateView, option
from cbaudit.policies.budget import Reason


def _take_prefills(
    plan: PlanBuilder, view: StateView, prefills: list[LiveRequest], cap: int
) -> None:
    """Running partial prefills then FCFS admissions, each chunked to the remaining cap."""
    for r in prefills:
        n = min(r.remaining, cap, plan.tokens_left)
        reason = plan.take(r, n) if n > 0 else Reason.DEFERRED_PHASE_PRIORITY
        if reason is None:
            cap -= n
        else:
            plan.defer(r, reason)
    for r in view.waiting:
        if not r.ready:
            plan.defer(r, Reason.NOT_READY_REMOTE_KV)
            continue
        n = min(r.remaining, cap, plan.tokens_left)
        reason = plan.take(r, n, admit=True) if n > 0 else Reason.DEFERRED_PHASE_PRIORITY
        if reason is not None:
            plan.defer(r, reason)
            break
        cap -= n


def _split(view: StateView, plan: PlanBuilder) -> tuple[list[LiveRequest], list[LiveRequest]]:
    decodes: list[LiveRequest] = []
    prefills: list[LiveRequest] = []
    for r in view.running:
        if not r.ready:
            plan.defer(r, Reason.NOT_READY_REMOTE_KV)
        elif r.is_decode:
            decodes.append(r)
        else:
            prefills.append(r)
    return decodes, prefills


class DecodeFirstPolicy:
    policy_id = "decode-first"
    policy_version = "1"
    tie_break_key = ("phase_rank", "arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.prefill_reserve: int = option(options, "prefill_reserve", 0, int)
        self.rotate: bool = option(options, "rotate_decodes", False, bool)
        if self.prefill_reserve < 0:
            raise ValueError("policy option 'prefill_reserve' must be >= 0")

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        decodes, prefills = _split(view, plan)
        prefill_ready = bool(prefills) or any(r.ready for r in view.waiting)
        cap = plan.tokens_left - (self.prefill_reserve if prefill_ready else 0)
        if self.rotate:
            decodes.sort(key=lambda r: (r.last_served, r.arrival_order))
        for r in decodes:
            if cap <= 0:
                plan.defer(
                    r, Reason.DEFERRED_ROTATION if self.rotate else Reason.DEFERRED_TOKEN_BUDGET
                )
                continue
            reason = plan.take(r, 1)
            if reason is None:
                cap -= 1
            else:
                plan.defer(r, reason)
        _take_prefills(plan, view, prefills, plan.tokens_left)


class PrefillFirstPolicy:
    policy_id = "prefill-first"
    policy_version = "1"
    tie_break_key = ("phase_rank", "arrival_order", "request_id", "request_generation")
    phase_order = (Phase.PREFILL_CHUNK, Phase.DECODE_ROW)

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.decode_reserve: int = option(options, "decode_reserve", 0, int)
        if self.decode_reserve < 0:
            raise ValueError("policy option 'decode_reserve' must be >= 0")

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        decodes, prefills = _split(view, plan)
        cap = plan.tokens_left - (min(self.decode_reserve, len(decodes)) if decodes else 0)
        _take_prefills(plan, view, prefills, cap)
        for r in decodes:
            reason = plan.take(r, 1)
            if reason is not None:
                plan.defer(
                    r,
                    Reason.DEFERRED_PHASE_PRIORITY
                    if reason == Reason.DEFERRED_TOKEN_BUDGET
                    else reason,
                )
