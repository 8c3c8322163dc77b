"""Percentiles by nearest rank with sample gates."""

from __future__ import annotations

from cbaudit.sim.metrics import INSUFFICIENT, distribution, nearest_rank


def test_nearest_rank() -> None:
    """The q-quantile is the ceil(q * n)-th smallest sample."""
    xs = list(range(1, 101))
    assert nearest_rank(xs, 0.5) == 50
    assert nearest_rank(xs, 0.95) == 95
    assert nearest_rank(xs, 0.99) == 99


def test_sample_gates() -> None:
    """p50 needs 2 samples, p95 20, p99 100; below the gate the value is insufficient_sample."""
    assert distribution([5.0])["p50"] == INSUFFICIENT
    d = distribution([float(i) for i in range(19)])
    assert d["p50"] == 9 and d["p95"] == INSUFFICIENT
    d = distribution([float(i) for i in range(99)])
    assert d["p95"] == 94 and d["p99"] == INSUFFICIENT
    assert distribution([float(i) for i in range(100)])["p99"] == 98
