"""Robust statistics and the fits, on numbers with known answers."""

from __future__ import annotations

import random
from typing import Any

import pytest

from cbaudit.bench.fits import chunk_itl, compute_fits, fit_roofline, mape
from cbaudit.bench.stats import drift, is_noisy, quantile, sample_count, summarize


def test_quantiles_and_mad_on_known_data() -> None:
    """Linear-interpolated quantiles and MAD of 1..9 with one outlier."""
    xs = [1.0, 2, 3, 4, 5, 6, 7, 8, 100]
    assert quantile(sorted(xs), 0.5) == 5
    assert quantile([1.0, 2.0], 0.25) == 1.25
    s = summarize(xs, random.Random(0))
    assert s["median_ms"] == 5 and s["mad_ms"] == 2 and s["p25_ms"] == 3 and s["p75_ms"] == 7
    assert s["outliers"] == 1  # 100 > 5 + 3 * 1.4826 * 2; the sample is kept
    assert s["n"] == 9 and s["max_ms"] == 100


def test_bootstrap_is_seeded() -> None:
    """Same seed, same interval; the interval brackets the median."""
    xs = [float(x) for x in range(1, 40)]
    a = summarize(xs, random.Random(7))["ci95_ms"]
    b = summarize(xs, random.Random(7))["ci95_ms"]
    assert a == b and a[0] <= 20 <= a[1]


def test_noisy_drift_and_sample_count() -> None:
    """IQR over 5% of the median is noisy; drift is (max-min)/min; samples are clamped."""
    assert is_noisy({"median_ms": 1.0, "iqr_ms": 0.06})
    assert not is_noisy({"median_ms": 1.0, "iqr_ms": 0.04})
    assert drift([1.0, 1.02, 1.04]) == pytest.approx(0.04)
    assert drift([1.0]) is None
    assert sample_count(1.0, 100.0, 30, 500) == 100
    assert sample_count(0.01, 100.0, 30, 500) == 500
    assert sample_count(50.0, 100.0, 30, 500) == 30


A, B, T0 = 2.5e-10, 1.0e-12, 0.03  # ms per byte, ms per FLOP, fixed ms


def _point(
    pid: str, spec: str, kind: str, nbytes: float, flops: float, **kw: Any
) -> dict[str, Any]:
    return {
        "id": pid,
        "spec": spec,
        "kind": kind,
        "status": "ok",
        "evidence_class": "measured_gpu",
        "median_ms": max(A * nbytes, B * flops) + T0,
        "roofline": {"bytes": nbytes, "flops": flops},
        "decode_rows": kw.get("decode_rows", 0),
        "history_tokens": 0,
        "prefill_tokens": kw.get("prefill_tokens", 0),
    }


def _synthetic() -> list[dict[str, Any]]:
    pts = [
        _point("d1", "q1s2k", "decode", 2e10, 1e9, decode_rows=1),
        _point("d2", "32q1s2k", "decode", 2.4e10, 3e10, decode_rows=32),
        _point("d3", "128q1s8k", "decode", 6e10, 1.2e11, decode_rows=128),
        _point("p1", "q512s512", "prefill", 2e10, 9e12, prefill_tokens=512),
        _point("p2", "q2ks2k", "prefill", 2.1e10, 3.6e13, prefill_tokens=2048),
        _point("m1", "32q1s2k_q512s512", "mixed", 2.5e10, 9.1e12, decode_rows=32),
        _point("m2", "32q1s2k_q2ks2k", "mixed", 2.6e10, 3.7e13, decode_rows=32),
    ]
    return pts


def test_roofline_fit_recovers_known_coefficients() -> None:
    """Points generated from max(a*bytes, b*FLOPs)+t0 give back a, b and t0."""
    pts = _synthetic()
    fit = fit_roofline(
        [(p["roofline"]["bytes"], p["roofline"]["flops"], p["median_ms"]) for p in pts[:5]]
    )
    assert fit is not None
    assert fit.ms_per_byte == pytest.approx(A, rel=1e-9)
    assert fit.ms_per_flop == pytest.approx(B, rel=1e-9)
    assert fit.t0_ms == pytest.approx(T0, rel=1e-6)


def test_fits_block_on_gpu_points() -> None:
    """Additive synthetic mixed points have zero MAPE; chunk ITL is mixed minus decode."""
    pts = _synthetic()
    fits = compute_fits(pts, on_gpu=True, spec_bandwidth=4.8e12, spec_flops=989e12)
    assert fits["status"] == "ok" and fits["evidence_class"] == "modeled"
    assert fits["mixed"]["points"] == 2
    assert fits["mixed"]["mape"] == pytest.approx(0.0, abs=1e-9)
    assert fits["roofline"]["mbu_of_spec"] == pytest.approx(1e3 / A / 4.8e12)
    itl = {e["id"]: e for e in fits["chunk_itl"]}
    assert itl["m1"]["decode_id"] == "d2"
    assert itl["m1"]["delta_ms"] == pytest.approx(pts[5]["median_ms"] - pts[1]["median_ms"])
    assert itl["m1"]["prefill_alone_ms"] == pytest.approx(pts[3]["median_ms"])


def test_non_additive_mixed_points_show_their_error() -> None:
    """A mixed point 50% slower than the roofline predicts shows up in the MAPE."""
    pts = _synthetic()
    pts[5]["median_ms"] *= 1.5
    fits = compute_fits(pts, on_gpu=True)
    assert fits["mixed"]["max_ape"] == pytest.approx(1 / 3, rel=1e-6)
    assert fits["mixed"]["mape"] == pytest.approx(1 / 6, rel=1e-6)
    assert mape([]) is None


def test_cpu_points_never_feed_fits() -> None:
    """A CPU run gets not_run; measured_cpu points are ignored even on a GPU run."""
    pts = _synthetic()
    assert compute_fits(pts, on_gpu=False)["status"] == "not_run"
    for p in pts:
        p["evidence_class"] = "measured_cpu"
    out = compute_fits(pts, on_gpu=True)
    assert out["status"] == "insufficient" and out["roofline"] is None
    assert chunk_itl(pts) == []
