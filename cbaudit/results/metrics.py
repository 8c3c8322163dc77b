"""The metric registry: each metric's direction (lower or higher is better) and unit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from cbaudit.io.loader import load_document
from cbaudit.results.paths import shipped

METRICS_FILE = "metrics.yaml"


class Direction(StrEnum):
    """Which way a metric improves."""

    LOWER = "lower_is_better"
    HIGHER = "higher_is_better"


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """One registered metric."""

    name: str
    direction: Direction
    unit: str
    description: str


def load_metrics(path: Path | None = None) -> Mapping[str, MetricInfo]:
    """The metric registry (the shipped one unless `path` is given), validated."""
    target = path if path is not None else shipped(METRICS_FILE)
    doc = load_document(target, schema="metrics-registry")
    return {
        name: MetricInfo(name, Direction(spec["direction"]), spec["unit"], spec["description"])
        for name, spec in sorted(doc.data["metrics"].items())
    }
