"""A hybrid model's second memory pool: a fixed state per resident request (lecture 4, hybrid
models (a)).

A hybrid model (linear-attention layers beside full attention) keeps, for every resident
request, a recurrent state of fixed size V beside its per-token K/V. The scheduler then admits
against two pools: the K/V pool (blocks per token, the workload's `kv_block_size` and
`kv_total_blocks`) and a state pool of `floor(capacity_bytes / V)` slots, one per resident
request. A request holds a slot from its admission until it finishes or is preempted (a
recompute victim drops its state, a swap victim moves it to the host with its K/V); a
swapped-out request is restored only when a slot is free again.

Admission checks the state pool in `PlanBuilder.take(..., admit=True)` (refusal
`DEFERRED_STATE_POOL`), and the engine refuses a plan that admits more requests than there are
free slots (`REPLAY.STATE.BUDGET_EXCEEDED`), so a policy that bypasses the builder cannot
overcommit it. The report gives both pools' occupancy and which one refused admissions
(refusals summed over iterations).

Replay options (`state_pool:`): `capacity_bytes` (required), and the state per request as
`bytes_per_request` or `model` (a model profile id or path that declares `state`); without
either, the roofline cost model's model, when it declares a state.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from cbaudit.contract.live_request import LiveRequest

OPTION_KEYS = ("capacity_bytes", "bytes_per_request", "model")
STATE_REASON = "DEFERRED_STATE_POOL"
KV_REASONS = frozenset({"DEFERRED_KV_BUDGET", "DEFERRED_KV_FULL_SEQUENCE"})


class StatePool:
    """Slots of one fixed-size state, one per resident request."""

    def __init__(
        self,
        *,
        capacity_bytes: int,
        bytes_per_request: int,
        basis: str = "declared",
        kv_bytes_per_token: Fraction | None = None,
    ) -> None:
        if bytes_per_request <= 0:
            raise ValueError("a state pool needs bytes_per_request > 0")
        if capacity_bytes < bytes_per_request:
            raise ValueError(
                f"capacity_bytes {capacity_bytes} holds no state of {bytes_per_request} bytes"
            )
        self.capacity_bytes = capacity_bytes
        self.bytes_per_request = bytes_per_request
        self.slots = capacity_bytes // bytes_per_request
        self.basis = basis
        self.kv_bytes_per_token = kv_bytes_per_token  # the profile's, when one was named
        self.holders: set[int] = set()
        self.peak = 0
        self.deferred_state = 0  # refusals by this pool, summed over iterations
        self.deferred_kv = 0  # refusals by the K/V pool, summed over iterations
        self.held_sum = 0  # slots held, summed over executed iterations
        self.kv_used_peak = 0
        self.kv_used_sum = 0
        self.iterations = 0
        self.full_iterations = 0  # iterations that ended with every slot held

    @property
    def free(self) -> int:
        return self.slots - len(self.holders)

    def holds(self, req: LiveRequest) -> bool:
        return req.idx in self.holders

    def acquire(self, req: LiveRequest) -> None:
        self.holders.add(req.idx)
        if len(self.holders) > self.peak:
            self.peak = len(self.holders)

    def release(self, req: LiveRequest) -> None:
        self.holders.discard(req.idx)

    def observe(self, not_selected: list[tuple[LiveRequest, str]], kv_used: int | None) -> None:
        """One executed iteration: its refusals by pool and both pools' occupancy."""
        for _, reason in not_selected:
            if reason == STATE_REASON:
                self.deferred_state += 1
            elif reason in KV_REASONS:
                self.deferred_kv += 1
        held = len(self.holders)
        self.held_sum += held
        self.iterations += 1
        if held >= self.slots:
            self.full_iterations += 1
        if kv_used is not None:
            self.kv_used_sum += kv_used
            self.kv_used_peak = max(self.kv_used_peak, kv_used)

    def binding(self) -> str:
        """Which pool refused admissions: `state`, `kv`, `both` or `none`."""
        if self.deferred_state and self.deferred_kv:
            return "both"
        if self.deferred_state:
            return "state"
        return "kv" if self.deferred_kv else "none"

    def report(self, kv_total_blocks: int | None, kv_block_bytes: int | None) -> dict[str, Any]:
        n = self.iterations
        state = {
            "bytes_per_request": self.bytes_per_request,
            "capacity_bytes": self.capacity_bytes,
            "slots": self.slots,
            "peak_slots_held": self.peak,
            "peak_fraction": _ratio(self.peak, self.slots),
            "mean_slots_held": _ratio(self.held_sum, n),
            "iterations_full": self.full_iterations,
            "admission_refusals": self.deferred_state,
            "basis": self.basis,
        }
        kv: dict[str, Any] = {"total_blocks": kv_total_blocks}
        if kv_total_blocks is not None:
            kv.update(
                {
                    "peak_blocks_used": self.kv_used_peak,
                    "peak_fraction": _ratio(self.kv_used_peak, kv_total_blocks),
                    "mean_blocks_used": _ratio(self.kv_used_sum, n),
                    "block_bytes": kv_block_bytes,
                }
            )
        kv["admission_refusals"] = self.deferred_kv
        return {"state": state, "kv": kv, "binding_pool": self.binding(), "iterations": n}


def _ratio(num: int, den: int) -> float | None:
    return None if den == 0 else round(num / den, 6)


def make_state_pool(
    options: Mapping[str, Any], model_state_bytes: Fraction | None, base_dir: Path | None
) -> StatePool | None:
    """The state pool from replay options (None when none is declared); ValueError when
    unusable. `model_state_bytes` is the roofline model's state per request, if any."""
    if not options:
        return None
    unknown = sorted(set(options) - set(OPTION_KEYS))
    if unknown:
        raise ValueError(f"unknown state_pool options {unknown} (known: {', '.join(OPTION_KEYS)})")
    cap = options.get("capacity_bytes")
    if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0:
        raise ValueError(f"state_pool capacity_bytes must be an integer > 0, got {cap!r}")
    per = options.get("bytes_per_request")
    ref = options.get("model")
    if per is not None and ref is not None:
        raise ValueError("give state_pool bytes_per_request or model, not both")
    basis = "declared in options"
    kv: Fraction | None = None
    if ref is not None:
        from cbaudit.sim.profiles import load_model_profile

        if not isinstance(ref, str) or not ref:
            raise ValueError("state_pool model must be a profile id or path")
        profile = load_model_profile(ref, base_dir=base_dir)
        if not profile.is_hybrid:
            raise ValueError(f"model profile {profile.profile_id} declares no per-request state")
        per_frac = profile.state_bytes_per_request
        basis = f"model profile {profile.profile_id}"
        kv = profile.kv_bytes_per_token
    elif per is not None:
        if isinstance(per, bool) or not isinstance(per, int):
            raise ValueError(f"state_pool bytes_per_request must be an integer, got {per!r}")
        per_frac = Fraction(per)
    elif model_state_bytes:
        per_frac = model_state_bytes
        basis = "the roofline cost model's model profile"
    else:
        raise ValueError(
            "a state pool needs the state per request: bytes_per_request, model (a hybrid"
            " profile), or a roofline cost model whose model declares a state"
        )
    if per_frac.denominator != 1:
        raise ValueError(f"a state of {per_frac} bytes is not a whole number of bytes")
    return StatePool(
        capacity_bytes=cap, bytes_per_request=int(per_frac), basis=basis, kv_bytes_per_token=kv
    )
