"""The named steps of `run_bench`, without torch: a stand-in run records what it is asked."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from cbaudit.bench import runner
from cbaudit.bench.grid import GridPoint
from cbaudit.bench.runner import (
    RunConfig,
    _grid_point,
    _measure_grid,
    _measure_sentinel,
    _run_notes,
    _Sentinel,
    _sentinel_summary,
    sentinel_positions,
)
from cbaudit.bench.spec import parse_spec


class _Grid:
    def __init__(self, n: int, sentinel: str | None, repeats: int) -> None:
        self.points = tuple(
            GridPoint(f"p{i}", parse_spec(f"{i + 1}q1s64"), "grid") for i in range(n)
        )
        self.sentinel = parse_spec(sentinel) if sentinel else None
        self.sentinel_repeats = repeats


class _StandIn:
    """What the steps read from `_Run`; measuring records the point and its seed."""

    def __init__(self, grid: _Grid, *, budget_s: float = 100.0, elapsed: float = 0.0) -> None:
        self.grid = grid
        self.cfg = RunConfig(output=None, budget_s=budget_s, seed=7, fault=None)
        self.rng = random.Random(1)
        self.clock = elapsed
        self.measured: list[tuple[str, int]] = []
        self.notes = ["caller note"]
        self.on_gpu = False
        self.backend = "sdpa-loop"

    def elapsed(self) -> float:
        return self.clock

    def point_record(self, gp: GridPoint) -> dict[str, Any]:
        return {"id": gp.id, "status": "skipped_budget", "reason": None, "measure_order": None}

    def measure_point(self, gp: GridPoint, seed: int) -> dict[str, Any]:
        self.measured.append((gp.id, seed))
        median = 1.0 + len(self.measured) / 100
        return {**self.point_record(gp), "status": "ok", "median_ms": median, "stats": {"cv": 0.01}}


@pytest.fixture
def no_stop() -> Iterator[None]:
    """Every test starts and ends with no stop signal."""
    runner.STOP.clear()
    yield
    runner.STOP.clear()


@pytest.mark.parametrize(
    ("count", "repeats", "positions"),
    [(11, 3, {0, 5, 10}), (11, 0, set()), (1, 3, {0}), (4, 1, {0}), (10, 4, {0, 3, 6, 9})],
)
def test_sentinel_positions_spread_from_first_to_last(
    count: int, repeats: int, positions: set[int]
) -> None:
    """The sentinel is measured at evenly spread positions, first and last included."""
    assert sentinel_positions(count, repeats) == positions


def test_measure_grid_keeps_grid_order_and_brackets_with_the_sentinel(no_stop: None) -> None:
    """Points are measured in the seeded shuffled order, each with its own seed and its
    position; the records come back in grid order; the sentinel opens and closes the run."""
    run = _StandIn(_Grid(5, "4q1s64", 2))
    records, sentinel = _measure_grid(run, [].append)
    order = list(range(5))
    random.Random(1).shuffle(order)
    assert [r["id"] for r in records] == ["p0", "p1", "p2", "p3", "p4"]
    assert [(r["id"], r["measure_order"]) for r in records] == [
        (f"p{i}", order.index(i)) for i in range(5)
    ]
    assert run.measured == [
        ("sentinel", 7),
        *((f"p{i}", 7 * 1_000_003 + i) for i in order),
        ("sentinel", 7),
    ]
    assert sentinel.at == {0, 4} and len(sentinel.medians) == 2 and sentinel.cvs == [0.01, 0.01]


def test_grid_point_skips_after_a_signal_or_the_budget(no_stop: None) -> None:
    """A spent budget and a stop signal each skip the point with their own reason; nothing is
    measured and no progress is printed."""
    said: list[str] = []
    gp = _Grid(1, None, 0).points[0]
    spent = _StandIn(_Grid(1, None, 0), budget_s=1.0, elapsed=2.0)
    rec = _grid_point(spent, gp, 0, 0, 1, said.append)
    assert rec["reason"] == "time budget of 1.0 s spent" and rec["measure_order"] is None
    runner.STOP.set()
    rec = _grid_point(_StandIn(_Grid(1, None, 0)), gp, 0, 0, 1, said.append)
    assert rec["reason"] == "run stopped by a signal before this point"
    assert said == [] and spent.measured == []


def test_grid_point_measures_with_progress(no_stop: None) -> None:
    """A point within budget is measured, and progress names its position and spec."""
    said: list[str] = []
    run = _StandIn(_Grid(3, None, 0))
    rec = _grid_point(run, run.grid.points[2], 1, 2, 3, said.append)
    assert rec["status"] == "ok" and rec["measure_order"] == 1
    assert said == ["[2/3] p2 3q1s64"]


def test_sentinel_is_not_measured_past_the_budget(no_stop: None) -> None:
    """Past the budget the sentinel is left out; a median-less record adds nothing."""
    run = _StandIn(_Grid(1, "4q1s64", 3), budget_s=1.0, elapsed=2.0)
    sentinel = _Sentinel({0})
    _measure_sentinel(run, sentinel)
    assert run.measured == [] and sentinel.medians == []


def test_sentinel_summary_flags_drift() -> None:
    """Medians drifting past DRIFT_FRACTION are flagged; no sentinel gives no summary."""
    run = _StandIn(_Grid(1, "4q1s64", 3))
    summary = _sentinel_summary(run, _Sentinel({0}, [1.0, 1.0, 2.0], [0.01] * 3))
    assert summary is not None and summary["spec"] == "4q1s64" and summary["drift_flag"] is True
    assert _sentinel_summary(_StandIn(_Grid(1, None, 0)), _Sentinel(set())) is None


def test_run_notes_on_cpu_with_flex_fault_and_stop(no_stop: None) -> None:
    """A CPU run notes its limits first and flex's eager path, an injected fault and an early
    stop last, around the caller's notes and the fixed ones."""
    run = _StandIn(_Grid(1, None, 0))
    run.backend = "flex"
    run.cfg = RunConfig(output=None, fault="row_swap")
    runner.STOP.set()
    notes = _run_notes(run)
    assert notes[0].startswith("CPU run: float32") and notes[1] == "caller note"
    assert notes[-3:] == [
        "flex on CPU runs eager (unfused)",
        "deliberate packing defect injected: row_swap",
        "run stopped early by a signal; unmeasured points are skipped",
    ]


@pytest.mark.parametrize("without_cbaudit_io", [False, True])
def test_results_file_gets_the_mode_a_plain_open_would(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, without_cbaudit_io: bool
) -> None:
    """`write_atomically` (with cbaudit.io, and its fallback on a bare GPU machine without
    it) renames a 0600 temporary file into place: the results file gets open()'s mode under
    the umask, or keeps the mode of the file it replaces."""
    import os
    import sys

    if without_cbaudit_io:  # `import cbaudit.io.atomic` raises ImportError
        monkeypatch.setitem(sys.modules, "cbaudit.io.atomic", None)
    path = tmp_path / "results.json"
    old = os.umask(0o022)
    try:
        runner.write_atomically(path, "{}")
        assert path.stat().st_mode & 0o777 == 0o644
        path.chmod(0o640)
        runner.write_atomically(path, "{}\n")
        assert path.stat().st_mode & 0o777 == 0o640
        assert path.read_text() == "{}\n"
    finally:
        os.umask(old)
