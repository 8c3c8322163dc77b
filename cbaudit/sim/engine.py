"""The deterministic replay of the article's control loop (0x03).

Per iteration: publish an immutable cut (versioned request views) -> the policy chooses a plan
from the online projection -> the plan is validated with the contract rules -> the simulated
executor runs one iteration, reading hidden truth only to decide when a request stops -> the
result is validated -> only completed progress is published.

The loop is built for speed: queues are updated incrementally, and every plan and result is
checked by the contract's incremental validator (`cbaudit.contract.live`), which applies the
contract's own rule functions to the engine's request objects and re-checks only what changed
since the last cut. JSON records are produced only for `--trace-out` (and for the `cross_check`
test hook, which also runs the record validator on every iteration and requires the same
issues). The same workload, policy, options and cost model always give the same run (no clocks,
no global randomness).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from cbaudit.contract.issues import Issue
from cbaudit.contract.live import LiveContract
from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import (
    Phase,
    PolicyIdentity,
    Queue,
    TieBreak,
    WorkloadManifest,
    semantic_rows,
)
from cbaudit.model import InputError
from cbaudit.policies.base import (
    BudgetsView,
    PlanBuilder,
    PlanItem,
    Policy,
    key_function,
)
from cbaudit.policies.budget import blocks_held
from cbaudit.sim.records_io import UNSTATED_REASON, plan_json, result_json, state_json
from cbaudit.sim.step import StepShape
from cbaudit.sim.workload import ClockUnit, Workload


class Validation(StrEnum):
    """How the engine checks each plan and result."""

    CONTRACT = "contract"  # every plan and result, cbaudit.contract's incremental validator
    FAST = "fast"  # an alias of CONTRACT, kept for existing command lines and specs
    OFF = "off"  # no checks (speed comparisons only)


class StepCost(Protocol):
    """What the engine needs from a cost model."""

    def step_time_ms(self, step: StepShape) -> float: ...


class TraceSink(Protocol):
    def write(self, kind: str, data: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True)
class EngineFinding:
    """A contract or engine finding raised during a replay, with the iteration it belongs to."""

    code: str
    message: str
    iteration: int
    record: str  # "state" | "plan" | "result" | "engine"


@dataclass
class RequestStats:
    """Clocks of one request (clock units; None when the event did not happen)."""

    first_scheduled: float | None = None
    first_scheduled_iteration: int | None = None
    first_token: float | None = None
    last_token: float | None = None
    finished: float | None = None
    finish_reason: str | None = None
    tbt_sum: float = 0.0
    tbt_max: float = 0.0
    tbt_count: int = 0
    recompute_tokens: int = 0
    scheduled_tokens: int = 0  # completed rows (prefill, decode and recompute)
    served_iterations: int = 0


@dataclass
class ReplayRun:
    """Everything a replay produced, ready for the metrics module."""

    workload: Workload
    identity: PolicyIdentity
    requests: list[LiveRequest]
    stats: list[RequestStats]
    rows_per_iteration: list[int]  # selected request generations per iteration (index i -> i+1)
    tokens_per_iteration: list[int]
    iteration_end_times: list[float]
    tbt_samples: list[float]
    findings: list[EngineFinding]
    iterations: int
    end_time: float
    stop_reason: str
    preemptions: int
    slot_clock: bool  # True: one iteration per clock tick (the unit cost model)
    validation: Validation
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class InitialView:
    """A request's published view at the first cut (for scenario fixtures)."""

    emitted: int
    computed: int
    queue: Queue
    snapshot_version: int = 0
    ready: bool = True
    readiness_reason: str | None = None
    last_served: int = -1


class _View:
    """The published cut handed to the policy (read-only by convention)."""

    __slots__ = (
        "budgets",
        "free_blocks",
        "iteration",
        "now",
        "running",
        "state_version",
        "waiting",
    )

    def __init__(
        self,
        state_version: int,
        iteration: int,
        now: float,
        budgets: BudgetsView,
        running: Sequence[LiveRequest],
        waiting: Sequence[LiveRequest],
        free_blocks: int | None,
    ) -> None:
        self.state_version = state_version
        self.iteration = iteration
        self.now = now
        self.budgets = budgets
        self.running = running
        self.waiting = waiting
        self.free_blocks = free_blocks


def identity_of(policy: Policy) -> PolicyIdentity:
    """The identity a replay declares for `policy` (its id, version and tie-break)."""
    return PolicyIdentity(
        policy.policy_id,
        policy.policy_version,
        TieBreak(tuple(policy.tie_break_key), tuple(Phase(p) for p in policy.phase_order)),
    )


def _slo_units(limit_ms: float | None, workload: Workload) -> float | None:
    """An SLO limit in milliseconds as clock units (None when undeclared or not convertible)."""
    if limit_ms is None:
        return None
    if workload.clock.unit is ClockUnit.MS:
        return float(limit_ms)
    tick_ms = workload.clock.tick_ms
    return None if tick_ms is None else limit_ms / tick_ms


class Engine:
    """One replay of one workload under one policy and cost model."""

    def __init__(
        self,
        workload: Workload,
        policy: Policy,
        cost: StepCost,
        *,
        horizon: int | None = None,
        validation: Validation = Validation.CONTRACT,
        trace: TraceSink | None = None,
        initial: Mapping[str, InitialView] | None = None,
        max_iterations: int = 50_000_000,
        max_decisions: int | None = None,
        max_findings: int = 100,
        progress: Callable[[int, int], None] | None = None,
        preemption: Any = None,
        cross_check: bool = False,
        step_observer: Callable[[Any], None] | None = None,
    ) -> None:
        self.identity = identity_of(policy)
        # called with a step_trace.StepEvent after each executed iteration (replay --steps)
        self.step_observer = step_observer
        self.workload = workload.with_policy(self.identity)
        self.policy = policy
        self.cost = cost
        self.horizon = horizon
        self.validation = validation
        self.trace = trace
        self.max_iterations = max_iterations
        self.max_decisions = max_decisions
        self.max_findings = max_findings
        self.progress = progress
        # None: preemption by recompute; a cbaudit.sim.preemption_swap.SwapPreemption: by swap
        self.preemption = preemption
        self.slot_clock = bool(getattr(cost, "is_unit", False))
        clock = workload.clock
        if self.slot_clock or clock.unit is ClockUnit.MS:
            self.ms_per_unit = 1.0
        elif clock.tick_ms is not None:
            self.ms_per_unit = clock.tick_ms
        else:
            raise InputError.at(
                "REPLAY.CLOCK.NO_TICK_MS",
                "a tick clock needs tick_ms to run under a millisecond cost model",
                workload.source,
                pointer="/clock",
            )
        b = workload.budgets
        self.budgets = BudgetsView(
            b.token_budget,
            b.sequence_budget,
            b.kv_block_size,
            b.kv_total_blocks,
            b.long_prefill_token_threshold,
        )
        self.key_fn = key_function(policy.tie_break_key, policy.phase_order)
        self.reqs: list[LiveRequest] = []
        self.realized: list[int] = []  # executor only: hidden truth, never shown to policies
        for i, d in enumerate(workload.requests):
            r = LiveRequest(
                i,
                d.request_id,
                d.request_generation,
                d.prompt_tokens,
                d.max_output_tokens,
                d.arrival,
                d.arrival_order,
                d.priority,
                d.client,
            )
            if d.slo is not None:
                r.ttft_limit = _slo_units(d.slo.get("ttft_ms"), workload)
                r.tbt_limit = _slo_units(d.slo.get("tbt_ms"), workload)
            self.reqs.append(r)
            self.realized.append(workload.realized_output(d))
        self.initial = dict(initial or {})
        # test hook: also validate full records every iteration and require the same issues
        self.cross_check = cross_check and validation is not Validation.OFF
        self._contract: WorkloadManifest | None = None
        if validation is not Validation.OFF:
            self._contract = WorkloadManifest.from_json(self.workload.to_manifest())

    # ------------------------------------------------------------------ run

    def run(self) -> ReplayRun:
        reqs = self.reqs
        n = len(reqs)
        bs = self.budgets.kv_block_size
        free: int | None = self.budgets.kv_total_blocks if bs is not None else None
        waiting: deque[LiveRequest] = deque()
        running: list[LiveRequest] = []
        stats = [RequestStats() for _ in reqs]
        rows: list[int] = []
        tokens_iter: list[int] = []
        end_times: list[float] = []
        tbt: list[float] = []
        findings: list[EngineFinding] = []
        service: dict[str, int] = {}
        now = 0.0
        iteration = 0
        version = 0
        finished = 0
        preemptions = 0
        stop = "completed"
        validation = self.validation
        trace = self.trace
        slot_clock = self.slot_clock
        key_fn = self.key_fn
        horizon = self.horizon

        live: LiveContract | None = None
        if self._contract is not None:
            live = LiveContract(self._contract, unstated_reason=UNSTATED_REASON)
        cross_check = self.cross_check

        def push_waiting(r: LiveRequest) -> None:
            if live is not None:
                live.enter_waiting(r)

        ptr = 0
        if self.initial:
            ptr = self._apply_initial(waiting, running, stats)
            if bs is not None and free is not None:
                free -= sum(r.blocks for r in running)
            finished = sum(1 for r in reqs if r.queue is Queue.FINISHED)
            for r in waiting:
                push_waiting(r)
            if live is not None:
                for r in running:
                    live.touch(r)
        order = [r for r in reqs if r.queue is None]
        n_pending = len(order)
        ptr = 0

        if trace is not None:
            trace.write("workload", self.workload.to_manifest())

        # Only an unbounded replay is refused up front: one bounded by a horizon or a decision
        # count (a snapshot replayed for one decision) ends anyway and may be exactly that.
        unbounded = horizon is None and self.max_decisions is None
        too_large = self._exceeding_pool(reqs) if bs is not None and unbounded else []
        if too_large:
            findings.extend(too_large[: self.max_findings])
            stop = "kv_capacity"
            n = finished  # nothing runs: a request that can never fit would cycle forever
        # A livelock detector: iterations in a row that completed work but no semantic service
        # (only rows rebuilt after preemption). Real progress always completes a semantic row or
        # an output; outstanding rebuild work is bounded by the rows of the whole workload.
        stall_limit = 2 * sum(r.p + self.realized[r.idx] for r in reqs) + 1000
        stalled = 0

        while finished < n:
            while ptr < n_pending and order[ptr].arrival <= now:
                r = order[ptr]
                r.queue = Queue.WAITING
                waiting.append(r)
                push_waiting(r)
                ptr += 1
            if not waiting and not running:
                if ptr >= n_pending:
                    break
                nxt = order[ptr].arrival
                if slot_clock:
                    nxt = float(math.ceil(nxt))
                    gap = int(nxt - now)
                    if horizon is not None and iteration + gap >= horizon:
                        rows.extend([0] * (horizon - iteration))
                        tokens_iter.extend([0] * (horizon - iteration))
                        end_times.extend(float(t) for t in range(iteration + 1, horizon + 1))
                        iteration = horizon
                        now = float(horizon)
                        stop = "horizon"
                        break
                    rows.extend([0] * gap)
                    tokens_iter.extend([0] * gap)
                    end_times.extend(now + k + 1 for k in range(gap))
                    iteration += gap
                now = nxt
                continue
            if horizon is not None and iteration >= horizon:
                stop = "horizon"
                break
            if iteration >= self.max_iterations:
                stop = "max_iterations"
                break

            if self.max_decisions is not None and version >= self.max_decisions:
                stop = "max_decisions"
                break
            version += 1
            if self.preemption is not None and self.preemption.swapped:
                if live is not None:  # a restored request becomes ready with a new snapshot
                    for r, _ in self.preemption.swapped.values():
                        live.touch(r)
                free = self.preemption.swap_in(free, bs)  # restore swapped-out K/V that fits
            view = _View(version, iteration + 1, now, self.budgets, running, waiting, free)
            builder = PlanBuilder(view, key_fn)
            self.policy.choose(view, builder)
            plan = builder.build()

            state_rec: Any = None
            plan_rec: Any = None
            if live is not None or trace is not None:
                issues: list[tuple[str, str, str]] = []
                if trace is not None or cross_check:
                    state_rec = state_json(
                        self.workload.workload_id, version, now, (*running, *waiting), service
                    )
                    plan_rec = plan_json(
                        plan,
                        version,
                        self.identity.policy_id,
                        self.identity.policy_version,
                        self.workload.budgets.to_json(),
                    )
                    if trace is not None:
                        trace.write("state", state_rec)
                        trace.write("plan", plan_rec)
                if live is not None:
                    found = live.check_plan(plan, version, running, waiting)
                    if cross_check:
                        found = self._cross_check(found, self._contract_plan(state_rec, plan_rec))
                    if found:
                        issues = [(i.code, i.message, i.record) for i in found]
                    if free is not None:
                        released = sum(v.blocks for v in plan.preempted)
                        if plan.blocks_used > free + released:
                            issues.append(
                                (
                                    "REPLAY.KV.BUDGET_EXCEEDED",
                                    f"plan needs {plan.blocks_used} KV blocks,"
                                    f" {free + released} are free after preemption",
                                    "plan",
                                )
                            )
                if issues:
                    for code, msg, rec in issues:
                        if len(findings) < self.max_findings:
                            findings.append(EngineFinding(code, msg, iteration + 1, rec))
                    stop = "contract_violation"
                    break

            # preemption by recompute: release blocks, keep emitted output, requeue at the front
            for victim in plan.preempted:
                preemptions += 1
                victim.preemptions += 1
                if self.preemption is not None:  # exact preservation: frontiers kept off-device
                    self.preemption.swap_out(victim)
                else:
                    victim.floor = max(victim.floor, victim.c)
                    victim.c = 0
                if free is not None:
                    free += victim.blocks
                victim.blocks = 0
                running.remove(victim)
                victim.queue = Queue.WAITING
                victim.snapshot += 1
                waiting.appendleft(victim)
                push_waiting(victim)

            # admission refused for good (bounded admission): terminal, never served
            for rej in plan.rejected:
                rej.terminal = True
                rej.ready = False
                rej.queue = Queue.FINISHED
                stats[rej.idx].finish_reason = "rejected"
                finished += 1
            if plan.rejected:
                gone = {r.idx for r in plan.rejected}
                kept = [r for r in waiting if r.idx not in gone]
                waiting.clear()
                waiting.extend(kept)

            if not plan.items:
                if plan.preempted or plan.rejected:
                    continue
                if ptr < n_pending:
                    nxt = order[ptr].arrival
                    if slot_clock:
                        nxt = float(max(math.ceil(nxt), now + 1))
                        gap = int(nxt - now)
                        rows.extend([0] * gap)
                        tokens_iter.extend([0] * gap)
                        end_times.extend(now + k + 1 for k in range(gap))
                        iteration += gap
                    now = nxt
                    continue
                pool = (
                    f"; K/V pool: {free} of {self.budgets.kv_total_blocks} blocks free"
                    " (a policy that never preempts can fill it with partly served requests)"
                    if free is not None
                    else ""
                )
                findings.append(
                    EngineFinding(
                        "REPLAY.NO_PROGRESS",
                        f"policy {self.identity.policy_id} selected nothing with"
                        f" {len(running)} running and {len(waiting)} waiting requests and no"
                        f" arrival pending: the replay cannot advance{pool}",
                        iteration + 1,
                        "engine",
                    )
                )
                stop = "no_progress"
                break

            # ---------------------------------------------------------- execute one iteration
            iteration += 1
            start = now
            if slot_clock:
                dt = 1.0
            else:
                dec: list[int] = []
                chunks: list[tuple[int, int]] = []
                for item in plan.items:
                    if item.phase is Phase.DECODE_ROW:
                        dec.append(item.end)
                    else:
                        chunks.append((item.start, item.end))
                dt = self.cost.step_time_ms(StepShape(tuple(dec), tuple(chunks))) / self.ms_per_unit
            if self.preemption is not None:  # swap transfers: charged under a ms clock only
                swap_ms = self.preemption.take_pending_ms()
                if not slot_clock:
                    dt += swap_ms / self.ms_per_unit
            now = start + dt
            done: list[tuple[PlanItem, int, int]] | None = (
                [] if (live is not None or trace is not None) else None
            )
            terminal: list[tuple[LiveRequest, str]] = []
            n_tokens = 0
            progressed = False
            for item in plan.items:
                r = item.req
                e0 = r.e
                c0 = r.c
                if done is not None:
                    done.append((item, e0, c0))
                st = stats[r.idx]
                if st.first_scheduled is None:
                    st.first_scheduled = start
                    st.first_scheduled_iteration = iteration
                width = item.end - item.start
                n_tokens += width
                st.scheduled_tokens += width
                st.served_iterations += 1
                rb = r.floor
                if rb > item.start:
                    st.recompute_tokens += min(item.end, rb) - item.start
                r.c = item.end
                if bs is not None and free is not None:
                    held = -(-r.c // bs)
                    free -= held - r.blocks
                    r.blocks = held
                r.last_served = iteration
                r.snapshot += 1
                if item.end > (r.floor if e0 == 0 else r.p + e0 - 1):
                    progressed = True  # a semantic row: new prompt rows or the next token
                if r.client is not None:  # semantic service only: rebuild rows are overhead
                    service[r.client] = service.get(r.client, 0) + semantic_rows(
                        r.p, e0, item.start, item.end, r.floor if e0 == 0 else 0
                    )
                if item.end == r.p + e0:
                    r.e = e0 + 1
                    if st.first_token is None:
                        st.first_token = now
                    else:
                        gap_t = now - (st.last_token or 0.0)
                        tbt.append(gap_t)
                        st.tbt_sum += gap_t
                        st.tbt_count += 1
                        if gap_t > st.tbt_max:
                            st.tbt_max = gap_t
                    st.last_token = now
                    r.last_emit = now
                    if r.e >= self.realized[r.idx]:
                        terminal.append((r, "eos"))
                    elif r.e >= r.max_out:
                        terminal.append((r, "max_output_tokens"))

            if plan.admitted:
                self._admit(plan.admitted, waiting, running)
            left = free
            for r, why in terminal:
                r.terminal = True
                r.queue = Queue.FINISHED
                r.ready = False
                if free is not None:
                    free += r.blocks
                r.blocks = 0
                st = stats[r.idx]
                st.finished = now
                st.finish_reason = why
                finished += 1
            if terminal:
                running = [r for r in running if not r.terminal]
            if self.step_observer is not None:
                self._observe_step(iteration, start, now, plan, terminal, left, free)

            if done is not None:
                res: Any = None
                if trace is not None or cross_check:
                    res = result_json(version, done, terminal)
                if trace is not None:
                    trace.write("result", res)
                if live is not None:
                    found = live.check_result(done)
                    if cross_check:
                        found = self._cross_check(
                            found, self._contract_result(state_rec, plan_rec, res)
                        )
                    if found:
                        for i in found:
                            if len(findings) < self.max_findings:
                                findings.append(
                                    EngineFinding(i.code, i.message, iteration, i.record)
                                )
                        stop = "contract_violation"
                        rows.append(len(plan.items))
                        tokens_iter.append(n_tokens)
                        end_times.append(now)
                        break
            rows.append(len(plan.items))
            tokens_iter.append(n_tokens)
            end_times.append(now)
            if self.progress is not None and terminal:
                self.progress(finished, n)
            stalled = 0 if progressed else stalled + 1
            if stalled > stall_limit:
                findings.append(self._livelock_finding(stalled, iteration, preemptions))
                stop = "no_progress"
                break

        return ReplayRun(
            workload=self.workload,
            identity=self.identity,
            requests=reqs,
            stats=stats,
            rows_per_iteration=rows,
            tokens_per_iteration=tokens_iter,
            iteration_end_times=end_times,
            tbt_samples=tbt,
            findings=findings,
            iterations=iteration,
            end_time=now,
            stop_reason=stop,
            preemptions=preemptions,
            slot_clock=slot_clock,
            validation=validation,
            extra={"preemption": self.preemption.report()} if self.preemption is not None else {},
        )

    # ------------------------------------------------------------------ helpers

    def _exceeding_pool(self, reqs: Sequence[LiveRequest]) -> list[EngineFinding]:
        """Requests whose rows can never fit the KV pool, even alone (they would cycle forever).

        A request emitting n tokens holds p + n - 1 computed rows when it computes its last
        one; with n its realized output (capped by max_output_tokens) that is the least pool
        it needs. A real engine refuses such a request or such a pool size up front.
        """
        bs = self.budgets.kv_block_size
        total = self.budgets.kv_total_blocks
        if bs is None or total is None:
            return []
        out = []
        for r in reqs:
            n_out = min(self.realized[r.idx], r.max_out)
            rows = r.p + n_out - 1
            need = -(-rows // bs)
            if need > total:
                out.append(
                    EngineFinding(
                        "REPLAY.KV.REQUEST_EXCEEDS_POOL",
                        f"{r.rid} needs {rows} K/V rows ({r.p} prompt + {n_out} outputs - 1) ="
                        f" {need} blocks of {bs}, but the pool has {total} blocks: it could"
                        " never finish, so the replay did not start",
                        0,
                        "engine",
                    )
                )
        return out

    def _livelock_finding(self, stalled: int, iteration: int, preemptions: int) -> EngineFinding:
        return EngineFinding(
            "REPLAY.NO_PROGRESS",
            f"policy {self.identity.policy_id}: {stalled} iterations in a row completed only"
            f" rows rebuilt after preemption and no new service or output ({preemptions}"
            " preemptions so far): the replay is in a preemption livelock",
            iteration,
            "engine",
        )

    def _observe_step(
        self,
        iteration: int,
        start: float,
        end: float,
        plan: Any,
        terminal: list[tuple[LiveRequest, str]],
        left: int | None,
        free: int | None,
    ) -> None:
        from cbaudit.sim.step_trace import StepEvent

        dec: list[int] = []
        chunks: list[tuple[int, int]] = []
        for item in plan.items:
            if item.phase is Phase.DECODE_ROW:
                dec.append(item.end)
            else:
                chunks.append((item.start, item.end))
        assert self.step_observer is not None
        self.step_observer(
            StepEvent(
                iteration=iteration,
                start=start,
                end=end,
                shape=StepShape(tuple(dec), tuple(chunks)),
                admitted=tuple(r.rid for r in plan.admitted),
                preempted=tuple(r.rid for r in plan.preempted),
                rejected=tuple(r.rid for r in plan.rejected),
                finished=tuple(r.rid for r, _ in terminal),
                kv_blocks_left=left,
                kv_blocks_free_end=free,
                kv_total_blocks=self.budgets.kv_total_blocks if free is not None else None,
            )
        )

    @staticmethod
    def _admit(
        admitted: list[LiveRequest], waiting: deque[LiveRequest], running: list[LiveRequest]
    ) -> None:
        chosen = {r.idx for r in admitted}
        popped = 0
        while waiting and waiting[0].idx in chosen:
            waiting.popleft()
            popped += 1
        if popped < len(chosen):
            rest = [r for r in waiting if r.idx not in chosen]
            waiting.clear()
            waiting.extend(rest)
        for r in admitted:
            r.queue = Queue.RUNNING
            running.append(r)

    def _apply_initial(
        self, waiting: deque[LiveRequest], running: list[LiveRequest], stats: list[RequestStats]
    ) -> int:
        by_id = {r.rid: r for r in self.reqs}
        bs = self.budgets.kv_block_size
        for rid, init in self.initial.items():
            r = by_id.get(rid)
            if r is None:
                raise InputError.at(
                    "REPLAY.INITIAL.UNKNOWN_REQUEST",
                    f"initial state names {rid!r}, which the workload does not declare",
                    self.workload.source,
                )
            r.e = init.emitted
            r.c = init.computed
            r.snapshot = init.snapshot_version
            r.ready = init.ready
            r.readiness_reason = init.readiness_reason
            r.queue = init.queue
            r.last_served = init.last_served
            if bs is not None and init.queue is Queue.RUNNING:
                r.blocks = blocks_held(r.c, bs)
            if init.queue is Queue.FINISHED:
                r.terminal = True
                r.ready = False
        for r in self.reqs:  # queue order follows the workload's arrival order
            if r.rid in self.initial:
                if r.queue is Queue.RUNNING:
                    running.append(r)
                elif r.queue is Queue.WAITING:
                    waiting.append(r)
        del stats
        return 0

    def _contract_plan(
        self, state_rec: Mapping[str, Any], plan_rec: Mapping[str, Any]
    ) -> list[Issue]:
        """The record validator on this iteration's state and plan (the cross-check)."""
        from cbaudit.contract.plan_contract import check_plan
        from cbaudit.contract.records import IterationPlan, SchedulerState
        from cbaudit.contract.state_contract import check_state

        assert self._contract is not None
        state = SchedulerState.from_json(state_rec)
        plan = IterationPlan.from_json(plan_rec)
        return check_state(self._contract, state) + check_plan(self._contract, state, plan)

    def _contract_result(
        self,
        state_rec: Mapping[str, Any],
        plan_rec: Mapping[str, Any],
        result_rec: Mapping[str, Any],
    ) -> list[Issue]:
        """The record validator on this iteration's result (the cross-check)."""
        from cbaudit.contract.records import IterationPlan, IterationResult, SchedulerState
        from cbaudit.contract.result_contract import check_result

        assert self._contract is not None
        return check_result(
            self._contract,
            SchedulerState.from_json(state_rec),
            IterationPlan.from_json(plan_rec),
            IterationResult.from_json(result_rec),
        )

    @staticmethod
    def _cross_check(live: list[Issue], records: list[Issue]) -> list[Issue]:
        """The record validator's issues, plus REPLAY.VALIDATOR.DIVERGED when the incremental
        validator said anything else."""
        if live == records:
            return records
        return [
            *records,
            Issue(
                "REPLAY.VALIDATOR.DIVERGED",
                "plan",
                "",
                f"incremental validator reported {[(i.code, i.pointer) for i in live]},"
                f" the record validator {[(i.code, i.pointer) for i in records]}",
            ),
        ]
