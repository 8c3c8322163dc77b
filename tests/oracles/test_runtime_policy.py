"""The Loop 10 runtime-policy oracle (article 0x0D): pin binding, six policies, four snapshots."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from repo_paths import loop_checks, run_declared

from cbaudit.checks.bundle import DeclaredCheck
from cbaudit.io import load_document
from cbaudit.io.jsonpatch import apply_patch
from cbaudit.model import CheckResult, CheckStatus, EvidenceClass, InputError, Location
from cbaudit.model.canonical import dumps_canonical
from cbaudit.oracles import runtime_policy, runtime_snapshots
from cbaudit.oracles.fixtures import Fixture, load_fixture
from cbaudit.oracles.runtime_codes import CODES
from cbaudit.oracles.runtime_snapshots import Decision, physical_pointers

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "evidence/m5-2-continuous-batching"
LOOP10 = BUNDLE / "loop10-runtime"
FIXTURE = "loop10-runtime/runtime_policy_fixture.json"


def _run_file(rel: str, root: Path = BUNDLE) -> CheckResult:
    return runtime_policy.run(load_fixture(root / rel, display=rel, root=root))


def _codes(rel: str, root: Path = BUNDLE) -> set[str]:
    """Codes a fixture produces, whether as findings or as an unusable-input error."""
    try:
        return {f.code for f in _run_file(rel, root).findings}
    except InputError as err:
        return {f.code for f in err.findings}


@pytest.fixture(scope="module")
def report() -> Mapping[str, Any]:
    result = _run_file(FIXTURE)
    assert [f.render() for f in result.findings] == []
    return result.metrics


def test_valid_fixture_passes_as_synthetic_evidence() -> None:
    """The checked-in fixture yields no finding and reports the synthetic evidence class."""
    result = _run_file(FIXTURE)
    assert result.findings == ()
    assert result.evidence_class is EvidenceClass.SYNTHETIC
    assert result.metrics["oracle"] == "runtime-policy"


def test_fcfs_preempts_the_tail_and_a_schedules_one_row(report: Mapping[str, Any]) -> None:
    """Zero free rows: FCFS preempts B, B releases four rows, A schedules one decode row."""
    d = report["decisions"]["s2-preemption"]["vllm-fcfs"]
    assert d["rows"] == [
        {
            "request_id": "A",
            "request_generation": 0,
            "interval": [2, 3],
            "work": "DECODE_ROW",
            "tokens": 1,
        }
    ]
    [victim] = d["preemptions"]
    assert (victim["request_id"], victim["mode"], victim["released_blocks"]) == (
        "B",
        "RECOMPUTE",
        4,
    )
    assert victim["kept_emitted_tokens"] == 2
    assert d["queue_transitions"] == [
        {"request_id": "B", "from": "running", "to": "waiting_front", "cause": "preempt_recompute"}
    ]
    assert d["accounting"] == {
        "scheduled_tokens": 1,
        "semantic_service_tokens": 1,
        "rebuild_tokens": 0,
        "recompute_overhead_tokens": 4,
    }


def test_priority_preempts_a_itself_and_schedules_no_running_row(
    report: Mapping[str, Any],
) -> None:
    """PRIORITY picks max(priority, arrival) = A, which preempts itself; nothing is scheduled."""
    d = report["decisions"]["s2-preemption"]["vllm-priority"]
    assert d["rows"] == []
    assert [p["request_id"] for p in d["preemptions"]] == ["A"]
    assert d["budget"]["tokens_used"] == 0
    assert {"request_id": "B", "reason": "DEFERRED_AFTER_PREEMPTION"} in d["deferred"]
    assert d["accounting"]["recompute_overhead_tokens"] == 2


def test_remote_kv_request_is_not_runnable_under_any_policy(report: Mapping[str, Any]) -> None:
    """R waits for remote K/V: every policy defers it and serves S's prompt instead."""
    for pid, d in report["decisions"]["s3-remote-kv"].items():
        assert [r["request_id"] for r in d["rows"]] == ["S"], pid
        assert {"request_id": "R", "reason": "NOT_READY_REMOTE_KV"} in d["deferred"], pid


def test_long_prefill_threshold_clamps_only_the_pinned_shape(report: Mapping[str, Any]) -> None:
    """With threshold 4 the vLLM shape schedules L[8,12); Sarathi-Serve fills the budget."""
    row = report["decisions"]["s4-long-prefill"]
    assert [r["interval"] for r in row["vllm-fcfs"]["rows"]] == [[6, 7], [8, 12]]
    assert [r["interval"] for r in row["sarathi-serve"]["rows"]] == [[6, 7], [8, 23]]


def test_pin_markers_declarations_and_loop3_numbers(report: Mapping[str, Any]) -> None:
    """Every declared marker is verified; Loop 3 numbers come from the checked-in reports."""
    pin = report["source_pin"]
    assert (pin["tag"], pin["commit"]) == ("v0.23.0", "0fc695fc6d1d82e9a5ac6835ac8e4e1c83703665")
    assert pin["verified_markers"] == pin["declared_markers"] > 0
    assert pin["marker_count"] == 52
    assert len(report["policies"]) == 6
    assert {p["exact_runtime_reproduction"] for p in report["policies"]} == {False}
    asserted = [r["asserted"] for r in report["loop3"]["reports"]]
    assert asserted[0]["/slot_occupancy/ratio"] == "13/22"
    assert asserted[0]["/slot_occupancy_windows/8/ratio"] == "10/16"
    assert asserted[1]["/slot_occupancy/ratio"] == "13/16"
    assert report["order_invariance"] == {
        "permutation": "request lists reversed in workload and state",
        "runs_compared": 24,
        "order_dependent": [],
    }


def test_same_fixture_gives_a_byte_identical_report() -> None:
    """Two runs of the oracle give the same canonical JSON."""
    first = dumps_canonical(dict(_run_file(FIXTURE).metrics))
    assert dumps_canonical(dict(_run_file(FIXTURE).metrics)) == first


def _declared_negatives() -> list[tuple[str, str]]:
    doc = load_document(LOOP10 / "checks.yaml")
    return [
        (c["fixture"], c["expect_code"][0])
        for c in doc.data["checks"]
        if c["kind"] == "oracle" and "expect_code" in c
    ]


NEGATIVES = _declared_negatives()


def test_at_least_twenty_negatives_are_declared() -> None:
    """Loop 10 declares at least the article's twenty negative fixtures."""
    assert len(NEGATIVES) >= 20


@pytest.mark.parametrize(("fixture", "code"), NEGATIVES, ids=[n[0] for n in NEGATIVES])
def test_each_negative_yields_exactly_its_code(fixture: str, code: str) -> None:
    """Each negative fixture is rejected with its declared code and no other."""
    assert _codes(f"loop10-runtime/{fixture}") == {code}


def _declared_checks() -> list[DeclaredCheck]:
    return [
        s
        for s in loop_checks("loop10-runtime")
        if s.kind == "oracle" and "expect_code" not in s.entry
    ]


@pytest.mark.parametrize("spec", _declared_checks(), ids=lambda s: s.check_id)
def test_gate_check_matches_its_expected_report(spec: DeclaredCheck) -> None:
    """The positive gate check passes, its report equal to the checked-in expected file."""
    results = run_declared(spec)
    assert [r.outcome for r in results] == [CheckStatus.PASSED], [
        f.render() for r in results for f in r.findings
    ]


# ---------------------------------------------------------------- a copy of the project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A minimal bundle holding the fixture and every file it binds (no pyproject, no pinned/)."""
    bundle = tmp_path / "evidence/m5-2-continuous-batching"
    bundle.mkdir(parents=True)
    shutil.copy(BUNDLE / "bundle.yaml", bundle)
    (bundle / "pins").mkdir()
    shutil.copy(BUNDLE / "pins/vllm-v0.23.0.yaml", bundle / "pins")
    shutil.copytree(BUNDLE / "loop3", bundle / "loop3")
    shutil.copytree(LOOP10, bundle / "loop10-runtime")
    return bundle


def _in_memory(directory: Path, ops: Sequence[Mapping[str, Any]]) -> Fixture:
    base = load_document(directory / "runtime_policy_fixture.json").data
    data = apply_patch(base, list(ops))

    def locate(pointer: str) -> Location:
        return Location(file="mem.json", pointer=pointer)

    return Fixture(data=data, path="mem.json", sha256="", locate=locate, directory=directory)


def _mem_codes(directory: Path, ops: Sequence[Mapping[str, Any]]) -> set[str]:
    try:
        return {f.code for f in runtime_policy.run(_in_memory(directory, ops)).findings}
    except InputError as err:
        return {f.code for f in err.findings}


def test_fixture_copy_runs_clean_in_another_project(project: Path) -> None:
    """The fixture's bindings are relative and inside the bundle, so a copy passes unchanged."""
    assert _codes(FIXTURE, project) == set()


@pytest.mark.parametrize(
    "path", ["/etc/hostname", "../../../../../../../../etc/hostname", "missing.yaml"]
)
def test_absolute_escaping_or_missing_paths_are_unusable(project: Path, path: str) -> None:
    """A bound path that is absolute, leaves the bundle or is absent is RUNTIME.FIXTURE.PATH."""
    ops = [{"op": "replace", "path": "/source_pin/manifest", "value": path}]
    assert _mem_codes(project / "loop10-runtime", ops) == {"RUNTIME.FIXTURE.PATH"}


def test_a_file_beside_a_pyproject_above_the_bundle_is_outside(project: Path) -> None:
    """A pyproject.toml above the bundle widens nothing: its pinned/ is RUNTIME.FIXTURE.PATH."""
    top = project.parent.parent
    (top / "pyproject.toml").write_text("[project]\nname = 'copy'\n")
    (top / "pinned").mkdir()
    shutil.copy(BUNDLE / "pins/vllm-v0.23.0.yaml", top / "pinned")
    ops = [
        {
            "op": "replace",
            "path": "/source_pin/manifest",
            "value": "../../../pinned/vllm-v0.23.0.yaml",
        }
    ]
    assert _mem_codes(project / "loop10-runtime", ops) == {"RUNTIME.FIXTURE.PATH"}


def test_snapshot_whose_views_are_not_its_requests(project: Path) -> None:
    """A state view of an undeclared request is RUNTIME.SNAPSHOT.SHAPE."""
    snap_path = project / "loop10-runtime/snapshots/s3-remote-kv.json"
    snap = json.loads(snap_path.read_text())
    snap["workload"]["requests"].pop()  # S keeps its state view but loses its declaration
    snap_path.write_text(json.dumps(snap))
    sha = load_document(snap_path).sha256
    ops = [{"op": "replace", "path": "/scenarios/2/sha256", "value": sha}]
    assert _mem_codes(project / "loop10-runtime", ops) == {"RUNTIME.SNAPSHOT.SHAPE"}


def test_duplicate_and_misnamed_scenarios(project: Path) -> None:
    """A repeated scenario id is DUPLICATE; one naming another snapshot is SCENARIO.NAME."""
    here = project / "loop10-runtime"
    base = load_document(here / "runtime_policy_fixture.json").data
    dup = [{"op": "add", "path": "/scenarios/-", "value": base["scenarios"][0]}]
    assert _mem_codes(here, dup) == {"RUNTIME.SCENARIO.DUPLICATE"}
    renamed = [{"op": "replace", "path": "/scenarios/0/id", "value": "s1-renamed"}]
    codes = _mem_codes(here, renamed)
    assert {"RUNTIME.SCENARIO.NAME", "RUNTIME.EXPECT.UNKNOWN"} <= codes


def test_a_manifest_that_is_not_a_pin_manifest(project: Path) -> None:
    """Binding a file that is no pin manifest is RUNTIME.PIN.MANIFEST_INVALID (and stale)."""
    ops = [{"op": "replace", "path": "/source_pin/manifest", "value": "snapshots/s1-mixed.json"}]
    codes = _mem_codes(project / "loop10-runtime", ops)
    assert codes == {"RUNTIME.PIN.MANIFEST_INVALID", "RUNTIME.PIN.STALE"}


def test_a_loop3_report_of_another_workload(project: Path) -> None:
    """A bound Loop 3 report whose workload_id is not the workload's is RUNTIME.LOOP3.BINDING."""
    report = project / "loop3/expected/iteration-refill.json"
    data = json.loads(report.read_text())
    data["workload_id"] = "another-workload"
    report.write_text(json.dumps(data))
    sha = load_document(report).sha256
    ops = [{"op": "replace", "path": "/loop3_reconciliation/reports/1/sha256", "value": sha}]
    assert _mem_codes(project / "loop10-runtime", ops) == {"RUNTIME.LOOP3.BINDING"}


def test_a_changed_checked_in_loop3_report_is_legacy_drift(project: Path) -> None:
    """Editing the checked-in Loop 3 report breaks its hash binding and the re-asserted number."""
    report = project / "loop3/expected/fixed-batch.json"
    report.write_text(report.read_text().replace('"ratio": "13/22"', '"ratio": "13/21"'))
    codes = _codes(FIXTURE, project)
    assert codes == {"RUNTIME.LOOP3.HASH", "RUNTIME.LOOP3.NUMBER"}


def test_plans_breaking_readiness_or_contract_are_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scheduled not-ready request and contract codes from the engine become findings."""
    real = runtime_snapshots.decide

    def broken(*args: Any, **kwargs: Any) -> Decision:
        got = real(*args, **kwargs)
        return Decision(got.record, ("PLAN.BUDGET.TOKEN_EXCEEDED",), ("R",))

    monkeypatch.setattr(runtime_policy, "decide", broken)
    codes = {f.code for f in _run_file(FIXTURE).findings}
    assert codes == {"RUNTIME.DECISION.CONTRACT", "RUNTIME.DECISION.NOT_READY"}


def test_physical_block_keys_are_found_at_any_depth() -> None:
    """Physical block fields are located by pointer however deeply they are nested."""
    doc = {"rows": [{"request_id": "A", "extra": {"Block_Table": [[1]]}}], "slot_mapping": [0]}
    assert sorted(physical_pointers(doc)) == ["/rows/0/extra/Block_Table", "/slot_mapping"]


def test_every_code_is_documented() -> None:
    """Each RUNTIME code appears in docs/runtime-policy.md."""
    text = (REPO / "docs/runtime-policy.md").read_text(encoding="utf-8")
    assert [c for c in CODES if c not in text] == []
