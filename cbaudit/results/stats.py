"""Distribution-free statistics in the standard library: medians, their CIs, Mann-Whitney U.

Every function is pure and deterministic. Probabilities from exact distributions are computed
with integers and divided once, so the same samples always give the same bits.

* `median_ci`: the confidence interval of a median from order statistics. For sorted
  `x(1) <= ... <= x(n)` the interval `[x(l), x(n-l+1)]` covers the population median with
  probability `1 - 2 P(B <= l-1)`, `B ~ Binomial(n, 1/2)`; `l` is the largest index whose
  miss probability stays within `(1 - confidence) / 2`. Too few samples give no interval.
* `mann_whitney_u`: two-sided test. With no ties and both samples at most
  `EXACT_MAX_N` long it uses the exact null distribution of U (the coefficients of the
  Gaussian binomial); otherwise the normal approximation with the tie-corrected variance and a
  continuity correction of 1/2. The result names the variant it used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

EXACT_MAX_N = 25  # both samples at most this long (and no ties): exact U distribution


class MWUVariant(StrEnum):
    """Which null distribution a Mann-Whitney p value came from."""

    EXACT = "mann-whitney-u exact (no ties)"
    NORMAL = "mann-whitney-u normal approximation (tie-corrected variance, continuity 0.5)"


@dataclass(frozen=True, slots=True)
class MannWhitney:
    """A two-sided Mann-Whitney U test of sample `a` against sample `b`."""

    u_a: float  # U statistic of `a`: pairs (x in a, y in b) with x > y, ties counting 1/2
    u_b: float
    p_value: float
    variant: MWUVariant
    ties: bool


@dataclass(frozen=True, slots=True)
class MedianCI:
    """A sample median with its distribution-free confidence interval (None when n is small)."""

    n: int
    median: float
    low: float | None
    high: float | None
    coverage: float | None  # the interval's exact coverage, >= the requested confidence
    ranks: tuple[int, int] | None  # 1-based order statistics used for low and high


def median(values: Sequence[float]) -> float:
    """The sample median (mean of the two middle values for even n)."""
    if not values:
        raise ValueError("median of an empty sample")
    xs = sorted(values)
    mid = len(xs) // 2
    if len(xs) % 2:
        return float(xs[mid])
    return (xs[mid - 1] + xs[mid]) / 2.0


def quantile_nearest_rank(values: Sequence[float], p: float) -> float:
    """Nearest-rank quantile x(ceil(p n)) (article F39), p in (0, 1]."""
    if not values:
        raise ValueError("quantile of an empty sample")
    if not 0.0 < p <= 1.0:
        raise ValueError("p must be in (0, 1]")
    xs = sorted(values)
    return float(xs[max(1, math.ceil(p * len(xs))) - 1])


def binom_half_cdf_num(n: int, k: int) -> int:
    """Numerator of P(B <= k) for B ~ Binomial(n, 1/2); the denominator is 2**n."""
    if k < 0:
        return 0
    return sum(math.comb(n, i) for i in range(min(k, n) + 1))


#: Up to this many samples the binomial tail is summed in exact integers; beyond it (per-token
#: latencies of a long benchmark run hold thousands) in log space, which agrees to float
#: precision and keeps the cost linear instead of overflowing a float.
EXACT_CI_MAX_N = 1000


def _lower_rank(n: int, tail: float) -> tuple[int, float]:
    """The largest rank r <= n/2 with P(B <= r - 1) <= tail for B ~ Binomial(n, 1/2), and
    that probability; (0, 0.0) when even r = 1 fails."""
    best, below = 0, 0.0
    if n <= EXACT_CI_MAX_N:
        denom = 2**n
        cum = 0
        for lower in range(1, n // 2 + 1):
            cum += math.comb(n, lower - 1)
            if cum / denom <= tail:  # int / int: exact to one rounding, never overflows
                best, below = lower, cum / denom
            else:
                break
        return best, below
    log_half_n = n * math.log(2.0)
    cdf = 0.0
    for lower in range(1, n // 2 + 1):
        k = lower - 1
        cdf += math.exp(
            math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - log_half_n
        )
        if cdf <= tail:
            best, below = lower, cdf
        else:
            break
    return best, below


def median_ci(values: Sequence[float], confidence: float = 0.95) -> MedianCI:
    """Median and its order-statistic confidence interval at `confidence` (or none)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    xs = sorted(float(v) for v in values)
    n = len(xs)
    med = median(xs)
    tail = (1.0 - confidence) / 2.0
    best, below = _lower_rank(n, tail)
    if best == 0:
        return MedianCI(n=n, median=med, low=None, high=None, coverage=None, ranks=None)
    upper = n - best + 1
    coverage = 1.0 - 2.0 * below
    return MedianCI(
        n=n,
        median=med,
        low=xs[best - 1],
        high=xs[upper - 1],
        coverage=coverage,
        ranks=(best, upper),
    )


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Average ranks (1-based) of `values` and the sizes of the tie groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    groups: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j + 2) / 2.0
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        groups.append(j - i + 1)
        i = j + 1
    return ranks, groups


@cache
def u_null_counts(m: int, n: int) -> tuple[int, ...]:
    """Counts of the m+n choose m arrangements by U = 0..m*n (no ties).

    They are the coefficients of the Gaussian binomial [m+n choose m]_q, built as
    prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i) with exact integer polynomial arithmetic.
    """
    poly = [1]
    for i in range(1, m + 1):
        grown = [*poly, *([0] * (n + i))]
        for k in range(len(poly)):
            grown[k + n + i] -= poly[k]
        quotient = [0] * len(grown)
        for k in range(len(grown)):
            quotient[k] = grown[k] + (quotient[k - i] if k >= i else 0)
        poly = quotient[: len(poly) + n]
    return tuple(poly[: m * n + 1])


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U test of `a` against `b` (both non-empty)."""
    m, n = len(a), len(b)
    if m == 0 or n == 0:
        raise ValueError("both samples must be non-empty")
    pooled = [float(x) for x in a] + [float(y) for y in b]
    ranks, groups = _ranks(pooled)
    r_a = sum(ranks[:m])
    u_a = r_a - m * (m + 1) / 2.0
    u_b = m * n - u_a
    ties = any(g > 1 for g in groups)
    if not ties and m <= EXACT_MAX_N and n <= EXACT_MAX_N:
        counts = u_null_counts(m, n)
        total = sum(counts)
        u = round(u_a)
        low = sum(counts[: u + 1])
        high = sum(counts[u:])
        p = min(1.0, 2.0 * min(low, high) / total)
        return MannWhitney(u_a, u_b, p, MWUVariant.EXACT, ties)
    big_n = m + n
    tie_term = sum(g**3 - g for g in groups)
    var = m * n / 12.0 * ((big_n + 1) - tie_term / (big_n * (big_n - 1)))
    if var <= 0.0:  # every value equal: no evidence of a difference
        return MannWhitney(u_a, u_b, 1.0, MWUVariant.NORMAL, ties)
    z = max(0.0, abs(u_a - m * n / 2.0) - 0.5) / math.sqrt(var)
    p = min(1.0, math.erfc(z / math.sqrt(2.0)))
    return MannWhitney(u_a, u_b, p, MWUVariant.NORMAL, ties)


def min_attainable_p(m: int, n: int) -> float:
    """The smallest two-sided p value any U test can give for sizes m and n (no ties)."""
    # Integer true division: exact for any size (2.0 / comb overflows past ~1030 samples).
    return min(1.0, 2 / math.comb(m + n, m))


def geometric_mean(values: Sequence[float]) -> float:
    """Geometric mean of positive values."""
    if not values:
        raise ValueError("geometric mean of nothing")
    if any(v <= 0 for v in values):
        raise ValueError("geometric mean needs positive values")
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def iqr_over_median(values: Sequence[float]) -> float | None:
    """Interquartile range over the median (nearest-rank quartiles); None when undefined."""
    if len(values) < 2:
        return None
    med = median(values)
    if med == 0:
        return None
    q1 = quantile_nearest_rank(values, 0.25)
    q3 = quantile_nearest_rank(values, 0.75)
    return (q3 - q1) / abs(med)
