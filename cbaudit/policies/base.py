"""What a policy sees and what it returns.

A policy reads a published scheduler cut (`StateView`: running and waiting queues of
`ReqState` views, budgets, the free KV pool) and fills a `PlanBuilder`: selected intervals,
recorded refusals, and preemption intents. The builder enforces the iteration budgets as
the policy goes (sequence, token, KV blocks), so a refusal always names its budget. The
engine then validates the finished `Plan` with the contract rules before executing it.

Policies never see hidden truth: `ReqState` has no realized output length; the executor keeps
it elsewhere. Policies must treat every `ReqState` as read-only; only the engine publishes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Protocol

from cbaudit.policies.budget import Reason, blocks_needed


class QueueName(IntEnum):
    """Queue membership of a request at a cut (its JSON spelling is `name.lower()`)."""

    PENDING = 0  # declared but not yet arrived; invisible to policies
    WAITING = 1
    RUNNING = 2
    SUSPENDED = 3
    FINISHED = 4


PREFILL_CHUNK = "PREFILL_CHUNK"
DECODE_ROW = "DECODE_ROW"
RECOMPUTE_CHUNK = "RECOMPUTE_CHUNK"  # rebuild after a recompute preemption (e >= 1, c < p+e-1)


class ReqState:
    """The factual service view of one request generation (engine-owned, policy-read-only).

    Frontiers (article 0x01A): `p` prompt tokens, `e` emitted outputs, `c` computed tokens;
    committed equals computed at every published cut. After a recompute preemption `c` drops
    to 0 while `e` is kept: the logical stream `p + e` is rebuilt without re-emitting output.
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
        self.queue = QueueName.PENDING
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

    def phase_of(self, end: int) -> str:
        """The derived annotation of interval [c, end) (not a field a policy may forge)."""
        if self.is_decode and end == self.c + 1:
            return DECODE_ROW
        return RECOMPUTE_CHUNK if self.is_recompute else PREFILL_CHUNK

    def __repr__(self) -> str:
        return f"ReqState({self.rid}:{self.gen} p={self.p} e={self.e} c={self.c} {self.queue.name})"


@dataclass(frozen=True, slots=True)
class BudgetsView:
    token_budget: int
    sequence_budget: int
    kv_block_size: int | None
    kv_total_blocks: int | None
    long_prefill_token_threshold: int | None


class StateView(Protocol):
    """The published cut a policy decides from."""

    @property
    def state_version(self) -> int: ...
    @property
    def iteration(self) -> int: ...  # index of the iteration being planned (1-based)
    @property
    def now(self) -> float: ...
    @property
    def budgets(self) -> BudgetsView: ...
    @property
    def running(self) -> Sequence[ReqState]: ...  # admission order
    @property
    def waiting(self) -> Sequence[ReqState]: ...  # queue order (FCFS; preempted at the front)
    @property
    def free_blocks(self) -> int | None: ...


class PlanItem:
    """One selected interval [start, end) of one request generation."""

    __slots__ = ("end", "key", "phase", "req", "snapshot", "start")

    def __init__(self, req: ReqState, start: int, end: int, phase: str, key: tuple[Any, ...]):
        self.req = req
        self.start = start
        self.end = end
        self.phase = phase
        self.key = key
        self.snapshot = req.snapshot

    @property
    def width(self) -> int:
        return self.end - self.start


@dataclass
class Plan:
    """A policy's decision for one cut (engine-internal form of an IterationPlan)."""

    state_version: int
    items: list[PlanItem]
    not_selected: list[tuple[ReqState, str]]
    preempted: list[ReqState]
    admitted: list[ReqState]
    tokens_used: int
    sequences_used: int
    blocks_used: int
    rejected: list[ReqState] = field(default_factory=list)  # admission refused: terminal


KeyFn = Callable[[ReqState, str], tuple[Any, ...]]


@dataclass
class PlanBuilder:
    """Collects a plan while enforcing the sequence, token and KV budgets."""

    view: StateView
    key_fn: KeyFn
    tokens_left: int = field(init=False)
    seqs_left: int = field(init=False)
    free_blocks: int | None = field(init=False)
    items: list[PlanItem] = field(default_factory=list)
    not_selected: list[tuple[ReqState, str]] = field(default_factory=list)
    preempted: list[ReqState] = field(default_factory=list)
    admitted: list[ReqState] = field(default_factory=list)
    rejected: list[ReqState] = field(default_factory=list)
    _chosen: dict[int, PlanItem] = field(default_factory=dict)
    _blocks_used: int = 0

    def __post_init__(self) -> None:
        b = self.view.budgets
        self.tokens_left = b.token_budget
        self.seqs_left = b.sequence_budget
        self.free_blocks = self.view.free_blocks

    @property
    def block_size(self) -> int | None:
        return self.view.budgets.kv_block_size

    def chosen(self, req: ReqState) -> bool:
        return req.idx in self._chosen

    def kv_needed(self, req: ReqState, n: int) -> int:
        bs = self.view.budgets.kv_block_size
        return 0 if bs is None else blocks_needed(req.c, n, bs)

    def refusal(self, req: ReqState, n: int) -> Reason | None:
        """Which budget refuses `n` more rows for `req` now (None when all allow it)."""
        if n <= 0 or self.tokens_left < n:
            return (
                Reason.DEFERRED_TOKEN_BUDGET
                if self.seqs_left > 0
                else Reason.DEFERRED_SEQUENCE_BUDGET
            )
        if self.seqs_left <= 0:
            return Reason.DEFERRED_SEQUENCE_BUDGET
        if self.free_blocks is not None and self.kv_needed(req, n) > self.free_blocks:
            return Reason.DEFERRED_KV_BUDGET
        return None

    def take(self, req: ReqState, n: int, *, admit: bool = False) -> Reason | None:
        """Select [c, c+n) for `req` if every budget allows; else return the refusing reason."""
        reason = self.refusal(req, n)
        if reason is not None:
            return reason
        self.select(req, n, admit=admit)
        return None

    def select(self, req: ReqState, n: int, *, admit: bool = False) -> PlanItem:
        """Select [c, c+n) unconditionally (the validator still checks every budget)."""
        start = req.c
        end = start + n
        phase = req.phase_of(end)
        item = PlanItem(req, start, end, phase, self.key_fn(req, phase))
        self.items.append(item)
        self._chosen[req.idx] = item
        self.tokens_left -= n
        self.seqs_left -= 1
        if self.free_blocks is not None:
            need = self.kv_needed(req, n)
            self.free_blocks -= need
            self._blocks_used += need
        if admit:
            self.admitted.append(req)
        return item

    def unselect(self, req: ReqState) -> None:
        """Remove a selected item again, returning its budgets (vLLM victim already placed)."""
        item = self._chosen.pop(req.idx)
        self.items.remove(item)
        self.tokens_left += item.width
        self.seqs_left += 1
        if self.free_blocks is not None:
            need = self.kv_needed(req, item.width)
            self.free_blocks += need
            self._blocks_used -= need
        if req in self.admitted:
            self.admitted.remove(req)

    def defer(self, req: ReqState, reason: str) -> None:
        self.not_selected.append((req, str(reason)))

    def preempt(self, req: ReqState) -> None:
        """Preempt `req` by recompute: its blocks return to the pool for this plan."""
        if req.idx in self._chosen:
            self.unselect(req)
        self.preempted.append(req)
        self.not_selected.append((req, Reason.PREEMPTED.value))
        if self.free_blocks is not None:
            self.free_blocks += req.blocks

    def reject(self, req: ReqState, reason: str) -> None:
        """Refuse admission for good: a user-visible outcome, never counted as SLO success."""
        self.rejected.append(req)
        self.not_selected.append((req, str(reason)))

    def build(self) -> Plan:
        items = sorted(self.items, key=lambda it: it.key)
        tokens = sum(it.width for it in items)
        return Plan(
            state_version=self.view.state_version,
            items=items,
            not_selected=self.not_selected,
            preempted=self.preempted,
            admitted=self.admitted,
            tokens_used=tokens,
            sequences_used=len(items),
            blocks_used=self._blocks_used,
            rejected=self.rejected,
        )


class Policy(Protocol):
    """A scheduling policy: an identity, a tie-break, and one decision per cut."""

    @property
    def policy_id(self) -> str: ...
    @property
    def policy_version(self) -> str: ...
    @property
    def tie_break_key(self) -> tuple[str, ...]: ...
    @property
    def phase_order(self) -> tuple[str, ...]: ...

    def choose(self, view: StateView, plan: PlanBuilder) -> None: ...


def key_function(tie_break_key: Sequence[str], phase_order: Sequence[str]) -> KeyFn:
    """The declared tie-break key as a function of a request view and derived phase.

    An unlisted RECOMPUTE_CHUNK ranks like PREFILL_CHUNK (the contract's `phase_rank`).
    """
    rank = {name: i for i, name in enumerate(phase_order)}
    unlisted = len(rank)
    if RECOMPUTE_CHUNK not in rank and PREFILL_CHUNK in rank:
        rank[RECOMPUTE_CHUNK] = rank[PREFILL_CHUNK]
    getters: dict[str, Callable[[ReqState, str], Any]] = {
        "phase_rank": lambda r, ph: rank.get(ph, unlisted),
        "priority_rank": lambda r, ph: r.priority,
        "arrival_order": lambda r, ph: r.arrival_order,
        "request_id": lambda r, ph: r.rid,
        "request_generation": lambda r, ph: r.gen,
    }
    fns = tuple(getters[name] for name in tie_break_key)
    if tuple(tie_break_key) == (
        "phase_rank",
        "priority_rank",
        "arrival_order",
        "request_id",
        "request_generation",
    ):
        d_rank = rank.get(DECODE_ROW, unlisted)
        p_rank = rank.get(PREFILL_CHUNK, unlisted)
        r_rank = rank.get(RECOMPUTE_CHUNK, p_rank)

        def fast(r: ReqState, ph: str) -> tuple[Any, ...]:
            return (
                d_rank if ph == DECODE_ROW else (r_rank if ph == RECOMPUTE_CHUNK else p_rank),
                r.priority,
                r.arrival_order,
                r.rid,
                r.gen,
            )

        return fast

    def key(r: ReqState, ph: str) -> tuple[Any, ...]:
        return tuple(f(r, ph) for f in fns)

    return key


def option(options: Mapping[str, Any], name: str, default: Any, kind: type) -> Any:
    """Read one policy option with a type check (ValueError names the option)."""
    value = options.get(name, default)
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"policy option {name!r} must be an integer, got {value!r}")
    if kind is bool and not isinstance(value, bool):
        raise ValueError(f"policy option {name!r} must be true or false, got {value!r}")
    if kind is str and not isinstance(value, str):
        raise ValueError(f"policy option {name!r} must be a string, got {value!r}")
    return value
