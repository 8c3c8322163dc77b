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
`mode` (`recompute` | `swap` | `auto`), `bytes_per_row` (default: the roofline model's K/V
bytes per token, else 131,072, the logical bytes-per-row ABI), `link_bytes_per_ms` (default:
the roofline hardware's host link; required otherwise), `read_bytes_per_ms` (default: the
link's), `host_pool_bytes` (the host pool's capacity; default unbounded),
`recompute_ms_per_token` and `recompute_ms_per_token_sq` (the rule's a and c; default: from
the roofline model and hardware), `log_limit` (preemptions listed one by one; default 1,000).

Modes, per victim of L computed rows (lecture 4, "recompute vs swap"):

* `recompute`: always recompute (the engine's default path, now with each preemption listed);
* `swap`: always swap, unless the host pool cannot take the victim (then recompute, listed
  with `fallback: host_pool_full`);
* `auto`: the cheaper by the crossover rule: T_recompute(L) = aL + cL^2 against
  T_swap(L) = L * bytes_per_row * (1 / write + 1 / read) + the fixed state out and back
  (a hybrid model's), i.e. recompute below L* = (s - a) / c; a tie goes to swap (no rows are
  rebuilt). a and c come from `cbaudit.sim.calculators.RecomputeCost` on the roofline's model
  and hardware (a = 2P / (pi MFU), c = 2 d n / (pi MFU)).

The recompute estimate is reported, never charged: the rebuild rows run in later steps and
the cost model charges them there. A swap's transfer is charged as above.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any

from cbaudit.contract.live_request import LiveRequest
from cbaudit.policies.budget import blocks_held

SWAPPED_OUT = "SWAPPED_OUT"
BYTES_PER_ROW = 131_072
LOG_LIMIT = 1_000
OPTION_KEYS = (
    "mode",
    "bytes_per_row",
    "link_bytes_per_ms",
    "read_bytes_per_ms",
    "host_pool_bytes",
    "recompute_ms_per_token",
    "recompute_ms_per_token_sq",
    "log_limit",
)


class PreemptionMode(StrEnum):
    """How a victim gives its K/V back."""

    RECOMPUTE = "recompute"
    SWAP = "swap"
    AUTO = "auto"


@dataclass(frozen=True, slots=True)
class RecomputeRule:
    """T_recompute(L) = aL + cL^2 (ms), and where a and c came from."""

    a_ms_per_token: Fraction
    c_ms_per_token_sq: Fraction
    basis: str

    def ms(self, length: int) -> Fraction:
        return self.a_ms_per_token * length + self.c_ms_per_token_sq * length * length


@dataclass(frozen=True, slots=True)
class PreemptionDefaults:
    """What the cost model knows that the preemption options may leave out."""

    bytes_per_row: int | None = None  # the model's K/V bytes per token
    link_bytes_per_ms: Fraction | None = None  # the hardware's host link
    recompute: RecomputeRule | None = None
    state_bytes: int = 0  # a hybrid model's fixed state per request
    basis: str = ""


class SwapPreemption:
    """Preemption state of one replay: recompute, swap or auto, per victim (the name is kept
    from when swap was its only mode)."""

    def __init__(
        self,
        *,
        link_bytes_per_ms: float | None,
        read_bytes_per_ms: float | None = None,
        bytes_per_row: int = BYTES_PER_ROW,
        mode: PreemptionMode = PreemptionMode.SWAP,
        recompute: RecomputeRule | None = None,
        state_bytes: int = 0,
        host_pool_bytes: int | None = None,
        log_limit: int = LOG_LIMIT,
        state_pool: Any = None,
    ) -> None:
        if link_bytes_per_ms is not None and link_bytes_per_ms <= 0:
            raise ValueError("swap link bandwidths must be > 0 bytes per ms")
        if read_bytes_per_ms is not None and read_bytes_per_ms <= 0:
            raise ValueError("swap link bandwidths must be > 0 bytes per ms")
        if link_bytes_per_ms is None and mode is not PreemptionMode.RECOMPUTE:
            raise ValueError(
                f"{mode.value} preemption needs link_bytes_per_ms (the declared link bandwidth;"
                " under the roofline cost model the hardware's host_link gives it)"
            )
        if mode is PreemptionMode.AUTO and recompute is None:
            raise ValueError(
                "auto preemption needs the recompute rule's a and c: run under the roofline"
                " cost model (its model and hardware give them) or declare"
                " recompute_ms_per_token and recompute_ms_per_token_sq"
            )
        if bytes_per_row <= 0:
            raise ValueError("bytes_per_row must be > 0")
        if host_pool_bytes is not None and host_pool_bytes <= 0:
            raise ValueError("host_pool_bytes must be > 0")
        if log_limit < 0:
            raise ValueError("log_limit must be >= 0")
        self.mode = mode
        link = link_bytes_per_ms if link_bytes_per_ms is not None else 1
        self.write_bw = float(link)
        self.read_bw = float(read_bytes_per_ms if read_bytes_per_ms is not None else link)
        self.has_link = link_bytes_per_ms is not None
        self.bytes_per_row = bytes_per_row
        self.recompute = recompute
        self.state_bytes = state_bytes
        self.host_pool_bytes = host_pool_bytes
        self.log_limit = log_limit
        self.state_pool = state_pool  # a cbaudit.sim.state_pool.StatePool, or None
        # the old swap-only report is kept byte for byte when nothing new is asked for
        self.extended = (
            mode is not PreemptionMode.SWAP
            or recompute is not None
            or state_bytes > 0
            or host_pool_bytes is not None
        )
        self.swapped: dict[int, tuple[LiveRequest, int]] = {}  # idx -> (request, rows off-device)
        self.out_bytes = 0
        self.in_bytes = 0
        self.transfer_ms = 0.0
        self.swap_outs = 0
        self.swap_ins = 0
        self._pending_ms = 0.0
        self.host_bytes = 0  # bytes held in the host pool now
        self.host_bytes_peak = 0
        self.host_blocks_peak = 0
        self.by_mode = {PreemptionMode.RECOMPUTE.value: 0, PreemptionMode.SWAP.value: 0}
        self.fallbacks = 0
        self.recompute_ms_total = Fraction(0)
        self.swap_ms_total = 0.0
        self.log: list[dict[str, Any]] = []
        self.logged_out = 0  # preemptions beyond log_limit (counted, not listed)
        self.block_size: int | None = None  # set by the engine's budgets (host pool blocks)

    # ------------------------------------------------------------------ the decision

    def _moved_bytes(self, rows: int) -> int:
        return rows * self.bytes_per_row + self.state_bytes

    def swap_ms(self, rows: int) -> float:
        """Out and back over the link: the K/V rows and the fixed state, each way."""
        moved = self._moved_bytes(rows)
        return moved / self.write_bw + moved / self.read_bw

    def decide(self, rows: int) -> tuple[PreemptionMode, str | None]:
        """The mode for a victim of `rows` computed rows, and a fallback reason if any."""
        want = self.mode
        if want is PreemptionMode.AUTO:
            assert self.recompute is not None
            cheaper = float(self.recompute.ms(rows)) < self.swap_ms(rows)
            want = PreemptionMode.RECOMPUTE if cheaper else PreemptionMode.SWAP
        pool = self.host_pool_bytes
        if (
            want is PreemptionMode.SWAP
            and pool is not None
            and self.host_bytes + self._moved_bytes(rows) > pool
        ):
            return PreemptionMode.RECOMPUTE, "host_pool_full"
        return want, None

    def preempt(self, victim: LiveRequest, iteration: int) -> bool:
        """Preempt `victim` in the mode its length calls for; True when its rows were
        preserved (swapped out), False when the engine must discard them (recompute)."""
        rows = victim.c
        mode, fallback = self.decide(rows)
        self.by_mode[mode.value] += 1
        if fallback is not None:
            self.fallbacks += 1
        rec = None if self.recompute is None else self.recompute.ms(rows)
        swap = self.swap_ms(rows) if self.has_link else None
        if rec is not None and mode is PreemptionMode.RECOMPUTE:
            self.recompute_ms_total += rec
        if swap is not None and mode is PreemptionMode.SWAP:
            self.swap_ms_total += swap
        if len(self.log) < self.log_limit:
            entry: dict[str, Any] = {
                "iteration": iteration,
                "request_id": victim.rid,
                "tokens": rows,
                "mode": mode.value,
                "recompute_ms": None if rec is None else _num(float(rec)),
                "swap_ms": None if swap is None else _num(swap),
                "cost_ms": _cost(mode, rec, swap),
            }
            if fallback is not None:
                entry["fallback"] = fallback
            self.log.append(entry)
        else:
            self.logged_out += 1
        if mode is PreemptionMode.SWAP:
            self.swap_out(victim)
            return True
        return False

    # ------------------------------------------------------------------ swap

    def swap_out(self, victim: LiveRequest) -> None:
        """Preserve the victim's rows off-device; it keeps its frontiers and is not ready."""
        rows = victim.c
        moved = self._moved_bytes(rows)
        self.out_bytes += moved
        ms = moved / self.write_bw
        self.transfer_ms += ms
        self._pending_ms += ms
        self.swap_outs += 1
        victim.ready = False
        victim.readiness_reason = SWAPPED_OUT
        self.swapped[victim.idx] = (victim, rows)
        self.host_bytes += moved
        if self.host_bytes > self.host_bytes_peak:
            self.host_bytes_peak = self.host_bytes
        if self.block_size is not None:
            held = sum(blocks_held(n, self.block_size) for _, n in self.swapped.values())
            self.host_blocks_peak = max(self.host_blocks_peak, held)

    def swap_in(self, free: int | None, block_size: int | None) -> int | None:
        """Restore swapped-out requests in order while their blocks (and, for a hybrid model,
        a state slot) fit; returns the new free."""
        pool = self.state_pool
        for idx in list(self.swapped):
            r, rows = self.swapped[idx]
            need = blocks_held(rows, block_size) if block_size is not None else 0
            if free is not None and need > free:
                break  # keep preemption order: a later victim does not jump the queue
            if pool is not None and pool.free <= 0:
                break
            if free is not None:
                free -= need
            if pool is not None:
                pool.acquire(r)
            r.blocks = need
            r.ready = True
            r.readiness_reason = None
            r.snapshot += 1
            moved = self._moved_bytes(rows)
            self.in_bytes += moved
            self.host_bytes -= moved
            ms = moved / self.read_bw
            self.transfer_ms += ms
            self._pending_ms += ms
            self.swap_ins += 1
            del self.swapped[idx]
        return free

    def log_report(self) -> dict[str, Any]:
        """Each preemption (up to `log_limit`): iteration, victim, its rows, the mode taken and
        both modes' costs where known."""
        return {"preemptions": list(self.log), "not_listed": self.logged_out}

    def take_pending_ms(self) -> float:
        """Transfer time not yet charged to an iteration (then reset)."""
        ms, self._pending_ms = self._pending_ms, 0.0
        return ms

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode.value,
            "bytes_per_row": self.bytes_per_row,
            "write_bytes_per_ms": _num(self.write_bw) if self.has_link else None,
            "read_bytes_per_ms": _num(self.read_bw) if self.has_link else None,
            "swap_outs": self.swap_outs,
            "swap_ins": self.swap_ins,
            "swap_out_bytes": self.out_bytes,
            "swap_in_bytes": self.in_bytes,
            "transfer_ms_modeled": _num(self.transfer_ms),
            "still_swapped_out": len(self.swapped),
            "recompute_overhead_tokens": 0,
        }
        if not self.extended:
            return out
        del out["recompute_overhead_tokens"]  # the replay's recompute_tokens says it
        rule = self.recompute
        crossover = None
        if rule is not None and self.has_link:
            s = Fraction(self._moved_bytes(1) - self.state_bytes) * (
                Fraction(1) / Fraction(repr(self.write_bw))
                + Fraction(1) / Fraction(repr(self.read_bw))
            )
            gap = s - rule.a_ms_per_token
            if gap > 0 and rule.c_ms_per_token_sq > 0:
                crossover = _num(float(gap / rule.c_ms_per_token_sq))
        out.update(
            {
                "by_mode": dict(self.by_mode),
                "host_pool_fallbacks": self.fallbacks,
                "rule": None
                if rule is None
                else {
                    "recompute_ms": "a L + c L^2",
                    "a_ms_per_token": _num(float(rule.a_ms_per_token)),
                    "c_ms_per_token_sq": float(rule.c_ms_per_token_sq),
                    "swap_ms": "L bytes_per_row (1/write + 1/read) + state both ways",
                    "crossover_tokens": crossover,
                    "basis": rule.basis,
                },
                "state_bytes_per_request": self.state_bytes,
                "host_pool": {
                    "capacity_bytes": self.host_pool_bytes,
                    "peak_bytes": self.host_bytes_peak,
                    "peak_blocks": self.host_blocks_peak if self.block_size is not None else None,
                },
                "recompute_ms_estimated": _num(float(self.recompute_ms_total)),
                "swap_ms_modeled": _num(self.swap_ms_total),
            }
        )
        return out


def _cost(mode: PreemptionMode, rec: Fraction | None, swap: float | None) -> float | int | None:
    """The chosen mode's cost (None when the rule for it is unknown)."""
    chosen = rec if mode is PreemptionMode.RECOMPUTE else swap
    return None if chosen is None else _num(float(chosen))


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 9)


def _number(options: Mapping[str, Any], name: str, *, integer: bool = False) -> Any:
    value = options.get(name)
    if value is None:
        return None
    if integer:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"preemption option {name!r} must be an integer")
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"preemption option {name!r} must be a number")
    return value


def make_preemption(
    options: Mapping[str, Any],
    defaults: PreemptionDefaults | None = None,
    *,
    state_pool: Any = None,
) -> SwapPreemption | None:
    """The preemption model from replay options (None: the engine's recompute default).

    `defaults` are what the cost model knows (the roofline's K/V bytes per token, host link
    and recompute rule; a hybrid model's state). With a state pool and no options the mode is
    swap (a hybrid model's default); `{}` otherwise keeps the engine's recompute path.
    """
    d = defaults or PreemptionDefaults()
    if not options and state_pool is None:
        return None
    unknown = sorted(set(options) - set(OPTION_KEYS))
    if unknown:
        raise ValueError(f"unknown preemption options {unknown} (known: {', '.join(OPTION_KEYS)})")
    raw_mode = options.get("mode", "swap" if state_pool is not None else "recompute")
    modes = [m.value for m in PreemptionMode]
    if raw_mode not in modes:
        raise ValueError(f"preemption mode must be {', '.join(modes)}, got {raw_mode!r}")
    mode = PreemptionMode(raw_mode)
    if mode is PreemptionMode.RECOMPUTE and set(options) <= {"mode"} and state_pool is None:
        return None  # the engine's own path, byte for byte
    link = _number(options, "link_bytes_per_ms")
    read = _number(options, "read_bytes_per_ms")
    bpr = _number(options, "bytes_per_row", integer=True)
    host = _number(options, "host_pool_bytes", integer=True)
    limit = _number(options, "log_limit", integer=True)
    a = _number(options, "recompute_ms_per_token")
    c = _number(options, "recompute_ms_per_token_sq")
    if (a is None) != (c is None):
        raise ValueError("give recompute_ms_per_token and recompute_ms_per_token_sq together")
    rule = d.recompute
    if a is not None and c is not None:
        if a < 0 or c < 0 or a + c == 0:
            raise ValueError("the recompute rule's a and c must be >= 0, not both 0")
        rule = RecomputeRule(Fraction(repr(a)), Fraction(repr(c)), "declared in options")
    if link is None and d.link_bytes_per_ms is not None:
        link = float(d.link_bytes_per_ms)
    if bpr is None:
        bpr = d.bytes_per_row if d.bytes_per_row is not None else BYTES_PER_ROW
    return SwapPreemption(
        link_bytes_per_ms=link,
        read_bytes_per_ms=read,
        bytes_per_row=bpr,
        mode=mode,
        recompute=rule,
        state_bytes=d.state_bytes if state_pool is not None else 0,
        host_pool_bytes=host,
        log_limit=LOG_LIMIT if limit is None else limit,
        state_pool=state_pool,
    )


def defaults_of(cost: Any) -> PreemptionDefaults:
    """What the roofline cost model `cost` knows about preemption (empty for other models)."""
    model = getattr(cost, "model", None)
    hardware = getattr(cost, "hardware", None)
    flops_per_ms = getattr(cost, "flops_per_ms", None)
    if model is None or hardware is None or flops_per_ms is None:
        return PreemptionDefaults()
    kv = Fraction(model.kv_bytes_per_token)
    link = hardware.host_link_bandwidth
    # a = 2P / (pi MFU), c = (4 d n / 2) / (pi MFU): calculators.RecomputeCost's coefficients
    rule = RecomputeRule(
        Fraction(model.linear_flops_per_token) / flops_per_ms,
        Fraction(model.attention_flops_per_pair) / 2 / flops_per_ms,
        f"roofline: {model.profile_id} on {hardware.profile_id}",
    )
    return PreemptionDefaults(
        bytes_per_row=int(kv) if kv.denominator == 1 else None,
        link_bytes_per_ms=None if link is None else link / 1000,
        recompute=rule,
        basis=rule.basis,
    )
