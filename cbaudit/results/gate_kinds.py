"""Gate check kinds for Loop 11. Each is `function(spec, ctx) -> list[CheckResult]`.

Kinds (suggested name -> function: spec fields):

* `compare_results` -> `run_compare`: a, b (or registry), alpha, min_change_pct, allow, fail_on,
  expect_comparable, expected
* `result_registry_audit` -> `run_registry_audit`: contracts, results (default: shipped),
  expected
* `one_control_sensitivity` -> `run_sensitivity`: fixture, expected
* `failure_closure` -> `run_failure_closure`: registry, expected
* `loop11_negative` -> `run_negative`: fixtures, sensitivity, closure, contracts, results,
  min_cases

Paths are relative to the declaring file and stay inside the bundle; `registry:NAME` names a
file of the shipped registry directory instead. The context is typed by a Protocol so this
package does not import the gate (imports flow down).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from cbaudit.io.atomic import atomic_write
from cbaudit.io.loader import Document, load_document
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError, Location, Severity
from cbaudit.results.closure import audit_closure
from cbaudit.results.compare import CompareOptions, compare_all_pairs, compare_pair
from cbaudit.results.metrics import load_metrics
from cbaudit.results.negative import Base, run_negatives
from cbaudit.results.paths import REGISTRY_PREFIX, shipped, split_selector
from cbaudit.results.registries import audit_registries
from cbaudit.results.samples import adapt, select
from cbaudit.results.sensitivity import run_sensitivity as sensitivity_oracle

CONTRACTS_FILE = "paper_contracts.yaml"
RESULTS_FILE = "source_reported_results.yaml"


class GateCtx(Protocol):
    """What a kind needs from the gate's context (cbaudit.gate.context.GateContext)."""

    @property
    def manifest(self) -> str: ...
    @property
    def pointer(self) -> str: ...
    @property
    def update(self) -> bool: ...
    @property
    def bundle_root(self) -> Path: ...
    @property
    def read_root(self) -> Path: ...
    def resolve(self, rel: str, *, field: str = "") -> Path: ...
    def expect_json(
        self, rel: str, actual: Any, check_id: str, *, field: str = "expected"
    ) -> list[Finding]: ...


def _check_id(spec: Mapping[str, Any], ctx: GateCtx) -> str:
    cid = spec.get("id")
    if not isinstance(cid, str) or not cid:
        raise InputError.at(
            "GATE.SPEC.FIELD", "check needs an `id`", ctx.manifest, pointer=ctx.pointer
        )
    return cid


def _field(
    spec: Mapping[str, Any], ctx: GateCtx, name: str, kind: type, required: bool = True
) -> Any:
    if name not in spec:
        if required:
            raise InputError.at(
                "GATE.SPEC.FIELD", f"check needs `{name}`", ctx.manifest, pointer=ctx.pointer
            )
        return None
    value = spec[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InputError.at(
            "GATE.SPEC.FIELD",
            f"`{name}` must be a {kind.__name__}",
            ctx.manifest,
            pointer=f"{ctx.pointer}/{name}",
        )
    return value


def _load(arg: str, ctx: GateCtx, field: str) -> Document:
    """Load a bundle-relative file, or `registry:NAME` from the shipped registry."""
    if arg.startswith(REGISTRY_PREFIX):
        name = arg[len(REGISTRY_PREFIX) :]
        if not name or "/" in name or name.startswith("."):
            raise InputError.at(
                "GATE.PATH.INVALID",
                f"bad registry name {name!r}",
                ctx.manifest,
                pointer=f"{ctx.pointer}/{field}",
            )
        return load_document(shipped(name), expect=None, display=f"registry/{name}")
    return load_document(ctx.resolve(arg, field=field), expect=None, display=arg)


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


def run_registry_audit(spec: Mapping[str, Any], ctx: GateCtx) -> list[CheckResult]:
    """Audit the paper-contract and source-reported-result registries; diff the summary."""
    check = _check_id(spec, ctx)
    c_arg = _field(spec, ctx, "contracts", str, required=False) or REGISTRY_PREFIX + CONTRACTS_FILE
    r_arg = _field(spec, ctx, "results", str, required=False) or REGISTRY_PREFIX + RESULTS_FILE
    expected = _field(spec, ctx, "expected", str)
    c_doc, r_doc = _load(c_arg, ctx, "contracts"), _load(r_arg, ctx, "results")
    audit = audit_registries(
        c_doc.data,
        r_doc.data,
        contracts_file=c_doc.path,
        results_file=r_doc.path,
        locate_contracts=c_doc.locate,
        locate_results=r_doc.locate,
    )
    findings = list(audit.findings) + ctx.expect_json(expected, dict(audit.summary), check)
    s = audit.summary
    reason = (
        f"{s.get('contracts')} contracts, {s.get('results')} results, "
        f"{len(s.get('comparable_pairs', []))} comparable pairs of {s.get('pairs_checked')}; "
        f"generic ranking allowed: {str(s.get('generic_policy_ranking_allowed')).lower()}"
    )
    return [
        _result(
            check,
            f"{c_doc.path} + {r_doc.path}",
            findings,
            s,
            EvidenceClass.SOURCE_REPORTED,
            reason,
        )
    ]


def _options(spec: Mapping[str, Any], ctx: GateCtx) -> CompareOptions:
    alpha = spec.get("alpha", 0.05)
    min_change = spec.get("min_change_pct", 0.0)
    allow = spec.get("allow", [])
    fail_on = spec.get("fail_on", [])
    for name, value, kind in (
        ("alpha", alpha, (int, float)),
        ("min_change_pct", min_change, (int, float)),
        ("allow", allow, list),
        ("fail_on", fail_on, list),
    ):
        if not isinstance(value, kind) or isinstance(value, bool):
            raise InputError.at(
                "GATE.SPEC.FIELD",
                f"`{name}` has the wrong type",
                ctx.manifest,
                pointer=f"{ctx.pointer}/{name}",
            )
    try:
        return CompareOptions(
            alpha=float(alpha),
            min_change=float(min_change) / 100.0,
            allow=frozenset(str(x) for x in allow),
            fail_on=frozenset(str(x) for x in fail_on),
        )
    except Exception as err:  # UsageError from option validation: a bad spec is bad input
        raise InputError.at("GATE.SPEC.FIELD", str(err), ctx.manifest, pointer=ctx.pointer) from err


def run_compare(spec: Mapping[str, Any], ctx: GateCtx) -> list[CheckResult]:
    """`compare-results` as a check: two results (`a`, `b`) or all pairs of a `registry`."""
    check = _check_id(spec, ctx)
    opts = _options(spec, ctx)
    expected = _field(spec, ctx, "expected", str)
    metrics = load_metrics()
    registry = _field(spec, ctx, "registry", str, required=False)
    findings: list[Finding] = []
    if registry is not None:
        doc = _load(registry, ctx, "registry")
        results, summary = compare_all_pairs(adapt(doc), metrics, opts)
        actual: dict[str, Any] = {
            "summary": summary,
            "pairs": [r.metrics for r in results if r.check == "compare-results"],
        }
        comparable = bool(summary["comparable_pairs"])
    else:
        a_arg, b_arg = _field(spec, ctx, "a", str), _field(spec, ctx, "b", str)
        sides = []
        for name, arg in (("a", a_arg), ("b", b_arg)):
            path, sel = split_selector(arg)
            doc = _load(path, ctx, name)
            sides.append(select(adapt(doc), sel, doc.path))
        results = compare_pair(sides[0], sides[1], metrics, opts)
        actual = {"pair": results[0].metrics}
        comparable = bool(results[0].metrics["comparable"])
    want = spec.get("expect_comparable")
    if want is not None and bool(want) != comparable:
        findings.append(
            Finding(
                "COMPARE.EXPECTATION.COMPARABLE",
                f"expected comparable={bool(want)}, found {comparable}",
                Severity.ERROR,
                Location(file=ctx.manifest, pointer=f"{ctx.pointer}/expect_comparable"),
            )
        )
    findings += ctx.expect_json(expected, actual, check)
    head = results[0] if results else None
    reason = (
        head.reason
        if head is not None and registry is None
        else (f"{len(actual.get('summary', {}).get('comparable_pairs', []))} comparable pairs")
    )
    evidence = head.evidence_class if head is not None else EvidenceClass.SOURCE_REPORTED
    own = [f for r in results for f in r.findings]
    return [
        _result(
            check,
            registry or f"{spec.get('a')} vs {spec.get('b')}",
            own + findings,
            actual,
            evidence,
            str(reason),
        )
    ]


def run_sensitivity(spec: Mapping[str, Any], ctx: GateCtx) -> list[CheckResult]:
    """The one-control sensitivity oracle on its fixture; diff the ledger report."""
    check = _check_id(spec, ctx)
    fixture = _field(spec, ctx, "fixture", str)
    expected = _field(spec, ctx, "expected", str)
    doc = _load(fixture, ctx, "fixture")
    out = sensitivity_oracle(doc.data, file=doc.path, locate=doc.locate)
    findings = list(out.findings) + ctx.expect_json(expected, dict(out.report), check)
    rep = out.report
    reason = f"{rep.get('case_count')} one-control cases over {rep.get('axes_varied')} axes"
    return [_result(check, doc.path, findings, rep, EvidenceClass.SYNTHETIC, reason)]


def contained_resolver(base: Path, root: Path, manifest: str = "") -> Callable[[str], Path]:
    """Resolve paths relative to `base` (a file's directory), refusing escapes from `root`."""
    top = root.resolve()

    def resolve(rel: str) -> Path:
        if Path(rel).is_absolute():
            raise InputError.at("GATE.PATH.ABSOLUTE", f"path {rel!r} must be relative", manifest)
        target = (base / rel).resolve()
        if target != top and top not in target.parents:
            raise InputError.at("GATE.PATH.ESCAPE", f"path {rel!r} escapes {top.name}", manifest)
        return target

    return resolve


def run_failure_closure(spec: Mapping[str, Any], ctx: GateCtx) -> list[CheckResult]:
    """Verify the failure-closure registry's sha256 bindings (rewrite them with --update)."""
    check = _check_id(spec, ctx)
    reg = _field(spec, ctx, "registry", str)
    expected = _field(spec, ctx, "expected", str, required=False)
    path = ctx.resolve(reg, field="registry")
    doc = load_document(path, expect=None, display=reg)
    audit = audit_closure(
        doc.data,
        file=doc.path,
        resolve=contained_resolver(path.parent, ctx.read_root, ctx.manifest),
        locate=doc.locate,
        update=ctx.update,
    )
    if ctx.update and audit.updated is not None and audit.updated != doc.data:
        from cbaudit.model.canonical import dumps_canonical

        atomic_write(path, dumps_canonical(audit.updated))
    findings = list(audit.findings)
    if expected is not None:
        # pending bindings are reported as findings; leaving them out of the expected report
        # keeps it stable while earlier loops land
        stable = {k: v for k, v in audit.summary.items() if k != "pending_bindings"}
        findings += ctx.expect_json(expected, stable, check)
    s = audit.summary
    reason = (
        f"{s.get('classes')} classes, {s.get('bindings')} bindings, "
        f"{s.get('prior_rejection_references')} prior rejection references, "
        f"{s.get('loop11_rules')} Loop 11 rules; pending: {s.get('pending_bindings') or 'none'}"
    )
    return [_result(check, doc.path, findings, s, EvidenceClass.DERIVED, reason)]


def run_negative(spec: Mapping[str, Any], ctx: GateCtx) -> list[CheckResult]:
    """Apply every Loop 11 negative fixture and check its declared finding code."""
    check = _check_id(spec, ctx)
    fixtures = _load(_field(spec, ctx, "fixtures", str), ctx, "fixtures")
    c_doc = _load(
        _field(spec, ctx, "contracts", str, required=False) or REGISTRY_PREFIX + CONTRACTS_FILE,
        ctx,
        "contracts",
    )
    r_doc = _load(
        _field(spec, ctx, "results", str, required=False) or REGISTRY_PREFIX + RESULTS_FILE,
        ctx,
        "results",
    )
    s_doc = _load(_field(spec, ctx, "sensitivity", str), ctx, "sensitivity")
    closure_rel = _field(spec, ctx, "closure", str)
    closure_path = ctx.resolve(closure_rel, field="closure")
    k_doc = load_document(closure_path, expect=None, display=closure_rel)
    min_cases = _field(spec, ctx, "min_cases", int, required=False) or 28
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
        fixtures.data, bases, file=fixtures.path, locate=fixtures.locate, min_cases=min_cases
    )
    s = run.summary
    reason = (
        f"{s.get('rejected_as_declared')} of {s.get('cases')} negative cases rejected as declared"
    )
    return [_result(check, fixtures.path, list(run.findings), s, EvidenceClass.DERIVED, reason)]
