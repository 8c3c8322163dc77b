"""`PackedIteration` (article 0x04): where every selected row lands, and what it may attend to.

An `IterationPlan` says which legal request intervals run; a `PackedIteration` says where each
of their rows sits on the packed query axis and which request-local attention state it uses.
The executor may derive the second from a validated first, but it may not change the selected
intervals while packing them.

For N selected request generations with widths q_i = end_i - start_i the packed axis has
Q_tot = sum(q_i) rows and prefix offsets o_0 = 0, o_{i+1} = o_i + q_i; request i owns exactly
the rows [o_i, o_{i+1}). Per row the record keeps the route (request key "ID:GEN"), the
request-local position, the derived phase and the visible key spans. The visibility relation is

    visible(r, s) = same request generation  and  u_s <= p_r  and  available(u_s)

so every span a row lists must name its own request and end at or before its position + 1,
and together the spans must cover [0, p_r] (prior rows come through the request's logical
K/V handle, current rows through its packed segment).

`derive_packed_iteration` builds the record from a plan and the state it was validated
against; `validate_packed_iteration` checks a record (for instance a corrupted one) and, when
given the plan, its bindings to that plan. Codes are listed in `PACK_CODES`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cbaudit.contract.records import (
    DecisionId,
    IterationPlan,
    Phase,
    SchedulerState,
)
from cbaudit.model import Finding, FindingSink, InputError, Location
from cbaudit.model.findings import Locator

PACKED_SCHEMA = "packed-iteration"

_CATALOG: dict[str, str] = {
    "PACK.SEGMENT.EMPTY": "a packed segment has end <= start",
    "PACK.SEGMENT.DUPLICATE": "a request generation is packed twice",
    "PACK.OFFSETS.LENGTH": "request_offsets does not have N + 1 entries",
    "PACK.OFFSETS.ORIGIN": "request_offsets does not start at 0",
    "PACK.OFFSETS.WIDTH": "o[i+1] - o[i] is not the width of segment i",
    "PACK.OFFSETS.TOTAL": "the last offset is not the number of packed rows (Q_tot)",
    "PACK.ROWS.LENGTH": "the per-row arrays do not all have Q_tot entries",
    "PACK.ROUTE.MISMATCH": "a row's request key is not the key of the segment that owns it",
    "PACK.POSITION.MISMATCH": "a segment's local positions are not range(start, end)",
    "PACK.PHASE.ROW_MISMATCH": "a row's phase is not its segment's phase",
    "PACK.PHASE.INTERVAL": "a segment's phase does not fit its interval and prompt length",
    "PACK.HANDLE.LENGTH": "logical_cache_handle does not have N entries",
    "PACK.HANDLE.DUPLICATE": "two segments share one logical cache handle",
    "PACK.HANDLE.BINDING": "a logical cache handle does not name its request generation/snapshot",
    "PACK.VISIBILITY.CROSS_REQUEST": "a row may attend keys of another request generation",
    "PACK.VISIBILITY.FUTURE": "a row may attend a key after its own position",
    "PACK.VISIBILITY.MISSING": "a row's spans do not cover its whole causal prefix [0, p]",
    "PACK.BINDING.DECISION": "the packed decision_id is not the plan's",
    "PACK.BINDING.STATE_VERSION": "the packed input_state_version is not the plan's",
    "PACK.BINDING.POLICY": "the packed policy identity is not the plan's",
    "PACK.SEGMENT.MISSING": "a selected plan item was not packed",
    "PACK.SEGMENT.UNPLANNED": "a packed segment is not a selected plan item",
    "PACK.SEGMENT.ORDER": "segments are not in the plan's selection order",
    "PACK.INTERVAL.CHANGED": "packing changed a selected interval, phase or snapshot",
    "PACK.DERIVE.UNBOUND": "a selected item has no request view in the state",
}

PACK_CODES: Mapping[str, str] = MappingProxyType(_CATALOG)


def request_key(request_id: str, request_generation: int) -> str:
    """The route key of a request generation, e.g. `A:0`."""
    return f"{request_id}:{request_generation}"


def cache_handle(request_id: str, request_generation: int, snapshot_version: int) -> str:
    """The logical K/V handle of a request generation at a snapshot (no physical address)."""
    return f"logical-kv:{request_id}:{request_generation}:v{snapshot_version}"


@dataclass(frozen=True, slots=True)
class KeySpan:
    """A run of key positions [start, end) of one request generation that a row may attend."""

    request_key: str
    start: int
    end: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KeySpan:
        return cls(data["request_key"], data["start"], data["end"])

    def to_json(self) -> dict[str, Any]:
        return {"request_key": self.request_key, "start": self.start, "end": self.end}


@dataclass(frozen=True, slots=True)
class PackedSegment:
    """One selected interval as packed: plan identity plus the prompt length it was derived for."""

    request_id: str
    request_generation: int
    snapshot_version: int
    start: int
    end: int
    phase: Phase
    prompt_tokens: int

    @property
    def key(self) -> str:
        return request_key(self.request_id, self.request_generation)

    @property
    def width(self) -> int:
        return self.end - self.start

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PackedSegment:
        return cls(
            request_id=data["request_id"],
            request_generation=data["request_generation"],
            snapshot_version=data["snapshot_version"],
            start=data["start"],
            end=data["end"],
            phase=Phase(data["phase"]),
            prompt_tokens=data["prompt_tokens"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "request_generation": self.request_generation,
            "snapshot_version": self.snapshot_version,
            "start": self.start,
            "end": self.end,
            "phase": self.phase.value,
            "prompt_tokens": self.prompt_tokens,
        }


@dataclass(frozen=True, slots=True)
class PackedIteration:
    """Execution metadata for one plan: offsets, per-row routes, handles and bindings."""

    decision_id: DecisionId
    input_state_version: int
    policy_id: str
    policy_version: str
    segments: tuple[PackedSegment, ...]
    request_offsets: tuple[int, ...]
    request_key_by_row: tuple[str, ...]
    request_local_position: tuple[int, ...]
    phase_by_row: tuple[Phase, ...]
    logical_cache_handle: tuple[str, ...]
    visible_keys_by_row: tuple[tuple[KeySpan, ...], ...]
    schema_version: int = 1

    @property
    def q_tot(self) -> int:
        """Packed query rows, as the per-row route array counts them."""
        return len(self.request_key_by_row)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PackedIteration:
        """Build from data that passed the `packed-iteration` schema."""
        return cls(
            decision_id=data["decision_id"],
            input_state_version=data["input_state_version"],
            policy_id=data["policy_id"],
            policy_version=data["policy_version"],
            segments=tuple(PackedSegment.from_json(s) for s in data["segments"]),
            request_offsets=tuple(data["request_offsets"]),
            request_key_by_row=tuple(data["request_key_by_row"]),
            request_local_position=tuple(data["request_local_position"]),
            phase_by_row=tuple(Phase(p) for p in data["phase_by_row"]),
            logical_cache_handle=tuple(data["logical_cache_handle"]),
            visible_keys_by_row=tuple(
                tuple(KeySpan.from_json(s) for s in row) for row in data["visible_keys_by_row"]
            ),
            schema_version=data.get("schema_version", 1),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "decision_id": self.decision_id,
            "input_state_version": self.input_state_version,
            "policy_id": self.policy_id,
            "policy_version": self.policy_version,
            "segments": [s.to_json() for s in self.segments],
            "request_offsets": list(self.request_offsets),
            "request_key_by_row": list(self.request_key_by_row),
            "request_local_position": list(self.request_local_position),
            "phase_by_row": [p.value for p in self.phase_by_row],
            "logical_cache_handle": list(self.logical_cache_handle),
            "visible_keys_by_row": [[s.to_json() for s in row] for row in self.visible_keys_by_row],
        }


def derive_packed_iteration(plan: IterationPlan, state: SchedulerState) -> PackedIteration:
    """Pack a validated plan's selected intervals, in selection order, without changing them.

    Each row of request i at position p may attend [0, p] of request i only: one span, its
    own key. Raises `InputError` (`PACK.DERIVE.UNBOUND`) if an item has no view in `state`.
    """
    segments: list[PackedSegment] = []
    offsets = [0]
    keys: list[str] = []
    positions: list[int] = []
    phases: list[Phase] = []
    handles: list[str] = []
    spans: list[tuple[KeySpan, ...]] = []
    for i, item in enumerate(plan.selected):
        view = state.by_id.get(item.request_id)
        if view is None or view.request_generation != item.request_generation:
            raise InputError.at(
                "PACK.DERIVE.UNBOUND",
                f"selected {request_key(item.request_id, item.request_generation)} has no "
                "request view in the state; pack only validated plans",
                pointer=f"/selected/{i}",
            )
        seg = PackedSegment(
            request_id=item.request_id,
            request_generation=item.request_generation,
            snapshot_version=item.snapshot_version,
            start=item.start,
            end=item.end,
            phase=item.phase,
            prompt_tokens=view.prompt_tokens,
        )
        segments.append(seg)
        offsets.append(offsets[-1] + seg.width)
        handles.append(cache_handle(seg.request_id, seg.request_generation, seg.snapshot_version))
        for pos in range(seg.start, seg.end):
            keys.append(seg.key)
            positions.append(pos)
            phases.append(seg.phase)
            spans.append((KeySpan(seg.key, 0, pos + 1),))
    return PackedIteration(
        decision_id=plan.decision_id,
        input_state_version=plan.input_state_version,
        policy_id=plan.policy_id,
        policy_version=plan.policy_version,
        segments=tuple(segments),
        request_offsets=tuple(offsets),
        request_key_by_row=tuple(keys),
        request_local_position=tuple(positions),
        phase_by_row=tuple(phases),
        logical_cache_handle=tuple(handles),
        visible_keys_by_row=tuple(spans),
    )


def offsets_usable(packed: PackedIteration) -> bool:
    """True when the offsets can safely slice the per-row arrays (N+1 entries, 0..Q_tot, sorted)."""
    offs = packed.request_offsets
    if len(offs) != len(packed.segments) + 1 or not offs or offs[0] != 0:
        return False
    if any(b < a for a, b in itertools.pairwise(offs)):
        return False
    n_rows = packed.q_tot
    lengths = {
        len(packed.request_local_position),
        len(packed.phase_by_row),
        len(packed.visible_keys_by_row),
    }
    return offs[-1] == n_rows and lengths == {n_rows}


def _check_segments(packed: PackedIteration, sink: FindingSink) -> None:
    seen: dict[str, int] = {}
    for i, seg in enumerate(packed.segments):
        ptr = f"/segments/{i}"
        if seg.end <= seg.start:
            sink.add("PACK.SEGMENT.EMPTY", f"{seg.key} has interval [{seg.start},{seg.end})", ptr)
        if seg.key in seen:
            sink.add(
                "PACK.SEGMENT.DUPLICATE",
                f"{seg.key} is packed twice (segments {seen[seg.key]} and {i})",
                ptr,
            )
        seen.setdefault(seg.key, i)
        if seg.phase is Phase.DECODE_ROW and (seg.width != 1 or seg.start < seg.prompt_tokens):
            sink.add(
                "PACK.PHASE.INTERVAL",
                f"{seg.key}: DECODE_ROW needs one row at or after the prompt "
                f"(p={seg.prompt_tokens}), got [{seg.start},{seg.end})",
                ptr + "/phase",
            )
        if seg.phase is Phase.PREFILL_CHUNK and seg.end > seg.prompt_tokens:
            sink.add(
                "PACK.PHASE.INTERVAL",
                f"{seg.key}: PREFILL_CHUNK [{seg.start},{seg.end}) runs past the prompt "
                f"(p={seg.prompt_tokens})",
                ptr + "/phase",
            )


def _check_offsets(packed: PackedIteration, sink: FindingSink) -> None:
    offs = packed.request_offsets
    n = len(packed.segments)
    if len(offs) != n + 1:
        sink.add(
            "PACK.OFFSETS.LENGTH",
            f"{len(offs)} offsets for {n} segments (need {n + 1})",
            "/request_offsets",
        )
    if offs and offs[0] != 0:
        sink.add("PACK.OFFSETS.ORIGIN", f"o_0 = {offs[0]}, not 0", "/request_offsets/0")
    for i, seg in enumerate(packed.segments):
        if i + 1 < len(offs) and offs[i + 1] - offs[i] != seg.width:
            sink.add(
                "PACK.OFFSETS.WIDTH",
                f"segment {i} ({seg.key}) spans o[{i + 1}] - o[{i}] = "
                f"{offs[i + 1] - offs[i]} rows but its interval has q = {seg.width}",
                f"/request_offsets/{i + 1}",
            )
    if offs and offs[-1] != packed.q_tot:
        sink.add(
            "PACK.OFFSETS.TOTAL",
            f"last offset {offs[-1]} but {packed.q_tot} packed rows",
            f"/request_offsets/{len(offs) - 1}",
        )
    arrays = {
        "request_local_position": len(packed.request_local_position),
        "phase_by_row": len(packed.phase_by_row),
        "visible_keys_by_row": len(packed.visible_keys_by_row),
    }
    for name, length in arrays.items():
        if length != packed.q_tot:
            sink.add(
                "PACK.ROWS.LENGTH",
                f"{name} has {length} rows but request_key_by_row has {packed.q_tot}",
                f"/{name}",
            )


def _check_rows(packed: PackedIteration, sink: FindingSink) -> None:
    offs = packed.request_offsets
    for i, seg in enumerate(packed.segments):
        lo, hi = offs[i], offs[i + 1]
        local = list(packed.request_local_position[lo:hi])
        if len(local) != seg.end - seg.start or local != list(range(seg.start, seg.end)):
            sink.add(
                "PACK.POSITION.MISMATCH",
                f"{seg.key}: rows [{lo},{hi}) carry positions {local}, "
                f"not range({seg.start}, {seg.end})",
                f"/request_local_position/{lo}",
            )
        for r in range(lo, hi):
            if packed.request_key_by_row[r] != seg.key:
                sink.add(
                    "PACK.ROUTE.MISMATCH",
                    f"row {r} is routed to {packed.request_key_by_row[r]} but lies in "
                    f"segment {i} ({seg.key})",
                    f"/request_key_by_row/{r}",
                )
            if packed.phase_by_row[r] is not seg.phase:
                sink.add(
                    "PACK.PHASE.ROW_MISMATCH",
                    f"row {r} says {packed.phase_by_row[r].value}, segment {seg.key} is "
                    f"{seg.phase.value}",
                    f"/phase_by_row/{r}",
                )
            _check_visibility(r, seg.key, packed, sink)


def _tiles_prefix(spans: list[tuple[int, int]], length: int) -> bool:
    """Whether the half-open spans cover [0, length) exactly once: no gap, no overlap.

    Interval arithmetic, linear in the number of spans: positions are never enumerated, so a
    long context (or a hostile span) costs nothing extra.
    """
    at = 0
    for start, stop in sorted(spans):
        if start != at:
            return False
        at = stop
    return at == length


def _check_visibility(r: int, own: str, packed: PackedIteration, sink: FindingSink) -> None:
    pos = packed.request_local_position[r]
    covered: list[tuple[int, int]] = []  # own spans clipped to the causal prefix, non-empty
    for j, span in enumerate(packed.visible_keys_by_row[r]):
        ptr = f"/visible_keys_by_row/{r}/{j}"
        if span.request_key != own:
            sink.add(
                "PACK.VISIBILITY.CROSS_REQUEST",
                f"row {r} ({own}) may attend {span.request_key} positions "
                f"[{span.start},{span.end})",
                ptr,
            )
            continue
        if span.end > pos + 1:
            sink.add(
                "PACK.VISIBILITY.FUTURE",
                f"row {r} ({own} at position {pos}) may attend up to position {span.end - 1}",
                ptr,
            )
        stop = min(span.end, pos + 1)
        if span.start < stop:
            covered.append((span.start, stop))
    if not _tiles_prefix(covered, pos + 1):
        sink.add(
            "PACK.VISIBILITY.MISSING",
            f"row {r} ({own} at position {pos}) does not see exactly its causal prefix "
            f"[0, {pos}] once",
            f"/visible_keys_by_row/{r}",
        )


def _check_handles(packed: PackedIteration, sink: FindingSink) -> None:
    handles = packed.logical_cache_handle
    if len(handles) != len(packed.segments):
        sink.add(
            "PACK.HANDLE.LENGTH",
            f"{len(handles)} handles for {len(packed.segments)} segments",
            "/logical_cache_handle",
        )
    first: dict[str, int] = {}
    for i, handle in enumerate(handles):
        if handle in first:
            sink.add(
                "PACK.HANDLE.DUPLICATE",
                f"segments {first[handle]} and {i} share handle {handle}",
                f"/logical_cache_handle/{i}",
            )
        first.setdefault(handle, i)
        if i < len(packed.segments):
            seg = packed.segments[i]
            want = cache_handle(seg.request_id, seg.request_generation, seg.snapshot_version)
            if handle != want:
                sink.add(
                    "PACK.HANDLE.BINDING",
                    f"segment {i} ({seg.key}) uses handle {handle}, expected {want}",
                    f"/logical_cache_handle/{i}",
                )


def _check_plan(packed: PackedIteration, plan: IterationPlan, sink: FindingSink) -> None:
    if packed.decision_id != plan.decision_id:
        sink.add(
            "PACK.BINDING.DECISION",
            f"decision_id {packed.decision_id!r}, plan has {plan.decision_id!r}",
            "/decision_id",
        )
    if packed.input_state_version != plan.input_state_version:
        sink.add(
            "PACK.BINDING.STATE_VERSION",
            f"input_state_version {packed.input_state_version}, plan has "
            f"{plan.input_state_version}",
            "/input_state_version",
        )
    if (packed.policy_id, packed.policy_version) != (plan.policy_id, plan.policy_version):
        sink.add(
            "PACK.BINDING.POLICY",
            f"policy {packed.policy_id}@{packed.policy_version}, plan has "
            f"{plan.policy_id}@{plan.policy_version}",
            "/policy_id",
        )
    planned = {request_key(w.request_id, w.request_generation): w for w in plan.selected}
    packed_keys = [s.key for s in packed.segments]
    for key in planned:
        if key not in packed_keys:
            sink.add("PACK.SEGMENT.MISSING", f"selected {key} was not packed", "/segments")
    for i, seg in enumerate(packed.segments):
        item = planned.get(seg.key)
        if item is None:
            sink.add("PACK.SEGMENT.UNPLANNED", f"{seg.key} is not selected", f"/segments/{i}")
            continue
        got = (seg.start, seg.end, seg.phase, seg.snapshot_version)
        want = (item.start, item.end, item.phase, item.snapshot_version)
        if got != want:
            sink.add(
                "PACK.INTERVAL.CHANGED",
                f"{seg.key}: packed [{seg.start},{seg.end}) {seg.phase.value} snapshot "
                f"{seg.snapshot_version}, plan selected [{item.start},{item.end}) "
                f"{item.phase.value} snapshot {item.snapshot_version}",
                f"/segments/{i}",
            )
    in_plan = [k for k in packed_keys if k in planned]
    plan_order = [k for k in planned if k in packed_keys]
    if in_plan != plan_order:
        sink.add(
            "PACK.SEGMENT.ORDER",
            f"segments are packed as {in_plan}, the plan selected {plan_order}",
            "/segments",
        )


def validate_packed_iteration(
    packed: PackedIteration,
    *,
    plan: IterationPlan | None = None,
    file: str | None = None,
    locate: Locator | None = None,
) -> list[Finding]:
    """Every `PACK.*` finding for `packed` (empty when it is a faithful packing).

    Pointers are into the packed record's JSON form; `locate` maps them to locations.
    Row-level checks run only when the offsets can slice the rows safely.
    """
    sink = FindingSink(locate or (lambda ptr: Location(file=file, pointer=ptr)), PACK_CODES)
    _check_segments(packed, sink)
    _check_offsets(packed, sink)
    if offsets_usable(packed):
        _check_rows(packed, sink)
    _check_handles(packed, sink)
    if plan is not None:
        _check_plan(packed, plan, sink)
    return sink.findings


def token_labels(packed: PackedIteration) -> list[str]:
    """Human labels per row: request id plus local position (`A5`, `B0`, ...)."""
    by_key = {s.key: s.request_id for s in packed.segments}
    return [
        f"{by_key.get(key, key)}{pos}"
        for key, pos in zip(packed.request_key_by_row, packed.request_local_position, strict=False)
    ]


def segment_of_row(packed: PackedIteration) -> list[int]:
    """For usable offsets: the segment index that owns each packed row."""
    owners: list[int] = []
    for i in range(len(packed.segments)):
        owners.extend([i] * (packed.request_offsets[i + 1] - packed.request_offsets[i]))
    return owners


def widths(segments: Sequence[PackedSegment]) -> list[int]:
    """q_i per segment."""
    return [s.width for s in segments]
