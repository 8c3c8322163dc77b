"""Loop 8 operators (article 0x09A): fairness without a client, an interval or a cost function.

Each operator breaks one declaration of the `fairness-fixture` that the oracle derives or
guards: the protected identity and the publication event of the accounting contract, the
client-flood outcomes (backlogged gap, final service, SLO by identity, starvation), the VTC lift,
bound and theorem assumptions, the completion-reconciled counter trace, the aging, quota and
MLFQ liveness probes, and the claims the synthetic evidence may not make.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from cbaudit.mutate.operators import Edit, Operator, remove, replace
from cbaudit.mutate.patch import pointer_of

TARGET = "oracle:fairness-starvation"  # cbaudit.sim.fairness_oracle.NAME (a test holds it)
LOOP = "8"


def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    value = data.get(name)
    return value if isinstance(value, Mapping) else None


def _flood_policies(data: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    flood = _section(data, "client_flood") or {}
    return [
        (p, d) for p, d in sorted((flood.get("policies") or {}).items()) if isinstance(d, Mapping)
    ]


def _event_cost(data: Mapping[str, Any]) -> int:
    flood = _section(data, "client_flood") or {}
    acc = _section(data, "accounting") or {}
    weight = acc.get("w_p", 1) if flood.get("event_phase") == "input" else acc.get("w_q", 1)
    return int(weight) * int(flood.get("event_rows", 1))


# --------------------------------------------------------------------- accounting contract


def _identity(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    acc = _section(data, "accounting")
    if acc is not None and acc.get("guarantee") == "client_service_bound":
        yield (
            (replace("/accounting/protected_identity", "request"),),
            "request-level identity presented as client fairness",
        )


def _publication(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    if _section(data, "accounting") is not None:
        event = rng.choice(("selected", "admitted", "executed"))
        yield (
            (replace("/accounting/publication_event", event),),
            f"service published at {event}, before completion",
        )


def _inflate(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    claim = _section(data, "claim")
    if claim is None:
        return
    yield (
        (replace("/claim/evidence_class", "measured_gpu"),),
        "synthetic output labelled measured_gpu",
    )
    scope = [k for k, v in sorted((claim.get("scope") or {}).items()) if v is False]
    if scope:
        key = rng.choice(scope)
        yield (replace(pointer_of("claim", "scope", key), True),), f"scope claims {key}"


# --------------------------------------------------------------------- client flood


def _gap(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    cost = _event_cost(data)
    for policy, declared in _flood_policies(data):
        if isinstance(declared.get("max_backlogged_gap"), int):
            value = declared["max_backlogged_gap"] + cost
            ptr = pointer_of("client_flood", "policies", policy, "max_backlogged_gap")
            yield (replace(ptr, value),), f"{policy} declared a backlogged gap of {value}"


def _final_service(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    cost = _event_cost(data)
    for policy, declared in _flood_policies(data):
        service = declared.get("final_service")
        if isinstance(service, Mapping) and service:
            client = rng.choice(sorted(service))
            value = int(service[client]) + cost
            ptr = pointer_of("client_flood", "policies", policy, "final_service", client)
            yield (replace(ptr, value),), f"{policy}: a planned event counted ({client}={value})"


def _slo_by_identity(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for policy, declared in _flood_policies(data):
        valid = declared.get("slo_valid")
        if not isinstance(valid, Mapping) or len(valid) < 2:
            continue
        clients = sorted(valid, key=lambda c: (-int(valid[c]), c))
        rich, poor = clients[0], clients[-1]
        if int(valid[rich]) >= 1:
            ptr = pointer_of("client_flood", "policies", policy, "slo_valid")
            moved = {**valid, rich: int(valid[rich]) - 1, poor: int(valid[poor]) + 1}
            yield (replace(ptr, moved),), f"{policy}: one on-time completion moved {rich} -> {poor}"


def _starved_declared(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    flood = _section(data, "client_flood") or {}
    clients = sorted(flood.get("clients") or {})
    for policy, declared in _flood_policies(data):
        starved = list(declared.get("starved") or [])
        fresh = [c for c in clients if c not in starved]
        if fresh:
            client = rng.choice(fresh)
            ptr = pointer_of("client_flood", "policies", policy, "starved")
            yield (replace(ptr, [*starved, client]),), f"{policy} declared to starve {client}"


# --------------------------------------------------------------------- VTC


def _no_lift(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    lift = _section(data, "vtc_lift")
    if lift is None or not isinstance(lift.get("expect"), int | float):
        return
    idle = (lift.get("counters") or {}).get(lift.get("entering"))
    value = idle if isinstance(idle, int | float) and idle != lift["expect"] else lift["expect"] + 1
    yield (replace("/vtc_lift/expect", value),), f"the entering client rejoins at {value}"


def _bound(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    bound = _section(data, "vtc_bound")
    for key, value in sorted(((bound or {}).get("expect") or {}).items()):
        if isinstance(value, int | float):
            wrong = value // 2 if value > 1 else value + 1
            yield (
                (replace(pointer_of("vtc_bound", "expect", key), wrong),),
                f"{key} declared {wrong}",
            )


def _assumption(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    bound = _section(data, "vtc_bound")
    if bound is None:
        return
    from cbaudit.oracles.fairness.accounting import (
        VTC_ASSUMPTIONS,  # the oracle's own list, loaded on use
    )

    stated = bound.get("assumptions") or {}
    for name in VTC_ASSUMPTIONS:
        ops: list[dict[str, Any]] = [replace("/vtc_bound/claims_theorem_bound", True)]
        if name in stated:
            ops.append(remove(pointer_of("vtc_bound", "assumptions", name)))
        yield tuple(ops), f"the 2U bound claimed without {name}"


def _trace(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    section = _section(data, "completion_reconciled")
    for i, step in enumerate((section or {}).get("expect_trace") or []):
        if not isinstance(step, Mapping):
            continue
        for key in ("C_select", "W_done"):
            values = step.get(key)
            if isinstance(values, list) and values:
                j = rng.randrange(len(values))
                ptr = pointer_of("completion_reconciled", "expect_trace", i, key, j)
                yield (replace(ptr, values[j] + 1),), f"tick {step.get('tick')}: {key}[{j}] drifts"


def _adaptation_theorem(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    if _section(data, "completion_reconciled") is not None:
        yield (
            (replace("/completion_reconciled/claims_theorem", True),),
            "the completion-reconciled adaptation claims VTC's theorem",
        )


# --------------------------------------------------------------------- liveness probes


#: The identity each liveness probe protects (named when a mutant declares it starved).
PROBE_IDENTITY = {"priority": "old", "prefix_quota": "cold", "mlfq": "long"}


def _drift_fields(data: Mapping[str, Any], section: str, rng: random.Random) -> Iterator[Edit]:
    """Move every declared integer/null/list outcome of `section.expect` off the probe."""
    block = _section(data, section)
    for name, declared in sorted(((block or {}).get("expect") or {}).items()):
        items = declared.items() if isinstance(declared, Mapping) else [(None, declared)]
        for field, value in sorted(items, key=lambda kv: str(kv[0])):
            tokens = (
                [section, "expect", name] if field is None else [section, "expect", name, field]
            )
            if isinstance(value, bool):
                continue
            if isinstance(value, int):
                wrong: Any = value + rng.choice((-1, 1)) if value > 0 else value + 1
            elif value is None:
                wrong = 0
            elif isinstance(value, list):
                wrong = [] if value else [PROBE_IDENTITY[section]]
            else:
                continue
            yield (
                (replace(pointer_of(*tokens), wrong),),
                f"{'/'.join(map(str, tokens[2:]))} -> {wrong!r}",
            )


def _priority(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    yield from _drift_fields(data, "priority", rng)


def _quota(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    yield from _drift_fields(data, "prefix_quota", rng)


def _mlfq(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    yield from _drift_fields(data, "mlfq", rng)


def _preble(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    if _section(data, "prefix_quota") is not None:
        yield (replace("/prefix_quota/label", "preble"),), "the teaching quota presented as Preble"


def _missing_class(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    groups = list((_section(data, "prefix_quota") or {}).get("protected_groups") or [])
    for j, group in enumerate(groups):
        yield (remove(pointer_of("prefix_quota", "protected_groups", j)),), f"{group} unprotected"


def _no_pressure(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    mlfq = _section(data, "mlfq")
    if mlfq is not None and mlfq.get("short_arrival_every"):
        yield (replace("/mlfq/short_arrival_every", 0),), "no short job ever arrives"


def _mlfq_client_bound(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    if _section(data, "mlfq") is not None:
        yield (
            (replace("/mlfq/claims_client_bound", True),),
            "skip-join MLFQ presented with a client service bound",
        )


def _op(name: str, record: str, pointer: str, changes: str, expect: str, gen: Any) -> Operator:
    return Operator(name, LOOP, TARGET, record, pointer, changes, expect, gen)


_ACC = "fairness accounting contract"
_FLOOD = "client flood"
_VTC = "VTC probe"
_LIVE = "liveness probe"

OPERATORS: tuple[Operator, ...] = (
    _op(
        "fair.identity.request",
        _ACC,
        "/accounting/protected_identity",
        "present request-level identity as client fairness",
        "FAIR.IDENTITY.MISMATCH",
        _identity,
    ),
    _op(
        "fair.publication.early",
        _ACC,
        "/accounting/publication_event",
        "publish service at selection, admission or execution instead of completion",
        "FAIR.ACCOUNTING.PUBLICATION",
        _publication,
    ),
    _op(
        "fair.claim.inflated",
        "claim",
        "/claim/{evidence_class,scope/*}",
        "label synthetic output measured_gpu or claim a production scope",
        "FAIR.CLAIM.INFLATED",
        _inflate,
    ),
    _op(
        "fair.flood.gap",
        _FLOOD,
        "/client_flood/policies/*/max_backlogged_gap",
        "declare a backlogged service gap one event off the replay",
        "FAIR.FLOOD.GAP",
        _gap,
    ),
    _op(
        "fair.flood.service",
        _FLOOD,
        "/client_flood/policies/*/final_service/*",
        "count one planned event as published service",
        "FAIR.FLOOD.SERVICE",
        _final_service,
    ),
    _op(
        "fair.flood.slo-by-identity",
        _FLOOD,
        "/client_flood/policies/*/slo_valid",
        "move one on-time completion to the other client",
        "FAIR.SLO.BY_IDENTITY",
        _slo_by_identity,
    ),
    _op(
        "fair.flood.starved",
        _FLOOD,
        "/client_flood/policies/*/starved",
        "declare a served client starved",
        "FAIR.STARVATION.DECLARED",
        _starved_declared,
    ),
    _op(
        "fair.vtc.no-lift",
        _VTC,
        "/vtc_lift/expect",
        "let the entering client rejoin at its idle counter",
        "FAIR.VTC.LIFT",
        _no_lift,
    ),
    _op(
        "fair.vtc.bound",
        _VTC,
        "/vtc_bound/expect/{U,two_U}",
        "declare U or 2U off max(w_p L_input, w_q M)",
        "FAIR.VTC.BOUND",
        _bound,
    ),
    _op(
        "fair.vtc.assumption",
        _VTC,
        "/vtc_bound/{claims_theorem_bound,assumptions/*}",
        "claim the 2U bound with one theorem assumption missing",
        "FAIR.VTC.ASSUMPTION",
        _assumption,
    ),
    _op(
        "fair.reconciled.trace",
        "completion-reconciled trace",
        "/completion_reconciled/expect_trace/*/{C_select,W_done}/*",
        "move one provisional or authoritative counter of the trace",
        "FAIR.RECONCILED.TRACE",
        _trace,
    ),
    _op(
        "fair.reconciled.theorem",
        "completion-reconciled trace",
        "/completion_reconciled/claims_theorem",
        "present the completion adaptation as theorem-preserving",
        "FAIR.CLAIM.ADAPTATION_THEOREM",
        _adaptation_theorem,
    ),
    _op(
        "fair.priority.trace",
        _LIVE,
        "/priority/expect/*/*",
        "declare a static-priority or aging outcome the probe does not give",
        "FAIR.PRIORITY.TRACE",
        _priority,
    ),
    _op(
        "fair.quota.counts",
        _LIVE,
        "/prefix_quota/expect/*/*",
        "declare reuse-greedy or quota completions the probe does not give",
        "FAIR.QUOTA.COUNTS",
        _quota,
    ),
    _op(
        "fair.quota.preble",
        _LIVE,
        "/prefix_quota/label",
        "present the teaching cache quota as exact Preble",
        "FAIR.CLAIM.PREBLE",
        _preble,
    ),
    _op(
        "fair.quota.missing-class",
        _LIVE,
        "/prefix_quota/protected_groups/*",
        "leave a pressured group out of the protected classes",
        "FAIR.PROBE.MISSING_CLASS",
        _missing_class,
    ),
    _op(
        "fair.mlfq.trace",
        _LIVE,
        "/mlfq/expect/*",
        "declare a skip-join or promotion outcome the probe does not give",
        "FAIR.MLFQ.TRACE",
        _mlfq,
    ),
    _op(
        "fair.mlfq.no-pressure",
        _LIVE,
        "/mlfq/short_arrival_every",
        "let no short job arrive, so the promotion probe has no pressure",
        "FAIR.PROBE.NO_PRESSURE",
        _no_pressure,
    ),
    _op(
        "fair.mlfq.client-bound",
        _LIVE,
        "/mlfq/claims_client_bound",
        "present FastServe's MLFQ with a client service bound",
        "FAIR.CLAIM.MLFQ_CLIENT_BOUND",
        _mlfq_client_bound,
    ),
)
