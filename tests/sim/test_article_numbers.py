"""The seeds' numbers, asserted directly against replays (not only against expected files)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cbaudit.sim.engine import Validation
from cbaudit.sim.metrics import occupancy
from cbaudit.sim.montecarlo import static_efficiency
from cbaudit.sim.workload import load_workload
from tests.sim.helpers import BUNDLE, replay

ABC = BUNDLE / "loop3" / "abc.workload.yaml"
LESSON = BUNDLE / "lesson" / "four-slot.workload.yaml"


def test_loop3_fixed_batch_occupancy() -> None:
    """Fixed batch on two slots: 11 iterations, 13/22 overall, first cohort 10/16."""
    run, m = replay(load_workload(ABC), "static")
    assert run.iterations == 11
    assert Fraction(m["slot_occupancy"]["fraction"]) == Fraction(13, 22)
    assert round(m["slot_occupancy"]["value"], 3) == 0.591
    assert Fraction(occupancy(run, 8)["fraction"]) == Fraction(10, 16)
    assert m["slot_occupancy"]["idle_slot_iterations"] == 9


def test_loop3_iteration_refill_and_first_token() -> None:
    """Iteration refill ends at cut 8 with 13/16; C's prefill emits token 1 at cut 3."""
    run, m = replay(load_workload(ABC), "orca")
    assert run.iterations == 8
    assert m["slot_occupancy"]["fraction"] == "13/16"
    assert m["slot_occupancy"]["value"] == 0.8125
    c = m["requests"]["C"]
    assert c["first_run_iteration"] == 3 and c["ttft"] == 1  # arrival 2, first token at cut 3
    assert m["requests"]["A"]["output_tokens"] == 2 and m["requests"]["B"]["output_tokens"] == 8


def test_lesson_static_horizons_and_waits() -> None:
    """Static: 230/320 on [1,80], 350/800 on [1,200]; r5/r6 wait 180/150 ticks, run at 201."""
    run, m = replay(load_workload(LESSON), "static", windows=(80, 200))
    assert occupancy(run, 80)["ratio"] == "230/320"
    assert occupancy(run, 80)["value"] == 0.71875
    assert occupancy(run, 200)["ratio"] == "350/800"
    assert occupancy(run, 200)["value"] == 0.4375
    assert m["requests"]["r5"]["queue_delay"] == 180
    assert m["requests"]["r6"]["queue_delay"] == 150
    assert m["requests"]["r5"]["first_run_iteration"] == 201
    assert m["requests"]["r6"]["first_run_iteration"] == 201


def test_lesson_continuous_horizon() -> None:
    """Continuous: 300/320 = 93.75% on [1,80]; r5 and r6 first run at 21 and 51."""
    run, m = replay(load_workload(LESSON), "orca")
    assert occupancy(run, 80)["ratio"] == "300/320"
    assert occupancy(run, 80)["idle_slot_iterations"] == 20
    assert m["requests"]["r5"]["first_run_iteration"] == 21
    assert m["requests"]["r6"]["first_run_iteration"] == 51
    assert m["requests"]["r5"]["queue_delay"] == 0


@pytest.mark.parametrize(("batch", "batches"), [(8, 2000), (32, 600), (128, 400)])
def test_lecture_static_efficiency_within_three_percent(batch: int, batches: int) -> None:
    """Seeded geometric replay: static efficiency within 3% of 1 / (ln B + 0.577)."""
    res = static_efficiency(batch, batches, 30.0, 2024, Validation.OFF)
    assert res["relative_error"] < 0.03
    assert res["findings"] == []
