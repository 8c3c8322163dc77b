"""Bench results files: their shape, their loader, and the point shape cost models read.

A results file is JSON written by `cbaudit bench run` (format `cbaudit-bench-results`,
`format_version` 1, schema `bench-results`). `load_results(path)` validates it (schema, then
meaning) and returns a frozen `BenchResults`; every problem is a located finding and the
loader raises `InputError` (exit 2) rather than hand back a half-trusted file.

The point shape (`BenchPoint`) is what the replay `table` cost model reads:

* `tokens`: query rows in the step (decode rows plus prefill chunk rows);
* `decode_rows`: requests with one query row (decode work);
* `prefill_tokens`: query rows of the prefill chunk(s);
* `history_tokens`: sum of the decode rows' histories (each decode row's key count minus
  one, i.e. the rows it reads from earlier iterations; `cbaudit.sim.step.StepShape` uses the
  same convention);
* `prefill_history_tokens`: sum of the prefill chunks' starts (committed rows they re-read);
* `median_ms`: the median step time (None unless the point was measured);
* `evidence_class`: `measured_gpu` or `measured_cpu` for a measured point, None otherwise.

Only `usable` points (status `ok`, measured, correctness passed) carry timings. A CPU run's
points are `measured_cpu` and say so; they never feed fits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.bench.spec import parse_spec
from cbaudit.model import EvidenceClass, Finding, InputError, Location
from cbaudit.model.canonical import dumps_canonical
from cbaudit.model.findings import pointer_join

if TYPE_CHECKING:
    from cbaudit.io.loader import Document

RESULTS_FORMAT = "cbaudit-bench-results"
RESULTS_FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)
SCHEMA_NAME = "bench-results"
CPU_LABEL = "not measured on GPU (CPU run: correctness and plumbing only)"


class PointStatus(StrEnum):
    """What happened to one grid point."""

    OK = "ok"  # checked, then timed
    FAILED_CORRECTNESS = "failed_correctness"  # output differs from the float64 reference
    SKIPPED_MEMORY = "skipped_memory"  # would not fit on the device
    SKIPPED_BUDGET = "skipped_budget"  # the run's time budget was spent
    ERROR = "error"  # the backend raised; the reason says what


# The totals a point must agree with its own spec on.
_TOTALS = (
    "requests",
    "tokens",
    "decode_rows",
    "prefill_tokens",
    "history_tokens",
    "prefill_history_tokens",
    "kv_tokens",
    "attention_pairs",
)


# The runner writes results files in the one canonical spelling every report uses.
canonical_json = dumps_canonical


@dataclass(frozen=True, slots=True)
class BenchPoint:
    """One measured (or skipped) step; see the module docstring for the fields."""

    id: str
    spec: str
    kind: str  # decode | prefill | mixed
    role: str  # grid | tile | sentinel | adhoc
    status: PointStatus
    requests: int
    tokens: int
    decode_rows: int
    prefill_tokens: int
    history_tokens: int
    prefill_history_tokens: int
    kv_tokens: int
    attention_pairs: int
    median_ms: float | None
    evidence_class: EvidenceClass | None
    noisy: bool
    backend: str
    graph_mode: str
    pointer: str  # JSON pointer of this point in its file
    stats: Mapping[str, Any]
    roofline: Mapping[str, Any]

    @property
    def usable(self) -> bool:
        """Measured, checked and timed: the only points a cost model may read."""
        return (
            self.status is PointStatus.OK
            and self.median_ms is not None
            and self.evidence_class is not None
        )


@dataclass(frozen=True)
class BenchResults:
    """A validated results file."""

    path: str
    sha256: str
    format_version: int
    evidence_class: EvidenceClass
    measured_on_gpu: bool
    manifest: Mapping[str, Any]
    points: tuple[BenchPoint, ...]
    fits: Mapping[str, Any]
    ceilings: Mapping[str, Any] | None
    sentinel: Mapping[str, Any] | None
    data: Mapping[str, Any]

    def usable_points(self) -> tuple[BenchPoint, ...]:
        """Points with a checked median, in file order."""
        return tuple(p for p in self.points if p.usable)

    def point(self, point_id: str) -> BenchPoint:
        for p in self.points:
            if p.id == point_id:
                return p
        raise KeyError(point_id)

    @property
    def label(self) -> str:
        return str(self.data.get("label", ""))


def _point(raw: Mapping[str, Any], pointer: str) -> BenchPoint:
    ev = raw.get("evidence_class")
    return BenchPoint(
        id=raw["id"],
        spec=raw["spec"],
        kind=raw["kind"],
        role=raw["role"],
        status=PointStatus(raw["status"]),
        requests=raw["requests"],
        tokens=raw["tokens"],
        decode_rows=raw["decode_rows"],
        prefill_tokens=raw["prefill_tokens"],
        history_tokens=raw["history_tokens"],
        prefill_history_tokens=raw["prefill_history_tokens"],
        kv_tokens=raw["kv_tokens"],
        attention_pairs=raw["attention_pairs"],
        median_ms=raw.get("median_ms"),
        evidence_class=EvidenceClass(ev) if ev is not None else None,
        noisy=bool(raw.get("noisy", False)),
        backend=raw["backend"],
        graph_mode=raw["graph_mode"],
        pointer=pointer,
        stats=raw.get("stats") or {},
        roofline=raw.get("roofline") or {},
    )


def meaning_findings(data: Mapping[str, Any], locate: Any) -> list[Finding]:
    """Checks the schema cannot express. `data` must already be schema-valid.

    Codes: `BENCH.RESULTS.DUPLICATE_ID`, `BENCH.RESULTS.SPEC_MISMATCH` (a total disagrees with
    the point's spec), `BENCH.RESULTS.CLASS_UPGRADE` (a GPU label without a CUDA device, or a
    class on an unmeasured point), `BENCH.RESULTS.UNMEASURED_OK` (status ok without a median),
    `BENCH.RESULTS.CPU_FED_FIT` (fits computed from a CPU run).
    """
    out: list[Finding] = []

    def add(code: str, message: str, pointer: str) -> None:
        out.append(Finding(code, message, location=locate(pointer)))

    on_gpu = data["manifest"]["device"]["type"] == "cuda"
    top = data["evidence_class"]
    if (top == EvidenceClass.MEASURED_GPU.value) != on_gpu or data["measured_on_gpu"] != on_gpu:
        add(
            "BENCH.RESULTS.CLASS_UPGRADE",
            f"file says {top!r} / measured_on_gpu={data['measured_on_gpu']} but the manifest"
            f" device is {data['manifest']['device']['type']!r}",
            "/evidence_class",
        )
    seen: set[str] = set()
    for i, raw in enumerate(data["points"]):
        ptr = pointer_join("/points", i)
        if raw["id"] in seen:
            add("BENCH.RESULTS.DUPLICATE_ID", f"point id {raw['id']!r} repeats", ptr + "/id")
        seen.add(raw["id"])
        try:
            spec = parse_spec(raw["spec"])
        except InputError as err:
            f = err.findings[0]
            add(f.code, f.message, ptr + "/spec")
            continue
        for name in _TOTALS:
            if raw[name] != getattr(spec, name):
                add(
                    "BENCH.RESULTS.SPEC_MISMATCH",
                    f"{name}={raw[name]} but spec {raw['spec']!r} gives {getattr(spec, name)}",
                    f"{ptr}/{name}",
                )
        if raw["kind"] != spec.kind:
            add(
                "BENCH.RESULTS.SPEC_MISMATCH",
                f"kind={raw['kind']!r} but spec {raw['spec']!r} is {spec.kind!r}",
                ptr + "/kind",
            )
        ev = raw.get("evidence_class")
        measured = raw["status"] == PointStatus.OK.value
        if measured and raw.get("median_ms") is None:
            add("BENCH.RESULTS.UNMEASURED_OK", "status ok without a median_ms", ptr)
        if ev is not None and (not measured or ev != top):
            add(
                "BENCH.RESULTS.CLASS_UPGRADE",
                f"point with status {raw['status']!r} carries evidence class {ev!r}"
                f" (file class {top!r})",
                ptr + "/evidence_class",
            )
        if measured and ev is None:
            add("BENCH.RESULTS.CLASS_UPGRADE", "measured point without evidence class", ptr)
    if not on_gpu and data["fits"]["status"] == "ok":
        add(
            "BENCH.RESULTS.CPU_FED_FIT",
            "fits were computed from a CPU run; measured_cpu points never feed fits",
            "/fits/status",
        )
    return out


def results_from_document(doc: Document) -> BenchResults:
    """Validate a loaded document and build the record; raise InputError with every finding."""
    from cbaudit.io.schemas import validate

    data = doc.data
    if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
        raise InputError.at(
            "BENCH.RESULTS.FORMAT",
            f"not a bench results file (expected format {RESULTS_FORMAT!r})",
            doc.path,
            pointer="/format",
        )
    version = data.get("format_version")
    if version not in SUPPORTED_VERSIONS:
        raise InputError.at(
            "BENCH.RESULTS.VERSION",
            f"format_version {version!r} is not supported (this cbaudit reads"
            f" {', '.join(map(str, SUPPORTED_VERSIONS))})",
            doc.path,
            pointer="/format_version",
        )
    findings = validate(data, SCHEMA_NAME, file=doc.path, locate=doc.locate)
    if not findings:
        findings = meaning_findings(data, doc.locate)
    if findings:
        raise InputError(findings)
    points = tuple(_point(raw, pointer_join("/points", i)) for i, raw in enumerate(data["points"]))
    return BenchResults(
        path=doc.path,
        sha256=doc.sha256,
        format_version=version,
        evidence_class=EvidenceClass(data["evidence_class"]),
        measured_on_gpu=bool(data["measured_on_gpu"]),
        manifest=data["manifest"],
        points=points,
        fits=data["fits"],
        ceilings=data.get("ceilings"),
        sentinel=data.get("sentinel"),
        data=data,
    )


def load_results(path: str | Path, *, display: str | None = None) -> BenchResults:
    """Load and validate a results file; raise InputError (located findings) if unusable."""
    from cbaudit.io.loader import load_document  # lazily: the runner process needs no YAML

    doc = load_document(path, fmt="json", expect=dict, display=display)
    return results_from_document(doc)


def location_in(path: str) -> Any:
    """A locator for data that has no source text (freshly built results)."""

    def locate(pointer: str) -> Location:
        return Location(file=path, pointer=pointer)

    return locate
