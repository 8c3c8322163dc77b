"""Loop 4 operators (article 0x04): corrupt the packed iteration or the fixture's declarations.

Packed-record edits go through the fixture's `packing_patch` (an RFC 6902 patch the oracle
applies to the `PackedIteration` it derives), so each mutant is still one patch over the
fixture. The generators read the derived record by running the oracle once on the fixture.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from cbaudit.model import Location
from cbaudit.mutate.operators import Edit, Operator, add, replace

ORACLE = "selective-batching"
TARGET = f"oracle:{ORACLE}"
LOOP = "4"


def _derived(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The PackedIteration the oracle derives from the (unpatched) fixture."""
    from cbaudit.oracles.fixture_oracle import oracles
    from cbaudit.oracles.fixtures import Fixture

    clean = {k: v for k, v in data.items() if k != "packing_patch"}
    fixture = Fixture(clean, "<generator>", "", lambda p: Location(pointer=p))
    packed = oracles()[ORACLE](fixture).metrics.get("packed_iteration")
    return packed if isinstance(packed, Mapping) else None


def _packing(*ops: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    return (add("/packing_patch", list(ops)),)


def _rows(packed: Mapping[str, Any]) -> int:
    return len(packed.get("request_key_by_row") or [])


def _offset_interior(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    packed = _derived(data)
    if packed is None:
        return
    offsets = packed["request_offsets"]
    for k in range(1, len(offsets) - 1):
        value = offsets[k] + (1 if offsets[k] + 1 < offsets[k + 1] else -1)
        yield (
            _packing(replace(f"/request_offsets/{k}", value)),
            f"offset {k}: {offsets[k]} -> {value}",
        )


def _offset_origin(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    if _derived(data) is not None:
        yield _packing(replace("/request_offsets/0", 1)), "the first offset is 1, not 0"


def _offset_total(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    packed = _derived(data)
    if packed is not None:
        last = len(packed["request_offsets"]) - 1
        value = packed["request_offsets"][last] + 1
        yield (
            _packing(replace(f"/request_offsets/{last}", value)),
            f"last offset claims {value} rows",
        )


def _position(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    packed = _derived(data)
    if packed is None:
        return
    for r in range(_rows(packed)):
        value = packed["request_local_position"][r] + 1
        yield _packing(replace(f"/request_local_position/{r}", value)), f"row {r} position {value}"


def _route(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    packed = _derived(data)
    if packed is None:
        return
    keys = sorted(set(packed["request_key_by_row"]))
    for r, key in enumerate(packed["request_key_by_row"]):
        others = [k for k in keys if k != key]
        if others:
            other = rng.choice(others)
            yield _packing(replace(f"/request_key_by_row/{r}", other)), f"row {r} routed to {other}"


def _phase_row(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    packed = _derived(data)
    if packed is None:
        return
    for r, phase in enumerate(packed["phase_by_row"]):
        other = "PREFILL_CHUNK" if phase == "DECODE_ROW" else "DECODE_ROW"
        yield _packing(replace(f"/phase_by_row/{r}", other)), f"row {r} labelled {other}"


def _handle(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    packed = _derived(data)
    if packed is None:
        return
    handles = packed["logical_cache_handle"]
    for i in range(1, len(handles)):
        yield (
            _packing(replace(f"/logical_cache_handle/{i}", handles[0])),
            f"segment {i} reuses {handles[0]}",
        )


def _future(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    packed = _derived(data)
    if packed is None:
        return
    for r, spans in enumerate(packed["visible_keys_by_row"]):
        if spans:
            end = spans[0]["end"] + 1
            yield (
                _packing(replace(f"/visible_keys_by_row/{r}/0/end", end)),
                f"row {r} sees up to {end}",
            )


def _cross(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    packed = _derived(data)
    if packed is None:
        return
    segments = packed["segments"]
    for r, key in enumerate(packed["request_key_by_row"]):
        for seg in segments:
            other = f"{seg['request_id']}:{seg['request_generation']}"
            if other != key:
                span = {"request_key": other, "start": 0, "end": seg["start"] + 1}
                yield _packing(add(f"/visible_keys_by_row/{r}/-", span)), f"row {r} sees {other}"
                break


def _decision(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    packed = _derived(data)
    if packed is not None:
        value = packed["decision_id"] + 1
        yield _packing(replace("/decision_id", value)), f"packed record binds decision {value}"


def _snapshot(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    packed = _derived(data)
    if packed is None:
        return
    for i, seg in enumerate(packed["segments"]):
        value = seg["snapshot_version"] + 1
        yield (
            _packing(replace(f"/segments/{i}/snapshot_version", value)),
            f"segment {i} snapshot {value}",
        )


def _expect_q_tot(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    expect = data.get("expect") or {}
    if isinstance(expect.get("q_tot"), int):
        yield (replace("/expect/q_tot", expect["q_tot"] + 1),), "declared Q_tot off by one"


def _expect_row0(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    row0 = (data.get("expect") or {}).get("row0") or {}
    for name in ("q", "k", "v"):
        values = row0.get(name)
        if isinstance(values, list) and values:
            k = rng.randrange(len(values))
            value = values[k] + 0.125
            yield (
                (replace(f"/expect/row0/{name}/{k}", value),),
                f"declared row-0 {name}[{k}] = {value}",
            )


def _widen_decode(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, req in enumerate(data.get("requests") or []):
        lo, hi = req["interval"]
        if lo >= req["prompt_tokens"]:
            yield (
                (replace(f"/requests/{i}/interval", [lo, hi + 1]),),
                f"{req['request_id']} decodes [{lo},{hi + 1})",
            )


def _reorder(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    if len(data.get("requests") or []) >= 2:
        yield (
            ({"op": "move", "from": "/requests/0", "path": "/requests/-"},),
            "first request moved last",
        )


def _op(name: str, record: str, pointer: str, changes: str, expect: str, gen: Any) -> Operator:
    return Operator(name, LOOP, TARGET, record, pointer, changes, expect, gen)


OPERATORS: tuple[Operator, ...] = (
    _op(
        "pack.offsets.width",
        "PackedIteration",
        "/packing_patch -> /request_offsets/*",
        "move an interior segment offset by one row",
        "PACK.OFFSETS.WIDTH",
        _offset_interior,
    ),
    _op(
        "pack.offsets.origin",
        "PackedIteration",
        "/packing_patch -> /request_offsets/0",
        "start the first segment at row 1",
        "PACK.OFFSETS.ORIGIN",
        _offset_origin,
    ),
    _op(
        "pack.offsets.total",
        "PackedIteration",
        "/packing_patch -> /request_offsets/-1",
        "claim one packed row more than exists",
        "PACK.OFFSETS.TOTAL",
        _offset_total,
    ),
    _op(
        "pack.position.shift",
        "PackedIteration",
        "/packing_patch -> /request_local_position/*",
        "give a packed row the wrong request-local position",
        "PACK.POSITION.MISMATCH",
        _position,
    ),
    _op(
        "pack.route.swap",
        "PackedIteration",
        "/packing_patch -> /request_key_by_row/*",
        "scatter a packed row to another request",
        "PACK.ROUTE.MISMATCH",
        _route,
    ),
    _op(
        "pack.phase.row-flip",
        "PackedIteration",
        "/packing_patch -> /phase_by_row/*",
        "flip a row's phase label",
        "PACK.PHASE.ROW_MISMATCH",
        _phase_row,
    ),
    _op(
        "pack.handle.duplicate",
        "PackedIteration",
        "/packing_patch -> /logical_cache_handle/*",
        "reuse one request's logical cache handle for another",
        "PACK.HANDLE.DUPLICATE",
        _handle,
    ),
    _op(
        "pack.visibility.future",
        "PackedIteration",
        "/packing_patch -> /visible_keys_by_row/*/0/end",
        "let a row see the key after its own position",
        "PACK.VISIBILITY.FUTURE",
        _future,
    ),
    _op(
        "pack.visibility.cross-request",
        "PackedIteration",
        "/packing_patch -> /visible_keys_by_row/*/-",
        "let a row see another request's keys",
        "PACK.VISIBILITY.CROSS_REQUEST",
        _cross,
    ),
    _op(
        "pack.binding.decision",
        "PackedIteration",
        "/packing_patch -> /decision_id",
        "bind the packed record to another decision",
        "PACK.BINDING.DECISION",
        _decision,
    ),
    _op(
        "pack.segment.snapshot",
        "PackedIteration",
        "/packing_patch -> /segments/*/snapshot_version",
        "bind a segment to another M5.1 snapshot",
        "PACK.INTERVAL.CHANGED",
        _snapshot,
    ),
    _op(
        "selective.expect.q-tot",
        "fixture",
        "/expect/q_tot",
        "declare Q_tot off by one",
        "SELECTIVE.EXPECT.SHAPE",
        _expect_q_tot,
    ),
    _op(
        "selective.expect.row0",
        "fixture",
        "/expect/row0/{q,k,v}/*",
        "declare a wrong row-0 projection",
        "SELECTIVE.EXPECT.ROW0",
        _expect_row0,
    ),
    _op(
        "selective.interval.decode-widen",
        "IterationPlan",
        "/requests/*/interval",
        "widen a decode interval to two rows",
        "SELECTIVE.FIXTURE.INTERVAL",
        _widen_decode,
    ),
    _op(
        "selective.requests.reorder",
        "IterationPlan",
        "/requests",
        "select the requests out of tie-break order",
        "PLAN.TIE_BREAK.ORDER",
        _reorder,
    ),
)
