"""The stretch walk (cbaudit.sim.stretch._walk) against a plain one-iteration-at-a-time walk
written from its specification, on the cases where an off-by-one would hide: an arrival
exactly at a step's end, a K/V shortage exactly at a block boundary (decodes and a chunk), a
series switch at 0, inside or past the stretch, a clock in ticks (ms per unit != 1), the slot
clock. Every end time must be the same float, the stretch must stop at the same iteration, and
the free pool before the last iteration and after it must be the same. (Any faster walk, for
example one in closed form, must keep passing this.)
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from cbaudit.sim import stretch
from cbaudit.sim.cost_models import StepSeries

# the walk is driven by stand-in engines (SimpleNamespace), which a compiled function refuses
pytestmark = pytest.mark.instruments


def _reference(
    now: float,
    k_max: int,
    nxt: float,
    hist: list[int] | None,
    free: int | None,
    series: StepSeries,
    chunk: tuple[int, int] | None,
    bs: int | None,
    mpu: float,
) -> tuple[list[float], int | None, int | None] | None:
    times: list[float] = []
    free_prev = free
    k = 0
    c_end = w = held = 0
    if chunk is not None and hist is not None:
        assert bs is not None
        c_end, w = chunk
        held = -(-c_end // bs)
    num, n1, den, switch, then_n0, then_n1, then_den = series
    if switch is None:
        switch = -1
    while k < k_max:
        if nxt <= now:
            break
        if hist is not None:
            assert bs is not None and free is not None
            need = hist[(-k) % bs]
            if w:
                c_end += w
                grown = -(-c_end // bs)
                need += grown - held
                held = grown
            if need > free:
                break
            free_prev = free
            free -= need
        if k == switch:
            num, n1, den = then_n0 + k * then_n1, then_n1, then_den
        dt = num / den
        if mpu != 1.0:
            dt = dt / mpu
        now = now + dt
        times.append(now)
        num += n1
        k += 1
    if k < 1:
        return None
    return times, free_prev, free


def _walk(
    now: float,
    k_max: int,
    nxt: float,
    hist: list[int] | None,
    free: int | None,
    series: StepSeries,
    chunk: tuple[int, int] | None,
    bs: int | None,
    mpu: float,
) -> Any:
    engine = SimpleNamespace(now=now, ms_per_unit=mpu, budgets=SimpleNamespace(kv_block_size=bs))
    return stretch._walk(engine, k_max, nxt, hist, free, series, None, chunk)  # type: ignore[arg-type]


def _series(rnd: random.Random) -> StepSeries:
    den = rnd.randrange(10**9, 10**13)
    n0 = rnd.randrange(den, 40 * den)
    n1 = rnd.choice([0, rnd.randrange(1, den // 1000 + 2)])
    switch = rnd.choice([None, 0, 1, rnd.randrange(1, 200), -3])
    then_den = rnd.randrange(10**9, 10**13)
    then_n0 = rnd.randrange(then_den, 40 * then_den)
    then_n1 = rnd.randrange(0, then_den // 100 + 2)
    return StepSeries(n0, n1, den, switch, then_n0, then_n1, then_den)


def _case(seed: int) -> tuple[Any, ...]:
    rnd = random.Random(seed)
    series = _series(rnd)
    now = rnd.choice(
        [0.0, rnd.uniform(0, 1e3), rnd.uniform(1e5, 5e6), float(rnd.randrange(1, 10**6))]
    )
    mpu = rnd.choice([1.0, 1.0, 0.001, 2.5, 1 / 3])
    k_max = rnd.choice([1, 2, rnd.randrange(1, 40), rnd.randrange(40, 3000)])
    bs = rnd.choice([None, 1, 16, rnd.randrange(2, 40)])
    hist = free = chunk = None
    if bs is not None and rnd.random() < 0.8:
        hist = [rnd.choice([0, 0, 1, rnd.randrange(0, 9)]) for _ in range(bs)]
        if not any(hist):
            hist[rnd.randrange(bs)] = 1
        if rnd.random() < 0.4:
            chunk = (rnd.randrange(0, 5000), rnd.randrange(1, 600))
        free = rnd.randrange(0, 60)
    # the arrival: none, far, or exactly at the end of one of the reference's steps
    ref_all = _reference(
        now, k_max, float("inf"), hist, None if hist is None else 10**18, series, chunk, bs, mpu
    )
    nxt = float("inf")
    pick = rnd.random()
    if ref_all is not None and pick < 0.5:
        nxt = rnd.choice(ref_all[0])
    elif pick < 0.6:
        nxt = now  # at the first cut
    elif pick < 0.8:
        nxt = now + rnd.uniform(0, 500)
    if hist is not None and ref_all is not None and rnd.random() < 0.5:
        # a pool that runs out exactly at some iteration's blocks
        used = 10**18 - ref_all[2]  # type: ignore[operator]
        j = rnd.randrange(len(ref_all[0]))
        part = _reference(now, j + 1, float("inf"), hist, 10**18, series, chunk, bs, mpu)
        assert part is not None
        free = 10**18 - part[2] + rnd.choice([-1, 0, 0])  # type: ignore[operator]
        free = max(free, 0)
        del used
    return now, k_max, nxt, hist, free, series, chunk, bs, mpu


@pytest.mark.parametrize("seed", range(400))
def test_the_walk_equals_its_specification_on_edge_cases(seed: int) -> None:
    args = _case(seed)
    want = _reference(*args)
    got = _walk(*args)
    assert got == want
    if got is not None:  # the same floats, bit for bit (== would let 0.0 match -0.0)
        assert [t.hex() for t in got[0]] == [t.hex() for t in want[0]]  # type: ignore[index]


@pytest.mark.parametrize("seed", range(200))
def test_the_walk_with_an_ample_pool_equals_its_specification(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decode stretch under a millisecond clock whose pool holds every block it can take
    (the walk leaves out the pool test and counts the blocks at the end)."""
    now, k_max, nxt, hist, free, series, _, bs, _ = _case(seed)
    rnd = random.Random(seed)
    bs = bs or rnd.randrange(1, 40)
    if hist is None or len(hist) != bs:
        hist = [rnd.choice([0, 1, rnd.randrange(0, 9)]) for _ in range(bs)]
    k_max = min(k_max, 3000)
    # exactly the blocks k_max iterations can take at most (or more)
    free = sum(hist) * -(-k_max // bs) + rnd.choice([0, 0, 1, 10**6])
    args = (now, k_max, nxt, hist, free, series, None, bs, 1.0)
    ample: list[int] = []
    real = stretch._walk_ample

    def spy(*a: Any) -> Any:
        ample.append(1)
        return real(*a)

    monkeypatch.setattr(stretch, "_walk_ample", spy)
    got = _walk(*args)
    assert ample  # (the case under test: the pool test left out)
    want = _reference(*args)
    assert got == want
    if got is not None:
        assert [t.hex() for t in got[0]] == [t.hex() for t in want[0]]  # type: ignore[index]


def test_an_arrival_exactly_at_a_step_end_ends_the_stretch_after_that_step() -> None:
    series = StepSeries(3, 0, 2, None, 3, 0, 2)  # every step 1.5
    got = _walk(10.0, 100, 16.0, None, None, series, None, None, 1.0)
    assert got is not None
    assert got[0] == [11.5, 13.0, 14.5, 16.0]  # the step ending at 16.0 runs; the next cut admits
    assert _walk(10.0, 100, 10.0, None, None, series, None, None, 1.0) is None
    # just after a step's end: one step more
    got = _walk(10.0, 100, 16.000000001, None, None, series, None, None, 1.0)
    assert got is not None and got[0][-1] == 17.5


def test_a_kv_shortage_exactly_at_a_block_boundary() -> None:
    series = StepSeries(1, 0, 1, None, 1, 0, 1)
    bs = 4
    hist = [2, 0, 0, 1]  # iteration j takes hist[-j % 4]: 2, 1, 0, 0, 2, 1, 0, 0, ...
    # free 3: iterations 0..3 take 3 blocks (free 3, 1, 0, 0, 0); iteration 4 needs 2: it
    # does not run (returned: the end times, the pool before the last iteration and after it)
    got = _walk(0.0, 50, float("inf"), hist, 3, series, None, bs, 1.0)
    assert got == ([1.0, 2.0, 3.0, 4.0], 0, 0)
    # one block more: iteration 4 still cannot take 2 (free 4, 2, 1, 1, 1)
    got = _walk(0.0, 50, float("inf"), hist, 4, series, None, bs, 1.0)
    assert got == ([1.0, 2.0, 3.0, 4.0], 1, 1)
    # exactly enough for iteration 4 (free 5, 3, 2, 2, 2, 0); iteration 5 needs 1
    got = _walk(0.0, 50, float("inf"), hist, 5, series, None, bs, 1.0)
    assert got == ([1.0, 2.0, 3.0, 4.0, 5.0], 2, 0)
    # enough for every iteration up to k_max (3 blocks per 4 iterations: 36 for the first 48)
    got = _walk(0.0, 50, float("inf"), hist, 3 * 13, series, None, bs, 1.0)
    assert got is not None and len(got[0]) == 50 and got[1:] == (3 * 13 - 36 - 2, 0)
    # a chunk of width 3 from row 2 (one block held) ends at rows 5, 8, 11, 14: it takes
    # 1, 0, 1, 1 blocks; with 2 free the fourth chunk does not run
    got = _walk(0.0, 50, float("inf"), [0, 0, 0, 0], 2, series, (2, 3), bs, 1.0)
    want = _reference(0.0, 50, float("inf"), [0, 0, 0, 0], 2, series, (2, 3), bs, 1.0)
    assert got == want == ([1.0, 2.0, 3.0], 1, 0)


def test_a_series_switch_inside_a_batch_and_a_tick_clock() -> None:
    # the memory term until step 5, then the compute term (larger, growing)
    series = StepSeries(7, 1, 3, 5, 2, 3, 1)
    for mpu in (1.0, 0.25, 1 / 3):
        want = _reference(100.0, 40, float("inf"), None, None, series, None, None, mpu)
        got = _walk(100.0, 40, float("inf"), None, None, series, None, None, mpu)
        assert got == want and got is not None
        assert [t.hex() for t in got[0]] == [t.hex() for t in want[0]]  # type: ignore[index]
        # an arrival past the switch ends the stretch after the step that reaches it
        nxt = want[0][30]  # type: ignore[index]
        got = _walk(100.0, 40, nxt, None, None, series, None, None, mpu)
        assert got is not None and len(got[0]) == 31


def test_the_slot_clock_walk() -> None:
    got = _walk(7.0, 5, 9.5, None, None, stretch._SLOT, None, None, 1.0)
    assert got == ([8.0, 9.0, 10.0], None, None)
