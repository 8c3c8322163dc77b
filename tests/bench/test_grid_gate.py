"""Grids, the gate kind `bench_results`, the shipped evidence and the summary script."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from repo_paths import EVIDENCE

from cbaudit.bench.grid import grid_from_bytes, load_grid
from cbaudit.bench.summary import summarize_results
from cbaudit.checks.context import GateContext
from cbaudit.checks.parse import run_entry
from cbaudit.model import CheckResult, CheckStatus, EvidenceClass, InputError
from cbaudit.oracles.bench_results import BENCH_RESULTS


def run_bench_attached(spec: dict[str, Any], ctx: GateContext) -> list[CheckResult]:
    return run_entry(BENCH_RESULTS, spec, ctx)


BENCH_EVIDENCE = EVIDENCE / "m5-2-continuous-batching" / "bench"


def test_packaged_grids_expand() -> None:
    """quick is about 20 points, default has the BENCH.md kinds and the 496..544 tile sweep."""
    quick, default, tiny = load_grid("quick"), load_grid("default"), load_grid("tiny")
    assert 18 <= len(quick.points) <= 22 and quick.geometry.name == "8b"
    kinds = {p.spec.kind for p in default.points}
    assert kinds == {"decode", "prefill", "mixed"}
    tiles = [p.spec.prefill_tokens for p in default.points if p.role == "tile"]
    assert tiles == [496, 504, 520, 528, 536, 544]  # 512 already a mixed grid point
    assert len([p for p in default.points if p.spec.kind == "decode"]) == 18
    assert tiny.geometry.name == "tiny" and tiny.sentinel is not None
    assert [p.id for p in tiny.points][:2] == ["p000", "p001"]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"format": "x"}', "BENCH.GRID.FORMAT"),
        ('{"format": "cbaudit-bench-grid", "format_version": 1, "name": "g"}', "SCHEMA.ANY_OF"),
        ("{not json", "BENCH.GRID.PARSE"),
        (
            '{"format": "cbaudit-bench-grid", "format_version": 1, "name": "g",'
            ' "geometry": "70b", "points": ["q1s4"]}',
            "BENCH.GEOMETRY.UNKNOWN",
        ),
    ],
)
def test_bad_grids_name_their_code(text: str, code: str) -> None:
    """Malformed grid files are refused with a specific code."""
    with pytest.raises(InputError) as err:
        grid_from_bytes(text.encode(), name="g", file="g.json", fmt="json")
    assert err.value.findings[0].code == code


def _ctx(base: Path, root: Path) -> GateContext:
    return GateContext(
        base_dir=base, manifest=str(base / "checks.yaml"), pointer="/checks/0", bundle_root=root
    )


def _spec(**kw: Any) -> dict[str, Any]:
    return {"id": "c", "kind": "bench_results", "results": "results-cpu-tiny.json", **kw}


def test_shipped_cpu_evidence_passes_as_measured_cpu() -> None:
    """The shipped CPU results pass, labelled measured_cpu, bound by sha256."""
    (res,) = run_bench_attached(_spec(min_ok_points=11), _ctx(BENCH_EVIDENCE, EVIDENCE))
    assert res.outcome is CheckStatus.PASSED
    assert res.evidence_class is EvidenceClass.MEASURED_CPU
    assert len(res.artifacts["results_sha256"]) == 64


def test_gpu_claims_without_gpu_results_are_not_run() -> None:
    """A GPU-required check on CPU results is NOT_RUN, never passed."""
    ctx = _ctx(BENCH_EVIDENCE, EVIDENCE)
    for spec in (_spec(require_measured_gpu=True), _spec(max_mixed_mape=0.2)):
        (res,) = run_bench_attached(spec, ctx)
        assert res.outcome is CheckStatus.NOT_RUN and "needs GPU" in (res.reason or "")


def test_gate_kind_failures_and_bad_specs(tmp_path: Path, tiny_data: dict[str, Any]) -> None:
    """A failed point fails the check with its code; bad fields are refused by the schema."""
    p = tiny_data["points"][0]
    p.update(status="failed_correctness", median_ms=None, evidence_class=None, stats=None)
    p["correctness"].update(passed=False, code="BENCH.CORRECTNESS.MISMATCH")
    (tmp_path / "results-cpu-tiny.json").write_text(json.dumps(tiny_data))
    ctx = _ctx(tmp_path, tmp_path)
    (res,) = run_bench_attached(_spec(), ctx)
    assert res.outcome is CheckStatus.FAILED
    assert [f.code for f in res.findings] == ["BENCH.CORRECTNESS.MISMATCH"]
    (res,) = run_bench_attached(_spec(min_ok_points=99), ctx)
    assert "BENCH.GATE.TOO_FEW_POINTS" in [f.code for f in res.findings]
    for bad, code in (
        (_spec(require_measured_gpu="yes"), "GATE.SPEC.INVALID"),
        (_spec(color=1), "GATE.SPEC.UNKNOWN_FIELD"),
        (_spec(results=3), "GATE.SPEC.INVALID"),
    ):
        with pytest.raises(InputError) as err:
            run_bench_attached(bad, ctx)
        assert err.value.findings[0].code == code
    with pytest.raises(InputError) as err:
        run_bench_attached(_spec(results="../x.json"), _ctx(tmp_path / "sub", tmp_path / "sub"))
    assert err.value.findings[0].code == "GATE.PATH.ESCAPE"


def test_evidence_file_was_written_by_the_runner(tmp_path: Path) -> None:
    """The shipped file is a CPU run of the tiny grid with every point checked."""
    data = json.loads((BENCH_EVIDENCE / "results-cpu-tiny.json").read_text())
    assert (
        data["manifest"]["grid"]["name"] == "tiny" and data["manifest"]["device"]["type"] == "cpu"
    )
    assert all(p["correctness"]["passed"] for p in data["points"])
    lines = summarize_results(data)
    assert lines[0].startswith("results: not measured on GPU")
    assert any(line.startswith("fits: not_run") for line in lines)
    shutil.copy(BENCH_EVIDENCE / "results-cpu-tiny.json", tmp_path / "copy.json")
