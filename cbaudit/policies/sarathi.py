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

    def chunk_stretch(self, view: StateView) -> tuple[int, int]:
        """Chunk stretches (`cbaudit.sim.stretch`): at a cut whose running requests are ready
        decodes and one ready request R prefilling its prompt (no output yet, nothing to
        rebuild), every decode gets its row, R `min(remaining, tau - B)` rows, which is
        `w = tau - B` (the engine ends the stretch before the chunk that would reach R's
        prompt), and the waiting pass defers the not-ready requests ahead of the first ready
        one and stops at that one (no tokens left): the same at every later cut that differs
        by one decode row per decode and one chunk of w for R. No bound: (unbounded, w)."""
        w = view.budgets.token_budget - (len(view.running) - 1)
        if w < 1:
            return 0, 0
        return _UNBOUNDED, w

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
