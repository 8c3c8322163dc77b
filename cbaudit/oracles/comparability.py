"""Loop 11 (article 0x0E): paper contracts, source-reported results, comparability, one-control
sensitivity and failure closure, as check kinds over the `cbaudit.results` library.

Kinds (spec fields; schemas/check-<kind>.schema.json):

* `compare_results`: a, b (or registry), alpha, min_change_pct, allow, fail_on,
  expect_comparable, expected
* `result_registry_audit`: contracts, results (default: the shipped registries), expected
* `one_control_sensitivity`: fixture, expected
* `failure_closure`: registry, expected
* `loop11_negative`: fixtures, sensitivity, closure, contracts, results, min_cases

Paths are relative to the declaring file and stay inside the bundle; `registry:NAME` names a
file of the registry shipped inside cbaudit instead. The fixtures these checks read are
mutation targets too (`results:*`): each is judged in memory with its fixed partner.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.checks.context import REGISTRY_PREFIX, GateContext, registry_name
from cbaudit.checks.interface import CheckKind, FixtureFile, Mutation, Target, Verdict
from cbaudit.checks.spec import CheckSpec, converted
from cbaudit.checks.targets import error_codes, verdict
from cbaudit.io.loader import Document, load_document
from cbaudit.io.reads import note_read
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError, Location, Severity
from cbaudit.results.paths import shipped, split_selector

if TYPE_CHECKING:
    from cbaudit.results.compare import CompareOptions

# The comparability library loads when a check of these kinds runs (fast start).

CONTRACTS_FILE = "paper_contracts.yaml"
RESULTS_FILE = "source_reported_results.yaml"
DEFAULT_CONTRACTS = REGISTRY_PREFIX + CONTRACTS_FILE
DEFAULT_RESULTS = REGISTRY_PREFIX + RESULTS_FILE


def _strings(value: Any) -> frozenset[str]:
    return frozenset(str(x) for x in value)


@dataclass(frozen=True, kw_only=True)
class CompareSpec(CheckSpec):
    """Fields of `compare_results`."""

    expected: str
    a: str | None = None
    b: str | None = None
    registry: str | None = None
    alpha: float = 0.05
    min_change_pct: float = 0.0
    allow: frozenset[str] = field(default=frozenset(), metadata=converted(_strings))
    fail_on: frozenset[str] = field(default=frozenset(), metadata=converted(_strings))
    expect_comparable: bool | None = None


@dataclass(frozen=True, kw_only=True)
class RegistryAuditSpec(CheckSpec):
    """Fields of `result_registry_audit`."""

    expected: str
    contracts: str = DEFAULT_CONTRACTS
    results: str = DEFAULT_RESULTS


@dataclass(frozen=True, kw_only=True)
class SensitivitySpec(CheckSpec):
    """Fields of `one_control_sensitivity`."""

    fixture: str
    expected: str


@dataclass(frozen=True, kw_only=True)
class ClosureSpec(CheckSpec):
    """Fields of `failure_closure`."""

    registry: str
    expected: str | None = None


@dataclass(frozen=True, kw_only=True)
class Loop11NegativeSpec(CheckSpec):
    """Fields of `loop11_negative`."""

    fixtures: str
    sensitivity: str
    closure: str
    contracts: str = DEFAULT_CONTRACTS
    results: str = DEFAULT_RESULTS
    min_cases: int = 28


def _path_of(arg: str, ctx: GateContext, field: str) -> tuple[Path, str]:
    """A bundle-relative file, or `registry:NAME` in the shipped registry; with its display."""
    if arg.startswith(REGISTRY_PREFIX):
        name = registry_name(arg, ctx, field)
        return shipped(name), f"registry/{name}"
    return ctx.resolve(arg, field=field), arg


def _load(arg: str, ctx: GateContext, field: str) -> Document:
    """Load a bundle-relative file, or `registry:NAME` from the shipped registry."""
    path, display = _path_of(arg, ctx, field)
    return load_document(path, expect=None, display=display)


def _result(
    check: str,
    subject: str,
    findings: list[Finding],
    metrics: Mapping[str, Any],
    evidence: EvidenceClass,
    reason: str,
) -> CheckResult:
    return CheckResult(
        check=check,
        subject=subject,
        findings=tuple(findings),
        metrics=dict(metrics),
        evidence_class=evidence,
        reason=reason,
    )


def run_registry_audit(spec: RegistryAuditSpec, ctx: GateContext) -> list[CheckResult]:
    """Audit the paper-contract and source-reported-result registries; diff the summary."""
    from cbaudit.results.registries import audit_registries

    c_doc, r_doc = _load(spec.contracts, ctx, "contracts"), _load(spec.results, ctx, "results")
    audit = audit_registries(
        c_doc.data,
        r_doc.data,
        contracts_file=c_doc.path,
        results_file=r_doc.path,
        locate_contracts=c_doc.locate,
        locate_results=r_doc.locate,
    )
    findings = list(audit.findings)
    if audit.summary.get("valid") is not False:  # no summary to compare when a schema failed
        findings += ctx.expect_json(spec.expected, dict(audit.summary), spec.id)
    s = audit.summary
    reason = (
        f"{s.get('contracts')} contracts, {s.get('results')} results, "
        f"{len(s.get('comparable_pairs', []))} comparable pairs of {s.get('pairs_checked')}; "
        f"generic ranking allowed: {str(s.get('generic_policy_ranking_allowed')).lower()}"
    )
    subject = f"{c_doc.path} + {r_doc.path}"
    return [_result(spec.id, subject, findings, s, EvidenceClass.SOURCE_REPORTED, reason)]


def _options(spec: CompareSpec, ctx: GateContext) -> CompareOptions:
    from cbaudit.results.compare import CompareOptions

    try:
        return CompareOptions(
            alpha=float(spec.alpha),
            min_change=float(spec.min_change_pct) / 100.0,
            allow=spec.allow,
            fail_on=spec.fail_on,
        )
    except Exception as err:  # UsageError from option validation: a bad spec is bad input
        raise ctx.error("GATE.SPEC.INVALID", str(err)) from err


def _compared(spec: CompareSpec, ctx: GateContext) -> tuple[list[CheckResult], dict[str, Any]]:
    """The comparison's results and the report the expected file holds."""
    from cbaudit.results.compare import compare_all_pairs, compare_pair
    from cbaudit.results.metrics import load_metrics
    from cbaudit.results.samples import adapt, select

    opts, metrics = _options(spec, ctx), load_metrics()
    if spec.registry is not None:
        doc = _load(spec.registry, ctx, "registry")
        results, summary = compare_all_pairs(adapt(doc), metrics, opts)
        pairs = [r.metrics for r in results if r.check == "compare-results"]
        return results, {"summary": summary, "pairs": pairs}
    sides = []
    for name, arg in (("a", spec.a), ("b", spec.b)):
        assert arg is not None  # the schema requires a and b without a registry
        path, sel = split_selector(arg)
        doc = _load(path, ctx, name)
        sides.append(select(adapt(doc), sel, doc.path))
    results = compare_pair(sides[0], sides[1], metrics, opts)
    return results, {"pair": results[0].metrics}


def run_compare(spec: CompareSpec, ctx: GateContext) -> list[CheckResult]:
    """`compare-results` as a check: two results (`a`, `b`) or all pairs of a `registry`."""
    results, actual = _compared(spec, ctx)
    if spec.registry is not None:
        comparable = bool(actual["summary"]["comparable_pairs"])
    else:
        comparable = bool(actual["pair"]["comparable"])
    findings: list[Finding] = []
    want = spec.expect_comparable
    if want is not None and want != comparable:
        findings.append(
            Finding(
                "COMPARE.EXPECTATION.COMPARABLE",
                f"expected comparable={want}, found {comparable}",
                Severity.ERROR,
                Location(file=ctx.manifest, pointer=f"{ctx.pointer}/expect_comparable"),
            )
        )
    findings += ctx.expect_json(spec.expected, actual, spec.id)
    head = results[0] if results else None
    reason = (
        head.reason
        if head is not None and spec.registry is None
        else (f"{len(actual.get('summary', {}).get('comparable_pairs', []))} comparable pairs")
    )
    evidence = head.evidence_class if head is not None else EvidenceClass.SOURCE_REPORTED
    own = [f for r in results for f in r.findings]
    subject = spec.registry or f"{spec.a} vs {spec.b}"
    return [_result(spec.id, subject, own + findings, actual, evidence, str(reason))]


def run_sensitivity(spec: SensitivitySpec, ctx: GateContext) -> list[CheckResult]:
    """The one-control sensitivity oracle on its fixture; diff the ledger report."""
    from cbaudit.results.sensitivity import run_sensitivity as sensitivity_oracle

    doc = _load(spec.fixture, ctx, "fixture")
    out = sensitivity_oracle(doc.data, file=doc.path, locate=doc.locate)
    findings = list(out.findings) + ctx.expect_json(spec.expected, dict(out.report), spec.id)
    rep = out.report
    reason = f"{rep.get('case_count')} one-control cases over {rep.get('axes_varied')} axes"
    return [_result(spec.id, doc.path, findings, rep, EvidenceClass.SYNTHETIC, reason)]


def contained_resolver(base: Path, root: Path, manifest: str = "") -> Callable[[str], Path]:
    """Resolve paths relative to `base` (a file's directory), refusing escapes from `root`;
    a resolved binding is read (hashed), so it is noted in the read log."""
    top = root.resolve()

    def resolve(rel: str) -> Path:
        target = (base / rel).resolve()
        if target != top and top not in target.parents:
            raise InputError.at("GATE.PATH.ESCAPE", f"path {rel!r} escapes {top.name}", manifest)
        if Path(rel).is_absolute():
            raise InputError.at("GATE.PATH.ABSOLUTE", f"path {rel!r} must be relative", manifest)
        if target.is_file():
            note_read(target, rel)
        return target

    return resolve


def run_failure_closure(spec: ClosureSpec, ctx: GateContext) -> list[CheckResult]:
    """Verify the failure-closure registry's sha256 bindings (rewrite them with --update)."""
    from cbaudit.results.closure import audit_closure

    path = ctx.resolve(spec.registry, field="registry")
    doc = load_document(path, expect=None, display=spec.registry)
    audit = audit_closure(
        doc.data,
        file=doc.path,
        resolve=contained_resolver(path.parent, ctx.read_root, ctx.manifest),
        locate=doc.locate,
        update=ctx.update,
    )
    if ctx.update and audit.updated is not None and audit.updated != doc.data:
        from cbaudit.model.canonical import dumps_canonical

        ctx.write_text(path, dumps_canonical(audit.updated))
    findings = list(audit.findings)
    if spec.expected is not None:
        # pending bindings are reported as findings; leaving them out of the expected report
        # keeps it stable while earlier loops land
        stable = {k: v for k, v in audit.summary.items() if k != "pending_bindings"}
        findings += ctx.expect_json(spec.expected, stable, spec.id)
    s = audit.summary
    reason = (
        f"{s.get('classes')} classes, {s.get('bindings')} bindings, "
        f"{s.get('prior_rejection_references')} prior rejection references, "
        f"{s.get('loop11_rules')} Loop 11 rules; pending: {s.get('pending_bindings') or 'none'}"
    )
    return [_result(spec.id, doc.path, findings, s, EvidenceClass.DERIVED, reason)]


def run_negative(spec: Loop11NegativeSpec, ctx: GateContext) -> list[CheckResult]:
    """Apply every Loop 11 negative fixture and check its declared finding code."""
    from cbaudit.results.closure import audit_closure
    from cbaudit.results.negative import Base, run_negatives
    from cbaudit.results.registries import audit_registries
    from cbaudit.results.sensitivity import run_sensitivity as sensitivity_oracle

    fixtures = _load(spec.fixtures, ctx, "fixtures")
    c_doc = _load(spec.contracts, ctx, "contracts")
    r_doc = _load(spec.results, ctx, "results")
    s_doc = _load(spec.sensitivity, ctx, "sensitivity")
    closure_path = ctx.resolve(spec.closure, field="closure")
    k_doc = load_document(closure_path, expect=None, display=spec.closure)
    resolver = contained_resolver(closure_path.parent, ctx.read_root, ctx.manifest)

    def registries(c: Any, r: Any) -> list[Finding]:
        return list(
            audit_registries(c, r, contracts_file=c_doc.path, results_file=r_doc.path).findings
        )

    bases = {
        "contracts": Base(c_doc.data, lambda d: registries(d, r_doc.data)),
        "results": Base(r_doc.data, lambda d: registries(c_doc.data, d)),
        "sensitivity": Base(s_doc.data, lambda d: sensitivity_oracle(d, file=s_doc.path).findings),
        "closure": Base(
            k_doc.data, lambda d: audit_closure(d, file=k_doc.path, resolve=resolver).findings
        ),
    }
    run = run_negatives(
        fixtures.data, bases, file=fixtures.path, locate=fixtures.locate, min_cases=spec.min_cases
    )
    s = run.summary
    reason = (
        f"{s.get('rejected_as_declared')} of {s.get('cases')} negative cases rejected as declared"
    )
    return [_result(spec.id, fixtures.path, list(run.findings), s, EvidenceClass.DERIVED, reason)]


# ------------------------------------------------ mutation targets: each fixture in memory


@dataclass(frozen=True)
class _KindIs:
    """`matches` of a registry target: the document's `kind` field (picklable)."""

    kind: str

    def __call__(self, data: Mapping[str, Any]) -> bool:
        return data.get("kind") == self.kind


def _sensitivity_evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    from cbaudit.results.sensitivity import run_sensitivity as sensitivity_oracle

    return verdict(sensitivity_oracle(data, file="<mutant>").findings)


@cache
def _shipped_registry(name: str) -> Any:
    """A shipped registry file, loaded once: the fixed partner of a mutated registry."""
    return load_document(shipped(name), expect=None, display=f"registry/{name}").data


def _contracts_evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    from cbaudit.results.registries import audit_registries

    partner = _shipped_registry(RESULTS_FILE)
    audit = audit_registries(data, partner, contracts_file="<mutant>", results_file="<shipped>")
    return verdict(audit.findings)


def _results_evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    from cbaudit.results.registries import audit_registries

    partner = _shipped_registry(CONTRACTS_FILE)
    audit = audit_registries(partner, data, contracts_file="<shipped>", results_file="<mutant>")
    return verdict(audit.findings)


def _bundle_root(directory: Path) -> Path:
    """The nearest folder holding `bundle.yaml` (else `directory`): bindings stay inside it."""
    for folder in (directory, *directory.parents):
        if (folder / "bundle.yaml").is_file():
            return folder
    return directory


def _closure_evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    from cbaudit.results.closure import audit_closure

    base = directory.resolve() if directory is not None else None
    top = _bundle_root(base) if base is not None else None

    def resolve(rel: str) -> Path:
        if base is None or top is None:
            raise InputError.at("MUTATE.BUNDLE.PATH", f"no fixture folder to resolve {rel!r}")
        target = (base / rel).resolve()
        if Path(rel).is_absolute() or (target != top and top not in target.parents):
            raise InputError.at("MUTATE.BUNDLE.PATH", f"path {rel!r} escapes the bundle")
        return target

    try:
        audit = audit_closure(data, file="<mutant>", resolve=resolve)
    except InputError as err:
        return Verdict(error_codes(err.findings), unusable=True)
    return verdict(audit.findings)


SENSITIVITY_TARGET = Target(
    "results:sensitivity",
    "11",
    "Loop 11 one-control sensitivity on the shared analytical fixture",
    _KindIs("cbaudit.sensitivity-fixture"),
    _sensitivity_evaluate,
)
CONTRACTS_TARGET = Target(
    "results:contracts",
    "11",
    "Loop 11 paper-contract registry (audited with the shipped result registry)",
    _KindIs("cbaudit.paper-contracts"),
    _contracts_evaluate,
)
RESULTS_TARGET = Target(
    "results:results",
    "11",
    "Loop 11 source-reported result registry (audited with the shipped contracts)",
    _KindIs("cbaudit.source-reported-results"),
    _results_evaluate,
)
CLOSURE_TARGET = Target(
    "results:closure",
    "11",
    "Loop 11 failure closure: classes bound to artifacts and rejection cases",
    _KindIs("cbaudit.failure-closure"),
    _closure_evaluate,
)


@dataclass(frozen=True)
class _FixtureFields:
    """The valid fixture files named by some fields of a spec (a patch file is a negative,
    not a base to mutate), each a bundle file or a shipped registry file."""

    fields: tuple[str, ...]

    def __call__(self, spec: Any, ctx: GateContext) -> list[FixtureFile]:
        out = []
        for name in self.fields:
            path, display = _path_of(getattr(spec, name), ctx, name)
            if display.startswith("registry/"):
                out.append(FixtureFile(path, display))
                continue
            raw = load_document(path).data if path.is_file() else None
            if isinstance(raw, Mapping) and "patch" in raw:
                continue
            out.append(FixtureFile(path, ctx.display(path)))  # a missing file fails to load
        return out


COMPARE_RESULTS: CheckKind[CompareSpec] = CheckKind(
    name="compare_results",
    spec_type=CompareSpec,
    run=run_compare,
    summary="Loop 11: compare-results on two results or every pair of a registry",
)
RESULT_REGISTRY_AUDIT: CheckKind[RegistryAuditSpec] = CheckKind(
    name="result_registry_audit",
    spec_type=RegistryAuditSpec,
    run=run_registry_audit,
    summary="Loop 11: the paper-contract and source-reported-result registries",
    mutation=Mutation((CONTRACTS_TARGET, RESULTS_TARGET), _FixtureFields(("contracts", "results"))),
)
ONE_CONTROL_SENSITIVITY: CheckKind[SensitivitySpec] = CheckKind(
    name="one_control_sensitivity",
    spec_type=SensitivitySpec,
    run=run_sensitivity,
    summary="Loop 11: one control varied at a time on the shared analytical fixture",
    mutation=Mutation((SENSITIVITY_TARGET,), _FixtureFields(("fixture",))),
)
FAILURE_CLOSURE: CheckKind[ClosureSpec] = CheckKind(
    name="failure_closure",
    spec_type=ClosureSpec,
    run=run_failure_closure,
    summary="Loop 11: failure classes bound by sha256 to the artifacts that close them",
    mutation=Mutation((CLOSURE_TARGET,), _FixtureFields(("registry",))),
)
LOOP11_NEGATIVE: CheckKind[Loop11NegativeSpec] = CheckKind(
    name="loop11_negative",
    spec_type=Loop11NegativeSpec,
    run=run_negative,
    summary="Loop 11: every negative fixture rejected with its declared finding code",
)
