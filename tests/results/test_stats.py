"""The statistics against values computed by hand and from textbook tables."""

from __future__ import annotations

import math

import pytest

from cbaudit.results.stats import (
    MWUVariant,
    geometric_mean,
    mann_whitney_u,
    median,
    median_ci,
    min_attainable_p,
    quantile_nearest_rank,
    u_null_counts,
)


def test_exact_u_distribution_n3_n3() -> None:
    """The null counts of U for n1 = n2 = 3 are the 20 arrangements 1,1,2,3,3,3,3,2,1,1."""
    assert u_null_counts(3, 3) == (1, 1, 2, 3, 3, 3, 3, 2, 1, 1)


def test_exact_u_distribution_sums_to_binomial() -> None:
    """For every small size pair the counts sum to C(m+n, m) and are symmetric."""
    for m in range(1, 7):
        for n in range(1, 7):
            counts = u_null_counts(m, n)
            assert sum(counts) == math.comb(m + n, m)
            assert counts == counts[::-1]


@pytest.mark.parametrize(
    ("k", "expected"),
    [(3, 2 / 20), (4, 2 / 70), (5, 2 / 252)],
)
def test_exact_p_complete_separation(k: int, expected: float) -> None:
    """Complete separation of two samples of k gives the table value 2 / C(2k, k)."""
    a = [float(i) for i in range(k)]
    b = [float(i + 100) for i in range(k)]
    res = mann_whitney_u(a, b)
    assert res.variant is MWUVariant.EXACT
    assert res.u_a == 0
    assert res.p_value == pytest.approx(expected, abs=1e-15)
    assert min_attainable_p(k, k) == pytest.approx(expected)


def test_exact_p_interleaved_by_hand() -> None:
    """a = 1,3,5 vs b = 2,4,6: U_a = 3, P(U <= 3) = 7/20, two-sided p = 0.7."""
    res = mann_whitney_u([1, 3, 5], [2, 4, 6])
    assert res.u_a == 3 and res.u_b == 6
    assert res.p_value == pytest.approx(0.7, abs=1e-15)


def test_normal_approximation_with_ties_by_hand() -> None:
    """Ties force the normal variant; the tie-corrected value is computed by hand.

    a = 1,2,2,3; b = 2,3,3,4,5. Average ranks: 1 -> 1, the three 2s -> 3, the three 3s -> 6,
    4 -> 8, 5 -> 9. R_a = 1+3+3+6 = 13, U_a = 13 - 4*5/2 = 3, mean 10, tie sum 24+24 = 48,
    var = 20/12 * (10 - 48/72) = 140/9, z = (7 - 0.5) / sqrt(140/9) = 1.6480, p = 0.0993.
    """
    res = mann_whitney_u([1, 2, 2, 3], [2, 3, 3, 4, 5])
    assert res.variant is MWUVariant.NORMAL
    assert res.ties
    assert res.u_a == 3
    assert res.p_value == pytest.approx(0.0993, abs=5e-4)


def test_all_equal_values_give_p_one() -> None:
    """Two samples of one repeated value carry no evidence of a difference."""
    assert mann_whitney_u([2.0] * 5, [2.0] * 7).p_value == 1.0


def test_exact_and_normal_agree_for_moderate_n() -> None:
    """Without ties at n = 20 each, the normal approximation is close to the exact p."""
    a = [float(i) for i in range(0, 40, 2)]
    b = [float(i) + 5.5 for i in range(0, 40, 2)]
    exact = mann_whitney_u(a, b)
    assert exact.variant is MWUVariant.EXACT
    big_a = a + [1000.0] * 6  # 26 values: past the exact limit, ties only inside big_a
    normal = mann_whitney_u(big_a, b)
    assert normal.variant is MWUVariant.NORMAL
    assert 0.0 < exact.p_value < 1.0 and 0.0 < normal.p_value < 1.0


@pytest.mark.parametrize(
    ("n", "ranks", "coverage"),
    [(6, (1, 6), 1 - 2 / 64), (10, (2, 9), 1 - 22 / 1024), (20, (6, 15), None)],
)
def test_median_ci_order_statistics(n: int, ranks: tuple[int, int], coverage: float | None) -> None:
    """The 95% median CI uses the textbook order statistics (n=6: 1..6, n=10: 2..9, n=20: 6..15)."""
    ci = median_ci([float(i) for i in range(1, n + 1)])
    assert ci.ranks == ranks
    assert ci.low == float(ranks[0]) and ci.high == float(ranks[1])
    assert ci.coverage is not None and ci.coverage >= 0.95
    if coverage is not None:
        assert ci.coverage == pytest.approx(coverage)


def test_median_ci_absent_for_five_samples() -> None:
    """Five samples cannot give a 95% distribution-free interval (1/16 > 0.05)."""
    ci = median_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert ci.low is None and ci.high is None and ci.coverage is None
    assert ci.median == 3.0


def test_median_quantile_and_geomean() -> None:
    """Median, nearest-rank quantile and geometric mean on hand-checked values."""
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert quantile_nearest_rank([5.0, 1.0, 4.0, 2.0, 3.0], 0.5) == 3.0
    assert quantile_nearest_rank([5.0, 1.0, 4.0, 2.0, 3.0], 1.0) == 5.0
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        geometric_mean([1.0, -1.0])
