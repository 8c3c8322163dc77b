"""Preemption by exact preservation (swap) for the replay engine (article 0x0C, lesson 5.2).

The engine's default preemption is recompute: the victim's blocks are freed, its computed
frontier drops to 0, and the rebuild [0, T_target) is overhead, never semantic service. With a
`SwapPreemption` the victim's K/V rows move off-device instead: its frontiers stay, its blocks
return to the pool, and it waits in the queue *not ready* (readiness reason `SWAPPED_OUT`:
its K/V is not resident, so no policy may select it). At each later cut, before the policy
decides, swapped-out requests are restored in preemption order while the pool has room for
all their blocks; a restored request is ready again with its exact frontier, and its next
interval is the ordinary one (no rebuild rows).

Cost model (declared, synthetic): moving R rows costs R * bytes_per_row bytes; swap-out takes
bytes / write_bytes_per_ms and swap-in bytes / read_bytes_per_ms (the symmetric link is the
special case write = read). Under a millisecond clock the transfer time is added to the next
executed iteration (a synchronous-transfer model: overlap is not modelled); under the unit
slot clock it is reported but not added. Options (`preemption:` in replay options):
`mode` (`recompute` | `swap`), `bytes_per_row` (default 131,072, the logical bytes-per-row
ABI), `link_bytes_per_ms` (required for swap), `read_bytes_per_ms` (default: the link's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.contract.live_request import LiveRequest
from cbaudit.policies.budget import blocks_held

SWAPPED_OUT = "SWAPPED_OUT"
BYTES_PER_ROW = 131_072


class SwapPreemption:
    """Exact-preservation preemption state of one replay."""

    mode = "swap"

    def __init__(
        self,
        *,
        link_bytes_per_ms: float,
        read_bytes_per_ms: float | None = None,
        bytes_per_row: int = BYTES_PER_ROW,
    ) -> None:
        if link_bytes_per_ms <= 0 or (read_bytes_per_ms is not None and read_bytes_per_ms <= 0):
            raise ValueError("swap link bandwidths must be > 0 bytes per ms")
        if bytes_per_row <= 0:
            raise ValueError("bytes_per_row must be > 0")
        self.write_bw = float(link_bytes_per_ms)
        self.read_bw = float(
            read_bytes_per_ms if read_bytes_per_ms is not None else link_bytes_per_ms
        )
        self.bytes_per_row = bytes_per_row
        self.swapped: dict[int, tuple[LiveRequest, int]] = {}  # idx -> (request, rows off-device)
        self.out_bytes = 0
        self.in_bytes = 0
        self.transfer_ms = 0.0
        self.swap_outs = 0
        self.swap_ins = 0
        self._pending_ms = 0.0

    def swap_out(self, victim: LiveRequest) -> None:
        """Preserve the victim's rows off-device; it keeps its frontiers and is not ready."""
        rows = victim.c
        moved = rows * self.bytes_per_row
        self.out_bytes += moved
        ms = moved / self.write_bw
        self.transfer_ms += ms
        self._pending_ms += ms
        self.swap_outs += 1
        victim.ready = False
        victim.readiness_reason = SWAPPED_OUT
        self.swapped[victim.idx] = (victim, rows)

    def swap_in(self, free: int | None, block_size: int | None) -> int | None:
        """Restore swapped-out requests in order while their blocks fit; returns the new free."""
        for idx in list(self.swapped):
            r, rows = self.swapped[idx]
            need = blocks_held(rows, block_size) if block_size is not None else 0
            if free is not None and need > free:
                break  # keep preemption order: a later victim does not jump the queue
            if free is not None:
                free -= need
            r.blocks = need
            r.ready = True
            r.readiness_reason = None
            r.snapshot += 1
            moved = rows * self.bytes_per_row
            self.in_bytes += moved
            ms = moved / self.read_bw
            self.transfer_ms += ms
            self._pending_ms += ms
            self.swap_ins += 1
            del self.swapped[idx]
        return free

    def take_pending_ms(self) -> float:
        """Transfer time not yet charged to an iteration (then reset)."""
        ms, self._pending_ms = self._pending_ms, 0.0
        return ms

    def report(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "bytes_per_row": self.bytes_per_row,
            "write_bytes_per_ms": _num(self.write_bw),
            "read_bytes_per_ms": _num(self.read_bw),
            "swap_outs": self.swap_outs,
            "swap_ins": self.swap_ins,
            "swap_out_bytes": self.out_bytes,
            "swap_in_bytes": self.in_bytes,
            "transfer_ms_modeled": _num(self.transfer_ms),
            "still_swapped_out": len(self.swapped),
            "recompute_overhead_tokens": 0,
        }


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 9)


def make_preemption(options: Mapping[str, Any]) -> SwapPreemption | None:
    """The preemption model from replay options (None: the engine's recompute default)."""
    if not options:
        return None
    unknown = sorted(
        set(options) - {"mode", "bytes_per_row", "link_bytes_per_ms", "read_bytes_per_ms"}
    )
    if unknown:
        raise ValueError(f"unknown preemption options {unknown}")
    mode = options.get("mode", "recompute")
    if mode == "recompute":
        return None
    if mode != "swap":
        raise ValueError(f"preemption mode must be recompute or swap, got {mode!r}")
    link = options.get("link_bytes_per_ms")
    read = options.get("read_bytes_per_ms")
    bpr = options.get("bytes_per_row", BYTES_PER_ROW)
    for name, value in (("link_bytes_per_ms", link), ("read_bytes_per_ms", read)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ValueError(f"preemption option {name!r} must be a number")
    if link is None:
        raise ValueError("swap preemption needs link_bytes_per_ms (the declared link bandwidth)")
    if isinstance(bpr, bool) or not isinstance(bpr, int):
        raise ValueError("preemption option 'bytes_per_row' must be an integer")
    return SwapPreemption(link_bytes_per_ms=link, read_bytes_per_ms=read, bytes_per_row=bpr)
