"""Differential tests: quiet decode stretches (cbaudit.sim.stretch) against the per-iteration path.

Generated workloads x every registered policy x two cost models (the unit slot clock and the
roofline in ms): the fast path and the per-iteration path must give byte-identical canonical
reports, the same findings and the same final request state. Mutant policies that claim the
stretch property and then deviate must be stopped by both paths with the same finding code at
the same iteration.
"""

from __future__ import annotations

import dataclasses
import json
import random
from itertools import pairwise
from typing import Any

import pytest
from fields import slot_names

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import Phase, Queue
from cbaudit.policies.base import PlanBuilder, StateView
from cbaudit.policies.registry import POLICIES
from cbaudit.policies.sarathi import SarathiServePolicy
from cbaudit.policies.static import StaticPolicy
from cbaudit.policies.vllm_v1 import VllmV1Policy
from cbaudit.sim import stretch as stretch_module
from cbaudit.sim.cost_models import RooflineCostModel
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, ReplayRun, Validation
from cbaudit.sim.metrics import summarize
from cbaudit.sim.replay import make_cost_model
from cbaudit.sim.replay_compare import request_samples
from cbaudit.sim.request_table import RequestStats
from cbaudit.sim.step import StepShape
from cbaudit.sim.workload import Workload, workload_from_data
from tests.sim.generated import POLICY_OPTIONS, generated_doc, long_workload_doc, workload_doc

ROOFLINE = {"hardware": "nvidia-h100-sxm", "model": "llama-3-8b-gqa-fp16", "mfu": 0.7}


def _generated(
    workload_id: str,
    unit: str,
    budgets: dict[str, Any],
    reqs: list[dict[str, Any]],
    hidden: dict[str, int],
) -> Workload:
    """A generated workload: its requests, budgets and hidden output lengths."""
    return workload_from_data(
        generated_doc(workload_id, unit, budgets, reqs, hidden), "generated.yaml"
    )


def _workload(seed: int, unit: str) -> Workload:
    """A random workload (`generated.workload_doc`): bursts of arrivals, long prompts, short
    and long outputs, priorities, sometimes a tiny K/V pool (preemption) or a long-prefill
    threshold."""
    return workload_from_data(workload_doc(seed, unit), "generated.yaml")


def _long_workload(seed: int, unit: str) -> Workload:
    """A longer random workload (`generated.long_workload_doc`): up to 70 requests, chunked
    prompts beside decodes, long stretches, pools from exactly enough to ample."""
    return workload_from_data(long_workload_doc(seed, unit), "generated.yaml")


def _run(wl: Workload, policy: Any, cost: Any, *, stretches: bool, **kw: Any) -> Engine:
    engine = Engine(wl, policy, cost, validation=Validation.CONTRACT, stretches=stretches, **kw)
    engine.run()
    return engine


def _alike_on_both_paths(
    wl: Workload, make: Any, at: int, seed: int, stretched: list[int] | None = None
) -> bool:
    """Run the mutant `make(at)` builds (deviating from cut `at` on) on both paths: the same
    findings (code, iteration, message, in order) and the same canonical report. Whether the
    per-iteration path found anything; the fast run's stretch iterations go to `stretched`.

    A mutant's class is not one of cbaudit's own, so a replay would not believe its inherited
    stretch declaration and would run it per iteration (`test_stretch_claims.py`). Here the
    fast run takes the declaration on the mutant's word (`trust_stretch_claim`): what is
    tested is that the promise question at each stretch's last cut catches a deviation that
    persists, at the iteration where it starts."""
    where = (seed, at)
    slow = _run(wl, make(at), _cost("roofline"), stretches=False)
    fast = _run(wl, make(at), _cost("roofline"), stretches=True, trust_stretch_claim=True)
    if stretched is not None:
        stretched.append(fast.stretch_iterations)
    got = [(f.code, f.iteration, f.message) for f in fast.findings]
    assert got == [(f.code, f.iteration, f.message) for f in slow.findings], where
    assert _canonical(fast.report()) == _canonical(slow.report()), where
    return bool(slow.findings)


# the fields compared (the compiled build's native class lists them elsewhere: tests/fields.py)
_VIEW_FIELDS: tuple[str, ...] = slot_names(LiveRequest)
assert "c" in _VIEW_FIELDS and "e" in _VIEW_FIELDS, _VIEW_FIELDS  # (never an empty comparison)
_STATS_FIELDS = tuple(f.name for f in dataclasses.fields(RequestStats))


def _canonical(run: ReplayRun) -> str:
    report = summarize(run)
    report["findings"] = [(f.code, f.message, f.iteration, f.record) for f in run.findings]
    report["samples"] = request_samples(run)[0]
    # every field of each request's final view and of its statistics, and every gap, row and
    # token count per iteration, whether or not a report shows it today (a request's TBT
    # count reaches the report only as zero or not; the gaps only as percentiles)
    report["final"] = [[getattr(r, f) for f in _VIEW_FIELDS] for r in run.requests]
    report["stats"] = [[getattr(st, f) for f in _STATS_FIELDS] for st in run.stats]
    report["tbt"] = sorted(run.tbt_counts.items())
    report["rows"] = list(run.rows_per_iteration.runs())
    report["tokens"] = list(run.tokens_per_iteration.runs())
    report["clock"] = (run.iterations, run.end_time, run.stop_reason, run.preemptions)
    return json.dumps(report, sort_keys=True)


def _cost(kind: str) -> Any:
    if kind == "unit":
        return UnitCostModel()
    return make_cost_model("roofline", ROOFLINE, file=None, base_dir=None)


POLICY_IDS = POLICIES.ids()
OPTIONS = POLICY_OPTIONS
SEEDS = range(30)


@pytest.mark.parametrize("policy_id", POLICY_IDS)
@pytest.mark.parametrize("cost", ["unit", "roofline"])
def test_fast_path_equals_per_iteration_path(policy_id: str, cost: str) -> None:
    """Same canonical report, findings, samples and final state on every generated workload."""
    unit = "tick" if cost == "unit" else "ms"
    taken = chunked = 0
    for seed in SEEDS:
        wl = _workload(seed, unit)
        opts = OPTIONS.get(policy_id, {})
        slow = _run(wl, POLICIES.create(policy_id, opts), _cost(cost), stretches=False)
        fast = _run(wl, POLICIES.create(policy_id, opts), _cost(cost), stretches=True)
        assert slow.stretch_iterations == 0
        assert _canonical(fast.report()) == _canonical(slow.report()), (policy_id, seed)
        taken += fast.stretch_iterations
        chunked += fast.chunk_stretch_iterations
    policy = POLICIES.create(policy_id, OPTIONS.get(policy_id, {}))
    declares = callable(getattr(policy, "decode_stretch", None))
    # a policy that declares the property must have had stretches to compare on
    assert (taken > 0) is declares
    assert (chunked > 0) is callable(getattr(policy, "chunk_stretch", None))


LONG_SEEDS = range(4)


@pytest.mark.parametrize("policy_id", POLICY_IDS)
@pytest.mark.parametrize("cost", ["unit", "roofline"])
def test_fast_path_equals_per_iteration_path_on_long_runs(policy_id: str, cost: str) -> None:
    """The same comparison on longer workloads (`_long_workload`: what they reach is held by
    `test_long_workloads_reach_long_stretches_chunks_and_preemption`)."""
    unit = "tick" if cost == "unit" else "ms"
    taken = 0
    for seed in LONG_SEEDS:
        wl = _long_workload(seed, unit)
        opts = OPTIONS.get(policy_id, {})
        slow = _run(wl, POLICIES.create(policy_id, opts), _cost(cost), stretches=False)
        fast = _run(wl, POLICIES.create(policy_id, opts), _cost(cost), stretches=True)
        assert _canonical(fast.report()) == _canonical(slow.report()), (policy_id, seed)
        taken += fast.stretch_iterations
    policy = POLICIES.create(policy_id, OPTIONS.get(policy_id, {}))
    assert (taken > 0) is callable(getattr(policy, "decode_stretch", None))


@pytest.mark.instruments
def test_long_workloads_reach_long_stretches_chunks_and_preemption(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`_long_workload`'s seeds give vllm-v1 what the short ones rarely do: decode stretches
    of hundreds of iterations, chunk stretches beside decodes, and a pool short enough to
    preempt."""
    import cbaudit.sim.stretch as stretch

    longest = chunk_stretches = preemptions = 0
    real_apply = stretch._apply

    def apply(engine: Engine, k: int, times: Any, free: Any, partial: Any, width: int) -> None:
        nonlocal longest, chunk_stretches
        longest = max(longest, k)
        chunk_stretches += partial is not None
        real_apply(engine, k, times, free, partial, width)

    monkeypatch.setattr(stretch, "_apply", apply)
    for seed in LONG_SEEDS:
        wl = _long_workload(seed, "ms")
        run = _run(wl, POLICIES.create("vllm-v1", {}), _cost("roofline"), stretches=True)
        preemptions += sum(r.preemptions for r in run.report().requests)
    assert longest >= 200
    assert chunk_stretches > 0
    assert preemptions > 0


def test_vllm_v1_priority_and_max_model_len_equal_per_iteration() -> None:
    """vllm-v1's options that bound or reorder its stretches."""
    for seed in SEEDS:
        wl = _workload(seed, "ms")
        for opts in ({"scheduling": "priority"}, {"max_model_len": 60}):
            slow = _run(wl, POLICIES.create("vllm-v1", opts), _cost("roofline"), stretches=False)
            fast = _run(wl, POLICIES.create("vllm-v1", opts), _cost("roofline"), stretches=True)
            assert _canonical(fast.report()) == _canonical(slow.report()), (opts, seed)


def test_graph_padded_cost_equals_per_iteration_path() -> None:
    """A cost wrapper (CUDA-graph buckets) is used as a whole, never its inner decode form."""
    from cbaudit.sim.graph_padding import GraphPaddedCost, make_graph_buckets

    buckets = make_graph_buckets({"buckets": "pow2", "max_batch": 16})
    assert buckets is not None
    taken = 0
    for seed in SEEDS:
        wl = _workload(seed, "ms")
        runs = []
        for stretches in (False, True):
            cost = GraphPaddedCost(_cost("roofline"), buckets)
            runs.append(_run(wl, POLICIES.create("vllm-v1", {}), cost, stretches=stretches))
        slow, fast = runs
        assert _canonical(fast.report()) == _canonical(slow.report()), seed
        taken += fast.stretch_iterations
    assert taken > 0


def test_bounds_inside_a_stretch_end_it_exactly() -> None:
    """Horizon and decision limits falling inside a stretch stop both paths at the same cut."""
    wl = _workload(3, "tick")
    for kw in ({"horizon": 37}, {"max_decisions": 41}, {"max_iterations": 29}):
        slow = _run(
            wl, POLICIES.create("sarathi-serve", {}), UnitCostModel(), stretches=False, **kw
        )
        fast = _run(wl, POLICIES.create("sarathi-serve", {}), UnitCostModel(), stretches=True, **kw)
        assert _canonical(fast.report()) == _canonical(slow.report()), kw


def test_a_trace_sees_every_iteration() -> None:
    """With --trace-out no stretch is taken: one state, plan and result per iteration."""

    class Sink:
        def __init__(self) -> None:
            self.records: list[tuple[str, str]] = []

        def write(self, kind: str, data: Any) -> None:
            self.records.append((kind, json.dumps(data, sort_keys=True)))

    wl = _workload(5, "ms")
    a, b = Sink(), Sink()
    fast = _run(wl, POLICIES.create("vllm-v1", {}), _cost("roofline"), stretches=True, trace=a)
    slow = _run(wl, POLICIES.create("vllm-v1", {}), _cost("roofline"), stretches=False, trace=b)
    assert a.records == b.records
    assert fast.stretch_iterations == 0
    results = sum(1 for kind, _ in a.records if kind == "result")
    assert results == fast.iteration
    untraced = _run(wl, POLICIES.create("vllm-v1", {}), _cost("roofline"), stretches=True)
    assert untraced.stretch_iterations > 0
    assert _canonical(untraced.report()) == _canonical(slow.report())


def _mutate(bug: str, view: StateView, plan: PlanBuilder) -> None:
    """One injected deviation in a plan a policy just built."""
    item = plan.items[-1]
    if bug == "skip":  # drop a selected row and say nothing
        plan.items.remove(item)
    elif bug == "key":
        item.key = (-1, *item.key[1:])
    elif bug == "wide":  # one row too many for a decode
        item.end += 1
    elif bug == "snapshot":
        item.snapshot -= 1
    elif bug == "over":  # one more sequence than the budget allows
        for r in view.running:
            if not plan.chosen(r):
                plan.select(r, 1)
        plan.seqs_left = 0
        plan.items.append(plan.items[0])
    elif bug == "narrow":  # a chunk one row narrower: legal, another trajectory
        for it in plan.items:
            if it.phase is Phase.PREFILL_CHUNK and it.end - it.start > 1:
                it.end -= 1
    elif bug == "unexplained":  # no reasons for the requests left waiting
        plan.not_selected.clear()
    elif bug == "defer_selected":  # a selected request also given a reason
        plan.defer(item.req, "DEFERRED_TOKEN_BUDGET")


class _Mutant(VllmV1Policy):
    """vllm-v1 that claims the stretch property and deviates from cut `at` on."""

    def __init__(self, bug: str, at: int, options: dict[str, Any] | None = None) -> None:
        super().__init__(options or {})
        self.bug = bug
        self.at = at

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        super().choose(view, plan)
        if view.iteration >= self.at and plan.items:
            _mutate(self.bug, view, plan)


class _SarathiMutant(SarathiServePolicy):
    """sarathi-serve that claims the stretch property and deviates from cut `at` on."""

    def __init__(self, bug: str, at: int) -> None:
        self.bug = bug
        self.at = at

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        super().choose(view, plan)
        if view.iteration >= self.at and plan.items:
            _mutate(self.bug, view, plan)


@pytest.mark.instruments
@pytest.mark.parametrize("bug", ["skip", "key", "wide", "snapshot", "over"])
def test_a_mutant_is_caught_by_both_paths_at_the_same_iteration(bug: str) -> None:
    """Deviations that start inside a stretch are found at the same iteration with the same
    code: the stretch's last cut is asked before it is taken."""
    caught = 0
    stretched: list[int] = []
    for seed in range(8):
        wl = _workload(seed, "ms")
        for at in (5, 23, 61):
            caught += _alike_on_both_paths(wl, lambda at: _Mutant(bug, at), at, seed, stretched)
    assert caught > 0 and sum(stretched) > 0


@pytest.mark.parametrize(
    "bug", ["skip", "key", "wide", "snapshot", "over", "narrow", "unexplained", "defer_selected"]
)
@pytest.mark.instruments
def test_a_mutant_is_caught_at_the_same_iteration_on_long_runs(bug: str) -> None:
    """The same on `_long_workload`'s runs, for vllm-v1 (FCFS and priority) and
    sarathi-serve: a deviation from cut `at` on gives both paths the same findings, in the
    same order, at the same iterations, and the same report."""
    caught = 0
    stretched: list[int] = []
    for seed in LONG_SEEDS:
        wl = _long_workload(seed, "ms")
        for at in (17, 150):
            for make in (
                lambda at: _Mutant(bug, at),
                lambda at: _Mutant(bug, at, {"scheduling": "priority"}),
                lambda at: _SarathiMutant(bug, at),
            ):
                caught += _alike_on_both_paths(wl, make, at, seed, stretched)
    assert caught > 0 and sum(stretched) > 0


def _chunk_stretches(
    wl: Workload,
    options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    policy_id: str = "vllm-v1",
) -> list[tuple[int, int, int]]:
    """(first iteration, length, requests waiting) of each chunk stretch of a policy on `wl`."""
    import cbaudit.sim.stretch as stretch

    found: list[tuple[int, int, int]] = []
    real_apply = stretch._apply

    def apply(engine: Engine, k: int, times: Any, free: Any, partial: Any, width: int) -> None:
        if partial is not None:
            found.append((engine.iteration + 1, k, len(engine.waiting)))
        real_apply(engine, k, times, free, partial, width)

    with monkeypatch.context() as m:
        m.setattr(stretch, "_apply", apply)
        _run(wl, POLICIES.create(policy_id, options), _cost("roofline"), stretches=True)
    return found


CHUNK_OPTIONS: list[dict[str, Any]] = [{}, {"scheduling": "priority"}]


@pytest.mark.instruments
def test_chunk_stretches_happen_with_requests_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunk stretches open both with an empty waiting queue and with requests left waiting
    behind a full token budget (the case whose not-selected reasons the contract checks), and
    a request that arrives during one joins the queue at the next cut, where the next chunk
    stretch starts at once (the differential tests above compare the reports)."""
    waiting = set()
    arrival_chained = 0
    for seed in SEEDS:
        for opts in CHUNK_OPTIONS:
            spans = _chunk_stretches(_workload(seed, "ms"), opts, monkeypatch)
            waiting |= {n > 0 for _, _, n in spans}
            for (first, k, n), (nxt, _, m) in pairwise(spans):
                arrival_chained += nxt == first + k and m > n
    assert waiting == {False, True}
    assert arrival_chained > 0


MUTANT_OPTIONS = [("vllm-v1", {}), ("vllm-v1", {"scheduling": "priority"}), ("sarathi-serve", {})]


@pytest.mark.parametrize(("policy_id", "options"), MUTANT_OPTIONS)
@pytest.mark.parametrize(
    "bug", ["skip", "key", "wide", "snapshot", "over", "narrow", "unexplained", "defer_selected"]
)
@pytest.mark.instruments
def test_a_mutant_inside_a_chunk_stretch_is_caught_at_the_same_iteration(
    bug: str, policy_id: str, options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deviations that start at the first, second or last cut of a chunk stretch (a dropped or
    widened row, a forged key or snapshot, an extra sequence, a narrower chunk, reasons dropped
    for the waiting requests or given to a selected one): both paths stop with the same
    findings at the same iteration, or (a legal deviation) give the same report."""

    def mutant(at: int) -> Any:
        if policy_id == "sarathi-serve":
            return _SarathiMutant(bug, at)
        return _Mutant(bug, at, options)

    caught = tried = 0
    stretched: list[int] = []
    for seed in range(16):
        wl = _workload(seed, "ms")
        spans = _chunk_stretches(wl, options, monkeypatch, policy_id)[:2]
        for at in sorted({first + d for first, k, _ in spans for d in (0, 1, k - 1)}):
            caught += _alike_on_both_paths(wl, mutant, at, seed, stretched)
            tried += 1
    assert tried > 0 and sum(stretched) > 0
    # a narrower chunk is legal; in FCFS order no waiting request ranks ahead of the running
    # ones, so none needs a reason
    if bug != "narrow" and not (bug == "unexplained" and not options):
        assert caught > 0


def _held_stretches(
    wl: Workload, unit_cost: str, monkeypatch: pytest.MonkeyPatch, make: Any = None
) -> list[tuple[int, int, int]]:
    """(first iteration, length, requests waiting) of each decode stretch that `static` (or
    the policy `make()` builds) took with requests waiting behind its fixed batch."""
    import cbaudit.sim.stretch as stretch

    found: list[tuple[int, int, int]] = []
    real_apply = stretch._apply

    def apply(engine: Engine, k: int, times: Any, free: Any, partial: Any, width: int) -> None:
        if partial is None and engine.waiting:
            found.append((engine.iteration + 1, k, len(engine.waiting)))
        real_apply(engine, k, times, free, partial, width)

    policy = make() if make is not None else POLICIES.create("static", {})
    with monkeypatch.context() as m:
        m.setattr(stretch, "_apply", apply)
        _run(wl, policy, _cost(unit_cost), stretches=True, trust_stretch_claim=make is not None)
    return found


@pytest.mark.instruments
def test_static_stretches_open_behind_its_held_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """`static` holds its queue while a fixed batch runs (`decode_stretch_waiting`): decode
    stretches open with requests waiting, chain across the batch's finishes, and give the
    per-iteration path's report; a policy that does not declare it (vllm-v1, orca) never
    takes a decode stretch with requests waiting."""
    held = chained = 0
    for seed in SEEDS:
        for cost in ("unit", "roofline"):
            wl = _workload(seed, "tick" if cost == "unit" else "ms")
            spans = _held_stretches(wl, cost, monkeypatch)
            held += len(spans)
            chained += sum(nxt == first + k for (first, k, _), (nxt, _, _) in pairwise(spans))
            for pid in ("vllm-v1", "orca"):
                assert not _held_stretches(wl, cost, monkeypatch, lambda p=pid: POLICIES.create(p))
    assert held > 0 and chained > 0


class _StaticMutant(StaticPolicy):
    """static that claims both stretch properties and deviates from cut `at` on: `admit`
    admits the waiting queue's head into the running batch, `forget` drops its reason, the
    rest as `_mutate`."""

    def __init__(self, bug: str, at: int) -> None:
        self.bug = bug
        self.at = at

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        super().choose(view, plan)
        if view.iteration < self.at or not plan.items:
            return
        if self.bug == "admit" and view.running and view.waiting:
            plan.not_selected.clear()
            plan.take(view.waiting[0], 1, admit=True)
        elif self.bug == "forget":
            plan.not_selected.clear()
        elif self.bug not in ("admit", "forget"):
            _mutate(self.bug, view, plan)


@pytest.mark.instruments
@pytest.mark.parametrize("bug", ["skip", "key", "wide", "snapshot", "over", "admit", "forget"])
def test_a_static_mutant_behind_its_held_queue_is_caught_at_the_same_iteration(
    bug: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deviations that start at the first, second or last cut of a stretch behind a held
    queue (a dropped, widened or forged row, an extra sequence, the queue's head admitted into
    the batch, its reason dropped): both paths give the same findings at the same iterations
    and the same report; the illegal ones are found."""
    caught = tried = 0
    stretched: list[int] = []
    for seed in range(16):
        wl = _workload(seed, "ms")
        spans = _held_stretches(wl, "roofline", monkeypatch)[:2]
        for at in sorted({first + d for first, k, _ in spans for d in (0, 1, k - 1)}):
            mutant = lambda at: _StaticMutant(bug, at)  # noqa: E731
            caught += _alike_on_both_paths(wl, mutant, at, seed, stretched)
            tried += 1
    assert tried > 0 and sum(stretched) > 0
    # an admission into the batch is legal unless it breaks a budget, and so is a missing
    # reason for a request that arrived after the batch's members; the rest are not
    if bug != "forget":
        assert caught > 0


def _series_ms(series: Any, j: int) -> float:
    n0, n1, den, switch, then_n0, then_n1, then_den = series
    if switch is not None and j >= switch:
        return (then_n0 + j * then_n1) / then_den
    return (n0 + j * n1) / den


@pytest.mark.parametrize(
    "options",
    [ROOFLINE, {**ROOFLINE, "mfu": 0.05, "overhead_ms": 0.37}, {**ROOFLINE, "mbu": 0.2}],
)
def test_roofline_step_series_is_step_time(options: dict[str, Any]) -> None:
    """`step_series` gives `step_time_ms` of every step of a decode run (B rows, contexts + j)
    and of a chunk run (B decodes + one chunk of width w at start s + j w), bit for bit, on
    both sides of the memory / compute crossover and with an overhead."""
    cost = make_cost_model("roofline", options, file=None, base_dir=None)
    assert isinstance(cost, RooflineCostModel)
    rnd = random.Random(11)
    switched = 0
    for _ in range(150):
        b = rnd.choice([0, 1, 2, 7, 40, 256, 1024, 4096])
        ctx = [rnd.choice([1, 5, 300, 4000, 60_000]) for _ in range(b)]
        w = rnd.choice([0, 1, 16, 500, 2000])
        s = rnd.choice([0, 7, 3000])
        width = rnd.choice([3, 40])
        if w:  # B decodes + a chunk [s + j w, s + (j + 1) w)
            pairs = sum(ctx) + w * s + w * (w + 1) // 2
            series = cost.step_series(b + w, sum(ctx) + s + w, pairs, b + w, b + w * w)
        else:
            series = cost.step_series(b, sum(ctx), sum(ctx), b, b)
        switched += series.switch is not None
        for j in (*range(width), 10_000, 1_000_000):
            chunks = ((s + j * w, s + (j + 1) * w),) if w else ()
            shape = StepShape(tuple(x + j for x in ctx), chunks)
            assert _series_ms(series, j) == cost.step_time_ms(shape), (b, w, s, j)
    assert switched > 0


def _finish_points(wl: Workload, policy_id: str, cost: str, prompts: bool = False) -> list[int]:
    """Iterations at which requests finished (with `prompts`, also those at which a prompt
    was completed) on the per-iteration path."""
    points: list[int] = []

    class Recording(Engine):
        def _retire(self, terminal: Any) -> None:
            points.append(self.iteration)
            super()._retire(terminal)

        def publish(self, step: Any) -> None:
            if prompts and any(
                it.phase is Phase.PREFILL_CHUNK and it.end == it.req.p for it in step.plan.items
            ):
                points.append(self.iteration)
            super().publish(step)

    Recording(
        wl, POLICIES.create(policy_id, {}), _cost(cost), validation=Validation.CONTRACT,
        stretches=False,
    ).run()  # fmt: skip
    return points


@pytest.mark.instruments
@pytest.mark.parametrize("policy_id", ["vllm-v1", "sarathi-serve", "static", "orca"])
@pytest.mark.parametrize("cost", ["unit", "roofline"])
def test_stretches_fold_finishes_and_chain(
    policy_id: str, cost: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stretch may end with the iteration that emits requests' last tokens; they finish
    there and the next stretch starts at once, with no iteration in full between: the same
    report as the per-iteration path, and both things do happen on these workloads."""
    import cbaudit.sim.stretch as stretch

    folded: list[int] = []
    real_finish = stretch._finish

    def finish(engine: Engine, last: list[Any]) -> None:
        assert last  # (the requests with the fewest tokens left: they finish here)
        real_finish(engine, last)
        assert all(r.terminal for r in last)
        folded.append(engine.iteration)

    starts: list[int] = []
    real_apply = stretch._apply

    def apply(engine: Engine, *args: Any) -> None:
        starts.append(engine.iteration)
        real_apply(engine, *args)

    monkeypatch.setattr(stretch, "_finish", finish)
    monkeypatch.setattr(stretch, "_apply", apply)
    unit = "tick" if cost == "unit" else "ms"
    for seed in SEEDS:
        wl = _workload(seed, unit)
        slow = _run(wl, POLICIES.create(policy_id, {}), _cost(cost), stretches=False)
        before = len(folded)
        fast = _run(wl, POLICIES.create(policy_id, {}), _cost(cost), stretches=True)
        assert _canonical(fast.report()) == _canonical(slow.report()), seed
        # each folded finish is one the per-iteration path also has, at the same iteration
        assert set(folded[before:]) <= set(_finish_points(wl, policy_id, cost)), seed
    assert folded
    # a stretch that starts where a folded one ended: chained with no iteration between
    assert set(starts) & set(folded)


@pytest.mark.instruments
@pytest.mark.parametrize("bug", ["skip", "key", "wide", "snapshot", "over"])
def test_a_mutant_right_after_a_finish_is_caught_at_the_same_iteration(bug: str) -> None:
    """Deviations that start at the cut right after (or at) a finish or a completed prompt,
    where a stretch now opens without an iteration in full: both paths stop at the same
    iteration, same code."""
    caught = 0
    stretched: list[int] = []
    for seed in range(12):
        wl = _workload(seed, "ms")
        points = sorted(set(_finish_points(wl, "vllm-v1", "roofline", prompts=True)))
        for at in sorted({p + d for p in points[:6] for d in (0, 1, 2)}):
            caught += _alike_on_both_paths(wl, lambda at: _Mutant(bug, at), at, seed, stretched)
    assert caught > 0 and sum(stretched) > 0


@pytest.mark.instruments
@pytest.mark.parametrize("policy_id", ["vllm-v1", "sarathi-serve", "static", "orca"])
def test_stretches_open_right_after_a_completed_prompt(
    policy_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a closed decode form a stretch opens at the cut right after an iteration that
    admitted requests or completed prompts (their first token): the same report as the
    per-iteration path, and it does happen on these workloads."""
    import cbaudit.sim.engine as engine_mod

    opened: list[bool] = []
    real = engine_mod.run_stretch

    def run_stretch(engine: Engine, step: Any) -> None:
        before = engine.stretch_count
        real(engine, step)
        if engine.stretch_count > before:
            opened.append(any(it.phase is Phase.PREFILL_CHUNK for it in step.plan.items))

    monkeypatch.setattr(engine_mod, "run_stretch", run_stretch)
    for seed in SEEDS:
        for cost in ("unit", "roofline"):
            wl = _workload(seed, "tick" if cost == "unit" else "ms")
            slow = _run(wl, POLICIES.create(policy_id, {}), _cost(cost), stretches=False)
            fast = _run(wl, POLICIES.create(policy_id, {}), _cost(cost), stretches=True)
            assert _canonical(fast.report()) == _canonical(slow.report()), (seed, cost)
    assert any(opened)


@pytest.mark.instruments
def test_a_broken_view_at_a_stretch_start_is_reported_at_that_cut() -> None:
    """An engine fault that breaks a state rule in a view right after a completed prompt
    (a generation below the declared one): the stretch's first cut checks the changed views,
    so both paths report the same finding at the same iteration."""

    class Faulty(Engine):
        def publish(self, step: Any) -> None:
            super().publish(step)
            done = [it.req for it in step.plan.items if it.phase is Phase.PREFILL_CHUNK]
            for r in done:
                if r.idx == 1 and r.e == 1 and r.gen == 0:
                    r.gen = -1

    caught = 0
    for seed in SEEDS:
        wl = _workload(seed, "ms")
        runs = [
            Faulty(
                wl, POLICIES.create("vllm-v1", {}), _cost("roofline"),
                validation=Validation.CONTRACT, stretches=stretches,
            )
            for stretches in (False, True)
        ]  # fmt: skip
        for engine in runs:
            engine.run()
        slow, fast = runs
        got = [(f.code, f.iteration, f.message) for f in fast.findings]
        assert got == [(f.code, f.iteration, f.message) for f in slow.findings], seed
        caught += any(f.code.startswith("STATE.") for f in slow.findings)
    assert caught > 0


@pytest.mark.instruments
@pytest.mark.parametrize("options", [{}, {"scheduling": "priority"}, {"max_model_len": 60}])
def test_the_decodes_offered_as_a_block_are_what_the_engine_vouches(
    options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At every promise question, at the full iteration right after a stretch that an event
    ended, and at a full iteration whose cut has requests waiting and only ready decodes
    running, the engine offers the decodes as a block only when they are the running list's
    prefix of ready decodes at their frontier with nothing to rebuild, and with the blocks
    their rows open as `need` (`PlanBuilder.offer_block`'s declaration; the engine makes the
    offer with the builder, `vouched_block`); vllm-v1 takes the block in most of them, and the
    reports stay the per-iteration path's (decode and chunk stretches, both cost models)."""
    real = PlanBuilder.__init__
    offers: list[int] = []
    taken: list[bool] = []
    in_full = [False]
    full_offers: list[int] = []
    # the offers `_quiet` makes where requests wait (no decode stretch can open there): only
    # then is `_offer_next` called for decodes alone with the queue not empty
    waiting_offers: list[int] = []
    real_offer_next = stretch_module._offer_next

    def offer_next(engine: Engine, partial: Any) -> None:
        if partial is None and engine.waiting:
            waiting_offers.append(engine.iteration)
        real_offer_next(engine, partial)

    real_choose = Engine.choose

    def choose(engine: Engine) -> Any:
        in_full[0] = True
        try:
            return real_choose(engine)
        finally:
            in_full[0] = False

    def init(plan: PlanBuilder, view: Any, key_fn: Any, **kw: Any) -> None:
        real(plan, view, key_fn, **kw)
        if kw.get("vouched_block") is not None:
            offer(plan, *kw["vouched_block"])

    def offer(plan: PlanBuilder, n: int, need: int) -> None:
        running = plan.view.running
        decodes = running[:n]
        assert n >= 1 and len(running) - n in (0, 1)
        for r in decodes:
            assert r.ready and r.e >= 1 and r.c == r.p + r.e - 1 and r.floor <= r.c, r
            # the rest of what the contract takes on this word for the rows (`BlockRow`)
            assert not r.terminal and r.queue is Queue.RUNNING, r
        bs = plan.block_size
        expect = (
            0 if bs is None or plan.free_blocks is None else sum(r.c % bs == 0 for r in decodes)
        )
        assert need == expect
        offers.append(n)
        if in_full[0]:
            full_offers.append(n)

    real_take = PlanBuilder.take_block

    def take(plan: PlanBuilder) -> bool:
        got = real_take(plan)
        taken.append(got)
        return got

    monkeypatch.setattr(PlanBuilder, "__init__", init)
    monkeypatch.setattr(PlanBuilder, "take_block", take)
    monkeypatch.setattr(Engine, "choose", choose)
    monkeypatch.setattr(stretch_module, "_offer_next", offer_next)
    for seed in SEEDS:
        for kind in ("unit", "roofline"):
            wl = _workload(seed, "ms")
            # (the builder's methods are wrapped here, so the claim is taken on its word)
            fast = _run(
                wl, VllmV1Policy(options), _cost(kind), stretches=True, trust_stretch_claim=True
            )
            slow = _run(wl, VllmV1Policy(options), _cost(kind), stretches=False)
            assert _canonical(fast.report()) == _canonical(slow.report()), (seed, kind)
    assert len(offers) > 50 and sum(taken) > 0.8 * len(offers), (len(offers), sum(taken))
    assert 0 < len(full_offers) < len(offers)
    # offers where requests wait behind a running list of decodes (saturated cuts) are made
    # and held to the declaration above like the others
    assert waiting_offers


class _SelfOffer(VllmV1Policy):
    """vllm-v1 that, from cut `at` on, offers itself every running request as a decode block
    (a chunking request included, no K/V need) before its running pass."""

    def __init__(self, at: int, options: dict[str, Any]) -> None:
        super().__init__(options)
        self.at = at

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        if view.iteration >= self.at and view.running:
            plan.offer_block(len(view.running), 0)
        super().choose(view, plan)


@pytest.mark.instruments
@pytest.mark.parametrize("options", CHUNK_OPTIONS)
def test_a_policy_that_offers_itself_a_block_is_caught_at_the_same_iteration(
    options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block taken at a promise question stands for the predicted rows only if it is the
    one the engine offered there: a policy that offers itself a wider block (over a chunking
    request) or another K/V need is not believed, and both paths stop with the same findings
    at the same iteration (the written-out rows fail the plan rules in full)."""
    caught = tried = 0
    stretched: list[int] = []
    for seed in range(16):
        wl = _workload(seed, "ms")
        spans = _chunk_stretches(wl, options, monkeypatch)[:2]
        for at in sorted({first + d for first, k, _ in spans for d in (0, 1, k - 1)} | {5, 23}):
            caught += _alike_on_both_paths(
                wl, lambda at: _SelfOffer(at, options), at, seed, stretched
            )
            tried += 1
    assert tried > 20 and caught > 0 and sum(stretched) > 0, (tried, caught)
