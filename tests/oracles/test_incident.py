"""The lesson's incident replayed: the counters that separate recompute thrashing from compute."""

from __future__ import annotations

from typing import Any

import pytest
from repo_paths import M52, declare, run_declared

from cbaudit.checks.context import GateContext
from cbaudit.checks.parse import run_entry
from cbaudit.io import load_document
from cbaudit.model import CheckStatus, InputError
from cbaudit.oracles.fairness.replay import FairnessObserver
from cbaudit.oracles.preemption.incident import IncidentObserver, incident_report
from cbaudit.oracles.preemption.kinds import INCIDENT_REPLAY
from cbaudit.sim.workload import load_workload

BUNDLE = M52
LOOP = BUNDLE / "lesson-incident"


def _ctx() -> GateContext:
    return GateContext(
        base_dir=LOOP,
        manifest="lesson-incident/checks.yaml",
        pointer="/checks/0",
        bundle_root=BUNDLE,
    )


def _spec(**extra: Any) -> dict[str, Any]:
    doc = load_document(LOOP / "checks.yaml")
    spec = dict(doc.data["checks"][0])
    spec.pop("expected")
    spec.update(extra)
    return spec


@pytest.fixture(scope="module")
def result() -> Any:
    [res] = run_entry(INCIDENT_REPLAY, _spec(), _ctx())
    return res


def test_declared_check_passes() -> None:
    """The bundle's incident check passes against its expected report."""
    doc = load_document(LOOP / "checks.yaml")
    item = doc.data["checks"][0]
    spec = declare(item, LOOP, BUNDLE, doc.path)
    assert [r.outcome for r in run_declared(spec)] == [CheckStatus.PASSED]


def test_no_budget_thrashes(result: Any) -> None:
    """Without a token budget the replay preempts and its recomputed-token ratio rises."""
    v = result.metrics["variants"]["no-token-budget"]
    assert v["num_preemptions"] == 3
    assert v["recomputed_tokens"] > 0 and v["recomputed_token_ratio_rising"] is True
    assert v["recomputed_tokens"] == v["engine_recompute_tokens"]
    assert v["max_step_tokens"] > 4096  # unchunked prompts share one step
    assert result.findings == ()


def test_budget_512_does_not(result: Any) -> None:
    """With a 512-token budget the same burst has no preemption and no recomputed rows."""
    v = result.metrics["variants"]["token-budget-512"]
    assert (v["num_preemptions"], v["recomputed_tokens"], v["h2_signature"]) == (0, 0, False)
    assert v["max_step_tokens"] <= 512
    assert v["requests_finished"] == 148


def test_swap_variant_preempts_without_recompute(result: Any) -> None:
    """Preemption by swap keeps the preemptions but recomputes no row; it moves bytes."""
    v = result.metrics["variants"]["no-token-budget-swap"]
    assert (v["num_preemptions"], v["recomputed_tokens"]) == (3, 0)
    assert v["preemption_model"]["mode"] == "swap"
    assert v["preemption_model"]["swap_out_bytes"] > 0


def test_report_names_the_distinguishing_counter(result: Any) -> None:
    """The report names num_preemptions and recomputed_token_ratio as H2's counters."""
    m = result.metrics
    assert m["distinguishing_counters"] == ["num_preemptions", "recomputed_token_ratio"]
    assert m["hypotheses"]["H1_compute_saturation"]["evaluated"] is False


def test_wrong_expectation_is_a_finding() -> None:
    """Expecting no H2 signature without a budget gives INCIDENT.EXPECT.MISMATCH."""
    spec = _spec(
        variants=[{"label": "no-token-budget", "budgets": {"token_budget": 1000000}}],
        expect={"no-token-budget": {"h2_signature": False}},
        window=50,
    )
    spec.pop("assert")
    [res] = run_entry(INCIDENT_REPLAY, spec, _ctx())
    assert [f.code for f in res.findings] == ["INCIDENT.EXPECT.MISMATCH"]


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ({"variants": []}, "GATE.SPEC.INVALID"),
        ({"window": 0}, "GATE.SPEC.INVALID"),
        ({"validation": "maybe"}, "GATE.SPEC.INVALID"),
        ({"windw": 5}, "GATE.SPEC.UNKNOWN_FIELD"),
        ({"expect": {"nope": {}}}, "INCIDENT.SPEC.INVALID"),
    ],
)
def test_bad_spec_is_located(extra: dict[str, Any], code: str) -> None:
    """An unusable incident spec is refused with its code (the schema's, or a label that names
    no variant: INCIDENT.SPEC.INVALID), located at the check."""
    with pytest.raises(InputError) as info:
        run_entry(INCIDENT_REPLAY, _spec(**extra), _ctx())
    assert info.value.findings[0].code == code
    assert (info.value.findings[0].location.pointer or "").startswith("/checks/0/")


def test_incident_observer_counts_rows_below_the_high_frontier() -> None:
    """Rows below the highest frontier a request already computed are recompute."""
    obs = IncidentObserver()

    def item(start: int, end: int, before: int) -> dict[str, Any]:
        return {
            "request_id": "r",
            "request_generation": 0,
            "completed": {"start": start, "end": end},
            "before": {"computed_tokens": before},
        }

    obs.write("result", {"items": [item(0, 6, 0)]})
    obs.write("plan", {"queue_intent": [{"request_id": "r", "action": "preempt"}]})
    obs.write("result", {"items": [item(0, 7, 0)]})
    report = incident_report(obs, window=1)
    assert (report["num_preemptions"], report["recomputed_tokens"]) == (1, 6)
    assert report["recomputed_token_ratio"]["fraction"] == "6/13"


def test_fairness_observer_excludes_rebuild_from_service() -> None:
    """A rebuild of rows already counted publishes no fairness service."""
    wl = load_workload(BUNDLE / "loop8/flood.workload.yaml")
    obs = FairnessObserver(wl, 1, 2)
    view = {"request_id": "A0", "request_generation": 0, "computed_tokens": 0, "ready": True}
    obs.write("state", {"requests": [{**view, "terminal": False}]})

    def result(before: int, after: int) -> dict[str, Any]:
        return {
            "items": [
                {
                    "request_id": "A0",
                    "request_generation": 0,
                    "before": {"computed_tokens": before},
                    "after": {"computed_tokens": after},
                }
            ]
        }

    obs.write("result", result(0, 2))
    obs.write("result", result(0, 2))  # rebuild after a recompute preemption
    assert obs.series.final["A"] == 2
    assert obs.series.completed[1] == {}
