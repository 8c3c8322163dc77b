"""Loop 4 oracle (article 0x04): a packed attention layer equals its per-request reference.

The fixture declares a small multi-head attention layer (rational weights), the selected
request generations with their intervals and hidden rows, and the numbers the article states.
The oracle

1. builds the `SchedulerState` and `IterationPlan` the fixture describes and derives the
   `PackedIteration` from them (optionally corrupted by the fixture's `packing_patch`, which
   is how negative fixtures break the packing), and validates it (`PACK.*`);
2. runs the **packed path**: gather hidden rows by route, one shared Q/K/V projection over all
   Q_tot rows, request-local attention per segment (prior rows through the segment's logical
   K/V handle, current rows from its packed slice, keys from the row's visible spans), a merge
   in packed order, one shared output projection, and a scatter by route metadata;
3. runs the **reference path**: each request projected and attended on its own, concatenated
   only when complete;
4. compares them row by row for bitwise equality and counts, for every query row, the keys it
   actually attended that belong to another request (cross-request visibility) or lie after
   its own position (future visibility).

Arithmetic: projections are exact (`fractions.Fraction`); attention needs `exp`, so scores,
softmax and the output projection use binary floats with one fixed reduction order (keys in
ascending position, features in index order) shared by both paths. "Packed equals reference"
is therefore asserted as bitwise float equality, not within a tolerance: that holds because
the packed path changes only where rows sit, never the order of any reduction. It is not a
claim about production kernels, which may reduce in other orders.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from cbaudit.contract.packing import (
    PACKED_SCHEMA,
    PackedIteration,
    cache_handle,
    derive_packed_iteration,
    offsets_usable,
    request_key,
    segment_of_row,
    token_labels,
    validate_packed_iteration,
)
from cbaudit.contract.plan_contract import expected_key
from cbaudit.contract.records import (
    BudgetLedger,
    Budgets,
    Clock,
    IterationPlan,
    Phase,
    PolicyIdentity,
    Queue,
    RequestDecl,
    RequestView,
    SchedulerState,
    TieBreak,
    WorkItem,
    WorkloadManifest,
)
from cbaudit.contract.validator import validate_plan
from cbaudit.io.jsonpatch import PatchError, apply_patch
from cbaudit.io.schemas import validate
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError, Location
from cbaudit.oracles.fixtures import Fixture

NAME = "selective-batching"
FIXTURE_SCHEMA = "selective-batching-fixture"

CODES: Mapping[str, str] = {
    "SELECTIVE.MISMATCH": "a request's packed output differs from its per-request reference",
    "SELECTIVE.CROSS_REQUEST": "a packed query attended a key of another request",
    "SELECTIVE.FUTURE_VISIBLE": "a packed query attended a key after its own position",
    "SELECTIVE.NOT_EXECUTED": "the packed record could not be executed at all",
    "SELECTIVE.EXPECT.SHAPE": "q, Q_tot, offsets or token labels differ from the declared ones",
    "SELECTIVE.EXPECT.VISIBILITY": "per-row cross-request visibility differs from the declared",
    "SELECTIVE.EXPECT.ROW0": "the row-0 trace differs from the declared one",
    "SELECTIVE.FIXTURE.SHAPE": "(unusable input) weights or hidden rows have the wrong shape",
    "SELECTIVE.FIXTURE.INTERVAL": "(unusable input) an interval is not legal ordinary work",
    "SELECTIVE.FIXTURE.PACKING_PATCH": "(unusable input) the packing patch cannot be applied",
}

Vector = list[float]
Exact = list[Fraction]


def _exact(value: Any) -> Fraction:
    # Decimal spelling is kept exactly: 0.1 means 1/10, not the nearest binary float.
    return Fraction(str(value)) if isinstance(value, float) else Fraction(value)


@dataclass(frozen=True)
class Layer:
    """One attention layer: W_q, W_k, W_v, W_o are d x d with d = heads * head_dim."""

    heads: int
    head_dim: int
    w_q: tuple[tuple[Fraction, ...], ...]
    w_k: tuple[tuple[Fraction, ...], ...]
    w_v: tuple[tuple[Fraction, ...], ...]
    w_o: tuple[tuple[Fraction, ...], ...]

    @property
    def d_model(self) -> int:
        return self.heads * self.head_dim

    def project(self, x: Sequence[Fraction]) -> tuple[Exact, Exact, Exact]:
        """Row-local Q, K, V of one hidden row, exactly."""
        return (_matvec(x, self.w_q), _matvec(x, self.w_k), _matvec(x, self.w_v))

    def output(self, a: Sequence[float]) -> Vector:
        """Row-local output projection (floats, features in index order)."""
        d = self.d_model
        out: Vector = []
        for c in range(d):
            acc = 0.0
            for i in range(d):
                acc += a[i] * float(self.w_o[i][c])
            out.append(acc)
        return out


def _matvec(x: Sequence[Fraction], w: Sequence[Sequence[Fraction]]) -> Exact:
    return [sum((x[i] * w[i][c] for i in range(len(x))), Fraction(0)) for c in range(len(w[0]))]


@dataclass(frozen=True)
class KeyRow:
    """One attendable key: whose it is, its position, and its K/V."""

    owner: str
    position: int
    k: Exact
    v: Exact


def _dot(a: Sequence[Fraction], b: Sequence[Fraction], lo: int, hi: int) -> Fraction:
    return sum((a[i] * b[i] for i in range(lo, hi)), Fraction(0))


def attend(layer: Layer, q: Exact, keys: Sequence[KeyRow]) -> Vector:
    """Multi-head softmax attention of one query over `keys`, in the given key order."""
    out: Vector = []
    scale = 1.0 / math.sqrt(layer.head_dim)
    for h in range(layer.heads):
        lo, hi = h * layer.head_dim, (h + 1) * layer.head_dim
        if not keys:
            out.extend([0.0] * layer.head_dim)
            continue
        scores = [
            float(sum((q[i] * kr.k[i] for i in range(lo, hi)), Fraction(0))) * scale for kr in keys
        ]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = 0.0
        for w in weights:
            total += w
        for c in range(lo, hi):
            acc = 0.0
            for w, kr in zip(weights, keys, strict=True):
                acc += w * float(kr.v[c])
            out.append(acc / total)
    return out


@dataclass(frozen=True)
class Request:
    """A selected request generation as the fixture declares it."""

    request_id: str
    request_generation: int
    snapshot_version: int
    prompt_tokens: int
    start: int
    end: int
    hidden: tuple[tuple[Fraction, ...], ...]  # rows for positions 0 .. end-1

    @property
    def key(self) -> str:
        return request_key(self.request_id, self.request_generation)

    @property
    def phase(self) -> Phase:
        return Phase.PREFILL_CHUNK if self.start < self.prompt_tokens else Phase.DECODE_ROW

    @property
    def handle(self) -> str:
        return cache_handle(self.request_id, self.request_generation, self.snapshot_version)


@dataclass(frozen=True)
class World:
    """The ground truth both paths read: hidden rows and the logical K/V behind each handle."""

    layer: Layer
    requests: tuple[Request, ...]
    hidden: Mapping[str, tuple[tuple[Fraction, ...], ...]]
    cache: Mapping[str, tuple[KeyRow, ...]]  # handle -> prior rows [0, start)


# --------------------------------------------------------------------------- fixture parsing


def _matrix(raw: Any, d: int, fixture: Fixture, ptr: str) -> tuple[tuple[Fraction, ...], ...]:
    if len(raw) != d or any(len(row) != d for row in raw):
        raise InputError.at(
            "SELECTIVE.FIXTURE.SHAPE", f"expected a {d} x {d} matrix", fixture.path, pointer=ptr
        )
    return tuple(tuple(_exact(v) for v in row) for row in raw)


def _parse(fixture: Fixture) -> World:
    data = fixture.data
    raw_layer = data["layer"]
    heads, head_dim = raw_layer["heads"], raw_layer["head_dim"]
    d = heads * head_dim
    layer = Layer(
        heads=heads,
        head_dim=head_dim,
        **{
            name: _matrix(raw_layer[name], d, fixture, f"/layer/{name}")
            for name in ("w_q", "w_k", "w_v", "w_o")
        },
    )
    requests: list[Request] = []
    for i, raw in enumerate(data["requests"]):
        start, end = raw["interval"]
        ptr = f"/requests/{i}"
        prompt = raw["prompt_tokens"]
        if end <= start or (start < prompt < end) or (start >= prompt and end - start != 1):
            raise InputError.at(
                "SELECTIVE.FIXTURE.INTERVAL",
                f"[{start},{end}) is neither a prefill chunk inside the prompt (p={prompt}) "
                "nor a one-row decode after it",
                fixture.path,
                pointer=ptr + "/interval",
            )
        hidden = raw["hidden"]
        if len(hidden) < end or any(len(row) != d for row in hidden):
            raise InputError.at(
                "SELECTIVE.FIXTURE.SHAPE",
                f"need {end} hidden rows of width {d} (positions 0..{end - 1})",
                fixture.path,
                pointer=ptr + "/hidden",
            )
        requests.append(
            Request(
                request_id=raw["request_id"],
                request_generation=raw.get("request_generation", 0),
                snapshot_version=raw["snapshot_version"],
                prompt_tokens=prompt,
                start=start,
                end=end,
                hidden=tuple(tuple(_exact(v) for v in row) for row in hidden),
            )
        )
    cache: dict[str, tuple[KeyRow, ...]] = {}
    for req in requests:
        rows: list[KeyRow] = []
        for pos in range(req.start):
            _, k, v = layer.project(req.hidden[pos])
            rows.append(KeyRow(req.key, pos, k, v))
        cache[req.handle] = tuple(rows)
    return World(layer, tuple(requests), {r.key: r.hidden for r in requests}, cache)


_TIE_BREAK = TieBreak(
    key=("phase_rank", "priority_rank", "arrival_order", "request_id", "request_generation"),
    phase_order=(Phase.DECODE_ROW, Phase.PREFILL_CHUNK),
)


def _records(
    data: Mapping[str, Any], world: World
) -> tuple[WorkloadManifest, SchedulerState, IterationPlan]:
    """The workload, state and plan the fixture describes (decode rows first, then arrival)."""
    decision = data["decision"]
    q_tot = sum(r.end - r.start for r in world.requests)
    policy = PolicyIdentity(decision["policy_id"], decision["policy_version"], _TIE_BREAK)
    decls = []
    views = []
    for i, (req, raw) in enumerate(zip(world.requests, data["requests"], strict=True)):
        emitted = 0 if req.phase is Phase.PREFILL_CHUNK else req.start - req.prompt_tokens + 1
        decls.append(
            RequestDecl(
                request_id=req.request_id,
                arrival=i,
                prompt_tokens=req.prompt_tokens,
                max_output_tokens=raw.get("max_output_tokens", emitted + 16),
                request_generation=req.request_generation,
                arrival_order=i,
            )
        )
        views.append(
            RequestView(
                request_id=req.request_id,
                request_generation=req.request_generation,
                snapshot_version=req.snapshot_version,
                prompt_tokens=req.prompt_tokens,
                emitted_tokens=emitted,
                computed_tokens=req.start,
                committed_tokens=req.start,
                ready=True,
                terminal=False,
                queue=Queue.RUNNING if req.start > 0 else Queue.WAITING,
            )
        )
    workload = WorkloadManifest(
        workload_id=str(data.get("workload_id", "loop4-selective-batching")),
        clock=Clock("tick"),
        policy=policy,
        budgets=Budgets(token_budget=q_tot, sequence_budget=len(views)),
        requests=tuple(decls),
    )
    items = tuple(
        WorkItem(
            request_id=req.request_id,
            request_generation=req.request_generation,
            snapshot_version=req.snapshot_version,
            start=req.start,
            end=req.end,
            phase=req.phase,
            positions=tuple(range(req.start, req.end)),
            tie_break_key=expected_key(workload, view, req.phase),
        )
        for req, view in zip(world.requests, views, strict=True)
    )
    state = SchedulerState(
        workload_id=workload.workload_id,
        decision_id=decision["decision_id"],
        state_version=decision["input_state_version"],
        requests=tuple(views),
    )
    plan = IterationPlan(
        decision_id=decision["decision_id"],
        input_state_version=decision["input_state_version"],
        policy_id=policy.policy_id,
        policy_version=policy.policy_version,
        selected=items,
        budget_ledger=BudgetLedger(q_tot, q_tot, len(items), len(items)),
    )
    return workload, state, plan


# --------------------------------------------------------------------------- the two paths


def run_reference(world: World) -> dict[str, list[Vector]]:
    """Each request alone: project its rows, attend over its own prefix, project the output."""
    layer = world.layer
    out: dict[str, list[Vector]] = {}
    for req in world.requests:
        keys = list(world.cache[req.handle])
        rows: list[Vector] = []
        for pos in range(req.start, req.end):
            q, k, v = layer.project(req.hidden[pos])
            keys.append(KeyRow(req.key, pos, k, v))
            rows.append(layer.output(attend(layer, q, keys)))
        out[req.key] = rows
    return out


@dataclass(frozen=True)
class PackedRun:
    """What the packed path produced, or why it refused to run."""

    refusal: str | None
    outputs: Mapping[str, Mapping[int, Vector]]
    cross_visible: tuple[int, ...]
    future_visible: tuple[int, ...]
    attended: tuple[tuple[KeyRow, ...], ...]
    projected_qkv: tuple[tuple[Exact, Exact, Exact], ...]
    projected_out: tuple[Vector, ...]
    collisions: tuple[str, ...]


def _refused(reason: str) -> PackedRun:
    return PackedRun(reason, {}, (), (), (), (), (), ())


def run_packed(world: World, packed: PackedIteration) -> PackedRun:
    """Execute the packed layer as the (possibly corrupted) record describes it."""
    layer = world.layer
    if not offsets_usable(packed):
        return _refused("request_offsets cannot slice the packed rows")
    if len(packed.logical_cache_handle) != len(packed.segments):
        return _refused("one logical cache handle per segment is required")
    hidden: list[tuple[Fraction, ...]] = []
    for r, (key, pos) in enumerate(
        zip(packed.request_key_by_row, packed.request_local_position, strict=True)
    ):
        rows = world.hidden.get(key)
        if rows is None or pos >= len(rows):
            return _refused(f"row {r}: no hidden row for {key} at position {pos}")
        hidden.append(rows[pos])
    qkv = tuple(layer.project(x) for x in hidden)  # one shared projection over all rows
    tables: dict[str, dict[int, KeyRow]] = {}
    for i, seg in enumerate(packed.segments):
        prior = world.cache.get(packed.logical_cache_handle[i])
        if prior is None:
            return _refused(f"segment {i}: unknown handle {packed.logical_cache_handle[i]}")
        table = {row.position: row for row in prior}
        for r in range(packed.request_offsets[i], packed.request_offsets[i + 1]):
            pos = packed.request_local_position[r]
            table[pos] = KeyRow(packed.request_key_by_row[r], pos, qkv[r][1], qkv[r][2])
        tables[seg.key] = table
    attention: list[Vector] = []
    attended: list[tuple[KeyRow, ...]] = []
    cross: list[int] = []
    future: list[int] = []
    for r in range(packed.q_tot):
        own, pos = packed.request_key_by_row[r], packed.request_local_position[r]
        keys: list[KeyRow] = []
        for span in packed.visible_keys_by_row[r]:
            span_table = tables.get(span.request_key, {})
            for p in range(span.start, span.end):
                if p not in span_table:
                    return _refused(f"row {r}: key {span.request_key}@{p} is not available")
                keys.append(span_table[p])
        attended.append(tuple(keys))
        cross.append(sum(1 for k in keys if k.owner != own))
        future.append(sum(1 for k in keys if k.owner == own and k.position > pos))
        attention.append(attend(layer, qkv[r][0], keys))  # merged in packed order
    projected = tuple(layer.output(a) for a in attention)  # one shared output projection
    outputs: dict[str, dict[int, Vector]] = {}
    collisions: list[str] = []
    for r, seg_index in enumerate(segment_of_row(packed)):
        key = packed.request_key_by_row[r]
        local = r - packed.request_offsets[seg_index]
        slot = outputs.setdefault(key, {})
        if local in slot:
            collisions.append(f"{key} local row {local}")
        slot[local] = projected[r]
    return PackedRun(
        None,
        outputs,
        tuple(cross),
        tuple(future),
        tuple(attended),
        qkv,
        projected,
        tuple(collisions),
    )


# --------------------------------------------------------------------------- report


def _floats(values: Sequence[Fraction]) -> list[float]:
    return [float(v) for v in values]


def _compare(
    reference: Mapping[str, list[Vector]], run: PackedRun
) -> tuple[dict[str, Any], list[str]]:
    table: dict[str, Any] = {}
    bad: list[str] = []
    for key, rows in reference.items():
        got = run.outputs.get(key, {})
        equal = sorted(got) == list(range(len(rows))) and all(got[i] == rows[i] for i in got)
        diffs = [
            abs(a - b)
            for i, row in enumerate(rows)
            if i in got
            for a, b in zip(got[i], row, strict=True)
        ]
        table[key] = {
            "rows": len(rows),
            "rows_scattered": len(got),
            "bitwise_equal": equal,
            "max_abs_diff": max(diffs) if diffs else None,
        }
        if not equal:
            bad.append(key)
    for key in sorted(set(run.outputs) - set(reference)):
        table[key] = {"rows": 0, "rows_scattered": len(run.outputs[key]), "bitwise_equal": False}
        bad.append(key)
    return table, bad


def _row0_trace(packed: PackedIteration, run: PackedRun) -> dict[str, Any] | None:
    if run.refusal is not None or packed.q_tot == 0:
        return None
    seg = packed.segments[0]
    q, k, v = run.projected_qkv[0]
    visible: dict[str, list[int]] = {s.key: [] for s in packed.segments}
    for key_row in run.attended[0]:
        visible.setdefault(key_row.owner, []).append(key_row.position)
    return {
        "source": {
            "request_key": seg.key,
            "interval": [seg.start, seg.end],
            "token_label": token_labels(packed)[0],
            "packed_row": 0,
            "logical_cache_handle": packed.logical_cache_handle[0],
        },
        "projected": {"q": _floats(q), "k": _floats(k), "v": _floats(v)},
        "attention": {"visible_positions": visible},
        "output_projection": [round(x, 12) for x in run.projected_out[0]],
        "scatter": {
            "packed_row": 0,
            "request_key": packed.request_key_by_row[0],
            "request_local_row": 0 - packed.request_offsets[0],
        },
    }


def _check_expectations(
    expect: Mapping[str, Any],
    shape: Mapping[str, Any],
    run: PackedRun,
    trace: Mapping[str, Any] | None,
    fixture: Fixture,
) -> list[Finding]:
    findings: list[Finding] = []

    def add(code: str, message: str, ptr: str) -> None:
        findings.append(Finding(code, message, location=fixture.locate(ptr)))

    for name in ("q", "q_tot", "request_offsets", "token_labels"):
        if name in expect and expect[name] != shape[name]:
            add(
                "SELECTIVE.EXPECT.SHAPE",
                f"{name}: declared {expect[name]}, derived {shape[name]}",
                f"/expect/{name}",
            )
    if "cross_request_visible" in expect and list(run.cross_visible) != list(
        expect["cross_request_visible"]
    ):
        add(
            "SELECTIVE.EXPECT.VISIBILITY",
            f"declared {expect['cross_request_visible']}, observed {list(run.cross_visible)}",
            "/expect/cross_request_visible",
        )
    row0 = expect.get("row0")
    if row0 is not None:
        if trace is None:
            add(
                "SELECTIVE.EXPECT.ROW0",
                "no row-0 trace: the packed path did not run",
                "/expect/row0",
            )
            return findings
        for name in ("q", "k", "v"):
            if name in row0:
                declared = [_exact(x) for x in row0[name]]
                got = [_exact(x) for x in trace["projected"][name]]
                if declared != got:
                    add(
                        "SELECTIVE.EXPECT.ROW0",
                        f"row 0 {name.upper()}: declared {row0[name]}, "
                        f"computed {trace['projected'][name]}",
                        f"/expect/row0/{name}",
                    )
        if "visible_positions" in row0:
            got_vis = trace["attention"]["visible_positions"]
            if dict(row0["visible_positions"]) != got_vis:
                add(
                    "SELECTIVE.EXPECT.ROW0",
                    f"row 0 visible positions: declared {row0['visible_positions']}, "
                    f"observed {got_vis}",
                    "/expect/row0/visible_positions",
                )
        if "logical_cache_handle" in row0 and (
            row0["logical_cache_handle"] != trace["source"]["logical_cache_handle"]
        ):
            add(
                "SELECTIVE.EXPECT.ROW0",
                f"row 0 handle: declared {row0['logical_cache_handle']}, "
                f"packed {trace['source']['logical_cache_handle']}",
                "/expect/row0/logical_cache_handle",
            )
    return findings


def _packed_record(
    derived: PackedIteration, fixture: Fixture
) -> tuple[PackedIteration | None, list[Finding]]:
    """The derived record, or the fixture's corrupted version of it (with schema findings)."""
    ops = fixture.data.get("packing_patch") or []
    if not ops:
        return derived, []
    try:
        data = apply_patch(derived.to_json(), ops)
    except PatchError as err:
        raise InputError(
            Finding(
                "SELECTIVE.FIXTURE.PACKING_PATCH",
                str(err),
                location=fixture.locate(f"/packing_patch/{err.index}"),
            )
        ) from err
    schema_findings = validate(data, PACKED_SCHEMA, file=fixture.path)
    if schema_findings:
        return None, [_relocate(f, fixture) for f in schema_findings]
    return PackedIteration.from_json(data), []


def _relocate(finding: Finding, fixture: Fixture) -> Finding:
    """A finding about the packed record, pointed at the fixture part that produced it."""
    anchor = "/packing_patch" if fixture.data.get("packing_patch") else "/requests"
    inner = finding.location.pointer or "/"
    return Finding(
        finding.code,
        f"packed record {inner}: {finding.message}",
        finding.severity,
        fixture.locate(anchor),
    )


def _executed(
    reference: dict[str, list[Vector]],
    packed_run: PackedRun,
    metrics: dict[str, Any],
    loc: Location,
) -> list[Finding]:
    """The packed path ran: compare it bitwise with the reference and look for rows that saw
    another request's keys or keys after their own position (the metrics gain the evidence)."""
    table, bad = _compare(reference, packed_run)
    metrics["comparison"] = table
    metrics["packed_equals_reference"] = not bad
    metrics["cross_request_visible"] = list(packed_run.cross_visible)
    metrics["future_visible"] = list(packed_run.future_visible)
    metrics["scatter_collisions"] = list(packed_run.collisions)
    findings = [
        Finding(
            "SELECTIVE.MISMATCH",
            f"{key}: packed output is not bitwise equal to the per-request reference "
            f"({table[key]['rows_scattered']} of {table[key]['rows']} rows scattered, "
            f"max abs diff {table[key].get('max_abs_diff')})",
            location=loc,
        )
        for key in bad
    ]
    findings += [
        Finding(
            "SELECTIVE.CROSS_REQUEST",
            f"packed row {r} attended {count} key(s) of another request",
            location=loc,
        )
        for r, count in enumerate(packed_run.cross_visible)
        if count
    ]
    findings += [
        Finding(
            "SELECTIVE.FUTURE_VISIBLE",
            f"packed row {r} attended {count} key(s) after its own position",
            location=loc,
        )
        for r, count in enumerate(packed_run.future_visible)
        if count
    ]
    return findings


def run(fixture: Fixture) -> CheckResult:
    """Run the Loop 4 selective-batching oracle on `fixture`."""
    fixture.require_schema(FIXTURE_SCHEMA)
    world = _parse(fixture)
    workload, state, plan = _records(fixture.data, world)
    plan_findings = validate_plan(
        workload, state, plan, locate=lambda _p: fixture.locate("/requests")
    )
    if plan_findings:  # pack only validated plans
        return CheckResult(
            check=NAME,
            subject=fixture.path,
            findings=tuple(plan_findings),
            metrics={"packed_iteration": None, "executed": False},
            evidence_class=EvidenceClass.SYNTHETIC,
            reason="the fixture's selection is not a valid IterationPlan",
        )
    derived = derive_packed_iteration(plan, state)
    packed, findings = _packed_record(derived, fixture)
    if packed is None:
        return CheckResult(
            check=NAME,
            subject=fixture.path,
            findings=tuple(findings),
            metrics={"packed_iteration": None, "executed": False},
            evidence_class=EvidenceClass.SYNTHETIC,
            reason="the packed record does not fit its schema",
        )
    findings.extend(_relocate(f, fixture) for f in validate_packed_iteration(packed, plan=plan))
    reference = run_reference(world)
    packed_run = run_packed(world, packed)
    shape = {
        "q": [s.width for s in packed.segments],
        "q_tot": packed.q_tot,
        "request_offsets": list(packed.request_offsets),
        "token_labels": token_labels(packed),
        "request_local_position": list(packed.request_local_position),
        "request_key_by_row": list(packed.request_key_by_row),
    }
    metrics: dict[str, Any] = {
        "oracle": NAME,
        "shape": shape,
        "packed_iteration": packed.to_json(),
        "executed": packed_run.refusal is None,
        "refusal": packed_run.refusal,
    }
    loc = fixture.locate("/packing_patch" if fixture.data.get("packing_patch") else "")
    if packed_run.refusal is not None:
        findings.append(
            Finding(
                "SELECTIVE.NOT_EXECUTED", f"packed path refused: {packed_run.refusal}", location=loc
            )
        )
    else:
        findings += _executed(reference, packed_run, metrics, loc)
    trace = _row0_trace(packed, packed_run)
    metrics["row0_trace"] = trace
    findings.extend(
        _check_expectations(fixture.data.get("expect", {}), shape, packed_run, trace, fixture)
    )
    passed = not findings
    return CheckResult(
        check=NAME,
        subject=fixture.path,
        findings=tuple(findings),
        metrics=metrics,
        evidence_class=EvidenceClass.SYNTHETIC,
        reason=(
            "packed path equals the per-request reference bitwise; no cross-request visibility"
            if passed
            else None
        ),
    )
