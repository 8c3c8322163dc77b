"""`orca`: iteration-level FCFS (ORCA, Algorithm 1), optionally reserving max_tokens.

Live requests are considered in arrival order. A request never scheduled before is in
INITIATION; with `reserve_max_tokens` it reserves `prompt + max_output_tokens` slots, and when
that would exceed `n_slots` the scan stops (`break`): an older initiation is never skipped
to admit younger work that happens to fit. ORCA does not chunk prompts, so an initiation
that does not fit the token budget also stops the scan.

Options: `reserve_max_tokens` (bool, default false), `n_slots` (int; default: the KV pool in
tokens when one is declared, else unlimited).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

from cbaudit.contract.records import Phase, Queue
from cbaudit.policies.base import PlanBuilder, StateView, option
from cbaudit.policies.budget import Reason

_UNBOUNDED = 1 << 62


class OrcaPolicy:
    policy_id = "orca"
    policy_version = "1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.reserve = option(options, "reserve_max_tokens", False, bool)
        n_slots = options.get("n_slots")
        if n_slots is not None:
            option(options, "n_slots", 0, int)
        self.n_slots: int | None = n_slots

    def decode_stretch(self, view: StateView) -> int:
        """Quiet stretches (`cbaudit.sim.stretch`): at a cut whose waiting queue is empty and
        whose running requests are all ready decodes that the budgets admit one row each, this
        policy selects exactly one decode row per running request and records nothing else,
        and so at every later cut that differs only by one more decode row each: no bound."""
        return _UNBOUNDED

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        b = view.budgets
        n_slots = self.n_slots
        if n_slots is None and b.kv_block_size is not None and b.kv_total_blocks is not None:
            n_slots = b.kv_block_size * b.kv_total_blocks
        n_rsrv = sum(r.p + r.max_out for r in view.running) if self.reserve else 0
        pool = heapq.merge(view.running, view.waiting, key=lambda r: r.arrival_order)
        for r in pool:
            if not r.ready:
                plan.defer(r, Reason.NOT_READY_REMOTE_KV)
                continue
            if plan.seqs_left <= 0:
                plan.defer(r, Reason.DEFERRED_SEQUENCE_BUDGET)
                break
            initiation = r.queue is Queue.WAITING
            reserve = initiation and self.reserve and n_slots is not None
            if reserve and n_rsrv + r.p + r.max_out > (n_slots or 0):
                plan.defer(r, Reason.DEFERRED_RESERVATION)
                break
            reason = plan.take(r, r.remaining, admit=initiation)
            if reason is not None:
                plan.defer(r, reason)
                break
            if initiation and self.reserve:
                n_rsrv += r.p + r.max_out
