"""Reservation policies in the replay engine (Loop 5 live): maximum, point, quantile, watermark."""

from __future__ import annotations

import json
from typing import Any

import pytest
from repo_paths import EVIDENCE

from cbaudit.policies.registry import POLICIES
from cbaudit.policies.reservation import ReservationPolicy
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.workload import Workload, load_workload, workload_from_data

WORKLOAD = EVIDENCE / "m5-2-continuous-batching" / "loop5" / "reservation.workload.yaml"


def _replay(mode: str, wl: Workload | None = None, **opts: Any) -> tuple[Any, dict[str, Any]]:
    policy = POLICIES.create(f"reservation-{mode}", {"ceiling_rows": 44, **opts})
    run = Engine(wl or load_workload(WORKLOAD), policy, UnitCostModel()).run()
    assert run.stop_reason == "completed" and run.findings == []
    assert isinstance(policy, ReservationPolicy)
    return run, policy.report()


def test_modes_trade_unused_rows_for_recovery() -> None:
    """Maximum never extends (26 unused rows); point extends and names a preemption intent."""
    run_max, rep_max = _replay("maximum")
    run_pt, rep_pt = _replay("point")
    run_q, rep_q = _replay("quantile")
    run_w, rep_w = _replay("watermark", watermark_rows=4)
    assert (rep_max["extension_rows"], rep_max["preemption_intents"]) == (0, 0)
    assert rep_max["unused_rows_at_finish"] == 26
    assert rep_max["unused_bytes_at_finish"] == 26 * 131072
    assert (rep_pt["extension_rows"], rep_pt["preemption_intents"], run_pt.preemptions) == (
        15,
        1,
        1,
    )
    assert (rep_q["extension_rows"], rep_q["preemption_intents"]) == (1, 0)
    assert rep_w["peak_reserved_rows"] <= 40 < rep_q["peak_reserved_rows"]
    assert [r.iterations for r in (run_max, run_pt, run_q, run_w)] == [24, 14, 18, 24]


@pytest.mark.parametrize("mode", ["maximum", "point", "quantile", "watermark"])
def test_fast_path_agrees_with_the_contract_path(mode: str) -> None:
    """Every mode replays cleanly on the fast path with the same metrics as the contract path."""
    from cbaudit.sim.metrics import summarize

    opts = {"watermark_rows": 4} if mode == "watermark" else {}
    out = []
    for validation in (Validation.CONTRACT, Validation.FAST):
        policy = POLICIES.create(f"reservation-{mode}", {"ceiling_rows": 44, **opts})
        run = Engine(load_workload(WORKLOAD), policy, UnitCostModel(), validation=validation).run()
        assert run.findings == [] and run.stop_reason == "completed"
        metrics = summarize(run)
        metrics.pop("validation")
        out.append(metrics)
    assert out[0] == out[1]


def test_forecasts_never_read_hidden_truth() -> None:
    """Changing every hidden length leaves the trace identical until a request first stops."""

    class Sink:
        def __init__(self) -> None:
            self.plans: list[str] = []

        def write(self, kind: str, data: Any) -> None:
            if kind == "plan":
                self.plans.append(json.dumps(data, sort_keys=True))

    base = load_workload(WORKLOAD)
    data = base.to_manifest(include_hidden=True)
    data["fixture_only_hidden_truth"]["realized_output_tokens"] = {
        rid: 12 for rid in data["fixture_only_hidden_truth"]["realized_output_tokens"]
    }
    moved = workload_from_data(data, "moved.yaml")
    sinks, stops = [], []
    for wl in (base, moved):
        sink = Sink()
        policy = POLICIES.create("reservation-point", {"ceiling_rows": 44})
        run = Engine(wl, policy, UnitCostModel(), validation=Validation.OFF, trace=sink).run()
        sinks.append(sink)
        stops.append(min(st.finished for st in run.stats if st.finished is not None))
    first_stop = int(min(stops))  # unit clock: a request stopping at tick t ends iteration t
    assert first_stop >= 3
    assert sinks[0].plans[:first_stop] == sinks[1].plans[:first_stop]
    assert sinks[0].plans != sinks[1].plans  # the hidden lengths do matter after a stop


def test_request_that_can_never_fit_is_rejected() -> None:
    """A reservation larger than the soft ceiling is rejected, not left to block the queue."""
    data = load_workload(WORKLOAD).to_manifest(include_hidden=True)
    run, rep = _replay("maximum", workload_from_data(data, "w.yaml"), ceiling_rows=14)
    assert rep["rejected"] == 6
    assert {st.finish_reason for st in run.stats} == {"rejected"}


@pytest.mark.parametrize(
    ("mode", "options", "message"),
    [
        ("watermark", {"ceiling_rows": 10}, "watermark_rows"),
        ("point", {"ceiling_rows": 10, "watermark_rows": 2}, "only to reservation-watermark"),
        ("point", {"ceiling_rows": 10, "point_fraction": 1.5}, "point_fraction"),
        ("maximum", {"ceiling_rows": 0}, "ceiling_rows"),
        ("maximum", {"ceiling": 10}, "unknown policy options"),
    ],
)
def test_bad_options_are_refused(mode: str, options: dict[str, Any], message: str) -> None:
    """Illegal reservation options raise ValueError naming the option."""
    with pytest.raises(ValueError, match=message):
        POLICIES.create(f"reservation-{mode}", options)


def test_registry_has_every_mode() -> None:
    """The four reservation modes, least-slack and bounded-admission are registered."""
    for pid in (
        "reservation-maximum",
        "reservation-point",
        "reservation-quantile",
        "reservation-watermark",
        "least-slack",
        "bounded-admission",
    ):
        assert pid in POLICIES
