"""Frozen contract records (article 0x01A): workload, scheduler state, plan and result.

Each record is built by `from_json` from data that already passed its JSON Schema, and turns
back into the same JSON-ready mapping with `to_json`. Sequences are tuples. Records carry no
hidden truth and no physical-block fields except `WorkloadManifest.hidden_truth`, which is
fixture-only and dropped by `WorkloadManifest.online_projection()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

# The workload's records and the shared names live in `workload_records` (a replay imports
# only those); this module re-exports them, so every record is importable from here.
from cbaudit.contract.workload_records import (
    _PHASE_OF,
    DEFAULT_TIE_BREAK_KEY,
    TIE_BREAK_FIELDS,
    Budgets,
    Clock,
    DecisionId,
    Phase,
    PolicyIdentity,
    Queue,
    RequestDecl,
    Slo,
    TieBreak,
    TieBreakValue,
    WorkloadManifest,
    _freeze,
    _put,
    derive_phase,
    rebuild_rows,
    semantic_rows,
)

__all__ = [
    "DEFAULT_TIE_BREAK_KEY",
    "TIE_BREAK_FIELDS",
    "BudgetLedger",
    "Budgets",
    "Clock",
    "DecisionId",
    "Interval",
    "IterationPlan",
    "IterationResult",
    "NotSelected",
    "OutputEvent",
    "Phase",
    "PolicyIdentity",
    "Progress",
    "Queue",
    "QueueIntent",
    "RequestDecl",
    "RequestView",
    "ResultItem",
    "SchedulerState",
    "ServiceDebit",
    "Slo",
    "TerminalEvent",
    "TieBreak",
    "TieBreakValue",
    "WorkItem",
    "WorkloadManifest",
    "derive_phase",
    "rebuild_rows",
    "semantic_rows",
]


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
