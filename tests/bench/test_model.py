"""The packed torch step against its float64 per-request reference (CPU, tiny geometry)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from cbaudit.bench import model as M  # noqa: E402
from cbaudit.bench.geometry import GEOMETRIES  # noqa: E402
from cbaudit.bench.spec import parse_spec  # noqa: E402

GEO = GEOMETRIES["tiny"]
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def weights() -> tuple[list[Any], list[Any]]:
    w = M.make_weights(GEO, torch.float32, CPU, 0)
    return w, [x.to(torch.float64) for x in w]


def _flex() -> Any:
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention


def _check(spec: str, backend: str, fault: str | None, weights: Any) -> M.Correctness:
    w, w64 = weights
    step = M.build_step(parse_spec(spec), GEO, w, torch.float32, CPU, backend, 3, fault, _flex())
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*flex_attention called without.*")
        out = step()
    return M.check_output(out, M.reference_forward(step, w64), step.pack, 1e-4)


def test_pack_of_article_fixture_shape() -> None:
    """q = [1, 3, 1] packs into offsets [0, 1, 4, 5]; new K/V land after each history."""
    pack = M.build_pack(parse_spec("q1s6_q3s3_q1s3"), CPU)
    assert pack.q_starts == [0, 1, 4, 5] and pack.rows == 5
    assert pack.k_starts == [0, 6, 9, 12]
    assert pack.new_slots.tolist() == [5, 6, 7, 8, 11]
    assert pack.cu_q.tolist() == [0, 1, 4, 5]


@pytest.mark.parametrize("backend", ["sdpa-loop", "flex"])
@pytest.mark.parametrize("spec", ["4q1s64_q16s48", "2q1s8_3q5s20_q7s7", "q48s80"])
def test_packed_step_matches_float64_reference(spec: str, backend: str, weights: Any) -> None:
    """Packed decode rows and chunks over history equal each request run alone (fp32)."""
    c = _check(spec, backend, None, weights)
    assert c.passed and c.code is None
    assert c.rel_rms_err is not None and c.rel_rms_err < 1e-5


@pytest.mark.parametrize("backend", ["sdpa-loop", "flex"])
@pytest.mark.parametrize("fault", ["cross_request", "future_visible", "row_swap"])
def test_broken_packing_fails_with_its_code(fault: str, backend: str, weights: Any) -> None:
    """A neighbour's key, a future key or a lost route each fail BENCH.CORRECTNESS.MISMATCH."""
    c = _check("2q1s8_3q5s20_q7s7", backend, fault, weights)
    assert not c.passed and c.code == "BENCH.CORRECTNESS.MISMATCH"


def test_nonfinite_output_has_its_own_code(weights: Any) -> None:
    """NaN in the packed output is BENCH.CORRECTNESS.NONFINITE, never a pass."""
    w, w64 = weights
    step = M.build_step(parse_spec("2q1s8"), GEO, w, torch.float32, CPU, "sdpa-loop", 0)
    out = step()
    out[0, 0] = float("nan")
    c = M.check_output(out, M.reference_forward(step, w64), step.pack, 1e-4)
    assert c.code == "BENCH.CORRECTNESS.NONFINITE" and c.rel_rms_err is None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("backend", ["varlen", "sdpa-loop"])
def test_cuda_bf16_step_matches_reference(backend: str) -> None:
    """On CUDA in bf16 the packed step is within the bf16 tolerance of the reference."""
    dev = torch.device("cuda")
    geo = GEOMETRIES["8b"].with_layers(1)
    w = M.make_weights(geo, torch.bfloat16, dev, 0)
    step = M.build_step(parse_spec("8q1s2k_q256s1k"), geo, w, torch.bfloat16, dev, backend, 1)
    c = M.check_output(
        step(), M.reference_forward(step, [x.to(torch.float64) for x in w]), step.pack, 3e-2
    )
    assert c.passed, c
    bad = M.build_step(
        parse_spec("8q1s2k_q256s1k"), geo, w, torch.bfloat16, dev, backend, 1, "row_swap"
    )
    c2 = M.check_output(
        bad(), M.reference_forward(bad, [x.to(torch.float64) for x in w]), bad.pack, 3e-2
    )
    assert c2.code == "BENCH.CORRECTNESS.MISMATCH"
