"""Loop 9 operators (article 0x0C): break a receipt binding, an epoch, a ticket or a rebuild.

A foreign receipt counts only when its owner owns the fact and all four binding fields
(request_id, generation, snapshot_sha256, suspension_epoch) match an intent that binds the
request's current generation, digest and epoch. The operators break one field of that binding
(on a receipt, the intent or the declared ticket), the epoch order, the readiness conjunction
behind a ticket, the ticket's intervals and receipts, the rebuild effect (no output, no
frontier, no service), the latency clock, the capacity a release may publish, and the claims
the synthetic evidence may not make.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from cbaudit.mutate.operators import Edit, Operator, add, remove, replace
from cbaudit.mutate.patch import pointer_of

TARGET = "oracle:preemption-resume"  # cbaudit.sim.preemption_oracle.NAME (a test holds it)
LOOP = "9"
BINDING_FIELDS = ("request_id", "generation", "snapshot_sha256", "suspension_epoch")
#: Logical K/V bytes of one row (M5.1 ABI): a capacity declaration off by one row.
ROW_BYTES = 131072


def _cases(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    return [(i, c) for i, c in enumerate(data.get("cases") or []) if isinstance(c, Mapping)]


def _binding_of(request: Mapping[str, Any]) -> dict[str, Any]:
    return {k: request.get(k) for k in BINDING_FIELDS}


def _live(case: Mapping[str, Any]) -> bool:
    """The intent binds the request's current (not cancelled) generation."""
    request, intent = case.get("request") or {}, case.get("intent") or {}
    return request.get("lifecycle") != "CANCELLED" and intent.get("binding") == _binding_of(request)


def _declared(case: Mapping[str, Any]) -> Mapping[str, Any]:
    value = case.get("declared")
    return value if isinstance(value, Mapping) else {}


def _resumable(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    return [
        (i, c)
        for i, c in _cases(data)
        if _live(c)
        and _declared(c).get("outcome") == "resumable"
        and isinstance(_declared(c).get("ticket"), Mapping)
    ]


def _current_receipts(
    data: Mapping[str, Any],
) -> Iterator[tuple[int, Mapping[str, Any], int, Mapping[str, Any]]]:
    """Receipts of live cases that currently match their intent (not stale, right owner)."""
    from cbaudit.contract.preemption import OWNERS  # the contract's table, loaded on use

    for i, case in _cases(data):
        if not _live(case):
            continue
        key = (case.get("intent") or {}).get("binding")
        for j, rc in enumerate(case.get("receipts") or []):
            if (
                isinstance(rc, Mapping)
                and rc.get("binding") == key
                and OWNERS.get(str(rc.get("kind"))) == rc.get("owner")
            ):
                yield i, case, j, rc


def _changed(field: str, value: Any, rng: random.Random, delta: int = 1) -> Any:
    """Another value of one binding field."""
    if field == "request_id":
        return f"{value}-other"
    if field == "snapshot_sha256":
        text = str(value)
        k = rng.randrange(len(text)) if text else 0
        return text[:k] + ("0" if text[k : k + 1] != "0" else "1") + text[k + 1 :]
    return int(value) + delta


# ------------------------------------------------------------------- receipt bindings


def _receipt_field(field: str, delta: int = 1) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        for i, _case, j, rc in _current_receipts(data):
            old = rc["binding"][field]
            if field == "suspension_epoch" and int(old) + delta < 0:
                continue
            value = _changed(field, old, rng, delta)
            ptr = pointer_of("cases", i, "receipts", j, "binding", field)
            yield (replace(ptr, value),), f"{rc['receipt_id']} binds {field}={value}"

    return gen


def _intent_epoch(delta: int) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        for i, case in _resumable(data):
            epoch = int(case["intent"]["binding"]["suspension_epoch"]) + delta
            if epoch >= 0:
                ptr = pointer_of("cases", i, "intent", "binding", "suspension_epoch")
                yield (replace(ptr, epoch),), f"{case['case_id']}: intent binds epoch {epoch}"

    return gen


def _ticket_binding(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _resumable(data):
        field = rng.choice(BINDING_FIELDS)
        old = case["declared"]["ticket"]["binding"][field]
        value = _changed(field, old, rng)
        ptr = pointer_of("cases", i, "declared", "ticket", "binding", field)
        yield (replace(ptr, value),), f"{case['case_id']}: ticket binds {field}={value}"


def _epoch_not_monotone(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _cases(data):
        request = case.get("request") or {}
        epoch = request.get("suspension_epoch")
        if not isinstance(epoch, int):
            continue
        prior = list(request.get("prior_epochs") or [])
        ptr = pointer_of("cases", i, "request", "prior_epochs")
        yield (
            (replace(ptr, [*prior, epoch]) if "prior_epochs" in request else add(ptr, [epoch]),),
            f"{case['case_id']}: epoch {epoch} follows a prior epoch {epoch}",
        )


# ------------------------------------------------------------------- receipts and capacity


def _wrong_owner(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    from cbaudit.contract.preemption import OWNERS

    modules = sorted(set(OWNERS.values()))
    for i, _case, j, rc in _current_receipts(data):
        owner = rng.choice([m for m in modules if m != rc["owner"]])
        ptr = pointer_of("cases", i, "receipts", j, "owner")
        yield (replace(ptr, owner),), f"{rc['receipt_id']} published by {owner}"


def _failed_ready(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _cases(data):
        for j, rc in enumerate(case.get("receipts") or []):
            if (
                isinstance(rc, Mapping)
                and rc.get("kind") == "preservation"
                and rc.get("status") == "FAILED"
            ):
                rows = int((case.get("request") or {}).get("computed_tokens", 1))
                ptr = pointer_of("cases", i, "receipts", j, "exact_ready_prefix_tokens")
                yield (add(ptr, rows),), f"FAILED {rc['receipt_id']} claims {rows} ready rows"


def _pending_capacity(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, _case, j, rc in _current_receipts(data):
        if (
            rc.get("kind") == "release"
            and rc.get("status") == "READY"
            and rc.get("reclaimed_bytes")
        ):
            ptr = pointer_of("cases", i, "receipts", j, "status")
            yield (replace(ptr, "INFLIGHT"),), f"{rc['receipt_id']} in flight still reports bytes"


def _capacity_drift(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _cases(data):
        cap = _declared(case).get("published_capacity_bytes")
        if isinstance(cap, int) and cap > 0:
            value = cap + rng.choice((-1, 1)) * ROW_BYTES
            ptr = pointer_of("cases", i, "declared", "published_capacity_bytes")
            yield (replace(ptr, value),), f"{case['case_id']}: publishes {value} bytes"


def _stale_misclassified(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _cases(data):
        stale = _declared(case).get("stale_receipts")
        if not isinstance(stale, list):
            continue
        ptr = pointer_of("cases", i, "declared", "stale_receipts")
        if stale:
            yield (replace(ptr, stale[1:]),), f"{case['case_id']}: {stale[0]} declared current"
        else:
            ids = [
                rc.get("receipt_id") for rc in case.get("receipts") or [] if isinstance(rc, Mapping)
            ]
            if ids:
                rid = rng.choice(ids)
                yield (replace(ptr, [rid]),), f"{case['case_id']}: current {rid} declared stale"


# ------------------------------------------------------------------- tickets


def _frontier(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _cases(data):
        target = (case.get("intent") or {}).get("semantic_target_tokens")
        if isinstance(target, int):
            ptr = pointer_of("cases", i, "intent", "semantic_target_tokens")
            yield (replace(ptr, target + 1),), f"{case['case_id']}: T_target {target + 1}"


def _rebuild_interval(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _resumable(data):
        interval = case["declared"]["ticket"]["rebuild_interval"]
        start = 0 if interval["start"] != 0 else interval["end"]
        ptr = pointer_of("cases", i, "declared", "ticket", "rebuild_interval", "start")
        yield (replace(ptr, start),), f"{case['case_id']}: rebuild from {start}"


def _next_interval(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _resumable(data):
        nxt = case["declared"]["ticket"]["next_ordinary_interval"]
        ptr = pointer_of("cases", i, "declared", "ticket", "next_ordinary_interval")
        moved = {"start": nxt["start"] + 1, "end": nxt["end"] + 1}
        yield (
            (replace(ptr, moved),),
            f"{case['case_id']}: ordinary work at [{moved['start']},{moved['end']})",
        )


def _ticket_receipts(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _resumable(data):
        matched = list(case["declared"]["ticket"].get("matched_receipts") or [])
        if matched:
            k = rng.randrange(len(matched))
            ptr = pointer_of("cases", i, "declared", "ticket", "matched_receipts", k)
            yield (remove(ptr),), f"{case['case_id']}: ticket forgets {matched[k]}"


def _not_ready(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _cases(data):
        if _live(case) and _declared(case).get("outcome") == "pending":
            ptr = pointer_of("cases", i, "declared", "outcome")
            yield (
                (replace(ptr, "resumable"),),
                f"{case['case_id']}: resumable while a receipt is pending",
            )


def _ticket_missing(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _resumable(data):
        ptr = pointer_of("cases", i, "declared", "ticket")
        yield (replace(ptr, None),), f"{case['case_id']}: the conjunction holds but no ticket"


def _rebuild_effect(field: str) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        for i, case in _cases(data):
            rebuild = _declared(case).get("rebuild")
            if isinstance(rebuild, Mapping) and isinstance(rebuild.get(field), int):
                value = rebuild[field] + max(1, int(case["intent"]["semantic_target_tokens"]) // 2)
                ptr = pointer_of("cases", i, "declared", "rebuild", field)
                yield (replace(ptr, value),), f"{case['case_id']}: rebuild {field} {value}"

    return gen


def _overhead(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _resumable(data):
        where = rng.choice(("ticket", "rebuild"))
        block = _declared(case).get(where)
        if isinstance(block, Mapping) and isinstance(block.get("recompute_overhead_tokens"), int):
            value = block["recompute_overhead_tokens"] + 1
            ptr = pointer_of("cases", i, "declared", where, "recompute_overhead_tokens")
            yield (replace(ptr, value),), f"{case['case_id']}: {where} overhead {value}"


def _clock_restart(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _cases(data):
        if _declared(case).get("ttft_origin") == "arrival":
            origin = rng.choice(("admission", "resume"))
            ptr = pointer_of("cases", i, "declared", "ttft_origin")
            yield (replace(ptr, origin),), f"{case['case_id']}: TTFT measured from {origin}"


def _no_history(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _cases(data):
        intent = case.get("intent") or {}
        failed = any(
            isinstance(rc, Mapping)
            and rc.get("kind") == "preservation"
            and rc.get("status") == "FAILED"
            for rc in case.get("receipts") or []
        )
        recompute = intent.get("mode") == "RECOMPUTE" or (
            intent.get("mode") == "PRESERVE_EXACT"
            and failed
            and intent.get("fallback") == "RECOMPUTE"
        )
        if _live(case) and recompute:
            ptr = pointer_of("cases", i, "request", "token_history")
            request = case.get("request") or {}
            op = replace(ptr, False) if "token_history" in request else add(ptr, False)
            yield (op,), f"{case['case_id']}: recompute without immutable token history"


# ------------------------------------------------------------------- leaks, claims, counts


def _physical(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _cases(data):
        if isinstance(case.get("intent"), Mapping):
            ptr = pointer_of("cases", i, "intent", "block_ids")
            yield (add(ptr, [rng.randrange(64)]),), f"{case['case_id']}: intent carries block ids"


def _inflated(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    claim = data.get("claim")
    if not isinstance(claim, Mapping):
        return
    yield (
        (replace("/claim/evidence_class", "measured_gpu"),),
        "synthetic evidence labelled measured_gpu",
    )
    scope = [k for k, v in sorted((claim.get("scope") or {}).items()) if v is False]
    if scope:
        key = rng.choice(scope)
        yield (replace(pointer_of("claim", "scope", key), True),), f"scope claims {key}"


def _summary(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for key, value in sorted((data.get("expect_summary") or {}).items()):
        if isinstance(value, int) and not isinstance(value, bool):
            ptr = pointer_of("expect_summary", key)
            yield (replace(ptr, value + 1),), f"summary {key} declared {value + 1}"


def _drop_binding_field(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, _case, j, rc in _current_receipts(data):
        field = rng.choice(BINDING_FIELDS)
        ptr = pointer_of("cases", i, "receipts", j, "binding", field)
        yield (remove(ptr),), f"{rc['receipt_id']} binding without {field}"


def _op(name: str, record: str, pointer: str, changes: str, expect: str, gen: Any) -> Operator:
    return Operator(name, LOOP, TARGET, record, pointer, changes, expect, gen)


_RECEIPT = "ReleaseResult/PreservationResult/ReadinessReceipt"
_INTENT = "PreemptionIntent"
_TICKET = "ResumeTicket"
_CASE = "preemption case"
_RECEIPT_PTR = "/cases/*/receipts/*/binding/"

OPERATORS: tuple[Operator, ...] = (
    _op(
        "preempt.receipt.request-id",
        _RECEIPT,
        _RECEIPT_PTR + "request_id",
        "bind a current receipt to another request",
        "PREEMPT.STALE.MISCLASSIFIED",
        _receipt_field("request_id"),
    ),
    _op(
        "preempt.receipt.generation",
        _RECEIPT,
        _RECEIPT_PTR + "generation",
        "bind a current receipt to the next request generation",
        "PREEMPT.STALE.MISCLASSIFIED",
        _receipt_field("generation"),
    ),
    _op(
        "preempt.receipt.snapshot",
        _RECEIPT,
        _RECEIPT_PTR + "snapshot_sha256",
        "bind a current receipt to another snapshot digest",
        "PREEMPT.STALE.MISCLASSIFIED",
        _receipt_field("snapshot_sha256"),
    ),
    _op(
        "preempt.receipt.epoch-bump",
        _RECEIPT,
        _RECEIPT_PTR + "suspension_epoch",
        "bind a current receipt to the next suspension epoch",
        "PREEMPT.STALE.MISCLASSIFIED",
        _receipt_field("suspension_epoch", 1),
    ),
    _op(
        "preempt.receipt.epoch-lower",
        _RECEIPT,
        _RECEIPT_PTR + "suspension_epoch",
        "bind a current receipt to the previous suspension epoch",
        "PREEMPT.STALE.MISCLASSIFIED",
        _receipt_field("suspension_epoch", -1),
    ),
    _op(
        "preempt.intent.epoch-bump",
        _INTENT,
        "/cases/*/intent/binding/suspension_epoch",
        "let a resumable intent bind an epoch the request has not reached",
        "RESUME.TICKET.STALE",
        _intent_epoch(1),
    ),
    _op(
        "preempt.intent.epoch-lower",
        _INTENT,
        "/cases/*/intent/binding/suspension_epoch",
        "let a resumable intent bind the previous suspension epoch",
        "RESUME.TICKET.STALE",
        _intent_epoch(-1),
    ),
    _op(
        "preempt.epoch.not-monotone",
        "RequestSnapshot",
        "/cases/*/request/prior_epochs",
        "repeat the current suspension epoch as a prior one",
        "PREEMPT.EPOCH.NOT_MONOTONE",
        _epoch_not_monotone,
    ),
    _op(
        "preempt.ticket.binding",
        _TICKET,
        "/cases/*/declared/ticket/binding/*",
        "bind the declared ticket differently from its intent",
        "RESUME.TICKET.BINDING",
        _ticket_binding,
    ),
    _op(
        "preempt.receipt.wrong-owner",
        _RECEIPT,
        "/cases/*/receipts/*/owner",
        "publish a receipt from a module that does not own the fact",
        "PREEMPT.RECEIPT.WRONG_OWNER",
        _wrong_owner,
    ),
    _op(
        "preempt.receipt.failed-ready",
        _RECEIPT,
        "/cases/*/receipts/*/exact_ready_prefix_tokens",
        "let a FAILED preservation claim ready exact rows",
        "PREEMPT.RECEIPT.FAILED_READY",
        _failed_ready,
    ),
    _op(
        "preempt.capacity.pending",
        _RECEIPT,
        "/cases/*/receipts/*/status",
        "put a release in flight while it still reports reclaimed bytes",
        "PREEMPT.CAPACITY.PENDING",
        _pending_capacity,
    ),
    _op(
        "preempt.capacity.drift",
        _CASE,
        "/cases/*/declared/published_capacity_bytes",
        "publish one K/V row more or less than the READY release reclaimed",
        "PREEMPT.CAPACITY.MISMATCH",
        _capacity_drift,
    ),
    _op(
        "preempt.stale.misclassified",
        _CASE,
        "/cases/*/declared/stale_receipts",
        "declare a stale receipt current, or a current one stale",
        "PREEMPT.STALE.MISCLASSIFIED",
        _stale_misclassified,
    ),
    _op(
        "resume.frontier.target",
        _INTENT,
        "/cases/*/intent/semantic_target_tokens",
        "freeze T_target one row past the request's frontier",
        "RESUME.FRONTIER.INVALID",
        _frontier,
    ),
    _op(
        "resume.interval.rebuild",
        _TICKET,
        "/cases/*/declared/ticket/rebuild_interval/start",
        "start the rebuild interval elsewhere than T_ready",
        "RESUME.INTERVAL.WRONG",
        _rebuild_interval,
    ),
    _op(
        "resume.interval.next",
        _TICKET,
        "/cases/*/declared/ticket/next_ordinary_interval",
        "resume ordinary work one row after T_target",
        "RESUME.NEXT.INTERVAL",
        _next_interval,
    ),
    _op(
        "resume.ticket.receipts",
        _TICKET,
        "/cases/*/declared/ticket/matched_receipts/*",
        "leave a current ready receipt out of the ticket",
        "RESUME.TICKET.RECEIPTS",
        _ticket_receipts,
    ),
    _op(
        "resume.ticket.not-ready",
        _CASE,
        "/cases/*/declared/outcome",
        "declare a pending case resumable",
        "RESUME.TICKET.NOT_READY",
        _not_ready,
    ),
    _op(
        "resume.ticket.missing",
        _TICKET,
        "/cases/*/declared/ticket",
        "declare no ticket although the readiness conjunction holds",
        "RESUME.TICKET.MISSING",
        _ticket_missing,
    ),
    _op(
        "resume.rebuild.output",
        "rebuild effect",
        "/cases/*/declared/rebuild/output_events",
        "let rebuild execution emit output tokens",
        "RESUME.REBUILD.OUTPUT",
        _rebuild_effect("output_events"),
    ),
    _op(
        "resume.rebuild.frontier",
        "rebuild effect",
        "/cases/*/declared/rebuild/semantic_frontier_delta",
        "let rebuild execution advance the semantic frontier",
        "RESUME.REBUILD.FRONTIER",
        _rebuild_effect("semantic_frontier_delta"),
    ),
    _op(
        "resume.rebuild.service",
        "rebuild effect",
        "/cases/*/declared/rebuild/service_debit",
        "let rebuild execution debit fairness service",
        "RESUME.REBUILD.SERVICE",
        _rebuild_effect("service_debit"),
    ),
    _op(
        "resume.rebuild.overhead",
        "rebuild effect",
        "/cases/*/declared/{ticket,rebuild}/recompute_overhead_tokens",
        "declare recompute overhead one off T_target - T_ready",
        "RESUME.REBUILD.OVERHEAD",
        _overhead,
    ),
    _op(
        "resume.clock.restart",
        _CASE,
        "/cases/*/declared/ttft_origin",
        "measure TTFT from admission or resume instead of arrival",
        "RESUME.CLOCK.RESTARTED",
        _clock_restart,
    ),
    _op(
        "resume.fallback.no-history",
        "RequestSnapshot",
        "/cases/*/request/token_history",
        "recompute (or fall back to recompute) without immutable token history",
        "RESUME.FALLBACK.NO_HISTORY",
        _no_history,
    ),
    _op(
        "preempt.leak.physical-block",
        _INTENT,
        "/cases/*/intent/block_ids",
        "put physical block ids into an intent",
        "PREEMPT.PHYSICAL.LEAK",
        _physical,
    ),
    _op(
        "preempt.claim.inflated",
        "claim",
        "/claim/{evidence_class,scope/*}",
        "label synthetic contract evidence measured_gpu or claim a production scope",
        "PREEMPT.CLAIM.INFLATED",
        _inflated,
    ),
    _op(
        "preempt.summary.count",
        "report summary",
        "/expect_summary/*",
        "declare a summary count one off the derivation",
        "PREEMPT.REPORT.COUNT",
        _summary,
    ),
    _op(
        "preempt.schema.binding-drop",
        _RECEIPT,
        _RECEIPT_PTR + "*",
        "drop one of the four binding fields from a receipt",
        "SCHEMA.REQUIRED",
        _drop_binding_field,
    ),
)
