"""Every request's final figures as C arrays: what a replay keeps of a request once it is done.

The engine works on one mutable `LiveRequest` and one `RequestStats` per *live* request
(arrived, not yet finished): it makes them when the request arrives and, when the request
finishes or is rejected, folds their figures into a `RequestTable` row and drops them. So the
objects a long replay holds follow the live requests, and what grows with the trace is one
table row (about 150 bytes) per request. `Engine.report` stores the requests still live at the
end (a horizon, a stop) in the table too, without dropping them, so a report is one table
whatever stopped the replay.

Readers take the table's columns directly (`cbaudit.sim.metrics`) or a rebuilt object per
request (`ReplayRun.requests` / `.stats`, `live_request_at` / `stats_at`): the same figures,
bit for bit. A clock stored as a C double reads back as a float where it may have been an
int; every reader does arithmetic on it or writes it through `json_number`, which gives the
same value and the same JSON either way. Absent clocks are NaN in the table and None outside.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.workload_records import Queue
from cbaudit.sim.workload import ClockUnit, TraceRequests, Workload

_NAN = float("nan")
# closed sets stored as small codes (0: None)
REASONS: tuple[str | None, ...] = (None, "eos", "max_output_tokens", "rejected")
QUEUES: tuple[Queue | None, ...] = (None, Queue.WAITING, Queue.RUNNING, Queue.FINISHED)
_REASON_CODE = {r: i for i, r in enumerate(REASONS)}
# the integer columns: C ints (4 bytes) until a value does not fit, then all C long longs
_INTS = (
    "blocks",
    "c",
    "e",
    "first_scheduled_iteration",
    "floor",
    "last_served",
    "preemptions",
    "recompute_tokens",
    "scheduled_tokens",
    "served_iterations",
    "snapshot",
    "tbt_count",
)
_QUEUE_CODE = {q: i for i, q in enumerate(QUEUES)}
# the columns `RequestTable.store` writes, in the order it unpacks their views
_WRITTEN = (
    "e",
    "c",
    "blocks",
    "snapshot",
    "last_served",
    "preemptions",
    "floor",
    "last_emit",
    "queue",
    "terminal",
    "ready",
    "first_scheduled",
    "first_scheduled_iteration",
    "first_token",
    "last_token",
    "finished",
    "reason",
    "tbt_max",
    "tbt_count",
    "recompute_tokens",
    "scheduled_tokens",
    "served_iterations",
)


@dataclass(slots=True)
class RequestStats:
    """Clocks of one request (clock units; None when the event did not happen)."""

    first_scheduled: float | None = None
    first_scheduled_iteration: int | None = None
    first_token: float | None = None
    last_token: float | None = None
    finished: float | None = None
    finish_reason: str | None = None
    tbt_max: float = 0.0
    tbt_count: int = 0
    recompute_tokens: int = 0
    scheduled_tokens: int = 0  # completed rows (prefill, decode and recompute)
    served_iterations: int = 0


def slo_units(limit_ms: float | None, workload: Workload) -> float | None:
    """An SLO limit in milliseconds as clock units (None when undeclared or not convertible)."""
    if limit_ms is None:
        return None
    if workload.clock.unit is ClockUnit.MS:
        return float(limit_ms)
    tick_ms = workload.clock.tick_ms
    return None if tick_ms is None else limit_ms / tick_ms


def new_live_request(workload: Workload, i: int) -> LiveRequest:
    """The engine's view of declaration `i` before it arrives (no service yet)."""
    reqs = workload.requests
    if isinstance(reqs, TraceRequests):  # a plain trace's row, without a record
        return LiveRequest(
            i, reqs.request_id(i), 0, reqs.prompt[i], reqs.output[i], reqs.arrival_at(i), i, 0, None
        )
    d = reqs[i]
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
        r.ttft_limit = slo_units(d.slo.get("ttft_ms"), workload)
        r.tbt_limit = slo_units(d.slo.get("tbt_ms"), workload)
    return r


def _opt(x: float) -> float | None:
    return None if x != x else x  # NaN: absent


class RequestTable:
    """One row per workload request (index = position in `Workload.requests`): the request's
    final view (frontiers, queue, counters) and its `RequestStats`, as C arrays."""

    __slots__ = (
        "_views",
        "blocks",
        "c",
        "e",
        "finished",
        "first_scheduled",
        "first_scheduled_iteration",
        "first_token",
        "floor",
        "last_emit",
        "last_served",
        "last_token",
        "n",
        "preemptions",
        "queue",
        "readiness",
        "ready",
        "reason",
        "recompute_tokens",
        "scheduled_tokens",
        "served_iterations",
        "snapshot",
        "tbt_count",
        "tbt_max",
        "terminal",
    )

    def __init__(self, n: int) -> None:
        self.n = n
        nan = array("d", [_NAN]) * n
        zero = array("i", [0]) * n
        minus = array("i", [-1]) * n
        self.first_scheduled = nan
        self.first_token = array("d", nan)
        self.last_token = array("d", nan)
        self.finished = array("d", nan)
        self.last_emit = array("d", nan)
        self.tbt_max = array("d", [0.0]) * n
        self.first_scheduled_iteration = minus  # -1: None
        self.last_served = array("i", minus)
        self.tbt_count = zero
        self.recompute_tokens = array("i", zero)
        self.scheduled_tokens = array("i", zero)
        self.served_iterations = array("i", zero)
        self.e = array("i", zero)
        self.c = array("i", zero)
        self.blocks = array("i", zero)
        self.snapshot = array("i", zero)
        self.preemptions = array("i", zero)
        self.floor = array("i", zero)
        self.reason = array("b", [0]) * n
        self.queue = array("b", [0]) * n
        self.terminal = array("b", [0]) * n
        self.ready = array("b", [1]) * n
        self.readiness: dict[int, str] = {}  # the rare readiness reason that is not None
        # (Any: typeshed types a memoryview's items as ints, and a "d" view takes floats)
        self._views: tuple[Any, ...] = self._writers()

    def _writers(self) -> tuple[Any, ...]:
        """A memoryview of each column `store` writes, in `_WRITTEN` order: an array's item
        assignment converts the value through the generic argument parser, a memoryview's
        through its own switch on the item type (the same value lands; a value that does not
        fit is a ValueError there, an OverflowError here). The views pin the arrays' size,
        which never changes (widening makes new arrays and new views)."""
        return tuple(memoryview(getattr(self, name)) for name in _WRITTEN)

    def store(self, r: LiveRequest, st: RequestStats | None) -> None:
        """Row `r.idx` := the request's view and its stats (None: never arrived)."""
        try:
            i = r.idx
            (
                e,
                c,
                blocks,
                snapshot,
                last_served,
                preemptions,
                floor,
                last_emit,
                queue,
                terminal,
                ready,
                first_scheduled,
                first_scheduled_iteration,
                first_token,
                last_token,
                finished,
                reason_code,
                tbt_max,
                tbt_count,
                recompute_tokens,
                scheduled_tokens,
                served_iterations,
            ) = self._views
            e[i] = r.e
            c[i] = r.c
            blocks[i] = r.blocks
            snapshot[i] = r.snapshot
            last_served[i] = r.last_served
            preemptions[i] = r.preemptions
            floor[i] = r.floor
            last_emit[i] = _NAN if r.last_emit is None else r.last_emit
            queue[i] = _QUEUE_CODE[r.queue]
            terminal[i] = r.terminal
            ready[i] = r.ready
            reason = r.readiness_reason
            if reason is not None:
                self.readiness[i] = reason
            elif self.readiness:
                self.readiness.pop(i, None)
            if st is None:
                return
            first_scheduled[i] = _NAN if st.first_scheduled is None else st.first_scheduled
            first_scheduled_iteration[i] = (
                -1 if st.first_scheduled_iteration is None else st.first_scheduled_iteration
            )
            first_token[i] = _NAN if st.first_token is None else st.first_token
            last_token[i] = _NAN if st.last_token is None else st.last_token
            finished[i] = _NAN if st.finished is None else st.finished
            reason_code[i] = _REASON_CODE[st.finish_reason]
            tbt_max[i] = st.tbt_max
            tbt_count[i] = st.tbt_count
            recompute_tokens[i] = st.recompute_tokens
            scheduled_tokens[i] = st.scheduled_tokens
            served_iterations[i] = st.served_iterations
        except (OverflowError, ValueError):  # a count past 2**31: integer columns to 8 bytes
            if self.e.typecode == "q":
                raise OverflowError(f"request {r.idx}: a count does not fit 8 bytes") from None
            for name in _INTS:
                setattr(self, name, array("q", getattr(self, name)))
            self._views = self._writers()
            self.store(r, st)  # the whole row again, into the wide columns

    def stats_at(self, i: int) -> RequestStats:
        """Row `i`'s stats as a fresh `RequestStats`."""
        it = self.first_scheduled_iteration[i]
        return RequestStats(
            first_scheduled=_opt(self.first_scheduled[i]),
            first_scheduled_iteration=None if it < 0 else it,
            first_token=_opt(self.first_token[i]),
            last_token=_opt(self.last_token[i]),
            finished=_opt(self.finished[i]),
            finish_reason=REASONS[self.reason[i]],
            tbt_max=self.tbt_max[i],
            tbt_count=self.tbt_count[i],
            recompute_tokens=self.recompute_tokens[i],
            scheduled_tokens=self.scheduled_tokens[i],
            served_iterations=self.served_iterations[i],
        )

    def live_request_at(self, workload: Workload, i: int) -> LiveRequest:
        """Row `i`'s request view as a fresh `LiveRequest` (declaration from `workload`)."""
        r = new_live_request(workload, i)
        r.e = self.e[i]
        r.c = self.c[i]
        r.blocks = self.blocks[i]
        r.snapshot = self.snapshot[i]
        r.last_served = self.last_served[i]
        r.preemptions = self.preemptions[i]
        r.floor = self.floor[i]
        r.last_emit = _opt(self.last_emit[i])
        r.queue = QUEUES[self.queue[i]]
        r.terminal = bool(self.terminal[i])
        r.ready = bool(self.ready[i])
        r.readiness_reason = self.readiness.get(i)
        return r


class _Rows(Sequence[object]):
    """A read-only sequence of objects rebuilt from table rows on access."""

    def __init__(self, table: RequestTable, workload: Workload, requests: bool) -> None:
        self._table = table
        self._workload = workload
        self._requests = requests

    def __len__(self) -> int:
        return self._table.n

    def _at(self, i: int) -> object:
        if self._requests:
            return self._table.live_request_at(self._workload, i)
        return self._table.stats_at(i)

    @overload
    def __getitem__(self, i: int) -> object: ...
    @overload
    def __getitem__(self, i: slice) -> list[object]: ...
    def __getitem__(self, i: int | slice) -> object | list[object]:
        n = self._table.n
        if isinstance(i, slice):
            return [self._at(j) for j in range(*i.indices(n))]
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._at(i)

    def __iter__(self) -> Iterator[object]:
        for i in range(self._table.n):
            yield self._at(i)


def request_rows(table: RequestTable, workload: Workload) -> Sequence[LiveRequest]:
    """Every request's final view, rebuilt from the table on access."""
    return _Rows(table, workload, True)  # type: ignore[return-value]


def stats_rows(table: RequestTable, workload: Workload) -> Sequence[RequestStats]:
    """Every request's stats, rebuilt from the table on access."""
    return _Rows(table, workload, False)  # type: ignore[return-value]
