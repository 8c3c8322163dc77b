"""`vllm-v1`: the token decisions of vLLM v0.23.0's V1 `Scheduler.schedule()`, rule by rule.

Written from reading the published 0.23.0 release (no vLLM code is used). Every rule this
module mirrors is listed, with the marker ids that pin its source lines, in
`cbaudit/policies/vllm_v1_rules.py`; the markers live in `pinned/vllm-v0.23.0-scheduler-rules.yaml`
and `cbaudit verify-pin` checks them against the release. In one step:

* budgets: the token budget starts full (`max_num_scheduled_tokens`, else
  `max_num_batched_tokens`: the engine configuration maps it onto `token_budget`);
* running requests first, in running-list order, while tokens are left: each asks for its
  whole remaining stream `p + e - c`, clamped by `long_prefill_token_threshold` when positive,
  by the tokens left and by `max_model_len - 1 - c`;
* a running request whose new blocks do not fit preempts a victim and retries: under `fcfs` the
  tail of the running list, under `priority` the largest `(priority, arrival)` of the whole list;
  a victim scheduled earlier in this step gives its tokens back and the walk steps back one; a
  request that preempts itself ends the running pass;
* waiting requests second, and only in a step that preempted nobody: in queue order (FCFS:
  preempted requests at the front; `priority`: smallest `(priority, arrival)` first), stopping at
  `max_num_seqs` running requests, at an exhausted budget, or at the first request that does
  not fit. With `full_sequence_must_fit` (vLLM's `scheduler_reserve_full_isl`, on by default) a
  waiting request is admitted only if the blocks for its whole current sequence fit, not only
  its first chunk.

The null block (one of vLLM's `num_gpu_blocks` is never usable) and the stop at `max_model_len`
live in the engine configuration's mapping (`cbaudit.sim.engine_config`); preemption by
recompute, the front-of-queue requeue and the block accounting in the engine.

Options: `scheduling` "fcfs" (default) or "priority"; `full_sequence_must_fit` (default true);
`max_model_len` (default none: no length clamp). Not modelled: prefix caching, speculative
tokens, encoder inputs, LoRA limits, async scheduling, KV connectors (cbaudit refuses such
engines); `exact_runtime_reproduction` stays false for that reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import attrgetter
from typing import Any

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.workload_records import Phase
from cbaudit.policies.base import PlanBuilder, StateView, option
from cbaudit.policies.budget import Reason, ceil_div

_C = attrgetter("c")


class VllmV1Policy:
    policy_id = "vllm-v1"
    policy_version = "0.23.0-rules.1"
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)
    exact_runtime_reproduction = False
    # vLLM runs a step whose schedule() only preempted (rule `step.preempt_only`): the engine
    # counts such a plan as one iteration instead of asking again at the same cut.
    preempt_only_is_a_step = True

    def __init__(self, options: Mapping[str, Any]) -> None:
        mode = option(options, "scheduling", "fcfs", str)
        if mode not in ("fcfs", "priority"):
            raise ValueError(f"policy option 'scheduling' must be fcfs or priority, got {mode!r}")
        self.mode = mode
        self.full_sequence_must_fit: bool = option(options, "full_sequence_must_fit", True, bool)
        self.max_model_len: int | None = None
        if "max_model_len" in options and options["max_model_len"] is not None:
            length = option(options, "max_model_len", None, int)
            if length < 2:
                raise ValueError(f"policy option 'max_model_len' must be >= 2, got {length}")
            self.max_model_len = length
        if mode == "priority":
            self.tie_break_key: tuple[str, ...] = (
                "priority_rank",
                "arrival_order",
                "request_id",
                "request_generation",
            )
        else:
            self.tie_break_key = ("arrival_order", "request_id", "request_generation")

    def decode_stretch(self, view: StateView) -> int:
        """Quiet stretches (`cbaudit.sim.stretch`): with the waiting queue empty and every
        running request a ready decode that the budgets admit, the running pass asks one token
        of each (`p + e - c = 1`; the threshold never clamps one token) and the waiting pass has
        nobody to visit, so every later cut that differs by one decode row each gets the same
        plan, until `max_model_len` clamps a request: its row at c needs c <= max_model_len - 2.
        """
        if self.max_model_len is None:
            return 1 << 62
        return max(0, self.max_model_len - 1 - max(r.c for r in view.running))

    def chunk_stretch(self, view: StateView) -> tuple[int, int]:
        """Chunk stretches (`cbaudit.sim.stretch`): at a cut whose running requests are ready
        decodes followed, last in the running list, by one ready request R prefilling its
        prompt (no output yet, nothing to rebuild), the running pass asks one token of each
        decode and gives R `w = min(threshold, token_budget - B)` rows (the engine ends the
        stretch before the chunk that would reach R's prompt, so R's remaining stream is
        longer and the threshold clamps exactly when it is below the budget left). The
        waiting pass then has nobody to visit, or finds the token budget spent: it defers the
        queue head (`DEFERRED_TOKEN_BUDGET`) and explains the same requests behind it at every
        such cut (the queue, the ranks and the selected work do not change). So every later
        cut that differs by one decode row per decode and one chunk of w for R gets the same
        plan, shifted, until `max_model_len` clamps a row. Returns (cuts, w); (0, 0) when R is
        not last or a budget would be left to a waiting request."""
        running = view.running
        r = running[-1]
        b = len(running) - 1
        left = view.budgets.token_budget - b
        w = left
        threshold = view.budgets.long_prefill_token_threshold
        if threshold is not None and 0 < threshold < w:
            w = threshold
        if r.is_decode or r.e != 0 or w < 1 or (view.waiting and w < left):
            return 0, 0
        if self.max_model_len is None:
            return 1 << 62, w
        cuts = (self.max_model_len - 1 - r.c) // w  # R's chunk end stays <= max_model_len - 1
        if b:
            cuts = min(cuts, self.max_model_len - 1 - max(d.c for d in running[:-1]))
        return max(0, cuts), w

    # ------------------------------------------------------------------ one step

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        running = list(view.running)
        stopped_at, preempted = self._running_pass(view, plan, running)
        if stopped_at < len(running):
            stopped_by = (
                Reason.DEFERRED_AFTER_PREEMPTION if preempted else Reason.DEFERRED_TOKEN_BUDGET
            )
            for r in running[stopped_at:]:
                if not plan.chosen(r):
                    plan.defer(r, stopped_by)
        if not view.waiting:
            return
        waiting = iter(self._waiting_order(view))
        if preempted:  # a step that preempted admits nobody
            self._explain_rest(plan, waiting, Reason.DEFERRED_AFTER_PREEMPTION)
            return
        self._waiting_pass(view, plan, len(running), waiting)

    def _running_pass(
        self, view: StateView, plan: PlanBuilder, running: list[LiveRequest]
    ) -> tuple[int, bool]:
        """Schedule running requests in list order; (index the pass stopped at, preempted?).

        The blocks a request needs are computed once: preempting others frees blocks but does
        not change the request's own frontier."""
        preempted = False
        # `_new_tokens(r, view, budget, running=True)` inline (once per running request and
        # cut; the same formula): the stream left `p + e - c`, clamped by the threshold (when
        # positive), by the tokens left and by `max_model_len - 1 - c`; the clamps read once
        threshold = view.budgets.long_prefill_token_threshold
        if threshold is not None and threshold <= 0:
            threshold = None  # (off)
        max_len = self.max_model_len
        # `plan.kv_needed(r, n)` inline: the blocks ceil((c + n) / bs) - ceil(c / bs) for
        # n > 0 and c >= 0; for one row (a decode) that is 1 when c is a multiple of bs, else
        # 0 (`test_the_running_pass_needs_the_blocks_kv_needed_gives` holds both forms to
        # `blocks_needed`)
        bs = plan.block_size
        take = plan.take
        i = 0
        end = len(running)  # (the list changes only when a victim leaves it, below)
        # A decode block the engine offers (`PlanBuilder.offer_block`: the first n requests
        # are ready decodes at their frontier): the loop below would give each one token
        # (`p + e - c = 1`: the threshold never clamps it, and `max_model_len` does not when
        # every c <= max_model_len - 2), without preempting when the budgets hold all n rows
        # and the blocks they open (which `take_block` checks). Taken at once; otherwise row
        # by row. tests/policies/test_vllm_v1_block.py holds both to the same plan.
        n_block = plan.block_offer
        if (
            n_block
            and (max_len is None or max(map(_C, running[:n_block])) <= max_len - 2)
            and plan.take_block()
        ):
            i = n_block
        while i < end:
            budget = plan.tokens_left
            if budget <= 0:
                break
            r = running[i]
            if not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
                i += 1
                continue
            c = r.c
            n = r.p + r.e - c
            if threshold is not None and threshold < n:
                n = threshold
            if budget < n:
                n = budget
            if max_len is not None and max_len - 1 - c < n:
                n = max_len - 1 - c
            if n <= 0:
                i += 1
                continue
            free = plan.free_blocks
            if free is None:
                need = 0
            else:
                if bs is None or c < 0:
                    need = plan.kv_needed(r, n)
                elif n == 1:
                    need = 0 if c % bs else 1
                else:
                    need = (-c) // bs - (-(c + n)) // bs
                if need > free:  # victims until the blocks fit (the pool stays modelled)
                    placed = True
                    while plan.free_blocks is not None and need > plan.free_blocks:
                        victim = self._victim(running)
                        scheduled_earlier = plan.chosen(victim)
                        running.remove(victim)
                        end -= 1
                        if scheduled_earlier:  # its tokens come back and the walk steps back
                            i -= 1
                        plan.preempt(victim)
                        preempted = True
                        if victim is r:
                            placed = False
                            break
                    if not placed:  # it preempted itself: nobody after it runs in this step
                        break
            reason = take(r, n, need)
            if reason is not None:  # only the sequence budget can still refuse here
                plan.defer(r, reason)
            i += 1
        return i, preempted

    def _waiting_pass(
        self, view: StateView, plan: PlanBuilder, n_running: int, waiting: Iterable[LiveRequest]
    ) -> None:
        """Admit waiting requests in queue order until one cannot be admitted."""
        rest = iter(waiting)
        for r in rest:
            if plan.tokens_left <= 0:
                stop: str = Reason.DEFERRED_TOKEN_BUDGET
            elif n_running >= view.budgets.sequence_budget:
                stop = Reason.DEFERRED_SEQUENCE_BUDGET
            elif not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
                continue
            else:
                n = self._new_tokens(r, view, plan.tokens_left, running=False)
                refused = self._admit(r, n, view, plan)
                if refused is None:
                    n_running += 1
                    continue
                stop = refused
            plan.defer(r, stop)
            self._explain_rest(plan, rest, Reason.DEFERRED_BEHIND_QUEUE_HEAD)
            return

    # ------------------------------------------------------------------ the rules

    def _new_tokens(self, r: LiveRequest, view: StateView, budget: int, *, running: bool) -> int:
        """Tokens `r` asks for: its remaining stream, clamped by the threshold and the budget
        (and, for a running request, by `max_model_len - 1 - c`)."""
        n = r.p + r.e - r.c
        threshold = view.budgets.long_prefill_token_threshold
        if threshold is not None and 0 < threshold < n:
            n = threshold
        if budget < n:
            n = budget
        if running and self.max_model_len is not None:
            n = min(n, self.max_model_len - 1 - r.c)
        return n

    def _admit(self, r: LiveRequest, n: int, view: StateView, plan: PlanBuilder) -> str | None:
        """Admit a waiting request for `n` tokens, or say why not (the waiting pass stops)."""
        bs = view.budgets.kv_block_size
        if self.full_sequence_must_fit and bs is not None and plan.free_blocks is not None:
            whole = r.p + r.e
            if self.max_model_len is not None:
                whole = min(whole, self.max_model_len)
            if ceil_div(whole, bs) - r.blocks > plan.free_blocks:
                return Reason.DEFERRED_KV_FULL_SEQUENCE
        return plan.take(r, n, admit=True)

    def _victim(self, running: list[LiveRequest]) -> LiveRequest:
        if self.mode == "priority":  # the first of the largest (priority, arrival)
            return max(running, key=lambda r: (r.priority, r.arrival, r.arrival_order))
        return running[-1]

    def _waiting_order(self, view: StateView) -> Iterable[LiveRequest]:
        if self.mode == "priority":
            return sorted(view.waiting, key=lambda r: (r.priority, r.arrival, r.arrival_order))
        return view.waiting

    def _explain_rest(self, plan: PlanBuilder, rest: Iterable[LiveRequest], reason: str) -> None:
        """Give `reason` to each waiting request left unvisited that ranks ahead of the worst
        selected work (the contract asks a reason for every such request, none for others).

        The walk ends at the first request that ranks behind it and could not be followed by
        one that ranks ahead: in priority order that is any such request; in the FCFS queue one
        never preempted (preempted requests sit at the front, the rest in arrival order)."""
        worst = plan.worst_key()  # (a decode block taken stays unwritten)
        if worst is None:
            return
        key_fn = plan.key_fn
        fcfs = self.mode != "priority"
        for r in rest:
            if key_fn(r, r.phase_of(r.c + 1)) < worst:
                plan.defer(r, reason)
            elif not fcfs or r.preemptions == 0:
                return
