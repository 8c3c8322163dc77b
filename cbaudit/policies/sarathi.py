"""`sarathi-serve`: stall-free batching (Sarathi-Serve, Algorithm 3), token budget tau.

Order: every running decode row first, then the running partial prefills (an ongoing chunked
prompt, or a recompute rebuild) with `c = min(remaining, tau - n_t)`, then new admissions in
FCFS order while the sequence, token and KV budgets allow, each chunked to what is left.
"""

from __future__ import annotations

from cbaudit.contract.records import Phase
from cbaudit.policies.base import PlanBuilder, StateView
from cbaudit.policies.budget import Reason

_UNBOUNDED = 1 << 62


class SarathiServePolicy:
    policy_id = "sarathi-serve"
    policy_version = "1"
    tie_break_key = ("phase_rank", "arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def decode_stretch(self, view: StateView) -> int:
        """Quiet stretches (`cbaudit.sim.stretch`): at a cut whose waiting queue is empty and
        whose running requests are all ready decodes that the budgets admit one row each, this
        policy selects exactly one decode row per running request and records nothing else,
        and so at every later cut that differs only by one more decode row each: no bound."""
        return _UNBOUNDED

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        partial = []
        for r in view.running:
            if not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
            elif r.is_decode:
                reason = plan.take(r, 1)
                if reason is not None:
                    plan.defer(r, reason)
            else:
                partial.append(r)
        for r in partial:
            n = min(r.remaining, plan.tokens_left)
            reason = plan.take(r, n) if n > 0 else Reason.DEFERRED_TOKEN_BUDGET
            if reason is not None:
                plan.defer(r, reason)
        for r in view.waiting:
            if not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
                continue
            n = min(r.remaining, plan.tokens_left)
            reason = plan.take(r, n, admit=True) if n > 0 else Reason.DEFERRED_TOKEN_BUDGET
            if reason is not None:
                plan.defer(r, reason)
                break
