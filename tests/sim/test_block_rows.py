"""Decode rows the engine vouches for (`BlockRow`): the contract's live validator tests the
fields such an item carries and takes its request's state from the engine's word
(docs/replay.md, "Vouched block rows").

Every test here runs replays in which vllm-v1 takes the decode blocks the engine offers, so
the rows it checks are `BlockRow`s on the fast path and ordinary items on the per-iteration
path; each counts the block rows it saw, so that none passes without exercising them. The
policies here are instrumented or subclassed, which a replay would not believe the stretch
property of (`test_stretch_claims.py`); the fast runs take it on their word
(`trust_stretch_claim`), since what is tested is the contract's handling of the rows.
"""

from __future__ import annotations

from typing import Any

import pytest

from cbaudit.contract.records import Phase
from cbaudit.policies.base import BlockRow, PlanBuilder, PlanItem, StateView
from cbaudit.policies.vllm_v1 import VllmV1Policy
from cbaudit.sim.engine import Engine, Executed, Validation
from tests.sim.test_stretch import SEEDS, _alike_on_both_paths, _cost, _run, _workload


def _written_block_rows(monkeypatch: pytest.MonkeyPatch) -> list[type]:
    """Patch `PlanBuilder._write_block` to record the type of each row of a taken block it
    writes out (`BlockRow` for a block the engine vouched for); returns the record."""
    written: list[type] = []
    real = PlanBuilder._write_block

    def write(plan: PlanBuilder) -> None:
        n = len(plan.rows_besides_block())
        real(plan)
        written.extend(type(item) for item in plan.items[: len(plan.items) - n])

    monkeypatch.setattr(PlanBuilder, "_write_block", write)
    return written


def _checked_twice(wl: Any, policy: Any) -> Engine:
    """The fast path (stretches, decode blocks) with every plan and result also checked as
    records by the record validators (`cross_check`, which otherwise runs without
    stretches): a difference between the two is REPLAY.VALIDATOR.DIVERGED."""
    engine = Engine(
        wl, policy, _cost("roofline"), validation=Validation.CONTRACT, trust_stretch_claim=True
    )
    assert engine.stretches
    engine.cross_check = True
    engine.run()
    return engine


@pytest.mark.instruments
def test_vouched_rows_get_the_record_validators_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """On generated workloads the live validator, taking the block rows on the engine's
    word, finds exactly what the record validators find on the full records of the same
    cuts: nothing."""
    written = _written_block_rows(monkeypatch)
    for seed in SEEDS:
        engine = _checked_twice(_workload(seed, "ms"), VllmV1Policy({}))
        assert engine.findings == [], seed
    assert set(written) == {BlockRow} and len(written) > 200, (set(written), len(written))


class _Tamper(VllmV1Policy):
    """vllm-v1 that, from cut `at` on, changes its first selected decode row of a running
    request after planning (the same change whether the row is a `BlockRow` or not)."""

    def __init__(self, at: int, how: str, hits: list[int]) -> None:
        super().__init__({})
        self.at = at
        self.how = how
        self.hits = hits

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        super().choose(view, plan)
        if view.iteration < self.at:
            return
        for item in plan.items:
            if item.phase is Phase.DECODE_ROW and item.req in view.running:
                break
        else:
            return
        self.hits[type(item) is BlockRow] += 1
        if self.how == "width":
            item.end += 1
        elif self.how == "snapshot":
            item.snapshot -= 1
        elif self.how == "phase":
            item.phase = Phase.PREFILL_CHUNK
        elif self.how == "start":
            item.start -= 1
        elif self.how == "key":
            item.key = (-1, *item.key)
        elif self.how == "key-late":  # sorted after the rows it ranks ahead of
            item.key = (1 << 62, *item.key)
        elif self.how == "twice":
            plan.select(item.req, 1)


@pytest.mark.parametrize(
    ("how", "code"),
    [
        ("width", "PLAN.DECODE.MULTI_ROW"),
        ("snapshot", "PLAN.SNAPSHOT.STALE"),
        ("phase", "PLAN.PHASE.FORGED"),
        ("start", "PLAN.INTERVAL.BEFORE_FRONTIER"),
        ("key", "PLAN.TIE_BREAK.FORGED"),
        ("key-late", "PLAN.TIE_BREAK.ORDER"),
        ("twice", "PLAN.REQUEST.DUPLICATE"),
    ],
)
@pytest.mark.instruments
def test_a_tampered_block_row_is_caught_as_on_the_per_iteration_path(how: str, code: str) -> None:
    """A policy that changes a decode row it took (as a block on the fast path, row by row on
    the per-iteration path) is stopped by both paths with the same findings at the same
    iteration, and the finding names the change."""
    hits = [0, 0]  # (ordinary items, block rows) tampered with
    caught: set[str] = set()
    for seed in SEEDS:
        wl = _workload(seed, "ms")
        for at in (3, 11, 40):
            if _alike_on_both_paths(wl, lambda at: _Tamper(at, how, hits), at, seed):
                engine = Engine(
                    wl,
                    _Tamper(at, how, [0, 0]),
                    _cost("roofline"),
                    validation=Validation.CONTRACT,
                    trust_stretch_claim=True,
                )
                engine.run()
                caught |= {f.code for f in engine.findings}
    assert hits[1] > 10, hits  # the fast path's block rows were among the tampered rows
    assert code in caught, caught


@pytest.mark.instruments
def test_an_executor_defect_on_a_vouched_row_is_a_result_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An executor that, once, emits two tokens for a decode row's one is caught by the
    result check at that iteration, with the same findings on both paths. The fast path picks
    the row (the first decode row, from iteration `at` on, of a request that stays running: a
    row of the plan's decode block (`Plan.block`), or a block row written out, when the
    policy took a block there); the per-iteration path corrupts the same request's row at
    the same iteration."""
    real = Engine._serve
    at = [0]
    target: list[tuple[int, str]] = []  # (iteration, request) the fast path corrupted
    hits = [0, 0]  # (ordinary items, block rows) corrupted on the fast path

    def serve(engine: Engine, plan: Any, start: float) -> Executed:
        step = real(engine, plan, start)
        fast = engine.stretches
        if fast and (target or engine.iteration < at[0]):
            return step
        rows = [(r, True) for r in plan.block]  # (decode rows, in the plan's order)
        rows += [
            (it.req, type(it) is BlockRow) for it in plan.items if it.phase is Phase.DECODE_ROW
        ]
        for r, in_block in rows:
            if r.terminal:
                continue
            if fast:
                target.append((engine.iteration, r.rid))
                hits[in_block] += 1
            elif target[0] != (engine.iteration, r.rid):
                continue
            r.e += 1
            break
        return step

    monkeypatch.setattr(Engine, "_serve", serve)
    caught = 0
    for seed in SEEDS:
        wl = _workload(seed, "ms")
        for at[0] in (3, 11, 40):
            target.clear()
            fast = _run(wl, VllmV1Policy({}), _cost("roofline"), stretches=True)
            if not target:
                continue
            slow = _run(wl, VllmV1Policy({}), _cost("roofline"), stretches=False)
            got = [(f.code, f.iteration, f.message) for f in fast.findings]
            assert got == [(f.code, f.iteration, f.message) for f in slow.findings], seed
            assert got[0][:2] == ("RESULT.OUTPUT_CLOCK.WRONG", target[0][0]), got
            caught += 1
    assert hits[1] > 5 and caught > 20, (hits, caught)


class _SelfVouch(VllmV1Policy):
    """vllm-v1 that offers itself every running request as a decode block at every cut, a
    chunking request included: its rows are not the engine's, so none is vouched for."""

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        if view.running:
            plan.offer_block(len(view.running), 0)
        super().choose(view, plan)


@pytest.mark.instruments
def test_a_block_the_policy_offers_itself_is_checked_in_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its rows are ordinary items (no `BlockRow`), and a row it takes that is not decode
    work (a chunking request's) is a plan finding."""
    written = _written_block_rows(monkeypatch)
    codes: set[str] = set()
    for seed in SEEDS:
        engine = Engine(
            _workload(seed, "ms"),
            _SelfVouch({}),
            _cost("roofline"),
            validation=Validation.CONTRACT,
            trust_stretch_claim=True,
        )
        engine.run()
        codes |= {f.code for f in engine.findings}
    assert written and set(written) == {PlanItem}, set(written)
    assert codes & {"PLAN.PHASE.FORGED", "PLAN.INTERVAL.BEYOND_PROMPT"}, codes


class _ReOffer(VllmV1Policy):
    """vllm-v1 that, at every cut where the engine offered a block, offers the same block
    again itself (the same `(n, need)`): the offer is then the policy's, not vouched for."""

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        if plan.block_offer:
            plan.offer_block(*plan.offer())
        super().choose(view, plan)


@pytest.mark.instruments
def test_the_engines_block_offered_again_by_the_policy_is_not_vouched_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The vouch comes only with the builder the engine makes (`vouched_block`): any offer
    the policy makes withdraws it, so the rows are ordinary items, checked in full, with the
    same findings (none) as on the per-iteration path."""
    written = _written_block_rows(monkeypatch)
    for seed in SEEDS[:10]:
        wl = _workload(seed, "ms")
        fast = _run(wl, _ReOffer({}), _cost("roofline"), stretches=True, trust_stretch_claim=True)
        slow = _run(wl, _ReOffer({}), _cost("roofline"), stretches=False)
        assert [f.code for f in fast.findings] == [f.code for f in slow.findings] == [], seed
    assert len(written) > 50 and set(written) == {PlanItem}, (len(written), set(written))
