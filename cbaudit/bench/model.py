"""The measured step: an N-layer GQA block stack over one packed mixed batch (torch).

Rows of every request are packed along one axis (article 0x04): row-wise work (norms, the
QKV, output and FFN products) runs over all rows at once; attention is request-local. Each
request owns a contiguous region of a per-layer K/V buffer: its history rows, then the slots
its new rows are written into during the step. Attention backends:

* `varlen`: `torch.nn.attention.varlen.varlen_attn` (CUDA, bf16/fp16), cumulative offsets,
  causal bottom-right aligned. Its keywords changed between torch releases (2.10 takes
  `is_causal`; later ones `window_size=(-1, 0)` and `enable_gqa`), so the call is shaped from
  the installed function's signature once, when the step is built (`varlen_binding`);
* `flex`: FlexAttention with the mask "same request and key position <= query position"
  (compiled on CUDA, eager on CPU), block mask built outside the timed region;
* `sdpa-loop`: `scaled_dot_product_attention` per group of requests with equal shapes, an
  explicit lower-right causal mask for chunks (`is_causal` is top-left aligned).

`reference_forward` recomputes every request alone in float64 from the same weights and the
same K/V history: the Loop 4 contract at scale. `fault` injects a deliberate packing defect
(tests prove the check catches it).
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cbaudit.bench.torch_env import require_torch

require_torch()

import torch  # noqa: E402  (imported after require_torch so a missing extra is a clear error)
import torch.nn.functional as F  # noqa: E402

from cbaudit.bench.geometry import Geometry  # noqa: E402
from cbaudit.bench.spec import StepSpec  # noqa: E402

BACKENDS = ("varlen", "flex", "sdpa-loop")
FAULTS = ("cross_request", "future_visible", "row_swap")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# Largest per-request relative RMS error accepted against the float64 reference.
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 3e-2}
EPS = 1e-6


@dataclass
class LayerWeights:
    """Distinct weights of one layer (row-major: activations @ weight)."""

    norm1: torch.Tensor
    w_qkv: torch.Tensor
    w_o: torch.Tensor
    norm2: torch.Tensor
    w_gu: torch.Tensor
    w_down: torch.Tensor

    def to(self, dtype: torch.dtype) -> LayerWeights:
        return LayerWeights(*(t.to(dtype) for t in self.tensors()))

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return (self.norm1, self.w_qkv, self.w_o, self.norm2, self.w_gu, self.w_down)


def make_weights(
    geo: Geometry, dtype: torch.dtype, device: torch.device, seed: int
) -> list[LayerWeights]:
    """Seeded weights scaled by 1/sqrt(fan_in) so activations stay near unit size."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)

    def mat(rows: int, cols: int) -> torch.Tensor:
        w = torch.randn(rows, cols, generator=gen, device=device, dtype=torch.float32)
        return (w / math.sqrt(rows)).to(dtype)

    def norm() -> torch.Tensor:
        w = 1.0 + 0.1 * torch.randn(geo.hidden, generator=gen, device=device)
        return w.to(dtype)

    h = geo.hidden
    return [
        LayerWeights(
            norm1=norm(),
            w_qkv=mat(h, geo.q_dim + 2 * geo.kv_dim),
            w_o=mat(geo.q_dim, h),
            norm2=norm(),
            w_gu=mat(h, 2 * geo.ffn),
            w_down=mat(geo.ffn, h),
        )
        for _ in range(geo.layers)
    ]


@dataclass
class Pack:
    """Where every request's rows and K/V live, plus backend metadata."""

    q_lens: list[int]
    kv_lens: list[int]
    q_starts: list[int]
    k_starts: list[int]
    rows: int
    kv_rows: int
    max_q: int  # longest query span and key span as the offsets below cut them
    max_k: int
    cu_q: torch.Tensor  # int32 [N+1]
    cu_k: torch.Tensor  # int32 [N+1]
    new_slots: torch.Tensor  # int64 [rows]: K/V buffer row of each packed row
    # sdpa-loop: (q_start, k_start, count, q, kv) runs of equal-shape requests
    groups: list[tuple[int, int, int, int, int]]
    masks: dict[tuple[int, int], torch.Tensor | None] = field(default_factory=dict)
    fault: str | None = None
    flex_mask: Any = None
    # varlen: the attention function and the keywords its signature takes (see varlen_binding)
    varlen: tuple[Callable[..., Any], dict[str, Any]] | None = None


def build_pack(spec: StepSpec, device: torch.device, fault: str | None = None) -> Pack:
    """Offsets, slots and masks of `spec`, with an optional deliberate defect."""
    reqs = spec.per_request()
    q_lens = [q for q, _ in reqs]
    kv_lens = [kv for _, kv in reqs]
    q_starts, k_starts = [0], [0]
    for q, kv in reqs:
        q_starts.append(q_starts[-1] + q)
        k_starts.append(k_starts[-1] + kv)
    slots: list[int] = []
    for (q, kv), ks in zip(reqs, k_starts, strict=False):
        slots.extend(range(ks + kv - q, ks + kv))
    rows, kv_rows = q_starts[-1], k_starts[-1]
    view_k = list(k_starts[:-1])
    if fault == "cross_request":
        # Every request after the first reads one row early: its neighbour's last row.
        view_k = [ks - 1 if i > 0 else ks for i, ks in enumerate(view_k)]
    groups: list[tuple[int, int, int, int, int]] = []
    for i, (q, kv) in enumerate(reqs):
        last = groups[-1] if groups else None
        contiguous = (
            last is not None
            and fault is None
            and last[3] == q
            and last[4] == kv
            and view_k[i] == last[1] + last[2] * kv
        )
        if contiguous and last is not None:
            groups[-1] = (last[0], last[1], last[2] + 1, q, kv)
        else:
            groups.append((q_starts[i], view_k[i], 1, q, kv))
    masks: dict[tuple[int, int], torch.Tensor | None] = {}
    for _, _, _, q, kv in groups:
        if q == 1 or fault == "future_visible":
            masks[(q, kv)] = None  # a decode row sees all of its keys
        else:
            masks[(q, kv)] = torch.ones(q, kv, dtype=torch.bool, device=device).tril(kv - q)
    cu_k_list = [*view_k, kv_rows]
    return Pack(
        q_lens=q_lens,
        kv_lens=kv_lens,
        q_starts=q_starts,
        k_starts=k_starts,
        rows=rows,
        kv_rows=kv_rows,
        max_q=max(q_lens),
        max_k=max(b - a for a, b in itertools.pairwise(cu_k_list)),
        cu_q=torch.tensor(q_starts, dtype=torch.int32, device=device),
        cu_k=torch.tensor(cu_k_list, dtype=torch.int32, device=device),
        new_slots=torch.tensor(slots, dtype=torch.int64, device=device),
        groups=groups,
        masks=masks,
        fault=fault,
    )


def build_flex_mask(pack: Pack, device: torch.device) -> Any:
    """FlexAttention block mask: same request and key position <= query position."""
    from torch.nn.attention.flex_attention import create_block_mask

    q_req = torch.repeat_interleave(
        torch.arange(len(pack.q_lens), device=device),
        torch.tensor(pack.q_lens, device=device),
    )
    k_req = torch.repeat_interleave(
        torch.arange(len(pack.kv_lens), device=device),
        torch.tensor(pack.kv_lens, device=device),
    )
    cu_q = pack.cu_q.to(torch.int64)
    cu_k = torch.tensor(pack.k_starts, dtype=torch.int64, device=device)
    hist = torch.tensor(
        [kv - q for q, kv in zip(pack.q_lens, pack.kv_lens, strict=True)], device=device
    )
    q_pos = torch.arange(pack.rows, device=device) - cu_q[q_req] + hist[q_req]
    k_pos = torch.arange(pack.kv_rows, device=device) - cu_k[k_req]
    causal = pack.fault != "future_visible"
    shift = pack.fault == "cross_request"

    def mask_mod(b: Any, h: Any, qi: Any, ki: Any) -> Any:
        kj = (ki + 1).clamp(max=pack.kv_rows - 1) if shift else ki
        same = q_req[qi] == k_req[kj]
        return (same & (k_pos[kj] <= q_pos[qi])) if causal else same

    return create_block_mask(mask_mod, None, None, pack.rows, pack.kv_rows, device=device)


def _split_qkv(qkv: torch.Tensor, geo: Geometry) -> tuple[torch.Tensor, ...]:
    a, b = geo.q_dim, geo.q_dim + geo.kv_dim
    return qkv[:, :a], qkv[:, a:b], qkv[:, b:]


def rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float() if x.dtype != torch.float64 else x
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
    return (y * w.to(y.dtype)).to(x.dtype)


def _attn_sdpa_loop(
    q: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, pack: Pack, geo: Geometry
) -> torch.Tensor:
    outs = []
    for qs, ks, count, ql, kl in pack.groups:
        qv = q[qs : qs + count * ql].view(count, ql, geo.q_heads, geo.head_dim).transpose(1, 2)
        kv = kc[ks : ks + count * kl].view(count, kl, geo.kv_heads, geo.head_dim).transpose(1, 2)
        vv = vc[ks : ks + count * kl].view(count, kl, geo.kv_heads, geo.head_dim).transpose(1, 2)
        o = F.scaled_dot_product_attention(
            qv, kv, vv, attn_mask=pack.masks[(ql, kl)], enable_gqa=True
        )
        outs.append(o.transpose(1, 2).reshape(count * ql, geo.q_heads, geo.head_dim))
    return torch.cat(outs, 0) if len(outs) > 1 else outs[0]


def varlen_binding(fn: Callable[..., Any], causal: bool) -> dict[str, Any]:
    """Keywords that ask `fn` (some torch's `varlen_attn`) for request-local attention.

    torch 2.10 spells causal masking `is_causal=True` and has no GQA flag (its flash kernel
    takes fewer K/V heads as they are); later releases take `window_size=(-1, 0)` for causal,
    bottom-right aligned, and want `enable_gqa=True` when K/V have fewer heads. A signature
    with neither spelling is refused rather than guessed at.
    """
    params = inspect.signature(fn).parameters
    kw: dict[str, Any] = {}
    if "window_size" in params:
        kw["window_size"] = (-1, 0) if causal else (-1, -1)
    elif "is_causal" in params:
        kw["is_causal"] = causal
    else:
        raise RuntimeError(
            "this torch's varlen_attn takes neither window_size nor is_causal; "
            "use --backend flex or sdpa-loop"
        )
    if "enable_gqa" in params:
        kw["enable_gqa"] = True
    return kw


def bind_varlen(pack: Pack) -> None:
    """Resolve `varlen_attn` and its keywords once, outside the timed region."""
    from torch.nn.attention import varlen as varlen_mod

    fn = varlen_mod.varlen_attn
    pack.varlen = (fn, varlen_binding(fn, causal=pack.fault != "future_visible"))


def _attn_varlen(q: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, pack: Pack) -> torch.Tensor:
    assert pack.varlen is not None
    fn, kw = pack.varlen
    out = fn(q, kc, vc, pack.cu_q, pack.cu_k, pack.max_q, pack.max_k, **kw)
    assert isinstance(out, torch.Tensor)
    return out


FlexFn = Callable[..., Any]


def _attn_flex(
    q: torch.Tensor,
    kc: torch.Tensor,
    vc: torch.Tensor,
    pack: Pack,
    flex: FlexFn,
) -> torch.Tensor:
    o = flex(
        q.transpose(0, 1).unsqueeze(0),
        kc.transpose(0, 1).unsqueeze(0),
        vc.transpose(0, 1).unsqueeze(0),
        block_mask=pack.flex_mask,
        enable_gqa=True,
    )
    assert isinstance(o, torch.Tensor)
    return o.squeeze(0).transpose(0, 1)


@dataclass
class Step:
    """Everything one measured step needs, built outside the timed region."""

    geo: Geometry
    weights: list[LayerWeights]
    pack: Pack
    hidden: torch.Tensor  # [rows, hidden]
    k_cache: list[torch.Tensor]  # per layer [kv_rows, kv_heads, head_dim]
    v_cache: list[torch.Tensor]
    backend: str
    flex: FlexFn | None = None

    def __call__(self) -> torch.Tensor:
        return forward(self)


def forward(step: Step) -> torch.Tensor:
    """The packed step: shared row-wise products, request-local attention, packed merge."""
    geo, pack = step.geo, step.pack
    x = step.hidden
    rows = pack.rows
    for w, kc, vc in zip(step.weights, step.k_cache, step.v_cache, strict=True):
        qkv = rms_norm(x, w.norm1) @ w.w_qkv
        q, k, v = _split_qkv(qkv, geo)
        q = q.reshape(rows, geo.q_heads, geo.head_dim)
        kc.index_copy_(0, pack.new_slots, k.reshape(rows, geo.kv_heads, geo.head_dim))
        vc.index_copy_(0, pack.new_slots, v.reshape(rows, geo.kv_heads, geo.head_dim))
        if step.backend == "varlen":
            a = _attn_varlen(q, kc, vc, pack)
        elif step.backend == "flex":
            assert step.flex is not None
            a = _attn_flex(q, kc, vc, pack, step.flex)
        else:
            a = _attn_sdpa_loop(q, kc, vc, pack, geo)
        if pack.fault == "row_swap" and rows > 1:
            a = torch.cat([a[-1:], a[1:-1], a[:1]], 0)  # the merge forgets its routes
        x = x + a.reshape(rows, geo.q_dim) @ w.w_o
        g, u = (rms_norm(x, w.norm2) @ w.w_gu).chunk(2, dim=-1)
        x = x + (F.silu(g) * u) @ w.w_down
    return x


def build_step(
    spec: StepSpec,
    geo: Geometry,
    weights: list[LayerWeights],
    dtype: torch.dtype,
    device: torch.device,
    backend: str,
    seed: int,
    fault: str | None = None,
    flex: FlexFn | None = None,
) -> Step:
    """Seeded inputs and K/V history (distinct per layer) for one step."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    pack = build_pack(spec, device, fault)
    hidden = torch.randn(pack.rows, geo.hidden, generator=gen, device=device).to(dtype)
    shape = (pack.kv_rows, geo.kv_heads, geo.head_dim)
    k_cache = [torch.randn(shape, generator=gen, device=device).to(dtype) for _ in weights]
    v_cache = [torch.randn(shape, generator=gen, device=device).to(dtype) for _ in weights]
    if backend == "flex":
        pack.flex_mask = build_flex_mask(pack, device)
    elif backend == "varlen":
        bind_varlen(pack)
    return Step(geo, weights, pack, hidden, k_cache, v_cache, backend, flex)


REF_BLOCK = 256  # query rows per reference attention block (bounds float64 score memory)


def _ref_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, geo: Geometry
) -> torch.Tensor:
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(geo.head_dim)
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.einsum("hqk,khd->qhd", scores.softmax(-1), v)


def reference_forward(step: Step, weights64: list[LayerWeights]) -> list[torch.Tensor]:
    """Each request alone, in float64, over its own history: the per-request reference."""
    geo, pack = step.geo, step.pack
    group = geo.q_heads // geo.kv_heads
    outs = []
    for i, (ql, kl) in enumerate(zip(pack.q_lens, pack.kv_lens, strict=True)):
        hist = kl - ql
        x = step.hidden[pack.q_starts[i] : pack.q_starts[i + 1]].to(torch.float64)
        ks = pack.k_starts[i]
        mask = torch.ones(ql, kl, dtype=torch.bool, device=x.device).tril(hist)
        for w, kc, vc in zip(weights64, step.k_cache, step.v_cache, strict=True):
            qkv = rms_norm(x, w.norm1) @ w.w_qkv
            q, k, v = _split_qkv(qkv, geo)
            q = q.reshape(ql, geo.q_heads, geo.head_dim)
            k_all = torch.cat(
                [kc[ks : ks + hist].to(torch.float64), k.reshape(ql, geo.kv_heads, geo.head_dim)]
            ).repeat_interleave(group, dim=1)
            v_all = torch.cat(
                [vc[ks : ks + hist].to(torch.float64), v.reshape(ql, geo.kv_heads, geo.head_dim)]
            ).repeat_interleave(group, dim=1)
            a = torch.cat(
                [
                    _ref_attention(q[r : r + REF_BLOCK], k_all, v_all, mask[r : r + REF_BLOCK], geo)
                    for r in range(0, ql, REF_BLOCK)
                ]
            )
            x = x + a.reshape(ql, geo.q_dim) @ w.w_o
            g, u = (rms_norm(x, w.norm2) @ w.w_gu).chunk(2, dim=-1)
            x = x + (F.silu(g) * u) @ w.w_down
        outs.append(x)
    return outs


@dataclass(frozen=True)
class Correctness:
    passed: bool
    rel_rms_err: float | None  # None when the output was not finite
    max_abs_err: float | None
    tolerance: float
    code: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "rel_rms_err": self.rel_rms_err,
            "max_abs_err": self.max_abs_err,
            "tolerance": self.tolerance,
            "code": self.code,
        }


def check_output(
    out: torch.Tensor, refs: list[torch.Tensor], pack: Pack, tolerance: float
) -> Correctness:
    """Worst per-request relative RMS error of the packed output against the reference."""
    out64 = out.to(torch.float64)
    worst, max_abs = 0.0, 0.0
    for i, ref in enumerate(refs):
        got = out64[pack.q_starts[i] : pack.q_starts[i + 1]]
        if not bool(torch.isfinite(got).all()):
            return Correctness(False, None, None, tolerance, "BENCH.CORRECTNESS.NONFINITE")
        diff = got - ref
        rel = float(diff.norm() / ref.norm().clamp_min(1e-30))
        worst = max(worst, rel)
        max_abs = max(max_abs, float(diff.abs().max()))
    passed = worst <= tolerance
    return Correctness(
        passed, worst, max_abs, tolerance, None if passed else "BENCH.CORRECTNESS.MISMATCH"
    )
