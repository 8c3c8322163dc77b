"""Median CIs for samples as large as a serving benchmark's per-token latencies."""

from __future__ import annotations

import random

import pytest

from cbaudit.results.stats import EXACT_CI_MAX_N, _lower_rank, median_ci


@pytest.mark.parametrize("n", [1200, 5000, 60_000])
def test_median_ci_works_past_float_range(n: int) -> None:
    """n above ~1,075 used to overflow (2**n as a float); the CI now covers >= 95%."""
    rng = random.Random(n)
    ci = median_ci([rng.random() for _ in range(n)])
    assert ci.coverage is not None and 0.95 <= ci.coverage < 0.96
    assert ci.ranks is not None and ci.ranks[0] + ci.ranks[1] == n + 1


def test_log_space_tail_agrees_with_exact_integers_at_the_switch() -> None:
    """Past the switch-over the log-space sum picks the rank exact integers would."""
    import math

    for n in range(EXACT_CI_MAX_N + 1, EXACT_CI_MAX_N + 21):  # the log-space path
        best, below = _lower_rank(n, 0.025)
        denom = 2**n
        cum = sum(math.comb(n, i) for i in range(best))
        assert cum / denom == pytest.approx(below, rel=1e-12)
        assert sum(math.comb(n, i) for i in range(best + 1)) / denom > 0.025
