"""pyperf JSON result files (`python -m pyperf ... -o FILE.json`) as one sample set per file.

pyperf's file format carries its version (`"version": "1.0"`, the format pyperf 1.x and 2.x
write; the loader branches on it and refuses others): top-level `metadata` common to every
benchmark, and `benchmarks`, each with its own `metadata` (at least `name` when the file holds
a suite) and `runs`. A run has `metadata`, optional `warmups` (`[loops, value]` pairs, never
compared) and `values` (one value per loop, already divided by the loop count; a calibration
run has none). Metadata is inherited: run over benchmark over file.

Points are the benchmarks (by name), samples every run's values. Coordinates: the machine
pyperf recorded (`cpu_model_name`, `cpu_count`) is `hardware_parallelism`, the unit (`unit`:
second by default, byte, integer) is the metric's unit, the evidence class is `measured_cpu`;
two files from different machines are refused. The Python that ran (`python_version`,
`python_implementation`) is what pyperf comparisons are usually about, so it is not a
coordinate. Compressed `.json.gz` files are not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.io.loader import Document
from cbaudit.model import EvidenceClass
from cbaudit.model.findings import pointer_join
from cbaudit.results.coordinates import flatten
from cbaudit.results.peers.fields import fail, field, numbers
from cbaudit.results.sample_model import Point, SampleSet

NAME = "pyperf"
FMT = "pyperf file"
SUPPORTED_VERSIONS = ("1.0",)
#: pyperf's unit -> (metric-registry name, unit as cbaudit writes it).
UNITS = {"second": ("benchmark_time", "s"), "byte": ("benchmark_memory", "bytes")}


def detect(data: Any) -> bool:
    """A `version` plus `benchmarks` whose entries all have `runs`."""
    if not isinstance(data, Mapping) or "version" not in data:
        return False
    benchmarks = data.get("benchmarks")
    return (
        isinstance(benchmarks, list)
        and bool(benchmarks)
        and all(isinstance(b, Mapping) and "runs" in b for b in benchmarks)
    )


def _meta(node: Any) -> dict[str, Any]:
    meta = node.get("metadata") if isinstance(node, Mapping) else None
    return dict(meta) if isinstance(meta, Mapping) else {}


def build(doc: Document) -> list[SampleSet]:
    data = doc.data
    version = data.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise fail(
            doc,
            "COMPARE.PEER.VERSION",
            f"{FMT}: format version {version!r} is not one cbaudit reads"
            f" ({', '.join(SUPPORTED_VERSIONS)})",
            "/version",
        )
    common = _meta(data)
    points: dict[str, Point] = {}
    units: set[str] = set()
    machine: set[str | None] = set()
    for i, bench in enumerate(field(doc, data, "benchmarks", "", FMT)):
        ptr = pointer_join("/benchmarks", i)
        meta = {**common, **_meta(bench)}
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: benchmark without a name", ptr)
        if name in points:
            raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: benchmark {name!r} twice", ptr)
        runs = field(doc, bench, "runs", ptr, FMT)
        if not isinstance(runs, list):
            raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: `runs` must be a list", ptr)
        values: list[float] = []
        for j, run in enumerate(runs):
            rptr = pointer_join(ptr, "runs", j)
            if not isinstance(run, Mapping):
                raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: a run must be an object", rptr)
            if "values" in run:
                values.extend(numbers(doc, run["values"], pointer_join(rptr, "values"), FMT))
        if not values:
            raise fail(doc, "COMPARE.PEER.EMPTY", f"{FMT}: {name!r} has no values", ptr)
        unit = str(meta.get("unit", "second"))
        units.add(unit)
        metric, shown = UNITS.get(unit, (f"pyperf_{unit}", unit))
        points[name] = Point(name, metric, shown, tuple(values))
        cpu, count = meta.get("cpu_model_name"), meta.get("cpu_count")
        machine.add(f"{cpu} x {count} CPUs" if cpu and count else None)
    hardware = next(iter(machine)) if len(machine) == 1 else None
    unit_text = next(iter(units)) if len(units) == 1 else "mixed"
    declared = {
        "model": "none (pyperf benchmark)",
        "hardware_parallelism": hardware,
        "workload": "pyperf benchmarks, one point per name",
        "baseline": "none",
        "metric": {
            "name": "pyperf value",
            "unit": unit_text,
            "denominator": "per loop",
            "percentile": "distribution of values",
        },
        "slo": "none",
        "load": "none (microbenchmark)",
        "evidence_class": EvidenceClass.MEASURED_CPU.value,
    }
    return [
        SampleSet(
            label=doc.path,
            file=doc.path,
            pointer="",
            adapter=NAME,
            coordinates=flatten(declared),
            evidence_class=EvidenceClass.MEASURED_CPU,
            points=points,
            extra={
                "id": common.get("name") or doc.path,
                "pointers": {"hardware_parallelism": "/metadata/cpu_model_name"},
                "python": common.get("python_version"),
            },
        )
    ]
