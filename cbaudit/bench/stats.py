"""Robust statistics of step-time samples (pure Python, seeded).

The median is the primary figure; spread is IQR and MAD (scaled to a normal sigma by
1.4826); the 95% interval of the median comes from a seeded bootstrap. Outliers above
`median + 3 * 1.4826 * MAD` are counted but kept: inter-token tails are the point.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from typing import Any

MAD_SIGMA = 1.4826
NOISY_IQR_FRACTION = 0.05
DRIFT_FRACTION = 0.03
BOOTSTRAP_RESAMPLES = 400


def quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted data (numpy's default rule)."""
    if not sorted_xs:
        raise ValueError("quantile of no data")
    pos = (len(sorted_xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    frac = pos - lo
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * frac


def mad(xs: Sequence[float]) -> float:
    """Median absolute deviation from the median (unscaled)."""
    med = statistics.median(xs)
    return statistics.median([abs(x - med) for x in xs])


def bootstrap_median_ci(
    xs: Sequence[float], rng: random.Random, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the median."""
    if len(xs) == 1:
        return (xs[0], xs[0])
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(resamples))
    return (quantile(meds, 0.025), quantile(meds, 0.975))


def summarize(samples_ms: Sequence[float], rng: random.Random) -> dict[str, Any]:
    """The stats block of one point (schema `bench-results#/$defs/stats`)."""
    if not samples_ms:
        raise ValueError("no samples")
    xs = sorted(float(x) for x in samples_ms)
    med = statistics.median(xs)
    mean = statistics.fmean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    m = mad(xs)
    p25, p75 = quantile(xs, 0.25), quantile(xs, 0.75)
    cut = med + 3 * MAD_SIGMA * m
    lo, hi = bootstrap_median_ci(xs, rng)
    return {
        "n": len(xs),
        "median_ms": med,
        "mean_ms": mean,
        "min_ms": xs[0],
        "max_ms": xs[-1],
        "p10_ms": quantile(xs, 0.10),
        "p25_ms": p25,
        "p75_ms": p75,
        "p90_ms": quantile(xs, 0.90),
        "iqr_ms": p75 - p25,
        "mad_ms": m,
        "cv": sd / mean if mean > 0 else 0.0,
        "ci95_ms": [lo, hi],
        "outliers": sum(1 for x in xs if m > 0 and x > cut),
    }


def is_noisy(stats: dict[str, Any], limit: float = NOISY_IQR_FRACTION) -> bool:
    """IQR above `limit` of the median."""
    med = float(stats["median_ms"])
    return med > 0 and float(stats["iqr_ms"]) / med > limit


def drift(medians: Sequence[float]) -> float | None:
    """Spread of repeated sentinel medians relative to the smallest: (max - min) / min."""
    if len(medians) < 2 or min(medians) <= 0:
        return None
    return (max(medians) - min(medians)) / min(medians)


def cv(xs: Sequence[float]) -> float | None:
    """Coefficient of variation (sample stdev / mean); None for fewer than two values."""
    if len(xs) < 2:
        return None
    mean = statistics.fmean(xs)
    return statistics.stdev(xs) / mean if mean > 0 else None


def sample_count(estimate_ms: float, target_ms: float, lo: int, hi: int) -> int:
    """`clamp(target / estimate, lo, hi)` samples."""
    if estimate_ms <= 0:
        return hi
    return max(lo, min(hi, math.ceil(target_ms / estimate_ms)))
