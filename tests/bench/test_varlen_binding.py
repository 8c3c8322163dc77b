"""The `varlen` backend's call, checked on the CPU with stand-ins for `varlen_attn`.

torch's `varlen_attn` runs only on CUDA, and its keywords changed between releases: 2.10
takes `is_causal`, later releases take `window_size` and `enable_gqa`. The stand-ins below
implement the documented semantics (per-request spans cut by the cumulative offsets,
bottom-right aligned causal masking, grouped K/V heads) with either signature, so the packed
step's offsets, spans and keywords are checked against the float64 reference without a GPU.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from cbaudit.bench import model as M  # noqa: E402
from cbaudit.bench.geometry import GEOMETRIES  # noqa: E402
from cbaudit.bench.spec import parse_spec  # noqa: E402

GEO = GEOMETRIES["tiny"]
CPU = torch.device("cpu")
SEEN: list[dict[str, Any]] = []


def _attend(
    q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any, max_q: int, max_k: int, causal: bool
) -> Any:
    """Reference semantics of varlen attention (what the flash kernel computes)."""
    group = q.shape[1] // k.shape[1]
    outs = []
    cq, ck = cu_q.tolist(), cu_k.tolist()
    for i in range(len(cq) - 1):
        qi = q[cq[i] : cq[i + 1]]
        ki = k[ck[i] : ck[i + 1]].repeat_interleave(group, dim=1)
        vi = v[ck[i] : ck[i + 1]].repeat_interleave(group, dim=1)
        ql, kl = qi.shape[0], ki.shape[0]
        assert ql <= max_q and kl <= max_k, "max_q/max_k must bound every span"
        s = torch.einsum("qhd,khd->hqk", qi, ki) / math.sqrt(q.shape[-1])
        if causal:
            keep = torch.ones(ql, kl, dtype=torch.bool).tril(kl - ql)
            s = s.masked_fill(~keep, float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", s.softmax(-1), vi))
    return torch.cat(outs)


def new_varlen(
    query: Any,
    key: Any,
    value: Any,
    cu_seq_q: Any,
    cu_seq_k: Any,
    max_q: int,
    max_k: int,
    *,
    return_aux: Any = None,
    scale: float | None = None,
    window_size: tuple[int, int] = (-1, -1),
    enable_gqa: bool = False,
) -> Any:
    """The signature of torch releases after 2.10."""
    SEEN.append({"window_size": window_size, "enable_gqa": enable_gqa})
    if query.shape[1] != key.shape[1] and not enable_gqa:
        raise ValueError("GQA needs enable_gqa=True")
    causal = tuple(window_size) == (-1, 0)
    return _attend(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, causal)


def old_varlen(
    query: Any,
    key: Any,
    value: Any,
    cu_seq_q: Any,
    cu_seq_k: Any,
    max_q: int,
    max_k: int,
    is_causal: bool = False,
    return_aux: Any = None,
) -> Any:
    """The signature of torch 2.10 (no window_size, no GQA flag)."""
    SEEN.append({"is_causal": is_causal})
    return _attend(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, is_causal)


def unknown_varlen(query: Any, key: Any, value: Any, cu_q: Any, cu_k: Any, a: int, b: int) -> Any:
    raise AssertionError("never called")


@pytest.fixture(scope="module")
def weights() -> tuple[list[Any], list[Any]]:
    w = M.make_weights(GEO, torch.float32, CPU, 0)
    return w, [x.to(torch.float64) for x in w]


def _run(fn: Any, spec: str, fault: str | None, weights: Any, monkeypatch: Any) -> M.Correctness:
    from torch.nn.attention import varlen as varlen_mod

    monkeypatch.setattr(varlen_mod, "varlen_attn", fn)
    w, w64 = weights
    step = M.build_step(parse_spec(spec), GEO, w, torch.float32, CPU, "varlen", 5, fault)
    return M.check_output(step(), M.reference_forward(step, w64), step.pack, 1e-4)


def test_binding_follows_the_signature() -> None:
    assert M.varlen_binding(new_varlen, causal=True) == {
        "window_size": (-1, 0),
        "enable_gqa": True,
    }
    assert M.varlen_binding(new_varlen, causal=False)["window_size"] == (-1, -1)
    assert M.varlen_binding(old_varlen, causal=True) == {"is_causal": True}
    with pytest.raises(RuntimeError, match="neither window_size nor is_causal"):
        M.varlen_binding(unknown_varlen, causal=True)


def test_installed_torch_has_a_known_spelling() -> None:
    """The torch CI installs exposes varlen_attn with a signature the runner can call."""
    from torch.nn.attention.varlen import varlen_attn

    kw = M.varlen_binding(varlen_attn, causal=True)
    assert kw.get("window_size") == (-1, 0) or kw.get("is_causal") is True


@pytest.mark.parametrize("fn", [new_varlen, old_varlen], ids=["window_size", "is_causal"])
@pytest.mark.parametrize("spec", ["4q1s64_q16s48", "2q1s8_3q5s20_q7s7", "q48s80"])
def test_varlen_step_matches_reference(fn: Any, spec: str, weights: Any, monkeypatch: Any) -> None:
    """Decode rows and chunks over history, packed through varlen, equal each request alone."""
    SEEN.clear()
    c = _run(fn, spec, None, weights, monkeypatch)
    assert c.passed and c.code is None, c
    assert SEEN and all(s.get("window_size", (-1, 0)) == (-1, 0) for s in SEEN)
    assert all(s.get("is_causal", True) for s in SEEN)


@pytest.mark.parametrize("fn", [new_varlen, old_varlen], ids=["window_size", "is_causal"])
@pytest.mark.parametrize("fault", ["cross_request", "future_visible", "row_swap"])
def test_varlen_faults_are_caught(fn: Any, fault: str, weights: Any, monkeypatch: Any) -> None:
    """Each deliberate packing defect through varlen fails BENCH.CORRECTNESS.MISMATCH."""
    c = _run(fn, "2q1s8_3q5s20_q7s7", fault, weights, monkeypatch)
    assert not c.passed and c.code == "BENCH.CORRECTNESS.MISMATCH"


def test_max_k_bounds_the_shifted_spans() -> None:
    """With the cross-request defect the last span grows by one row; max_k must cover it."""
    pack = M.build_pack(parse_spec("2q1s8_q7s7"), CPU, "cross_request")
    spans = [b - a for a, b in zip(pack.cu_k.tolist(), pack.cu_k.tolist()[1:], strict=False)]
    assert pack.max_k == max(spans) == 8 and spans[-1] == 8
