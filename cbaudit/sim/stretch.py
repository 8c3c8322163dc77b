"""Stretches: runs of iterations in which nothing but the frontiers changes, in closed form.

Between two events (an arrival, an admission, a finish, a preemption, a K/V shortage, a
policy's own boundary) most iterations of a replay are the same running decodes advancing by
one token, sometimes with one request's prompt advancing by a chunk that fills the rest of the
token budget. After an iteration t that the engine ran in full (the policy chose, the contract
checked the plan and the result), a *stretch* of k further iterations is taken in closed form
when:

1. every request running after t had a row at t and is now a ready decode (a *decode
   stretch*), or all but one, R, which is prefilling its prompt (a *chunk stretch*); t
   preempted and rejected nobody;
2. the waiting queue is empty (a chunk stretch, or a decode stretch of a policy that holds its
   queue behind a fixed batch: it may hold requests) and no request arrives before the
   stretch's last cut (behind a chunk, arrivals join the queue at the next cut and the next
   chunk stretch starts there);
3. the policy declares the stretch (`decode_stretch(view)`: how many consecutive cuts, each
   the last advanced by one decode row per request, it answers with the same plan, shifted;
   `decode_stretch_waiting(view)`: the same with requests waiting, each cut giving them the
   same reasons; `chunk_stretch(view)`: the same with R advanced by one chunk of the width
   it returns);
4. inside the stretch no request reaches its output limit or realized length (the iteration
   that emits a last token may end a stretch: those requests finish there), R's chunks stay
   short of its prompt, the K/V pool holds every block the rows cross into, and no bound
   (horizon, iterations, decisions) falls.

Per iteration j of a stretch the engine does only O(1) work: the step time from the cost
model's integer series (the same integers and the same division as `step_time_ms`), `now +=
dt` (one float add per iteration, as the per-iteration path does, so times are bit-identical).
Then, once: the TBT gaps (identical for all B decoding rows) counted B times each, the rows and
tokens per iteration, and the requests moved (frontiers, blocks, clocks, counters).

The policy is the thing under audit, so its promise is not trusted blindly: before a stretch is
taken the engine materialises the stretch's last cut, asks the policy once, and requires the
plan the promise predicts (same requests, each one decode row, R its chunk; with requests
waiting behind a chunk, a plan that passes the contract's plan rules there). On any
difference no stretch is taken and the iterations run one by one, so a deviation that persists
from some iteration on is found at the same iteration, with the same finding code, as on the
per-iteration path. `docs/replay.md` gives the equivalence argument rule by rule and the
residual gap.
"""

from __future__ import annotations

import math
from itertools import cycle, islice, repeat
from typing import TYPE_CHECKING, Any

from cbaudit.contract.workload_records import Phase, Queue
from cbaudit.policies.base import PlanBuilder
from cbaudit.sim.cost_models import StepSeries

if TYPE_CHECKING:
    from cbaudit.contract.live_request import LiveRequest
    from cbaudit.sim.engine import Engine, Executed

_DECODE = Phase.DECODE_ROW
_PREFILL = Phase.PREFILL_CHUNK
_RUNNING = Queue.RUNNING
_MIN_STRETCH = 1  # a one-iteration stretch: the promise question is the cut's own decision


_NO: tuple[bool, LiveRequest | None] = (False, None)


def _quiet(
    engine: Engine, step: Executed, any_order: bool, chunks: bool, held: bool
) -> tuple[bool, LiveRequest | None]:
    """Whether the cut after iteration t (just published) can open a stretch, and the request
    that is chunking its prompt there (None: a decode stretch).

    Decode stretch (conditions 1 and 2): every running request emitted a token at t and is now
    a ready decode, the waiting queue is empty, t preempted and rejected nobody, and the
    budgets admit one row each. With `any_order` (the step time does not depend on the rows'
    order) t may also have admitted requests and completed prompts (a prefill chunk ending at
    the prompt emits the first token); otherwise t's rows must all have been decodes, in the
    order kept.

    Chunk stretch (with `chunks`: the policy declares `chunk_stretch`, and `any_order`): the
    same, except that exactly one running request R had a prefill chunk at t that did not
    reach its prompt (R: ready, no output yet, no rows to rebuild), and the waiting queue may
    hold requests (whether they stay behind is the policy's declaration, checked below).

    With `held` (the policy declares `decode_stretch_waiting`: a fixed batch that nobody joins
    while it runs), a decode stretch may open with requests waiting too.

    Where requests wait and no chunk stretch can open, but every running request is a ready
    decode that emitted at t, the full iteration at this cut is offered the decodes as a block
    (`_offer_next`), as at a quiet cut where no stretch is taken."""
    plan = step.plan
    if plan.preempted or plan.rejected:
        return _NO
    running = engine.running  # after t's finished requests left it, admitted ones joined
    items = plan.items  # (and the decode block's rows, `Plan.block`: one-row decodes)
    b = len(running)
    if not b or len(plan.block) + len(items) != b + len(step.terminal):
        return _NO
    budgets = engine.budgets
    if b > budgets.token_budget or b > budgets.sequence_budget:
        return _NO
    partial: LiveRequest | None = None
    if any_order:
        for item in items:
            if item.phase is _DECODE:
                if item.end - item.start != 1:
                    return _NO
            elif item.phase is not _PREFILL:
                return _NO
            elif item.end != item.req.p:
                if not chunks or partial is not None:
                    return _NO
                partial = item.req
    else:
        if plan.admitted or plan.not_selected:
            return _NO
        for item in items:
            if item.phase is not _DECODE or item.end - item.start != 1:
                return _NO
    for r in running:
        if r is partial:
            if not r.ready or r.e != 0 or r.floor > r.c:
                return _NO
        elif not (r.ready and r.floor <= r.c and r.c == r.p + r.e - 1):
            return _NO
    if engine.waiting and partial is None and not held:
        # requests wait, so no decode stretch: the full iteration at this cut is still offered
        # the running requests, every one a ready decode at its frontier (each had a row at t
        # that emitted a token: `e >= 1`), as a block, as at a quiet cut
        _offer_next(engine, None)
        return _NO
    return True, partial


def _series(engine: Engine) -> Any:
    """The cost model's closed form of a run of steps (`step_series`), else None.

    Looked up on the class: a wrapper that delegates unknown attributes to an inner model
    (CUDA-graph padding) must not hand out the inner model's form, which skips the wrapper."""
    cost = engine.cost
    if not callable(getattr(type(cost), "step_series", None)):
        return None
    return getattr(cost, "step_series")  # noqa: B009 (not part of the StepCost protocol)


def run_stretch(engine: Engine, step: Executed) -> None:
    """Take the longest stretches that start after iteration t, if there are any (see above).

    A stretch may end with the iteration in which requests emit their last token; those
    requests finish there, and the rest are again quiet decodes (with the same chunking
    request, if any), so the next stretch starts right after it (in the cost model's closed
    form or under the slot clock, where the step time does not depend on the rows' order).
    Behind a chunk, a request that arrives joins the waiting queue at the next cut, as the
    per-iteration path admits it, and the next chunk stretch starts from that cut."""
    closed = _series(engine)
    any_order = closed is not None or engine.slot_clock
    chunks = any_order and callable(getattr(engine.policy, "chunk_stretch", None))
    held = callable(getattr(engine.policy, "decode_stretch_waiting", None))
    # the next cut's arrivals join the waiting queue now: the next iteration's first step
    engine.admit()
    quiet, partial = _quiet(engine, step, any_order, chunks, held)
    if not quiet:
        return
    live = engine.live
    if live is not None and not live.views_pass(engine.running, engine.waiting):
        return  # a view of the first cut breaks a state rule: the full iteration reports it
    contexts = (
        None
        if any_order
        else [r.c + 1 for r in step.plan.block if not r.terminal]
        + [it.req.c + 1 for it in step.plan.items if not it.req.terminal]
    )
    while True:
        taken = _stretch(engine, closed, contexts, partial)
        if not taken:
            # the cut stays quiet (no stretch: an arrival due, a promise not kept...): the
            # full iteration there is offered the decodes as a block, as after a stretch
            _offer_next(engine, partial)
            return
        if contexts is not None or not engine.running:
            return
        # behind a chunk an arrival joins the waiting queue and the next stretch starts at
        # once; otherwise only a finish lets it (an arrival, K/V, the prompt: an event)
        if partial is not None and _arrived(engine):
            engine.admit()
            if live is not None and not live.views_pass(engine.running, engine.waiting):
                return  # the full iteration at this cut reports it
        elif taken == _ENDED_BY_EVENT:
            return


def _offer_next(engine: Engine, partial: LiveRequest | None) -> None:
    """Offer the full iteration at this cut the running decodes as a block (`Engine.choose`).
    At a quiet cut where no stretch was taken they are, as `_quiet` found them or the stretch
    before left them, ready decodes at their frontier with nothing to rebuild: all of the
    running list, or all but the chunking request last in it. `need`: their rows that open a
    K/V block (`c % bs == 0`)."""
    running = engine.running
    b = len(running) - (partial is not None)
    if not b or (partial is not None and running[b] is not partial):
        return
    bs = engine.budgets.kv_block_size
    need = 0
    if bs is not None and engine.free is not None:
        for r in islice(running, b):
            if not r.c % bs:
                need += 1
    engine.decode_block = (engine.iteration, b, need)


def _arrived(engine: Engine) -> bool:
    """Whether a request has arrived by `now` that is not in the waiting queue yet."""
    arrivals = engine._pending.arrivals  # (the column `admit` compares: no request made)
    i = engine._next
    return i < len(arrivals) and arrivals[i] <= engine.now


_NOT_TAKEN = 0
_ENDED_BY_EVENT = 1  # an arrival, a K/V shortage, the chunk that would reach the prompt...
_ENDED_BY_FINISH = 2  # requests emitted their last tokens at the stretch's last iteration


def _stretch(
    engine: Engine, closed: Any, contexts: list[int] | None, partial: LiveRequest | None
) -> int:
    """One stretch from the current cut (with `partial`, a chunk stretch: that request's
    prompt advances by the declared chunk width each iteration): `_NOT_TAKEN`, or how the
    stretch that was taken ended."""
    running = engine.running
    cut = engine.cut(engine.version + 1, engine.iteration + 1, engine.now, engine.free)
    budgets = engine.budgets
    width = 0
    k_chunk = 1 << 62
    if partial is None:
        if engine.waiting:  # (a policy that declares stretches behind a held queue: `_quiet`)
            policy_limit = engine.policy.decode_stretch_waiting(cut)  # type: ignore[attr-defined]
        else:
            policy_limit = engine.policy.decode_stretch(cut)  # type: ignore[attr-defined]
    else:
        policy_limit, width = engine.policy.chunk_stretch(cut)  # type: ignore[attr-defined]
        tokens = len(running) - 1 + width
        if (
            width < 1
            or tokens > budgets.token_budget
            or (engine.waiting and tokens != budgets.token_budget)
        ):
            return _NOT_TAKEN  # a budget left over with requests waiting: they may be admitted
        # the chunk that would reach the prompt emits the first token (an event): before it
        k_chunk = (partial.p - partial.c - 1) // width
        if k_chunk < _MIN_STRETCH:
            return _NOT_TAKEN
    realized = engine.realized
    bs = budgets.kv_block_size
    free = engine.free
    hist: list[int] | None = [0] * bs if bs is not None and free is not None else None
    # the iteration that emits a request's last token may end the stretch (it finishes there)
    k_fin = 1 << 62
    last: list[LiveRequest] = []  # the requests with k_fin tokens left, in running order
    ctx_sum = 0
    for r in running:
        if r is partial:
            continue
        left = realized[r.idx]
        if r.max_out < left:
            left = r.max_out
        left -= r.e
        if left <= k_fin:
            if left < k_fin:
                k_fin = left
                last = [r]
            else:
                last.append(r)
        ctx_sum += r.c + 1  # decode row at c attends to c + 1 keys
        if hist is not None:
            hist[r.c % bs] += 1  # type: ignore[operator]
    k_max = k_fin
    if policy_limit < k_max:
        k_max = policy_limit
    if k_chunk < k_max:
        k_max = k_chunk
    chunk = None if partial is None else (partial.c, width)
    if engine.horizon is not None:
        k_max = min(k_max, engine.horizon - engine.iteration)
    k_max = min(k_max, engine.max_iterations - engine.iteration)
    if engine.max_decisions is not None:
        k_max = min(k_max, engine.max_decisions - engine.version)
    if k_max < _MIN_STRETCH:
        return _NOT_TAKEN
    arrivals = engine._pending.arrivals  # (the column `admit` compares: no request made)
    nxt = arrivals[engine._next] if engine._next < len(arrivals) else math.inf
    b = len(running) - (partial is not None)
    if engine.slot_clock:
        series: StepSeries | None = _SLOT
    elif closed is None:
        series = None
    elif partial is None:  # b rows attending to ctx_sum + j * b keys at step j
        series = closed(b, ctx_sum, ctx_sum, b, b)
    else:  # and one chunk [s + j w, s + (j + 1) w): s + j w history rows, its causal pairs
        s = partial.c
        series = closed(
            b + width,
            ctx_sum + s + width,
            ctx_sum + width * s + width * (width + 1) // 2,
            b + width,
            b + width * width,
        )
    walk = _walk(engine, k_max, nxt, hist, free, series, contexts, chunk)
    if walk is None:
        return _NOT_TAKEN
    times, free_before_last, free_end = walk
    k = len(times)
    last_cut = times[k - 2] if k > 1 else engine.now
    # the decodes' rows at the last cut open `hist[(1 - k) % bs]` blocks (a row at c opens
    # one iff c % bs == 0; at the first cut they stood k - 1 rows earlier)
    need = 0 if hist is None else hist[(1 - k) % bs]  # type: ignore[operator]
    if not _promise_holds(engine, k, last_cut, free_before_last, partial, width, need):
        return _NOT_TAKEN
    # the requests stand at the last cut (k - 1 iterations on): one more, and the figures
    _apply(engine, k, times, free_end, partial, width)
    if k == k_fin:  # those emitted their last token at the stretch's last iteration
        _finish(engine, last)
        return _ENDED_BY_FINISH
    # the next cut (an iteration in full, or the next chunk stretch's first) has the same
    # running requests, one row on: `Engine.choose` offers its decodes as a block too, with
    # the blocks their next rows open (the rows at c0 + k, c0 the first cut's frontiers)
    if b and (partial is None or running[b] is partial):
        engine.decode_block = (engine.iteration, b, 0 if hist is None else hist[(-k) % bs])  # type: ignore[operator]
    return _ENDED_BY_EVENT


_SLOT = StepSeries(1, 0, 1, None, 1, 0, 1)  # the slot clock: every step is 1 / 1 = 1.0
_EXACT = float(2**53)  # below it whole numbers are exact floats, and so are their sums


def _walk(
    engine: Engine,
    k_max: int,
    nxt: float,
    hist: list[int] | None,
    free: int | None,
    series: StepSeries | None,
    contexts: list[int] | None,
    chunk: tuple[int, int] | None,
) -> tuple[list[float], int | None, int | None] | None:
    """Walk the stretch's clock and K/V pool, at most `k_max` iterations: per iteration only
    the arrival test, the blocks the decodes (and a chunk `(start, width)`) cross into, the
    step time and `now += dt`.

    Returns the iterations' end times and the free pool before the last one and after it
    (None when fewer than `_MIN_STRETCH` iterations can be taken)."""
    now = engine.now
    mpu = engine.ms_per_unit
    bs = engine.budgets.kv_block_size
    if series is None:
        assert chunk is None  # (chunk stretches need the closed step time)
        return _walk_shapes(engine, now, mpu, k_max, nxt, hist, free, bs, contexts)
    num, n1, den, switch, then_n0, then_n1, then_den = series
    # the first series runs to the switch (when it falls inside the stretch), the other after
    at = switch if switch is not None and 0 <= switch < k_max else -1
    times: list[float] = []
    append = times.append
    if hist is not None and chunk is None:
        # the common case, a decode stretch with a K/V pool: iteration j takes
        # `hist[(-j) % bs]` blocks (the decodes whose row at c opens a block), read from a
        # cycle of the histogram in that order instead of indexed. Its step (clock and pool)
        # is the general loop's below, specialised for speed on purpose:
        # tests/sim/test_stretch_walk.py holds both loops to the one-at-a-time specification
        assert free is not None and bs is not None
        order = hist[:1] + hist[:0:-1]  # iteration j takes order[j % bs] blocks
        per_cycle = sum(hist)  # (each decode opens one block every bs iterations)
        if mpu == 1.0 and free >= per_cycle * -(-k_max // bs):
            # the pool holds every block the stretch can take: only the arrival ends it early,
            # and the blocks taken are counted once at the end. The same step as the loop
            # below without its pool test, specialised on purpose (and `dt / mpu` is
            # `dt` here): tests/sim/test_stretch_walk.py holds it to the specification
            return _walk_ample(now, k_max, nxt, free, series, at, order, per_cycle, bs)
        needs = cycle(order)
        run = k_max if at < 0 else at
        while True:
            for need in islice(needs, run):
                if nxt <= now:
                    break  # the cut of this iteration admits an arrival: an event
                if need > free:
                    break  # the policy would have to preempt: an event
                free -= need
                dt = num / den  # step_time_ms of this step, bit for bit
                if mpu != 1.0:
                    dt = dt / mpu
                now = now + dt
                append(now)
                num += n1
            else:
                if at >= 0:  # the other time term is the larger from here on
                    num, n1, den = then_n0 + at * then_n1, then_n1, then_den
                    run = k_max - at
                    at = -1
                    continue
            break
        k = len(times)
        if k < _MIN_STRETCH:
            return None
        return times, free + hist[(1 - k) % bs], free  # the last iteration took that many
    free_prev = free
    k = 0
    c_end = w = held = 0
    if chunk is not None and hist is not None:
        c_end, w = chunk
        held = -(-c_end // bs)  # type: ignore[operator]
    while k < k_max:
        if nxt <= now:
            break  # the cut of iteration k + 1 admits an arrival: an event
        if hist is not None:
            need = hist[(-k) % bs]  # type: ignore[operator]
            if w:  # the chunk's new blocks
                c_end += w
                grown = -(-c_end // bs)  # type: ignore[operator]
                need += grown - held
                held = grown
            if need > free:  # type: ignore[operator]
                break  # the policy would have to preempt: an event
            free_prev = free
            free -= need  # type: ignore[operator]
        if k == at:  # the other time term is the larger from here on
            num, n1, den = then_n0 + k * then_n1, then_n1, then_den
        dt = num / den  # step_time_ms of step k, bit for bit
        if mpu != 1.0:
            dt = dt / mpu
        now = now + dt
        append(now)
        num += n1
        k += 1
    if k < _MIN_STRETCH:
        return None
    return times, free_prev, free


def _walk_ample(
    now: float,
    k_max: int,
    nxt: float,
    free: int,
    series: StepSeries,
    at: int,
    order: list[int],
    per_cycle: int,
    bs: int,
) -> tuple[list[float], int | None, int | None] | None:
    """`_walk`'s decode stretch under a millisecond clock (ms per unit 1) whose pool cannot
    run short within `k_max` iterations (`order[j % bs]` blocks taken at iteration j,
    `per_cycle` in every bs iterations)."""
    num, n1, den, _, then_n0, then_n1, then_den = series
    times: list[float] = []
    append = times.append
    run = k_max if at < 0 else at
    while True:
        for _ in repeat(None, run):
            if nxt <= now:
                break  # the cut of this iteration admits an arrival: an event
            now = now + num / den  # step_time_ms of this step, bit for bit
            append(now)
            num += n1
        else:
            if at >= 0:  # the other time term is the larger from here on
                num, n1, den = then_n0 + at * then_n1, then_n1, then_den
                run = k_max - at
                at = -1
                continue
        break
    k = len(times)
    if k < _MIN_STRETCH:
        return None
    cycles, part = divmod(k, bs)
    free -= cycles * per_cycle + sum(order[:part])
    return times, free + order[(k - 1) % bs], free  # the last iteration took that many


def _walk_shapes(
    engine: Engine,
    now: float,
    mpu: float,
    k_max: int,
    nxt: float,
    hist: list[int] | None,
    free: int | None,
    bs: int | None,
    contexts: list[int] | None,
) -> tuple[list[float], int | None, int | None] | None:
    """`_walk` without a closed step series: each step's time from its shape (decodes only,
    in the order kept)."""
    from cbaudit.sim.step import StepShape

    assert contexts is not None
    times: list[float] = []
    append = times.append
    free_prev = free
    cost = engine.cost
    k = 0
    while k < k_max:
        if nxt <= now:
            break
        if hist is not None:
            need = hist[(-k) % bs]  # type: ignore[operator]
            if need > free:  # type: ignore[operator]
                break
            free_prev = free
            free -= need  # type: ignore[operator]
        dt = cost.step_time_ms(StepShape(tuple(x + k for x in contexts), ())) / mpu
        now = now + dt
        append(now)
        k += 1
    if k < _MIN_STRETCH:
        return None
    return times, free_prev, free


def _finish(engine: Engine, last: list[LiveRequest]) -> None:
    """The requests whose last token the stretch's last iteration emitted (`last`: those
    the stretch's setup found with the fewest tokens left, in running order) finish, as
    they do after a per-iteration step (reason, K/V released, the progress callback)."""
    realized = engine.realized
    terminal: list[tuple[LiveRequest, str]] = [
        (r, "eos" if r.e >= realized[r.idx] else "max_output_tokens") for r in last
    ]
    engine._retire(terminal)
    if engine.progress is not None:
        engine.progress(engine.finished, engine.target)


def _promise_holds(
    engine: Engine,
    k: int,
    now: float,
    free: int | None,
    partial: LiveRequest | None,
    width: int,
    need: int,
) -> bool:
    """Ask the policy at the stretch's last cut (every decode advanced k - 1 rows, a chunking
    request k - 1 chunks) and require the predicted plan; the requests are restored either
    way. Where requests wait behind a chunk stretch, the plan must pass the contract's plan
    rules at that cut, its not-selected reasons included: they are the same at every cut of
    the stretch, and so are the waiting queue, the ranks and the selected work, so the rule
    "no ready request ranked ahead of selected work is left without a reason" gives the same
    answer at every cut.

    The decodes are offered to the policy as one block, vouched for (the builder made with
    `vouched_block=(n, need)`; `need`: the blocks their rows at that cut open), when they are
    a prefix of the running list (all of it, or all but a chunking request last in it); a
    block taken and not written out is the predicted decode rows by construction
    (docs/replay.md, "Decode blocks").

    When the promise holds the requests are left at that cut, k - 1 iterations on (`_apply`
    carries out the last one); otherwise they are moved back."""
    running = engine.running
    shift = k - 1
    if shift:
        _shift(engine, partial, width, shift, engine.iteration + shift, now)
    ok = False
    try:
        version = engine.version + k
        view = engine.cut(version, engine.iteration + k, now, free)
        key_fn = engine.key_fn
        offered = len(running) - (partial is not None)
        if not offered or (partial is not None and running[offered] is not partial):
            offered = 0
        builder = PlanBuilder(
            view,
            key_fn,
            vouched_block=(offered, need) if offered else None,
            pass_block=engine._pass_blocks,
        )
        engine.policy.choose(view, builder)
        # the builder's lists as the plan would hold them (`build` only sorts the items by
        # their keys, which are compared one by one here, and sums their widths)
        block = builder.taken_block()
        rest = builder.rows_besides_block()
        ok = (
            not builder.preempted
            and not builder.admitted
            and not builder.rejected
            and block + len(rest) == len(running)
            and _predicted_rows(rest, key_fn, partial, width)
            # a block taken is the one offered here (the policy may not offer itself another)
            and (not block or (block == offered and builder.offer() == (offered, need)))
            and (not block or not rest or _outside_block(rest, running, block))
        )
        waiting = engine.waiting
        if ok and waiting:  # (behind a chunk, or a decode stretch behind a held queue)
            live = engine.live
            ok = live is None or live.plan_passes(builder.build(), version, running, waiting)
        elif builder.not_selected:
            ok = False  # with nobody waiting and every running request selected: no reasons
    finally:
        if shift and not ok:
            _shift(engine, partial, width, -shift, engine.iteration, engine.now)
    return ok


def _shift(
    engine: Engine,
    partial: LiveRequest | None,
    width: int,
    shift: int,
    served: int,
    emitted: float,
) -> None:
    """Move the running requests `shift` iterations along the stretch (back, when negative):
    each decode `shift` rows, a chunking request `shift` chunks. At a stretch's cuts every one
    of them was served at the last iteration and every decode emitted at its end, so
    `last_served` and `last_emit` are the same for all (the cut's iteration and clock)."""
    bs = engine.budgets.kv_block_size
    for r in engine.running:
        if r is partial:
            c = r.c = r.c + shift * width
        else:
            r.e += shift
            c = r.c = r.c + shift
            r.last_emit = emitted
        if bs is not None:
            r.blocks = -(-c // bs)
        r.snapshot += shift
        r.last_served = served


def _predicted_rows(items: list[Any], key_fn: Any, partial: LiveRequest | None, width: int) -> bool:
    """Whether `items` are one decode row `[c, c + 1)` per distinct running request (for
    `partial`, one prefill chunk `[c, c + width)`), each with the request's current snapshot
    and its declared key."""
    # a key of request fields only has the same key as a function of the request alone
    # (`key_function`'s `request_key`, which `PlanBuilder.take` calls too): no Python frame
    by_request = getattr(key_fn, "request_key", None)
    seen = set()
    for it in items:
        r = it.req
        c = r.c
        if r is partial:
            phase = _PREFILL
            end = c + width
        else:
            phase = _DECODE
            end = c + 1
        if (
            it.phase is not phase
            or it.start != c
            or it.end != end
            or it.snapshot != r.snapshot
            or r.queue is not _RUNNING
            or it.key != (key_fn(r, phase) if by_request is None else by_request(r))
        ):
            return False
        seen.add(r.idx)
    return len(seen) == len(items)


def _outside_block(rest: list[Any], running: list[LiveRequest], block: int) -> bool:
    """Whether none of the items `rest` is for one of the first `block` running requests."""
    inside = {r.idx for r in running[:block]}
    return not any(it.req.idx in inside for it in rest)


def _apply(
    engine: Engine,
    k: int,
    times: list[float],
    free: int | None,
    partial: LiveRequest | None,
    width: int,
) -> None:
    """Carry out k quiet iterations: the figures per iteration, the requests once (they stand
    at the stretch's last cut, where the promise was checked: one iteration more).

    The B decoding requests emitted at every iteration since the stretch's first cut, so
    iteration j's TBT gap `times[j] - times[j - 1]` is each one's: it is counted B times at
    once (under the slot clock every gap is 1.0: counted once for the whole stretch). A
    chunking request emits nothing: its chunks are rows, tokens and service."""
    running = engine.running
    b = len(running) - (partial is not None)
    tbt = engine.tbt
    start = engine.now
    end = times[-1]
    gap_max = 0.0
    if not b:
        pass  # nobody emitted: no gaps
    elif engine.slot_clock and start.is_integer() and end < _EXACT:
        # whole numbers below 2**53: every gap is exactly 1.0, counted once for the stretch
        gap_max = 1.0
        tbt[1.0] = tbt.get(1.0, 0) + k * b
    else:
        get = tbt.get
        prev = start
        for t in times:
            gap = t - prev
            prev = t
            tbt[gap] = get(gap, 0) + b
            if gap > gap_max:
                gap_max = gap
    if partial is None:
        engine.rows.extend_run(b, k)
        engine.tokens_iter.extend_run(b, k)
    else:
        engine.rows.extend_run(b + 1, k)
        engine.tokens_iter.extend_run(b + width, k)
    last = engine.iteration + k
    bs = engine.budgets.kv_block_size
    stats = engine.stats
    service = engine.service
    for r in running:  # each stands k - 1 iterations on (`_promise_holds`): one more
        st = stats[r.idx]
        if r is partial:  # k chunks of `width` prompt rows, all above its rebuild floor
            c = r.c = r.c + width
            if bs is not None:
                r.blocks = -(-c // bs)
            r.snapshot += 1
            r.last_served = last
            st.served_iterations += k
            st.scheduled_tokens += k * width
            if r.client is not None:
                service[r.client] = service.get(r.client, 0) + k * width
            continue
        r.e += 1
        c = r.c = r.c + 1
        if bs is not None:
            r.blocks = -(-c // bs)
        r.snapshot += 1
        r.last_served = last
        r.last_emit = end
        st.last_token = end
        st.served_iterations += k
        st.scheduled_tokens += k
        st.tbt_count += k
        if gap_max > st.tbt_max:
            st.tbt_max = gap_max
        if r.client is not None:  # one semantic row per decode
            service[r.client] = service.get(r.client, 0) + k
    engine.free = free
    engine.now = end
    engine.iteration = last
    engine.version += k
    engine._stalled = 0
    # The views are marked changed, so the next cut re-checks them, as after one iteration:
    # each is its view at the stretch's first cut shifted by k decode rows or k chunks, which
    # provably passes the state rules, but only if nothing else wrote its fields (an engine
    # fault must be found at the next cut on both paths: docs/replay.md)
    live = engine.live
    if live is not None:
        live.touch_all(running)
    engine.stretch_count += 1
    engine.stretch_iterations += k
    if partial is not None:
        engine.chunk_stretch_iterations += k
