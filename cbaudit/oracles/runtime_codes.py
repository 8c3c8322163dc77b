"""Finding codes of the Loop 10 runtime-policy oracle (article 0x0D) and their collector."""

from __future__ import annotations

from collections.abc import Mapping

from cbaudit.model import Finding, InputError, Location

CODES: Mapping[str, str] = {
    # the source pin binding
    "RUNTIME.PIN.STALE": "the pin manifest's sha256 is not the one the fixture binds",
    "RUNTIME.PIN.MANIFEST_INVALID": "the bound pin manifest does not fit the pin-manifest schema",
    "RUNTIME.PIN.IDENTITY": "the declared runtime or version is not the manifest's",
    "RUNTIME.PIN.TAG": "the declared tag is not the manifest's",
    "RUNTIME.PIN.COMMIT": "the declared commit is not the manifest's",
    "RUNTIME.PIN.FILE_SET": "the declared source files are not exactly the manifest's files",
    "RUNTIME.PIN.FILE_HASH": "a declared source file sha256 is not the manifest's",
    "RUNTIME.PIN.MARKER_COUNT": "the declared marker count is not the manifest's",
    "RUNTIME.PIN.MARKER_UNKNOWN": "a declared marker id does not exist in the manifest",
    "RUNTIME.PIN.MARKER_DRIFT": "a declared marker's file, line or symbol is not the manifest's",
    "RUNTIME.PIN.MARKER_UNDECLARED": "a source observation rests on a marker the pin does not bind",
    # the policy declarations
    "RUNTIME.POLICY.DUPLICATE": "two policy declarations share an id",
    "RUNTIME.POLICY.OVERCLAIM": "a policy claims exact runtime reproduction",
    "RUNTIME.POLICY.EXACTNESS_UNDECLARED": "a policy does not declare exact_runtime_reproduction",
    "RUNTIME.POLICY.EVIDENCE_BASIS": "a policy's evidence basis is missing or names nothing known",
    "RUNTIME.POLICY.TIE_BREAK": "a policy's tie-break is missing or not a total order",
    "RUNTIME.POLICY.TIE_BREAK_DRIFT": "the declared tie-break is not the one the policy uses",
    "RUNTIME.POLICY.CLAIM_LIMITS": "a policy does not state every claim limit",
    "RUNTIME.POLICY.ORDER_DEPENDENT": "a decision changes with the order a snapshot lists requests",
    # the scenarios (scheduler snapshots)
    "RUNTIME.SCENARIO.DUPLICATE": "two scenarios share an id",
    "RUNTIME.SCENARIO.HASH": "a snapshot's sha256 is not the one the fixture binds",
    "RUNTIME.SCENARIO.NAME": "a scenario id is not the name its snapshot declares",
    "RUNTIME.SNAPSHOT.SHAPE": "a snapshot's state and workload do not describe the same requests",
    "RUNTIME.SNAPSHOT.BUDGET": "a snapshot's budgets are illegal (e.g. tokens < sequences)",
    "RUNTIME.SNAPSHOT.KV": "running requests hold more KV blocks than the snapshot has",
    "RUNTIME.SNAPSHOT.FRONTIER": "a request view's frontiers are impossible",
    "RUNTIME.SNAPSHOT.READINESS": "a request view's readiness is inconsistent",
    "RUNTIME.ROW.PHYSICAL_BLOCK": "a decision row or snapshot view carries physical block ids",
    # the decisions
    "RUNTIME.EXPECT.MISSING": "a policy x scenario decision is not declared",
    "RUNTIME.EXPECT.UNKNOWN": "a declaration names a scenario or policy that does not exist",
    "RUNTIME.DECISION.MISMATCH": "a policy's decision differs from the declared decision",
    "RUNTIME.DECISION.CONTRACT": "a policy's plan breaks the plan/result contract",
    "RUNTIME.DECISION.NOT_READY": "a policy scheduled a request that is not ready",
    "RUNTIME.ACCOUNTING.MISMATCH": "declared recompute-versus-semantic accounting is wrong",
    "RUNTIME.DIFFERENCE.NOT_ACTIVATED": "a scenario declared to separate two policies does not",
    # the Loop 3 reconciliation
    "RUNTIME.LOOP3.HASH": "a bound Loop 3 artifact's sha256 is not the one the fixture binds",
    "RUNTIME.LOOP3.NUMBER": "a re-asserted Loop 3 number differs from the checked-in report",
    "RUNTIME.LOOP3.BINDING": "a Loop 3 report does not belong to the bound workload",
    # unusable input
    "RUNTIME.FIXTURE.PATH": "a path in the fixture is absolute, outside the bundle or missing",
}


class Sink:
    """Collects located findings; refuses codes outside `CODES` (a programming error)."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, code: str, message: str, location: Location) -> None:
        if code not in CODES:
            raise KeyError(code)
        self.findings.append(Finding(code, message, location=location))


def unusable(code: str, message: str, location: Location) -> InputError:
    """An `InputError` with one located finding of this oracle."""
    if code not in CODES:
        raise KeyError(code)
    return InputError(Finding(code, message, location=location))
