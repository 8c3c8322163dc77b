"""The counts form of the latency figures (TBT): the sample form's numbers, bit for bit."""

from __future__ import annotations

import json
import random
from collections import Counter

from cbaudit.sim import metrics
from cbaudit.sim.metrics import distribution, distribution_counts, scaled_counts


def _samples(rnd: random.Random) -> list[float]:
    n = rnd.choice([0, 1, 2, 19, 20, 21, 99, 100, 101, 1000])
    pool = [rnd.uniform(0.001, 80.0) for _ in range(rnd.randint(1, 40))]
    return [rnd.choice(pool) if rnd.random() < 0.7 else rnd.uniform(0.0, 1e4) for _ in range(n)]


def test_counts_form_equals_sample_form() -> None:
    """Nearest-rank percentiles (one walk for every rank), min, max and the exact mean."""
    rnd = random.Random(11)
    for _ in range(300):
        xs = _samples(rnd)
        got = distribution_counts(Counter(xs))
        want = distribution(xs)
        assert json.dumps(got) == json.dumps(want), xs[:5]


def test_ms_figures_of_a_ms_clock_are_the_clock_figures() -> None:
    """A clock already in ms converts by the identity; its ms figures are the clock figures
    (as converting each value by `* 1.0` and summarizing again gives)."""
    rnd = random.Random(5)
    for _ in range(100):
        counts = Counter(_samples(rnd))
        got = metrics._both_counts(counts, metrics._identity)
        scaled = scaled_counts(counts, lambda v: v * 1.0)
        assert scaled is not None
        assert json.dumps(got["ms"]) == json.dumps(distribution_counts(scaled))
        other = metrics._both_counts(counts, lambda v: v * 2.5)
        scaled2 = scaled_counts(counts, lambda v: v * 2.5)
        assert scaled2 is not None
        assert json.dumps(other["ms"]) == json.dumps(distribution_counts(scaled2))


def test_exact_sum_is_fsum_of_the_multiset() -> None:
    """The correctly rounded sum of value x count, as `math.fsum` of the expanded samples."""
    import math

    from cbaudit.sim.metrics import exact_sum

    rnd = random.Random(3)
    for _ in range(300):
        values = [
            rnd.choice([rnd.uniform(-1e3, 1e3), rnd.uniform(0, 1e-6), 1e300, -0.0, 0.5, 3.0])
            for _ in range(rnd.randint(0, 30))
        ]
        counts = Counter({v: rnd.randint(0, 5) for v in values})
        expanded = [v for v, c in counts.items() for _ in range(c)]
        assert exact_sum(counts) == math.fsum(expanded)
    assert exact_sum({}) == 0.0
    assert exact_sum({1.0: 0}) == 0.0
