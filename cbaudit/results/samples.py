"""The sample set: what every comparable input is adapted into, and the adapter registry.

A `SampleSet` is one result: its comparison coordinates, an optional measurement manifest, and
per point the raw samples (one value for a source-reported number). Each input type is one
adapter: a `detect(data)` predicate and a `build(doc)` that returns the file's sample sets.
Adding an input type is adding one entry to `ADAPTERS`.

Adapters shipped here:

* `result-records`: cbaudit result-record files (schema `result-record`).
* `source-reported`: the source-reported result registry (schema `source-reported-results`);
  each entry is a single reported value (n = 1) that is never given a significance claim.
* `bench-results`: `cbaudit bench` results files (`format: cbaudit-bench-results`, schema
  `bench-results`): manifest fields checked, per point the raw `samples_ms` when recorded.
* `replay-report`: a `cbaudit replay --format json` report whose results carry per-request
  samples in `metrics.samples` (a mapping metric -> list of numbers), with its coordinates in
  `summary.coordinates`; the replay's own coordinates under `run` (policy, budgets, cost
  model, horizon, ...) become extra coordinates `run.<name>` that must match as well.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cbaudit.io.loader import Document, load_document
from cbaudit.io.schemas import list_schemas, validate
from cbaudit.model import EvidenceClass, InputError
from cbaudit.model.findings import pointer_join
from cbaudit.results.coordinates import UNREPORTED, flatten
from cbaudit.results.peers import PEER_ADAPTERS
from cbaudit.results.sample_model import (
    Adapter,
    Builder,
    Point,
    SampleSet,
    evidence,
    finite,
)

__all__ = ["ADAPTERS", "Adapter", "Builder", "Point", "SampleSet", "adapt", "register_adapter"]

RESULT_RECORDS_KIND = "cbaudit.result-records"
SOURCE_REPORTED_KIND = "cbaudit.source-reported-results"


_finite = finite
_evidence = evidence


def _schema_or_raise(doc: Document, name: str) -> None:
    findings = validate(doc.data, name, file=doc.path, locate=doc.locate)
    if findings:
        raise InputError(findings)


# --- result records ------------------------------------------------------------------------


def _detect_records(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == RESULT_RECORDS_KIND


def _build_records(doc: Document) -> list[SampleSet]:
    _schema_or_raise(doc, "result-record")
    out: list[SampleSet] = []
    for i, rec in enumerate(doc.data["records"]):
        ptr = pointer_join("/records", i)
        coords = flatten(rec["coordinates"])
        ev = _evidence(rec["coordinates"]["evidence_class"], doc.path, ptr)
        metric = coords["metric.name"] or UNREPORTED
        unit = coords["metric.unit"] or UNREPORTED
        points: dict[str, Point] = {}
        for j, pt in enumerate(rec["points"]):
            pptr = pointer_join(ptr, "points", j)
            key = str(pt["point"])
            if key in points:
                raise InputError.at(
                    "COMPARE.POINT.DUPLICATE",
                    f"point {key!r} appears twice",
                    doc.path,
                    pointer=pptr,
                )
            if "samples" in pt:
                vals = tuple(
                    _finite(v, doc.path, pointer_join(pptr, "samples", k))
                    for k, v in enumerate(pt["samples"])
                )
            else:
                vals = (_finite(pt["value"], doc.path, pointer_join(pptr, "value")),)
            points[key] = Point(key, metric, unit, vals)
        out.append(
            SampleSet(
                label=f"{doc.path}#{rec['id']}",
                file=doc.path,
                pointer=ptr,
                adapter="result-records",
                coordinates=coords,
                evidence_class=ev,
                points=points,
                manifest=_manifest_fields(rec["manifest"]) if "manifest" in rec else None,
                source_reported=ev is EvidenceClass.SOURCE_REPORTED,
                extra={"id": rec["id"]},
            )
        )
    return out


# --- the source-reported registry -----------------------------------------------------------


def _detect_source_reported(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == SOURCE_REPORTED_KIND


def source_reported_set(entry: Mapping[str, Any], file: str, pointer: str) -> SampleSet:
    """One registry entry as a single-value sample set (n = 1, never tested)."""
    coords = flatten(entry.get("coordinates", {}))
    value = entry.get("value", {})
    number = value.get("number") if isinstance(value, Mapping) else None
    samples: tuple[float, ...] = ()
    if isinstance(number, (int, float)) and not isinstance(number, bool):
        samples = (float(number),)
    text = str(value.get("text")) if isinstance(value, Mapping) else str(value)
    point = Point(
        key="reported",
        metric=coords["metric.name"] or UNREPORTED,
        unit=coords["metric.unit"] or UNREPORTED,
        samples=samples,
        reported=text,
    )
    ev_raw = entry.get("coordinates", {}).get("evidence_class", "source_reported")
    return SampleSet(
        label=f"{file}#{entry.get('id')}",
        file=file,
        pointer=pointer,
        adapter="source-reported",
        coordinates=coords,
        evidence_class=_evidence(
            ev_raw, file, pointer_join(pointer, "coordinates", "evidence_class")
        ),
        points={"reported": point},
        source_reported=True,
        extra={"id": entry.get("id"), "method": entry.get("method")},
    )


def _build_source_reported(doc: Document) -> list[SampleSet]:
    _schema_or_raise(doc, "source-reported-results")
    return [
        source_reported_set(entry, doc.path, pointer_join("/results", i))
        for i, entry in enumerate(doc.data["results"])
    ]


# --- bench results files --------------------------------------------------------------------

BENCH_FORMAT = "cbaudit-bench-results"


def _canon(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _dig(data: Mapping[str, Any], *path: str) -> Any:
    node: Any = data
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _field(container: Any, key: str) -> str | None:
    """A manifest value as text: `null` when recorded as null, None when not recorded."""
    if not isinstance(container, Mapping) or key not in container:
        return None
    value = container[key]
    return "null" if value is None else _canon(value)


def _manifest_fields(manifest: Mapping[str, Any]) -> dict[str, str | None]:
    """The checked manifest fields (GPU, dtype, torch, CUDA, geometry, backend, graph mode).

    Reads the `bench-results` layout (`device.type`/`device.name`, `torch.version`,
    `torch.cuda`) and the flat spelling a result record may use (`gpu`, `torch`, `cuda`).
    A field recorded as null (no CUDA on a CPU run) is the text `null`; a field that is not
    recorded at all is None and never matches.
    """
    device = manifest.get("device")
    torch = manifest.get("torch")
    if isinstance(device, Mapping):
        kind, name = _field(device, "type"), _field(device, "name")
        gpu = None if kind is None or name is None else f"{kind}:{name}"
    else:
        gpu = _field(manifest, "gpu")
    nested = isinstance(torch, Mapping)
    return {
        "gpu": gpu,
        "dtype": _field(manifest, "dtype"),
        "torch": _field(torch, "version") if nested else _field(manifest, "torch"),
        "cuda": _field(torch, "cuda") if nested else _field(manifest, "cuda"),
        "geometry": _field(manifest, "geometry"),
        "backend": _field(manifest, "backend"),
        "graph_mode": _field(manifest, "graph_mode"),
    }


def _detect_bench(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == BENCH_FORMAT


def _build_bench(doc: Document) -> list[SampleSet]:
    if "bench-results" in list_schemas():
        _schema_or_raise(doc, "bench-results")
    data = doc.data
    manifest = data["manifest"]
    points: dict[str, Point] = {}
    skipped: list[str] = []
    for i, pt in enumerate(data["points"]):
        ptr = pointer_join("/points", i)
        key = str(pt.get("id") or pt.get("spec"))
        if pt.get("status") != "ok":
            skipped.append(key)
            continue
        if key in points:
            raise InputError.at(
                "COMPARE.POINT.DUPLICATE", f"point {key!r} appears twice", doc.path, pointer=ptr
            )
        raw = pt.get("samples_ms")
        if isinstance(raw, list) and raw:
            vals = tuple(
                _finite(v, doc.path, pointer_join(ptr, "samples_ms", k)) for k, v in enumerate(raw)
            )
            points[key] = Point(key, "step_time", "ms", vals)
        else:
            med = pt.get("median_ms")
            points[key] = Point(
                key, "step_time", "ms", (), reported=f"median {med} ms (raw samples not recorded)"
            )
    fields = _manifest_fields(manifest)
    ev_raw = data["evidence_class"]
    grid = manifest.get("grid") if isinstance(manifest.get("grid"), Mapping) else {}
    coords = {
        # model and device coordinates of a bench file are its manifest, checked field by field
        "model": "see manifest geometry",
        "hardware_parallelism": "see manifest device",
        "workload": f"bench grid {grid.get('name')} sha256:{grid.get('sha256')}",
        "baseline": "none",
        "metric.name": "step_time",
        "metric.unit": "ms",
        "metric.denominator": "per step",
        "metric.percentile": "median of samples",
        "slo": "none",
        "load": "one step per sample",
        "evidence_class": str(ev_raw),
    }
    return [
        SampleSet(
            label=doc.path,
            file=doc.path,
            pointer="",
            adapter="bench-results",
            coordinates=coords,
            evidence_class=_evidence(ev_raw, doc.path, "/evidence_class"),
            points=points,
            manifest=fields,
            extra={"id": data.get("label"), "skipped_points": sorted(skipped)},
        )
    ]


# --- replay reports -------------------------------------------------------------------------


def _detect_replay(data: Any) -> bool:
    return isinstance(data, dict) and data.get("command") == "replay" and "results" in data


def _run_coordinates(run: Any) -> dict[str, str | None]:
    """A replay's own coordinates (`summary.coordinates.run`: policy, budgets, cost model...)
    as extra comparison coordinates `run.<name>`, compared after the declared set."""
    if not isinstance(run, Mapping):
        return {}
    return {f"run.{key}": _canon(value) for key, value in sorted(run.items())}


def _build_replay(doc: Document) -> list[SampleSet]:
    data = doc.data
    raw_summary = data.get("summary")
    summary: Mapping[str, Any] = raw_summary if isinstance(raw_summary, Mapping) else {}
    raw_coords = summary.get("coordinates")
    declared: Mapping[str, Any] = raw_coords if isinstance(raw_coords, Mapping) else {}
    coords = flatten(declared)
    coords["evidence_class"] = coords["evidence_class"] or "synthetic"
    coords.update(_run_coordinates(declared.get("run")))
    points: dict[str, Point] = {}
    results = data.get("results")
    if not isinstance(results, list):
        raise InputError.at(
            "COMPARE.REPLAY.RESULTS", "`results` must be a list", doc.path, pointer="/results"
        )
    # One result with samples (what `cbaudit replay` writes): points are named by metric alone,
    # so the path the workload was given by does not split a comparison; several: subject:metric.
    with_samples = [
        isinstance(r, Mapping)
        and isinstance(r.get("metrics"), Mapping)
        and (isinstance(r["metrics"].get("samples"), Mapping) or "samples_file" in r["metrics"])
        for r in results
    ]
    by_metric = sum(with_samples) == 1
    for i, res in enumerate(results):
        metrics = res.get("metrics") if isinstance(res, Mapping) else None
        if not isinstance(metrics, Mapping):
            continue
        samples = metrics.get("samples")
        raw_units = metrics.get("units")
        units: Mapping[str, Any] = raw_units if isinstance(raw_units, Mapping) else {}
        if "samples_file" in metrics:  # streamed beside the report (replay --samples-out)
            from cbaudit.io.replay_samples import read_samples

            ref_ptr = pointer_join("/results", i, "metrics", "samples_file")
            read, unit_of = read_samples(doc.path, metrics["samples_file"], ref_ptr)
            samples = {**(samples if isinstance(samples, Mapping) else {}), **read}
            units = {**units, **dict.fromkeys(read, unit_of)}
        if not isinstance(samples, Mapping):
            continue
        subject = str(res.get("subject", i))
        for metric, vals in sorted(samples.items()):
            ptr = pointer_join("/results", i, "metrics", "samples", metric)
            if not isinstance(vals, list) or not vals:
                raise InputError.at(
                    "COMPARE.REPLAY.SAMPLES",
                    "samples must be a non-empty list",
                    doc.path,
                    pointer=ptr,
                )
            key = str(metric) if by_metric else f"{subject}:{metric}"
            unit = str(units.get(metric, "unreported"))
            points[key] = Point(
                key,
                str(metric),
                unit,
                tuple(_finite(v, doc.path, pointer_join(ptr, k)) for k, v in enumerate(vals)),
            )
    if not points:
        raise InputError.at(
            "COMPARE.REPLAY.NO_SAMPLES",
            "this replay report carries no per-request samples (metrics.samples or a"
            " samples_file: replay --samples-out)",
            doc.path,
            pointer="/results",
        )
    return [
        SampleSet(
            label=doc.path,
            file=doc.path,
            pointer="",
            adapter="replay-report",
            coordinates=coords,
            evidence_class=_evidence(coords["evidence_class"], doc.path, "/summary/coordinates"),
            points=points,
        )
    ]


ADAPTERS: dict[str, Adapter] = {}


def register_adapter(adapter: Adapter) -> None:
    """Add an adapter; a second adapter with the same name is refused."""
    if adapter.name in ADAPTERS:
        raise ValueError(f"adapter {adapter.name!r} is already registered")
    ADAPTERS[adapter.name] = adapter


for _adapter in (
    Adapter("result-records", _detect_records, _build_records),
    Adapter("source-reported", _detect_source_reported, _build_source_reported),
    Adapter("bench-results", _detect_bench, _build_bench),
    Adapter("replay-report", _detect_replay, _build_replay),
    *PEER_ADAPTERS,
):
    register_adapter(_adapter)


def adapt(doc: Document) -> list[SampleSet]:
    """The sample sets of a loaded document, through the first adapter that claims it."""
    for adapter in ADAPTERS.values():
        if adapter.detect(doc.data):
            return adapter.build(doc)
    raise InputError.at(
        "COMPARE.INPUT.UNKNOWN_TYPE",
        "not a result-record file, source-reported registry, bench results file, replay"
        " report, `vllm bench serve --save-result` JSON, GuideLLM report or pyperf JSON"
        " (set `kind`, or give `manifest`+`points`, or `command: replay`)",
        doc.path,
        pointer="",
    )


def load_sample_sets(path: Path, display: str | None = None) -> list[SampleSet]:
    """Load a file and adapt it."""
    return adapt(load_document(path, display=display))


def select(sets: list[SampleSet], selector: str | None, file: str) -> SampleSet:
    """The one sample set a `FILE#ID` argument names (or the only one in FILE)."""
    if selector is None:
        if len(sets) != 1:
            ids = ", ".join(str(s.extra.get("id")) for s in sets)
            raise InputError.at(
                "COMPARE.INPUT.AMBIGUOUS",
                f"{file} holds {len(sets)} results; name one as FILE#ID (ids: {ids})",
                file,
            )
        return sets[0]
    for item in sets:
        if str(item.extra.get("id")) == selector:
            return item
    raise InputError.at("COMPARE.INPUT.NO_SUCH_ID", f"no result with id {selector!r}", file)


def iter_points(a: SampleSet, b: SampleSet) -> Iterator[tuple[str, Point | None, Point | None]]:
    """Every point key of either side, sorted, with each side's point or None."""
    for key in sorted(set(a.points) | set(b.points)):
        yield key, a.points.get(key), b.points.get(key)
