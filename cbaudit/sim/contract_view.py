"""The contract's view of a replay's workload, one declaration at a time.

The contract validator reads declarations as the contract's `RequestDecl` records, by request
id (`by_id`), by position (`requests`, `position_of`). A replay's `Workload` already holds
every declaration; a second full set of records (and two more dicts over them) would double
what a long workload costs. Here `requests` and `by_id` make each record when it is asked for,
the same record `RequestDecl.from_json` makes of the declaration's manifest JSON; `by_id` keeps
the last thousand or so it made (the live requests'), the live validator keeps those of the
live requests itself and drops them when they finish. The only table over every request is the
id -> position index, whose keys and values are the workload's own id strings and the engine's
own request indices.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import overload

from cbaudit.contract.workload_records import RequestDecl, Slo, WorkloadManifest
from cbaudit.sim.workload import RequestDecl as SimDecl
from cbaudit.sim.workload import TraceRequests, Workload


def contract_decl(d: SimDecl) -> RequestDecl:
    """`RequestDecl.from_json` of `d`'s manifest JSON (`Workload.iter_request_json`), made
    without the JSON."""
    return RequestDecl(
        request_id=d.request_id,
        arrival=d.arrival,
        prompt_tokens=d.prompt_tokens,
        max_output_tokens=d.max_output_tokens,
        request_generation=d.request_generation,
        arrival_order=d.arrival_order,
        client=d.client,
        priority=d.priority,
        slo=Slo.from_json(d.slo) if d.slo is not None else None,
    )


class ContractRequests(Sequence[RequestDecl]):
    """The declarations in workload order, each made on access."""

    __slots__ = ("_decls",)

    def __init__(self, decls: Sequence[SimDecl]) -> None:
        self._decls = decls

    def __len__(self) -> int:
        return len(self._decls)

    @overload
    def __getitem__(self, i: int) -> RequestDecl: ...
    @overload
    def __getitem__(self, i: slice) -> list[RequestDecl]: ...
    def __getitem__(self, i: int | slice) -> RequestDecl | list[RequestDecl]:
        if isinstance(i, slice):
            return [contract_decl(d) for d in self._decls[i]]
        return contract_decl(self._decls[i])

    def __iter__(self) -> Iterator[RequestDecl]:
        return (contract_decl(d) for d in self._decls)


# records kept for the ids asked for most recently (the live requests'), then all dropped
_RECENT = 1024


class ContractById(Mapping[str, RequestDecl]):
    """The declarations by request id, each made on access (the last `_RECENT` kept)."""

    __slots__ = ("_decls", "_index", "_recent")

    def __init__(self, decls: Sequence[SimDecl], index: Mapping[str, int]) -> None:
        self._decls = decls
        self._index = index
        self._recent: dict[str, RequestDecl] = {}

    def __getitem__(self, rid: str) -> RequestDecl:
        decl = self.get(rid)
        if decl is None:
            raise KeyError(rid)
        return decl

    def get(self, rid: str, default: RequestDecl | None = None) -> RequestDecl | None:  # type: ignore[override]
        recent = self._recent
        decl = recent.get(rid)
        if decl is not None:
            return decl
        i = self._index.get(rid)
        if i is None:
            return default
        if len(recent) >= _RECENT:
            recent.clear()
        decls = self._decls
        decl = recent[rid] = (
            decls.contract_decl(i, rid)
            if isinstance(decls, TraceRequests)
            else contract_decl(decls[i])
        )
        return decl

    def limits(self, rid: str) -> tuple[int, int, int] | None:
        """`get(rid)`'s (prompt_tokens, max_output_tokens, request_generation), read from the
        workload without making the record (None: no such request): the fields the live
        validator's common rules read, once per request."""
        i = self._index.get(rid)
        if i is None:
            return None
        decls = self._decls
        if isinstance(decls, TraceRequests):  # (`TraceRequests.contract_decl`'s fields)
            return decls.prompt[i], decls.output[i], 0
        d = decls[i]
        return d.prompt_tokens, d.max_output_tokens, d.request_generation

    def __contains__(self, rid: object) -> bool:
        return rid in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def contract_manifest(workload: Workload, index: Mapping[str, int]) -> WorkloadManifest:
    """The contract's `WorkloadManifest` of `workload`, its declarations made on demand.

    `index` maps each request id to its position in `workload.requests` (the first position
    of an id, as `WorkloadManifest.position_of` does); it is `position_of` itself.
    """
    head = WorkloadManifest.from_json(workload.to_manifest(with_requests=False))
    decls = workload.requests
    clients = (
        frozenset()  # a plain trace declares no clients
        if isinstance(decls, TraceRequests)
        else frozenset(d.client for d in decls if d.client is not None)
    )
    # the record's derived fields, set as its own __post_init__ sets them
    object.__setattr__(head, "requests", ContractRequests(decls))
    object.__setattr__(head, "by_id", ContractById(decls, index))
    object.__setattr__(head, "position_of", index)
    object.__setattr__(head, "clients", clients)
    return head
