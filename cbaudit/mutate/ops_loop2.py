"""Loop 2 operators (article 0x01A): one broken invariant of a workload/state/plan/result case.

Every operator edits a valid plan case (`target: plan-case`) and names the contract code the
validator must answer with. Generators read the fixture to find where an edit applies (which
selected work is decode, which request is ready, ...) and yield nothing where it cannot.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from cbaudit.io.schemas import load_schema
from cbaudit.mutate.operators import Edit, Operator, add, remove, replace

TARGET = "plan-case"
LOOP = "2"
_ONLINE = ("state", "plan", "result")
_RECORD = {
    "workload": "WorkloadManifest",
    "state": "SchedulerState",
    "plan": "IterationPlan",
    "result": "IterationResult",
}
_SCHEMA = {
    "workload": "workload-manifest",
    "state": "scheduler-state",
    "plan": "iteration-plan",
    "result": "iteration-result",
}


def _selected(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    plan = data.get("plan") or {}
    return list(enumerate(plan.get("selected") or []))


def _views(data: Mapping[str, Any]) -> dict[str, tuple[int, Mapping[str, Any]]]:
    state = data.get("state") or {}
    return {v["request_id"]: (j, v) for j, v in enumerate(state.get("requests") or [])}


def _items(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    result = data.get("result")
    return list(enumerate(result.get("items") or [])) if isinstance(result, Mapping) else []


def _is_decode(item: Mapping[str, Any]) -> bool:
    return item.get("phase") == "DECODE_ROW"


def _sel(i: int, field: str = "") -> str:
    return f"/plan/selected/{i}" + (f"/{field}" if field else "")


def _shift(item: Mapping[str, Any], i: int, delta: int) -> tuple[dict[str, Any], ...]:
    """Move an interval by `delta` keeping its width and its positions trace consistent."""
    start, end = item["start"] + delta, item["end"] + delta
    return (
        replace(_sel(i, "start"), start),
        replace(_sel(i, "end"), end),
        replace(_sel(i, "positions"), list(range(start, end))),
    )


def _tag(item: Mapping[str, Any]) -> str:
    return f"{item.get('request_id')}:{item.get('request_generation')}"


# --------------------------------------------------------------------- intervals


def _before_frontier(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _selected(data):
        if item["start"] >= 1:
            yield _shift(item, i, -1), f"{_tag(item)} starts one row before its frontier"


def _after_frontier(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _selected(data):
        yield _shift(item, i, +1), f"{_tag(item)} starts one row past its frontier (a gap)"


def _decode_two_rows(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _selected(data):
        if _is_decode(item):
            end = item["end"] + 1
            ops = (
                replace(_sel(i, "end"), end),
                replace(_sel(i, "positions"), list(range(item["start"], end))),
            )
            yield ops, f"{_tag(item)} decodes two rows [{item['start']},{end})"


def _past_prompt(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    views = _views(data)
    for i, item in _selected(data):
        if _is_decode(item) or item["request_id"] not in views:
            continue
        end = views[item["request_id"]][1]["prompt_tokens"] + 1
        ops = (
            replace(_sel(i, "end"), end),
            replace(_sel(i, "positions"), list(range(item["start"], end))),
        )
        yield ops, f"{_tag(item)} prefill ends at {end}, past its prompt"


def _empty(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _selected(data):
        ops = (replace(_sel(i, "end"), item["start"]), replace(_sel(i, "positions"), []))
        yield ops, f"{_tag(item)} gets the empty interval [{item['start']},{item['start']})"


# --------------------------------------------------------------------- identity and versions


def _duplicate(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for _, item in _selected(data):
        yield (add("/plan/selected/-", dict(item)),), f"{_tag(item)} is selected twice"


def _bump(pointer: str, delta: int, what: str) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        from cbaudit.mutate.patch import get_at

        try:
            value = get_at(data, pointer)
        except ValueError:
            return
        if isinstance(value, int) and not isinstance(value, bool) and value + delta >= 0:
            yield (replace(pointer, value + delta),), f"{what} {value} -> {value + delta}"

    return gen


def _item_bump(field: str, delta: int, where: str = "plan") -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        rows = _selected(data) if where == "plan" else _items(data)
        base = "/plan/selected" if where == "plan" else "/result/items"
        for i, item in rows:
            value = item.get(field)
            if isinstance(value, int) and value + delta >= 0:
                ops = (replace(f"{base}/{i}/{field}", value + delta),)
                yield ops, f"{_tag(item)} {field} {value} -> {value + delta}"

    return gen


def _swap_generations(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    rows = _selected(data)
    for a in range(len(rows)):
        for b in range(a + 1, len(rows)):
            (i, x), (j, y) = rows[a], rows[b]
            if x["request_generation"] != y["request_generation"]:
                ops = (
                    replace(_sel(i, "request_generation"), y["request_generation"]),
                    replace(_sel(j, "request_generation"), x["request_generation"]),
                )
                yield ops, f"generations of {_tag(x)} and {_tag(y)} swapped"


def _unknown_request(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    known = set(_views(data))
    for i, item in _selected(data):
        name = f"{item['request_id']}-ghost"
        while name in known:
            name += "x"
        yield (replace(_sel(i, "request_id"), name),), f"{_tag(item)} renamed to unknown {name}"


# --------------------------------------------------------------------- readiness and terminal


def _flip_ready(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    views = _views(data)
    for _, item in _selected(data):
        if item["request_id"] in views:
            j, _view = views[item["request_id"]]
            ops = (
                replace(f"/state/requests/{j}/ready", False),
                add(f"/state/requests/{j}/readiness_reason", "mutant: foreign readiness false"),
            )
            yield ops, f"selected {_tag(item)} is marked not ready in the state"


def _flip_terminal(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    views = _views(data)
    for _, item in _selected(data):
        if item["request_id"] in views:
            j, _view = views[item["request_id"]]
            ops = (
                replace(f"/state/requests/{j}/terminal", True),
                replace(f"/state/requests/{j}/ready", False),
                replace(f"/state/requests/{j}/queue", "finished"),
            )
            yield ops, f"selected {_tag(item)} is terminal (finished) in the state"


def _duplicate_queue_member(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for rid, (_j, view) in sorted(_views(data).items()):
        yield (add("/state/requests/-", dict(view)),), f"{rid} appears twice in the state"


# --------------------------------------------------------------------- budgets and ledger


def _used(data: Mapping[str, Any]) -> tuple[int, int]:
    rows = _selected(data)
    return sum(max(it["end"] - it["start"], 0) for _, it in rows), len(rows)


def _budget_exceeded(key: str) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        tokens, seqs = _used(data)
        used = tokens if key == "token_budget" else seqs
        if used < 1:
            return
        ops = (
            replace(f"/workload/budgets/{key}", used - 1),
            replace(f"/plan/budget_ledger/{key}", used - 1),
        )
        yield ops, f"{key} lowered to {used - 1}, one below the {used} the plan uses"

    return gen


def _ledger_drift(key: str) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        value = (data.get("plan") or {}).get("budget_ledger", {}).get(key)
        if not isinstance(value, int):
            return
        for delta in (-1, +1):
            if value + delta >= 0:
                ops = (replace(f"/plan/budget_ledger/{key}", value + delta),)
                yield ops, f"ledger {key} {value} -> {value + delta}"

    return gen


# --------------------------------------------------------------------- forged evidence


def _forge_phase(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _selected(data):
        other = "PREFILL_CHUNK" if _is_decode(item) else "DECODE_ROW"
        yield (replace(_sel(i, "phase"), other),), f"{_tag(item)} annotated {other}"


def _forge_positions(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _selected(data):
        positions = list(item.get("positions") or [])
        if not positions:
            continue
        k = rng.randrange(len(positions))
        positions[k] += rng.choice((1, 2))
        yield (replace(_sel(i, "positions"), positions),), f"{_tag(item)} positions {positions}"


def _forge_string(pointer: str, what: str) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        from cbaudit.mutate.patch import get_at

        try:
            value = get_at(data, pointer)
        except ValueError:
            return
        if isinstance(value, str):
            forged = f"{value}+forged.{rng.randrange(1, 100)}"
            yield (replace(pointer, forged),), f"{what} {value!r} -> {forged!r}"

    return gen


def _forge_tie_break(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _selected(data):
        key = list(item.get("tie_break_key") or [])
        numeric = [k for k, v in enumerate(key) if isinstance(v, int) and not isinstance(v, bool)]
        if not numeric:
            continue
        k = rng.choice(numeric)
        key[k] += 1
        yield (replace(_sel(i, "tie_break_key"), key),), f"{_tag(item)} tie-break key {key}"


def _reorder(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    rows = _selected(data)
    for a in range(len(rows) - 1):
        (i, x), (j, y) = rows[a], rows[a + 1]
        if x.get("tie_break_key") != y.get("tie_break_key"):
            ops = (replace(_sel(i), dict(y)), replace(_sel(j), dict(x)))
            yield ops, f"{_tag(x)} and {_tag(y)} swapped against the tie-break order"


def _skip_ranked(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    rows = _selected(data)
    if len(rows) < 2:
        return
    i, first = rows[0]
    tokens, seqs = _used(data)
    width = max(first["end"] - first["start"], 0)
    ops: list[dict[str, Any]] = [remove("/result")] if "result" in data else []
    ops += [
        remove(_sel(i)),
        replace("/plan/budget_ledger/tokens_used", tokens - width),
        replace("/plan/budget_ledger/sequences_used", seqs - 1),
    ]
    yield tuple(ops), f"ready {_tag(first)} ranked first is left out without a reason"


def _not_selected_conflict(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for _, item in _selected(data):
        entry = {
            "request_id": item["request_id"],
            "request_generation": item["request_generation"],
            "reason": "mutant: recorded as deferred",
        }
        yield (add("/plan/not_selected/-", entry),), f"{_tag(item)} also recorded as not selected"


# --------------------------------------------------------------------- leaks


def _leak(key: str, value: Any) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        for record in _ONLINE:
            if isinstance(data.get(record), Mapping):
                yield (add(f"/{record}/{key}", value),), f"{record} carries {key}"
        for i, item in _selected(data):
            yield (add(_sel(i, key), value),), f"selected {_tag(item)} carries {key}"

    return gen


def _hidden_value(data: Mapping[str, Any]) -> Any:
    truth = (data.get("workload") or {}).get("fixture_only_hidden_truth") or {}
    return dict(truth.get("realized_output_tokens") or {"req": 1})


def _leak_hidden(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    yield from _leak("realized_output_tokens", _hidden_value(data))(data, rng)


_leak_blocks = _leak("block_table", [[0, 1, 2]])


# --------------------------------------------------------------------- schema


def _drop_required(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for record, schema in _SCHEMA.items():
        part = data.get(record)
        if not isinstance(part, Mapping):
            continue
        for member in load_schema(schema).get("required", []):
            if member in part:
                yield (remove(f"/{record}/{member}"),), f"{record} loses required {member}"


_SAMPLES: dict[str, Any] = {
    "boolean": True,
    "object": {"mutant": 1},
    "array": ["mutant"],
    "string": "mutant",
    "integer": 7,
}


def _retype(value: Any, prop: Mapping[str, Any]) -> Any:
    """A value whose JSON type the member's schema does not allow."""
    allowed = prop.get("type")
    if isinstance(allowed, str):
        allowed = [allowed]
    if not isinstance(allowed, list):  # a $ref or a const: any other container type fails
        allowed = ["object"] if isinstance(value, Mapping) else []
    if "number" in allowed:
        allowed = [*allowed, "integer"]
    for name, sample in _SAMPLES.items():
        if name not in allowed and type(sample) is not type(value):
            return sample
    return None


def _retype_required(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for record, schema in _SCHEMA.items():
        part = data.get(record)
        if not isinstance(part, Mapping):
            continue
        loaded = load_schema(schema)
        props = loaded.get("properties", {})
        for member in loaded.get("required", []):
            if member in part and member != "schema_version":
                new = _retype(part[member], props.get(member, {}))
                yield (replace(f"/{record}/{member}", new),), f"{record}.{member} retyped"


def _integer_as_float(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    """Identity integers written as floats: -0.0 for 0 (it compares equal), else n.0."""
    state = data.get("state") or {}
    if isinstance(state.get("state_version"), int):
        v = state["state_version"]
        yield (
            (replace("/state/state_version", -0.0 if v == 0 else float(v)),),
            (f"state_version {v} written as a float"),
        )
    for i, item in _selected(data):
        for field in ("request_generation", "snapshot_version"):
            v = item.get(field)
            if isinstance(v, int) and not isinstance(v, bool):
                yield (
                    (replace(_sel(i, field), -0.0 if v == 0 else float(v)),),
                    (f"{_tag(item)} {field} {v} written as {-0.0 if v == 0 else float(v)!r}"),
                )


# --------------------------------------------------------------------- completed service


def _clients(data: Mapping[str, Any]) -> set[str]:
    workload = data.get("workload") or {}
    state = data.get("state") or {}
    named = [*(workload.get("requests") or []), *(state.get("requests") or [])]
    return {r["client"] for r in named if isinstance(r, Mapping) and r.get("client")}


def _drop_service(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    state = data.get("state") or {}
    if "completed_service" in state and _clients(data):
        yield (remove("/state/completed_service"),), "the state drops its completed_service"


def _unknown_service_client(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    state = data.get("state") or {}
    if isinstance(state.get("completed_service"), Mapping):
        known = _clients(data) | set(state["completed_service"])
        names = (f"client-mutant-{k}" for k in range(len(known) + 1))
        client = next(name for name in names if name not in known)
        yield (
            (add(f"/state/completed_service/{client}", 1),),
            f"completed_service counts service for {client}, which no request names",
        )


# --------------------------------------------------------------------- results


def _res(i: int, field: str) -> str:
    return f"/result/items/{i}/{field}"


def _break_output_clock(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _items(data):
        after = item.get("after") or {}
        emitted = after.get("emitted_tokens")
        if not isinstance(emitted, int):
            continue
        for delta in (-1, +1):
            if emitted + delta < 0:
                continue
            ops = [replace(_res(i, "after/emitted_tokens"), emitted + delta)]
            if "logical_length" in after:
                ops.append(
                    replace(_res(i, "after/logical_length"), after["logical_length"] + delta)
                )
            yield tuple(ops), f"{_tag(item)} emitted-after {emitted} -> {emitted + delta}"


def _planned_debit(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _items(data):
        planned, done = item.get("planned") or {}, item.get("completed") or {}
        width = done.get("end", 0) - done.get("start", 0)
        if width < 2 or planned != done:
            continue
        end = done["end"] - 1
        after = item.get("after") or {}
        ops = [replace(_res(i, "completed/end"), end)]
        ops.append(replace(_res(i, "after/computed_tokens"), end))
        if "committed_tokens" in after:
            ops.append(replace(_res(i, "after/committed_tokens"), end))
        yield tuple(ops), f"{_tag(item)} completes one row less, debit stays at planned service"


def _unplanned_item(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    if not _items(data):
        return
    planned = {it["request_id"] for _, it in _selected(data)}
    for rid, (_j, view) in sorted(_views(data).items()):
        if rid in planned or view.get("terminal"):
            continue
        c = view["computed_tokens"]
        item = {
            "request_id": rid,
            "request_generation": view["request_generation"],
            "snapshot_version": view["snapshot_version"],
            "planned": {"start": c, "end": c + 1},
            "completed": {"start": c, "end": c + 1},
            "before": {
                "emitted_tokens": view["emitted_tokens"],
                "computed_tokens": c,
                "committed_tokens": view["committed_tokens"],
            },
            "after": {
                "emitted_tokens": view["emitted_tokens"],
                "computed_tokens": c + 1,
                "committed_tokens": c + 1,
            },
        }
        yield (add("/result/items/-", item),), f"result completes unplanned work for {rid}"


def _result_field(field: str, delta: int) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        result = data.get("result")
        if isinstance(result, Mapping) and isinstance(result.get(field), int):
            value = result[field]
            yield (
                (replace(f"/result/{field}", value + delta),),
                f"result {field} {value} -> {value + delta}",
            )

    return gen


def _committed_ahead(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _items(data):
        after = item.get("after") or {}
        if isinstance(after.get("computed_tokens"), int) and "committed_tokens" in after:
            value = after["computed_tokens"] + 1
            yield (
                (replace(_res(i, "after/committed_tokens"), value),),
                f"{_tag(item)} committed {value} > computed",
            )


def _outside_plan(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _items(data):
        done = item.get("completed")
        if isinstance(done, Mapping):
            end = done["end"] + 1
            yield (replace(_res(i, "completed/end"), end),), f"{_tag(item)} completes past its plan"


def _drop_item(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, item in _items(data):
        yield (remove(f"/result/items/{i}"),), f"planned {_tag(item)} has no result item"


def _debit_drift(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    result = data.get("result")
    if not isinstance(result, Mapping):
        return
    for i, debit in enumerate(result.get("service_debits") or []):
        value = debit["tokens"] + 1
        yield (
            (replace(f"/result/service_debits/{i}/tokens", value),),
            f"{debit['client']} debited {value}",
        )


# --------------------------------------------------------------------- state frontiers


def _committed_not_computed(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for rid, (j, view) in sorted(_views(data).items()):
        if view.get("computed_tokens", 0) >= 1:
            value = view["computed_tokens"] - 1
            yield (
                (replace(f"/state/requests/{j}/committed_tokens", value),),
                f"{rid} committed k={value} < c",
            )


def _frontier_inconsistent(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for rid, (j, view) in sorted(_views(data).items()):
        if view.get("emitted_tokens", 0) >= 1 and not view.get("terminal"):
            c = view["computed_tokens"] + 1
            ops = (
                replace(f"/state/requests/{j}/computed_tokens", c),
                replace(f"/state/requests/{j}/committed_tokens", c),
            )
            yield ops, f"decoding {rid} has c = p + e, not p + e - 1"


def _floor_after_output(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for rid, (j, view) in sorted(_views(data).items()):
        if view.get("emitted_tokens", 0) >= 1:
            value = max(1, view["computed_tokens"])
            yield (
                (add(f"/state/requests/{j}/rebuild_floor", value),),
                f"{rid} (e={view['emitted_tokens']}) declares rebuild_floor {value}",
            )


def _floor_beyond_prompt(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for rid, (j, view) in sorted(_views(data).items()):
        if view.get("emitted_tokens", 0) == 0:
            value = view["prompt_tokens"] + 1
            yield (
                (add(f"/state/requests/{j}/rebuild_floor", value),),
                f"{rid} declares rebuild_floor {value} past its prompt",
            )


def _floor_raised(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    """Declare that a prefilling request's served rows had all been computed before."""
    done = {
        item.get("request_id"): item["completed"]["end"]
        for _, item in _items(data)
        if isinstance(item.get("completed"), Mapping)
    }
    for rid, (j, view) in sorted(_views(data).items()):
        end = done.get(rid)
        if (
            end is not None
            and view.get("emitted_tokens", 0) == 0
            and view.get("client") is not None
            and "rebuild_floor" not in view
            and end > view.get("computed_tokens", 0)
        ):
            yield (
                (add(f"/state/requests/{j}/rebuild_floor", end),),
                f"{rid} declares rebuild_floor {end}: its served prompt rows were computed before",
            )


def _op(name: str, record: str, pointer: str, changes: str, expect: str, gen: Any) -> Operator:
    return Operator(name, LOOP, TARGET, _RECORD[record], pointer, changes, expect, gen)


OPERATORS: tuple[Operator, ...] = (
    _op(
        "plan.interval.before-frontier",
        "plan",
        "/plan/selected/*/start",
        "shift an interval one row before the computed frontier",
        "PLAN.INTERVAL.BEFORE_FRONTIER",
        _before_frontier,
    ),
    _op(
        "plan.interval.after-frontier",
        "plan",
        "/plan/selected/*/start",
        "shift an interval one row past the computed frontier",
        "PLAN.INTERVAL.AFTER_FRONTIER",
        _after_frontier,
    ),
    _op(
        "plan.decode.two-rows",
        "plan",
        "/plan/selected/*/end",
        "widen an ordinary decode to two rows",
        "PLAN.DECODE.MULTI_ROW",
        _decode_two_rows,
    ),
    _op(
        "plan.interval.past-prompt",
        "plan",
        "/plan/selected/*/end",
        "end a prefill chunk one row past the prompt",
        "PLAN.INTERVAL.BEYOND_PROMPT",
        _past_prompt,
    ),
    _op(
        "plan.interval.empty",
        "plan",
        "/plan/selected/*/end",
        "make a selected interval empty",
        "PLAN.INTERVAL.EMPTY",
        _empty,
    ),
    _op(
        "plan.request.duplicate",
        "plan",
        "/plan/selected/-",
        "select a request generation a second time",
        "PLAN.REQUEST.DUPLICATE",
        _duplicate,
    ),
    _op(
        "plan.request.unknown",
        "plan",
        "/plan/selected/*/request_id",
        "rename selected work to a request the state lacks",
        "PLAN.REQUEST.UNKNOWN",
        _unknown_request,
    ),
    _op(
        "plan.state-version.bump",
        "plan",
        "/plan/input_state_version",
        "raise the plan's input_state_version by one",
        "PLAN.STATE_VERSION.MISMATCH",
        _bump("/plan/input_state_version", 1, "input_state_version"),
    ),
    _op(
        "plan.state-version.lower",
        "plan",
        "/plan/input_state_version",
        "lower the plan's input_state_version by one (a retry from an old cut)",
        "PLAN.STATE_VERSION.MISMATCH",
        _bump("/plan/input_state_version", -1, "input_state_version"),
    ),
    _op(
        "plan.decision.bump",
        "plan",
        "/plan/decision_id",
        "answer the next decision",
        "PLAN.DECISION.MISMATCH",
        _bump("/plan/decision_id", 1, "decision_id"),
    ),
    _op(
        "plan.decision.lower",
        "plan",
        "/plan/decision_id",
        "answer the previous decision",
        "PLAN.DECISION.MISMATCH",
        _bump("/plan/decision_id", -1, "decision_id"),
    ),
    _op(
        "plan.snapshot.bump",
        "plan",
        "/plan/selected/*/snapshot_version",
        "bind selected work to a newer M5.1 snapshot",
        "PLAN.SNAPSHOT.STALE",
        _item_bump("snapshot_version", 1),
    ),
    _op(
        "plan.snapshot.lower",
        "plan",
        "/plan/selected/*/snapshot_version",
        "bind selected work to an older M5.1 snapshot",
        "PLAN.SNAPSHOT.STALE",
        _item_bump("snapshot_version", -1),
    ),
    _op(
        "plan.generation.bump",
        "plan",
        "/plan/selected/*/request_generation",
        "select a request generation that does not exist yet",
        "PLAN.GENERATION.STALE",
        _item_bump("request_generation", 1),
    ),
    _op(
        "plan.generation.lower",
        "plan",
        "/plan/selected/*/request_generation",
        "select an earlier (stale) request generation",
        "PLAN.GENERATION.STALE",
        _item_bump("request_generation", -1),
    ),
    _op(
        "plan.generation.swap",
        "plan",
        "/plan/selected/*/request_generation",
        "swap the generations of two selected requests",
        "PLAN.GENERATION.STALE",
        _swap_generations,
    ),
    _op(
        "state.ready.flip",
        "state",
        "/state/requests/*/ready",
        "mark a selected request not ready (foreign readiness false)",
        "PLAN.REQUEST.NOT_READY",
        _flip_ready,
    ),
    _op(
        "state.terminal.flip",
        "state",
        "/state/requests/*/terminal",
        "mark a selected request generation terminal",
        "PLAN.REQUEST.TERMINAL",
        _flip_terminal,
    ),
    _op(
        "state.queue.duplicate",
        "state",
        "/state/requests/-",
        "list a queue member twice",
        "STATE.REQUEST.DUPLICATE",
        _duplicate_queue_member,
    ),
    _op(
        "state.committed.behind",
        "state",
        "/state/requests/*/committed_tokens",
        "publish a committed length below the computed frontier",
        "STATE.COMMITTED.NOT_AT_COMPUTED",
        _committed_not_computed,
    ),
    _op(
        "state.frontier.skew",
        "state",
        "/state/requests/*/computed_tokens",
        "advance a decoding request's computed frontier to p + e",
        "STATE.FRONTIER.INCONSISTENT",
        _frontier_inconsistent,
    ),
    _op(
        "plan.budget.token-exceeded",
        "workload",
        "/workload/budgets/token_budget",
        "lower the token budget to one below what the plan uses",
        "PLAN.BUDGET.TOKEN_EXCEEDED",
        _budget_exceeded("token_budget"),
    ),
    _op(
        "plan.budget.sequence-exceeded",
        "workload",
        "/workload/budgets/sequence_budget",
        "lower the sequence budget to one below what the plan uses",
        "PLAN.BUDGET.SEQUENCE_EXCEEDED",
        _budget_exceeded("sequence_budget"),
    ),
    _op(
        "plan.ledger.tokens-drift",
        "plan",
        "/plan/budget_ledger/tokens_used",
        "move the ledger's tokens_used by one",
        "PLAN.LEDGER.TOKENS_DRIFT",
        _ledger_drift("tokens_used"),
    ),
    _op(
        "plan.ledger.sequences-drift",
        "plan",
        "/plan/budget_ledger/sequences_used",
        "move the ledger's sequences_used by one",
        "PLAN.LEDGER.SEQUENCES_DRIFT",
        _ledger_drift("sequences_used"),
    ),
    _op(
        "plan.ledger.token-budget-drift",
        "plan",
        "/plan/budget_ledger/token_budget",
        "move the ledger's copy of the token budget by one",
        "PLAN.LEDGER.BUDGET_MISMATCH",
        _ledger_drift("token_budget"),
    ),
    _op(
        "plan.ledger.sequence-budget-drift",
        "plan",
        "/plan/budget_ledger/sequence_budget",
        "move the ledger's copy of the sequence budget by one",
        "PLAN.LEDGER.BUDGET_MISMATCH",
        _ledger_drift("sequence_budget"),
    ),
    _op(
        "plan.phase.forge",
        "plan",
        "/plan/selected/*/phase",
        "flip the derived phase annotation",
        "PLAN.PHASE.FORGED",
        _forge_phase,
    ),
    _op(
        "plan.positions.forge",
        "plan",
        "/plan/selected/*/positions/*",
        "move one position of the trace off range(start, end)",
        "PLAN.POSITIONS.FORGED",
        _forge_positions,
    ),
    _op(
        "plan.policy.version-forge",
        "plan",
        "/plan/policy_version",
        "claim another policy version",
        "PLAN.POLICY.VERSION_MISMATCH",
        _forge_string("/plan/policy_version", "policy_version"),
    ),
    _op(
        "plan.policy.id-forge",
        "plan",
        "/plan/policy_id",
        "claim another policy",
        "PLAN.POLICY.ID_MISMATCH",
        _forge_string("/plan/policy_id", "policy_id"),
    ),
    _op(
        "plan.tie-break.forge",
        "plan",
        "/plan/selected/*/tie_break_key/*",
        "change one component of a recorded tie-break key",
        "PLAN.TIE_BREAK.FORGED",
        _forge_tie_break,
    ),
    _op(
        "plan.tie-break.reorder",
        "plan",
        "/plan/selected/*",
        "swap two adjacent selected items against the key order",
        "PLAN.TIE_BREAK.ORDER",
        _reorder,
    ),
    _op(
        "plan.tie-break.skip",
        "plan",
        "/plan/selected/0",
        "leave the first-ranked ready request out without a reason",
        "PLAN.TIE_BREAK.SKIPPED_UNEXPLAINED",
        _skip_ranked,
    ),
    _op(
        "plan.not-selected.conflict",
        "plan",
        "/plan/not_selected/-",
        "record selected work as not selected too",
        "PLAN.NOT_SELECTED.CONFLICT",
        _not_selected_conflict,
    ),
    _op(
        "leak.hidden-truth",
        "plan",
        "/{state,plan,result}/realized_output_tokens",
        "inject the fixture's realized output lengths into an online record",
        "PLAN.LEAK.HIDDEN_TRUTH",
        _leak_hidden,
    ),
    _op(
        "leak.physical-block",
        "plan",
        "/{state,plan,result}/block_table",
        "inject a physical block table into an online record",
        "PLAN.LEAK.PHYSICAL_BLOCK",
        _leak_blocks,
    ),
    _op(
        "schema.required.drop",
        "plan",
        "/{workload,state,plan,result}/<required>",
        "drop a required member of a record",
        "SCHEMA.REQUIRED",
        _drop_required,
    ),
    _op(
        "schema.type.retype",
        "plan",
        "/{workload,state,plan,result}/<required>",
        "give a required member the wrong JSON type",
        "SCHEMA.TYPE",
        _retype_required,
    ),
    _op(
        "result.output-clock.break",
        "result",
        "/result/items/*/after/emitted_tokens",
        "move emitted-after by one (logical length kept consistent)",
        "RESULT.OUTPUT_CLOCK.WRONG",
        _break_output_clock,
    ),
    _op(
        "result.debit.planned-service",
        "result",
        "/result/items/*/completed/end",
        "complete one row less but keep debiting the planned service",
        "RESULT.DEBIT.PLANNED_SERVICE",
        _planned_debit,
    ),
    _op(
        "result.debit.drift",
        "result",
        "/result/service_debits/*/tokens",
        "debit one token more than completed",
        "RESULT.DEBIT.MISMATCH",
        _debit_drift,
    ),
    _op(
        "result.item.unplanned",
        "result",
        "/result/items/-",
        "publish a completion for a request the plan never selected",
        "RESULT.ITEM.UNPLANNED",
        _unplanned_item,
    ),
    _op(
        "result.item.drop",
        "result",
        "/result/items/*",
        "drop the result item of planned work",
        "RESULT.ITEM.MISSING",
        _drop_item,
    ),
    _op(
        "result.binding.decision",
        "result",
        "/result/decision_id",
        "bind the result to another decision",
        "RESULT.DECISION.MISMATCH",
        _result_field("decision_id", 1),
    ),
    _op(
        "result.binding.state-version",
        "result",
        "/result/input_state_version",
        "bind the result to another state version",
        "RESULT.STATE_VERSION.MISMATCH",
        _result_field("input_state_version", 1),
    ),
    _op(
        "result.binding.generation",
        "result",
        "/result/items/*/request_generation",
        "publish a completion for an old request generation",
        "RESULT.GENERATION.STALE",
        _item_bump("request_generation", 1, where="result"),
    ),
    _op(
        "result.binding.snapshot",
        "result",
        "/result/items/*/snapshot_version",
        "publish a completion bound to another snapshot",
        "RESULT.SNAPSHOT.STALE",
        _item_bump("snapshot_version", 1, where="result"),
    ),
    _op(
        "result.committed.ahead",
        "result",
        "/result/items/*/after/committed_tokens",
        "publish committed length ahead of computed",
        "RESULT.COMMITTED.AHEAD",
        _committed_ahead,
    ),
    _op(
        "result.completed.outside-plan",
        "result",
        "/result/items/*/completed/end",
        "complete one row past the planned interval",
        "RESULT.INTERVAL.OUTSIDE_PLAN",
        _outside_plan,
    ),
    _op(
        "state.rebuild-floor.after-output",
        "state",
        "/state/requests/*/rebuild_floor",
        "declare a rebuild floor on a request that has emitted output",
        "STATE.REBUILD_FLOOR.AFTER_OUTPUT",
        _floor_after_output,
    ),
    _op(
        "state.rebuild-floor.beyond-prompt",
        "state",
        "/state/requests/*/rebuild_floor",
        "declare a rebuild floor past the prompt of a request that has not emitted",
        "STATE.REBUILD_FLOOR.BEYOND_PROMPT",
        _floor_beyond_prompt,
    ),
    _op(
        "state.rebuild-floor.raised",
        "state",
        "/state/requests/*/rebuild_floor",
        "declare a prefilling request's served rows computed before (a re-prefill): the"
        " unchanged debit now charges rebuild rows as service",
        "RESULT.DEBIT.REBUILD_AS_SERVICE",
        _floor_raised,
    ),
    _op(
        "schema.integer.float",
        "plan",
        "/{state/state_version,plan/selected/*/request_generation,...}",
        "write an identity integer as a float (-0.0 for 0, n.0 otherwise)",
        "SCHEMA.INTEGER.FLOAT",
        _integer_as_float,
    ),
    _op(
        "state.completed-service.drop",
        "state",
        "/state/completed_service",
        "drop the completed-service ledger although the workload names clients",
        "STATE.COMPLETED_SERVICE.MISSING",
        _drop_service,
    ),
    _op(
        "state.completed-service.unknown-client",
        "state",
        "/state/completed_service/-",
        "count completed service for a client no request names",
        "STATE.COMPLETED_SERVICE.UNKNOWN_CLIENT",
        _unknown_service_client,
    ),
)
