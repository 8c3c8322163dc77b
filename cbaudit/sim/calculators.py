"""Lecture 4's cost models as pure calculators (seeds/003, "continuous batching").

Every function here takes plain numbers (a `StepModel` and `Rates` hold what the formulas
read from a model and a hardware profile) and returns frozen records of exact `Fraction`s:
no I/O, no printing, no clocks. `cbaudit model ...` renders them; the lecture bundle's checks
call them directly. Times are in milliseconds, sizes in bytes, rates per second.

The formulas, in the lecture's symbols (P parameters, kv K/V bytes per token, beta HBM
bandwidth, pi dense peak, MBU/MFU the fractions of those a step reaches):

* mixed step with B decode rows of mean context Lbar and a prefill chunk of Lc tokens:
  T = max((2P + B Lbar kv + Lc kv) / (beta MBU),
          (2P (B + Lc) + 4 Lbar d n B + 2 Lc^2 d n) / (pi MFU));
  weights are read once per step, every decode row reads its context's K/V, the chunk writes
  its own. `2P` stands for the weight bytes (bytes term) and the linear FLOPs per token
  (FLOPs term); `4 d n` is the attention FLOPs of one causal query-key pair.
* chunked prefill under a token budget T: ceil(L / (T - B)) steps, TTFT = steps * T_step(B, T - B).
* preemption of a request of L tokens: T_recompute = aL + cL^2, T_swap = sL, recompute wins
  below L* = (s - a) / c, with a = 2P / (pi MFU), c = 2 d n / (pi MFU), s = 2 kv / beta_link.
* CUDA-graph buckets: a batch of B runs padded to b(B) = min{b_i >= B}; the mean padding over
  B uniform in 1..N, its worst case, and its cost at Lbar kv / (beta MBU) per padded token.
* hybrid models: per-token K/V plus a fixed per-request state; the state is swapped both
  ways over the host link, or replayed through the recurrence at a prefill rate.
* static batching: eta(B) ~ 1 / (ln B + gamma) for geometric output lengths, and the gain of
  continuous batching on a bandwidth-bound decode step, I(B) / I(eta B).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from cbaudit.model import InputError
from cbaudit.sim.cost_models import Bound
from cbaudit.sim.profiles import HardwareProfile, ModelProfile

EULER_GAMMA = 0.5772156649015329
"""The Euler-Mascheroni constant (the lecture's gamma ~ 0.577)."""

_MS = 1000  # milliseconds per second


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True, slots=True)
class StepModel:
    """What the lecture's formulas read from a model."""

    weight_bytes: Fraction  # 2P bytes at fp16: read once per step
    flops_per_token: Fraction  # linear-layer FLOPs of one token (2P)
    kv_bytes_per_token: Fraction  # kv
    attention_flops_per_pair: Fraction  # 4 d_model n_layers

    @classmethod
    def of(cls, profile: ModelProfile) -> StepModel:
        """The step model of a profile (`PROFILE.FIELD.MISSING` for what it lacks)."""
        return cls(
            weight_bytes=Fraction(profile.weight_bytes_total),
            flops_per_token=Fraction(profile.linear_flops_per_token),
            kv_bytes_per_token=Fraction(profile.kv_bytes_per_token),
            attention_flops_per_pair=Fraction(profile.attention_flops_per_pair),
        )


@dataclass(frozen=True, slots=True)
class Rates:
    """A device's ceilings and the fractions of them a step reaches."""

    hbm_bytes_per_s: Fraction  # beta
    mbu: Fraction
    peak_flops_per_s: Fraction  # pi
    mfu: Fraction

    def __post_init__(self) -> None:
        for name in ("hbm_bytes_per_s", "mbu", "peak_flops_per_s", "mfu"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        if self.mbu > 1 or self.mfu > 1:
            raise ValueError("MBU and MFU are fractions of the peak, at most 1")

    @property
    def bytes_per_s(self) -> Fraction:
        """Effective bandwidth, beta * MBU."""
        return self.hbm_bytes_per_s * self.mbu

    @property
    def flops_per_s(self) -> Fraction:
        """Effective compute, pi * MFU (the lecture's pi_eff)."""
        return self.peak_flops_per_s * self.mfu

    @classmethod
    def of(
        cls,
        hardware: HardwareProfile,
        dtype: str,
        *,
        mbu: Fraction | None = None,
        mfu: Fraction | None = None,
    ) -> Rates:
        """The rates of a hardware profile at `dtype`; `mbu`/`mfu` override its efficiency."""
        peak = hardware.peak_flops(dtype)
        if peak is None:
            raise InputError.at(
                "CALC.NO_PEAK",
                f"hardware profile {hardware.profile_id} declares no dense {dtype} peak"
                f" (has: {', '.join(sorted(hardware.peak_dense_flops))})",
                hardware.source,
                pointer="/peak_dense_flops",
            )
        mbu = hardware.mbu if mbu is None else mbu
        mfu = hardware.mfu if mfu is None else mfu
        if mbu is None or mfu is None:
            raise InputError.at(
                "CALC.NO_EFFICIENCY",
                f"hardware profile {hardware.profile_id} declares no efficiency; give MBU and MFU",
                hardware.source,
                pointer="/efficiency",
            )
        return cls(hardware.hbm_bandwidth, mbu, peak, mfu)


def host_link_bytes_per_s(hardware: HardwareProfile) -> Fraction:
    """The hardware's host link bandwidth (each direction); `CALC.NO_HOST_LINK` if none."""
    if hardware.host_link_bandwidth is None:
        raise InputError.at(
            "CALC.NO_HOST_LINK",
            f"hardware profile {hardware.profile_id} declares no host_link; give the link's"
            " bandwidth",
            hardware.source,
            pointer="/host_link",
        )
    return hardware.host_link_bandwidth


def _positive(name: str, value: Fraction | int) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")


def _not_negative(name: str, value: Fraction | int) -> None:
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")


# --------------------------------------------------------------------------- mixed step


@dataclass(frozen=True, slots=True)
class MixedStep:
    """The exact terms of one mixed step (B decode rows at context Lbar, a Lc-token chunk)."""

    decode_rows: int
    context: int
    prefill: int
    weight_bytes: Fraction
    decode_kv_bytes: Fraction  # B * Lbar * kv read
    prefill_kv_bytes: Fraction  # Lc * kv written
    decode_linear_flops: Fraction  # 2P * B
    decode_attention_flops: Fraction  # 4 Lbar d n * B
    prefill_linear_flops: Fraction  # 2P * Lc
    prefill_attention_flops: Fraction  # 2 Lc^2 d n
    rates: Rates

    @property
    def bytes(self) -> Fraction:
        return self.weight_bytes + self.decode_kv_bytes + self.prefill_kv_bytes

    @property
    def flops(self) -> Fraction:
        return (
            self.decode_linear_flops
            + self.decode_attention_flops
            + self.prefill_linear_flops
            + self.prefill_attention_flops
        )

    @property
    def memory_ms(self) -> Fraction:
        return self.bytes * _MS / self.rates.bytes_per_s

    @property
    def compute_ms(self) -> Fraction:
        return self.flops * _MS / self.rates.flops_per_s

    @property
    def step_ms(self) -> Fraction:
        return max(self.memory_ms, self.compute_ms)

    @property
    def bound(self) -> Bound:
        """The binding term; a tie counts as memory (the decode-only regime)."""
        return Bound.COMPUTE if self.compute_ms > self.memory_ms else Bound.MEMORY

    @property
    def prefill_linear_ms(self) -> Fraction:
        """The chunk's linear FLOPs alone, 2P * Lc / pi_eff (the lab's chunk-step cost)."""
        return self.prefill_linear_flops * _MS / self.rates.flops_per_s

    @property
    def prefill_attention_share(self) -> Fraction:
        """The chunk's causal attention as a share of the step's FLOPs (0 for no FLOPs)."""
        return self.prefill_attention_flops / self.flops if self.flops else Fraction(0)


def mixed_step(
    model: StepModel, rates: Rates, *, decode_rows: int, context: int, prefill: int
) -> MixedStep:
    """The lecture's T_step(B, Lc): B decode rows of mean context `context`, a `prefill` chunk."""
    for name, value in (("decode_rows", decode_rows), ("context", context), ("prefill", prefill)):
        _not_negative(name, value)
    b, lbar, lc = Fraction(decode_rows), Fraction(context), Fraction(prefill)
    return MixedStep(
        decode_rows=decode_rows,
        context=context,
        prefill=prefill,
        weight_bytes=model.weight_bytes,
        decode_kv_bytes=b * lbar * model.kv_bytes_per_token,
        prefill_kv_bytes=lc * model.kv_bytes_per_token,
        decode_linear_flops=model.flops_per_token * b,
        decode_attention_flops=model.attention_flops_per_pair * lbar * b,
        prefill_linear_flops=model.flops_per_token * lc,
        prefill_attention_flops=model.attention_flops_per_pair * lc * lc / 2,
        rates=rates,
    )


def weight_read_floor_ms(model: StepModel, rates: Rates) -> Fraction:
    """No step beats one weight read at the spec-sheet bandwidth (MBU = 1): 2P / beta."""
    return model.weight_bytes * _MS / rates.hbm_bytes_per_s


def attention_crossover_context(model: StepModel) -> Fraction:
    """The context L* at which a token's attention FLOPs (4 L d n) equal its linear FLOPs
    (2P): L* = 2P / (4 d n) (lecture 1's crossover, ~53K tokens for the 70B model)."""
    _positive("attention_flops_per_pair", model.attention_flops_per_pair)
    return model.flops_per_token / model.attention_flops_per_pair


def chunk_steps(prompt_len: int, budget: int, decode_rows: int = 0) -> int:
    """Steps a prompt of `prompt_len` tokens needs in chunks of T - B: ceil(L / (T - B))."""
    _positive("prompt_len", prompt_len)
    chunk = budget - decode_rows
    if chunk <= 0:
        raise ValueError(
            f"a budget of {budget} tokens leaves no room for a chunk beside {decode_rows}"
            " decode rows"
        )
    return -(-prompt_len // chunk)


@dataclass(frozen=True, slots=True)
class ChunkedPrefill:
    """A prompt prefilled in budget-sized chunks beside B decode rows."""

    prompt_len: int
    budget: int
    chunk: int  # T - B
    steps: int  # ceil(L / (T - B))
    step: MixedStep  # T_step(B, T - B)

    @property
    def ttft_ms(self) -> Fraction:
        """ceil(L / (T - B)) * T_step(B, T - B), queueing aside."""
        return self.steps * self.step.step_ms


def chunked_prefill(
    model: StepModel,
    rates: Rates,
    *,
    decode_rows: int,
    context: int,
    prompt_len: int,
    budget: int,
) -> ChunkedPrefill:
    """The lecture's TTFT ~ ceil(L / (T - B)) * T_step(B, T - B)."""
    steps = chunk_steps(prompt_len, budget, decode_rows)
    chunk = budget - decode_rows
    step = mixed_step(model, rates, decode_rows=decode_rows, context=context, prefill=chunk)
    return ChunkedPrefill(prompt_len, budget, chunk, steps, step)


# --------------------------------------------------------------------------- preemption


@dataclass(frozen=True, slots=True)
class SwapCost:
    """Swapping a request's K/V out and back over a link: s = 2 kv / beta_link per token."""

    kv_bytes_per_token: Fraction
    link_bytes_per_s: Fraction

    @property
    def s_ms_per_token(self) -> Fraction:
        return 2 * self.kv_bytes_per_token * _MS / self.link_bytes_per_s

    def ms(self, length: int) -> Fraction:
        return self.s_ms_per_token * length


@dataclass(frozen=True, slots=True)
class RecomputeCost:
    """Re-prefilling a request: a = 2P / (pi MFU) per token, c = 2 d n / (pi MFU) per token^2."""

    a_ms_per_token: Fraction
    c_ms_per_token_sq: Fraction

    @classmethod
    def of(cls, model: StepModel, rates: Rates) -> RecomputeCost:
        return cls(
            a_ms_per_token=model.flops_per_token * _MS / rates.flops_per_s,
            c_ms_per_token_sq=model.attention_flops_per_pair / 2 * _MS / rates.flops_per_s,
        )

    def ms(self, length: int) -> Fraction:
        return self.a_ms_per_token * length + self.c_ms_per_token_sq * length * length

    def crossover(self, swap: SwapCost) -> Fraction | None:
        """L* = (s - a) / c: recompute is cheaper below it. None when s <= a (swap is
        cheaper at every length) or c = 0 with s > a (recompute always cheaper: no L*)."""
        gap = swap.s_ms_per_token - self.a_ms_per_token
        if gap <= 0 or self.c_ms_per_token_sq == 0:
            return None
        return gap / self.c_ms_per_token_sq

    def cheaper(self, swap: SwapCost, length: int) -> str:
        """`recompute`, `swap` or `tie` for a victim of `length` tokens."""
        r, s = self.ms(length), swap.ms(length)
        return "recompute" if r < s else "swap" if s < r else "tie"


@dataclass(frozen=True, slots=True)
class PreemptionRow:
    """One length of the recompute-vs-swap table."""

    length: int
    recompute_ms: Fraction
    swap_ms: tuple[Fraction, ...]  # one per swap column
    cheaper: tuple[str, ...]


def preemption_table(
    recompute: RecomputeCost, swaps: Sequence[SwapCost], lengths: Iterable[int]
) -> tuple[PreemptionRow, ...]:
    """The lecture's table: T_recompute(L) and T_swap(L) for each K/V size, per length."""
    rows = []
    for length in lengths:
        _positive("length", length)
        rows.append(
            PreemptionRow(
                length=length,
                recompute_ms=recompute.ms(length),
                swap_ms=tuple(s.ms(length) for s in swaps),
                cheaper=tuple(recompute.cheaper(s, length) for s in swaps),
            )
        )
    return tuple(rows)


# --------------------------------------------------------------------------- CUDA graphs


class BucketKind(StrEnum):
    """How captured batch sizes are spaced."""

    POW2 = "pow2"
    STRIDE = "stride"
    LIST = "list"


@dataclass(frozen=True, slots=True)
class BucketSpec:
    """Captured CUDA-graph batch sizes: powers of two, a stride G, or an explicit list."""

    kind: BucketKind
    stride: int = 0
    sizes: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        if self.kind is BucketKind.POW2:
            return "pow2"
        if self.kind is BucketKind.STRIDE:
            return f"stride:{self.stride}"
        return ",".join(map(str, self.sizes))

    def buckets_for(self, max_batch: int) -> tuple[int, ...]:
        """The buckets a batch of 1..max_batch uses: up to the first that holds max_batch."""
        _positive("max_batch", max_batch)
        if self.kind is BucketKind.POW2:
            out, b = [], 1
            while True:
                out.append(b)
                if b >= max_batch:
                    return tuple(out)
                b *= 2
        if self.kind is BucketKind.STRIDE:
            top = -(-max_batch // self.stride) * self.stride
            return tuple(range(self.stride, top + 1, self.stride))
        if self.sizes[-1] < max_batch:
            raise ValueError(
                f"the largest bucket {self.sizes[-1]} cannot hold a batch of {max_batch}"
            )
        holder = next(b for b in self.sizes if b >= max_batch)
        return tuple(b for b in self.sizes if b <= holder)


def parse_buckets(text: str) -> BucketSpec:
    """`pow2`, `stride:G` or a comma-separated list of batch sizes (ValueError otherwise)."""
    raw = text.strip()
    if raw == "pow2":
        return BucketSpec(BucketKind.POW2)
    if raw.startswith("stride:"):
        stride = raw[len("stride:") :]
        if not stride.isdigit() or int(stride) < 1:
            raise ValueError(f"stride:G needs an integer G >= 1, got {text!r}")
        return BucketSpec(BucketKind.STRIDE, stride=int(stride))
    parts = [p.strip() for p in raw.split(",")]
    if not parts or not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise ValueError(
            f"buckets are pow2, stride:G or a list of batch sizes >= 1 (1,2,4,8), got {text!r}"
        )
    sizes = tuple(int(p) for p in parts)
    if list(sizes) != sorted(set(sizes)):
        raise ValueError(f"list the buckets once each, in increasing order: {text!r}")
    return BucketSpec(BucketKind.LIST, sizes=sizes)


@dataclass(frozen=True, slots=True)
class GraphPadding:
    """Padding to captured buckets for a batch B uniform in 1..max_batch."""

    spec: BucketSpec
    max_batch: int
    buckets: tuple[int, ...]
    mean_padding: Fraction  # E[b(B) - B]
    worst_padding: int
    worst_batch: int  # the smallest B that pads worst

    @property
    def graphs(self) -> int:
        return len(self.buckets)


def graph_padding(spec: BucketSpec, max_batch: int) -> GraphPadding:
    """Mean and worst padding over B uniform in 1..max_batch, and the graphs captured."""
    buckets = spec.buckets_for(max_batch)
    total, worst, worst_batch, low = 0, -1, 1, 0
    for b in buckets:
        high = min(b, max_batch)  # batches low+1 .. high pad up to b
        n = high - low
        if n > 0:
            total += n * b - (low + 1 + high) * n // 2
            if b - (low + 1) > worst:
                worst, worst_batch = b - (low + 1), low + 1
        low = high
    return GraphPadding(spec, max_batch, buckets, Fraction(total, max_batch), worst, worst_batch)


def padded_token_ms(model: StepModel, rates: Rates, context: int) -> Fraction:
    """A padded token's cost in the bandwidth-bound regime: Lbar kv / (beta MBU)."""
    _not_negative("context", context)
    return context * model.kv_bytes_per_token * _MS / rates.bytes_per_s


@dataclass(frozen=True, slots=True)
class PaddingWaste:
    """What padding costs per step: E[Delta] * t_tok, and its share of a step."""

    mean_padding: Fraction
    token_ms: Fraction
    step_ms: Fraction | None = None

    @property
    def waste_ms(self) -> Fraction:
        return self.mean_padding * self.token_ms

    @property
    def share_of_step(self) -> Fraction | None:
        return None if not self.step_ms else self.waste_ms / self.step_ms


# --------------------------------------------------------------------------- hybrid pools


@dataclass(frozen=True, slots=True)
class HybridPools:
    """A request's two pools: per-token K/V (grows with L) and a fixed state (does not)."""

    kv_bytes_per_token: Fraction
    state_bytes: Fraction
    context: int
    link_bytes_per_s: Fraction | None = None
    replay_tokens_per_s: Fraction | None = None
    memory_bytes: Fraction | None = None
    state_share: Fraction | None = None  # of memory_bytes given to the state pool

    @property
    def kv_bytes(self) -> Fraction:
        return self.context * self.kv_bytes_per_token

    @property
    def request_bytes(self) -> Fraction:
        return self.kv_bytes + self.state_bytes

    @property
    def swap_state_ms(self) -> Fraction | None:
        """The state out and back over the link: 2 V / beta_link, whatever L is."""
        if self.link_bytes_per_s is None:
            return None
        return 2 * self.state_bytes * _MS / self.link_bytes_per_s

    @property
    def swap_kv_ms(self) -> Fraction | None:
        """The per-token K/V out and back: 2 L kv / beta_link (linear in L)."""
        if self.link_bytes_per_s is None:
            return None
        return 2 * self.kv_bytes * _MS / self.link_bytes_per_s

    @property
    def replay_ms(self) -> Fraction | None:
        """Recompute of a rolling state: replay all L tokens at the prefill rate."""
        if self.replay_tokens_per_s is None:
            return None
        return self.context * _MS / self.replay_tokens_per_s

    @property
    def ceilings(self) -> dict[str, int]:
        """Requests of `context` tokens the memory budget holds at once: `unified` when one
        pool holds state and K/V alike; with a state share, `state_pool` (its share over the
        state per request) and `kv_pool` (the rest over the K/V per request)."""
        if self.memory_bytes is None:
            return {}
        if self.state_share is None:
            return {"unified": math.floor(self.memory_bytes / self.request_bytes)}
        out: dict[str, int] = {}
        if self.state_bytes:
            out["state_pool"] = math.floor(self.memory_bytes * self.state_share / self.state_bytes)
        if self.kv_bytes:
            out["kv_pool"] = math.floor(self.memory_bytes * (1 - self.state_share) / self.kv_bytes)
        return out

    @property
    def binding_pool(self) -> str | None:
        """Which pool caps concurrency (`state_pool` or `kv_pool`), when both are split."""
        c = self.ceilings
        if "state_pool" in c and "kv_pool" in c:
            return "state_pool" if c["state_pool"] <= c["kv_pool"] else "kv_pool"
        if len(c) == 1 and "unified" not in c:
            return next(iter(c))
        return None


def hybrid_pools(
    kv_bytes_per_token: Fraction,
    state_bytes: Fraction,
    context: int,
    *,
    link_bytes_per_s: Fraction | None = None,
    replay_tokens_per_s: Fraction | None = None,
    memory_bytes: Fraction | None = None,
    state_share: Fraction | None = None,
) -> HybridPools:
    """The hybrid model's pools for one request of `context` tokens (checked arguments)."""
    _not_negative("kv_bytes_per_token", kv_bytes_per_token)
    _not_negative("state_bytes", state_bytes)
    _not_negative("context", context)
    for name, value in (
        ("link_bytes_per_s", link_bytes_per_s),
        ("replay_tokens_per_s", replay_tokens_per_s),
        ("memory_bytes", memory_bytes),
    ):
        if value is not None:
            _positive(name, value)
    if state_share is not None:
        if not 0 < state_share < 1:
            raise ValueError(f"state_share is a fraction in (0, 1), got {state_share}")
        if memory_bytes is None:
            raise ValueError("a state share needs a memory budget")
    if memory_bytes is not None and state_bytes + context * kv_bytes_per_token == 0:
        raise ValueError("a request that holds no bytes has no concurrency ceiling")
    return HybridPools(
        kv_bytes_per_token=Fraction(kv_bytes_per_token),
        state_bytes=Fraction(state_bytes),
        context=context,
        link_bytes_per_s=link_bytes_per_s,
        replay_tokens_per_s=replay_tokens_per_s,
        memory_bytes=memory_bytes,
        state_share=state_share,
    )


# --------------------------------------------------------------------------- static batching


def batch_efficiency(batch: int) -> float:
    """eta(B) ~ 1 / (ln B + gamma): static batching's useful share for geometric lengths."""
    _positive("batch", batch)
    return 1 / (math.log(batch) + EULER_GAMMA)


def geometric_batch_efficiency(batch: int, stop_probability: float) -> float:
    """eta(B) = mu / E[max of B geometric lengths], exactly (to float precision).

    E[M_B] = sum over k >= 0 of P(M_B > k) = sum of 1 - (1 - q^k)^B, q = 1 - p; the lecture's
    1 / (ln B + gamma) is its extreme-value approximation for small p.
    """
    _positive("batch", batch)
    if not 0 < stop_probability <= 1:
        raise ValueError(f"the stop probability is in (0, 1], got {stop_probability}")
    q = 1 - stop_probability
    expected, k = 1.0, 1  # P(M_B > 0) = 1
    while q**k > 0:
        term = -math.expm1(batch * math.log1p(-(q**k)))  # 1 - (1 - q^k)^B, without cancelling
        expected += term
        k += 1
        if term < 1e-17 * expected:
            break
    return (1 / stop_probability) / expected


def continuous_batching_gain(
    model: StepModel, *, batch: int, context: int, efficiency: float
) -> float:
    """Decode throughput at B over throughput at eta B (both bandwidth-bound, lecture 1's
    intensity I ~ 2P B / (2P + B Lbar kv)): (W + eta B Lbar kv) / (eta (W + B Lbar kv))."""
    _positive("batch", batch)
    if not 0 < efficiency <= 1:
        raise ValueError(f"the efficiency is in (0, 1], got {efficiency}")
    w = float(model.weight_bytes)
    kv = float(batch * context * model.kv_bytes_per_token)
    return (w + efficiency * kv) / (efficiency * (w + kv))


# --------------------------------------------------------------------------- printed figures


def printed_unit(printed: str) -> Fraction:
    """One unit of the last digit a figure is printed with: `145` -> 1, `5.1` -> 1/10,
    `0.20` -> 1/100, `1,203` -> 1."""
    text = printed.replace(",", "").strip()
    Fraction(text)  # a ValueError for anything that is not a plain decimal
    if "e" in text.lower():
        raise ValueError(f"write the figure as printed, without an exponent: {printed!r}")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return Fraction(1, 10**decimals)


def agrees_with_printed(value: Fraction | float, printed: str, *, units: int = 1) -> bool:
    """|value - printed| <= units x one unit of the printed figure's last digit.

    `units=1` accepts a figure that was rounded (half a unit) or truncated (under one unit)
    from `value`: the lecture prints 145 ms for 145.502 ms.
    """
    target = Fraction(printed.replace(",", "").strip())
    return abs(Fraction(value) - target) <= units * printed_unit(printed)
