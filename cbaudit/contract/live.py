"""The contract validator for a running replay: the Loop 2 rules, incrementally.

`check_state`, `check_plan` and `check_result` take frozen records. A replay that built a full
`SchedulerState`, `IterationPlan` and `IterationResult` every iteration and walked every view
would spend most of its time building and re-checking records that did not change. This
validator applies the same rule functions (`state_contract.view_issues`,
`plan_contract.work_item_issues` and the other plan kernels, `result_contract.progress_issues`)
straight to the engine's own request objects, and keeps what it already knows:

* a view's state rules are re-run only when the view changed since the last published cut
  (`touch`, `enter_waiting`); an unchanged view was proved at an earlier cut;
* the declared tie-break key of each (request, phase) is computed once;
* waiting requests sit in a heap by declared key, so the "no ready request ranked ahead of
  selected work is skipped without a reason" rule visits the running requests and only the
  waiting ones ranked below the worst selected key, never the whole queue;
* a row of a decode block the engine offered (an item of the `vouched` class) has its own
  fields tested (interval, phase, snapshot, key), and its request's state (ready, live,
  running, a decode at its frontier) is taken from the engine's word at the offer; its result
  is tested against the output clock and the cap, after which its view needs no new check
  (docs/replay.md, "Vouched block rows").

It returns the issues `check_state` + `check_plan` (and `check_result`) return for the records
the engine would publish, in the same order. Record fields that the engine derives rather than
chooses (workload and decision ids, policy identity, positions = range(start, end), ledger
budgets, result items, output/terminal events and debits computed by the executor from the
completed intervals, the `completed_service` ledger it sums from those debits for declared
clients) are not re-derived here; `tests/sim/test_live_validation.py` replays every
policy, buggy policies and preemption under both validators and requires identical issues.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import chain
from typing import Any, Protocol

from cbaudit.contract.issues import Issue
from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.plan_contract import (
    TieBreakKey,
    budget_issues,
    declared_key,
    duplicate_issue,
    empty_issue,
    forged_key_issue,
    ledger_issues,
    not_selected_issue,
    order_issues,
    rank_fields,
    skipped_issue,
    unknown_issue,
    work_item_issues,
)
from cbaudit.contract.result_contract import progress_issues
from cbaudit.contract.state_contract import view_issues
from cbaudit.contract.workload_records import (
    Phase,
    Queue,
    RequestDecl,
    WorkloadManifest,
    derive_phase,
)


class LiveItem(Protocol):
    """One selected interval [start, end) as the engine holds it."""

    @property
    def req(self) -> LiveRequest: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def phase(self) -> Phase: ...
    @property
    def key(self) -> tuple[Any, ...]: ...
    @property
    def snapshot(self) -> int: ...


class LivePlan(Protocol):
    """A policy's plan as the engine holds it."""

    @property
    def state_version(self) -> int: ...
    @property
    def items(self) -> Sequence[LiveItem]: ...
    @property
    def not_selected(self) -> Sequence[tuple[LiveRequest, str]]: ...
    @property
    def tokens_used(self) -> int: ...
    @property
    def sequences_used(self) -> int: ...
    @property
    def block(self) -> Sequence[LiveRequest]: ...


# a selected request's derived phase, e and c at the cut, and whether it was a common item
# (legal work of a ready request at its frontier, `_check_items`)
_Published = tuple[Phase, int, int, bool]
# a declaration's (prompt_tokens, max_output_tokens, request_generation)
_Limits = tuple[int, int, int]
_PREFILL = Phase.PREFILL_CHUNK
_DECODE = Phase.DECODE_ROW
_REBUILD = Phase.RECOMPUTE_CHUNK
_FINISHED = Queue.FINISHED
_RUNNING = Queue.RUNNING
# what `_check_items` records for a row the engine vouched (`vouched`): a decode whose e and c
# at the cut are those `check_result` is given as before (nothing runs between the two)
_VOUCHED: _Published = (_DECODE, -2, -2, True)


def _in_block(r: LiveRequest, block: Sequence[LiveRequest], tail: set[int]) -> bool:
    """Whether `r` is one of a decode block's requests (`tail`: the indices of the running
    requests behind the block; a request in neither is looked for in the block itself)."""
    return r.queue is _RUNNING and r.idx not in tail and r in block


def _result_issues(
    out: list[Issue],
    j: int,
    r: LiveRequest,
    phase: Phase,
    e: int,
    c: int,
    e0: int,
    c0: int,
    end: int | None,
    lim: _Limits | None,
) -> None:
    """`progress_issues` for the executed row `j` of `r` (doing `phase` work from `(e, c)` at
    the cut, `(e0, c0)` before it ran, up to `end`), read against `r`'s fields now and its
    declared output cap."""
    ae = r.e
    ac = r.c
    p = r.p
    cap = None if lim is None else lim[1]
    progress_issues(out, j, r.rid, phase, p, e, c, c, e0, c0, c0, ae, ac, ac, p + ae, end, cap)


class LiveContract:
    """Incremental `check_state` + `check_plan` + `check_result` for one replay.

    `published` are the queues a cut lists (by default the live ones, waiting and running); a
    request in another queue, or in none yet, is not part of the cut. `unstated_reason` is
    the readiness reason the engine publishes for a not-ready request that names none (None:
    it publishes none). The engine calls
    `enter_waiting` when a request joins the waiting queue, `touch` when any other field of a
    published view changes, `check_plan` once per decision and `check_result` after executing
    that plan (which touches every executed request but a vouched decode row's whose result
    passes). `vouched`: the class of the items the engine writes for an offered decode block
    (`policies.base.BlockRow`; None: none are vouched for), honoured when the cut publishes
    the running queue.
    """

    def __init__(
        self,
        workload: WorkloadManifest,
        published: Collection[Queue] = (Queue.WAITING, Queue.RUNNING),
        *,
        unstated_reason: str | None = None,
        vouched: type | None = None,
    ) -> None:
        self.workload = workload
        self._unstated = unstated_reason
        self._vouched = vouched if Queue.RUNNING in published else None
        self._queues = frozenset(published)
        self._waiting = self._queues & {Queue.WAITING}
        tie_break = workload.policy.tie_break
        self._key_fields = tie_break.key
        self._phase_order = tie_break.phase_order
        # declared keys by request index, one table per phase: (generation, key); one table
        # for all three when the key has no phase_rank (`declared_key` does not read the
        # phase then: a request's key is computed once, not once per phase)
        self._prefill_keys: dict[int, tuple[int, TieBreakKey]] = {}
        self._decode_keys: dict[int, tuple[int, TieBreakKey]] = {}
        self._rebuild_keys: dict[int, tuple[int, TieBreakKey]] = {}
        if "phase_rank" not in self._key_fields:
            self._decode_keys = self._rebuild_keys = self._prefill_keys
        # per request index: (prompt_tokens, max_output_tokens, request_generation) of its
        # declaration, the fields the common view and result rules read (None: undeclared)
        self._limits: dict[int, _Limits | None] = {}
        # the workload's way to read those fields without making the record, if it has one
        self._limits_of: Callable[[str], _Limits | None] | None = getattr(
            workload.by_id, "limits", None
        )
        self._touched: dict[int, LiveRequest] = {}
        # waiting requests by declared key; an entry is current while its request is still
        # waiting and `_entry[idx]` is its sequence number (lazy deletion otherwise)
        self._heap: list[tuple[TieBreakKey, int, LiveRequest]] = []
        self._entry: dict[int, int] = {}
        self._seq = 0
        self._published: list[_Published] = []

    # ------------------------------------------------------------------ bookkeeping

    def touch(self, r: LiveRequest) -> None:
        """`r`'s published view changed: its state rules run again at the next cut."""
        self._touched[r.idx] = r

    def touch_all(self, requests: Iterable[LiveRequest]) -> None:
        """`touch` each of `requests` (one call for a whole queue: after a stretch, every
        running request's view changed)."""
        touched = self._touched
        for r in requests:
            touched[r.idx] = r

    def enter_waiting(self, r: LiveRequest) -> None:
        """`r` joined the waiting queue (arrival, preemption, initial state)."""
        self._touched[r.idx] = r
        phase = derive_phase(r.p, r.e, r.c)
        if phase is None:  # no rank: the state rule reports its frontiers
            self._entry.pop(r.idx, None)
            return
        self._seq += 1
        self._entry[r.idx] = self._seq
        heapq.heappush(self._heap, (self.key(r, phase), self._seq, r))

    def forget(self, r: LiveRequest) -> None:
        """`r` finished (or was rejected) for good: drop what was kept for it (its declared
        keys, its declaration, its heap entry's sequence number), so the validator's memory is
        that of the live requests, not of every request so far. A later read of its
        declaration (`check_result` of the iteration it finished in) is not kept again."""
        idx = r.idx
        self._prefill_keys.pop(idx, None)
        self._decode_keys.pop(idx, None)
        self._rebuild_keys.pop(idx, None)
        self._limits.pop(idx, None)
        self._entry.pop(idx, None)

    def key(self, r: LiveRequest, phase: Phase) -> TieBreakKey:
        """The declared tie-break key of `r` doing `phase` work (the contract's rule)."""
        if phase is _DECODE:  # (an Enum hashes in Python: keep it out of the key)
            table = self._decode_keys
        elif phase is _PREFILL:
            table = self._prefill_keys
        else:
            table = self._rebuild_keys
        hit = table.get(r.idx)
        if hit is not None and hit[0] == r.gen:
            return hit[1]
        priority = r.priority
        order = r.arrival_order
        if priority is None or order is None:  # (else `rank_fields` returns them as they are)
            priority, order = rank_fields(self.workload, r.rid, priority, order)
        key = declared_key(
            self._key_fields, self._phase_order, phase, r.rid, r.gen, priority, order
        )
        table[r.idx] = (r.gen, key)
        return key

    def _decl(self, r: LiveRequest) -> RequestDecl | None:
        """`r`'s declaration record (the full state rules of a view that fails the common
        test; the common rules read `_limit`)."""
        return self.workload.by_id.get(r.rid)

    def _limit(self, r: LiveRequest) -> _Limits | None:
        """(prompt_tokens, max_output_tokens, request_generation) of `r`'s declaration (None:
        undeclared), kept while `r` lives."""
        idx = r.idx
        limits = self._limits
        if idx in limits:
            return limits[idx]
        fields = self._limits_of
        if fields is not None:
            lim = fields(r.rid)
        else:
            decl = self.workload.by_id.get(r.rid)
            lim = (
                None
                if decl is None
                else (decl.prompt_tokens, decl.max_output_tokens, decl.request_generation)
            )
        if not r.terminal:  # (a finished request's tables were dropped: `forget`)
            limits[idx] = lim
        return lim

    # ------------------------------------------------------------------ the checks

    def check_plan(
        self,
        plan: LivePlan,
        state_version: int,
        running: Sequence[LiveRequest],
        waiting: Sequence[LiveRequest],
    ) -> list[Issue]:
        """`check_state` on the views changed since the last cut, then `check_plan`."""
        out: list[Issue] = []
        if self._touched:
            touched = self._touched
            self._touched = {}
            self._check_views(out, touched.values(), running, waiting)
        if plan.state_version != state_version:
            out.append(
                Issue(
                    "PLAN.STATE_VERSION.MISMATCH",
                    "plan",
                    "/input_state_version",
                    f"plan reads state version {plan.state_version},"
                    f" but the state is version {state_version}",
                )
            )
        block = plan.block
        tail: set[int] = set()  # the running requests behind the block, by index
        if block:
            self._vouch_block(block, running)
            tail = {r.idx for r in running[len(block) :]}
        seen, tokens, worst, seqs = self._check_items(out, plan, state_version, tail)
        self._check_budgets(out, plan, tokens, seqs)
        explained = self._check_not_selected(out, plan, seen, state_version, tail)
        if worst is not None:
            self._check_skipped(out, plan, worst, running, waiting, seen, explained)
        return out

    def _vouch_block(self, block: Sequence[LiveRequest], running: Sequence[LiveRequest]) -> None:
        """A plan's decode block (`Plan.block`) is the engine's vouched block: the first
        running requests of the cut, with the running queue published. Anything else is a
        fault of the engine, not a finding about the policy: it stops the replay."""
        # (list equality tests each pair for identity first; a request is equal only to
        # itself)
        if self._vouched is None or list(running[: len(block)]) != list(block):
            raise RuntimeError(
                "a plan's decode block is not a vouched prefix of the cut's running requests"
            )

    def views_pass(self, running: Sequence[LiveRequest], waiting: Sequence[LiveRequest]) -> bool:
        """Whether every view changed since the last cut passes the state rules at the cut of
        `running` and `waiting` (the first part of `check_plan`); when it does they count as
        checked, else they stay pending for `check_plan` to report."""
        touched = self._touched
        if not touched:
            return True
        probe: list[Issue] = []
        self._check_views(probe, touched.values(), running, waiting)
        if probe:
            return False
        self._touched = {}
        return True

    def plan_passes(
        self,
        plan: LivePlan,
        state_version: int,
        running: Sequence[LiveRequest],
        waiting: Sequence[LiveRequest],
    ) -> bool:
        """Whether `check_plan` would find nothing at this cut, without recording anything
        (the changed views stay pending, the plan is not the one `check_result` checks next):
        the engine's probe of a stretch's last cut."""
        touched, published = self._touched, self._published
        self._touched = dict(touched)
        try:
            return not self.check_plan(plan, state_version, running, waiting)
        finally:
            self._touched, self._published = touched, published

    def _check_items(
        self, out: list[Issue], plan: LivePlan, state_version: int, tail: set[int]
    ) -> tuple[set[int], int, TieBreakKey | None, int]:
        """Each selected item against its request's published view. Returns the request
        indices of the items (and of block requests they select again), the tokens they and
        the block use, the largest declared key of the rows with legal work and the number of
        requests selected; records each item's phase and frontiers for `check_result`, and
        appends PLAN.TIE_BREAK.ORDER issues when the keys descend.

        The common item, legal work of a ready request at its frontier, bound to its current
        snapshot and annotated with its derived phase, is recognised inline: for it
        `work_item_issues` finds nothing (each of its conditions is tested here), so only
        the declared key is compared. Any other item, or one that differs in any of those
        fields, goes through the full kernel and gets its issues, in the same order."""
        queues = self._queues
        decode_keys = self._decode_keys
        prefill_keys = self._prefill_keys
        seen: set[int] = set()
        tokens = 0
        worst: TieBreakKey | None = None
        ordered = True
        published = self._published = []
        vouched = self._vouched
        # The decode block (`Plan.block`, vouched for: `_vouch_block`): one row [c, c + 1) of
        # each of these ready, live, running decodes at their frontier (`e >= 1`,
        # `c = p + e - 1`), made by the engine's builder with the current snapshot and the
        # declared key, and never handed to the policy, so each is legal decode work as a
        # vouched row whose fields match is. Only their keys' order is tested: a key that
        # starts with the arrival order ascends when the arrival orders do (one int each);
        # otherwise each key is compared with the one before.
        block = plan.block
        nb = len(block)
        again = 0  # block requests that items select again
        if nb:
            tokens = nb
            if self._key_fields[:1] == ("arrival_order",):
                prev = -1
                for r in block:
                    order = r.arrival_order
                    if order <= prev:
                        ordered = False
                    prev = order
                worst = self.key(block[nb - 1], _DECODE)
                if not ordered:
                    worst = max(self.key(r, _DECODE) for r in block)
            else:
                for r in block:
                    key = self.key(r, _DECODE)
                    if worst is None or key >= worst:
                        worst = key
                    else:
                        ordered = False
        for i, item in enumerate(plan.items, nb):
            r = item.req
            idx = r.idx
            start = item.start
            end = item.end
            legal = False
            if nb and idx not in seen and _in_block(r, block, tail):
                seen.add(idx)  # a second row of a block request: the kernel reports it
                again += 1
            if (
                type(item) is vouched
                and r.c == start
                and end == start + 1
                and item.phase is _DECODE
                and item.snapshot == r.snapshot
                and idx not in seen
            ):
                # a row of a decode block the engine offered (`vouched`): the request is a
                # ready, live, running decode at its frontier by the engine's word (`e >= 1`,
                # `c = p + e - 1`), so the row [c, c + 1) is its legal decode work
                legal = True
                annotated = _DECODE
                table = decode_keys
                entry = _VOUCHED
            elif (
                r.c == start < end
                and r.ready
                and not r.terminal
                and item.snapshot == r.snapshot
                and idx not in seen
                and r.queue in queues
            ):
                # derive_phase and the interval rules of that phase, inline
                e = r.e
                annotated = item.phase
                if e == 0:
                    legal = annotated is _PREFILL and end <= r.p
                    table = prefill_keys
                else:
                    last = r.p + e - 1
                    if start == last:
                        legal = annotated is _DECODE and end == start + 1
                        table = decode_keys
                    else:
                        # start < end <= p + e and start != last: a rebuild (start < last)
                        legal = annotated is _REBUILD and end <= last + 1
                        table = self._rebuild_keys
                entry = (annotated, e, start, True)
            if legal:
                seen.add(idx)
                tokens += end - start
                published.append(entry)
                hit = table.get(idx)
                key = hit[1] if hit is not None and hit[0] == r.gen else self.key(r, annotated)
                if item.key != key:
                    out.append(forged_key_issue(i, r.rid, tuple(item.key), key))
                if worst is None or key >= worst:
                    worst = key
                else:
                    ordered = False
                continue
            rid = r.rid
            if idx in seen:
                out.append(duplicate_issue(i, rid))
            seen.add(idx)
            if end > start:
                tokens += end - start
            else:
                out.append(empty_issue(i, rid, start, end))
            if r.queue not in queues:
                out.append(unknown_issue(i, rid, state_version))
                published.append((_PREFILL, -1, -1, False))
                continue
            e = r.e
            c = r.c
            phase = work_item_issues(
                out,
                i,
                rid,
                start,
                end,
                item.phase,
                r.gen,
                item.snapshot,
                r.gen,
                r.snapshot,
                r.terminal,
                r.ready,
                None if r.ready else (r.readiness_reason or self._unstated),
                r.p,
                e,
                c,
            )
            if phase is None:
                published.append((_PREFILL, -1, -1, False))
                continue
            published.append((phase, e, c, False))
            key = self.key(r, phase)
            if item.key != key:
                out.append(forged_key_issue(i, rid, tuple(item.key), key))
            if worst is None or key >= worst:
                worst = key
            else:
                ordered = False
        if not ordered:  # some key is below an earlier one: an adjacent pair descends
            # the (index, key) of every row with legal work (the block's, and the items' with
            # a published phase), in order
            keys = [(i, self.key(r, _DECODE)) for i, r in enumerate(block)]
            keys += [
                (i, self.key(item.req, phase))
                for i, (item, (phase, e, _, _)) in enumerate(
                    zip(plan.items, published, strict=True), nb
                )
                if e != -1  # (-1: no legal work; -2: a vouched row)
            ]
            out.extend(order_issues(keys))
        return seen, tokens, worst, nb + len(seen) - again

    def _check_budgets(self, out: list[Issue], plan: LivePlan, tokens: int, seqs: int) -> None:
        """The selected tokens and sequences against the budgets, and the plan's ledger."""
        budgets = self.workload.budgets
        if tokens > budgets.token_budget or seqs > budgets.sequence_budget:
            budget_issues(out, budgets.token_budget, budgets.sequence_budget, tokens, seqs)
        n_items = len(plan.block) + len(plan.items)
        if plan.tokens_used != tokens or plan.sequences_used != n_items:
            ledger_issues(
                out,
                budgets.token_budget,
                budgets.sequence_budget,
                budgets.token_budget,
                budgets.sequence_budget,
                plan.tokens_used,
                plan.sequences_used,
                tokens,
                n_items,
            )

    def _check_not_selected(
        self,
        out: list[Issue],
        plan: LivePlan,
        seen: set[int],
        state_version: int,
        tail: set[int],
    ) -> set[int]:
        """Each not-selected entry names a published request that is not selected; returns
        the indices the plan explains."""
        queues = self._queues
        explained: set[int] = set()
        block = plan.block
        for i, (r, _) in enumerate(plan.not_selected):
            explained.add(r.idx)
            if r.idx in seen or (block and _in_block(r, block, tail)):
                out.append(not_selected_issue(i, r.rid, True, state_version))
            elif r.queue not in queues:
                out.append(not_selected_issue(i, r.rid, False, state_version))
        return explained

    def _check_skipped(
        self,
        out: list[Issue],
        plan: LivePlan,
        worst: TieBreakKey,
        running: Sequence[LiveRequest],
        waiting: Sequence[LiveRequest],
        seen: set[int],
        explained: set[int],
    ) -> None:
        """No ready request ranked ahead of selected work is left out without a reason."""
        # the block's requests, the first running ones (`_vouch_block`), are selected
        nb = len(plan.block)
        skipped = self._skipped(worst, running[nb:] if nb else running, seen, explained)
        if not skipped:
            return
        pointer = "/not_selected" if plan.not_selected else ""
        order = {r.idx: i for i, r in enumerate(chain(running, waiting))}
        skipped.sort(key=lambda r: order.get(r.idx, len(order)))
        for r in skipped:
            phase = derive_phase(r.p, r.e, r.c)
            assert phase is not None  # _skipped yields ranked requests only
            out.append(skipped_issue(r.rid, r.gen, self.key(r, phase), worst, pointer))

    def _check_views(
        self,
        out: list[Issue],
        touched: Iterable[LiveRequest],
        running: Sequence[LiveRequest],
        waiting: Sequence[LiveRequest],
    ) -> None:
        """State rules of the changed views that are still in the cut, in cut order."""
        queues = self._queues
        limits = self._limits
        found: list[LiveRequest] = []
        probe: list[Issue] = []
        for r in touched:
            queue = r.queue
            if queue not in queues:  # (None: in no queue)
                continue  # left the cut (finished, rejected): no longer published
            # the common view, a ready live request whose fields pass every rule, inline:
            # `view_issues` would find nothing (each of its conditions is tested here)
            idx = r.idx
            lim = limits.get(idx)
            if lim is None and idx not in limits:  # (one lookup for a declared request)
                lim = self._limit(r)
            if lim is not None and r.ready and not r.terminal and queue is not _FINISHED:
                p = r.p
                e = r.e
                if (
                    p == lim[0]
                    and e <= lim[1]
                    and r.gen >= lim[2]
                    # derive_phase finds work (c <= p + e - 1, or c < p before the first
                    # token) and, before the first token, no floor or one within p
                    and (r.c < p + e if e else r.c < p and (r.floor <= 0 or r.floor <= p))
                ):
                    continue
            self._view(probe, r, queue, 0)
            if probe:
                found.append(r)
                probe.clear()
        if not found:
            return
        order = {r.idx: i for i, r in enumerate(chain(running, waiting))}
        for r in sorted(found, key=lambda r: order.get(r.idx, len(order))):
            assert r.queue is not None  # found holds published requests only
            self._view(out, r, r.queue, order.get(r.idx, len(order)))

    def _view(self, out: list[Issue], r: LiveRequest, queue: Queue, index: int) -> None:
        """The state rules of `r`'s published view at position `index` of the cut."""
        view_issues(
            out,
            self.workload,
            self._decl(r),
            index,
            r.rid,
            r.gen,
            r.p,
            r.e,
            r.c,
            r.c,
            r.ready,
            r.terminal,
            queue,
            None if r.ready else (r.readiness_reason or self._unstated),
            r.rebuild_floor,
        )

    def _skipped(
        self,
        worst: TieBreakKey,
        running: Sequence[LiveRequest],
        seen: set[int],
        explained: set[int],
    ) -> list[LiveRequest]:
        """Ready published requests ranked below `worst` that are neither selected nor
        explained (running ones by a scan, waiting ones from the heap)."""
        out: list[LiveRequest] = []
        for r in running:
            if r.idx in seen or r.idx in explained or not r.ready or r.terminal:
                continue
            phase = derive_phase(r.p, r.e, r.c)
            if phase is not None and self.key(r, phase) < worst:
                out.append(r)
        heap = self._heap
        if heap and heap[0][0] < worst:
            keep = []
            waiting = self._waiting
            entry = self._entry
            while heap and heap[0][0] < worst:
                item = heapq.heappop(heap)
                r = item[2]
                if r.queue in waiting and entry.get(r.idx) == item[1]:
                    keep.append(item)
                    idx = r.idx
                    if idx not in seen and idx not in explained and r.ready and not r.terminal:
                        out.append(r)
            for item in keep:
                heapq.heappush(heap, item)
        return out

    def check_result(
        self,
        done: Sequence[tuple[LiveItem, int, int]],
        block: Sequence[LiveRequest] = (),
        block_e0: Sequence[int] | None = None,
    ) -> list[Issue]:
        """`check_result` for the plan last checked: `done` holds (item, emitted before,
        computed before) for every executed item, read after execution for the after side;
        `block` the plan's decode block (`Plan.block`) and `block_e0` the emitted count of
        each of its requests before its row ran (its row was `[c0, c0 + 1)`,
        `c0 = p + e0 - 1`: a vouched decode at the cut).

        Executing an item changes its request's view, so each is also `touch`ed. A common
        item (`_check_items`) whose result is exactly what the contract's output clock gives
        (before = the cut's (e, c), c after = the interval's end, e after = e plus one when
        the interval reached the logical stream: a decode row, a prompt completed, a rebuild
        reaching p + e; within the declared output cap) is recognised inline: for it
        `progress_issues` finds nothing, each of its rules being tested here. Any other item
        goes through the kernel.
        """
        out: list[Issue] = []
        limits = self._limits
        touched = self._touched
        nb = len(block)
        if nb:
            if block_e0 is None or len(block_e0) != nb:
                raise RuntimeError("a decode block's result without its emitted counts")
            for j in range(nb):
                r = block[j]
                e0 = block_e0[j]
                idx = r.idx
                lim = limits.get(idx)
                if lim is None and idx not in limits:  # (one lookup for a declared request)
                    lim = self._limit(r)
                ae = r.e
                ac = r.c
                c0 = r.p + e0 - 1
                # as for a vouched row below: the output clock's one token, within the cap
                if lim is not None and ac == c0 + 1 and ae == e0 + 1 and ae <= lim[1]:
                    if r.terminal or not (r.ready and r.p == lim[0] and r.gen >= lim[2]):
                        touched[idx] = r
                    continue
                touched[idx] = r
                _result_issues(out, j, r, _DECODE, e0, c0, e0, c0, c0 + 1, lim)
        for j, ((item, e0, c0), (phase, e, c, common)) in enumerate(
            zip(done, self._published, strict=True), nb
        ):
            r = item.req
            idx = r.idx
            lim = limits.get(idx)
            if lim is None and idx not in limits:  # (one lookup for a declared request)
                lim = self._limit(r)
            cap = None if lim is None else lim[1]  # max_output_tokens
            if e == -2:  # a vouched decode row (`_check_items`): e and c at the cut are e0, c0
                ae = r.e
                if lim is not None and r.c == item.end and ae == e0 + 1 and ae <= lim[1]:
                    # the output clock's one token, within the cap. Its view, unless it left
                    # the cut (terminal), passes the common view test now (`_check_views`:
                    # ready, declared prompt and generation, e within the cap, and
                    # c = c0 + 1 = p + e - 1 < p + e since c0 = p + e0 - 1 at the cut), so it
                    # is not marked changed; any other view is, and is checked at the next cut
                    if r.terminal or not (r.ready and r.p == lim[0] and r.gen >= lim[2]):
                        touched[idx] = r
                    continue
                e = e0
                c = c0
            touched[idx] = r
            start = item.start
            end = item.end
            ae = r.e
            ac = r.c
            if common and e0 == e and c0 == c and ac == end and cap is not None and ae <= cap:
                # the output clock: one token when the interval reaches the logical stream
                reached = phase is _DECODE or end == (r.p if phase is _PREFILL else r.p + e)
                if ae == e + reached:
                    continue
            _result_issues(out, j, r, phase, e, c, e0, c0, end if end > start else None, lim)
        return out
