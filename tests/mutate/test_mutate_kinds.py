"""The gate kinds `mutation`, `negative_floor` and `metamorphic`, and the bundle's checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _mutate_paths import BUNDLE

from cbaudit.checks.context import GateContext
from cbaudit.checks.parse import run_entry
from cbaudit.kinds import KINDS
from cbaudit.model import CheckResult, CheckStatus, InputError
from cbaudit.mutate.kinds import METAMORPHIC, MUTATION, NEGATIVE_FLOOR


def run_mutation(spec: dict[str, Any], ctx: GateContext) -> list[CheckResult]:
    return run_entry(MUTATION, {"id": "m", **spec}, ctx)


def run_negative_floor(spec: dict[str, Any], ctx: GateContext) -> list[CheckResult]:
    return run_entry(NEGATIVE_FLOOR, {"id": "f", **spec}, ctx)


def run_metamorphic(spec: dict[str, Any], ctx: GateContext) -> list[CheckResult]:
    return run_entry(METAMORPHIC, {"id": "r", **spec}, ctx)


def _ctx() -> GateContext:
    return GateContext(
        base_dir=BUNDLE / "mutation",
        manifest="mutation/checks.yaml",
        pointer="/checks/0",
        bundle_root=BUNDLE,
        kinds=KINDS,
    )


def _code(func: Any, spec: dict[str, Any]) -> str:
    with pytest.raises(InputError) as err:
        func(spec, _ctx())
    return err.value.findings[0].code


def test_kinds_are_registered() -> None:
    """The gate resolves the three kinds to this package."""
    for kind in ("mutation", "negative_floor", "metamorphic"):
        assert KINDS[kind].name == kind


def test_mutation_on_a_fixture_passes() -> None:
    """A campaign on the Loop 2 case reaches 100%."""
    [result] = run_mutation({"id": "m", "target": "../loop2/valid.case.json", "seed": 2}, _ctx())
    assert result.outcome is CheckStatus.PASSED and result.metrics["score"] == 100.0


def test_mutation_operator_filter() -> None:
    """`operators` restricts the campaign to the named operators."""
    spec = {"id": "m", "target": "../loop6/chunked_prefill.yaml", "operators": ["chunk.size"]}
    [result] = run_mutation(spec, _ctx())
    assert set(result.metrics["by_operator"]) == {"chunk.size.zero", "chunk.size.duplicate"}


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"target": "../loop2/valid.case.json", "min_score": 101}, "GATE.SPEC.INVALID"),
        ({"target": "../loop2/valid.case.json", "seed": "x"}, "GATE.SPEC.INVALID"),
        ({"target": "../loop2/valid.case.json", "operators": ["zzz"]}, "MUTATE.SPEC.INVALID"),
        ({"target": "../loop2/valid.case.json", "operator": ["zzz"]}, "GATE.SPEC.UNKNOWN_FIELD"),
        ({"target": "../loop2/missing.json"}, "MUTATE.SPEC.INVALID"),
        ({"target": "../../../etc"}, "GATE.PATH.ESCAPE"),
        ({}, "GATE.SPEC.MISSING_FIELD"),
    ],
)
def test_mutation_bad_specs(spec: dict[str, Any], code: str) -> None:
    """Unusable spec fields are located InputErrors with stable codes."""
    assert _code(run_mutation, spec) == code


def test_negative_floor_one_line_per_loop() -> None:
    """The floor check reports each floored loop; Loop 2 covers all 22 classes."""
    results = run_negative_floor({"floors": {"2": "classes", "4": 19, "6": 16}}, _ctx())
    assert [r.subject for r in results] == ["loop 2", "loop 4", "loop 6"]
    assert all(r.outcome is CheckStatus.PASSED for r in results)
    [high] = run_negative_floor({"floors": {"4": 1000}}, _ctx())
    assert [f.code for f in high.findings] == ["MUTATE.FLOOR.BELOW"]


def test_metamorphic_kind() -> None:
    """Named relations run one line each; an unknown relation is a spec error."""
    results = run_metamorphic(
        {"relations": ["time-scaling"], "scale": 2, "policies": ["orca"]}, _ctx()
    )
    assert [r.subject for r in results] == ["time-scaling"]
    assert results[0].outcome is CheckStatus.PASSED
    assert _code(run_metamorphic, {"relations": ["nope"]}) == "MUTATE.SPEC.INVALID"
    assert _code(run_metamorphic, {"scale": 1}) == "GATE.SPEC.INVALID"


def test_metamorphic_with_a_workload_file() -> None:
    """A bundle workload manifest can replace the built-in one."""
    spec = {
        "relations": ["hidden-output-invariance"],
        "workload": "../loop3/abc.workload.yaml",
        "policies": ["orca"],
    }
    [result] = run_metamorphic(spec, _ctx())
    assert result.outcome is CheckStatus.PASSED, [f.render() for f in result.findings]
    assert result.metrics["plans_compared"] >= 1


def test_bundle_declares_the_mutation_checks() -> None:
    """The bundle includes mutation/checks.yaml with the four kinds."""
    text = (BUNDLE / "bundle.yaml").read_text()
    assert "mutation/checks.yaml" in text
    checks = (Path(BUNDLE) / "mutation" / "checks.yaml").read_text()
    for kind in ("kind: mutation", "kind: negative_floor", "kind: metamorphic"):
        assert kind in checks
