"""Gate kind `vllm_conformance`: strict spec, bound files, the rules binding, isolated cases."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo_paths import CONFORMANCE

from cbaudit.gate.runner import run_gate

PIN = "pins/vllm-v0.23.0-scheduler-rules.yaml"
CASE = "null_block_exact"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _bundle(tmp_path: Path, check: dict[str, Any]) -> Path:
    """A one-check bundle holding one corpus case and the rules pin."""
    root = tmp_path / "b"
    (root / "corpus").mkdir(parents=True)
    (root / "pins").mkdir()
    for name in (f"{CASE}.vllm-trace.jsonl", f"{CASE}.workload.json"):
        shutil.copy(CONFORMANCE / "corpus" / name, root / "corpus" / name)
    shutil.copy(CONFORMANCE / PIN, root / PIN)
    (root / "bundle.yaml").write_text(
        yaml.safe_dump(
            {"schema_version": 1, "bundle": "t", "title": "t", "checks": [{"id": "c", **check}]}
        )
    )
    return root


def _case(root: Path) -> dict[str, str]:
    trace, wl = (
        root / "corpus" / f"{CASE}.vllm-trace.jsonl",
        root / "corpus" / f"{CASE}.workload.json",
    )
    return {
        "trace": f"corpus/{trace.name}",
        "trace_sha256": _sha(trace),
        "workload": f"corpus/{wl.name}",
        "workload_sha256": _sha(wl),
    }


def _run(root: Path) -> Any:
    return run_gate([root])


def test_a_bound_case_and_the_rules_pass(tmp_path: Path) -> None:
    """One result for the rules binding, one per case; both pass on the real corpus."""
    root = _bundle(tmp_path, {"kind": "vllm_conformance", "rules": PIN, "cases": []})
    spec = yaml.safe_load((root / "bundle.yaml").read_text())
    spec["checks"][0]["cases"] = [_case(root)]
    (root / "bundle.yaml").write_text(yaml.safe_dump(spec))
    report = _run(root)
    assert [(r.check, r.outcome.value) for r in report.results] == [
        ("conform.rules", "passed"),
        ("conform", "passed"),
    ]
    assert report.results[1].artifacts == {
        f"corpus/{CASE}.vllm-trace.jsonl": _case(root)["trace_sha256"],
        f"corpus/{CASE}.workload.json": _case(root)["workload_sha256"],
    }


def _with_case(tmp_path: Path, edit: Any) -> Path:
    root = _bundle(tmp_path, {"kind": "vllm_conformance"})
    spec = yaml.safe_load((root / "bundle.yaml").read_text())
    spec["checks"][0]["cases"] = [_case(root)]
    edit(spec["checks"][0], root)
    (root / "bundle.yaml").write_text(yaml.safe_dump(spec))
    return root


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda c, r: c.update(expect="everything"), "GATE.SPEC.UNKNOWN_FIELD"),
        (lambda c, r: c["cases"][0].update(note="x"), "GATE.SPEC.UNKNOWN_FIELD"),
        (lambda c, r: c["cases"][0].pop("trace_sha256"), "GATE.SPEC.MISSING_FIELD"),
        (lambda c, r: c["cases"][0].pop("workload_sha256"), "GATE.SPEC.MISSING_FIELD"),
        (lambda c, r: c["cases"][0].update(trace_sha256="abc"), "GATE.SPEC.INVALID"),
        (lambda c, r: c.update(cases=[]), "GATE.SPEC.INVALID"),
        (lambda c, r: c["cases"][0].update(trace="../../outside.jsonl"), "GATE.PATH.ESCAPE"),
    ],
    ids=[
        "unknown-field",
        "unknown-case-field",
        "unbound-trace",
        "half-bound",
        "bad-sha",
        "empty",
        "escape",
    ],
)
def test_the_spec_is_strict(tmp_path: Path, edit: Any, code: str) -> None:
    """Anything the kind does not know, a file not bound by sha256 or a path out of the bundle
    is unusable (exit 2), located by its own code."""
    report = _run(_with_case(tmp_path, edit))
    assert report.exit_code == 2
    assert {f.code for r in report.results for f in r.findings} == {code}


def test_a_changed_file_is_not_run(tmp_path: Path) -> None:
    """A trace whose bytes are not the bound ones fails with CONFORM.BINDING.SHA256."""
    root = _with_case(tmp_path, lambda c, r: None)
    trace = root / "corpus" / f"{CASE}.vllm-trace.jsonl"
    trace.write_text(trace.read_text().replace('"x": 1', '"x": 2', 1))
    report = _run(root)
    assert report.exit_code == 1
    assert [f.code for f in report.results[0].findings] == ["CONFORM.BINDING.SHA256"]


def test_one_unusable_case_does_not_hide_the_others(tmp_path: Path) -> None:
    """A bound but unreadable case is an ERROR result of its own; the good case still runs."""

    def add_broken(c: dict[str, Any], root: Path) -> None:
        bad = root / "corpus" / "broken.vllm-trace.jsonl"
        bad.write_text("{not json\n")
        c["cases"].append({"trace": "corpus/broken.vllm-trace.jsonl", "trace_sha256": _sha(bad),
                           "workload": c["cases"][0]["workload"],
                           "workload_sha256": c["cases"][0]["workload_sha256"]})  # fmt: skip

    report = _run(_with_case(tmp_path, add_broken))
    assert [r.outcome.value for r in report.results] == ["passed", "error"]
    assert report.results[1].findings[0].code.startswith("LOAD.")


@pytest.mark.parametrize(
    ("change", "code"),
    [("drop", "CONFORM.RULES.MARKER_UNKNOWN"), ("add", "CONFORM.RULES.MARKER_UNUSED")],
)
def test_the_rules_and_the_pin_must_match_both_ways(tmp_path: Path, change: str, code: str) -> None:
    """A rule citing a marker the pin lacks, or a pinned line that backs no rule, fails."""

    def edit(c: dict[str, Any], root: Path) -> None:
        c["rules"] = PIN
        pin = root / PIN
        data = yaml.safe_load(pin.read_text())
        markers = data["files"][0]["markers"]
        if change == "drop":
            markers.pop(0)
        else:
            markers.append({**markers[0], "id": "X99"})
        pin.write_text(yaml.safe_dump(data, sort_keys=False))

    report = _run(_with_case(tmp_path, edit))
    assert {f.code for f in report.results[0].findings} == {code}
    assert report.exit_code == 1
