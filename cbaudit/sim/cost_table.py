"""The `table` cost model: step times measured by the benchmark runner, interpolated over a
step's totals (measured_gpu or measured_cpu from the results file; `modeled` once extrapolation
is allowed).

Registered in `cbaudit.sim.cost_models` (which imports this module only when a table model is
asked for: a roofline replay does not load it).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from typing import Any

from cbaudit.io.loader import load_document
from cbaudit.model import EvidenceClass, InputError
from cbaudit.sim.cost_models import CostModelName, OptionSource, _check_keys, _str_option
from cbaudit.sim.profiles import exact
from cbaudit.sim.step import StepShape

# How a step's totals map onto the coordinates a results file may record per point.
TABLE_AXES: dict[str, Callable[[StepShape], int]] = {
    "tokens": lambda s: s.tokens,
    "decode_rows": lambda s: s.decode_rows,
    "prefill_tokens": lambda s: s.prefill_tokens,
    "history_tokens": lambda s: sum(c - 1 for c in s.decode_context_lens),
    "prefill_history_tokens": lambda s: sum(start for start, _ in s.prefill_chunks),
    "kv_tokens": lambda s: sum(s.decode_context_lens) + sum(end for _, end in s.prefill_chunks),
    "attention_pairs": lambda s: s.attention_pairs,
}


class Extrapolate(StrEnum):
    """What the table model does outside the measured range."""

    NONE = "none"
    LINEAR = "linear"


@dataclass(frozen=True, slots=True)
class TableEstimate:
    """One table figure and what it is worth."""

    ms: float
    evidence_class: EvidenceClass
    extrapolated: tuple[str, ...] = ()  # axes outside the measured range


@dataclass(frozen=True)
class TableCostModel:
    """Measured step times, multilinearly interpolated on a full grid over `axes`.

    The grid is the set of measured points (after `where` filters and dropping points whose
    `status` says they were not measured); every combination of axis values must be present,
    and each axis needs at least two values. Outside the grid the model raises
    `COST.TABLE.OUT_OF_RANGE` unless `extrapolate: linear` was declared; then the edge cells
    are extended linearly, the figure is `modeled`, and so is the model's `evidence_class`
    (a replay cannot tell which of its steps fell outside).
    """

    source: str
    axes: tuple[str, ...]
    grid: tuple[tuple[Fraction, ...], ...]  # sorted values per axis
    values: Mapping[tuple[Fraction, ...], Fraction]  # grid corner -> milliseconds
    measured_class: EvidenceClass
    extrapolate: Extrapolate = Extrapolate.NONE
    statistic: str = "median_ms"
    points_used: int = 0
    manifest_summary: Mapping[str, Any] = field(default_factory=dict)

    name = CostModelName.TABLE.value

    @property
    def evidence_class(self) -> EvidenceClass:
        if self.extrapolate is Extrapolate.LINEAR:
            return EvidenceClass.MODELED
        return self.measured_class

    def estimate(self, step: StepShape) -> TableEstimate:
        """The interpolated time of `step`, with its evidence class."""
        if step.is_empty:
            return TableEstimate(0.0, self.measured_class)
        cells: list[tuple[int, Fraction]] = []  # per axis: lower index, weight of upper
        outside: list[str] = []
        for axis, values in zip(self.axes, self.grid, strict=True):
            x = Fraction(TABLE_AXES[axis](step))
            lo_v, hi_v = values[0], values[-1]
            if x < lo_v or x > hi_v:
                if self.extrapolate is Extrapolate.NONE:
                    raise InputError.at(
                        "COST.TABLE.OUT_OF_RANGE",
                        f"{axis}={x} is outside the measured range [{lo_v}, {hi_v}] of"
                        f" {self.source}; declare `extrapolate: linear` to allow a modeled"
                        " figure",
                        self.source,
                        pointer="/points",
                    )
                outside.append(axis)
            i = bisect.bisect_right(values, x) - 1
            i = min(max(i, 0), len(values) - 2)
            t = (x - values[i]) / (values[i + 1] - values[i])
            cells.append((i, t))
        total = Fraction(0)
        for corner in itertools.product((0, 1), repeat=len(cells)):
            weight = Fraction(1)
            key: list[Fraction] = []
            for (i, t), bit, values in zip(cells, corner, self.grid, strict=True):
                weight *= t if bit else 1 - t
                key.append(values[i + bit])
            if weight:
                total += weight * self.values[tuple(key)]
        ms = max(float(total), 0.0)
        cls = EvidenceClass.MODELED if outside else self.measured_class
        return TableEstimate(ms, cls, tuple(outside))

    def step_time_ms(self, step: StepShape) -> float:
        return self.estimate(step).ms

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "evidence_class": self.evidence_class.value,
            "measured_class": self.measured_class.value,
            "source": self.source,
            "axes": list(self.axes),
            "grid": {a: [float(v) for v in vs] for a, vs in zip(self.axes, self.grid, strict=True)},
            "statistic": self.statistic,
            "extrapolate": self.extrapolate.value,
            "points_used": self.points_used,
            "manifest": dict(self.manifest_summary),
        }

    @classmethod
    def from_options(cls, options: Mapping[str, Any], src: OptionSource) -> TableCostModel:
        allowed = ("results", "axes", "extrapolate", "statistic", "where")
        _check_keys(options, allowed, src)
        ref = _str_option(options, "results", src)
        if ref is None:
            raise src.error("COST.MISSING_OPTION", "table needs `results` (a bench results file)")
        path = Path(ref)
        if not path.is_absolute() and src.base_dir is not None:
            path = src.base_dir / path
        axes_raw = options.get("axes", ["tokens"])
        if (
            not isinstance(axes_raw, list)
            or not axes_raw
            or not all(isinstance(a, str) for a in axes_raw)
        ):
            raise src.error("COST.BAD_OPTION", "axes must be a non-empty list of names", "axes")
        for i, axis in enumerate(axes_raw):
            if axis not in TABLE_AXES:
                raise src.error(
                    "COST.TABLE.UNKNOWN_AXIS",
                    f"unknown axis {axis!r} (known: {', '.join(TABLE_AXES)})",
                    "axes",
                    i,
                )
        if len(set(axes_raw)) != len(axes_raw):
            raise src.error("COST.BAD_OPTION", "axes must not repeat", "axes")
        extrap_raw = options.get("extrapolate", "none")
        if extrap_raw not in {e.value for e in Extrapolate}:
            raise src.error(
                "COST.BAD_OPTION",
                f"extrapolate must be none or linear, got {extrap_raw!r}",
                "extrapolate",
            )
        statistic = _str_option(options, "statistic", src) or "median_ms"
        where = options.get("where") or {}
        if not isinstance(where, Mapping):
            raise src.error("COST.BAD_OPTION", "where must be a mapping field -> value", "where")
        return load_table(
            path,
            axes=tuple(axes_raw),
            extrapolate=Extrapolate(extrap_raw),
            statistic=statistic,
            where=where,
        )


BENCH_RESULTS_FORMAT = "cbaudit-bench-results"
_MEASURED = (EvidenceClass.MEASURED_GPU.value, EvidenceClass.MEASURED_CPU.value)


@dataclass(frozen=True, slots=True)
class _Sample:
    pointer: str
    fields: Mapping[str, Any]


def _bench_samples(
    path: Path, statistic: str, where: Mapping[str, Any]
) -> tuple[str, EvidenceClass, list[_Sample], dict[str, Any]]:
    """Usable points of a `cbaudit bench` results file (validated by the bench loader).

    Sentinel repeats are left out unless `where` names a role: they re-measure a grid point.
    """
    from cbaudit.bench.results import load_results  # a results-file reader; no torch

    res = load_results(path)
    samples: list[_Sample] = []
    for p in res.usable_points():
        if "role" not in where and p.role == "sentinel":
            continue
        fields: dict[str, Any] = {
            "kind": p.kind,
            "role": p.role,
            "backend": p.backend,
            "graph_mode": p.graph_mode,
            "spec": p.spec,
            "noisy": p.noisy,
            "median_ms": p.median_ms,
        }
        fields.update({axis: getattr(p, axis) for axis in TABLE_AXES})
        if statistic != "median_ms":
            fields[statistic] = p.stats.get(statistic)
        samples.append(_Sample(p.pointer, fields))
    device = res.manifest.get("device")
    summary: dict[str, Any] = {"format": BENCH_RESULTS_FORMAT, "sha256": res.sha256}
    if isinstance(device, Mapping):
        summary["device"] = {k: device[k] for k in ("type", "name") if k in device}
    return res.path, res.evidence_class, samples, summary


def _plain_samples(path: Path) -> tuple[str, EvidenceClass, list[_Sample], dict[str, Any]]:
    """The minimal table shape: `{evidence_class, manifest: {...}, points: [{...}, ...]}`."""
    doc = load_document(path)
    data = doc.data

    def err(code: str, message: str, pointer: str) -> InputError:
        loc = doc.locate(pointer)
        return InputError.at(code, message, loc.file, pointer=pointer, line=loc.line)

    declared = data.get("evidence_class")
    if declared not in _MEASURED:
        raise err(
            "COST.TABLE.NO_EVIDENCE_CLASS",
            f"a step-time table declares evidence_class {' or '.join(_MEASURED)}",
            "/evidence_class",
        )
    manifest = data.get("manifest")
    if not isinstance(manifest, Mapping):
        raise err("COST.TABLE.NO_MANIFEST", "a step-time table needs a `manifest` mapping", "")
    points = data.get("points")
    if not isinstance(points, list):
        raise err("COST.TABLE.NO_POINTS", "a step-time table needs a `points` list", "")
    samples = []
    for i, point in enumerate(points):
        if not isinstance(point, Mapping):
            raise err("COST.TABLE.BAD_POINT", "a point must be a mapping", f"/points/{i}")
        if str(point.get("status", "ok")) != "ok":
            continue
        samples.append(_Sample(f"/points/{i}", point))
    summary = {"format": "table", "sha256": doc.sha256, "manifest": dict(manifest)}
    return doc.path, EvidenceClass(declared), samples, summary


def load_table(
    path: Path,
    *,
    axes: tuple[str, ...] = ("tokens",),
    extrapolate: Extrapolate = Extrapolate.NONE,
    statistic: str = "median_ms",
    where: Mapping[str, Any] | None = None,
) -> TableCostModel:
    """Read measured step times into a table model.

    Accepts a `cbaudit bench` results file (format `cbaudit-bench-results`, validated by its
    own loader; only usable points) or the minimal documented shape
    `{evidence_class, manifest, points: [{tokens, decode_rows, ..., median_ms, status?}]}`.
    """
    where = dict(where or {})
    if not path.is_file():
        raise InputError.at("COST.TABLE.NOT_FOUND", "no such step-time results file", str(path))
    head = load_document(path)
    if head.data.get("format") == BENCH_RESULTS_FORMAT:
        name, measured, samples, summary = _bench_samples(path, statistic, where)
    else:
        name, measured, samples, summary = _plain_samples(path)

    def err(code: str, message: str, pointer: str) -> InputError:
        return InputError.at(code, message, name, pointer=pointer)

    values: dict[tuple[Fraction, ...], Fraction] = {}
    origin: dict[tuple[Fraction, ...], str] = {}
    for sample in samples:
        point, ptr = sample.fields, sample.pointer
        if any(point.get(k) != v for k, v in where.items()):
            continue
        coords: list[Fraction] = []
        for axis in axes:
            v = point.get(axis)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise err("COST.TABLE.BAD_POINT", f"point has no numeric {axis!r}", f"{ptr}/{axis}")
            coords.append(exact(v))
        ms = point.get(statistic)
        if isinstance(ms, bool) or not isinstance(ms, int | float) or not ms >= 0:
            raise err(
                "COST.TABLE.BAD_POINT",
                f"point has no non-negative {statistic!r}",
                f"{ptr}/{statistic}",
            )
        key = tuple(coords)
        if key in values:
            shared = dict(zip(axes, map(float, key), strict=True))
            raise err(
                "COST.TABLE.DUPLICATE_POINT",
                f"points {origin[key]} and {ptr} share {shared};"
                " add an axis or a `where` filter that tells them apart",
                ptr,
            )
        values[key] = exact(ms)
        origin[key] = ptr
    grid = tuple(tuple(sorted({k[a] for k in values})) for a in range(len(axes)))
    for axis, axis_values in zip(axes, grid, strict=True):
        if len(axis_values) < 2:
            raise err(
                "COST.TABLE.TOO_FEW_POINTS",
                f"axis {axis!r} has {len(axis_values)} usable value(s); interpolation needs 2",
                "/points",
            )
    for corner in itertools.product(*grid):
        if corner not in values:
            missing = dict(zip(axes, map(float, corner), strict=True))
            raise err(
                "COST.TABLE.NOT_A_GRID",
                f"no usable point at {missing}: the points do not form a full grid over"
                f" {', '.join(axes)}",
                "/points",
            )
    if where:
        summary["where"] = dict(where)
    return TableCostModel(
        source=name,
        axes=axes,
        grid=grid,
        values=values,
        measured_class=measured,
        extrapolate=extrapolate,
        statistic=statistic,
        points_used=len(values),
        manifest_summary=summary,
    )
