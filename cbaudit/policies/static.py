"""`static`: a fixed request batch (article 0x02, lesson 2.2).

When no cohort is open, up to `sequence_budget` waiting requests are admitted in arrival order
and form the cohort. Membership is then frozen: finished members keep their slot idle (the
fixed-batch barrier) and nobody joins until the longest member finishes.
"""

from __future__ import annotations

from cbaudit.contract.records import Phase
from cbaudit.policies.base import PlanBuilder, StateView
from cbaudit.policies.budget import Reason

_UNBOUNDED = 1 << 62


class StaticPolicy:
    policy_id = "static"
    policy_version = "1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def decode_stretch(self, view: StateView) -> int:
        """Quiet stretches (`cbaudit.sim.stretch`): at a cut whose waiting queue is empty and
        whose running requests are all ready decodes that the budgets admit one row each, this
        policy selects exactly one decode row per running request and records nothing else,
        and so at every later cut that differs only by one more decode row each: no bound."""
        return _UNBOUNDED

    def decode_stretch_waiting(self, view: StateView) -> int:
        """Quiet stretches behind a fixed batch: at a cut whose running requests (the batch)
        are all ready decodes that the budgets admit one row each, with requests waiting, this
        policy selects exactly one decode row per running request, admits nobody and gives the
        waiting queue's head the one reason `DEFERRED_FIXED_BATCH`; so at every later cut that
        differs only by one more decode row each (the queue as it was): no bound."""
        return _UNBOUNDED

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        if view.running:
            for r in view.running:
                if not r.ready:
                    plan.defer(r, Reason.NOT_READY_REMOTE_KV)
                    continue
                n = min(r.remaining, plan.tokens_left)
                reason = plan.take(r, n) if n > 0 else Reason.DEFERRED_TOKEN_BUDGET
                if reason is not None:
                    plan.defer(r, reason)
            if view.waiting:
                plan.defer(view.waiting[0], Reason.DEFERRED_FIXED_BATCH)
            return
        for r in view.waiting:
            if not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
                continue
            n = min(r.remaining, plan.tokens_left)
            reason = plan.take(r, n, admit=True) if n > 0 else plan.refusal(r, 1)
            if reason is not None:
                plan.defer(r, reason or Reason.DEFERRED_TOKEN_BUDGET)
                break
