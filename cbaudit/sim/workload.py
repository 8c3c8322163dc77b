"""The replay engine's view of a WorkloadManifest: frozen records, hidden truth kept apart.

This is a thin adapter over the manifest shape agreed across helpers (`workload-manifest`).
When the shared schema is installed the manifest is validated against it first; the checks
here cover what the engine itself relies on and always run. The online projection
(`Workload.online()`) drops `fixture_only_hidden_truth`; only the simulated executor reads it.
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, overload

from cbaudit.contract.workload_records import (
    DEFAULT_TIE_BREAK_KEY,
    Budgets,
    Phase,
    PolicyIdentity,
    TieBreak,
)
from cbaudit.contract.workload_records import RequestDecl as ContractDecl
from cbaudit.io.loader import Document, load_document
from cbaudit.model import Finding, InputError, Location
from cbaudit.sim.importers import is_trace_path

WORKLOAD_SCHEMA = "workload-manifest"
DEFAULT_PHASE_ORDER = tuple(p.value for p in TieBreak().phase_order)


class ClockUnit(StrEnum):
    """Unit of arrival times and of the replay clock."""

    TICK = "tick"
    MS = "ms"


@dataclass(frozen=True, slots=True)
class Clock:
    unit: ClockUnit = ClockUnit.TICK
    tick_ms: float | None = None

    def to_ms(self, value: float) -> float | None:
        """A duration in clock units as milliseconds (None when ticks have no declared ms)."""
        if self.unit is ClockUnit.MS:
            return value
        return None if self.tick_ms is None else value * self.tick_ms


@dataclass(frozen=True, slots=True)
class RequestDecl:
    """One online request declaration (what every policy may see)."""

    request_id: str
    arrival: float
    arrival_order: int
    prompt_tokens: int
    max_output_tokens: int
    request_generation: int = 0
    client: str | None = None
    priority: int = 0
    slo: Mapping[str, float] | None = None


class TraceRequests(Sequence[RequestDecl]):
    """A plain trace's declarations as C arrays, each `RequestDecl` made on access.

    Row i is request `<prefix>-NNNNNN` (i, at least six digits) with arrival order i, no
    client, priority or SLO, and `max_output_tokens` = its realized output (`TraceRealized`).
    An arrival reads back as the value it was read as: an int when integral, else a float
    (`trace_requests` only builds one where a C double holds both exactly). About 24 bytes a
    request instead of a record, an id string, a number object per field and a dict entry.
    """

    __slots__ = ("_dash", "arrival", "output", "prefix", "prompt")

    def __init__(self, prefix: str, arrival: array[float], prompt: array[int], output: array[int]):
        self.prefix = prefix
        self._dash = prefix + "-"
        self.arrival = arrival  # ms, as C doubles (comparisons and arithmetic need no int)
        self.prompt = prompt
        self.output = output

    def __len__(self) -> int:
        return len(self.arrival)

    def request_id(self, i: int) -> str:
        return f"{self.prefix}-{i:06d}"

    def arrival_at(self, i: int) -> int | float:
        """Row i's arrival as read: an int when integral."""
        a = self.arrival[i]
        return int(a) if a.is_integer() else a

    def index_of(self, rid: object) -> int | None:
        """The row of request id `rid` (None: no such request)."""
        dash = self._dash
        if type(rid) is not str or not rid.startswith(dash):
            return None
        digits = rid[len(dash) :]
        # `request_id`'s spelling, tested without making the id again (`{i:06d}`: ASCII digits,
        # six, or more without a leading zero; no sign, space, "_" or other digits); the test
        # `test_index_of_takes_request_ids_spelling_only` holds this test to `request_id`
        n = len(digits)
        if n < 6 or not digits.isdigit() or not digits.isascii() or (n > 6 and digits[0] == "0"):
            return None
        i = int(digits)
        return i if i < len(self.arrival) else None

    def contract_decl(self, i: int, rid: str) -> ContractDecl:
        """Row i (request `rid`) as the contract's declaration record, without a record of
        this module's in between (`contract_view.contract_decl` of `self[i]`)."""
        return ContractDecl(
            request_id=rid,
            arrival=self.arrival_at(i),
            prompt_tokens=self.prompt[i],
            max_output_tokens=self.output[i],
            request_generation=0,
            arrival_order=i,
            client=None,
            priority=0,
            slo=None,
        )

    def _decl(self, i: int) -> RequestDecl:
        return RequestDecl(
            self.request_id(i), self.arrival_at(i), i, self.prompt[i], self.output[i]
        )

    @overload
    def __getitem__(self, i: int) -> RequestDecl: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[RequestDecl, ...]: ...
    def __getitem__(self, i: int | slice) -> RequestDecl | tuple[RequestDecl, ...]:
        n = len(self.arrival)
        if isinstance(i, slice):
            return tuple(self._decl(j) for j in range(*i.indices(n)))
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._decl(i)

    def __iter__(self) -> Iterator[RequestDecl]:
        return (self._decl(i) for i in range(len(self.arrival)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TraceRequests):
            return (self.prefix, self.arrival, self.prompt, self.output) == (
                other.prefix,
                other.arrival,
                other.prompt,
                other.output,
            )
        if isinstance(other, Sequence):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))


class TraceRealized(Mapping[str, int]):
    """A plain trace's hidden truth: every request's realized output (its `output` column)."""

    __slots__ = ("_rows",)

    def __init__(self, rows: TraceRequests) -> None:
        self._rows = rows

    def __getitem__(self, rid: str) -> int:
        i = self._rows.index_of(rid)
        if i is None:
            raise KeyError(rid)
        return self._rows.output[i]

    def __contains__(self, rid: object) -> bool:
        return self._rows.index_of(rid) is not None

    def __iter__(self) -> Iterator[str]:
        rows = self._rows
        return (rows.request_id(i) for i in range(len(rows)))

    def __len__(self) -> int:
        return len(self._rows)


class TraceIndex(Mapping[str, int]):
    """A plain trace's request id -> row (`WorkloadManifest.position_of`), without a dict."""

    __slots__ = ("_rows",)

    def __init__(self, rows: TraceRequests) -> None:
        self._rows = rows

    def __getitem__(self, rid: str) -> int:
        i = self._rows.index_of(rid)
        if i is None:
            raise KeyError(rid)
        return i

    def get(self, rid: str, default: Any = None) -> Any:
        i = self._rows.index_of(rid)
        return default if i is None else i

    def __contains__(self, rid: object) -> bool:
        return self._rows.index_of(rid) is not None

    def __iter__(self) -> Iterator[str]:
        rows = self._rows
        return (rows.request_id(i) for i in range(len(rows)))

    def __len__(self) -> int:
        return len(self._rows)


def int_array(values: Iterable[int]) -> array[int]:
    """`values` as C ints (4 bytes each), or C long longs when one does not fit."""
    seq = values if isinstance(values, Sequence) else list(values)
    try:
        return array("i", seq)
    except OverflowError:
        return array("q", seq)


def trace_requests(
    prefix: str, arrivals: Sequence[int | float], prompts: Sequence[int], outputs: Sequence[int]
) -> TraceRequests | None:
    """The columns of a plain trace's rows, or None when a C double or a C long long cannot
    give a value back exactly as it is (an int arrival of 2**53 or more, an integral float
    arrival, a token count of 2**63 or more): the caller then keeps records."""
    for a in arrivals:
        if (a >= 2**53) if isinstance(a, int) else a.is_integer():
            return None
    try:
        return TraceRequests(prefix, array("d", arrivals), int_array(prompts), int_array(outputs))
    except OverflowError:
        return None


@dataclass(frozen=True)
class Workload:
    """A loaded manifest. `requests` are sorted by (arrival, arrival_order)."""

    workload_id: str
    clock: Clock
    policy: PolicyIdentity
    budgets: Budgets
    requests: Sequence[RequestDecl]  # a tuple of records, or `TraceRequests`
    hidden_realized: Mapping[str, int] | None = None
    source: str = "<workload>"
    schema_version: int = 1

    def online(self) -> Workload:
        """The online projection: the same workload without fixture-only hidden truth."""
        return replace(self, hidden_realized=None)

    def columns(self) -> tuple[Sequence[float], Sequence[int], Sequence[int], array[int]]:
        """Every request's arrival, prompt tokens, max_output_tokens and realized output, as
        columns (a plain trace's own arrays; lists of the records' fields otherwise)."""
        reqs = self.requests
        if isinstance(reqs, TraceRequests) and isinstance(self.hidden_realized, TraceRealized):
            return reqs.arrival, reqs.prompt, reqs.output, array(reqs.output.typecode, reqs.output)
        return (
            [d.arrival for d in reqs],
            [d.prompt_tokens for d in reqs],
            [d.max_output_tokens for d in reqs],
            int_array([self.realized_output(d) for d in reqs]),
        )

    def position_index(self) -> Mapping[str, int]:
        """Request id -> the first position of that id in `requests`."""
        reqs = self.requests
        if isinstance(reqs, TraceRequests):
            return TraceIndex(reqs)
        index: dict[str, int] = {}
        for i, d in enumerate(reqs):
            index.setdefault(d.request_id, i)
        return index

    def realized_output(self, request: RequestDecl) -> int:
        """Executor only: the realized output length (max_output_tokens when undeclared)."""
        if self.hidden_realized is None:
            return request.max_output_tokens
        return self.hidden_realized.get(request.request_id, request.max_output_tokens)

    def with_budgets(self, overrides: Mapping[str, Any]) -> Workload:
        """A copy with some budget fields replaced (validated like the manifest's)."""
        data = {**self.budgets.to_json(), **dict(overrides)}
        return replace(self, budgets=_budgets(data, self.source, "/budgets"))

    def with_policy(self, identity: PolicyIdentity) -> Workload:
        return replace(self, policy=identity)

    def iter_request_json(self) -> Iterator[dict[str, Any]]:
        """Each request declaration as manifest JSON, one at a time."""
        for r in self.requests:
            item: dict[str, Any] = {
                "request_id": r.request_id,
                "request_generation": r.request_generation,
                "arrival": r.arrival,
                "arrival_order": r.arrival_order,
                "prompt_tokens": r.prompt_tokens,
                "max_output_tokens": r.max_output_tokens,
                "priority": r.priority,
            }
            if r.client is not None:
                item["client"] = r.client
            if r.slo is not None:
                item["slo"] = dict(r.slo)
            yield item

    def to_manifest(
        self, *, include_hidden: bool = False, with_requests: bool = True
    ) -> dict[str, Any]:
        """JSON-ready manifest (online projection unless `include_hidden`; with an empty
        request list unless `with_requests`: `iter_request_json` gives them one at a time)."""
        clock: dict[str, Any] = {"unit": self.clock.unit.value}
        if self.clock.tick_ms is not None:
            clock["tick_ms"] = self.clock.tick_ms
        reqs = list(self.iter_request_json()) if with_requests else []
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "workload_id": self.workload_id,
            "clock": clock,
            "policy": self.policy.to_json(),
            "budgets": self.budgets.to_json(),
            "requests": reqs,
        }
        if include_hidden and self.hidden_realized is not None:
            out["fixture_only_hidden_truth"] = {
                "realized_output_tokens": dict(self.hidden_realized)
            }
        return out


# ---------------------------------------------------------------------------------------------
# loading


def _err(code: str, message: str, source: str, pointer: str) -> InputError:
    return InputError.at(code, message, source, pointer=pointer)


def _int(value: Any, source: str, pointer: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _err("WORKLOAD.FIELD.TYPE", f"expected an integer, got {value!r}", source, pointer)
    if value < minimum:
        raise _err("WORKLOAD.FIELD.RANGE", f"expected >= {minimum}, got {value}", source, pointer)
    return value


def _num(value: Any, source: str, pointer: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _err(
            "WORKLOAD.FIELD.TYPE", f"expected a finite number, got {value!r}", source, pointer
        )
    if value < 0:
        raise _err("WORKLOAD.FIELD.RANGE", f"expected >= 0, got {value}", source, pointer)
    return value


def _str(value: Any, source: str, pointer: str) -> str:
    if not isinstance(value, str) or not value:
        raise _err(
            "WORKLOAD.FIELD.TYPE", f"expected a non-empty string, got {value!r}", source, pointer
        )
    return value


def _map(value: Any, source: str, pointer: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _err("WORKLOAD.FIELD.TYPE", f"expected a mapping, got {value!r}", source, pointer)
    return value


def _opt_int(
    data: Mapping[str, Any], key: str, source: str, pointer: str, minimum: int
) -> int | None:
    if key not in data or data[key] is None:
        return None
    return _int(data[key], source, f"{pointer}/{key}", minimum=minimum)


_BUDGET_KEYS = tuple(f.name for f in fields(Budgets))


def _budgets(data: Any, source: str, pointer: str) -> Budgets:
    b = _map(data, source, pointer)
    for key in b:
        if key not in _BUDGET_KEYS:
            raise _err(
                "WORKLOAD.FIELD.UNKNOWN",
                f"unknown budget {key!r} (known: {', '.join(_BUDGET_KEYS)})",
                source,
                f"{pointer}/{key}",
            )
    for key in ("token_budget", "sequence_budget"):
        if key not in b:
            raise _err("WORKLOAD.FIELD.MISSING", f"budgets need {key}", source, pointer)
    budgets = Budgets(
        token_budget=_int(b["token_budget"], source, f"{pointer}/token_budget", minimum=1),
        sequence_budget=_int(b["sequence_budget"], source, f"{pointer}/sequence_budget", minimum=1),
        kv_block_size=_opt_int(b, "kv_block_size", source, pointer, 1),
        kv_total_blocks=_opt_int(b, "kv_total_blocks", source, pointer, 0),
        long_prefill_token_threshold=_opt_int(
            b, "long_prefill_token_threshold", source, pointer, 0
        ),
    )
    if (budgets.kv_block_size is None) != (budgets.kv_total_blocks is None):
        raise _err(
            "WORKLOAD.KV.INCOMPLETE",
            "kv_block_size and kv_total_blocks must be declared together",
            source,
            pointer,
        )
    return budgets


def _policy(data: Any, source: str, pointer: str) -> PolicyIdentity:
    p = _map(data, source, pointer)
    tb = p.get("tie_break") or {}
    tb = _map(tb, source, f"{pointer}/tie_break")
    key = tuple(tb.get("key", DEFAULT_TIE_BREAK_KEY))
    order = tuple(tb.get("phase_order", DEFAULT_PHASE_ORDER))
    phases = []
    for i, o in enumerate(order):
        if o not in DEFAULT_PHASE_ORDER and o != Phase.RECOMPUTE_CHUNK.value:
            raise _err(
                "WORKLOAD.FIELD.RANGE",
                f"{o!r} is not a phase ({', '.join(p.value for p in Phase)})",
                source,
                f"{pointer}/tie_break/phase_order/{i}",
            )
        phases.append(Phase(o))
    return PolicyIdentity(
        policy_id=_str(p.get("policy_id"), source, f"{pointer}/policy_id"),
        policy_version=_str(p.get("policy_version"), source, f"{pointer}/policy_version"),
        tie_break=TieBreak(key=tuple(str(k) for k in key), phase_order=tuple(phases)),
    )


def workload_from_data(data: Any, source: str = "<workload>") -> Workload:
    """Build a Workload from parsed manifest data; InputError (located) when unusable."""
    top = _map(data, source, "")
    for key in ("workload_id", "clock", "budgets", "requests"):
        if key not in top:
            raise _err("WORKLOAD.FIELD.MISSING", f"manifest needs {key}", source, "")
    clock = _clock(top["clock"], source)
    policy = (
        _policy(top["policy"], source, "/policy")
        if "policy" in top
        else PolicyIdentity("unspecified", "0")
    )
    budgets = _budgets(top["budgets"], source, "/budgets")
    decls = _requests(top["requests"], source)
    hidden: dict[str, int] | None = None
    if "fixture_only_hidden_truth" in top:
        hidden = _hidden_truth(top["fixture_only_hidden_truth"], decls, source)
    version = top.get("schema_version", 1)
    return Workload(
        workload_id=_str(top["workload_id"], source, "/workload_id"),
        clock=clock,
        policy=policy,
        budgets=budgets,
        requests=tuple(decls),
        hidden_realized=hidden,
        source=source,
        schema_version=version if isinstance(version, int) else 1,
    )


def _clock(data: Any, source: str) -> Clock:
    clock_data = _map(data, source, "/clock")
    unit_raw = clock_data.get("unit", "tick")
    if unit_raw not in ("tick", "ms"):
        raise _err(
            "WORKLOAD.CLOCK.UNIT",
            f"clock unit {unit_raw!r} is not tick or ms",
            source,
            "/clock/unit",
        )
    tick_ms = clock_data.get("tick_ms")
    if tick_ms is not None:
        tick_ms = _num(tick_ms, source, "/clock/tick_ms")
    return Clock(ClockUnit(unit_raw), tick_ms)


def _requests(raw_requests: Any, source: str) -> list[RequestDecl]:
    """The declarations, sorted by (arrival, arrival_order); ids and orders unique, and
    arrival orders consistent with arrival times."""
    if not isinstance(raw_requests, list):
        raise _err("WORKLOAD.FIELD.TYPE", "requests must be a list", source, "/requests")
    decls: list[RequestDecl] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_requests):
        ptr = f"/requests/{i}"
        r = _map(raw, source, ptr)
        rid = _str(r.get("request_id"), source, f"{ptr}/request_id")
        if rid in seen:
            raise _err(
                "WORKLOAD.REQUEST.DUPLICATE",
                f"request_id {rid!r} already declared at /requests/{seen[rid]}",
                source,
                f"{ptr}/request_id",
            )
        seen[rid] = i
        decls.append(_request(r, rid, i, source))
    orders = [d.arrival_order for d in decls]
    if len(set(orders)) != len(orders):
        raise _err(
            "WORKLOAD.ARRIVAL_ORDER.DUPLICATE",
            "arrival_order values must be unique",
            source,
            "/requests",
        )
    decls.sort(key=lambda d: (d.arrival, d.arrival_order))
    for a, b in itertools.pairwise(decls):
        if a.arrival_order > b.arrival_order and a.arrival < b.arrival:
            raise _err(
                "WORKLOAD.ARRIVAL_ORDER.INCONSISTENT",
                f"{b.request_id} arrives after {a.request_id} but has a smaller arrival_order",
                source,
                "/requests",
            )
    return decls


def _request(r: Mapping[str, Any], rid: str, i: int, source: str) -> RequestDecl:
    """Declaration `i` (request `rid`), its fields checked where they are read."""
    ptr = f"/requests/{i}"
    for key in ("arrival", "prompt_tokens", "max_output_tokens"):
        if key not in r:
            raise _err("WORKLOAD.FIELD.MISSING", f"request needs {key}", source, ptr)
    priority = r.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise _err("WORKLOAD.FIELD.TYPE", "priority must be an integer", source, f"{ptr}/priority")
    client = r.get("client")
    if client is not None:
        client = _str(client, source, f"{ptr}/client")
    slo = r.get("slo")
    if slo is not None:
        slo = {
            str(k): _num(v, source, f"{ptr}/slo/{k}")
            for k, v in _map(slo, source, f"{ptr}/slo").items()
        }
    return RequestDecl(
        request_id=rid,
        arrival=_num(r["arrival"], source, f"{ptr}/arrival"),
        arrival_order=_int(r["arrival_order"], source, f"{ptr}/arrival_order", minimum=0)
        if "arrival_order" in r
        else i,
        prompt_tokens=_int(r["prompt_tokens"], source, f"{ptr}/prompt_tokens", minimum=1),
        max_output_tokens=_int(
            r["max_output_tokens"], source, f"{ptr}/max_output_tokens", minimum=1
        ),
        request_generation=_opt_int(r, "request_generation", source, ptr, 0) or 0,
        client=client,
        priority=priority,
        slo=slo,
    )


def _hidden_truth(data: Any, decls: list[RequestDecl], source: str) -> dict[str, int]:
    """The realized output lengths: declared requests only, each within its cap."""
    h = _map(data, source, "/fixture_only_hidden_truth")
    realized = _map(
        h.get("realized_output_tokens", {}),
        source,
        "/fixture_only_hidden_truth/realized_output_tokens",
    )
    by_id = {d.request_id: d for d in decls}
    hidden: dict[str, int] = {}
    for rid, value in realized.items():
        ptr = f"/fixture_only_hidden_truth/realized_output_tokens/{rid}"
        if rid not in by_id:
            raise _err("WORKLOAD.HIDDEN_TRUTH.UNKNOWN_REQUEST", f"no request {rid!r}", source, ptr)
        n = _int(value, source, ptr, minimum=1)
        if n > by_id[rid].max_output_tokens:
            raise _err(
                "WORKLOAD.HIDDEN_TRUTH.RANGE",
                f"realized {n} exceeds max_output_tokens {by_id[rid].max_output_tokens}",
                source,
                ptr,
            )
        hidden[str(rid)] = n
    return hidden


def _schema_findings(doc: Document) -> list[Finding]:
    from cbaudit.io.schemas import list_schemas, validate

    if WORKLOAD_SCHEMA not in list_schemas():
        return []
    return validate(doc.data, WORKLOAD_SCHEMA, file=doc.path, locate=doc.locate)


def load_workload(
    path: str | Path, *, display: str | None = None, seed: int | None = None
) -> Workload:
    """Load any workload input and adapt it for the engine.

    A manifest (explicit requests) is schema-checked and adapted directly; a request trace
    (`.csv` in the Splitwise/Vidur, Azure or BurstGPT format, or Mooncake's `.jsonl`) or a
    generator spec (`kind: workload-generator`)
    is expanded into a manifest first by `cbaudit.sim.workload_gen` (`seed` overrides a
    generator's own seed).
    """
    name = display if display is not None else str(path)
    if is_trace_path(path):
        return _from_trace(path, name) or _from_expanded(path, name, seed)
    doc = load_document(path, display=display)
    if isinstance(doc.data, dict) and doc.data.get("kind") == "workload-generator":
        return _from_expanded(path, name, seed)
    findings = _schema_findings(doc)
    if findings:
        raise InputError(findings)
    try:
        return workload_from_data(doc.data, doc.path)
    except InputError as err:
        located = [
            Finding(
                f.code,
                f.message,
                f.severity,
                doc.locate(f.location.pointer or "")
                if f.location.pointer is not None
                else Location(file=doc.path),
            )
            for f in err.findings
        ]
        raise InputError(located) from None


def _from_trace(path: str | Path, name: str) -> Workload | None:
    """A plain trace straight to a Workload, without the manifest JSON in between.

    The same workload `_from_expanded` builds from the imported manifest (defaults: policy,
    budgets, `<format>-NNNNNN` ids, arrival order = row order, max_output_tokens = the realized
    length), field for field and type for type; None when the file is not plain
    (`importers.read_plain_trace`) or its name is no manifest id: the manifest path then reads
    it and refuses what it refuses, located, as before.
    """
    from cbaudit.sim.importers import DEFAULT_TRACE_BUDGETS, DEFAULT_TRACE_POLICY, read_plain_trace

    workload_id = Path(path).stem
    if not 1 <= len(workload_id) <= 256:  # the manifest schema's id
        return None
    table = read_plain_trace(path, display=name)
    if table is None:
        return None
    prefix = table.format.value
    # arrivals do not decrease (read_plain_trace checked them exactly): already in
    # (arrival, arrival_order) order, the order `_requests` sorts into
    requests: Sequence[RequestDecl] | None = trace_requests(
        prefix, table.arrival_ms, table.prompt_tokens, table.output_tokens
    )
    hidden: Mapping[str, int]
    if isinstance(requests, TraceRequests):
        hidden = TraceRealized(requests)
    else:
        decls = tuple(
            RequestDecl(f"{prefix}-{i:06d}", arrival, i, prompt, output)
            for i, (arrival, prompt, output) in enumerate(
                zip(table.arrival_ms, table.prompt_tokens, table.output_tokens, strict=True)
            )
        )
        hidden = {d.request_id: d.max_output_tokens for d in decls}
        requests = decls
    return Workload(
        workload_id=workload_id,
        clock=Clock(ClockUnit.MS),
        policy=_policy(DEFAULT_TRACE_POLICY, name, "/policy"),
        budgets=_budgets(dict(DEFAULT_TRACE_BUDGETS), name, "/budgets"),
        requests=requests,
        hidden_realized=hidden,
        source=name,
    )


def _from_expanded(path: str | Path, name: str, seed: int | None) -> Workload:
    from cbaudit.sim.workload_gen import load_workload_json

    return workload_from_data(load_workload_json(path, seed=seed, display=name), name)
