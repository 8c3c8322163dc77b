"""Loop 10 oracle (article 0x0D): pinned runtime source binding and the multi-policy oracle.

The fixture (`schemas/runtime-policy-fixture.schema.json`) declares:

`source_pin`
    The pin manifest (path and sha256), the runtime identity it must carry (runtime, version,
    tag, commit), the sha256 of every pinned source file, the manifest's marker count, and the
    markers the observations rest on (id, file, line, symbol). The oracle reads the manifest
    as data; it never reads or imports the runtime's source.
`observations`
    Version-specific runtime statements, each resting on declared marker ids.
`policies`
    Each policy's registry id and options, `exact_runtime_reproduction` (must be false), an
    evidence basis (pinned observations, a paper reference or a teaching rule), the tie-break it
    uses (a total order: it ends in request_id, request_generation) and its claim limits.
`scenarios`
    Scheduler snapshot files, each bound by sha256 (the snapshots are reused, not copied).
`expected_decisions`
    Per scenario and policy: logical rows, deferrals, budget use, queue transitions,
    preemption records and recompute-versus-semantic-service accounting.
`differences`
    Policy pairs a scenario must separate (a fixture is useful where its state activates a
    policy difference).
`loop3_reconciliation`
    The Loop 3 workload and reports bound by sha256, with numbers re-asserted from the
    checked-in reports by JSON pointer. Loop 3 is not simulated again.

The oracle runs every real policy through the simulator's engine for one step on each legal
snapshot, and again with the snapshot's request lists reversed (a decision that changes is
order-dependent). Evidence class: synthetic (a policy run under the unit cost model). It proves
that declared inputs reproduce declared logical decisions, nothing about latency, throughput,
GPU utilization, allocator fidelity, production optimality or runtime equivalence.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cbaudit.io import load_document
from cbaudit.io.loader import Document
from cbaudit.io.schemas import validate
from cbaudit.model import CheckResult, EvidenceClass, Location
from cbaudit.model.findings import pointer_join
from cbaudit.oracles.fixtures import Fixture, enclosing_bundle
from cbaudit.oracles.runtime_codes import CODES, Sink, unusable
from cbaudit.oracles.runtime_snapshots import (
    Snapshot,
    build_snapshot,
    check_snapshot,
    decide,
    refuse_physical,
    reversed_input,
)
from cbaudit.sim import replay as replay_core

NAME = "runtime-policy"
FIXTURE_SCHEMA = "runtime-policy-fixture"
REQUIRED_LIMITS = (
    "latency",
    "throughput",
    "gpu_utilization",
    "allocator_fidelity",
    "runtime_equivalence",
)
TOTAL_ORDER_TAIL = ("request_id", "request_generation")
PROVES = "declared inputs reproduce declared logical decisions"
DOES_NOT_PROVE = (
    "latency",
    "throughput",
    "GPU utilization",
    "allocator fidelity",
    "production optimality",
    "vLLM or Sarathi-Serve behavioral equivalence",
)
__all__ = ["CODES", "NAME", "run"]


@dataclass
class _Run:
    """What one oracle run carries between its steps."""

    fixture: Fixture
    root: Path  # no referenced file may lie outside it
    sink: Sink = field(default_factory=Sink)

    def at(self, pointer: str) -> Location:
        return self.fixture.locate(pointer)

    def add(self, code: str, message: str, pointer: str) -> None:
        self.sink.add(code, message, self.at(pointer))

    def load(self, rel: Any, pointer: str) -> Document:
        """Load a file the fixture names relative to itself; refuse escapes and absences."""
        directory = self.fixture.directory
        if directory is None or not isinstance(rel, str) or Path(rel).is_absolute():
            raise unusable(
                "RUNTIME.FIXTURE.PATH",
                f"{rel!r} must be a path relative to a fixture file",
                self.at(pointer),
            )
        target = (directory / rel).resolve()
        if self.root not in target.parents:
            raise unusable(
                "RUNTIME.FIXTURE.PATH",
                f"{rel!r} lies outside the bundle (or its declared root)",
                self.at(pointer),
            )
        if not target.is_file():
            raise unusable("RUNTIME.FIXTURE.PATH", f"{rel!r} does not exist", self.at(pointer))
        here = posixpath.dirname(self.fixture.base or self.fixture.path)
        return load_document(target, display=posixpath.normpath(posixpath.join(here, rel)))


def _read_root(fixture: Fixture) -> Path:
    """The folder no file the fixture names may lie outside: the one it was loaded under
    (the bundle, or its declared root), else the bundle enclosing the fixture."""
    if fixture.root is not None:
        return fixture.root.resolve()
    if fixture.directory is None:
        return Path("/")
    return enclosing_bundle(fixture.directory)


# ---------------------------------------------------------------- the source pin binding


def _check_pin(run: _Run) -> dict[str, Any]:
    pin = run.fixture.data["source_pin"]
    doc = run.load(pin["manifest"], "/source_pin/manifest")
    if doc.sha256 != pin["manifest_sha256"]:
        run.add(
            "RUNTIME.PIN.STALE",
            f"{doc.path} has sha256 {doc.sha256}, the fixture binds {pin['manifest_sha256']}",
            "/source_pin/manifest_sha256",
        )
    problems = validate(doc.data, "pin-manifest", file=doc.path, locate=doc.locate)
    if problems:
        run.add(
            "RUNTIME.PIN.MANIFEST_INVALID",
            f"{doc.path}: {problems[0].code}: {problems[0].message}",
            "/source_pin/manifest",
        )
        return {"manifest": pin["manifest"], "verified_markers": 0}
    manifest = doc.data
    for key, code in (
        ("runtime", "RUNTIME.PIN.IDENTITY"),
        ("version", "RUNTIME.PIN.IDENTITY"),
        ("tag", "RUNTIME.PIN.TAG"),
        ("commit", "RUNTIME.PIN.COMMIT"),
    ):
        if str(pin[key]) != str(manifest.get(key)):
            run.add(
                code,
                f"declared {key} {pin[key]!r}, the manifest pins {manifest.get(key)!r}",
                f"/source_pin/{key}",
            )
    files = {f["path"]: f for f in manifest["files"]}
    declared = pin["files"]
    if set(declared) != set(files):
        run.add(
            "RUNTIME.PIN.FILE_SET",
            f"declared files {sorted(declared)}, the manifest pins {sorted(files)}",
            "/source_pin/files",
        )
    for path, sha in sorted(declared.items()):
        if path in files and files[path]["sha256"] != sha:
            run.add(
                "RUNTIME.PIN.FILE_HASH",
                f"{path}: declared {sha}, the manifest pins {files[path]['sha256']}",
                pointer_join("/source_pin/files", path),
            )
    markers = {m["id"]: (f["path"], m) for f in manifest["files"] for m in f["markers"]}
    if pin["marker_count"] != len(markers):
        run.add(
            "RUNTIME.PIN.MARKER_COUNT",
            f"declared {pin['marker_count']} markers, the manifest has {len(markers)}",
            "/source_pin/marker_count",
        )
    verified = 0
    for i, ref in enumerate(pin["markers"]):
        ptr = pointer_join("/source_pin/markers", i)
        if ref["id"] not in markers:
            run.add("RUNTIME.PIN.MARKER_UNKNOWN", f"marker {ref['id']} is not in {doc.path}", ptr)
            continue
        path, m = markers[ref["id"]]
        got = {"file": path, "line": m["line"], "symbol": m.get("symbol")}
        drift = [k for k in ("file", "line", "symbol") if ref[k] != got[k]]
        if drift:
            run.add(
                "RUNTIME.PIN.MARKER_DRIFT",
                f"marker {ref['id']}: declared "
                + ", ".join(f"{k}={ref[k]!r}" for k in drift)
                + "; the manifest has "
                + ", ".join(f"{k}={got[k]!r}" for k in drift),
                ptr,
            )
            continue
        verified += 1
    return {
        "manifest": pin["manifest"],
        "manifest_sha256": doc.sha256,
        "runtime": manifest["runtime"],
        "version": manifest["version"],
        "tag": manifest["tag"],
        "commit": manifest["commit"],
        "files": {p: files[p]["sha256"] for p in sorted(files)},
        "marker_count": len(markers),
        "declared_markers": len(pin["markers"]),
        "verified_markers": verified,
    }


def _check_observations(run: _Run) -> dict[str, list[str]]:
    bound = {m["id"] for m in run.fixture.data["source_pin"]["markers"]}
    out: dict[str, list[str]] = {}
    for i, obs in enumerate(run.fixture.data["observations"]):
        for j, mid in enumerate(obs["markers"]):
            if mid not in bound:
                run.add(
                    "RUNTIME.PIN.MARKER_UNDECLARED",
                    f"observation {obs['id']} rests on {mid}, which source_pin does not bind",
                    pointer_join("/observations", i, "markers", j),
                )
        out[obs["id"]] = list(obs["markers"])
    return out


# ---------------------------------------------------------------- the policy declarations


@dataclass(frozen=True)
class _Policy:
    id: str
    policy: str
    options: Mapping[str, Any]
    pointer: str


def _check_policies(run: _Run, observations: Mapping[str, list[str]]) -> list[_Policy]:
    out: list[_Policy] = []
    seen: set[str] = set()
    for i, decl in enumerate(run.fixture.data["policies"]):
        ptr = pointer_join("/policies", i)
        pid = decl["id"]
        if pid in seen:
            run.add("RUNTIME.POLICY.DUPLICATE", f"policy id {pid!r} is declared twice", ptr)
            continue
        seen.add(pid)
        options = dict(decl.get("options", {}))
        impl = replay_core.make_policy(
            decl["policy"], options, file=run.fixture.path, pointer=f"{ptr}/policy"
        )
        _check_exactness(run, decl, impl, ptr)
        _check_basis(run, decl, observations, ptr)
        _check_tie_break(run, decl, impl, ptr)
        limits = decl.get("claim_limits")
        missing = [k for k in REQUIRED_LIMITS if k not in (limits or [])]
        if missing:
            run.add(
                "RUNTIME.POLICY.CLAIM_LIMITS",
                f"{pid}: claim limits do not name {missing}",
                f"{ptr}/claim_limits" if limits is not None else ptr,
            )
        out.append(_Policy(pid, decl["policy"], options, ptr))
    return out


def _check_exactness(run: _Run, decl: Mapping[str, Any], impl: Any, ptr: str) -> None:
    if "exact_runtime_reproduction" not in decl:
        run.add(
            "RUNTIME.POLICY.EXACTNESS_UNDECLARED",
            f"{decl['id']}: exact_runtime_reproduction must be declared (false)",
            ptr,
        )
    elif decl["exact_runtime_reproduction"] is not False or getattr(
        impl, "exact_runtime_reproduction", False
    ):
        run.add(
            "RUNTIME.POLICY.OVERCLAIM",
            f"{decl['id']}: a teaching policy on logical rows does not reproduce a runtime",
            f"{ptr}/exact_runtime_reproduction",
        )


def _check_basis(
    run: _Run, decl: Mapping[str, Any], observations: Mapping[str, list[str]], ptr: str
) -> None:
    basis = decl.get("evidence_basis")
    if basis is None:
        run.add("RUNTIME.POLICY.EVIDENCE_BASIS", f"{decl['id']}: no evidence basis", ptr)
        return
    kind = basis["kind"]
    cited = basis.get("observations", [])
    unknown = [o for o in cited if o not in observations]
    problem = None
    if unknown:
        problem = f"cites unknown observations {unknown}"
    elif kind == "pinned_source" and not cited:
        problem = "a pinned_source basis must cite at least one observation"
    elif kind == "paper" and not basis.get("reference"):
        problem = "a paper basis needs a reference"
    elif kind == "teaching_rule" and not basis.get("statement"):
        problem = "a teaching_rule basis needs a statement"
    if problem is not None:
        run.add(
            "RUNTIME.POLICY.EVIDENCE_BASIS", f"{decl['id']}: {problem}", f"{ptr}/evidence_basis"
        )


def _check_tie_break(run: _Run, decl: Mapping[str, Any], impl: Any, ptr: str) -> None:
    keys = decl.get("tie_break")
    if not keys or tuple(keys[-2:]) != TOTAL_ORDER_TAIL or len(set(keys)) != len(keys):
        run.add(
            "RUNTIME.POLICY.TIE_BREAK",
            f"{decl['id']}: tie-break {keys!r} is not a total order ending in"
            f" {list(TOTAL_ORDER_TAIL)}",
            f"{ptr}/tie_break" if keys is not None else ptr,
        )
        return
    used = list(getattr(impl, "tie_break_key", ()))
    if list(keys) != used:
        run.add(
            "RUNTIME.POLICY.TIE_BREAK_DRIFT",
            f"{decl['id']}: declared tie-break {list(keys)}, the policy orders by {used}",
            f"{ptr}/tie_break",
        )


# ---------------------------------------------------------------- scenarios and decisions


@dataclass(frozen=True)
class _Scenario:
    id: str
    pointer: str
    sha256: str
    snapshot: Snapshot | None  # None when the snapshot is illegal (it is then not run)


def _load_scenarios(run: _Run) -> list[_Scenario]:
    """Each declared scenario with its bound snapshot, checked for legality."""
    out: list[_Scenario] = []
    seen: set[str] = set()
    for i, scn in enumerate(run.fixture.data["scenarios"]):
        ptr = pointer_join("/scenarios", i)
        sid = scn["id"]
        if sid in seen:
            run.add("RUNTIME.SCENARIO.DUPLICATE", f"scenario id {sid!r} is declared twice", ptr)
            continue
        seen.add(sid)
        doc = run.load(scn["snapshot"], f"{ptr}/snapshot")
        if doc.sha256 != scn["sha256"]:
            run.add(
                "RUNTIME.SCENARIO.HASH",
                f"{doc.path} has sha256 {doc.sha256}, the fixture binds {scn['sha256']}",
                f"{ptr}/sha256",
            )
        snap = build_snapshot(doc.data, doc.path, doc.locate)
        if snap.name != sid:
            run.add(
                "RUNTIME.SCENARIO.NAME",
                f"scenario {sid!r} binds a snapshot named {snap.name!r}",
                f"{ptr}/id",
            )
        legal = check_snapshot(snap, run.sink)
        out.append(_Scenario(sid, ptr, doc.sha256, snap if legal else None))
    return out


def _decide_all(
    run: _Run, scenarios: Sequence[_Scenario], policies: Sequence[_Policy]
) -> tuple[dict[str, Any], list[str]]:
    table: dict[str, Any] = {}
    dependent: list[str] = []
    for scn in scenarios:
        sid, snap = scn.id, scn.snapshot
        if snap is None:
            table[sid] = "not_run: illegal snapshot"
            continue
        row: dict[str, Any] = {}
        flipped_workload, flipped_state = reversed_input(snap)
        for pol in policies:
            kwargs = {"source": snap.display, "pointer": pol.pointer}
            got = decide(
                snap.data["workload"], snap.data["state"], pol.policy, pol.options, **kwargs
            )
            flipped = decide(flipped_workload, flipped_state, pol.policy, pol.options, **kwargs)
            row[pol.id] = got.record
            for code in got.contract_codes:
                run.add(
                    "RUNTIME.DECISION.CONTRACT",
                    f"{sid} / {pol.id}: the plan breaks the contract: {code}",
                    pointer_join("/expected_decisions", sid, pol.id),
                )
            for rid in got.not_ready_scheduled:
                run.add(
                    "RUNTIME.DECISION.NOT_READY",
                    f"{sid} / {pol.id}: {rid} is not ready but was scheduled",
                    pointer_join("/expected_decisions", sid, pol.id),
                )
            if flipped.record != got.record:
                dependent.append(f"{sid}/{pol.id}")
                run.add(
                    "RUNTIME.POLICY.ORDER_DEPENDENT",
                    f"{sid} / {pol.id}: the decision changes when the snapshot lists its"
                    " requests in reverse order (the snapshot does not fix a total order)",
                    scn.pointer,
                )
        table[sid] = row
    return table, dependent


def _compare(run: _Run, table: Mapping[str, Any], policies: Sequence[_Policy]) -> None:
    expected = run.fixture.data["expected_decisions"]
    pids = [p.id for p in policies]
    for sid in expected:
        if sid not in table:
            run.add(
                "RUNTIME.EXPECT.UNKNOWN",
                f"expected decisions for unknown scenario {sid!r}",
                pointer_join("/expected_decisions", sid),
            )
    for sid, row in table.items():
        declared = expected.get(sid, {})
        for pid in declared:
            if pid not in pids:
                run.add(
                    "RUNTIME.EXPECT.UNKNOWN",
                    f"{sid}: expected decision for unknown policy {pid!r}",
                    pointer_join("/expected_decisions", sid, pid),
                )
        if not isinstance(row, Mapping):
            continue  # an illegal snapshot was not run; its findings say why
        for pid in pids:
            ptr = pointer_join("/expected_decisions", sid, pid)
            if pid not in declared:
                run.add("RUNTIME.EXPECT.MISSING", f"{sid} / {pid}: no declared decision", ptr)
                continue
            want, got = declared[pid], row[pid]
            for key in sorted(got):
                if want.get(key) == got[key]:
                    continue
                code = (
                    "RUNTIME.ACCOUNTING.MISMATCH"
                    if key == "accounting"
                    else ("RUNTIME.DECISION.MISMATCH")
                )
                run.add(
                    code,
                    f"{sid} / {pid}: {key} is {got[key]!r}, declared {want.get(key)!r}",
                    pointer_join(ptr, key),
                )


def _differences(run: _Run, table: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i, diff in enumerate(run.fixture.data.get("differences", [])):
        ptr = pointer_join("/differences", i)
        sid, (a, b) = diff["scenario"], diff["policies"]
        row = table.get(sid)
        if sid not in table or (isinstance(row, Mapping) and (a not in row or b not in row)):
            run.add("RUNTIME.EXPECT.UNKNOWN", f"{sid}: unknown scenario or policy", ptr)
            continue
        if not isinstance(row, Mapping):
            continue  # an illegal snapshot was not run; its findings say why
        differs = row[a] != row[b]
        if not differs:
            run.add(
                "RUNTIME.DIFFERENCE.NOT_ACTIVATED",
                f"{sid}: {a} and {b} make the same decision; this state does not separate them",
                ptr,
            )
        out.append({"scenario": sid, "policies": [a, b], "activated": differs})
    return out


# ---------------------------------------------------------------- the Loop 3 reconciliation


def _loop3(run: _Run) -> dict[str, Any]:
    rec = run.fixture.data["loop3_reconciliation"]
    wl = run.load(rec["workload"]["path"], "/loop3_reconciliation/workload/path")
    if wl.sha256 != rec["workload"]["sha256"]:
        run.add(
            "RUNTIME.LOOP3.HASH",
            f"{wl.path} has sha256 {wl.sha256}, the fixture binds {rec['workload']['sha256']}",
            "/loop3_reconciliation/workload/sha256",
        )
    workload_id = wl.data.get("workload_id")
    reports = []
    for i, item in enumerate(rec["reports"]):
        ptr = pointer_join("/loop3_reconciliation/reports", i)
        doc = run.load(item["path"], f"{ptr}/path")
        if doc.sha256 != item["sha256"]:
            run.add(
                "RUNTIME.LOOP3.HASH",
                f"{doc.path} has sha256 {doc.sha256}, the fixture binds {item['sha256']}",
                f"{ptr}/sha256",
            )
        if doc.data.get("workload_id") != workload_id:
            run.add(
                "RUNTIME.LOOP3.BINDING",
                f"{doc.path} reports workload {doc.data.get('workload_id')!r},"
                f" the bound workload is {workload_id!r}",
                f"{ptr}/path",
            )
        asserted = {}
        for pointer, want in sorted(item["assert"].items()):
            got = _at_pointer(doc.data, pointer)
            asserted[pointer] = got
            if got != want:
                run.add(
                    "RUNTIME.LOOP3.NUMBER",
                    f"{doc.path}{pointer} is {got!r} in the checked-in report, declared {want!r}",
                    pointer_join(f"{ptr}/assert", pointer),
                )
        reports.append({"path": item["path"], "sha256": doc.sha256, "asserted": asserted})
    return {
        "workload": {"path": rec["workload"]["path"], "sha256": wl.sha256, "id": workload_id},
        "reports": reports,
        "method": "artifact hashes and checked-in numbers; Loop 3 is not simulated again",
    }


_MISSING = "<absent>"


def _at_pointer(data: Any, pointer: str) -> Any:
    node = data
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node


# ---------------------------------------------------------------- the oracle


def _policy_summary(decl: Mapping[str, Any]) -> dict[str, Any]:
    basis = decl.get("evidence_basis") or {}
    return {
        "id": decl["id"],
        "policy": decl["policy"],
        "options": dict(decl.get("options", {})),
        "exact_runtime_reproduction": decl.get("exact_runtime_reproduction"),
        "evidence_basis": basis.get("kind"),
        "tie_break": decl.get("tie_break"),
        "claim_limits": decl.get("claim_limits"),
    }


def run(fixture: Fixture) -> CheckResult:
    """Run the Loop 10 runtime-policy oracle on `fixture`."""
    refuse_physical(
        fixture.data.get("expected_decisions", {}),
        "/expected_decisions",
        fixture.locate,
        "an expected decision",
    )
    fixture.require_schema(FIXTURE_SCHEMA)
    state = _Run(fixture, _read_root(fixture))
    pin = _check_pin(state)
    observations = _check_observations(state)
    policies = _check_policies(state, observations)
    scenarios = _load_scenarios(state)
    table, dependent = _decide_all(state, scenarios, policies)
    _compare(state, table, policies)
    differences = _differences(state, table)
    loop3 = _loop3(state)
    findings = tuple(state.sink.findings)
    metrics: dict[str, Any] = {
        "oracle": NAME,
        "proves": PROVES,
        "does_not_prove": list(DOES_NOT_PROVE),
        "source_pin": pin,
        "observations": observations,
        "policies": [_policy_summary(d) for d in fixture.data["policies"]],
        "scenarios": [
            {"id": s.id, "sha256": s.sha256, "legal": s.snapshot is not None} for s in scenarios
        ],
        "decisions": table,
        "order_invariance": {
            "permutation": "request lists reversed in workload and state",
            "runs_compared": sum(len(row) for row in table.values() if isinstance(row, Mapping)),
            "order_dependent": dependent,
        },
        "differences": differences,
        "loop3": loop3,
    }
    return CheckResult(
        check=NAME,
        subject=fixture.path,
        findings=findings,
        metrics=metrics,
        evidence_class=EvidenceClass.SYNTHETIC,
        reason=None if findings else "every policy reproduces its declared logical decisions",
    )
