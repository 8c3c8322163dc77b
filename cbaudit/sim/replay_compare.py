"""Replay reports that `compare-results` can compare: per-request samples and coordinates.

`cbaudit compare-results` ranks two results only when every coordinate that defines them is
equal (article 0x0E, F67). A replay report (`cbaudit replay -f json`, or the gate kind
`replay_report`) therefore carries:

* `results[0].metrics.samples`: metric -> per-request values, named as in the metric registry
  (`queue_delay`, `ttft`, `tpot`, `e2e_latency`: one value per request that has it; `tbt`: one
  value per gap between consecutive output tokens), and `metrics.units` (ms when the clock
  converts to milliseconds, else tick). A metric no request has is left out.
* `summary.coordinates`: the article's comparison set filled in for a replay (model, hardware,
  workload, baseline, metric, SLO, load, evidence class), plus `run`: the replay's own
  coordinates (policy id, version, options and tie-break; effective budgets; cost model and
  its options; horizon; preemption model; initial state). `run` is compared like the rest, so
  two policies are never ranked against each other: each is its own contract. `recorded` keeps
  provenance that is not compared (the seed, the file name, the validation path).

The seed of a generator spec is a repeat index: the workload coordinate is the spec's sha256
(and that of every file it reads), so two seeds of one spec are two draws of the same offered
load and are comparable. The seed of a manifest or trace workload changes nothing and is only
recorded.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.loader import Document, load_document
from cbaudit.io.schemas import list_schemas, validate
from cbaudit.model import (
    EvidenceClass,
    Finding,
    InputDigest,
    InputError,
    Location,
    Report,
)
from cbaudit.sim import replay as core
from cbaudit.sim.engine import ReplayRun, TraceSink
from cbaudit.sim.importers import is_trace_path
from cbaudit.sim.metrics import json_number, ms_converter, request_times
from cbaudit.sim.series import SortedCounts
from cbaudit.sim.workload import TraceRequests, Workload, load_workload, workload_from_data

# Sample names follow registry/metrics.yaml so compare-results knows each direction.
SAMPLE_METRICS: tuple[str, ...] = ("queue_delay", "ttft", "tbt", "tpot", "e2e_latency")
METRIC_NAME = "per-request latency samples"
DENOMINATOR = (
    "one sample per request (queue_delay, ttft, tpot, e2e_latency; a request without the"
    " event is left out, tpot needs two outputs) and one per output-token gap (tbt)"
)
PERCENTILE = (
    "raw per-request samples: compare-results takes medians with order-statistic CIs; the"
    " report's latency percentiles are nearest rank"
)
BASELINE = "none: absolute per-request samples of one replay"
GENERATOR_KIND = "workload-generator"
MANIFEST_SCHEMA = "workload-manifest"
SEED_ROLE_GENERATOR = "generator seed: a repeat index, not a comparison coordinate"
SEED_ROLE_FIXED = "recorded only: a manifest or trace workload does not use the seed"


def canon(value: Any) -> str:
    """One spelling of a JSON-ready value as coordinate text (strings stay as they are)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# --- workloads ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadSource:
    """Where a replay's workload came from: its identity for the coordinates."""

    display: str
    sha256: str
    kind: str  # "manifest" | "generator" | "trace"
    seed: int | None = None  # the seed a generator spec was drawn with
    offered: Mapping[str, Any] | None = None  # a generator's arrival recipe
    referenced: tuple[InputDigest, ...] = ()  # files a generator spec reads (traces, lengths)

    def digests(self) -> list[InputDigest]:
        return [InputDigest(path=self.display, sha256=self.sha256), *self.referenced]


def _manifest_workload(doc: Document) -> Workload:
    """A manifest document as a Workload, schema-checked and located like `load_workload`."""
    if MANIFEST_SCHEMA in list_schemas():
        findings = validate(doc.data, MANIFEST_SCHEMA, file=doc.path, locate=doc.locate)
        if findings:
            raise InputError(findings)
    try:
        return workload_from_data(doc.data, doc.path)
    except InputError as err:
        raise InputError(
            [
                Finding(
                    f.code,
                    f.message,
                    f.severity,
                    doc.locate(f.location.pointer)
                    if f.location.pointer is not None
                    else Location(file=doc.path),
                )
                for f in err.findings
            ]
        ) from None


def _referenced_paths(node: Any) -> list[str]:
    """Every `path: STR` a generator spec declares (trace files, length columns)."""
    out: list[str] = []
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "path" and isinstance(value, str):
                out.append(value)
            else:
                out.extend(_referenced_paths(value))
    elif isinstance(node, list):
        for item in node:
            out.extend(_referenced_paths(item))
    return out


def load_replay_workload(
    path: Path, *, seed: int | None = None, display: str | None = None
) -> tuple[Workload, WorkloadSource]:
    """Any workload input `load_workload` takes, with its identity for the coordinates.

    A manifest is parsed once here; a request trace and a generator spec (drawn with `seed`, by
    default the spec's own) are expanded by `cbaudit.sim.workload.load_workload`.
    """
    name = display if display is not None else str(path)
    if is_trace_path(path):
        digest = InputDigest.of(path, display=name)
        workload = load_workload(path, display=name, seed=seed)
        return workload, WorkloadSource(name, digest.sha256, kind="trace", seed=seed)
    doc = load_document(path, display=display)
    data = doc.data
    if data.get("kind") != GENERATOR_KIND:
        source = WorkloadSource(display=doc.path, sha256=doc.sha256, kind="manifest", seed=seed)
        return _manifest_workload(doc), source
    workload = load_workload(path, display=doc.path, seed=seed)
    chosen = seed if seed is not None else data.get("seed")
    offered = {k: data[k] for k in ("arrivals", "count", "duration", "trace") if k in data}
    base_dir, shown = path.resolve().parent, Path(doc.path).parent
    referenced = tuple(
        InputDigest.of(base_dir / rel, display=str(shown / rel))
        for rel in sorted(set(_referenced_paths(data)))
    )
    source = WorkloadSource(
        display=doc.path,
        sha256=doc.sha256,
        kind="generator",
        seed=int(chosen) if isinstance(chosen, int) else None,
        offered=offered,
        referenced=referenced,
    )
    return workload, source


# --- samples -----------------------------------------------------------------------------


def sample_unit(run: ReplayRun) -> str:
    """`ms` when this run's clock converts to milliseconds, else `tick`."""
    return "ms" if ms_converter(run)(0.0) is not None else "tick"


def request_samples(run: ReplayRun) -> tuple[dict[str, list[float | int]], str]:
    """Per-request samples (metric -> values, request order; tbt
    in ascending order) and unit."""
    to_ms = ms_converter(run)
    unit = sample_unit(run)

    def value(v: float) -> float | int:
        if unit == "tick":
            return json_number(v)
        ms = to_ms(v)
        assert ms is not None  # the unit says this clock converts
        return json_number(ms)

    lists: dict[str, list[float | int]] = {name: [] for name in SAMPLE_METRICS}
    for request, stats in zip(run.requests, run.stats, strict=True):
        times = request_times(request, stats)
        for name, v in zip(("queue_delay", "ttft", "e2e_latency", "tpot"), times, strict=True):
            if v is not None:
                lists[name].append(value(v))
    lists["tbt"] = [value(v) for v in sorted(run.tbt_counts) for _ in range(run.tbt_counts[v])]
    return {name: vals for name, vals in lists.items() if vals}, unit


def write_samples(run: ReplayRun, path: Path, shown: str) -> dict[str, Any]:
    """Stream the run's samples to `path` (atomically; format: cbaudit.io.replay_samples)
    and return the report's `samples_file` entry (`shown`: the path as the report names it)."""
    import hashlib

    from cbaudit.io.atomic import atomic_stream
    from cbaudit.io.replay_samples import FORMAT, VERSION
    from cbaudit.sim.metrics import request_record

    to_ms = ms_converter(run)
    unit = sample_unit(run)

    def value(v: float | None) -> float | int | None:
        if v is None:
            return None
        if unit == "tick":
            return json_number(v)
        ms = to_ms(v)
        assert ms is not None  # the unit says this clock converts
        return json_number(ms)

    digest = hashlib.sha256()

    def dump(fh: Any, rec: Mapping[str, Any]) -> None:
        line = json.dumps(rec, sort_keys=True, separators=(",", ":")).encode() + b"\n"
        digest.update(line)
        fh.write(line)

    with atomic_stream(path) as fh:
        dump(
            fh,
            {
                "format": FORMAT,
                "version": VERSION,
                "unit": unit,
                "workload_id": run.workload.workload_id,
                "policy": run.identity.policy_id,
                "requests": len(run.requests),
            },
        )
        for r, st in zip(run.requests, run.stats, strict=True):
            rec, (q, t1, end, tp) = request_record(r, st, to_ms)
            dump(
                fh,
                {
                    "request": r.rid,
                    "queue_delay": value(q),
                    "ttft": value(t1),
                    "e2e_latency": value(end),
                    "tpot": value(tp),
                    "record": rec,
                },
            )
        if isinstance(run.tbt_counts, SortedCounts):
            _stream_tbt(fh, digest, run.tbt_counts, value)
        else:
            counts: dict[float | int, int] = {}
            for v, n in run.tbt_counts.items():
                key = value(v)
                assert key is not None
                counts[key] = counts.get(key, 0) + n
            dump(fh, {"tbt": [[v, counts[v]] for v in sorted(counts)]})
    return {"path": shown, "sha256": digest.hexdigest(), "requests": len(run.requests)}


def _stream_tbt(
    fh: Any,
    digest: Any,
    counts: SortedCounts,
    value: Callable[[float | None], float | int | None],
) -> None:
    """The samples file's last line, `{"tbt":[[v,n],...]}`, written a pair at a time: the
    bytes `json.dumps` gives the whole list, without holding it. `counts` come in ascending
    order and `value` (ms conversion, JSON rounding) never reverses two of them, so values
    that become equal are adjacent: they are merged as the dict of the whole line merges
    them (the first one's JSON form, counts added)."""

    def write(chunk: bytes) -> None:
        digest.update(chunk)
        fh.write(chunk)

    write(b'{"tbt":[')
    held: float | int | None = None
    total = 0
    first = True
    for v, n in counts.sorted_items():
        key = value(v)
        assert key is not None
        if held is not None and key == held:
            total += n
            continue
        if held is not None:
            write(
                (b"" if first else b",") + json.dumps([held, total], separators=(",", ":")).encode()
            )
            first = False
        held, total = key, n
    if held is not None:
        write((b"" if first else b",") + json.dumps([held, total], separators=(",", ":")).encode())
    write(b"]}\n")


def sample_metrics(run: ReplayRun) -> dict[str, Any]:
    """The `samples` and `units` entries a comparable replay result adds to its metrics."""
    samples, unit = request_samples(run)
    return {"samples": samples, "units": dict.fromkeys(samples, unit)}


# --- coordinates -------------------------------------------------------------------------


def _profiles(cost: Mapping[str, Any]) -> tuple[str, str]:
    """The model and hardware coordinates a cost model carries (or says it does not)."""
    name = str(cost.get("name"))
    if name == "roofline" and "model" in cost and "hardware" in cost:
        model = canon({"profile": cost["model"], "dtype": cost.get("dtype")})
        hardware = canon({"profile": cost["hardware"], "parallelism": "one device"})
        return model, hardware
    if name == "table":
        summary = cost.get("manifest")
        table = summary if isinstance(summary, Mapping) else {}
        where = f"as measured in step-time table sha256:{table.get('sha256')}"
        device = table.get("device") or (table.get("manifest") or {}).get("device")
        return where, where + (f" on {canon(device)}" if device else "")
    return (
        f"none: the {name} cost model has no model profile",
        f"none: the {name} cost model has no hardware profile",
    )


def _load(workload: Workload, source: WorkloadSource) -> str:
    if source.offered is not None:
        return canon({"offered": source.offered, "clock": workload.clock.unit.value})
    reqs = workload.requests
    if not reqs:
        return "no requests"
    first, last = json_number(reqs[0].arrival), json_number(reqs[-1].arrival)
    return f"{len(reqs)} declared requests, arrivals {first}..{last} {workload.clock.unit.value}"


def _slo(workload: Workload, options: core.ReplayOptions) -> str:
    reqs = workload.requests
    declared = (
        []  # a plain trace declares no SLOs
        if isinstance(reqs, TraceRequests)
        else sorted({canon(dict(r.slo)) for r in reqs if r.slo is not None})
    )
    parts: dict[str, Any] = {}
    if options.goodput:
        parts["goodput_ms"] = dict(sorted(options.goodput.items()))
    if options.slo_window_ms is not None:
        parts["window_ms"] = options.slo_window_ms
    if declared:
        parts["per_request"] = [json.loads(d) for d in declared]
    return canon(parts) if parts else "none"


def _initial(options: core.ReplayOptions) -> str:
    if not options.initial:
        return "none"
    views = {
        rid: {
            k: (v.name.lower() if k == "queue" else v) for k, v in dataclasses.asdict(view).items()
        }
        for rid, view in sorted(options.initial.items())
    }
    return canon(views)


def coordinates(
    run: ReplayRun,
    metrics: Mapping[str, Any],
    evidence: EvidenceClass,
    source: WorkloadSource,
    options: core.ReplayOptions,
) -> dict[str, Any]:
    """The coordinates that define one replay result (see the module docstring)."""
    workload = run.workload
    cost = metrics.get("cost_model")
    cost_desc: Mapping[str, Any] = cost if isinstance(cost, Mapping) else {}
    model, hardware = _profiles(cost_desc)
    kind = {"generator": "generator spec", "trace": "trace"}.get(source.kind, "manifest")
    ident = f"{workload.workload_id} {kind} sha256:{source.sha256}"
    for ref in source.referenced:
        ident += f"; reads {Path(ref.path).name} sha256:{ref.sha256}"
    identity = run.identity
    policy = {
        "id": identity.policy_id,
        "version": identity.policy_version,
        "options": core.engine_policy_options(options)
        if options.engine_config is not None
        else dict(options.policy_options),
        "tie_break": identity.tie_break.to_json(),
    }
    run_coords: dict[str, Any] = {
        "policy": canon(policy),
        "budgets": canon(workload.budgets.to_json()),
        "cost_model": canon({k: v for k, v in cost_desc.items() if k not in ("model", "hardware")}),
        "horizon": "none: run to completion" if options.horizon is None else str(options.horizon),
        "preemption": canon(dict(options.preemption)) if options.preemption else "recompute",
        "initial_state": _initial(options),
    }
    if options.state_pool:  # only when declared: earlier reports keep their coordinates
        run_coords["state_pool"] = canon(dict(options.state_pool))
    return {
        "model": model,
        "hardware_parallelism": hardware,
        "workload": ident,
        "baseline": BASELINE,
        "metric": {
            "name": METRIC_NAME,
            "unit": sample_unit(run),
            "denominator": DENOMINATOR,
            "percentile": PERCENTILE,
        },
        "slo": _slo(workload, options),
        "load": _load(workload, source),
        "evidence_class": evidence.value,
        "run": run_coords,
        "recorded": {
            "seed": source.seed,
            "seed_role": SEED_ROLE_GENERATOR if source.kind == "generator" else SEED_ROLE_FIXED,
            "workload_file": source.display,
            "workload_kind": source.kind,
            "validation": run.validation.value,
        },
    }


# --- the report --------------------------------------------------------------------------


def replay_report(
    workload: Workload,
    source: WorkloadSource,
    options: core.ReplayOptions,
    *,
    samples: bool = True,
    trace: TraceSink | None = None,
    progress: Callable[[int, int], None] | None = None,
    base_dir: Path | None = None,
    steps: int = 0,
    samples_out: tuple[Path, str] | None = None,
    notes: list[str] | None = None,
) -> tuple[Report, EvidenceClass]:
    """Run one replay and build its report: metrics (with samples), coordinates, inputs;
    with `steps`, one `replay.step` result per traced iteration after the replay's own. The
    run's notes (not part of the report) are appended to `notes`."""
    run, metrics, evidence = core.run(
        workload,
        options,
        trace=trace,
        progress=progress,
        source=source.display,
        base_dir=base_dir,
        steps=steps,
    )
    if notes is not None:
        notes.extend(run.notes)
    if samples:
        metrics = {**metrics, **sample_metrics(run)}
    if samples_out is not None:
        metrics = {**metrics, "samples_file": write_samples(run, *samples_out)}
    result = core.to_result(run, metrics, evidence, source.display)
    summary = {
        "policy": options.policy,
        "iterations": run.iterations,
        "stop_reason": run.stop_reason,
        "coordinates": coordinates(run, metrics, evidence, source, options),
    }
    results = [result]
    if steps:
        from cbaudit.sim.step_trace import step_results

        results += step_results(run.extra.get("steps", []), evidence)
    report = Report.build("replay", results, inputs=source.digests(), summary=summary)
    return report, evidence
