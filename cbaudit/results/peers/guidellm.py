"""GuideLLM benchmark reports (`benchmarks.json`) as sample sets, one per benchmark.

The layout followed is GuideLLM's `GenerativeBenchmarksReport` as saved by `guidellm benchmark`
(report schema `metadata.version: 1`, GuideLLM 0.4/0.5): `metadata` (`version`,
`guidellm_version`, `python_version`, `platform`), `args` (the run's arguments: `target`,
`model`, `backend`, `profile`, `rate`, `data`, ...) and `benchmarks`, a list of
`type_: generative_benchmark` objects. Each has `config.strategy` (the scheduling strategy:
`type_` synchronous, concurrent (`streams`), throughput (`max_concurrency`), constant or
poisson (`rate`)) and `requests.successful`, a list of `generative_request_stats` with the
computed fields `time_to_first_token_ms`, `inter_token_latency_ms` (mean gap after the first
token), `time_per_output_token_ms` (GuideLLM's: *including* the first token) and
`request_latency` (seconds). Older reports without `metadata` (GuideLLM 0.3, where the
strategy sat under each benchmark's `args`) are read the same way.

Each benchmark of a sweep is its own sample set, `FILE#INDEX` (0-based), because its load
differs: the strategy and its rate are coordinates (`load.strategy`, `load.rate`,
`load.streams`, `load.max_concurrency`), so two benchmarks at different rates are refused.
GuideLLM records neither the server's hardware nor an evidence class: `hardware_parallelism`
is unreported and the class is `source_reported`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.io.loader import Document
from cbaudit.model import EvidenceClass
from cbaudit.model.findings import pointer_join
from cbaudit.results.coordinates import flatten
from cbaudit.results.peers.fields import canon, fail, field, number
from cbaudit.results.sample_model import Point, SampleSet

NAME = "guidellm-report"
FMT = "GuideLLM report"
SUPPORTED_VERSIONS = (1,)
#: Per-request fields (ms unless noted) -> point key; GuideLLM's TPOT includes the first
#: token, so it is named apart from vLLM's.
REQUEST_FIELDS = {
    "time_to_first_token_ms": "ttft",
    "inter_token_latency_ms": "itl_mean_per_request",
    "time_per_output_token_ms": "tpot_incl_first",
}


def detect(data: Any) -> bool:
    """A `benchmarks` list of `generative_benchmark`s, or GuideLLM's report metadata."""
    if not isinstance(data, Mapping):
        return False
    meta = data.get("metadata")
    if isinstance(meta, Mapping) and "guidellm_version" in meta:
        return True
    benchmarks = data.get("benchmarks")
    return isinstance(benchmarks, list) and any(
        isinstance(b, Mapping) and b.get("type_") == "generative_benchmark" for b in benchmarks
    )


def _strategy(doc: Document, bench: Mapping[str, Any], ptr: str) -> tuple[dict[str, Any], str]:
    config = bench.get("config")
    if isinstance(config, Mapping) and isinstance(config.get("strategy"), Mapping):
        return dict(config["strategy"]), pointer_join(ptr, "config", "strategy")
    args = bench.get("args")  # GuideLLM 0.3
    if isinstance(args, Mapping) and isinstance(args.get("strategy"), Mapping):
        return dict(args["strategy"]), pointer_join(ptr, "args", "strategy")
    raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: benchmark has no config.strategy", ptr)


def _load(
    doc: Document, strategy: Mapping[str, Any], ptr: str
) -> tuple[dict[str, str | None], dict[str, str]]:
    kind = strategy.get("type_")
    if not isinstance(kind, str):
        raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: strategy has no type_", ptr)
    load: dict[str, str | None] = {"load.strategy": kind}
    pointers = {"load.strategy": pointer_join(ptr, "type_")}
    for key in ("rate", "streams", "max_concurrency"):
        if key in strategy and strategy[key] is not None:
            number(doc, strategy[key], pointer_join(ptr, key), FMT)
            load[f"load.{key}"] = canon(strategy[key])
            pointers[f"load.{key}"] = pointer_join(ptr, key)
        elif kind in ("constant", "poisson") and key == "rate":
            raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: a {kind} strategy needs a rate", ptr)
        else:
            load[f"load.{key}"] = "none"
    return load, pointers


def _requests(doc: Document, bench: Mapping[str, Any], ptr: str) -> dict[str, list[float]]:
    reqs = field(doc, bench, "requests", ptr, FMT)
    rptr = pointer_join(ptr, "requests")
    ok = field(doc, reqs, "successful", rptr, FMT)
    sptr = pointer_join(rptr, "successful")
    if not isinstance(ok, list):
        raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: requests.successful must be a list", sptr)
    out: dict[str, list[float]] = {k: [] for k in (*REQUEST_FIELDS.values(), "e2e_latency")}
    for i, req in enumerate(ok):
        qptr = pointer_join(sptr, i)
        if not isinstance(req, Mapping):
            raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: a request must be an object", qptr)
        for name, key in REQUEST_FIELDS.items():
            if req.get(name) is not None:
                out[key].append(number(doc, req[name], pointer_join(qptr, name), FMT))
        if req.get("request_latency") is not None:
            lat = number(doc, req["request_latency"], pointer_join(qptr, "request_latency"), FMT)
            out["e2e_latency"].append(lat * 1000.0)
    return {k: v for k, v in out.items() if v}


def kind_of(load: Mapping[str, str | None]) -> str:
    return str(load.get("load.strategy"))


def build(doc: Document) -> list[SampleSet]:
    data = doc.data
    meta = data.get("metadata")
    if isinstance(meta, Mapping) and meta.get("version", 1) not in SUPPORTED_VERSIONS:
        raise fail(
            doc,
            "COMPARE.PEER.VERSION",
            f"{FMT}: report schema version {meta['version']!r} is not one cbaudit reads"
            f" ({', '.join(map(str, SUPPORTED_VERSIONS))})",
            "/metadata/version",
        )
    benchmarks = field(doc, data, "benchmarks", "", FMT)
    if not isinstance(benchmarks, list) or not benchmarks:
        raise fail(doc, "COMPARE.PEER.EMPTY", f"{FMT}: `benchmarks` is empty", "/benchmarks")
    raw_args = data.get("args")
    args: Mapping[str, Any] = raw_args if isinstance(raw_args, Mapping) else {}
    out: list[SampleSet] = []
    for i, bench in enumerate(benchmarks):
        ptr = pointer_join("/benchmarks", i)
        if not isinstance(bench, Mapping):
            raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: a benchmark must be an object", ptr)
        strategy, sptr = _strategy(doc, bench, ptr)
        load, pointers = _load(doc, strategy, sptr)
        raw_config = bench.get("config")
        config: Mapping[str, Any] = raw_config if isinstance(raw_config, Mapping) else {}
        raw_backend = config.get("backend")
        backend: Mapping[str, Any] = raw_backend if isinstance(raw_backend, Mapping) else {}
        model = args.get("model") or backend.get("model")
        declared = {
            "model": model,
            "hardware_parallelism": None,
            "workload": canon(args.get("data")),
            "baseline": "none",
            "metric": {
                "name": "per-request latency (ttft, itl_mean_per_request, tpot_incl_first,"
                " e2e_latency)",
                "unit": "ms",
                "denominator": "per request",
                "percentile": "distribution of samples",
            },
            "slo": "none",
            "load": "guidellm strategy (see load.*)",
            "evidence_class": EvidenceClass.SOURCE_REPORTED.value,
        }
        coords = flatten(declared)
        coords.update(load)
        coords["run.backend"] = canon(args.get("backend") or backend.get("type_"))
        pointers.update({"model": "/args/model", "workload": "/args/data"})
        samples = _requests(doc, bench, ptr)
        if not samples:
            raise fail(
                doc,
                "COMPARE.PEER.EMPTY",
                f"{FMT}: benchmark {i} has no successful request with timings",
                pointer_join(ptr, "requests", "successful"),
            )
        points = {k: Point(k, k, "ms", tuple(v)) for k, v in samples.items()}
        rate = load.get("load.rate")
        tag = f"{kind_of(load)}" + (f"@{rate}" if rate and rate != "none" else "")
        out.append(
            SampleSet(
                label=f"{doc.path}#{i} ({tag})",
                file=doc.path,
                pointer=ptr,
                adapter=NAME,
                coordinates=coords,
                evidence_class=EvidenceClass.SOURCE_REPORTED,
                points=points,
                extra={"id": str(i), "pointers": pointers, "strategy": tag},
            )
        )
    return out
