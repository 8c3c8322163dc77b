"""Frozen contract records (article 0x01A): workload, scheduler state, plan and result.

Each record is built by `from_json` from data that already passed its JSON Schema, and turns
back into the same JSON-ready mapping with `to_json`. Sequences are tuples. Records carry no
hidden truth and no physical-block fields except `WorkloadManifest.hidden_truth`, which is
fixture-only and dropped by `WorkloadManifest.online_projection()`.
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


# --------------------------------------------------------------------------- state


@dataclass(frozen=True, slots=True)
class RequestView:
    """The factual service view of one request generation at a scheduler cut (M5.1)."""

    request_id: str
    request_generation: int
    snapshot_version: int
    prompt_tokens: int  # p
    emitted_tokens: int  # e
    computed_tokens: int  # c
    committed_tokens: int  # k
    ready: bool
    terminal: bool
    queue: Queue
    readiness_reason: str | None = None
    priority: int | None = None
    arrival_order: int | None = None
    client: str | None = None
    # e = 0 only: prompt rows below it were computed before a recompute preemption discarded
    # them, so re-prefilling them is overhead, not service (None: nothing was discarded)
    rebuild_floor: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RequestView:
        return cls(
            request_id=data["request_id"],
            request_generation=data["request_generation"],
            snapshot_version=data["snapshot_version"],
            prompt_tokens=data["prompt_tokens"],
            emitted_tokens=data["emitted_tokens"],
            computed_tokens=data["computed_tokens"],
            committed_tokens=data["committed_tokens"],
            ready=data["ready"],
            terminal=data["terminal"],
            queue=Queue(data["queue"]),
            readiness_reason=data.get("readiness_reason"),
            priority=data.get("priority"),
            arrival_order=data.get("arrival_order"),
            client=data.get("client"),
            rebuild_floor=data.get("rebuild_floor"),
        )

    @property
    def logical_length(self) -> int:
        """Prompt plus emitted output: the authoritative logical stream length."""
        return self.prompt_tokens + self.emitted_tokens

    def derived_phase(self) -> Phase | None:
        """The only legal work for these frontiers, or None if they are inconsistent."""
        return derive_phase(self.prompt_tokens, self.emitted_tokens, self.computed_tokens)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "request_id": self.request_id,
            "request_generation": self.request_generation,
            "snapshot_version": self.snapshot_version,
            "prompt_tokens": self.prompt_tokens,
            "emitted_tokens": self.emitted_tokens,
            "computed_tokens": self.computed_tokens,
            "committed_tokens": self.committed_tokens,
            "ready": self.ready,
            "terminal": self.terminal,
            "queue": self.queue.value,
        }
        _put(out, "readiness_reason", self.readiness_reason)
        _put(out, "priority", self.priority)
        _put(out, "arrival_order", self.arrival_order)
        _put(out, "client", self.client)
        _put(out, "rebuild_floor", self.rebuild_floor)
        return out

    @property
    def service_floor(self) -> int:
        """The `floor` of `semantic_rows` for this view (0 when no rebuild floor is declared)."""
        return self.rebuild_floor or 0


@dataclass(frozen=True, slots=True)
class SchedulerState:
    """A versioned scheduler cut: request views plus completed-service counters."""

    workload_id: str
    decision_id: DecisionId
    state_version: int
    requests: tuple[RequestView, ...]
    monotonic_now: float | None = None
    completed_service: Mapping[str, int] | None = None
    schema_version: int = 1
    by_id: Mapping[str, RequestView] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        index: dict[str, RequestView] = {}
        for view in self.requests:
            index.setdefault(view.request_id, view)
        object.__setattr__(self, "by_id", MappingProxyType(index))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SchedulerState:
        service = data.get("completed_service")
        return cls(
            workload_id=data["workload_id"],
            decision_id=data["decision_id"],
            state_version=data["state_version"],
            requests=tuple(RequestView.from_json(v) for v in data["requests"]),
            monotonic_now=data.get("monotonic_now"),
            completed_service=_freeze(service) if service is not None else None,
            schema_version=data.get("schema_version", 1),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "workload_id": self.workload_id,
            "decision_id": self.decision_id,
            "state_version": self.state_version,
            "requests": [v.to_json() for v in self.requests],
        }
        _put(out, "monotonic_now", self.monotonic_now)
        if self.completed_service is not None:
            out["completed_service"] = dict(sorted(self.completed_service.items()))
        return out


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One selected request generation and its single interval [start, end)."""

    request_id: str
    request_generation: int
    snapshot_version: int
    start: int
    end: int
    phase: Phase
    positions: tuple[int, ...]
    tie_break_key: tuple[TieBreakValue, ...]

    @property
    def width(self) -> int:
        return self.end - self.start

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkItem:
        return cls(
            request_id=data["request_id"],
            request_generation=data["request_generation"],
            snapshot_version=data["snapshot_version"],
            start=data["start"],
            end=data["end"],
            phase=_PHASE_OF[data["phase"]],
            positions=tuple(data["positions"]),
            tie_break_key=tuple(data["tie_break_key"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "request_generation": self.request_generation,
            "snapshot_version": self.snapshot_version,
            "start": self.start,
            "end": self.end,
            "phase": self.phase.value,
            "positions": list(self.positions),
            "tie_break_key": list(self.tie_break_key),
        }


@dataclass(frozen=True, slots=True)
class BudgetLedger:
    """What the plan says it used of each budget."""

    token_budget: int
    tokens_used: int
    sequence_budget: int
    sequences_used: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BudgetLedger:
        return cls(
            data["token_budget"],
            data["tokens_used"],
            data["sequence_budget"],
            data["sequences_used"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "token_budget": self.token_budget,
            "tokens_used": self.tokens_used,
            "sequence_budget": self.sequence_budget,
            "sequences_used": self.sequences_used,
        }


@dataclass(frozen=True, slots=True)
class NotSelected:
    """Why a request the policy saw was left out of this plan."""

    request_id: str
    reason: str
    request_generation: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NotSelected:
        return cls(data["request_id"], data["reason"], data.get("request_generation"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request_id": self.request_id}
        _put(out, "request_generation", self.request_generation)
        out["reason"] = self.reason
        return out


@dataclass(frozen=True, slots=True)
class QueueIntent:
    """A queue transition the policy intends (admit, suspend, ...); not checked in Loop 2."""

    request_id: str
    action: str
    request_generation: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueueIntent:
        return cls(data["request_id"], data["action"], data.get("request_generation"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request_id": self.request_id}
        _put(out, "request_generation", self.request_generation)
        out["action"] = self.action
        return out


@dataclass(frozen=True, slots=True)
class IterationPlan:
    """Versioned policy output for one decision."""

    decision_id: DecisionId
    input_state_version: int
    policy_id: str
    policy_version: str
    selected: tuple[WorkItem, ...]
    budget_ledger: BudgetLedger
    not_selected: tuple[NotSelected, ...] = ()
    queue_intent: tuple[QueueIntent, ...] = ()
    schema_version: int = 1

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IterationPlan:
        return cls(
            decision_id=data["decision_id"],
            input_state_version=data["input_state_version"],
            policy_id=data["policy_id"],
            policy_version=data["policy_version"],
            selected=tuple(WorkItem.from_json(w) for w in data["selected"]),
            budget_ledger=BudgetLedger.from_json(data["budget_ledger"]),
            not_selected=tuple(NotSelected.from_json(n) for n in data.get("not_selected", ())),
            queue_intent=tuple(QueueIntent.from_json(q) for q in data.get("queue_intent", ())),
            schema_version=data.get("schema_version", 1),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "decision_id": self.decision_id,
            "input_state_version": self.input_state_version,
            "policy_id": self.policy_id,
            "policy_version": self.policy_version,
            "selected": [w.to_json() for w in self.selected],
            "budget_ledger": self.budget_ledger.to_json(),
            "not_selected": [n.to_json() for n in self.not_selected],
        }
        if self.queue_intent:
            out["queue_intent"] = [q.to_json() for q in self.queue_intent]
        return out


# --------------------------------------------------------------------------- result


@dataclass(frozen=True, slots=True)
class Interval:
    """A half-open token interval [start, end)."""

    start: int
    end: int

    @property
    def width(self) -> int:
        return self.end - self.start

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Interval:
        return cls(data["start"], data["end"])

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end}


@dataclass(frozen=True, slots=True)
class Progress:
    """The frontiers of one request before or after an iteration."""

    emitted_tokens: int
    computed_tokens: int
    committed_tokens: int
    logical_length: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Progress:
        return cls(
            data["emitted_tokens"],
            data["computed_tokens"],
            data["committed_tokens"],
            data.get("logical_length"),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "emitted_tokens": self.emitted_tokens,
            "computed_tokens": self.computed_tokens,
            "committed_tokens": self.committed_tokens,
        }
        _put(out, "logical_length", self.logical_length)
        return out


@dataclass(frozen=True, slots=True)
class ResultItem:
    """Planned vs completed interval of one selected request, with its progress."""

    request_id: str
    request_generation: int
    snapshot_version: int
    planned: Interval
    completed: Interval | None
    before: Progress
    after: Progress
    failure: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResultItem:
        done = data["completed"]
        return cls(
            request_id=data["request_id"],
            request_generation=data["request_generation"],
            snapshot_version=data["snapshot_version"],
            planned=Interval.from_json(data["planned"]),
            completed=Interval.from_json(done) if done is not None else None,
            before=Progress.from_json(data["before"]),
            after=Progress.from_json(data["after"]),
            failure=data.get("failure"),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "request_id": self.request_id,
            "request_generation": self.request_generation,
            "snapshot_version": self.snapshot_version,
            "planned": self.planned.to_json(),
            "completed": self.completed.to_json() if self.completed is not None else None,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
        }
        _put(out, "failure", self.failure)
        return out


@dataclass(frozen=True, slots=True)
class OutputEvent:
    """One output token published: its 1-based index in the request's output stream."""

    request_id: str
    request_generation: int
    output_index: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OutputEvent:
        return cls(data["request_id"], data["request_generation"], data["output_index"])

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "request_generation": self.request_generation,
            "output_index": self.output_index,
        }


@dataclass(frozen=True, slots=True)
class TerminalEvent:
    """A request generation finished in this iteration (eos, max tokens, cancel, failure)."""

    request_id: str
    request_generation: int
    reason: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TerminalEvent:
        return cls(data["request_id"], data["request_generation"], data["reason"])

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "request_generation": self.request_generation,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class ServiceDebit:
    """Completed token service charged to one client."""

    client: str
    tokens: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServiceDebit:
        return cls(data["client"], data["tokens"])

    def to_json(self) -> dict[str, Any]:
        return {"client": self.client, "tokens": self.tokens}


@dataclass(frozen=True, slots=True)
class IterationResult:
    """What execution returned for one plan; only this advances service state."""

    decision_id: DecisionId
    input_state_version: int
    items: tuple[ResultItem, ...]
    output_events: tuple[OutputEvent, ...] = ()
    terminal_events: tuple[TerminalEvent, ...] = ()
    service_debits: tuple[ServiceDebit, ...] = ()
    schema_version: int = 1

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IterationResult:
        return cls(
            decision_id=data["decision_id"],
            input_state_version=data["input_state_version"],
            items=tuple(ResultItem.from_json(i) for i in data["items"]),
            output_events=tuple(OutputEvent.from_json(o) for o in data["output_events"]),
            terminal_events=tuple(
                TerminalEvent.from_json(t) for t in data.get("terminal_events", ())
            ),
            service_debits=tuple(ServiceDebit.from_json(s) for s in data["service_debits"]),
            schema_version=data.get("schema_version", 1),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "decision_id": self.decision_id,
            "input_state_version": self.input_state_version,
            "items": [i.to_json() for i in self.items],
            "output_events": [o.to_json() for o in self.output_events],
            "terminal_events": [t.to_json() for t in self.terminal_events],
            "service_debits": [s.to_json() for s in self.service_debits],
        }
