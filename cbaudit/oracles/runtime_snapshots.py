"""Loop 10 scheduler snapshots: their legality, and one logical decision per policy.

A snapshot file holds `workload` (a WorkloadManifest) and `state` (SchedulerState-shaped
request views at one cut). Before any policy sees it, the snapshot must be legal: budgets that
the pinned SchedulerConfig would accept (max_num_batched_tokens >= max_num_seqs), no more
running requests than the sequence budget, running requests holding no more KV blocks than the
pool, frontiers a request can actually reach, and readiness that says why a request is blocked.

A decision is one step of the real policy through the simulator's engine (unit cost, contract
validation on), summarized as request-local logical rows only: interval, work class, tokens,
budget use, queue transitions and logical preemption records with their recompute accounting.
Physical block ids never appear; a document that carries them is refused.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cbaudit.contract.records import semantic_rows
from cbaudit.model.findings import Locator, pointer_join
from cbaudit.oracles.runtime_codes import Sink, unusable
from cbaudit.sim import replay as replay_core
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.workload import Workload, workload_from_data

# Keys that name physical KV storage. A logical decision row never carries them.
PHYSICAL_KEYS = frozenset(
    {
        "block_id",
        "block_ids",
        "block_table",
        "block_tables",
        "physical_block",
        "physical_blocks",
        "physical_block_ids",
        "slot_mapping",
    }
)

# Readiness reasons a waiting request may give for not being runnable.
BLOCKED_REASONS = frozenset(
    {"WAITING_FOR_REMOTE_KVS", "WAITING_FOR_FSM", "WAITING_FOR_PRESERVATION"}
)

_IGNORED_RUN_CODES = frozenset({"REPLAY.NO_PROGRESS"})


def physical_pointers(value: Any, pointer: str = "") -> Iterator[str]:
    """JSON pointers of every mapping key in `value` that names physical KV storage."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = pointer_join(pointer, str(key))
            if str(key).lower() in PHYSICAL_KEYS:
                yield here
            yield from physical_pointers(item, here)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from physical_pointers(item, pointer_join(pointer, i))


def refuse_physical(value: Any, base: str, locate: Locator, what: str) -> None:
    """Raise `RUNTIME.ROW.PHYSICAL_BLOCK` (unusable input) when `value` names physical blocks."""
    for ptr in physical_pointers(value, base):
        raise unusable(
            "RUNTIME.ROW.PHYSICAL_BLOCK",
            f"{what} carries a physical block field at {ptr}; rows are logical intervals only",
            locate(ptr),
        )


@dataclass(frozen=True)
class Snapshot:
    """One loaded scheduler snapshot."""

    name: str
    workload: Workload
    data: Mapping[str, Any]
    display: str
    locate: Locator


def build_snapshot(data: Any, display: str, locate: Locator) -> Snapshot:
    """Parse a snapshot document (unusable shapes raise the simulator's located errors)."""
    if not isinstance(data, Mapping) or "workload" not in data or "state" not in data:
        raise unusable(
            "RUNTIME.SNAPSHOT.SHAPE", "a snapshot needs `workload` and `state`", locate("")
        )
    refuse_physical(data, "", locate, "snapshot")
    workload = workload_from_data(data["workload"], display)
    replay_core.parse_initial(data["state"], display, "/state")
    return Snapshot(str(data.get("name", "")), workload, data, display, locate)


def _views(snap: Snapshot) -> list[tuple[str, Mapping[str, Any]]]:
    views = snap.data["state"]["requests"]
    return [(pointer_join("/state/requests", i), v) for i, v in enumerate(views)]


def check_snapshot(snap: Snapshot, sink: Sink) -> bool:
    """Record every illegal budget, KV, frontier and readiness fact; True when legal."""
    before = len(sink.findings)
    at = snap.locate
    b = snap.workload.budgets
    decls = {r.request_id: r for r in snap.workload.requests}
    views = _views(snap)
    named = [str(v.get("request_id")) for _, v in views]
    if sorted(named) != sorted(decls) or len(set(named)) != len(named):
        sink.add(
            "RUNTIME.SNAPSHOT.SHAPE",
            f"state views {sorted(named)} are not the declared requests {sorted(decls)}",
            at("/state/requests"),
        )
    if b.token_budget < b.sequence_budget:
        sink.add(
            "RUNTIME.SNAPSHOT.BUDGET",
            f"token_budget {b.token_budget} < sequence_budget {b.sequence_budget}: the pinned"
            " SchedulerConfig requires max_num_batched_tokens >= max_num_seqs",
            at("/workload/budgets"),
        )
    running = [(ptr, v) for ptr, v in views if v.get("queue") == "running"]
    if len(running) > b.sequence_budget:
        sink.add(
            "RUNTIME.SNAPSHOT.BUDGET",
            f"{len(running)} running requests exceed sequence_budget {b.sequence_budget}",
            at("/state/requests"),
        )
    if b.kv_block_size is not None and b.kv_total_blocks is not None:
        held = sum(-(-int(v["computed_tokens"]) // b.kv_block_size) for _, v in running)
        if held > b.kv_total_blocks:
            sink.add(
                "RUNTIME.SNAPSHOT.KV",
                f"running requests hold {held} blocks of {b.kv_block_size} tokens, but the pool"
                f" has {b.kv_total_blocks}",
                at("/workload/budgets/kv_total_blocks"),
            )
    for ptr, v in views:
        decl = decls.get(str(v.get("request_id")))
        _check_frontier(ptr, v, decl.prompt_tokens if decl else None, at, sink)
        _check_readiness(ptr, v, at, sink)
    return len(sink.findings) == before


def _check_frontier(
    ptr: str, v: Mapping[str, Any], declared_prompt: int | None, at: Locator, sink: Sink
) -> None:
    rid = v.get("request_id")
    if declared_prompt is None:
        return  # an undeclared request is a SHAPE finding already
    p = int(v.get("prompt_tokens", declared_prompt))
    e, c = int(v["emitted_tokens"]), int(v["computed_tokens"])
    problem = None
    if p != declared_prompt:
        problem = f"prompt_tokens {p} differs from the declared {declared_prompt}"
    elif e < 0 or c < 0:
        problem = "negative frontier"
    elif e == 0 and c >= p and v.get("queue") != "finished":
        problem = f"computed {c} >= prompt {p} with no output: the prompt's last row emits token 1"
    elif e >= 1 and c > p + e - 1:
        problem = f"computed {c} > p + e - 1 = {p + e - 1}: K/V ahead of the emitted stream"
    elif int(v.get("committed_tokens", c)) != c:
        problem = f"committed {v.get('committed_tokens')} differs from computed {c} at the cut"
    if problem is not None:
        sink.add("RUNTIME.SNAPSHOT.FRONTIER", f"{rid}: {problem}", at(ptr))


def _check_readiness(ptr: str, v: Mapping[str, Any], at: Locator, sink: Sink) -> None:
    rid = v.get("request_id")
    ready = v.get("ready", True)
    reason = v.get("readiness_reason")
    problem = None
    if not ready and v.get("queue") in ("waiting", "running") and reason is None:
        problem = "is not ready but gives no readiness_reason"
    elif ready and reason is not None:
        problem = f"is ready yet gives readiness_reason {reason!r}"
    elif reason is not None and reason not in BLOCKED_REASONS:
        problem = f"gives unknown readiness_reason {reason!r} (known: {sorted(BLOCKED_REASONS)})"
    elif reason is not None and v.get("queue") != "waiting":
        problem = f"is {reason} in queue {v.get('queue')!r}; a blocked request waits"
    elif v.get("terminal") and ready:
        problem = "is terminal yet ready"
    if problem is not None:
        sink.add("RUNTIME.SNAPSHOT.READINESS", f"{rid} {problem}", at(ptr))


class _Capture:
    """Trace sink keeping the first published state and plan of a one-step run."""

    def __init__(self) -> None:
        self.state: Mapping[str, Any] | None = None
        self.plan: Mapping[str, Any] | None = None

    def write(self, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "state" and self.state is None:
            self.state = data
        elif kind == "plan" and self.plan is None:
            self.plan = data


@dataclass(frozen=True)
class Decision:
    """One policy's logical decision on one snapshot, plus what the engine reported."""

    record: Mapping[str, Any]
    contract_codes: tuple[str, ...]
    not_ready_scheduled: tuple[str, ...]


def decide(
    workload_data: Any,
    state_data: Any,
    policy: str,
    options: Mapping[str, Any],
    *,
    source: str,
    pointer: str,
) -> Decision:
    """Run `policy` for one step on the snapshot and summarize its logical decision."""
    workload = workload_from_data(workload_data, source)
    initial = replay_core.parse_initial(state_data, source, "/state")
    pol = replay_core.make_policy(policy, options, file=source, pointer=pointer)
    cap = _Capture()
    run = Engine(
        workload,
        pol,
        replay_core.make_cost_model("unit", {}),
        horizon=1,
        max_decisions=1,
        validation=Validation.CONTRACT,
        trace=cap,
        initial=initial,
    ).run()
    codes = tuple(sorted({f.code for f in run.findings} - _IGNORED_RUN_CODES))
    views = {str(v["request_id"]): v for v in (cap.state or {}).get("requests", [])}
    plan = cap.plan or {"selected": [], "not_selected": [], "budget_ledger": {}}
    record = decision_record(plan, views, workload.budgets.kv_block_size)
    not_ready = tuple(
        row["request_id"]
        for row in record["rows"]
        if not views.get(row["request_id"], {}).get("ready", True)
    )
    return Decision(record, codes, not_ready)


def decision_record(
    plan: Mapping[str, Any], views: Mapping[str, Mapping[str, Any]], block_size: int | None
) -> dict[str, Any]:
    """The logical decision: rows, deferrals, budget use, transitions, preemptions, accounting."""
    rows = []
    semantic = 0
    for item in plan["selected"]:
        view = views[item["request_id"]]
        start, end = int(item["start"]), int(item["end"])
        rows.append(
            {
                "request_id": item["request_id"],
                "request_generation": item["request_generation"],
                "interval": [start, end],
                "work": item["phase"],
                "tokens": end - start,
            }
        )
        emitted = int(view["emitted_tokens"])
        floor = int(view.get("rebuild_floor") or 0) if emitted == 0 else 0
        semantic += semantic_rows(int(view["prompt_tokens"]), emitted, start, end, floor)
    transitions = []
    preemptions = []
    for intent in plan.get("queue_intent", []):
        rid = intent["request_id"]
        if intent["action"] == "admit":
            transitions.append(
                {"request_id": rid, "from": "waiting", "to": "running", "cause": "admit"}
            )
            continue
        view = views[rid]
        computed = int(view["computed_tokens"])
        transitions.append(
            {
                "request_id": rid,
                "from": "running",
                "to": "waiting_front",
                # the replay behind these snapshots preempts by recompute (mode below)
                "cause": "preempt_recompute" if intent["action"] == "preempt" else intent["action"],
            }
        )
        preemptions.append(
            {
                "request_id": rid,
                "request_generation": intent["request_generation"],
                "mode": "RECOMPUTE",
                "released_blocks": None if block_size is None else -(-computed // block_size),
                "discarded_computed_tokens": computed,
                "kept_emitted_tokens": int(view["emitted_tokens"]),
            }
        )
    scheduled = sum(r["tokens"] for r in rows)
    ledger = plan["budget_ledger"]
    return {
        "rows": rows,
        "deferred": [
            {"request_id": n["request_id"], "reason": n["reason"]} for n in plan["not_selected"]
        ],
        "budget": {
            "token_budget": ledger.get("token_budget"),
            "tokens_used": ledger.get("tokens_used", 0),
            "sequence_budget": ledger.get("sequence_budget"),
            "sequences_used": ledger.get("sequences_used", 0),
        },
        "queue_transitions": transitions,
        "preemptions": preemptions,
        "accounting": {
            "scheduled_tokens": scheduled,
            "semantic_service_tokens": semantic,
            "rebuild_tokens": scheduled - semantic,
            "recompute_overhead_tokens": sum(p["discarded_computed_tokens"] for p in preemptions),
        },
    }


def reversed_input(snap: Snapshot) -> tuple[Any, Any]:
    """The snapshot's workload and state with both request lists in reverse order."""
    workload = copy.deepcopy(dict(snap.data["workload"]))
    state = copy.deepcopy(dict(snap.data["state"]))
    workload["requests"] = list(reversed(workload["requests"]))
    state["requests"] = list(reversed(state["requests"]))
    return workload, state
