"""The deterministic replay of the article's control loop (0x03).

Per iteration: publish an immutable cut (versioned request views) -> the policy chooses a plan
from the online projection -> the plan is validated with the contract rules -> the simulated
executor runs one iteration, reading hidden truth only to decide when a request stops -> the
result is validated -> only completed progress is published.

`Engine.run` is that loop, one named step per stage (`Engine.iterate`):

    admit     arrived requests join the waiting queue (or the clock idles to the next arrival)
    choose    publish the next cut (state version) and let the policy fill a plan from it
    validate  check the plan, and the views it read, with the contract
    execute   carry out the plan's preemptions and rejections, then run one iteration
    publish   admissions and finished requests change queues; the result is checked; the
              iteration's figures are recorded

Each step reads and writes the engine's loop state (queues, clock, counters) and is tested on
its own (`tests/sim/test_engine_steps.py`).

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
from operator import add
from typing import Any, Protocol

from cbaudit.contract.issues import Issue
from cbaudit.contract.live import LiveContract
from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.workload_records import (
    Phase,
    PolicyIdentity,
    Queue,
    TieBreak,
    WorkloadManifest,
    semantic_rows,
)
from cbaudit.model import InputError
from cbaudit.policies.base import (
    BlockRow,
    BudgetsView,
    Plan,
    PlanBuilder,
    PlanItem,
    Policy,
    key_function,
)
from cbaudit.policies.budget import blocks_held
from cbaudit.policies.verified import no_stretch_note, stretch_claim_refusal
from cbaudit.sim.records_io import UNSTATED_REASON, plan_json, result_json, state_json
from cbaudit.sim.request_table import (
    RequestStats,
    RequestTable,
    new_live_request,
    request_rows,
    stats_rows,
)
from cbaudit.sim.series import RunSeries, SortedCounts
from cbaudit.sim.step import StepShape
from cbaudit.sim.stretch import run_stretch
from cbaudit.sim.workload import ClockUnit, TraceRequests, Workload

# module constants: reading an Enum member off its class costs an attribute lookup per use
_DECODE = Phase.DECODE_ROW
_WAITING = Queue.WAITING
_RUNNING = Queue.RUNNING
_FINISHED = Queue.FINISHED
# distinct TBT gaps counted in the engine's dict before they are folded into sorted arrays
# (and at least an eighth as many as were folded before: each fold copies those, so the
# copying stays within 8 times the gaps counted, while the dict, about 70 bytes a gap against
# the arrays' 16, stays small). A gap that recurs while it is in the dict costs one dict
# update; every gap a fold carries costs a bisection of the arrays. On the 19,366-request
# conversation trace 32,768 folds 125k gaps in 3 folds where 16,384 folds 208k in 11: the TBT
# bookkeeping 272 -> 181 ms (benchmarks/tbt_fold.py's stream), peak RSS +0.7 MiB or none.
_TBT_FOLD = 32768
# pending requests whose objects are made together (see `_Pending`)
_MAKE_AHEAD = 64


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


__all__ = ["RequestStats"]  # re-exported: its home is cbaudit.sim.request_table


@dataclass
class ReplayRun:
    """Everything a replay produced, ready for the metrics module."""

    workload: Workload
    identity: PolicyIdentity
    # every request's final view and stats, one row per declaration (`requests` and `stats`
    # rebuild objects from it on access)
    table: RequestTable
    # selected request generations and scheduled tokens per iteration (index i -> i+1), as
    # runs of equal values
    rows_per_iteration: RunSeries
    tokens_per_iteration: RunSeries
    tbt_counts: Mapping[float, int]  # every gap between two output tokens -> how often
    findings: list[EngineFinding]
    iterations: int
    end_time: float
    stop_reason: str
    preemptions: int
    slot_clock: bool  # True: one iteration per clock tick (the unit cost model)
    validation: Validation
    extra: dict[str, Any] = field(default_factory=dict)
    # what the user should hear that is not part of the report (the report is the same either
    # way): why the fast path was not taken, when a policy's stretch declaration was refused
    notes: list[str] = field(default_factory=list)

    @property
    def requests(self) -> Sequence[LiveRequest]:
        """Every request's final view (rebuilt from the table on access)."""
        return request_rows(self.table, self.workload)

    @property
    def stats(self) -> Sequence[RequestStats]:
        """Every request's stats (rebuilt from the table on access)."""
        return stats_rows(self.table, self.workload)


class Executed:
    """What executing one plan did: the input of `Engine.publish`."""

    __slots__ = ("block_e0", "done", "n_tokens", "plan", "progressed", "start", "terminal")

    # (no `__init__`: `Engine._serve` makes one per iteration and sets every field)
    plan: Plan
    start: float  # the iteration's start time (it ends at the engine's `now`)
    # (item, emitted before, computed before) per executed item, kept only when the result is
    # validated or traced
    done: list[tuple[PlanItem, int, int]] | None
    # the emitted count before each row of the plan's decode block (`Plan.block`), kept when
    # `done` is
    block_e0: list[int] | None
    terminal: list[tuple[LiveRequest, str]]  # (request, reason) of every request it finished
    n_tokens: int
    progressed: bool  # some row was semantic service (not only a rebuild)


def step_shape(items: Sequence[PlanItem], block: Sequence[LiveRequest] = ()) -> StepShape:
    """The cost model's view of one iteration: decode contexts and prefill chunks (`block`:
    requests whose decode rows `[c, c + 1)` come first, `Plan.block`)."""
    dec: list[int] = [r.c + 1 for r in block]
    chunks: list[tuple[int, int]] = []
    for item in items:
        if item.phase is _DECODE:
            dec.append(item.end)
        else:
            chunks.append((item.start, item.end))
    return StepShape(tuple(dec), tuple(chunks))


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
    """The published cut handed to the policy (read-only by convention), made by
    `Engine.cut` (or `_View.of`). The class has no `__init__`: a cut is made per decision
    and per stretch, and a class call without a Python `__init__` frame costs less."""

    __slots__ = (
        "budgets",
        "free_blocks",
        "iteration",
        "now",
        "running",
        "state_pool",
        "state_version",
        "waiting",
    )

    state_version: int
    iteration: int
    now: float
    budgets: BudgetsView
    running: Sequence[LiveRequest]
    waiting: Sequence[LiveRequest]
    free_blocks: int | None
    state_pool: Any  # a hybrid model's state pool (None: no such pool)

    @classmethod
    def of(
        cls,
        state_version: int,
        iteration: int,
        now: float,
        budgets: BudgetsView,
        running: Sequence[LiveRequest],
        waiting: Sequence[LiveRequest],
        free_blocks: int | None,
        state_pool: Any = None,
    ) -> _View:
        view = cls()
        view.state_version = state_version
        view.iteration = iteration
        view.now = now
        view.budgets = budgets
        view.running = running
        view.waiting = waiting
        view.free_blocks = free_blocks
        view.state_pool = state_pool
        return view


def identity_of(policy: Policy) -> PolicyIdentity:
    """The identity a replay declares for `policy` (its id, version and tie-break)."""
    return PolicyIdentity(
        policy.policy_id,
        policy.policy_version,
        TieBreak(tuple(policy.tie_break_key), tuple(Phase(p) for p in policy.phase_order)),
    )


class _Pending(Sequence[LiveRequest]):
    """The requests not yet arrived, in arrival order (`Engine._pending`): each one's
    `LiveRequest` and `RequestStats` are made when it is first read (at its arrival, or when
    the next arrival is looked at), with those of the next `_MAKE_AHEAD` pending requests
    (made together, they lie together in memory, as the loop reads them), and kept by the
    engine from then on."""

    __slots__ = ("_engine", "_live", "_order", "arrivals")

    def __init__(self, engine: Engine, order: Sequence[int]) -> None:
        self._engine = engine
        self._live = engine._live
        self._order = order  # workload indices
        # arrivals to compare with the clock (a plain trace's: C doubles)
        arrivals = engine._arrivals
        self.arrivals = arrivals if isinstance(order, range) else [arrivals[i] for i in order]

    def __len__(self) -> int:
        return len(self._order)

    def __getitem__(self, j: int) -> LiveRequest:  # type: ignore[override]
        order = self._order
        i = order[j]
        r = self._live.get(i)
        if r is None:
            self._engine._make(order[j : j + _MAKE_AHEAD])
            r = self._live[i]
        return r


class Engine:
    """One replay of one workload under one policy and cost model (run it once)."""

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
        stretches: bool = True,
        state_pool: Any = None,
        trust_stretch_claim: bool = False,
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
        # None: preemption by recompute; a cbaudit.sim.preemption_swap.SwapPreemption: by
        # recompute, swap or auto per victim
        self.preemption = preemption
        # None, or a cbaudit.sim.state_pool.StatePool: a hybrid model's per-request state
        self.state_pool = state_pool
        self.slot_clock = bool(getattr(cost, "is_unit", False))
        # a plan that only preempts is one iteration for a policy that says so (vLLM)
        self.preempt_only_steps = bool(getattr(policy, "preempt_only_is_a_step", False))
        self.ms_per_unit = self._ms_per_unit(workload)
        b = workload.budgets
        self.budgets = BudgetsView(
            b.token_budget,
            b.sequence_budget,
            b.kv_block_size,
            b.kv_total_blocks,
            b.long_prefill_token_threshold,
        )
        self.key_fn = key_function(policy.tie_break_key, policy.phase_order)
        # per request: arrival, prompt tokens, max_output_tokens and (executor only: hidden
        # truth, never shown to policies) the realized output
        self._arrivals, self._prompts, self._max_outs, self.realized = workload.columns()
        # the LiveRequest of every request made and not yet finished (made at arrival)
        self._live: dict[int, LiveRequest] = {}
        self.initial = dict(initial or {})
        # test hook: also validate full records every iteration and require the same issues
        self.cross_check = cross_check and validation is not Validation.OFF
        self._contract: WorkloadManifest | None = None
        if validation is not Validation.OFF:
            self._contract = self._contract_manifest()
        self._init_loop_state()
        # quiet decode stretches in closed form (cbaudit.sim.stretch): only for a policy that
        # declares them, and never when every iteration must be seen (trace, cross-check, step
        # observer), when swap transfers can land inside a stretch, or with a hybrid model's
        # state pool (it observes every plan)
        self.stretches = (
            stretches
            and callable(getattr(policy, "decode_stretch", None))
            and trace is None
            and not self.cross_check
            and step_observer is None
            and preemption is None
            and state_pool is None
        )
        # ... and only from code whose declaration was verified (`cbaudit.policies.verified`:
        # cbaudit's own policy classes, on the recorded sources, nothing rebound), unless the
        # caller takes it on the policy's word (`trust_stretch_claim`: the fast path's own
        # tests, which hold mutant policies to the promise question). Otherwise why not, for
        # the replay to say (None: believed, or no stretch was asked for)
        self.stretch_claim_refused: str | None = None
        if self.stretches and not trust_stretch_claim:
            self.stretch_claim_refused = stretch_claim_refusal(policy)
            self.stretches = self.stretch_claim_refused is None
        # the cost model's totals form (`_model_ms`), else None
        self._totals: Callable[[int, int, int], float] | None = (
            getattr(cost, "totals_step_ms")  # noqa: B009 (not part of the StepCost protocol)
            if callable(getattr(type(cost), "totals_step_ms", None))
            else None
        )
        # A decode block the engine offers and the policy takes, never written out, stays a
        # block in the plan (`PlanBuilder(pass_block=True)`, `Plan.block`): only where offers
        # are made (stretches on), under a step time summed here (the totals form, or the slot
        # clock) and with a declared key that starts with the arrival order
        self._pass_blocks = (
            self.stretches
            and (self._totals is not None or self.slot_clock)
            and tuple(policy.tie_break_key[:1]) == ("arrival_order",)
        )
        self.stretch_count = 0  # stretches taken (for tests and benchmarks)
        self.block_plans = 0  # plans executed with a decode block (`Plan.block`), its rows
        self.block_rows = 0
        self.stretch_iterations = 0
        self.chunk_stretch_iterations = 0  # of which in chunk stretches

    def cut(self, version: int, iteration: int, now: float, free: int | None) -> _View:
        """A published cut of the current queues (the policy's input): `_View.of` with the
        engine's budgets, queues and state pool, without its frame (a copy on purpose:
        tests/sim/test_engine_steps.py holds every slot to `_View.of`)."""
        view = _View()
        view.state_version = version
        view.iteration = iteration
        view.now = now
        view.budgets = self.budgets
        view.running = self.running
        view.waiting = self.waiting
        view.free_blocks = free
        view.state_pool = self.state_pool
        return view

    def _contract_manifest(self) -> WorkloadManifest:
        """The contract's view of the workload, its declarations made on demand
        (`cbaudit.sim.contract_view`: no second copy of a large workload)."""
        from cbaudit.sim.contract_view import contract_manifest

        return contract_manifest(self.workload, self.workload.position_index())

    def _ms_per_unit(self, workload: Workload) -> float:
        """Milliseconds per clock unit for the cost model's step times."""
        clock = workload.clock
        if self.slot_clock or clock.unit is ClockUnit.MS:
            return 1.0
        if clock.tick_ms is not None:
            return clock.tick_ms
        raise InputError.at(
            "REPLAY.CLOCK.NO_TICK_MS",
            "a tick clock needs tick_ms to run under a millisecond cost model",
            workload.source,
            pointer="/clock",
        )

    def _obj(self, i: int) -> LiveRequest:
        """The LiveRequest of declaration `i`, made on first use (a finished request's is
        gone: read it from `self.table`)."""
        r = self._live.get(i)
        if r is None:
            r = self._live[i] = new_live_request(self.workload, i)
        return r

    def _make(self, order: Sequence[int]) -> None:
        """The LiveRequest and RequestStats of each pending request in `order` not made yet."""
        live = self._live
        stats = self.stats
        workload = self.workload
        rows = workload.requests
        if not isinstance(rows, TraceRequests):
            for i in order:
                if i not in live:
                    live[i] = new_live_request(workload, i)
                    stats[i] = RequestStats()
            return
        # a plain trace's rows: `new_live_request` inlined (it is once per request)
        arrival, prompt, output, dash = rows.arrival, rows.prompt, rows.output, rows.prefix + "-"
        for i in order:
            if i not in live:
                a = arrival[i]
                live[i] = LiveRequest(
                    i,
                    f"{dash}{i:06d}",
                    0,
                    prompt[i],
                    output[i],
                    int(a) if a.is_integer() else a,
                    i,
                    0,
                    None,
                )
                stats[i] = RequestStats()

    @property
    def reqs(self) -> list[LiveRequest]:
        """Every request's view now (for tests and fixtures): the live object, or a finished
        request's rebuilt from the table; makes the objects of requests not yet arrived."""
        table = self.table
        return [
            table.live_request_at(self.workload, i) if table.queue[i] == 3 else self._obj(i)
            for i in range(table.n)
        ]

    def _fold(self, r: LiveRequest) -> None:
        """A finished or rejected request: its figures to the table, its objects dropped."""
        i = r.idx
        stats = self.stats
        self.table.store(r, stats[i])
        stats[i] = None  # type: ignore[call-overload]
        self._live.pop(i, None)

    def _init_loop_state(self) -> None:
        """The loop's state before the first cut (queues, clock, counters, series)."""
        bs = self.budgets.kv_block_size
        self.free: int | None = self.budgets.kv_total_blocks if bs is not None else None
        self.waiting: deque[LiveRequest] = deque()
        self.running: list[LiveRequest] = []
        n = len(self.workload.requests)
        # the stats of every request made and not yet finished (`_live`), by index (None for
        # the others: a finished request's figures are in `table`; a list, read once per
        # served row)
        self.stats: list[RequestStats] = [None] * n  # type: ignore[list-item]
        self.table = RequestTable(n)
        # selected request generations and tokens per iteration, as runs of equal values
        self.rows = RunSeries()
        self.tokens_iter = RunSeries()
        self.tbt: dict[float, int] = {}  # TBT gaps as counts of distinct values
        self._tbt_folded = SortedCounts()  # ... and those folded out of it (sorted arrays)
        self.findings: list[EngineFinding] = []
        # (iteration, n, need): after a stretch that an event ended, the first n running
        # requests are ready decodes at their frontier whose next rows open `need` K/V blocks
        # (`PlanBuilder.offer_block`); valid only while no iteration has run since
        self.decode_block: tuple[int, int, int] | None = None
        self.service: dict[str, int] = {}  # completed semantic service per client
        self.now = 0.0
        self.iteration = 0  # executed (or idle slot-clock) iterations
        self.version = 0  # published cuts (= decisions)
        self.finished = 0
        self.target = n  # the replay completes when this many have finished
        self.preemptions = 0
        self.stop: str | None = None  # why the replay ended (None while it runs)
        self.live: LiveContract | None = None
        self._pending: _Pending = _Pending(self, ())  # not yet arrived, in arrival order
        self._next = 0  # index in `_pending` of the next arrival
        self._keep_done = self._contract is not None or self.trace is not None
        self._records: tuple[Any, Any] = (None, None)  # this cut's state and plan JSON
        self._stall_limit = 0
        self._stalled = 0

    # ------------------------------------------------------------------ the loop

    def _fold_tbt(self) -> None:
        """The TBT gaps counted in the dict, folded into the sorted arrays (the dict emptied)."""
        if self.tbt:
            self._tbt_folded = self._tbt_folded.merged(self.tbt)
            self.tbt.clear()

    def run(self) -> ReplayRun:
        """Replay the workload until every request finished or a stop, and report it."""
        self.start()
        while self.stop is None and self.finished < self.target:
            self.iterate()
        return self.report()

    def start(self) -> None:
        """Set up the first cut: the initial views, the arrival order, the trace header, and
        the refusal of a replay that could never end."""
        if self._contract is not None:
            self.live = LiveContract(
                self._contract, unstated_reason=UNSTATED_REASON, vouched=BlockRow
            )
        n = self.table.n
        if self.initial:
            self._apply_initial()
            live = self._live
            order: Sequence[int] = [i for i in range(n) if i not in live or live[i].queue is None]
        else:
            order = range(n)
        self._pending = _Pending(self, order)
        if self.trace is not None:
            self.trace.write("workload", self.workload.to_manifest())
        # Only an unbounded replay is refused up front: one bounded by a horizon or a decision
        # count (a snapshot replayed for one decision) ends anyway and may be exactly that.
        if self.horizon is None and self.max_decisions is None:
            too_large = self._exceeding_pool()
            if too_large:
                self.findings.extend(too_large[: self.max_findings])
                self.stop = "kv_capacity"  # a request that can never fit would cycle forever
        # A livelock detector: iterations in a row that completed work but no semantic service
        # (only rows rebuilt after preemption). Real progress always completes a semantic row
        # or an output; outstanding rebuild work is bounded by the rows of the whole workload.
        self._stall_limit = 2 * (sum(self._prompts) + sum(self.realized)) + 1000

    def iterate(self) -> None:
        """One pass of the control loop: arrivals, then one decision, checked and carried out."""
        self.admit()
        if not self.waiting and not self.running:
            self.idle()
            return
        # (`at_limit` can hold only with a horizon or decision bound, or at max_iterations)
        if (
            self.horizon is not None
            or self.max_decisions is not None
            or self.iteration >= self.max_iterations
        ) and self.at_limit():
            return
        plan = self.choose()
        if not self.validate(plan):
            return
        step = self.execute(plan)
        if step is None:
            self.wait(plan)
        else:
            self.publish(step)
            if self.stretches and self.stop is None:
                run_stretch(self, step)
            if len(self.tbt) > _TBT_FOLD and 8 * len(self.tbt) > len(self._tbt_folded):
                self._fold_tbt()

    # ------------------------------------------------------------------ admit

    def admit(self) -> None:
        """Requests that have arrived by `now` join the back of the waiting queue."""
        pending = self._pending
        arrivals = pending.arrivals
        i = self._next
        now = self.now
        if i >= len(arrivals) or arrivals[i] > now:
            return
        n = len(arrivals)
        waiting = self.waiting
        live = self.live
        made = self._live
        order = pending._order
        while i < n and arrivals[i] <= now:
            # `pending[i]`, its lookup inline (the request is made, with those behind it, by
            # `_Pending.__getitem__` when it is not yet)
            r = made.get(order[i])
            if r is None:
                r = pending[i]
            r.queue = _WAITING
            waiting.append(r)
            if live is not None:  # `_enter_waiting`, inline
                live.enter_waiting(r)
            i += 1
        self._next = i

    def idle(self) -> None:
        """Nothing is live: the clock jumps to the next arrival, or the replay is complete."""
        if self._next >= len(self._pending):
            self.stop = "completed"
            return
        nxt = self._pending.arrivals[self._next]
        if self.slot_clock:
            nxt = float(math.ceil(nxt))
            gap = int(nxt - self.now)
            horizon = self.horizon
            if horizon is not None and self.iteration + gap >= horizon:
                self._idle_to_horizon(horizon)
                return
            self._idle_iterations(gap)
        self.now = nxt

    def _idle_iterations(self, gap: int) -> None:
        """`gap` empty slot-clock iterations, one tick each."""
        self.rows.extend([0] * gap)
        self.tokens_iter.extend([0] * gap)
        self.iteration += gap

    def _idle_to_horizon(self, horizon: int) -> None:
        """Empty slot-clock iterations up to the horizon, which ends the replay."""
        gap = horizon - self.iteration
        self.rows.extend([0] * gap)
        self.tokens_iter.extend([0] * gap)
        self.iteration = horizon
        self.now = float(horizon)
        self.stop = "horizon"

    def at_limit(self) -> bool:
        """Whether a bound (horizon, iterations, decisions) ends the replay before this cut."""
        if self.horizon is not None and self.iteration >= self.horizon:
            self.stop = "horizon"
        elif self.iteration >= self.max_iterations:
            self.stop = "max_iterations"
        elif self.max_decisions is not None and self.version >= self.max_decisions:
            self.stop = "max_decisions"
        return self.stop is not None

    # ------------------------------------------------------------------ choose

    def choose(self) -> Plan:
        """Publish the next cut (a new state version) and let the policy plan from it.

        Swapped-out requests whose K/V fits again are restored first (swap preemption).
        """
        self.version += 1
        swap = self.preemption
        if swap is not None and swap.swapped:
            live = self.live
            if live is not None:  # a restored request becomes ready with a new snapshot
                for r, _ in swap.swapped.values():
                    live.touch(r)
            self.free = swap.swap_in(self.free, self.budgets.kv_block_size)
        view = self.cut(self.version, self.iteration + 1, self.now, self.free)
        offer: tuple[int, int] | None = None
        block = self.decode_block
        if block is not None:  # the requests a stretch just left (`stretch._stretch`)
            self.decode_block = None
            if block[0] == self.iteration:  # (nothing has run since: the same requests)
                offer = (block[1], block[2])
        builder = PlanBuilder(
            view,
            self.key_fn,
            vouched_block=offer,
            # (a cut written out, cross-checked as records or observed lists every row)
            pass_block=self._pass_blocks
            and self.trace is None
            and not self.cross_check
            and self.step_observer is None,
        )
        self.policy.choose(view, builder)
        return builder.build()

    # ------------------------------------------------------------------ validate

    def validate(self, plan: Plan) -> bool:
        """Check the plan, and the views it read, with the contract before anything runs.

        The cut and the plan go to the trace first. A finding stops the replay (False).
        """
        if self.trace is not None or self.cross_check:
            self._records = self._write_cut(plan)
        live = self.live
        if live is None:
            return True
        found = live.check_plan(plan, self.version, self.running, self.waiting)
        if self.cross_check:
            found = self._cross_check(found, self._contract_plan(*self._records))
        free = self.free
        over = None
        if free is not None:
            need = plan.blocks_used  # the builder's ledger: the `need` the policy gave `take`
            bs = self.budgets.kv_block_size
            if (
                not found
                and bs is not None
                and (
                    plan.preempted
                    or plan.tokens_used // bs + len(plan.items) + len(plan.block) > free
                )
            ):
                # The ledger is the policy's word. A legal plan's items open at most
                # tokens // bs + items blocks (each [c, c + w) at most w // bs + 1): when that
                # could exceed the pool, the blocks they open are counted here, so a ledger
                # that says less is refused at this plan, before it runs.
                need = max(need, self._kv_opened(plan, bs))
            if plan.preempted or need > free:
                over = self._kv_overcommit(plan, free, need)
        if over is None and self.state_pool is not None:
            over = self._state_overcommit(plan)
        if not found and over is None:
            return True
        at = self.iteration + 1
        for i in found:
            self._found(EngineFinding(i.code, i.message, at, i.record))
        if over is not None:
            self._found(over)
        self.stop = "contract_violation"
        return False

    def _write_cut(self, plan: Plan) -> tuple[dict[str, Any], dict[str, Any]]:
        """This cut's state and plan as contract JSON, written to the trace when there is one."""
        state_rec = state_json(
            self.workload.workload_id,
            self.version,
            self.now,
            (*self.running, *self.waiting),
            self.service,
        )
        plan_rec = plan_json(
            plan,
            self.version,
            self.identity.policy_id,
            self.identity.policy_version,
            self.workload.budgets.to_json(),
        )
        if self.trace is not None:
            self.trace.write("state", state_rec)
            self.trace.write("plan", plan_rec)
        return state_rec, plan_rec

    def _kv_overcommit(self, plan: Plan, free: int, need: int) -> EngineFinding | None:
        """The plan's `need` K/V blocks against the `free` pool plus what its preemptions
        release (None: they fit)."""
        released = sum([v.blocks for v in plan.preempted]) if plan.preempted else 0
        if need <= free + released:
            return None
        return EngineFinding(
            "REPLAY.KV.BUDGET_EXCEEDED",
            f"plan needs {need} KV blocks, {free + released} are free after preemption",
            self.iteration + 1,
            "plan",
        )

    @staticmethod
    def _kv_opened(plan: Plan, bs: int) -> int:
        """The K/V blocks the plan's items open, as `_serve` allocates them (each request
        holds `ceil(c / bs)` blocks; an item ending at `end` needs `ceil(end / bs)`)."""
        opened = 0
        for r in plan.block:  # a decode row [c, c + 1)
            more = -(-(r.c + 1) // bs) - r.blocks
            if more > 0:
                opened += more
        for item in plan.items:
            more = -(-item.end // bs) - item.req.blocks
            if more > 0:
                opened += more
        return opened

    def _state_overcommit(self, plan: Plan) -> EngineFinding | None:
        """The plan's admissions against the free state slots plus what its preemptions
        release (None: they fit)."""
        pool = self.state_pool
        need = sum(1 for r in plan.admitted if not pool.holds(r))
        free = pool.free + sum(1 for v in plan.preempted if pool.holds(v))
        if need <= free:
            return None
        return EngineFinding(
            "REPLAY.STATE.BUDGET_EXCEEDED",
            f"plan admits {need} requests that need a state slot; {free} of {pool.slots} are"
            " free after preemption",
            self.iteration + 1,
            "plan",
        )

    def _found(self, finding: EngineFinding) -> None:
        """Keep a finding unless `max_findings` are already kept."""
        if len(self.findings) < self.max_findings:
            self.findings.append(finding)

    # ------------------------------------------------------------------ execute

    def execute(self, plan: Plan) -> Executed | None:
        """Carry out a validated plan: its preemptions and rejections, then one iteration of
        its selected work (None when it selected nothing, so no iteration ran)."""
        for victim in plan.preempted:
            self._preempt(victim)
        if plan.rejected:
            self._reject(plan.rejected)
        selected = plan.items or plan.block
        if not selected and not (plan.preempted and self.preempt_only_steps):
            return None
        self.iteration += 1
        start = self.now
        if selected and not self.slot_clock and self.preemption is None:
            # `_step_time` of a step with model work and no swap transfers
            self.now = start + self._model_ms(plan.items, plan.block) / self.ms_per_unit
        else:
            self.now = start + self._step_time(plan)
        return self._serve(plan, start)

    def _preempt(self, victim: LiveRequest) -> None:
        """Preemption: K/V released (recompute) or moved off-device (swap); emitted output is
        kept, and the victim goes back to the front of the waiting queue."""
        self.preemptions += 1
        victim.preemptions += 1
        if self.state_pool is not None:  # a hybrid model's state leaves the device too
            self.state_pool.release(victim)
        model = self.preemption
        # swap (exact preservation) keeps the frontiers off-device; recompute discards them
        if model is None or not model.preempt(victim, self.iteration + 1):
            victim.floor = max(victim.floor, victim.c)
            victim.c = 0
        if self.free is not None:
            self.free += victim.blocks
        victim.blocks = 0
        self.running.remove(victim)
        victim.queue = _WAITING
        victim.snapshot += 1
        self.waiting.appendleft(victim)
        self._enter_waiting(victim)

    def _reject(self, rejected: Sequence[LiveRequest]) -> None:
        """Admission refused for good (bounded admission): terminal, never served."""
        for r in rejected:
            r.terminal = True
            r.ready = False
            r.queue = _FINISHED
            self.stats[r.idx].finish_reason = "rejected"
            self.finished += 1
            if self.live is not None:
                self.live.forget(r)
            self._fold(r)
        gone = {r.idx for r in rejected}
        kept = [r for r in self.waiting if r.idx not in gone]
        self.waiting.clear()
        self.waiting.extend(kept)

    def _step_time(self, plan: Plan) -> float:
        """How long this iteration takes, in clock units (swap transfers included)."""
        if self.slot_clock:
            dt = 1.0
        elif not plan.items and not plan.block:
            dt = 0.0  # a step that only preempted ran no model work
        else:
            dt = self._model_ms(plan.items, plan.block) / self.ms_per_unit
        if self.preemption is not None:  # swap transfers: charged under a ms clock only
            swap_ms = self.preemption.take_pending_ms()
            if not self.slot_clock:
                dt += swap_ms / self.ms_per_unit
        return dt

    def _model_ms(self, items: Sequence[PlanItem], block: Sequence[LiveRequest] = ()) -> float:
        """The cost model's time for a step of `items` and the decode rows of `block` (at
        least one row). A cost model with the totals form (`totals_step_ms`, looked up on its
        class: a wrapper that delegates to an inner model must not hand out the inner
        model's) gets the step's totals, summed here as `StepShape` sums them; any other, or a
        step whose shape `StepShape` would refuse, gets the shape."""
        totals = self._totals
        if totals is not None:
            tokens = history = pairs = 0
            if block:  # decode rows [c, c + 1) of ready decodes (c = p + e - 1 >= 0)
                for r in block:
                    history += r.c
                tokens = len(block)
                pairs = history + tokens
            for item in items:
                lo = item.start
                hi = item.end
                if item.phase is _DECODE:
                    if hi < 1:
                        break  # StepShape refuses it: let it say so
                    tokens += 1
                    history += hi - 1  # a decode row at c attends to c + 1 = end keys
                    pairs += hi
                else:
                    width = hi - lo
                    if lo < 0 or width <= 0:
                        break
                    tokens += width
                    history += lo
                    pairs += width * lo + width * (width + 1) // 2
            else:
                return totals(tokens, history, pairs)
        return self.cost.step_time_ms(step_shape(items, block))

    def _serve(self, plan: Plan, start: float) -> Executed:
        """Run every selected interval: frontiers and K/V advance, outputs are emitted, and
        hidden truth decides which requests stop."""
        now = self.now
        iteration = self.iteration
        stats = self.stats
        service = self.service
        tbt = self.tbt
        realized = self.realized
        bs = self.budgets.kv_block_size
        free = self.free
        paged = bs is not None and free is not None
        size = bs if bs is not None else 1
        left = free if free is not None else 0  # the pool, when paged
        done: list[tuple[PlanItem, int, int]] | None = [] if self._keep_done else None
        terminal: list[tuple[LiveRequest, str]] = []
        n_tokens = 0
        progressed = False
        run_gap = 0.0  # the TBT gap of the rows just counted, `run_n` of them, not yet in `tbt`
        run_n = 0
        # the rows in the plan's order: the decode block's `[c, c + 1)` (`Plan.block`), then
        # the items
        stamp: float | None = now  # (the time as an object once, not once per row)
        block = plan.block
        items = plan.items
        nb = len(block)
        block_e0: list[int] | None = [] if done is not None and nb else None
        if nb:
            self.block_plans += 1
            self.block_rows += nb
        for k in range(nb + len(items)):
            if k < nb:
                r = block[k]
                lo = r.c
                hi = lo + 1
                e0 = r.e
                if block_e0 is not None:
                    block_e0.append(e0)
            else:
                item = items[k - nb]
                r = item.req
                lo = item.start
                hi = item.end
                e0 = r.e
                if done is not None:
                    done.append((item, e0, r.c))
            idx = r.idx
            st = stats[idx]
            if st.first_scheduled is None:
                st.first_scheduled = start
                st.first_scheduled_iteration = iteration
            width = hi - lo
            n_tokens += width
            st.scheduled_tokens += width
            st.served_iterations += 1
            rb = r.floor
            if rb > lo:
                st.recompute_tokens += min(hi, rb) - lo
            r.c = hi
            if paged:
                held = -(-hi // size)
                left -= held - r.blocks
                r.blocks = held
            r.last_served = iteration
            r.snapshot += 1
            p = r.p
            if not progressed and hi > (rb if e0 == 0 else p + e0 - 1):
                progressed = True  # a semantic row: new prompt rows or the next token
            client = r.client
            if client is not None:  # semantic service only: rebuild rows are overhead
                service[client] = service.get(client, 0) + semantic_rows(
                    p, e0, lo, hi, rb if e0 == 0 else 0
                )
            if hi == p + e0:
                e = r.e = e0 + 1
                last = st.last_token
                if st.first_token is None:
                    st.first_token = stamp
                else:
                    gap_t = now - (last or 0.0)
                    # consecutive rows with the same gap (decodes that emitted together last
                    # time) are counted in one dict update; no other gap comes between, so
                    # the dict's order of first appearance is the same
                    if gap_t == run_gap:
                        run_n += 1
                    else:
                        if run_n:
                            tbt[run_gap] = tbt.get(run_gap, 0) + run_n
                        run_gap = gap_t
                        run_n = 1
                    st.tbt_count += 1
                    if gap_t > st.tbt_max:
                        st.tbt_max = gap_t
                st.last_token = stamp
                r.last_emit = stamp
                if e >= realized[idx]:
                    terminal.append((r, "eos"))
                elif e >= r.max_out:
                    terminal.append((r, "max_output_tokens"))
        if run_n:
            tbt[run_gap] = tbt.get(run_gap, 0) + run_n
        if paged:
            self.free = left
        step = Executed()
        step.plan = plan
        step.start = start
        step.done = done
        step.block_e0 = block_e0
        step.terminal = terminal
        step.n_tokens = n_tokens
        step.progressed = progressed
        return step

    def wait(self, plan: Plan) -> None:
        """After a plan that ran nothing: go on if it changed the queues, else idle to the next
        arrival, else stop (nothing can ever run: `REPLAY.NO_PROGRESS`)."""
        if plan.preempted or plan.rejected:
            return
        if self._next < len(self._pending):
            nxt = self._pending.arrivals[self._next]
            if self.slot_clock:
                nxt = float(max(math.ceil(nxt), self.now + 1))
                self._idle_iterations(int(nxt - self.now))
            self.now = nxt
            return
        self.findings.append(self._stuck_finding())
        self.stop = "no_progress"

    # ------------------------------------------------------------------ publish

    def publish(self, step: Executed) -> None:
        """Publish what completed: admissions join the running queue, finished requests leave
        it and release their K/V, the result is checked, and the iteration is recorded."""
        plan = step.plan
        if plan.admitted:
            self._move_admitted(plan.admitted)
        left = self.free  # after this step's admissions and allocations
        if step.terminal:
            self._retire(step.terminal)
        if self.step_observer is not None:
            self._observe_step(step, left)
        if self.state_pool is not None:
            total = self.budgets.kv_total_blocks
            used = None if total is None or left is None else total - left
            self.state_pool.observe(plan.not_selected, used)
        checked = step.done is None or self._check_result(step)
        self.rows.append(len(plan.items) + len(plan.block))
        self.tokens_iter.append(step.n_tokens)
        if not checked:
            return
        if self.progress is not None and step.terminal:
            self.progress(self.finished, self.target)
        self._stalled = 0 if step.progressed else self._stalled + 1
        if self._stalled > self._stall_limit:
            self.findings.append(self._livelock_finding())
            self.stop = "no_progress"

    def _move_admitted(self, admitted: list[LiveRequest]) -> None:
        """Admitted requests leave the waiting queue and join the back of the running one."""
        waiting = self.waiting
        # the usual admissions: the head of the queue, in queue order (each popped)
        popped = 0
        for r in admitted:
            if not waiting or waiting[0] is not r:
                break
            waiting.popleft()
            popped += 1
        if popped < len(admitted):  # any others: every one of them leaves the queue
            chosen = {r.idx for r in admitted[popped:]}
            rest = [r for r in waiting if r.idx not in chosen]
            waiting.clear()
            waiting.extend(rest)
        running = self.running
        for r in admitted:
            r.queue = _RUNNING
            running.append(r)
        if self.state_pool is not None:
            for r in admitted:
                self.state_pool.acquire(r)

    def _retire(self, terminal: list[tuple[LiveRequest, str]]) -> None:
        """Finished requests leave the running queue and release their K/V blocks."""
        now = self.now
        stats = self.stats
        pool = self.state_pool
        for r, why in terminal:
            r.terminal = True
            r.queue = _FINISHED
            r.ready = False
            if self.free is not None:
                self.free += r.blocks
            r.blocks = 0
            if pool is not None:
                pool.release(r)
            st = stats[r.idx]
            st.finished = now
            st.finish_reason = why
        # then each one's tables in the validator dropped and its figures folded
        live = self.live
        for r, _ in terminal:
            if live is not None:
                live.forget(r)
            self._fold(r)
        self.finished += len(terminal)
        self.running = [r for r in self.running if not r.terminal]

    def _check_result(self, step: Executed) -> bool:
        """Trace and check the iteration's result; a finding stops the replay (False)."""
        assert step.done is not None
        res: Any = None
        if self.trace is not None or self.cross_check:
            res = result_json(self.version, step.done, step.terminal)
        if self.trace is not None:
            self.trace.write("result", res)
        live = self.live
        if live is None:
            return True
        found = live.check_result(step.done, step.plan.block, step.block_e0)
        if self.cross_check:
            found = self._cross_check(found, self._contract_result(*self._records, res))
        if not found:
            return True
        for i in found:
            self._found(EngineFinding(i.code, i.message, self.iteration, i.record))
        self.stop = "contract_violation"
        return False

    def report(self) -> ReplayRun:
        """Everything the replay produced, for the metrics module (the requests still live
        are stored in the table too, and kept: the report can be taken again)."""
        table = self.table
        stats = self.stats
        for i, r in self._live.items():
            table.store(r, stats[i])
        tbt: Mapping[float, int] = self.tbt
        if self._tbt_folded:  # one folded copy, not three (the dict, the old and new arrays)
            self._fold_tbt()
            tbt = self._tbt_folded
        return ReplayRun(
            workload=self.workload,
            identity=self.identity,
            table=table,
            rows_per_iteration=self.rows,
            tokens_per_iteration=self.tokens_iter,
            tbt_counts=tbt,
            findings=self.findings,
            iterations=self.iteration,
            end_time=self.now,
            stop_reason=self.stop or "completed",
            preemptions=self.preemptions,
            slot_clock=self.slot_clock,
            validation=self.validation,
            extra={"preemption": self.preemption.report()} if self.preemption is not None else {},
            notes=(
                []
                if self.stretch_claim_refused is None
                else [no_stretch_note(self.stretch_claim_refused)]
            ),
        )

    # ------------------------------------------------------------------ helpers

    def _enter_waiting(self, r: LiveRequest) -> None:
        """Tell the contract validator that `r` joined the waiting queue."""
        if self.live is not None:
            self.live.enter_waiting(r)

    def _exceeding_pool(self) -> list[EngineFinding]:
        """Requests whose rows can never fit the KV pool, even alone (they would cycle forever).

        A request emitting n tokens holds p + n - 1 computed rows when it computes its last
        one; with n its realized output (capped by max_output_tokens) that is the least pool
        it needs. A real engine refuses such a request or such a pool size up front.
        """
        bs = self.budgets.kv_block_size
        total = self.budgets.kv_total_blocks
        if bs is None or total is None:
            return []
        out: list[EngineFinding] = []
        realized = self.realized
        max_outs = self._max_outs
        prompts = self._prompts
        # need > total exactly when rows > total * bs: the largest row count, at C speed, says
        # whether any request needs looking at one by one (the message names each)
        if not prompts or max(map(add, prompts, map(min, realized, max_outs))) - 1 <= total * bs:
            return out
        for i, p in enumerate(prompts):
            n_out = min(realized[i], max_outs[i])
            rows = p + n_out - 1
            need = -(-rows // bs)
            if need > total:
                out.append(
                    EngineFinding(
                        "REPLAY.KV.REQUEST_EXCEEDS_POOL",
                        f"{self.workload.requests[i].request_id} needs {rows} K/V rows"
                        f" ({p} prompt + {n_out} outputs - 1) ="
                        f" {need} blocks of {bs}, but the pool has {total} blocks: it could"
                        " never finish, so the replay did not start",
                        0,
                        "engine",
                    )
                )
        return out

    def _livelock_finding(self) -> EngineFinding:
        return EngineFinding(
            "REPLAY.NO_PROGRESS",
            f"policy {self.identity.policy_id}: {self._stalled} iterations in a row completed"
            f" only rows rebuilt after preemption and no new service or output"
            f" ({self.preemptions} preemptions so far): the replay is in a preemption livelock",
            self.iteration,
            "engine",
        )

    def _stuck_finding(self) -> EngineFinding:
        pool = (
            f"; K/V pool: {self.free} of {self.budgets.kv_total_blocks} blocks free"
            " (a policy that never preempts can fill it with partly served requests)"
            if self.free is not None
            else ""
        )
        return EngineFinding(
            "REPLAY.NO_PROGRESS",
            f"policy {self.identity.policy_id} selected nothing with"
            f" {len(self.running)} running and {len(self.waiting)} waiting requests and no"
            f" arrival pending: the replay cannot advance{pool}",
            self.iteration + 1,
            "engine",
        )

    def _observe_step(self, step: Executed, left: int | None) -> None:
        """Hand the step observer what this iteration ran (replay --steps)."""
        from cbaudit.sim.step_trace import StepEvent

        assert self.step_observer is not None
        plan = step.plan
        free = self.free
        self.step_observer(
            StepEvent(
                iteration=self.iteration,
                start=step.start,
                end=self.now,
                shape=step_shape(plan.items),
                admitted=tuple(r.rid for r in plan.admitted),
                preempted=tuple(r.rid for r in plan.preempted),
                rejected=tuple(r.rid for r in plan.rejected),
                finished=tuple(r.rid for r, _ in step.terminal),
                kv_blocks_left=left,
                kv_blocks_free_end=free,
                kv_total_blocks=self.budgets.kv_total_blocks if free is not None else None,
                scheduled=tuple((item.req.rid, item.end - item.start) for item in plan.items),
                running_after=tuple(r.rid for r in self.running),
                waiting_after=len(self.waiting),
            )
        )

    def _apply_initial(self) -> None:
        """Put the requests an initial state names into its queues with its frontiers."""
        by_id: dict[str, int] = {}
        for i, d in enumerate(self.workload.requests):
            by_id.setdefault(d.request_id, i)
        bs = self.budgets.kv_block_size
        for rid, init in self.initial.items():
            at = by_id.get(rid)
            if at is None:
                raise InputError.at(
                    "REPLAY.INITIAL.UNKNOWN_REQUEST",
                    f"initial state names {rid!r}, which the workload does not declare",
                    self.workload.source,
                )
            r = self._obj(at)
            r.e = init.emitted
            r.c = init.computed
            r.snapshot = init.snapshot_version
            r.ready = init.ready
            r.readiness_reason = init.readiness_reason
            r.queue = init.queue
            r.last_served = init.last_served
            if bs is not None and init.queue is _RUNNING:
                r.blocks = blocks_held(r.c, bs)
            if init.queue is _FINISHED:
                r.terminal = True
                r.ready = False
        placed = sorted(i for i, r in self._live.items() if r.queue is not None)
        finished = 0
        for i in placed:  # queue order follows the workload's arrival order
            r = self._live[i]
            if r.rid in self.initial:
                if r.queue is not _FINISHED:
                    self.stats[i] = RequestStats()
                if r.queue is _RUNNING:
                    self.running.append(r)
                    if self.state_pool is not None:
                        self.state_pool.acquire(r)
                elif r.queue is _WAITING:
                    self.waiting.append(r)
            if r.queue is _FINISHED:
                finished += 1
                self._fold(r)
        if self.free is not None:
            self.free -= sum(r.blocks for r in self.running)
        self.finished = finished
        for r in self.waiting:
            self._enter_waiting(r)
        if self.live is not None:
            for r in self.running:
                self.live.touch(r)

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
