"""Quiet decode stretches: runs of iterations in which nothing changes, in closed form.

Between two events (an arrival, an admission, a finish, a preemption, a K/V shortage, a
policy's own boundary) most iterations of a replay are the same running decodes advancing by
one token. After an iteration t that the engine ran in full (the policy chose, the contract
checked the plan and the result), a *stretch* of k further iterations is taken in closed form
when:

1. t's plan selected every running request for exactly one decode row and nothing else (no
   refusal, admission, preemption or rejection), and nothing finished at t;
2. the waiting queue is empty and no request arrives before the stretch's last cut;
3. the policy declares the stretch (`decode_stretch(view)`: how many consecutive cuts, each the
   last advanced by one decode row per request, it answers with the same plan, shifted);
4. inside the stretch no request reaches its output limit or realized length, the K/V pool
   holds every block the decodes cross into, and no bound (horizon, iterations, decisions)
   falls.

Per iteration j of a stretch the engine does only O(1) work: the step time from the cost
model's decode form (the same integer arithmetic as `step_time_ms`), `now += dt` (one float
add per iteration, as the per-iteration path does, so times are bit-identical), the TBT gap
(identical for all B rows) counted B times, the iteration's figures. At the end the B
requests are moved once (frontiers, blocks, clocks, counters).

The policy is the thing under audit, so its promise is not trusted blindly: before a stretch is
taken the engine materialises the stretch's last cut, asks the policy once, and requires the
plan the promise predicts (same requests, each one decode row). On any difference no stretch
is taken and the iterations run one by one, so a deviation that persists from some iteration
on is found at the same iteration, with the same finding code, as on the per-iteration path.
`docs/replay.md` gives the equivalence argument rule by rule and the residual gap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cbaudit.contract.records import Phase

if TYPE_CHECKING:
    from cbaudit.contract.live_request import LiveRequest
    from cbaudit.sim.engine import Engine, Executed

_DECODE = Phase.DECODE_ROW
_PREFILL = Phase.PREFILL_CHUNK
_MIN_STRETCH = 2  # a stretch of one iteration costs a policy call anyway


def _quiet(engine: Engine, step: Executed, any_order: bool) -> bool:
    """Whether the cut after iteration t (just published) can open a stretch (conditions 1
    and 2): every running request emitted a token at t and is now a ready decode, the waiting
    queue is empty, t preempted and rejected nobody, and the budgets admit one row each.

    With `any_order` (the step time does not depend on the rows' order) t may also have
    admitted requests and completed prompts (a prefill chunk ending at the prompt emits the
    first token); otherwise t's rows must all have been decodes, in the order kept."""
    plan = step.plan
    if plan.preempted or plan.rejected or engine.waiting:
        return False
    running = engine.running  # after t's finished requests left it, admitted ones joined
    items = plan.items
    b = len(running)
    if not b or len(items) != b + len(step.terminal):
        return False
    budgets = engine.budgets
    if b > budgets.token_budget or b > budgets.sequence_budget:
        return False
    if any_order:
        for item in items:
            if item.phase is _DECODE:
                if item.end - item.start != 1:
                    return False
            elif item.phase is not _PREFILL or item.end != item.req.p:
                return False
    else:
        if plan.admitted or plan.not_selected:
            return False
        for item in items:
            if item.phase is not _DECODE or item.end - item.start != 1:
                return False
    return all(r.ready and r.floor <= r.c and r.c == r.p + r.e - 1 for r in running)


def _decode_cost(engine: Engine) -> Any:
    """The cost model's closed decode form `(rows, context_sum) -> ms`, else None.

    Looked up on the class: a wrapper that delegates unknown attributes to an inner model
    (CUDA-graph padding) must not hand out the inner model's form, which skips the wrapper."""
    cost = engine.cost
    if not callable(getattr(type(cost), "decode_step_ms", None)):
        return None
    return getattr(cost, "decode_step_ms")  # noqa: B009 (not part of the StepCost protocol)


def run_stretch(engine: Engine, step: Executed) -> None:
    """Take the longest stretches that start after iteration t, if there are any (see above).

    A stretch may end with the iteration in which requests emit their last token; those
    requests finish there, and the rest are again quiet decodes, so the next stretch starts
    right after it (in the cost model's closed decode form or under the slot clock, where the
    step time does not depend on the rows' order)."""
    closed = _decode_cost(engine)
    any_order = closed is not None or engine.slot_clock
    if not _quiet(engine, step, any_order):
        return
    live = engine.live
    if live is not None and not live.views_pass(engine.running, engine.waiting):
        return  # a view of the first cut breaks a state rule: the full iteration reports it
    contexts = (
        None if any_order else [it.req.c + 1 for it in step.plan.items if not it.req.terminal]
    )
    while _stretch(engine, closed, contexts) and contexts is None and engine.running:
        pass


def _stretch(engine: Engine, closed: Any, contexts: list[int] | None) -> bool:
    """One stretch from the current cut; True when it was taken and ended with a finish."""
    running = engine.running
    b = len(running)
    policy_limit = engine.policy.decode_stretch(  # type: ignore[attr-defined]
        engine.cut(engine.version + 1, engine.iteration + 1, engine.now, engine.free)
    )
    realized = engine.realized
    # the iteration that emits a request's last token may end the stretch (it finishes there)
    k_fin = min(min(realized[r.idx], r.max_out) - r.e for r in running)
    k_max = k_fin
    if policy_limit < k_max:
        k_max = policy_limit
    if engine.horizon is not None:
        k_max = min(k_max, engine.horizon - engine.iteration)
    k_max = min(k_max, engine.max_iterations - engine.iteration)
    if engine.max_decisions is not None:
        k_max = min(k_max, engine.max_decisions - engine.version)
    if k_max < _MIN_STRETCH:
        return False
    nxt = engine._pending[engine._next].arrival if engine._next < len(engine._pending) else None
    bs = engine.budgets.kv_block_size
    free = engine.free
    hist: list[int] | None = None
    if bs is not None and free is not None:
        hist = [0] * bs
        for r in running:
            hist[r.c % bs] += 1
    ctx_sum = 0
    for r in running:
        ctx_sum += r.c + 1  # decode row at c attends to c + 1 keys
    slot = engine.slot_clock
    ms_per_unit = engine.ms_per_unit
    cost = engine.cost
    # walk the stretch: per iteration only the clock, the pool and the figures
    now = engine.now
    times: list[float] = []
    frees: list[int | None] = []
    k = 0
    while k < k_max:
        if nxt is not None and nxt <= now:
            break  # the cut of iteration k + 1 admits an arrival: an event
        if hist is not None:
            assert free is not None and bs is not None
            need = hist[(-k) % bs]  # requests whose row c + k opens a new block
            if need > free:
                break  # the policy would have to preempt: an event
            free -= need
        if slot:
            dt = 1.0
        elif closed is not None:
            dt = closed(b, ctx_sum + k * b) / ms_per_unit
        else:
            from cbaudit.sim.step import StepShape

            assert contexts is not None
            dt = cost.step_time_ms(StepShape(tuple(x + k for x in contexts), ())) / ms_per_unit
        now = now + dt
        times.append(now)
        frees.append(free)
        k += 1
    if k < _MIN_STRETCH:
        return False
    if not _promise_holds(engine, k, times[k - 2], frees[k - 2]):
        return False
    _apply(engine, k, times, frees[k - 1])
    return k == k_fin and _finish(engine)


def _finish(engine: Engine) -> bool:
    """The requests whose last token the stretch's last iteration emitted finish, as they do
    after a per-iteration step (reason, K/V released, the progress callback); True if any."""
    realized = engine.realized
    terminal: list[tuple[LiveRequest, str]] = []
    for r in engine.running:
        if r.e >= realized[r.idx]:
            terminal.append((r, "eos"))
        elif r.e >= r.max_out:
            terminal.append((r, "max_output_tokens"))
    if not terminal:
        return False
    engine._retire(terminal)
    if engine.progress is not None:
        engine.progress(engine.finished, engine.target)
    return True


def _promise_holds(engine: Engine, k: int, now: float, free: int | None) -> bool:
    """Ask the policy at the stretch's last cut (every request advanced k - 1 decode rows) and
    require the predicted plan; the requests are restored either way."""
    running = engine.running
    bs = engine.budgets.kv_block_size
    saved = [(r.e, r.c, r.blocks, r.snapshot, r.last_served, r.last_emit) for r in running]
    shift = k - 1
    last = engine.iteration + shift
    for r in running:
        r.e += shift
        r.c += shift
        if bs is not None:
            r.blocks = -(-r.c // bs)
        r.snapshot += shift
        r.last_served = last
        r.last_emit = now
    try:
        from cbaudit.policies.base import PlanBuilder

        view = engine.cut(engine.version + k, engine.iteration + k, now, free)
        key_fn = engine.key_fn
        builder = PlanBuilder(view, key_fn)
        engine.policy.choose(view, builder)
        plan = builder.build()
        ok = (
            not plan.not_selected
            and not plan.preempted
            and not plan.admitted
            and not plan.rejected
            and len(plan.items) == len(running)
            and plan.state_version == view.state_version
            and all(
                it.phase is _DECODE
                and it.start == it.req.c
                and it.end == it.start + 1
                and it.snapshot == it.req.snapshot
                and it.key == key_fn(it.req, _DECODE)
                for it in plan.items
            )
            and {it.req.idx for it in plan.items} == {r.idx for r in running}
        )
    finally:
        for r, (e, c, blocks, snap, served, emit) in zip(running, saved, strict=True):
            r.e = e
            r.c = c
            r.blocks = blocks
            r.snapshot = snap
            r.last_served = served
            r.last_emit = emit
    return ok


def _apply(engine: Engine, k: int, times: list[float], free: int | None) -> None:
    """Carry out k quiet iterations: the figures per iteration, the requests once."""
    running = engine.running
    b = len(running)
    tbt = engine.tbt
    prev = engine.now
    gap_max = 0.0
    for t in times:
        gap = t - prev
        tbt[gap] = tbt.get(gap, 0) + b
        if gap > gap_max:
            gap_max = gap
        prev = t
    engine.rows.extend([b] * k)
    engine.tokens_iter.extend([b] * k)
    end = times[-1]
    last = engine.iteration + k
    bs = engine.budgets.kv_block_size
    stats = engine.stats
    service = engine.service
    for r in running:
        r.e += k
        r.c += k
        if bs is not None:
            r.blocks = -(-r.c // bs)
        r.snapshot += k
        r.last_served = last
        r.last_emit = end
        st = stats[r.idx]
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
    live = engine.live
    if live is not None:
        for r in running:
            live.touch(r)
    engine.stretch_count += 1
    engine.stretch_iterations += k
