"""Builders for result-record files used by the compare tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BASE_COORDS: dict[str, Any] = {
    "model": "toy-model",
    "hardware_parallelism": "1x test device",
    "workload": "fixed grid",
    "baseline": "none",
    "metric": {
        "name": "step_time",
        "unit": "ms",
        "denominator": "per step",
        "percentile": "median",
    },
    "slo": "none",
    "load": "one step per sample",
    "evidence_class": "synthetic",
}


def record(rid: str, points: dict[str, list[float]], **coords: Any) -> dict[str, Any]:
    """One record: the base coordinates with overrides, and samples per point."""
    merged = {**BASE_COORDS, **coords}
    return {
        "id": rid,
        "coordinates": merged,
        "points": [
            {"point": k, "value": v[0]} if len(v) == 1 else {"point": k, "samples": v}
            for k, v in points.items()
        ],
    }


def write(path: Path, *records: dict[str, Any]) -> Path:
    """A result-records file holding `records`."""
    doc = {"kind": "cbaudit.result-records", "schema_version": 1, "records": list(records)}
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return path


def spread(center: float, n: int = 12, step: float = 0.001) -> list[float]:
    """n distinct values around `center`."""
    return [round(center + (i - n / 2) * step, 6) for i in range(n)]
