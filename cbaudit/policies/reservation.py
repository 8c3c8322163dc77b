"""Reservation admission in the replay engine: `maximum`, `point`, `quantile`, `watermark`.

Loop 5 (article 0x06) in a live replay. Capacity is counted in logical K/V rows (one all-layer
row = 131,072 bytes in the M5.1 ABI; reported, never re-derived). A request holds rows up to
its reservation end `p + max(G_hat, e) - 1`: its committed rows plus the forecast future rows of
the first-token rule (F24/F25; no prefix cache, so the whole prompt is uncached). FIFO request
j is admitted iff reserved + its rows <= C_soft (C_soft = C_hard - W for `watermark`, else
C_hard); the first refusal stops the scan (no younger request jumps it). A request that could
never fit an empty system is rejected instead of blocking the queue forever.

Forecasts G_hat (online only; the executor's hidden lengths are never visible here):

    maximum   declared max_output_tokens (ORCA-style; never under-reserves)
    point     ceil(point_fraction * max_output_tokens)      default 0.5
    quantile  ceil(quantile_fraction * max_output_tokens)   default 0.9 (the "p90" class)
    watermark the quantile forecast under the soft ceiling  (watermark_rows > 0 required)

The fractions are a declared synthetic predictor, not a calibrated model. When a running
request reaches its reservation end it needs an extension: granted row by row while the hard
ceiling allows, otherwise the policy names a preemption intent (recompute) for the
lowest-priority running request (largest priority number, then the latest arrival). Every
extension and intent is counted in `report()`; an intent is not an allocator fact.

Options: `ceiling_rows` (default: the KV pool in tokens when declared; else required),
`watermark_rows`, `point_fraction`, `quantile_fraction`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import Phase, Queue
from cbaudit.policies.base import PlanBuilder, StateView, option
from cbaudit.policies.budget import Reason

BYTES_PER_ROW = 131_072
MODES = ("maximum", "point", "quantile", "watermark")
REJECTED_EXCEEDS_CEILING = "REJECTED_EXCEEDS_CEILING"
DEFERRED_RESERVATION = Reason.DEFERRED_RESERVATION.value
DEFERRED_FCFS_BREAK = Reason.DEFERRED_FCFS_BREAK.value


def _fraction(options: Mapping[str, Any], name: str, default: float) -> float:
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError(f"policy option {name!r} must be a number in (0, 1], got {value!r}")
    return float(value)


class ReservationPolicy:
    policy_version: str = "1"
    tie_break_key: tuple[str, ...] = ("arrival_order", "request_id", "request_generation")
    phase_order: tuple[Phase, ...] = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, mode: str, options: Mapping[str, Any]) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown reservation mode {mode!r}")
        opts = dict(options)
        known = {"ceiling_rows", "watermark_rows", "point_fraction", "quantile_fraction"}
        unknown = sorted(set(opts) - known)
        if unknown:
            raise ValueError(f"unknown policy options {unknown} (known: {sorted(known)})")
        self.mode = mode
        self.policy_id: str = f"reservation-{mode}"
        ceiling = opts.get("ceiling_rows")
        if ceiling is not None and (option(opts, "ceiling_rows", 0, int) < 1):
            raise ValueError("policy option 'ceiling_rows' must be >= 1")
        self.ceiling: int | None = ceiling
        self.watermark: int = option(opts, "watermark_rows", 0, int)
        if mode == "watermark" and self.watermark <= 0:
            raise ValueError("the watermark policy needs watermark_rows >= 1")
        if mode != "watermark" and self.watermark != 0:
            raise ValueError("watermark_rows applies only to reservation-watermark")
        self.point = _fraction(opts, "point_fraction", 0.5)
        self.quantile = _fraction(opts, "quantile_fraction", 0.9)
        self._end: dict[int, int] = {}  # reservation end (rows) of each admitted request
        self._held: dict[int, LiveRequest] = {}
        self.counters = {
            "admission_intents": 0,
            "deferred_capacity": 0,
            "rejected": 0,
            "extension_rows": 0,
            "hard_breach_rows": 0,
            "preemption_intents": 0,
            "unused_rows_at_finish": 0,
            "peak_reserved_rows": 0,
        }

    # ------------------------------------------------------------------ arithmetic

    def forecast(self, r: LiveRequest) -> int:
        """G_hat for `r` from online facts only (max_output_tokens and the mode)."""
        if self.mode == "maximum":
            return r.max_out
        frac = self.point if self.mode == "point" else self.quantile
        return max(1, math.ceil(frac * r.max_out))

    def reservation_end(self, r: LiveRequest) -> int:
        """Rows held when the forecast trajectory ends: p + max(G_hat, e) - 1."""
        return r.p + max(self.forecast(r), r.e) - 1

    def budget_problem(self, budgets: Any) -> str | None:
        """Why these budgets cannot run this policy (None when they can): a reservation needs
        a ceiling, given as `ceiling_rows` or by a declared KV pool."""
        pool = budgets.kv_block_size is not None and budgets.kv_total_blocks is not None
        if self.ceiling is None and not pool:
            return (
                f"{self.policy_id} needs a reservation ceiling: set policy option ceiling_rows"
                " or declare a KV pool (budgets kv_block_size and kv_total_blocks)"
            )
        return None

    def _ceilings(self, view: StateView) -> tuple[int, int]:
        hard = self.ceiling
        b = view.budgets
        if hard is None and b.kv_block_size is not None and b.kv_total_blocks is not None:
            hard = b.kv_block_size * b.kv_total_blocks
        if hard is None:
            raise ValueError("reservation policies need ceiling_rows or a declared KV pool")
        return hard, hard - self.watermark

    # ------------------------------------------------------------------ decision

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        hard, soft = self._ceilings(view)
        self._release_finished()
        running = [r for r in view.running if not r.terminal]
        # under-reservation: extend row by row under the hard ceiling, else name a victim
        reserved = sum(self._end.get(r.idx, r.c) for r in running)
        victims: set[int] = set()
        for r in sorted(running, key=lambda x: x.arrival_order):
            if r.idx in victims or not r.ready:
                continue
            need = r.c + 1 - self._end.get(r.idx, r.c)
            while need > 0:
                if reserved + 1 <= hard:
                    self._end[r.idx] = self._end.get(r.idx, r.c) + 1
                    reserved += 1
                    self.counters["extension_rows"] += 1
                    need -= 1
                    continue
                others = [x for x in running if x.idx not in victims]
                if others == [r]:
                    # nothing else holds rows: preempting r would only loop; record the breach
                    self._end[r.idx] = self._end.get(r.idx, r.c) + need
                    reserved += need
                    self.counters["hard_breach_rows"] += need
                    break
                victim = max(others, key=lambda x: (x.priority, x.arrival_order))
                victims.add(victim.idx)
                reserved -= self._end.pop(victim.idx, victim.c)
                self._held.pop(victim.idx, None)
                plan.preempt(victim)
                self.counters["preemption_intents"] += 1
                if victim is r:
                    break
        for r in running:
            if r.idx in victims or not r.ready:
                if not r.ready:
                    plan.defer(r, r.readiness_reason or "NOT_READY")
                continue
            want = 1 if r.is_decode else min(r.remaining, plan.tokens_left)
            reason = plan.take(r, want) if want > 0 else Reason.DEFERRED_TOKEN_BUDGET
            if reason is not None:
                plan.defer(r, reason)
        # FIFO admission against the reservation ceiling
        blocked = False
        for r in view.waiting:
            if r.idx in victims:
                continue
            if not r.ready:
                plan.defer(r, r.readiness_reason or "NOT_READY")
                continue
            end = self.reservation_end(r)
            if blocked:
                plan.defer(r, DEFERRED_FCFS_BREAK)
                continue
            if end > soft:
                plan.reject(r, REJECTED_EXCEEDS_CEILING)
                self.counters["rejected"] += 1
                continue
            if reserved + end > soft:
                plan.defer(r, DEFERRED_RESERVATION)
                self.counters["deferred_capacity"] += 1
                blocked = True
                continue
            want = min(r.remaining, plan.tokens_left)
            reason = plan.take(r, want, admit=True) if want > 0 else Reason.DEFERRED_TOKEN_BUDGET
            if reason is not None:
                plan.defer(r, reason)
                blocked = True
                continue
            self._end[r.idx] = end
            self._held[r.idx] = r
            reserved += end
            self.counters["admission_intents"] += 1
        self.counters["peak_reserved_rows"] = max(self.counters["peak_reserved_rows"], reserved)

    def _release_finished(self) -> None:
        for idx, r in list(self._held.items()):
            if r.terminal or r.queue is Queue.FINISHED:
                committed = r.p + r.e - 1
                self.counters["unused_rows_at_finish"] += max(self._end.pop(idx, 0) - committed, 0)
                del self._held[idx]

    def report(self) -> dict[str, Any]:
        """Counters of this replay (logical rows; bytes at 131,072 per row)."""
        out: dict[str, Any] = {"mode": self.mode, **self.counters}
        out["unused_bytes_at_finish"] = self.counters["unused_rows_at_finish"] * BYTES_PER_ROW
        out["peak_reserved_bytes"] = self.counters["peak_reserved_rows"] * BYTES_PER_ROW
        out["watermark_rows"] = self.watermark
        out["forecast"] = (
            "declared max_output_tokens"
            if self.mode == "maximum"
            else "synthetic predictor: a declared fraction of max_output_tokens"
        )
        return out


def factory(mode: str) -> Any:
    """A registry factory for one mode."""

    def make(options: Mapping[str, Any]) -> ReservationPolicy:
        return ReservationPolicy(mode, options)

    return make
