"""What a policy sees and what it returns.

A policy reads a published scheduler cut (`StateView`: running and waiting queues of
`LiveRequest` views, budgets, the free KV pool) and fills a `PlanBuilder`: selected intervals,
recorded refusals, and preemption intents. The builder enforces the iteration budgets as
the policy goes (sequence, token, KV blocks), so a refusal always names its budget. The
engine then validates the finished `Plan` with the contract rules before executing it.

The vocabulary is the contract's (`cbaudit.contract`): a request is a `LiveRequest`, the work
of an interval a `Phase`, a queue a `Queue`; nothing here translates between two copies.
Policies never see hidden truth: a `LiveRequest` has no realized output length; the executor
keeps it elsewhere. Policies must treat every `LiveRequest` as read-only; only the engine
publishes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Protocol

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.plan_contract import phase_rank
from cbaudit.contract.workload_records import Phase
from cbaudit.policies.budget import Reason, blocks_needed

_PREFILL = Phase.PREFILL_CHUNK
_DECODE = Phase.DECODE_ROW
_REBUILD = Phase.RECOMPUTE_CHUNK


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
    def running(self) -> Sequence[LiveRequest]: ...  # admission order
    @property
    def waiting(self) -> Sequence[LiveRequest]: ...  # queue order (FCFS; preempted at the front)
    @property
    def free_blocks(self) -> int | None: ...


class PlanItem:
    """One selected interval [start, end) of one request generation (made by `PlanItem.of`).

    The class has no `__init__`: `PlanBuilder.take` makes one item per selected interval
    with `PlanItem()` and sets its fields (a class call without a Python `__init__` is the
    cheapest way to make an object; `object.__new__(PlanItem)` costs more)."""

    __slots__ = ("end", "key", "phase", "req", "snapshot", "start")

    req: LiveRequest
    start: int
    end: int
    phase: Phase
    key: tuple[Any, ...]
    snapshot: int  # the request's snapshot version when it was selected

    @classmethod
    def of(
        cls, req: LiveRequest, start: int, end: int, phase: Phase, key: tuple[Any, ...]
    ) -> PlanItem:
        """The item [start, end) of `req` with its derived `phase` and declared `key`."""
        item = cls()
        item.req = req
        item.start = start
        item.end = end
        item.phase = phase
        item.key = key
        item.snapshot = req.snapshot
        return item

    @property
    def width(self) -> int:
        return self.end - self.start


@dataclass(slots=True)
class Plan:
    """A policy's decision for one cut (engine-internal form of an IterationPlan)."""

    state_version: int
    items: list[PlanItem]
    not_selected: list[tuple[LiveRequest, str]]
    preempted: list[LiveRequest]
    admitted: list[LiveRequest]
    tokens_used: int
    sequences_used: int
    blocks_used: int
    rejected: list[LiveRequest] = field(default_factory=list)  # admission refused: terminal
    # A decode block the engine offered and vouched for, taken and never written out
    # (`PlanBuilder(..., pass_block=True)`): one row `[c, c + 1)` for each of these requests,
    # the first running requests of the cut, ahead of `items` in the plan's order; their
    # declared keys ascend and sort below every item's. Empty: every row is in `items`.
    block: list[LiveRequest] = field(default_factory=list)


class BlockRow(PlanItem):
    """A decode row of a block the engine offered and vouched for (`PlanBuilder.offer_block`,
    `vouched_block`), as `take_block` selects it and `_write_block` writes it out: the interval
    `[c, c + 1)` of a request that is a ready, live, running decode at its frontier. The
    contract's live validator is told this class (`LiveContract(vouched=...)`) and, for such
    an item, tests the fields the item carries and takes the request's state from the
    engine's word."""

    __slots__ = ()


KeyFn = Callable[[LiveRequest, Phase], tuple[Any, ...]]
_ITEM_KEY = attrgetter("key")


class PlanBuilder:
    """Collects a plan while enforcing the sequence, token and KV budgets."""

    __slots__ = (
        "_block",
        "_block_top",
        "_blocks_used",
        "_chosen",
        "_offer_need",
        "_pass",
        "_request_key",
        "_rows",
        "_state_pool",
        "_synced",
        "_vouched",
        "admitted",
        "block_offer",
        "block_size",
        "free_blocks",
        "key_fn",
        "not_selected",
        "preempted",
        "rejected",
        "seqs_left",
        "state_slots_left",
        "tokens_left",
        "view",
    )

    def __init__(
        self,
        view: StateView,
        key_fn: KeyFn,
        *,
        vouched_block: tuple[int, int] | None = None,
        pass_block: bool = False,
    ) -> None:
        self.view = view
        self.key_fn = key_fn
        # `key_fn` as a function of the request alone, when it has one (a key of request
        # fields only: `_field_key`), else None
        self._request_key: Callable[[LiveRequest], tuple[Any, ...]] | None = getattr(
            key_fn, "request_key", None
        )
        b = view.budgets
        self.tokens_left: int = b.token_budget
        self.seqs_left: int = b.sequence_budget
        self.free_blocks: int | None = view.free_blocks
        # the selected items (`items`, which first writes out a block taken by `take_block`)
        self._rows: list[PlanItem] = []
        self.not_selected: list[tuple[LiveRequest, str]] = []
        self.preempted: list[LiveRequest] = []
        self.admitted: list[LiveRequest] = []
        self.rejected: list[LiveRequest] = []
        # the selected items by request index, brought up to date on demand (`_chosen_items`:
        # `take`, once per selected interval, only appends to `items`)
        self._chosen: dict[int, PlanItem] = {}
        self._synced = 0  # items[:_synced] are in `_chosen`
        self._blocks_used = 0
        # the view's K/V block size (an attribute, not a property over the view: the running
        # pass reads it once per plan, and a property call costs a Python frame)
        self.block_size: int | None = b.kv_block_size
        # a hybrid model's state pool (cbaudit.sim.state_pool.StatePool) and its slots left
        pool = getattr(view, "state_pool", None)
        self._state_pool: Any = pool
        self.state_slots_left: int | None = pool.free if pool is not None else None
        # A decode block (`offer_block`): the engine may offer the first `block_offer` running
        # requests of the view as one block of decode rows; `_block` is the number taken by
        # `take_block` and not yet written out as items (0: none); `_vouched`: the offer is
        # the engine's (`vouched_block`), so its rows are written out as `BlockRow`s
        self.block_offer = 0
        self._offer_need = 0
        self._block = 0
        self._vouched = False
        if vouched_block is not None:
            # the engine's offer, made with the builder and vouched for: `(n, need)` as
            # `offer_block` takes them. No method gives the vouch afterwards, so a policy,
            # which gets the builder made, cannot have a block of its own vouched for
            self.block_offer, self._offer_need = vouched_block
            self._vouched = True
        # `pass_block` (the engine's, with its offer): a vouched block that is taken and never
        # written out stays a block in the plan (`build`, `Plan.block`) when the requests'
        # arrival orders ascend (the key, by the engine's word, starts with `arrival_order`)
        self._pass = pass_block and vouched_block is not None
        # `_block_keys()` of the block taken, once computed (None: not yet)
        self._block_top: tuple[bool, tuple[Any, ...]] | None = None

    @property
    def items(self) -> list[PlanItem]:
        """The selected items, in the order taken (a block taken by `take_block` is written
        out first, as the items `take` would have made for its requests)."""
        if self._block:
            self._write_block()
        return self._rows

    def offer_block(self, n: int, need: int) -> None:
        """Offer the first `n` running requests of the view as one block (the engine, at a
        stretch's promise question: docs/replay.md, "Decode blocks"). The engine vouches that
        each of them is a ready decode at its frontier (`e >= 1`, `c = p + e - 1`, no rows to
        rebuild) and that `need` of their one-row steps `[c, c + 1)` open a K/V block
        (`c % block_size == 0`; 0 without a K/V pool), and that each is live (not terminal)
        and in the running queue. The engine makes its offer with the builder
        (`PlanBuilder(..., vouched_block=(n, need))`), which vouches for it to the contract;
        an offer made with this method (a policy offering itself a block) is not vouched for,
        withdraws any vouch, and its rows are checked in full. For the engine: at a promise
        question a block the policy offered itself is not believed (`stretch._promise_holds`)."""
        self.block_offer = n
        self._offer_need = need
        self._vouched = False
        self._pass = False

    def take_block(self) -> bool:
        """Select one decode row `[c, c + 1)` for each request of the offered block, as `take`
        row by row would, if the token, sequence and K/V budgets hold the whole block; else
        select nothing and return False (the policy then takes the rows one by one). Only as
        the first selection of a plan (the block is a prefix of the running list).

        The rows are written out as items only when someone reads `items` (or `chosen`,
        `build`...): a promise question whose answer is the offered block needs none of them.
        """
        n = self.block_offer
        if not n or self._rows or self._block:
            return False
        if n > self.tokens_left or n > self.seqs_left:
            return False
        free = self.free_blocks
        need = self._offer_need
        if free is not None:
            if need > free:
                return False
            self.free_blocks = free - need
            self._blocks_used += need
        self.tokens_left -= n
        self.seqs_left -= n
        self._block = n
        return True

    def offer(self) -> tuple[int, int]:
        """The block offered, as (`n`, `need`) (`(0, 0)`: none)."""
        return self.block_offer, self._offer_need

    def taken_block(self) -> int:
        """How many rows the offered block holds that are taken and not written out (0: none
        taken, or written out since: they are in `items` then)."""
        return self._block

    def rows_besides_block(self) -> list[PlanItem]:
        """The selected items other than a block that is taken and not written out."""
        return self._rows

    def worst_key(self) -> tuple[Any, ...] | None:
        """The largest declared key of the selected items (None: nothing selected), without
        writing out a block taken by `take_block` (`_block_keys`)."""
        rows = self._rows
        worst = max(map(_ITEM_KEY, rows)) if rows else None
        if self._block:
            top = self._block_keys()[1]
            if worst is None or top > worst:
                worst = top
        return worst

    def _block_ascends(self) -> bool:
        """Whether the block's requests' arrival orders ascend strictly (a passing block's
        keys, which start with `arrival_order`, then ascend too)."""
        prev = -1
        for req in self.view.running[: self._block]:
            order = req.arrival_order
            if order <= prev:
                return False
            prev = order
        return True

    def _block_keys(self) -> tuple[bool, tuple[Any, ...]]:
        """(whether the block's keys ascend by the test above, the largest of them): with the
        test passed the largest is the last request's; otherwise every key is computed."""
        top = self._block_top
        if top is not None:  # (a block taken does not change: computed once)
            return top
        n = self._block
        running = self.view.running
        by_request = self._request_key
        key_fn = self.key_fn
        if self._pass and self._block_ascends():
            last = running[n - 1]
            top = True, key_fn(last, _DECODE) if by_request is None else by_request(last)
        else:
            keys = [
                key_fn(req, _DECODE) if by_request is None else by_request(req)
                for req in running[:n]
            ]
            top = False, max(keys)
        self._block_top = top
        return top

    def _write_block(self) -> None:
        """The taken block as the items `take` makes for decode rows, ahead of the rest."""
        n = self._block
        self._block = 0
        by_request = self._request_key
        key_fn = self.key_fn
        rows: list[PlanItem] = []
        row = BlockRow if self._vouched else PlanItem
        for req in self.view.running[:n]:
            start = req.c
            # `take`'s item for a decode row (`e >= 1`, `start = p + e - 1`, one row)
            item = row()
            item.req = req
            item.start = start
            item.end = start + 1
            item.phase = _DECODE
            item.key = key_fn(req, _DECODE) if by_request is None else by_request(req)
            item.snapshot = req.snapshot
            rows.append(item)
        self._rows[0:0] = rows
        self._chosen.clear()
        self._synced = 0

    def chosen(self, req: LiveRequest) -> bool:
        return req.idx in self._chosen_items()

    def _chosen_items(self) -> dict[int, PlanItem]:
        """The selected items by request index (the last item of a request selected twice):
        the items appended since the last call are added here (`unselect`, the only other
        change to `items`, brings it up to date first)."""
        chosen = self._chosen
        items = self.items
        if self._synced < len(items):
            for item in items[self._synced :]:
                chosen[item.req.idx] = item
            self._synced = len(items)
        return chosen

    def kv_needed(self, req: LiveRequest, n: int) -> int:
        bs = self.block_size
        if bs is None:
            return 0
        c = req.c
        if n < 0 or c < 0:
            return blocks_needed(c, n, bs)  # (raises: the budget rule's domain)
        return (-c) // bs - (-(c + n)) // bs  # ceil((c + n) / bs) - ceil(c / bs)

    def refusal(self, req: LiveRequest, n: int) -> Reason | None:
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

    def take(
        self, req: LiveRequest, n: int, need: int = -1, *, admit: bool = False
    ) -> Reason | None:
        """Select [c, c+n) for `req` if every budget allows; else return the refusing reason
        (`refusal`'s answer; the blocks it needs are computed once for both). `need`: the
        blocks `kv_needed(req, n)` gives, when the caller has them already (-1: computed
        here).

        Admitting a request that holds no state slot also needs one from a hybrid model's
        state pool (`DEFERRED_STATE_POOL` when none is left)."""
        pool = self._state_pool
        if admit and pool is not None and not pool.holds(req):
            assert self.state_slots_left is not None
            if self.state_slots_left <= 0:
                return Reason.DEFERRED_STATE_POOL
            reason = self.refusal(req, n)
            if reason is None:
                self.state_slots_left -= 1
                self.select(req, n, admit=admit)
            return reason
        tokens_left = self.tokens_left
        seqs_left = self.seqs_left
        if n <= 0 or tokens_left < n:
            return (
                Reason.DEFERRED_TOKEN_BUDGET if seqs_left > 0 else Reason.DEFERRED_SEQUENCE_BUDGET
            )
        if seqs_left <= 0:
            return Reason.DEFERRED_SEQUENCE_BUDGET
        start = req.c
        free = self.free_blocks
        if free is not None:
            if need < 0:
                bs = self.block_size
                # `kv_needed`, inline for its domain (n > 0 here)
                need = (
                    (-start) // bs - (-(start + n)) // bs
                    if bs is not None and start >= 0
                    else self.kv_needed(req, n)
                )
            if need > free:
                return Reason.DEFERRED_KV_BUDGET
            if need:  # (most decode rows open no block)
                self.free_blocks = free - need
                self._blocks_used += need
        # `_add`, inline (a policy takes every selected interval through here), with
        # `req.phase_of(end)` inline too
        end = start + n
        e = req.e
        if e >= 1:
            last = req.p + e - 1
            if start == last:
                phase = _DECODE if n == 1 else _PREFILL
            else:
                phase = _REBUILD if start < last else _PREFILL
        else:
            phase = _PREFILL
        by_request = self._request_key
        # `PlanItem.of(req, start, end, phase, key)` without its frame (the same fields)
        item = PlanItem()
        item.req = req
        item.start = start
        item.end = end
        item.phase = phase
        item.key = self.key_fn(req, phase) if by_request is None else by_request(req)
        item.snapshot = req.snapshot
        self._rows.append(item)  # (`_chosen` catches up on demand)
        self.tokens_left = tokens_left - n
        self.seqs_left = seqs_left - 1
        if admit:
            self.admitted.append(req)
        return None

    def select(self, req: LiveRequest, n: int, *, admit: bool = False) -> PlanItem:
        """Select [c, c+n) unconditionally (the validator still checks every budget)."""
        return self._add(
            req, n, admit, self.kv_needed(req, n) if self.free_blocks is not None else 0
        )

    def _add(self, req: LiveRequest, n: int, admit: bool, need: int) -> PlanItem:
        """Append [c, c+n) with the `need` blocks it takes (`kv_needed`)."""
        start = req.c
        end = start + n
        phase = req.phase_of(end)
        item = PlanItem.of(req, start, end, phase, self.key_fn(req, phase))
        self._rows.append(item)  # (`_chosen` catches up on demand)
        self.tokens_left -= n
        self.seqs_left -= 1
        free = self.free_blocks
        if free is not None:
            self.free_blocks = free - need
            self._blocks_used += need
        if admit:
            self.admitted.append(req)
        return item

    def unselect(self, req: LiveRequest) -> None:
        """Remove a selected item again, returning its budgets (vLLM victim already placed)."""
        item = self._chosen_items().pop(req.idx)
        self._rows.remove(item)
        self._synced = len(self._rows)
        self.tokens_left += item.width
        self.seqs_left += 1
        if self.free_blocks is not None:
            need = self.kv_needed(req, item.width)
            self.free_blocks += need
            self._blocks_used -= need
        if req in self.admitted:
            self.admitted.remove(req)
            pool = self._state_pool
            if pool is not None and not pool.holds(req) and self.state_slots_left is not None:
                self.state_slots_left += 1

    def defer(self, req: LiveRequest, reason: str) -> None:
        self.not_selected.append((req, str(reason)))

    def preempt(self, req: LiveRequest) -> None:
        """Preempt `req` by recompute: its blocks return to the pool for this plan."""
        if req.idx in self._chosen_items():
            self.unselect(req)
        self.preempted.append(req)
        self.not_selected.append((req, Reason.PREEMPTED.value))
        if self.free_blocks is not None:
            self.free_blocks += req.blocks
        pool = self._state_pool
        if pool is not None and pool.holds(req) and self.state_slots_left is not None:
            self.state_slots_left += 1  # its state leaves the device with it

    def reject(self, req: LiveRequest, reason: str) -> None:
        """Refuse admission for good: a user-visible outcome, never counted as SLO success."""
        self.rejected.append(req)
        self.not_selected.append((req, str(reason)))

    def build(self) -> Plan:
        n = self._block
        if n and self._pass and self._vouched and not self.preempted:
            plan = self._build_passing(n)
            if plan is not None:
                return plan
        items = sorted(self.items, key=_ITEM_KEY)
        tokens = 0
        for it in items:
            tokens += it.end - it.start
        return Plan(  # (state_version, items, not_selected, preempted, admitted,
            self.view.state_version,  # tokens_used, sequences_used, blocks_used, rejected)
            items,
            self.not_selected,
            self.preempted,
            self.admitted,
            tokens,
            len(items),
            self._blocks_used,
            self.rejected,
        )

    def _build_passing(self, n: int) -> Plan | None:
        """The plan with the taken block kept as a block (`Plan.block`), when its keys ascend
        and sort below every other item's: the order `build` gives the written-out rows is then
        the block's followed by the other items' (None: write it out)."""
        ascends, top = self._block_keys()
        if not ascends:
            return None
        rest = sorted(self._rows, key=_ITEM_KEY)
        if rest and not rest[0].key > top:
            return None
        tokens = n
        for it in rest:
            tokens += it.end - it.start
        return Plan(
            self.view.state_version,
            rest,
            self.not_selected,
            self.preempted,
            self.admitted,
            tokens,
            n + len(rest),
            self._blocks_used,
            self.rejected,
            list(self.view.running[:n]),
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
    def phase_order(self) -> tuple[Phase, ...]: ...

    def choose(self, view: StateView, plan: PlanBuilder) -> None: ...


#: The request attribute behind each tie-break field other than phase_rank.
_KEY_ATTRS = {
    "priority_rank": "priority",
    "arrival_order": "arrival_order",
    "request_id": "rid",
    "request_generation": "gen",
}


def key_function(tie_break_key: Sequence[str], phase_order: Sequence[Phase]) -> KeyFn:
    """The declared tie-break key as a function of a request view and derived phase.

    phase_rank is the contract's (`plan_contract.phase_rank`: an unlisted RECOMPUTE_CHUNK ranks
    like PREFILL_CHUNK, any other unlisted phase after every listed one). The
    key is built once per plan item, so the usual shapes get a function without a loop: no
    phase_rank (one C-level attribute getter), or phase_rank first and then request fields.
    """
    key = tuple(tie_break_key)
    unknown = [name for name in key if name != "phase_rank" and name not in _KEY_ATTRS]
    if unknown:
        raise KeyError(unknown[0])
    order = tuple(Phase(name) for name in phase_order)
    d_rank = phase_rank(order, _DECODE)  # the contract's rule, computed once per phase
    p_rank = phase_rank(order, _PREFILL)
    r_rank = phase_rank(order, _REBUILD)
    if "phase_rank" not in key:
        return _field_key(key)
    rest = key[1:]
    if key[0] != "phase_rank" or "phase_rank" in rest or not rest:
        return _general_key(key, d_rank, p_rank, r_rank)
    if rest == ("arrival_order", "request_id", "request_generation"):

        def fcfs(r: LiveRequest, ph: Phase) -> tuple[Any, ...]:
            return (
                d_rank if ph is _DECODE else (r_rank if ph is _REBUILD else p_rank),
                r.arrival_order,
                r.rid,
                r.gen,
            )

        return fcfs
    if rest == ("priority_rank", "arrival_order", "request_id", "request_generation"):

        def default(r: LiveRequest, ph: Phase) -> tuple[Any, ...]:
            return (
                d_rank if ph is _DECODE else (r_rank if ph is _REBUILD else p_rank),
                r.priority,
                r.arrival_order,
                r.rid,
                r.gen,
            )

        return default
    fields = _field_key(rest)

    def ranked(r: LiveRequest, ph: Phase) -> tuple[Any, ...]:
        return (d_rank if ph is _DECODE else (r_rank if ph is _REBUILD else p_rank), *fields(r, ph))

    return ranked


def _field_key(key: tuple[str, ...]) -> KeyFn:
    """A key of request fields only (no phase_rank)."""
    if len(key) == 1:
        attr = _KEY_ATTRS[key[0]]
        return lambda r, ph: (getattr(r, attr),)
    getter = attrgetter(*(_KEY_ATTRS[name] for name in key))

    def fields(r: LiveRequest, ph: Phase) -> tuple[Any, ...]:
        return getter(r)

    # the same key of the request alone (`PlanBuilder` calls the getter without the frame)
    fields.request_key = getter  # type: ignore[attr-defined]
    return fields


def _general_key(key: tuple[str, ...], d_rank: int, p_rank: int, r_rank: int) -> KeyFn:
    """Any other key shape (phase_rank not first, or listed twice): one getter per field."""

    def rank_of(r: LiveRequest, ph: Phase) -> int:
        return d_rank if ph is _DECODE else (r_rank if ph is _REBUILD else p_rank)

    getters: list[Callable[[LiveRequest, Phase], Any]] = []
    for name in key:
        if name == "phase_rank":
            getters.append(rank_of)
        else:
            getters.append(_attr_getter(_KEY_ATTRS[name]))
    fns = tuple(getters)

    def general(r: LiveRequest, ph: Phase) -> tuple[Any, ...]:
        return tuple(f(r, ph) for f in fns)

    return general


def _attr_getter(attr: str) -> Callable[[LiveRequest, Phase], Any]:
    """A (request, phase) getter of one request attribute."""
    get = attrgetter(attr)
    return lambda r, ph: get(r)


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
