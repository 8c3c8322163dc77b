"""The comparison coordinate set and the comparability rule (article 0x0E, F66-F67).

Two results may be ranked only when every coordinate of the declared set is equal:
`Comparable(a, b) = AND over c in C of c(a) = c(b)`. A coordinate that a source does not report
is never equal to anything, not even to another unreported coordinate: unknown is not a match.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The declared comparison set C, in report order. `metric` is split into the four parts the
# article names (metric, unit, denominator, percentile) so each difference is shown on its own.
COMPARISON_SET: tuple[str, ...] = (
    "model",
    "hardware_parallelism",
    "workload",
    "baseline",
    "metric.name",
    "metric.unit",
    "metric.denominator",
    "metric.percentile",
    "slo",
    "load",
    "evidence_class",
)

# The groups a registry declares as its comparison set (the article's eight).
COMPARISON_GROUPS: tuple[str, ...] = (
    "model",
    "hardware_parallelism",
    "workload",
    "baseline",
    "metric",
    "slo",
    "load",
    "evidence_class",
)

UNREPORTED = "unreported"

# Manifest fields that must match before two measured files are compared (unless allowed).
MANIFEST_FIELDS: tuple[str, ...] = (
    "gpu",
    "dtype",
    "torch",
    "cuda",
    "geometry",
    "backend",
    "graph_mode",
)


@dataclass(frozen=True, slots=True)
class CoordinateDiff:
    """One coordinate on which two results differ (or that one of them does not report)."""

    coordinate: str
    a: str | None
    b: str | None
    unreported: bool  # at least one side does not report it

    def to_dict(self) -> dict[str, Any]:
        return {
            "coordinate": self.coordinate,
            "a": self.a,
            "b": self.b,
            "unreported": self.unreported,
        }


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        stripped = value.strip()
        return stripped or None
    return str(value)


def flatten(coords: Mapping[str, Any]) -> dict[str, str | None]:
    """Coordinates as declared (with a nested `metric` mapping) -> the flat comparison set."""
    metric = coords.get("metric")
    if not isinstance(metric, Mapping):
        metric = {"name": metric} if metric is not None else {}
    out: dict[str, str | None] = {}
    for key in COMPARISON_SET:
        if key.startswith("metric."):
            out[key] = _text(metric.get(key.split(".", 1)[1]))
        else:
            out[key] = _text(coords.get(key))
    return out


def is_unreported(value: str | None) -> bool:
    return value is None or value.lower() == UNREPORTED


def differences(
    a: Mapping[str, str | None], b: Mapping[str, str | None], keys: tuple[str, ...] = COMPARISON_SET
) -> list[CoordinateDiff]:
    """Every coordinate of `keys` that keeps a and b from being comparable, in order."""
    out: list[CoordinateDiff] = []
    for key in keys:
        va, vb = a.get(key), b.get(key)
        unrep = is_unreported(va) or is_unreported(vb)
        if unrep or va != vb:
            out.append(CoordinateDiff(key, va, vb, unrep))
    return out


def comparison_keys(a: Mapping[str, str | None], b: Mapping[str, str | None]) -> tuple[str, ...]:
    """The declared set C, then every extra coordinate either side reports (sorted).

    Extra coordinates come from inputs that define themselves by more than C (a replay's
    policy, budgets and cost model): one side reporting one the other lacks is unreported.
    """
    extra = sorted((set(a) | set(b)) - set(COMPARISON_SET))
    return COMPARISON_SET + tuple(extra)


def comparable(a: Mapping[str, str | None], b: Mapping[str, str | None]) -> bool:
    """The article's rule F67 over the full comparison set (and any extra coordinates)."""
    return not differences(a, b, comparison_keys(a, b))
