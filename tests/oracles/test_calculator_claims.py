"""Kind `calculator_claim`: printed figures held to the calculators, tolerances, refusals."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from repo_paths import LECTURE4, declare, run_declared

from cbaudit.checks.targets import error_codes
from cbaudit.gate.runner import run_gate
from cbaudit.io import load_document
from cbaudit.model import CheckStatus
from cbaudit.oracles.calculator_claims import judge_list, matches

REGISTRY = LECTURE4 / "pins" / "formula_registry.yaml"
DECODE = {
    "model": "lecture4-dense-70b-fp16",
    "hardware": "lecture4-h100-sxm",
    "decode_rows": 32,
    "context": 2048,
    "prefill": 0,
}


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A bundle folder holding the lecture's formula registry."""
    (tmp_path / "pins").mkdir()
    shutil.copy(REGISTRY, tmp_path / "pins" / "formula_registry.yaml")
    return tmp_path


def _entry(figures: list[dict[str, Any]], **over: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": "c",
        "kind": "calculator_claim",
        "claim": "a figure of worked example 4.2",
        "evidence_class": "derived",
        "calculator": "step-time",
        "inputs": dict(DECODE),
        "expect": figures,
        "formulas": ["F05"],
        "registry": "pins/formula_registry.yaml",
    }
    entry.update(over)
    return entry


def _fig(output: str, printed: str, unit: str, tolerance: Any = "rounds") -> dict[str, Any]:
    return {"output": output, "printed": printed, "unit": unit, "tolerance": tolerance}


def _run(bundle: Path, entry: dict[str, Any]) -> tuple[CheckStatus, set[str]]:
    check = declare(entry, bundle, bundle)
    if check.spec is None:
        return CheckStatus.ERROR, {f.code for f in check.errors}
    (result,) = run_declared(check)
    return result.outcome, {f.code for f in result.findings}


@pytest.mark.parametrize(
    ("figure", "ok"),
    [
        (_fig("step_ms", "56.5", "ms"), True),  # 56.5308 rounds to 56.5
        (_fig("step_ms", "56.6", "ms"), False),  # more than half a unit off
        (_fig("step_ms", "0.0565", "s"), True),  # another unit of the same dimension
        (_fig("step_ms", "56.5", "ms", "exact"), False),  # 56.5 is not the exact value
        (_fig("total_flops", "4.6", "TFLOP", "one_unit"), True),  # 4.6518: within one unit
        (_fig("total_flops", "4.6", "TFLOP", "rounds"), False),  # but it rounds to 4.7
        (_fig("decode_linear_flops", "4480", "GFLOP", "exact"), True),  # 32 x 140 GFLOP
        (_fig("step_ms", "56", "ms", {"abs": 0.6}), True),
        (_fig("step_ms", "56", "ms", {"abs": 0.5}), False),
        (_fig("step_ms", "50", "ms", {"rel": 0.15}), True),
        (_fig("step_ms", "50", "ms", {"rel": 0.1}), False),
        (_fig("binding_term", "memory", "label", "exact"), True),
        (_fig("binding_term", "compute", "label", "exact"), False),
        (_fig("total_bytes", "161", "GB"), True),
    ],
)
def test_each_tolerance_accepts_what_it_states_and_rejects_the_rest(
    bundle: Path, figure: dict[str, Any], ok: bool
) -> None:
    """A figure within its stated tolerance passes; outside it, CALC.CLAIM.MISMATCH."""
    status, codes = _run(bundle, _entry([figure]))
    assert (status, codes) == (
        (CheckStatus.PASSED, set()) if ok else (CheckStatus.FAILED, {"CALC.CLAIM.MISMATCH"})
    )


@pytest.mark.parametrize(
    ("over", "code"),
    [
        ({"calculator": "no-such"}, "CALC.CLAIM.CALCULATOR.UNKNOWN"),
        ({"inputs": {**DECODE, "bogus": 1}}, "CALC.CLAIM.INPUT.UNKNOWN"),
        ({"inputs": {"hardware": "lecture4-h100-sxm"}}, "CALC.CLAIM.INPUT.MISSING"),
        ({"expect": [_fig("no_output", "1", "ms")]}, "CALC.CLAIM.OUTPUT.UNKNOWN"),
        ({"expect": [_fig("step_ms", "56.5", "GB")]}, "CALC.CLAIM.UNIT.MISMATCH"),
        ({"expect": [_fig("step_ms", "about 56", "ms")]}, "CALC.CLAIM.PRINTED.INVALID"),
        ({"expect": [_fig("total_bytes", "1,61", "GB")]}, "CALC.CLAIM.PRINTED.INVALID"),
        ({"expect": [_fig("binding_term", "memory", "label")]}, "CALC.CLAIM.PRINTED.INVALID"),
        ({"expect": [_fig("step_ms", "56.5", "parsecs")]}, "GATE.SPEC.INVALID"),
        ({"formulas": []}, "GATE.SPEC.INVALID"),
        ({"surprise": 1}, "GATE.SPEC.UNKNOWN_FIELD"),
    ],
)
def test_what_needs_no_computation_is_refused_when_the_bundle_loads(
    bundle: Path, over: dict[str, Any], code: str
) -> None:
    """Unknown names, a unit of another dimension, a figure that is no decimal: refused at
    load time (the check becomes one error result), located at the field."""
    status, codes = _run(bundle, _entry([_fig("step_ms", "56.5", "ms")], **over))
    assert (status, codes) == (CheckStatus.ERROR, {code})


def test_a_formula_the_registry_lacks_fails_the_claim(bundle: Path) -> None:
    status, codes = _run(bundle, _entry([_fig("step_ms", "56.5", "ms")], formulas=["F05", "F77"]))
    assert (status, codes) == (CheckStatus.FAILED, {"CALC.CLAIM.FORMULA.UNKNOWN"})


def test_a_registry_outside_the_bundle_is_refused(bundle: Path) -> None:
    entry = _entry([_fig("step_ms", "56.5", "ms")], registry="../elsewhere.yaml")
    assert _run(bundle, entry) == (CheckStatus.ERROR, {"GATE.PATH.ESCAPE"})


def test_inputs_the_calculator_refuses_are_unusable_input(bundle: Path) -> None:
    """A budget that leaves no chunk beside the decode rows: an error result, not a pass."""
    inputs = {**DECODE, "prefill": None, "budget": 16}
    del inputs["prefill"]
    check = declare(_entry([_fig("step_ms", "1", "ms")], inputs=inputs), bundle, bundle)
    (result,) = run_declared(check)
    assert result.outcome is CheckStatus.ERROR
    assert {f.code for f in result.findings} == {"CALC.CLAIM.INPUT.INVALID"}


def test_an_output_not_computed_for_these_inputs_fails(bundle: Path) -> None:
    """The TTFT needs a budget and a prompt; without them it is not computed."""
    status, codes = _run(bundle, _entry([_fig("ttft_ms", "100", "ms")]))
    assert (status, codes) == (CheckStatus.FAILED, {"CALC.CLAIM.OUTPUT.NOT_COMPUTED"})


def test_a_calculator_claim_never_reports_a_measured_class(bundle: Path) -> None:
    """Arithmetic is derived, modeled or source-reported; declaring it measured is refused."""
    entry = _entry([_fig("step_ms", "56.5", "ms")], evidence_class="measured_gpu")
    assert _run(bundle, entry) == (CheckStatus.FAILED, {"GATE.EVIDENCE.CLASS_MISMATCH"})
    entry = _entry([_fig("step_ms", "56.5", "ms")], evidence_class="modeled")
    assert _run(bundle, entry) == (CheckStatus.PASSED, set())


def test_the_result_carries_every_figure_and_the_bound_formulas(bundle: Path) -> None:
    check = declare(
        _entry(
            [_fig("step_ms", "2.50", "s"), _fig("itl_spike_ratio", "44", "x")],
            inputs={**DECODE, "prefill": 8192},
        ),
        bundle,
        bundle,
    )
    (result,) = run_declared(check)
    assert result.outcome is CheckStatus.PASSED
    rows = result.metrics["expect"]
    assert [r["output"] for r in rows] == ["step_ms", "itl_spike_ratio"]
    assert rows[0]["value"] == pytest.approx(2.50403, abs=1e-5)
    assert rows[1]["value"] == pytest.approx(44.2949, abs=1e-4)
    assert result.metrics["formulas"]["F05"].startswith("T_step(B, Lc) ~ max(")


def test_the_lecture_bundle_passes_and_every_claim_has_a_negative() -> None:
    """The shipped bundle's claims pass; each has a negative that fails it with a mismatch."""
    report = run_gate([LECTURE4], jobs=1, select="lecture4.")
    by_kind: dict[str, list[Any]] = {}
    for r in report.results:
        by_kind.setdefault(r.check, []).append(r)
    claims = by_kind["calculator.claim"]
    assert len(claims) == 27 and all(r.outcome is CheckStatus.PASSED for r in claims)
    negatives = by_kind["negative_check"]
    assert len(negatives) == 27 and all(r.outcome is CheckStatus.PASSED for r in negatives)
    (campaign,) = by_kind["mutation"]
    assert campaign.outcome is CheckStatus.PASSED
    assert campaign.metrics["counts"]["killed"] == campaign.metrics["valid"] > 400


def test_the_claims_list_is_a_mutation_fixture_its_oracle_accepts() -> None:
    """The target recognises the check list and finds nothing wrong with the shipped claims;
    one wrong figure in it is rejected with the mismatch code."""
    path = LECTURE4 / "claims" / "checks.yaml"
    data = load_document(path).data
    assert matches(data)
    assert judge_list(data, path.parent).codes == frozenset()
    first = dict(data["checks"][0])
    first["expect"] = [{**first["expect"][0], "printed": "0.40"}]
    broken = {**data, "checks": [first, *data["checks"][1:]]}
    assert judge_list(broken, path.parent).codes == frozenset({"CALC.CLAIM.MISMATCH"})
    assert error_codes(()) == frozenset()
