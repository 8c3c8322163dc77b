"""Results files: schema round trip, meaning checks, the point shape cost models read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cbaudit.bench.results import PointStatus, load_results
from cbaudit.model import EvidenceClass, InputError


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    p = tmp_path / "r.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def _codes(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    with pytest.raises(InputError) as err:
        load_results(_write(tmp_path, data))
    return [f.code for f in err.value.findings]


def test_cpu_run_round_trips_and_is_labelled(tiny_results: Path) -> None:
    """A CPU run loads, every point is measured_cpu and checked, and fits did not run."""
    r = load_results(tiny_results)
    assert r.evidence_class is EvidenceClass.MEASURED_CPU and not r.measured_on_gpu
    assert "not measured on GPU" in r.label
    assert r.manifest["dtype"] == "float32" and r.manifest["geometry"]["name"] == "tiny"
    assert r.fits["status"] == "not_run"
    assert len(r.points) == 11 and len(r.usable_points()) == 11
    for p in r.points:
        assert p.status is PointStatus.OK and p.evidence_class is EvidenceClass.MEASURED_CPU
        assert p.median_ms is not None and p.median_ms > 0
    mixed = next(p for p in r.points if p.spec == "4q1s64_q16s16")
    assert (mixed.tokens, mixed.decode_rows, mixed.prefill_tokens) == (20, 4, 16)
    assert mixed.history_tokens == 4 * 63 and mixed.kind == "mixed"
    assert r.sentinel is not None and len(r.sentinel["medians_ms"]) == 3
    raw = json.loads(tiny_results.read_text())
    assert all(p["correctness"]["passed"] for p in raw["points"])
    assert all(p["roofline"]["evidence_class"] == "modeled" for p in raw["points"])


def test_unknown_format_version_is_refused(tmp_path: Path, tiny_data: dict[str, Any]) -> None:
    """The loader branches on format_version and refuses one it does not know."""
    tiny_data["format_version"] = 2
    assert _codes(tmp_path, tiny_data) == ["BENCH.RESULTS.VERSION"]


def test_not_a_results_file(tmp_path: Path) -> None:
    """Another JSON document is refused with a located code."""
    assert _codes(tmp_path, {"results": []}) == ["BENCH.RESULTS.FORMAT"]


def test_schema_findings_are_located(tmp_path: Path, tiny_data: dict[str, Any]) -> None:
    """A missing member is a SCHEMA.REQUIRED finding pointing at it."""
    del tiny_data["points"][2]["median_ms"]
    with pytest.raises(InputError) as err:
        load_results(_write(tmp_path, tiny_data))
    f = err.value.findings[0]
    assert f.code == "SCHEMA.REQUIRED" and f.location.pointer == "/points/2/median_ms"


def test_totals_must_match_the_spec(tmp_path: Path, tiny_data: dict[str, Any]) -> None:
    """A point whose tokens disagree with its spec is SPEC_MISMATCH at that field."""
    tiny_data["points"][0]["tokens"] += 1
    with pytest.raises(InputError) as err:
        load_results(_write(tmp_path, tiny_data))
    f = err.value.findings[0]
    assert f.code == "BENCH.RESULTS.SPEC_MISMATCH" and f.location.pointer == "/points/0/tokens"


def test_cpu_file_cannot_claim_gpu(tmp_path: Path, tiny_data: dict[str, Any]) -> None:
    """Relabelling a CPU run measured_gpu is an evidence-class upgrade."""
    tiny_data["evidence_class"] = "measured_gpu"
    tiny_data["measured_on_gpu"] = True
    assert "BENCH.RESULTS.CLASS_UPGRADE" in _codes(tmp_path, tiny_data)


def test_cpu_fits_are_refused(tmp_path: Path, tiny_data: dict[str, Any]) -> None:
    """Fits marked ok in a CPU run are refused: measured_cpu never feeds fits."""
    tiny_data["fits"]["status"] = "ok"
    assert _codes(tmp_path, tiny_data) == ["BENCH.RESULTS.CPU_FED_FIT"]


def test_duplicate_ids_and_unmeasured_classes(tmp_path: Path, tiny_data: dict[str, Any]) -> None:
    """Repeated point ids and a class on a skipped point are both refused."""
    tiny_data["points"][1]["id"] = tiny_data["points"][0]["id"]
    tiny_data["points"][3]["status"] = "skipped_budget"
    tiny_data["points"][3]["median_ms"] = None
    codes = _codes(tmp_path, tiny_data)
    assert "BENCH.RESULTS.DUPLICATE_ID" in codes and "BENCH.RESULTS.CLASS_UPGRADE" in codes


def test_status_ok_needs_a_median(tmp_path: Path, tiny_data: dict[str, Any]) -> None:
    """A point claiming ok without a median is refused."""
    tiny_data["points"][4]["median_ms"] = None
    assert "BENCH.RESULTS.UNMEASURED_OK" in _codes(tmp_path, tiny_data)
