"""Frozen contract records of the workload (article 0x01A), and the names every record uses.

The phases and queues, the frontier rules (`derive_phase`, `semantic_rows`), the tie-break and
the workload's declarations: what a replay needs without the state, plan and result records
(`cbaudit.contract.records` holds those, and re-exports everything here). Each record is built
by `from_json` from data that already passed its JSON Schema, and turns back into the same
JSON-ready mapping with `to_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any

DecisionId = int | str
TieBreakValue = int | str

TIE_BREAK_FIELDS: tuple[str, ...] = (
    "phase_rank",
    "priority_rank",
    "arrival_order",
    "request_id",
    "request_generation",
)


class Phase(StrEnum):
    """The derived work annotation of one selected interval.

    RECOMPUTE_CHUNK is the rebuild of a request that already emitted output but lost its
    computed rows (recompute preemption, article 0x0C): e >= 1 and c < p + e - 1.
    """

    PREFILL_CHUNK = "PREFILL_CHUNK"
    DECODE_ROW = "DECODE_ROW"
    RECOMPUTE_CHUNK = "RECOMPUTE_CHUNK"


_PHASE_OF = {p.value: p for p in Phase}
#: The tie-break a workload gets when it declares none (article 0x01A's reproducible order).
DEFAULT_TIE_BREAK_KEY = (
    "phase_rank",
    "priority_rank",
    "arrival_order",
    "request_id",
    "request_generation",
)
# module constants: reading an Enum member off its class costs an attribute lookup per use
_PREFILL = Phase.PREFILL_CHUNK
_DECODE = Phase.DECODE_ROW
_REBUILD = Phase.RECOMPUTE_CHUNK


# --------------------------------------------------------------------------- frontier rules
# The frontier arithmetic of one request, in one place: the contract checks, the replay
# engine's fast path and its executor all call these functions.


def derive_phase(p: int, e: int, c: int) -> Phase | None:
    """The only legal work for frontiers (p, e, c), or None when they are inconsistent.

    prefill: e = 0 and c < p; ordinary decode: e >= 1 and c = p + e - 1; rebuild after a
    recompute preemption: e >= 1 and c < p + e - 1. Every legal interval starts at c and ends
    at most at the logical length p + e (one row for decode).
    """
    if e == 0:
        return _PREFILL if c < p else None
    last = p + e - 1
    if c == last:
        return _DECODE
    if c < last:
        return _REBUILD
    return None


def semantic_rows(p: int, e: int, start: int, end: int, floor: int = 0) -> int:
    """Rows of the completed interval [start, end) that are semantic (fairness) service.

    With e >= 1 every row below p + e - 1 was computed before (the first token needs the whole
    prompt; each later token needs the row of the one before), so only the row at p + e - 1,
    the one that produces the next token, is service; rows below it are rebuild overhead. With
    e = 0 the frontiers cannot tell a first prefill from a re-prefill, so the view says it:
    `floor` (a view's `rebuild_floor`, 0 when absent) is how far the prompt had been computed
    before a recompute preemption discarded it, and only prompt rows at or above it are service.
    """
    if end <= start:
        return 0
    if e == 0:
        return end - max(start, floor) if end > floor else 0
    return max(0, end - max(start, p + e - 1))


def rebuild_rows(p: int, e: int, start: int, end: int, floor: int = 0) -> int:
    """Rows of the completed interval [start, end) that only rebuild K/V (recompute overhead)."""
    return max(0, end - start) - semantic_rows(p, e, start, end, floor)


class Queue(StrEnum):
    """Which scheduler queue a request view sits in."""

    WAITING = "waiting"
    RUNNING = "running"
    SUSPENDED = "suspended"
    FINISHED = "finished"


def _freeze(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


# --------------------------------------------------------------------------- workload


@dataclass(frozen=True, slots=True)
class TieBreak:
    """The declared deterministic order: key fields and the phase order giving phase_rank."""

    key: tuple[str, ...] = DEFAULT_TIE_BREAK_KEY
    phase_order: tuple[Phase, ...] = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TieBreak:
        return cls(
            key=tuple(data["key"]),
            phase_order=tuple(Phase(p) for p in data["phase_order"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {"key": list(self.key), "phase_order": [p.value for p in self.phase_order]}


@dataclass(frozen=True, slots=True)
class PolicyIdentity:
    """Which policy (and version) a workload declares; plans must carry the same identity."""

    policy_id: str
    policy_version: str
    tie_break: TieBreak = TieBreak()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PolicyIdentity:
        return cls(
            policy_id=data["policy_id"],
            policy_version=data["policy_version"],
            tie_break=TieBreak.from_json(data["tie_break"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "policy_id": self.policy_id,
            "policy_version": self.policy_version,
            "tie_break": self.tie_break.to_json(),
        }


@dataclass(frozen=True, slots=True)
class Budgets:
    """Per-iteration capacities; the optional KV fields belong to later loops."""

    token_budget: int
    sequence_budget: int
    kv_block_size: int | None = None
    kv_total_blocks: int | None = None
    long_prefill_token_threshold: int | None = None

    @property
    def paged(self) -> bool:
        """True when a KV block pool is declared."""
        return self.kv_block_size is not None and self.kv_total_blocks is not None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Budgets:
        return cls(
            token_budget=data["token_budget"],
            sequence_budget=data["sequence_budget"],
            kv_block_size=data.get("kv_block_size"),
            kv_total_blocks=data.get("kv_total_blocks"),
            long_prefill_token_threshold=data.get("long_prefill_token_threshold"),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "token_budget": self.token_budget,
            "sequence_budget": self.sequence_budget,
        }
        _put(out, "kv_block_size", self.kv_block_size)
        _put(out, "kv_total_blocks", self.kv_total_blocks)
        _put(out, "long_prefill_token_threshold", self.long_prefill_token_threshold)
        return out


@dataclass(frozen=True, slots=True)
class Clock:
    """The workload's time unit: ticks (optionally with their length) or milliseconds."""

    unit: str
    tick_ms: float | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Clock:
        return cls(unit=data["unit"], tick_ms=data.get("tick_ms"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"unit": self.unit}
        _put(out, "tick_ms", self.tick_ms)
        return out


@dataclass(frozen=True, slots=True)
class Slo:
    """Optional latency targets of one request, in milliseconds."""

    ttft_ms: float | None = None
    tbt_ms: float | None = None
    e2e_ms: float | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Slo:
        return cls(data.get("ttft_ms"), data.get("tbt_ms"), data.get("e2e_ms"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "ttft_ms", self.ttft_ms)
        _put(out, "tbt_ms", self.tbt_ms)
        _put(out, "e2e_ms", self.e2e_ms)
        return out


@dataclass(frozen=True, slots=True)
class RequestDecl:
    """One online request declaration."""

    request_id: str
    arrival: float
    prompt_tokens: int
    max_output_tokens: int
    request_generation: int = 0
    arrival_order: int | None = None
    client: str | None = None
    priority: int | None = None
    slo: Slo | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RequestDecl:
        slo = data.get("slo")
        return cls(
            request_id=data["request_id"],
            arrival=data["arrival"],
            prompt_tokens=data["prompt_tokens"],
            max_output_tokens=data["max_output_tokens"],
            request_generation=data.get("request_generation", 0),
            arrival_order=data.get("arrival_order"),
            client=data.get("client"),
            priority=data.get("priority"),
            slo=Slo.from_json(slo) if slo is not None else None,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "request_id": self.request_id,
            "request_generation": self.request_generation,
            "arrival": self.arrival,
            "prompt_tokens": self.prompt_tokens,
            "max_output_tokens": self.max_output_tokens,
        }
        _put(out, "arrival_order", self.arrival_order)
        _put(out, "client", self.client)
        _put(out, "priority", self.priority)
        if self.slo is not None:
            out["slo"] = self.slo.to_json()
        return out


@dataclass(frozen=True, slots=True)
class WorkloadManifest:
    """Declarations, policy identity, budgets and clock; hidden truth kept apart."""

    workload_id: str
    clock: Clock
    policy: PolicyIdentity
    budgets: Budgets
    requests: tuple[RequestDecl, ...]
    hidden_truth: Mapping[str, int] | None = (
        None  # fixture_only_hidden_truth.realized_output_tokens
    )
    description: str | None = None
    schema_version: int = 1
    by_id: Mapping[str, RequestDecl] = field(init=False, compare=False, repr=False)
    position_of: Mapping[str, int] = field(init=False, compare=False, repr=False)
    clients: frozenset[str] = field(init=False, compare=False, repr=False)  # those declared

    def __post_init__(self) -> None:
        index: dict[str, RequestDecl] = {}
        position: dict[str, int] = {}
        for i, req in enumerate(self.requests):
            index.setdefault(req.request_id, req)
            position.setdefault(req.request_id, i)
        object.__setattr__(self, "by_id", MappingProxyType(index))
        object.__setattr__(self, "position_of", MappingProxyType(position))
        clients = frozenset(r.client for r in self.requests if r.client is not None)
        object.__setattr__(self, "clients", clients)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkloadManifest:
        hidden = data.get("fixture_only_hidden_truth")
        realized = hidden.get("realized_output_tokens") if hidden is not None else None
        return cls(
            workload_id=data["workload_id"],
            clock=Clock.from_json(data["clock"]),
            policy=PolicyIdentity.from_json(data["policy"]),
            budgets=Budgets.from_json(data["budgets"]),
            requests=tuple(RequestDecl.from_json(r) for r in data["requests"]),
            hidden_truth=_freeze(realized) if realized is not None else None,
            description=data.get("description"),
            schema_version=data.get("schema_version", 1),
        )

    def online_projection(self) -> WorkloadManifest:
        """What every policy may see: the manifest with hidden truth removed."""
        return replace(self, hidden_truth=None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "workload_id": self.workload_id,
            "clock": self.clock.to_json(),
            "policy": self.policy.to_json(),
            "budgets": self.budgets.to_json(),
            "requests": [r.to_json() for r in self.requests],
        }
        _put(out, "description", self.description)
        if self.hidden_truth is not None:
            out["fixture_only_hidden_truth"] = {
                "realized_output_tokens": dict(sorted(self.hidden_truth.items()))
            }
        return out
