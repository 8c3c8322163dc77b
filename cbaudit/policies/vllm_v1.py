"""`vllm-v1`: the decision shape of the pinned vLLM v0.23.0 V1 scheduler (a teaching model).

Facts this follows (shared/pins/vllm-v0.23.0.facts.json; no vLLM source is used):

* there is no prefill or decode phase: each request's computed frontier catches up with its
  token frontier, `num_new = (p + e) - c`, clamped by `long_prefill_token_threshold` when
  it is positive and by the remaining token budget (scheduler.py lines 404-410, 684-699);
* running requests are traversed before waiting ones (lines 376-378, 562);
* on a running request's KV allocation failure a victim is preempted by recompute: the tail of
  the running queue under `fcfs` (line 499), `max(priority, arrival)` under `priority`
  (lines 475-477); a victim placed earlier in this step gives its rows back; a request that
  preempts itself is not scheduled; the victim's blocks are freed, its computed count reset to
  0, and it goes to the front of the waiting queue (lines 974-995);
* the waiting pass is skipped entirely in a step that preempted (line 563), stops at
  `max_num_seqs` running requests (line 567), and skips requests waiting on remote K/V
  (lines 579-586).

Not modelled: prefix caching, speculative tokens, encoder budgets, LoRA limits, async
scheduling, max_model_len. `exact_runtime_reproduction` is false.

Options: `scheduling` = "fcfs" (default) or "priority".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import Phase
from cbaudit.policies.base import PlanBuilder, StateView, option
from cbaudit.policies.budget import Reason


class VllmV1Policy:
    policy_id = "vllm-v1"
    policy_version = "0.23.0-shape.1"
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)
    exact_runtime_reproduction = False

    def __init__(self, options: Mapping[str, Any]) -> None:
        mode = option(options, "scheduling", "fcfs", str)
        if mode not in ("fcfs", "priority"):
            raise ValueError(f"policy option 'scheduling' must be fcfs or priority, got {mode!r}")
        self.mode = mode
        if mode == "priority":
            self.tie_break_key: tuple[str, ...] = (
                "priority_rank",
                "arrival_order",
                "request_id",
                "request_generation",
            )
        else:
            self.tie_break_key = ("arrival_order", "request_id", "request_generation")

    def _new_tokens(self, r: LiveRequest, view: StateView, budget: int) -> int:
        n = r.p + r.e - r.c
        threshold = view.budgets.long_prefill_token_threshold
        if threshold is not None and 0 < threshold < n:
            n = threshold
        return min(n, budget)

    def _victim(self, running: list[LiveRequest]) -> LiveRequest:
        if self.mode == "priority":
            return max(running, key=lambda r: (r.priority, r.arrival, r.arrival_order))
        return running[-1]

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        running = list(view.running)
        preempted = False
        i = 0
        while i < len(running) and plan.tokens_left > 0:
            r = running[i]
            if not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
                i += 1
                continue
            n = self._new_tokens(r, view, plan.tokens_left)
            if n <= 0:
                i += 1
                continue
            scheduled_self = True
            while plan.free_blocks is not None and plan.kv_needed(r, n) > plan.free_blocks:
                victim = self._victim(running)
                at = running.index(victim)
                running.pop(at)
                if at < i:
                    i -= 1
                plan.preempt(victim)
                preempted = True
                if victim is r:
                    scheduled_self = False
                    break
            if not scheduled_self:
                break
            reason = plan.take(r, n)
            if reason is not None:  # only the sequence budget can still refuse here
                plan.defer(r, reason)
            i += 1
        stopped_by = Reason.DEFERRED_AFTER_PREEMPTION if preempted else Reason.DEFERRED_TOKEN_BUDGET
        for r in running[i:]:
            if not plan.chosen(r):
                plan.defer(r, stopped_by)
        if preempted:
            for r in view.waiting:
                plan.defer(r, Reason.DEFERRED_AFTER_PREEMPTION)
                break
            return
        n_running = len(running)
        for r in self._waiting_order(view):
            if plan.tokens_left <= 0:
                plan.defer(r, Reason.DEFERRED_TOKEN_BUDGET)
                break
            if n_running >= view.budgets.sequence_budget:
                plan.defer(r, Reason.DEFERRED_SEQUENCE_BUDGET)
                break
            if not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
                continue
            n = self._new_tokens(r, view, plan.tokens_left)
            reason = plan.take(r, n, admit=True)
            if reason is not None:
                plan.defer(r, reason)
                break
            n_running += 1

    def _waiting_order(self, view: StateView) -> Any:
        if self.mode == "priority":
            return sorted(view.waiting, key=lambda r: (r.priority, r.arrival, r.arrival_order))
        return iter(view.waiting)
