"""Loop 5 (article 0x06): admission under output uncertainty, reservation records, hidden truth."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo_paths import EVIDENCE

from cbaudit.model import CheckStatus, EvidenceClass, InputError
from cbaudit.oracles import admission as adm
from cbaudit.oracles.fixtures import load_fixture

LOOP5 = EVIDENCE / "m5-2-continuous-batching" / "loop5"
FIXTURE = LOOP5 / "admission_uncertainty.yaml"
NEGATIVES = sorted((LOOP5 / "negative").glob("*.yaml"))


def _run(path: Path = FIXTURE) -> Any:
    return adm.run(load_fixture(path, root=LOOP5))


def test_article_numbers_for_every_policy() -> None:
    """28-row ceiling, 8 used: max unused 5 rows; point -11; p90 -3; breach 1 row; C:0 named."""
    result = _run()
    assert result.outcome is CheckStatus.PASSED, [f.render() for f in result.findings]
    assert result.evidence_class is EvidenceClass.DERIVED
    m = result.metrics
    assert m["ceiling"]["hard"] == "3.5 MiB" and m["abi"]["bytes_per_row"] == 131072
    p = m["policies"]
    mx = p["maximum"]
    assert (mx["admitted"], mx["deferred"]) == (["A:0", "B:0"], ["C:0"])
    assert (mx["over_reservation_rows"], mx["over_reservation"]) == (5, "640 KiB")
    pt = p["point"]
    assert (pt["under_reservation_rows"], pt["under_reservation"]) == (11, "1.375 MiB")
    q = p["quantile-p90"]
    assert (q["under_reservation_rows"], q["under_reservation"]) == (3, "384 KiB")
    for name in ("point", "quantile-p90"):
        assert p[name]["realized_total_rows"] == 29
        assert (p[name]["hard_breach_rows"], p[name]["hard_breach_bytes"]) == (1, 131072)
        assert p[name]["preemption_intent"]["request"] == "C:0"
        assert p[name]["preemption_intent"]["release_result"] is None
    w = p["watermark"]
    assert (w["soft_ceiling_rows"], w["realized_total_rows"], w["hard_breach_rows"]) == (24, 22, 0)
    assert w["recovery"] == "EXTENSION_WITHIN_SOFT_CEILING" and w["preemption_intent"] is None
    assert w["extensions"] == [{"request": "A:0", "extension_rows": 1}]


def test_first_token_rule_for_running_and_new_requests() -> None:
    """Running: max(G - E, 0); new: uncached prompt + max(G - 1, 0)."""
    assert adm.future_rows(9, 1, new=False) == 8
    assert adm.future_rows(1, 3, new=False) == 0
    assert adm.future_rows(5, 0, new=True, uncached_prompt=6) == 10
    assert adm.future_rows(0, 0, new=True, uncached_prompt=6) == 6
    assert adm.soft_ceiling(28, 4) == 24
    assert adm.human_bytes(adm.rows_bytes(11)) == "1.375 MiB"
    with pytest.raises(ValueError):
        adm.future_rows(-1, 0, new=False)


def _view(rid: str, forecast: int, *, new: bool = False, uncached: int = 0) -> adm.RequestView:
    return adm.RequestView(rid, 0, 0, 0 if new else 1, new, uncached, 20, forecast, forecast)


def test_fifo_break_and_separate_records() -> None:
    """A refused request stops the scan; intents carry AllocationRequests, never block ids."""
    ceiling = adm.Ceiling(hard_rows=10, reserved_rows=2, allocation_epoch=3)
    queue = [_view("A", 4), _view("B", 9), _view("C", 2), _view("N", 3, new=True, uncached=2)]
    plan = adm.plan_admission(adm.AdmissionPolicy("point", "point"), queue, ceiling, "v1")
    assert [d.outcome for d in plan.decisions] == [
        "ADMIT_INTENT",
        "DEFER_CAPACITY",
        "DEFER_FIFO_BREAK",
        "DEFER_FIFO_BREAK",
    ]
    first = plan.decisions[0]
    assert first.allocation_request is not None
    assert (first.allocation_request.owner, first.allocation_request.allocation_epoch) == (
        "M5.3",
        3,
    )
    assert first.allocation_request.requested_bytes == 3 * 131072
    assert all(d.physical_allocation_result is None for d in plan.decisions)
    assert plan.decisions[3].estimate.estimated_rows == 2 + 2  # uncached 2 + (3 - 1)
    assert plan.reserved_after_rows == 5


def test_online_plans_ignore_hidden_lengths(tmp_path: Path) -> None:
    """Changing every hidden length leaves every online plan byte-identical (metamorphic)."""
    data = yaml.safe_load(FIXTURE.read_text())
    base = _run().metrics["policies"]
    data["fixture_only_hidden_truth"]["realized_output_tokens"] = {"A": 2, "B": 10, "C": 1}
    data.pop("expect")
    moved = tmp_path / "moved.yaml"
    moved.write_text(yaml.safe_dump(data))
    other = adm.run(load_fixture(moved)).metrics["policies"]
    for name in ("maximum", "point", "quantile-p90", "watermark"):
        assert json.dumps(base[name]["plan"], sort_keys=True) == json.dumps(
            other[name]["plan"], sort_keys=True
        )
        assert base[name]["hidden_lengths_invariant"] is True
    assert base["oracle-hindsight"]["plan"] != other["oracle-hindsight"]["plan"]
    assert base["oracle-hindsight"]["label"].startswith("oracle")


def test_unlabelled_hidden_truth_reader_is_caught_by_behaviour() -> None:
    """A policy reading hidden truth without the oracle label fails twice: label and behaviour."""
    result = _run(LOOP5 / "negative" / "unlabelled_oracle.yaml")
    codes = {f.code for f in result.findings}
    assert {"ADMISSION.ORACLE.UNLABELLED", "ADMISSION.HIDDEN_TRUTH.PLAN_CHANGED"} <= codes
    assert result.outcome is CheckStatus.FAILED


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.stem)
def test_negative_fixture_produces_its_code(path: Path) -> None:
    """Every Loop 5 negative fixture is rejected with the code it declares, and located."""
    declared = yaml.safe_load(path.read_text())["expect_code"]
    try:
        findings = _run(path).findings
    except InputError as err:
        findings = err.findings
    hits = [f for f in findings if f.code == declared]
    assert hits, [f.render() for f in findings]
    assert all(f.location.file and f.location.pointer is not None for f in hits)


def test_loop5_has_the_article_negative_list() -> None:
    """The negatives cover leak, physical fields, ABI, watermark, ordering, max, oracle, budgets."""
    codes = {yaml.safe_load(p.read_text())["expect_code"] for p in NEGATIVES}
    assert {
        "ADMISSION.HIDDEN_TRUTH.LEAK",
        "ADMISSION.PHYSICAL.FIELD",
        "ADMISSION.ABI.REDERIVED",
        "ADMISSION.WATERMARK.ILLEGAL",
        "ADMISSION.FORECAST.ORDER",
        "ADMISSION.FORECAST.ABOVE_MAX",
        "ADMISSION.ORACLE.UNLABELLED",
        "ADMISSION.EXPECT.MISMATCH",
    } <= codes
    assert codes <= set(adm.CODES)


def test_schema_error_is_unusable_input(tmp_path: Path) -> None:
    """A fixture without a ceiling is unusable input with a located SCHEMA finding."""
    data = yaml.safe_load(FIXTURE.read_text())
    del data["ceiling"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as err:
        adm.run(load_fixture(bad))
    assert err.value.findings[0].code == "SCHEMA.REQUIRED"


def test_loop5_checks_pass_through_the_gate(cli: Any, tmp_path: Path) -> None:
    """The loop5 include file passes in a bundle, with its expected report unchanged."""
    shutil.copytree(LOOP5, tmp_path / "loop5")
    (tmp_path / "bundle.yaml").write_text(
        "schema_version: 1\nbundle: t\ntitle: t\ninclude: [loop5/checks.yaml]\n"
    )
    r = cli("gate", tmp_path, "-j", "1", "-q")
    assert r.code == 0, r.out + r.err
    assert "26 passed" in r.out


def test_emitted_records_fit_their_schemas() -> None:
    """Every decision fits `admission-decision`; a filled physical result does not."""
    from cbaudit.io.schemas import validate

    decisions = [d for p in _run().metrics["policies"].values() for d in p["plan"]["decisions"]]
    assert len(decisions) == 15
    for d in decisions:
        assert validate(d, "admission-decision") == []
    forged = {**decisions[0], "physical_allocation_result": {"block_ids": [4, 5]}}
    assert [f.code for f in validate(forged, "admission-decision")] == ["SCHEMA.TYPE"]
    assert validate(decisions[0]["estimate"], "reservation-estimate") == []
