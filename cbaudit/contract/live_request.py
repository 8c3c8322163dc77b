"""The live view of one request generation: what a running replay publishes and policies read.

`RequestView` (in `cbaudit.contract.records`) is the frozen record of one request at one cut.
A replay publishes a cut every iteration, so it keeps one mutable `LiveRequest` per request
instead and updates it in place: the engine is its only writer, policies read it, and the
incremental validator (`cbaudit.contract.live`) checks it with the same rule functions that
check a `RequestView`. Its vocabulary is the contract's: frontiers `p`, `e`, `c` (article
0x01A, as in `derive_phase`), `Phase` for the work it admits and `Queue` for where it sits.

Policies never see hidden truth: a `LiveRequest` has no realized output length; the executor
keeps it elsewhere.
"""

from __future__ import annotations

from cbaudit.contract.workload_records import Phase, Queue

_PREFILL = Phase.PREFILL_CHUNK
_DECODE = Phase.DECODE_ROW
_REBUILD = Phase.RECOMPUTE_CHUNK


class LiveRequest:
    """The factual service view of one request generation (engine-owned, policy-read-only).

    Frontiers (article 0x01A): `p` prompt tokens, `e` emitted outputs, `c` computed tokens;
    committed equals computed at every published cut. After a recompute preemption `c` drops
    to 0 while `e` is kept: the logical stream `p + e` is rebuilt without re-emitting output.
    `queue` is None until the request arrives (a request that has not arrived is in no queue
    and in no published cut).
    """

    __slots__ = (
        "arrival",
        "arrival_order",
        "blocks",
        "c",
        "client",
        "e",
        "floor",
        "gen",
        "idx",
        "last_emit",
        "last_served",
        "max_out",
        "p",
        "preemptions",
        "priority",
        "queue",
        "readiness_reason",
        "ready",
        "rid",
        "snapshot",
        "tbt_limit",
        "terminal",
        "ttft_limit",
    )

    def __init__(
        self,
        idx: int,
        rid: str,
        gen: int,
        p: int,
        max_out: int,
        arrival: float,
        arrival_order: int,
        priority: int,
        client: str | None,
    ) -> None:
        self.idx = idx
        self.rid = rid
        self.gen = gen
        self.p = p
        self.max_out = max_out
        self.arrival = arrival
        self.arrival_order = arrival_order
        self.priority = priority
        self.client = client
        self.e = 0
        self.c = 0
        self.snapshot = 0
        self.queue: Queue | None = None
        self.terminal = False
        self.ready = True
        self.readiness_reason: str | None = None
        self.blocks = 0
        self.preemptions = 0
        # how far the stream had been computed before a recompute preemption discarded it
        # (rows below it are re-computed overhead, not service)
        self.floor = 0
        self.last_served = -1  # iteration index of the last completed service, -1 if none
        # SLO clocks (article 0x07), in clock units; None when the request declares none.
        self.ttft_limit: float | None = None
        self.tbt_limit: float | None = None
        self.last_emit: float | None = None  # factual time of the latest output emission

    @property
    def logical_length(self) -> int:
        return self.p + self.e

    @property
    def rebuild_floor(self) -> int | None:
        """The published view's `rebuild_floor`: set only before the first token, after a
        recompute preemption discarded computed prompt rows (None otherwise)."""
        return self.floor if self.e == 0 and self.floor > 0 else None

    @property
    def remaining(self) -> int:
        """Rows until the computed frontier catches the logical stream (`p + e - c`)."""
        return self.p + self.e - self.c

    @property
    def is_decode(self) -> bool:
        """True when the only legal ordinary work is one decode row."""
        return self.e >= 1 and self.c == self.p + self.e - 1

    @property
    def is_recompute(self) -> bool:
        """True while a preempted request rebuilds consumed history (e >= 1, c < p + e - 1)."""
        return self.e >= 1 and self.c < self.p + self.e - 1

    def phase_of(self, end: int) -> Phase:
        """The derived annotation of interval [c, end) (not a field a policy may forge):
        DECODE_ROW for the one row of an ordinary decode (`is_decode`), RECOMPUTE_CHUNK while
        rebuilding (`is_recompute`), else PREFILL_CHUNK. Both tests inline: a policy asks
        this once per selected interval."""
        e = self.e
        if e >= 1:
            c = self.c
            last = self.p + e - 1
            if c == last:
                return _DECODE if end == c + 1 else _PREFILL
            if c < last:
                return _REBUILD
        return _PREFILL

    def __repr__(self) -> str:
        where = self.queue.name if self.queue is not None else "PENDING"
        return f"LiveRequest({self.rid}:{self.gen} p={self.p} e={self.e} c={self.c} {where})"
