"""The `oracle` gate kind, the oracle registry and negative-fixture loading."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from repo_paths import M52, loop_checks, run_declared

from cbaudit.checks.bundle import DeclaredCheck
from cbaudit.checks.context import GateContext
from cbaudit.checks.parse import run_entry
from cbaudit.model import CheckResult, CheckStatus, InputError
from cbaudit.oracles import (
    admission,
    chunked_prefill,
    runtime_policy,
    selective_batching,
    slo_oracle,
)
from cbaudit.oracles.fixture_oracle import (
    ORACLE,
    ORACLE_LOOPS,
    build_registry,
    get_oracle,
    oracles,
    run_fixture,
)
from cbaudit.oracles.fixtures import load_fixture


def run_oracle(spec: dict[str, Any], ctx: GateContext) -> list[CheckResult]:
    return run_entry(ORACLE, spec, ctx)


BUNDLE = M52


SPECS = loop_checks("loop4", "loop6")


@pytest.mark.parametrize("spec", SPECS, ids=[s.check_id for s in SPECS])
def test_every_declared_check_passes(spec: DeclaredCheck) -> None:
    """Each Loop 4/6 check passes: positives match their report, negatives their codes."""
    results = run_declared(spec)
    assert [r.outcome for r in results] == [CheckStatus.PASSED], [
        f.render() for r in results for f in r.findings
    ]


def test_bundle_has_negatives_for_every_code_family() -> None:
    """The declared negatives exercise every PACK/SELECTIVE/CHUNK code family named in the issue."""
    codes = {c for s in SPECS for c in s.entry.get("expect_code", [])}
    for needed in (
        "PACK.OFFSETS.WIDTH",
        "PACK.POSITION.MISMATCH",
        "PACK.PHASE.INTERVAL",
        "PACK.HANDLE.DUPLICATE",
        "PACK.VISIBILITY.FUTURE",
        "PACK.VISIBILITY.CROSS_REQUEST",
        "SELECTIVE.CROSS_REQUEST",
        "SELECTIVE.MISMATCH",
        "CHUNK.PAIRS.MISSING",
        "CHUNK.PAIRS.EXTRA",
        "CHUNK.ORDER",
        "CHUNK.RELOAD.WRONG",
    ):
        assert needed in codes, needed


def _ctx(tmp: Path, update: bool = False) -> GateContext:
    return GateContext(
        base_dir=tmp / "loop",
        manifest="loop/checks.yaml",
        pointer="/checks/0",
        bundle_root=tmp,
        update=update,
    )


@pytest.fixture
def bundle_copy(tmp_path: Path) -> Path:
    shutil.copytree(BUNDLE / "loop6", tmp_path / "loop")
    return tmp_path


def _spec(**extra: Any) -> dict[str, Any]:
    return {"id": "t", "kind": "oracle", "oracle": "chunked-prefill", **extra}


def test_wrong_expect_code_fails_the_negative_check(bundle_copy: Path) -> None:
    """A negative fixture that does not produce the declared code is ORACLE.EXPECT_CODE.MISSING."""
    spec = _spec(fixture="negative/imbalance.yaml", expect_code="CHUNK.RELOAD.WRONG")
    [result] = run_oracle(spec, _ctx(bundle_copy))
    assert result.outcome is CheckStatus.FAILED
    assert [f.code for f in result.findings] == ["ORACLE.EXPECT_CODE.MISSING"]
    assert result.metrics["observed_codes"] == ["CHUNK.IMBALANCE.WRONG"]


def test_negative_file_declares_its_own_code(bundle_copy: Path) -> None:
    """Without a spec expect_code the negative file's expect_code is used."""
    [result] = run_oracle(_spec(fixture="negative/imbalance.yaml"), _ctx(bundle_copy))
    assert result.outcome is CheckStatus.PASSED
    assert result.metrics["expect_code"] == ["CHUNK.IMBALANCE.WRONG"]


def _strip_code(bundle: Path, name: str) -> str:
    """Copy a negative file without its expect_code, so a plain spec runs it as a positive."""
    src = bundle / "loop" / "negative" / name
    lines = [ln for ln in src.read_text().splitlines() if not ln.startswith("expect_code:")]
    (bundle / "loop" / "negative" / f"plain_{name}").write_text("\n".join(lines) + "\n")
    return f"negative/plain_{name}"


def test_positive_fixture_failing_is_a_failed_check(bundle_copy: Path) -> None:
    """A broken fixture run as a positive check fails with its own finding codes."""
    [result] = run_oracle(
        _spec(fixture=_strip_code(bundle_copy, "reload_rows.yaml")), _ctx(bundle_copy)
    )
    assert result.outcome is CheckStatus.FAILED
    assert {f.code for f in result.findings} == {"CHUNK.RELOAD.WRONG"}


def test_expected_report_drift_and_update(bundle_copy: Path) -> None:
    """A changed expected report is GATE.EXPECTED.DRIFT; --update rewrites it."""
    expected = bundle_copy / "loop/expected/chunked_prefill.report.json"
    expected.write_text(expected.read_text().replace('"r_hist": 24', '"r_hist": 25'))
    spec = _spec(fixture="chunked_prefill.yaml", expected="expected/chunked_prefill.report.json")
    [result] = run_oracle(spec, _ctx(bundle_copy))
    assert [f.code for f in result.findings] == ["GATE.EXPECTED.DRIFT"]
    [updated] = run_oracle(spec, _ctx(bundle_copy, update=True))
    assert updated.outcome is CheckStatus.PASSED
    assert '"r_hist": 24' in expected.read_text()


def test_unusable_fixture_without_expect_code_raises(bundle_copy: Path) -> None:
    """An unusable fixture in a positive check propagates its InputError (gate exit 2)."""
    with pytest.raises(InputError) as err:
        run_oracle(_spec(fixture=_strip_code(bundle_copy, "schema_empty.yaml")), _ctx(bundle_copy))
    assert err.value.findings[0].code == "SCHEMA.ANY_OF"


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        (
            {"id": "t", "kind": "oracle", "fixture": "chunked_prefill.yaml"},
            "GATE.SPEC.MISSING_FIELD",
        ),
        (_spec(), "GATE.SPEC.MISSING_FIELD"),
        (_spec(fixture="chunked_prefill.yaml", oracle="nope"), "ORACLE.UNKNOWN"),
        (_spec(fixture="../../escape.yaml"), "GATE.PATH.ESCAPE"),
        (_spec(fixture="chunked_prefill.yaml", expect_code=[]), "GATE.SPEC.INVALID"),
        (_spec(fixture="chunked_prefill.yaml", expected_code="X.Y"), "GATE.SPEC.UNKNOWN_FIELD"),
        (
            {**_spec(fixture="chunked_prefill.yaml"), "oracle": "selective-batching"},
            "ORACLE.FIXTURE.MISMATCH",
        ),
    ],
)
def test_unusable_specs(bundle_copy: Path, spec: dict[str, Any], code: str) -> None:
    """Bad spec fields are located InputErrors with their own codes."""
    with pytest.raises(InputError) as err:
        run_oracle(spec, _ctx(bundle_copy))
    assert err.value.findings[0].code == code


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (
            "base: ../../../outside.yaml\npatch: [{op: remove, path: /x}]\n",
            "ORACLE.FIXTURE.BASE_ESCAPE",
        ),
        (
            "base: negative/imbalance.yaml\npatch: [{op: remove, path: /x}]\n",
            "ORACLE.FIXTURE.BASE_NESTED",
        ),
        (
            "base: chunked_prefill.yaml\npatch: [{op: remove, path: /nope}]\n",
            "ORACLE.FIXTURE.PATCH_INVALID",
        ),
        ("base: chunked_prefill.yaml\npatch: []\n", "SCHEMA.MIN_ITEMS"),
    ],
)
def test_bad_negative_fixture_files(bundle_copy: Path, text: str, code: str) -> None:
    """Negative fixture files that cannot be resolved are unusable input with their codes."""
    path = bundle_copy / "loop" / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_fixture(path, root=bundle_copy)
    assert err.value.findings[0].code == code


def test_registry_is_explicit_and_refuses_duplicates() -> None:
    """oracles() names every loop oracle, as ORACLE_LOOPS does; a name given twice is refused."""
    assert list(ORACLE_LOOPS) == [
        selective_batching.NAME,
        admission.NAME,
        chunked_prefill.NAME,
        slo_oracle.NAME,
        runtime_policy.NAME,
    ]
    assert dict(oracles()) == {
        selective_batching.NAME: selective_batching.run,
        chunked_prefill.NAME: chunked_prefill.run,
        admission.NAME: admission.run,
        slo_oracle.NAME: slo_oracle.run,
        runtime_policy.NAME: runtime_policy.run,
    }
    with pytest.raises(ValueError, match="twice"):
        build_registry([("x", chunked_prefill.run), ("x", selective_batching.run)])
    with pytest.raises(InputError) as err:
        get_oracle("missing")
    assert err.value.findings[0].code == "ORACLE.UNKNOWN"


def test_run_fixture_refuses_a_fixture_for_another_oracle() -> None:
    """A fixture whose `oracle:` names another oracle is ORACLE.FIXTURE.MISMATCH."""
    fixture = load_fixture(BUNDLE / "loop6/chunked_prefill.yaml")
    with pytest.raises(InputError) as err:
        run_fixture("selective-batching", fixture)
    assert err.value.findings[0].code == "ORACLE.FIXTURE.MISMATCH"


def test_oracles_do_not_import_upwards() -> None:
    """cbaudit.oracles imports neither the CLI nor (at runtime) the gate."""
    import ast

    for path in (Path(selective_batching.__file__).parent).glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(("cbaudit.cli", "cbaudit.gate")), path


def test_declared_codes_are_catalogued() -> None:
    """Every code a Loop 4/6 negative declares is in a catalog (PACK, SELECTIVE, CHUNK, PLAN)."""
    from cbaudit.contract.codes import CODES as PLAN_CODES
    from cbaudit.contract.packing import PACK_CODES

    known = set(PACK_CODES) | set(selective_batching.CODES) | set(chunked_prefill.CODES)
    known |= set(PLAN_CODES)
    for spec in SPECS:
        for code in spec.entry.get("expect_code", []):
            assert code in known or code.startswith("SCHEMA."), (spec.check_id, code)
