"""`vllm bench serve --save-result` JSON (vLLM's serving benchmark) as a sample set.

The file is one JSON object (`vllm/benchmarks/serve.py`, `main_async`: the run's setup keys,
any `--metadata KEY=VALUE` pairs as top-level strings, the traffic keys, then the benchmark's
result). What cbaudit reads:

* identity and load: `model_id`, `backend` (older files: `endpoint_type`), `num_prompts`,
  `request_rate` (a number, or the string "inf"), `burstiness`, `max_concurrency` (null: no
  limit) and, for ramp-up runs, `ramp_up_strategy`, `ramp_up_start_rps`, `ramp_up_end_rps`;
* per-request samples (`--save-detailed`; times in seconds, one entry per request, failed
  requests included with an error text): `ttfts`, `itls` (a list of gaps per request),
  `latencies` (end-to-end), `input_lens`, `output_lens`, `errors`. TPOT per request is
  vLLM's definition, (latency - TTFT) / (output tokens - 1) for requests with more than one
  output token;
* without the arrays, the summary statistics (`median_ttft_ms`, `p99_ttft_ms`, ...) are shown
  as reported, untested (a single value is no distribution).

Coordinates: `model` is `model_id`; `load` and the extra coordinates `load.request_rate`,
`load.burstiness`, `load.max_concurrency`, `load.num_prompts` (and the ramp-up keys) must match,
so two runs at different request rates are refused, never ranked. vLLM does not record the
server's hardware or the dataset: they come from `--metadata hardware_parallelism=...` and
`--metadata workload=...` when the run recorded them (also `evidence_class=measured_gpu`),
and are otherwise `unreported`, which the comparability rule never matches. The evidence class
defaults to `source_reported`: cbaudit did not measure the run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from cbaudit.io.loader import Document
from cbaudit.model.findings import pointer_join
from cbaudit.results.coordinates import flatten
from cbaudit.results.peers.fields import canon, fail, field, number, numbers, same_lengths, text
from cbaudit.results.sample_model import Point, SampleSet, evidence

NAME = "vllm-bench-serve"
FMT = "vllm bench serve result"
LOAD_KEYS = ("request_rate", "burstiness", "max_concurrency", "num_prompts")
RAMP_KEYS = ("ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps")
#: Per-request metrics: point key (a metric-registry name) -> summary key stem in the file.
METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e_latency": "e2el"}


def detect(data: Any) -> bool:
    """vLLM's serving result: `model_id`, a backend, `num_prompts` and `request_throughput`."""
    return (
        isinstance(data, Mapping)
        and "model_id" in data
        and "num_prompts" in data
        and "request_throughput" in data
        and ("backend" in data or "endpoint_type" in data)
    )


def _samples(doc: Document) -> tuple[dict[str, list[float]], int]:
    """Per-request samples in ms from the detailed arrays; (empty, 0) when not saved."""
    data = doc.data
    present = [k for k in ("ttfts", "itls", "latencies", "output_lens", "errors") if k in data]
    if not present:
        return {}, 0
    arrays: dict[str, list[Any]] = {}
    for key in present:
        value = data[key]
        if not isinstance(value, list):
            raise fail(doc, "COMPARE.PEER.FIELD", f"{FMT}: {key!r} must be a list", f"/{key}")
        arrays[key] = value
    n = same_lengths(doc, arrays, FMT)
    errors = arrays.get("errors")
    out: dict[str, list[float]] = {}

    def column(key: str) -> list[float] | None:
        return numbers(doc, arrays[key], f"/{key}", FMT) if key in arrays else None

    ttfts, lats, outs = column("ttfts"), column("latencies"), column("output_lens")
    if errors is not None:  # vLLM writes "" for a success and the error text for a failure
        ok = [i for i in range(n) if errors[i] in ("", None)]
    else:  # without `errors` (no --save-detailed), a failed request has a zero latency
        times = lats if lats is not None else ttfts
        ok = [i for i in range(n) if times is None or times[i] > 0]
    if ttfts is not None:
        out["ttft"] = [ttfts[i] * 1000.0 for i in ok]
    if lats is not None:
        out["e2e_latency"] = [lats[i] * 1000.0 for i in ok]
    if ttfts is not None and lats is not None and outs is not None:
        out["tpot"] = [(lats[i] - ttfts[i]) / (outs[i] - 1) * 1000.0 for i in ok if outs[i] > 1]
    if "itls" in arrays:
        gaps: list[float] = []
        for i in ok:
            ptr = pointer_join("/itls", i)
            gaps.extend(g * 1000.0 for g in numbers(doc, arrays["itls"][i], ptr, FMT))
        out["itl"] = gaps
    return {k: v for k, v in out.items() if v}, n


def _summary_text(data: Mapping[str, Any], stem: str) -> str | None:
    """The summary statistics vLLM printed for one metric (`median_ttft_ms`, `p99_ttft_ms`)."""
    pattern = re.compile(rf"^(mean|median|p\d+(?:\.\d+)?)_{stem}_ms$")
    parts = []
    for key in sorted(data):
        match = pattern.match(key)
        value = data[key]
        if match and isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"{match.group(1)} {value:.6g} ms")
    if not parts:
        return None
    return ", ".join(parts) + " (no per-request samples: vllm bench serve --save-detailed)"


def build(doc: Document) -> list[SampleSet]:
    data = doc.data
    model = text(doc, field(doc, data, "model_id", "", FMT), "/model_id", FMT)
    backend_key = "backend" if "backend" in data else "endpoint_type"
    backend = text(doc, data[backend_key], f"/{backend_key}", FMT)
    load: dict[str, str | None] = {}
    pointers: dict[str, str] = {}
    for key in (*LOAD_KEYS, *RAMP_KEYS):
        if key not in data:
            if key in LOAD_KEYS:
                load[f"load.{key}"] = None  # not recorded (an older vLLM): unreported
            continue
        value = data[key]
        if key == "request_rate":
            rate = number(doc, value, "/request_rate", FMT, allow_inf=True)
            load["load.request_rate"] = "inf" if math.isinf(rate) else repr(rate)
        elif key == "max_concurrency" and value is None:
            load["load.max_concurrency"] = "none (no limit)"
        elif key == "ramp_up_strategy":
            load["load.ramp_up_strategy"] = text(doc, value, "/ramp_up_strategy", FMT)
        else:
            number(doc, value, f"/{key}", FMT)
            load[f"load.{key}"] = canon(value)
        pointers[f"load.{key}"] = f"/{key}"
    samples, n = _samples(doc)
    ev_raw = data.get("evidence_class", "source_reported")
    declared = {
        "model": model,
        "hardware_parallelism": data.get("hardware_parallelism"),
        "workload": data.get("workload"),
        "baseline": "none",
        "metric": {
            "name": "per-request latency (ttft, tpot, itl, e2e_latency)",
            "unit": "ms",
            "denominator": "per request (itl: per output-token gap)",
            "percentile": "distribution of samples",
        },
        "slo": "none" if data.get("request_goodput") is None else data.get("slo"),
        "load": "vllm bench serve open loop (see load.*)",
        "evidence_class": ev_raw,
    }
    coords = flatten(declared)
    coords.update(load)
    coords["run.backend"] = backend
    pointers.update(
        {
            "model": "/model_id",
            "hardware_parallelism": "/hardware_parallelism"
            if "hardware_parallelism" in data
            else "",
            "workload": "/workload" if "workload" in data else "",
            "run.backend": f"/{backend_key}",
            "slo": "/request_goodput",
        }
    )
    points: dict[str, Point] = {}
    for key, stem in METRICS.items():
        if key in samples:
            points[key] = Point(key, key, "ms", tuple(samples[key]))
        else:
            reported = _summary_text(data, stem)
            if reported is not None:
                points[key] = Point(key, key, "ms", (), reported=reported)
    if not points:
        raise fail(
            doc,
            "COMPARE.PEER.EMPTY",
            f"{FMT}: neither per-request arrays (--save-detailed) nor summary latencies",
            "",
        )
    label = str(data.get("label") or backend)
    return [
        SampleSet(
            label=doc.path,
            file=doc.path,
            pointer="",
            adapter=NAME,
            coordinates=coords,
            evidence_class=evidence(ev_raw, doc.path, "/evidence_class"),
            points=points,
            extra={
                "id": label,
                "pointers": pointers,
                "requests": n,
                "completed": data.get("completed"),
                "failed": data.get("failed"),
            },
        )
    ]
