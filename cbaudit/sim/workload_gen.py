"""Workloads: explicit manifests, seeded generators and imported traces, all as WorkloadManifest.

`load_workload(path)` accepts three inputs and returns the contract's frozen `WorkloadManifest`:

* a manifest file (schema `workload-manifest`): validated and built as is;
* a generator spec (schema `workload-generator`, `kind: workload-generator`): generated;
* a request trace (`.csv` with Splitwise/Vidur, Azure or BurstGPT columns, or Mooncake's
  `.jsonl`): imported with default policy and budgets (pass `policy=` / `budgets=` to
  override, or wrap the trace in a generator spec).

`generate(spec, seed)` turns a generator spec into a manifest. Randomness is one
`random.Random` per purpose (arrivals, clients, prompt lengths, output lengths), each seeded
from the spec's seed and the purpose's name, so changing the output-length recipe leaves the
arrivals untouched, and the same spec and seed always give byte-identical JSON. Requests are
produced one at a time (`iter_generated`), so a caller that streams never holds two copies.

Every unusable spec is an `InputError` located at the spec's file and JSON pointer.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from cbaudit.contract.workload_records import WorkloadManifest
from cbaudit.io.loader import load_document
from cbaudit.io.schemas import validate
from cbaudit.model import Finding, InputError, Location
from cbaudit.model.findings import pointer_join
from cbaudit.sim.importers import (  # the trace defaults live with the reader (re-exported)
    DEFAULT_TIE_BREAK,
    DEFAULT_TRACE_BUDGETS,
    DEFAULT_TRACE_POLICY,
    describe_trace_source,
    is_trace_path,
    iter_trace_rows,
    read_int_column,
    trace_format,
    trace_request,
)

GENERATOR_SCHEMA = "workload-generator"
MANIFEST_SCHEMA = "workload-manifest"
GENERATOR_KIND = "workload-generator"

DEFAULT_ARRIVAL_DECIMALS = 3
MAX_DURATION_REQUESTS = 10_000_000

Sampler = Callable[[random.Random], int]


@dataclass(frozen=True)
class SpecSource:
    """Where a spec came from: its file (for locations) and the directory its paths use."""

    file: str | None = None
    base_dir: Path | None = None
    locate: Callable[[str], Location] | None = None

    def error(self, code: str, message: str, pointer: str) -> InputError:
        loc = self.locate(pointer) if self.locate else Location(file=self.file, pointer=pointer)
        return InputError(Finding(code, message, location=loc))

    def path(self, rel: str) -> Path:
        p = Path(rel)
        if not p.is_absolute() and self.base_dir is not None:
            p = self.base_dir / p
        return p


# --------------------------------------------------------------------------- samplers


def _length_sampler(spec: Mapping[str, Any], pointer: str, src: SpecSource) -> Sampler:
    """A token-length sampler (always >= 1) for one `length` spec."""
    dist = spec["dist"]
    if dist == "fixed":
        value = int(spec["value"])
        return lambda _rng: value
    if dist == "uniform":
        lo, hi = int(spec["lo"]), int(spec["hi"])
        if lo > hi:
            raise src.error("GEN.LENGTH.RANGE", f"uniform lo={lo} > hi={hi}", pointer)
        return lambda rng: rng.randint(lo, hi)
    if dist == "geometric":
        mean = float(spec["mean"])
        cap: int | None = spec.get("max")
        if mean == 1.0:
            return lambda _rng: 1
        log_q = math.log1p(-1.0 / mean)  # log(1 - p), p = 1 / mean

        def geometric(rng: random.Random) -> int:
            # Inverse CDF on {1, 2, ...}: P(K > k) = (1 - p)^k.
            k: int = 1 + math.floor(math.log1p(-rng.random()) / log_q)
            return k if cap is None else min(k, cap)

        return geometric
    if dist == "lognormal":
        mu, sigma = math.log(float(spec["median"])), float(spec["sigma"])
        lo = int(spec.get("min", 1))
        top: int | None = spec.get("max")
        if top is not None and lo > top:
            raise src.error("GEN.LENGTH.RANGE", f"lognormal min={lo} > max={top}", pointer)

        def lognormal(rng: random.Random) -> int:
            n: int = max(lo, round(rng.lognormvariate(mu, sigma)))
            return n if top is None else min(n, top)

        return lognormal
    if dist == "trace":
        values = read_int_column(src.path(spec["path"]), spec["column"])
        return lambda rng: values[int(rng.random() * len(values))]
    raise src.error("GEN.LENGTH.UNKNOWN", f"unknown length distribution {dist!r}", pointer)


def _arrival_times(
    spec: Mapping[str, Any],
    clock_unit: str,
    count: int | None,
    duration: float | None,
    rng: random.Random,
    src: SpecSource,
) -> Iterator[float]:
    """Unrounded arrival times in clock units: `count` of them, or all before start+duration."""
    process = spec["process"]
    start = float(spec.get("start", 0))
    end = None if duration is None else start + duration
    if process == "all_at_zero":
        if count is None:
            raise src.error(
                "GEN.ARRIVAL.UNBOUNDED",
                "all_at_zero arrivals need `count`, not `duration`",
                "/arrivals/process",
            )
        for _ in range(count):
            yield start
        return
    if process == "fixed_interval":
        interval = float(spec["interval"])
        i = 0
        while count is None or i < count:
            t = start + i * interval
            if end is not None and t >= end:
                return
            yield t
            i += 1
        return
    rate = _rate_per_clock_unit(spec, clock_unit, src)
    gap: Callable[[], float]
    if process == "poisson":
        gap = lambda: rng.expovariate(rate)  # noqa: E731 - one-line sampler
    else:  # gamma: shape 1/cv^2, mean 1/rate
        cv = float(spec["cv"])
        shape = 1.0 / (cv * cv)
        scale = 1.0 / (rate * shape)
        gap = lambda: rng.gammavariate(shape, scale)  # noqa: E731 - one-line sampler
    t = start
    i = 0
    while count is None or i < count:
        t += gap()
        if end is not None and t >= end:
            return
        yield t
        i += 1


def _rate_per_clock_unit(spec: Mapping[str, Any], clock_unit: str, src: SpecSource) -> float:
    per_s, per_tick = spec.get("rate_per_s"), spec.get("rate_per_tick")
    if clock_unit == "ms":
        if per_s is None or per_tick is not None:
            raise src.error(
                "GEN.ARRIVAL.RATE_UNIT",
                "with an ms clock declare the arrival rate as rate_per_s",
                "/arrivals",
            )
        return float(per_s) / 1000.0
    if per_tick is None or per_s is not None:
        raise src.error(
            "GEN.ARRIVAL.RATE_UNIT",
            "with a tick clock declare the arrival rate as rate_per_tick",
            "/arrivals",
        )
    return float(per_tick)


def _rounded(t: float, decimals: int) -> int | float:
    value = round(t, decimals)
    return int(value) if decimals == 0 or float(value).is_integer() else value


@dataclass(frozen=True)
class _Client:
    name: str
    priority: int | None
    slo: Mapping[str, Any] | None
    prompt: Sampler | None
    output: Sampler | None


class _ClientPicker:
    """Draws a client by weight (cumulative weights, one uniform draw per request)."""

    def __init__(self, clients: list[_Client], weights: list[float]) -> None:
        self.clients = clients
        self.cumulative: list[float] = []
        total = 0.0
        for w in weights:
            total += w
            self.cumulative.append(total)
        self.total = total

    def pick(self, rng: random.Random) -> _Client:
        if len(self.clients) == 1:
            return self.clients[0]
        i = bisect.bisect_right(self.cumulative, rng.random() * self.total)
        return self.clients[min(i, len(self.clients) - 1)]


def _clients(spec: Mapping[str, Any], src: SpecSource, *, trace: bool) -> _ClientPicker | None:
    raw = spec.get("clients")
    if not raw:
        return None
    clients: list[_Client] = []
    weights: list[float] = []
    seen: set[str] = set()
    for i, c in enumerate(raw):
        ptr = pointer_join("/clients", i)
        if c["client"] in seen:
            raise src.error(
                "GEN.CLIENT.DUPLICATE", f"client {c['client']!r} is declared twice", ptr
            )
        seen.add(c["client"])
        for key in ("prompt_tokens", "output_tokens"):
            if trace and key in c:
                raise src.error(
                    "GEN.SPEC.CONFLICT",
                    f"a trace sets every request's lengths; drop clients[{i}].{key}",
                    pointer_join(ptr, key),
                )
        clients.append(
            _Client(
                name=c["client"],
                priority=c.get("priority"),
                slo=c.get("slo"),
                prompt=_length_sampler(c["prompt_tokens"], ptr + "/prompt_tokens", src)
                if "prompt_tokens" in c
                else None,
                output=_length_sampler(c["output_tokens"], ptr + "/output_tokens", src)
                if "output_tokens" in c
                else None,
            )
        )
        weights.append(float(c["weight"]))
    return _ClientPicker(clients, weights)


# --------------------------------------------------------------------------- generation


def _stream(seed: int, purpose: str) -> random.Random:
    """An independent, reproducible stream for one purpose (str seeds hash with SHA-512)."""
    return random.Random(f"cbaudit.workload:{seed}:{purpose}")


def _decorate(
    decl: dict[str, Any],
    client: _Client | None,
    spec: Mapping[str, Any],
) -> dict[str, Any]:
    if client is not None:
        decl["client"] = client.name
    priority = client.priority if client is not None and client.priority is not None else None
    if priority is None:
        priority = spec.get("priority")
    if priority is not None:
        decl["priority"] = priority
    slo = client.slo if client is not None and client.slo is not None else spec.get("slo")
    if slo is not None:
        decl["slo"] = dict(slo)
    return decl


def _check_shape(spec: Mapping[str, Any], src: SpecSource) -> None:
    """Cross-field rules the schema leaves to code."""
    trace = "trace" in spec
    if trace:
        for key in ("count", "duration", "arrivals", "prompt_tokens", "output_tokens"):
            if key in spec:
                raise src.error(
                    "GEN.SPEC.CONFLICT",
                    f"`trace` supplies the requests; drop `{key}`",
                    pointer_join("", key),
                )
        if spec["clock"]["unit"] != "ms":
            raise src.error(
                "GEN.TRACE.CLOCK", "trace arrivals are wall-clock: use clock unit ms", "/clock/unit"
            )
        return
    for key in ("arrivals", "prompt_tokens", "output_tokens", "max_output_tokens"):
        if key not in spec:
            raise src.error(
                "GEN.SPEC.MISSING",
                f"a generator without `trace` needs `{key}`",
                pointer_join("", key),
            )
    if ("count" in spec) == ("duration" in spec):
        raise src.error("GEN.SPEC.SIZE", "declare exactly one of `count` and `duration`", "")


def iter_generated(
    spec: Mapping[str, Any], seed: int, src: SpecSource, skipped: list[int] | None = None
) -> Iterator[tuple[dict[str, Any], int]]:
    """Yield (online request declaration, realized output length) for a checked spec (the
    lines of trace rows left out by `skip_failed` are appended to `skipped`)."""
    trace = spec.get("trace")
    picker = _clients(spec, src, trace=trace is not None)
    client_rng = _stream(seed, "clients")
    max_spec = spec.get("max_output_tokens") or {"equal_to_realized": True}
    cap: int | None = max_spec.get("cap")
    if trace is not None:
        fmt = trace.get("format", "auto")
        prefix = spec.get("request_id_prefix") or (fmt if fmt != "auto" else "trace")
        rows = iter_trace_rows(
            src.path(trace["path"]),
            fmt,
            limit=trace.get("limit"),
            time_scale=Decimal(repr(trace.get("time_scale", 1))),
            skip_failed=trace.get("skip_failed", False),
            skipped=skipped,
        )
        for i, row in enumerate(rows):
            row_decl, realized = trace_request(row, i, prefix=prefix, max_output_tokens=cap)
            client = picker.pick(client_rng) if picker else None
            yield _decorate(row_decl, client, spec), realized
        return
    unit = spec["clock"]["unit"]
    arrivals_spec = spec["arrivals"]
    decimals = int(arrivals_spec.get("decimals", DEFAULT_ARRIVAL_DECIMALS))
    prompt = _length_sampler(spec["prompt_tokens"], "/prompt_tokens", src)
    output = _length_sampler(spec["output_tokens"], "/output_tokens", src)
    prompt_rng, output_rng = _stream(seed, "prompt_tokens"), _stream(seed, "output_tokens")
    prefix = spec.get("request_id_prefix", "req")
    times = _arrival_times(
        arrivals_spec,
        unit,
        spec.get("count"),
        spec.get("duration"),
        _stream(seed, "arrivals"),
        src,
    )
    for i, t in enumerate(times):
        if i >= MAX_DURATION_REQUESTS and "duration" in spec:
            raise src.error(
                "GEN.SPEC.TOO_MANY",
                f"duration yields more than {MAX_DURATION_REQUESTS} requests; lower the rate",
                "/duration",
            )
        client = picker.pick(client_rng) if picker else None
        p = (client.prompt if client and client.prompt else prompt)(prompt_rng)
        drawn = (client.output if client and client.output else output)(output_rng)
        max_out = drawn if cap is None else cap
        decl: dict[str, Any] = {
            "request_id": f"{prefix}-{i:06d}",
            "request_generation": 0,
            "arrival": _rounded(t, decimals),
            "arrival_order": i,
            "prompt_tokens": p,
            "max_output_tokens": max_out,
        }
        yield _decorate(decl, client, spec), min(drawn, max_out)


def _description(spec: Mapping[str, Any], seed: int, rows: int, skipped: int = 0) -> str:
    parts = [spec["description"]] if spec.get("description") else []
    trace = spec.get("trace")
    cap = (spec.get("max_output_tokens") or {}).get("cap")
    if trace is not None:
        parts.append(
            describe_trace_source(trace.get("format", "auto"), trace["path"], cap, rows, skipped)
        )
    else:
        how = (
            f"declared cap {cap} (realized lengths clipped to it)"
            if cap is not None
            else "the realized length (an oracle-style cap, not an online prediction)"
        )
        parts.append(
            f"generated by cbaudit workload-generator (seed {seed}, {rows} requests);"
            f" max_output_tokens = {how}"
        )
    return "; ".join(parts)


def generate_json(
    spec: Mapping[str, Any], seed: int | None = None, *, source: SpecSource | None = None
) -> dict[str, Any]:
    """The manifest (JSON-ready, hidden truth included) that a generator spec describes."""
    src = source or SpecSource()
    findings = validate(dict(spec), GENERATOR_SCHEMA, file=src.file, locate=src.locate)
    if findings:
        raise InputError(findings)
    _check_shape(spec, src)
    chosen = seed if seed is not None else spec.get("seed")
    if chosen is None:
        raise src.error(
            "GEN.SPEC.NO_SEED", "declare `seed` in the spec or pass one: randomness is seeded", ""
        )
    requests: list[dict[str, Any]] = []
    realized: dict[str, int] = {}
    skipped: list[int] = []
    for decl, n in iter_generated(spec, int(chosen), src, skipped):
        requests.append(decl)
        realized[decl["request_id"]] = n
    policy = dict(spec["policy"])
    policy.setdefault("tie_break", DEFAULT_TIE_BREAK)
    manifest: dict[str, Any] = {
        "schema_version": 1,
        "workload_id": spec["workload_id"],
        "description": _description(spec, int(chosen), len(requests), len(skipped)),
        "clock": dict(spec["clock"]),
        "policy": policy,
        "budgets": dict(spec["budgets"]),
        "requests": requests,
        "fixture_only_hidden_truth": {"realized_output_tokens": realized},
    }
    return manifest


def generate(
    spec: Mapping[str, Any], seed: int | None = None, *, source: SpecSource | None = None
) -> WorkloadManifest:
    """A `WorkloadManifest` from a generator spec; `seed` overrides the spec's own."""
    src = source or SpecSource()
    return _manifest(generate_json(spec, seed, source=src), src)


def _manifest(data: Mapping[str, Any], src: SpecSource) -> WorkloadManifest:
    """Schema-check the manifest data, check request identities, build the record."""
    findings = validate(dict(data), MANIFEST_SCHEMA, file=src.file, locate=src.locate)
    if findings:
        raise InputError(findings)
    seen: dict[str, int] = {}
    ids: set[str] = set()
    for i, r in enumerate(data["requests"]):
        rid = r["request_id"]
        if rid in seen:
            raise src.error(
                "WORKLOAD.REQUEST.DUPLICATE",
                f"request_id {rid!r} already declared at /requests/{seen[rid]}",
                pointer_join("/requests", i, "request_id"),
            )
        seen[rid] = i
        ids.add(rid)
    hidden = (data.get("fixture_only_hidden_truth") or {}).get("realized_output_tokens") or {}
    for rid in hidden:
        if rid not in ids:
            raise src.error(
                "WORKLOAD.HIDDEN_TRUTH.UNKNOWN_REQUEST",
                f"hidden truth names {rid!r}, which no request declares",
                pointer_join("/fixture_only_hidden_truth/realized_output_tokens", rid),
            )
    return WorkloadManifest.from_json(data)


# --------------------------------------------------------------------------- trace import


def import_trace_json(
    path: str | Path,
    *,
    fmt: str = "auto",
    max_output_tokens: int | None = None,
    policy: Mapping[str, Any] | None = None,
    budgets: Mapping[str, Any] | None = None,
    workload_id: str | None = None,
    limit: int | None = None,
    time_scale: float | str = 1,
    id_prefix: str | None = None,
    display: str | None = None,
) -> dict[str, Any]:
    """A manifest (JSON-ready) from a request trace, streamed row by row."""
    name = display if display is not None else str(path)
    if max_output_tokens is not None and (
        isinstance(max_output_tokens, bool) or max_output_tokens < 1
    ):
        raise InputError.at(
            "TRACE.OPTION.RANGE", f"max_output_tokens must be >= 1, got {max_output_tokens}", name
        )
    requests: list[dict[str, Any]] = []
    realized: dict[str, int] = {}
    detected = trace_format(path, fmt, display=name)
    prefix = id_prefix or detected.value
    rows = iter_trace_rows(
        path, fmt, display=name, limit=limit, time_scale=Decimal(str(time_scale))
    )
    for i, row in enumerate(rows):
        decl, n = trace_request(row, i, prefix=prefix, max_output_tokens=max_output_tokens)
        requests.append(decl)
        realized[decl["request_id"]] = n
    policy_data = dict(policy) if policy is not None else dict(DEFAULT_TRACE_POLICY)
    policy_data.setdefault("tie_break", DEFAULT_TIE_BREAK)
    return {
        "schema_version": 1,
        "workload_id": workload_id or Path(path).stem,
        "description": describe_trace_source(
            detected.value, name, max_output_tokens, len(requests)
        ),
        "clock": {"unit": "ms"},
        "policy": policy_data,
        "budgets": dict(budgets) if budgets is not None else dict(DEFAULT_TRACE_BUDGETS),
        "requests": requests,
        "fixture_only_hidden_truth": {"realized_output_tokens": realized},
    }


def import_trace(path: str | Path, **options: Any) -> WorkloadManifest:
    """A `WorkloadManifest` from a request trace (see `import_trace_json` for the options)."""
    data = import_trace_json(path, **options)
    return _manifest(data, SpecSource(file=str(path)))


# --------------------------------------------------------------------------- dispatch


def _load(
    path: str | Path, seed: int | None, display: str | None, trace_options: Mapping[str, Any]
) -> tuple[dict[str, Any], SpecSource]:
    p = Path(path)
    name = display if display is not None else str(path)
    if is_trace_path(p):
        data = import_trace_json(p, display=name, **trace_options)
        return data, SpecSource(file=name, base_dir=p.parent)
    if trace_options:
        raise InputError.at(
            "WORKLOAD.OPTION.UNUSED",
            f"trace options {', '.join(sorted(trace_options))} apply only to request traces"
            " (.csv, .jsonl)",
            name,
        )
    doc = load_document(p, display=name)
    src = SpecSource(file=doc.path, base_dir=p.resolve().parent, locate=doc.locate)
    data = doc.data
    if data.get("kind") == GENERATOR_KIND:
        # The generated manifest has no source text of its own: locate in the spec file only.
        return generate_json(data, seed, source=src), SpecSource(file=doc.path)
    if "requests" in data:
        return dict(data), src
    raise src.error(
        "WORKLOAD.UNKNOWN_INPUT",
        "neither a workload manifest (`requests`) nor a generator spec"
        " (`kind: workload-generator`)",
        "",
    )


def load_workload_json(
    path: str | Path,
    *,
    seed: int | None = None,
    display: str | None = None,
    **trace_options: Any,
) -> dict[str, Any]:
    """The manifest data (JSON-ready, hidden truth included) a workload input describes,
    checked like `load_workload` checks it."""
    data, src = _load(path, seed, display, trace_options)
    _manifest(data, src)
    return data


def load_workload(
    path: str | Path,
    *,
    seed: int | None = None,
    display: str | None = None,
    **trace_options: Any,
) -> WorkloadManifest:
    """A manifest file, a generator spec or a request trace, as a `WorkloadManifest`.

    `seed` overrides a generator spec's seed; `trace_options` (`fmt`, `max_output_tokens`,
    `policy`, `budgets`, `workload_id`, `limit`, `time_scale`, `id_prefix`) apply to CSV input.
    """
    data, src = _load(path, seed, display, trace_options)
    return _manifest(data, src)
