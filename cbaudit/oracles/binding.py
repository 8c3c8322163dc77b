"""Hash binding (article 0x0D and 0x11A) as check kinds `pin` and `formula_audit`.

`pin`: a pin manifest's self-checks always, and its verification against `git_dir` and/or
`source` when they are available here. `formula_audit`: the formula registry's self-checks
always, and its binding to the article's display equations when `article` is available.

Each path field takes the forms of `GateContext.spec_path` (bundle-relative, `{repo_path:
...}`, or `${VAR}`, an external input). A source, article or manifest that is not available
makes that part `not_run` with the reason, never `passed`. The results carry the declared
evidence class (default `derived`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind
from cbaudit.checks.spec import CheckSpec
from cbaudit.model import CheckResult, CheckStatus, EvidenceClass, UsageError

if TYPE_CHECKING:
    from cbaudit.pins.sources import SourceReader

# The pin and formula libraries load when a check of these kinds runs (fast start).

SOURCE_FIELDS = ("git_dir", "source")


@dataclass(frozen=True, kw_only=True)
class PinSpec(CheckSpec):
    """Fields of `pin`."""

    manifest: Any
    git_dir: Any = None
    source: Any = None


@dataclass(frozen=True, kw_only=True)
class FormulaAuditSpec(CheckSpec):
    """Fields of `formula_audit`."""

    registry: Any
    article: Any = None


def _open(field: str, path: Path) -> SourceReader:
    from cbaudit.pins.sources import GitSource, open_source

    return GitSource.open(path) if field == "git_dir" else open_source(path)


def _part(result: CheckResult) -> str:
    """A short, unique subject: `manifest`, `revision`, `verify:FIELD`, or the file path."""
    if result.check == "pin.file":
        return result.subject
    if result.check == "pin.verify":
        return f"verify:{result.subject}"
    return result.check.removeprefix("pin.")


def run_pin(spec: PinSpec, ctx: GateContext) -> list[CheckResult]:
    """Run one `pin` check: `pin.manifest`, then `pin.revision`/`pin.file` or `pin.verify`."""
    from cbaudit.pins.manifest import consistency_findings, load_manifest
    from cbaudit.pins.verify import verify

    evidence = spec.evidence_class or EvidenceClass.DERIVED
    where = ctx.spec_path(spec.manifest, "manifest")
    if where.path is None:
        return [
            CheckResult(
                "pin.manifest",
                "manifest",
                evidence_class=evidence,
                status=CheckStatus.NOT_RUN,
                reason=f"manifest not available: {where.reason}",
            )
        ]
    loaded = load_manifest(where.path, display=where.display)
    parts: list[CheckResult] = [
        CheckResult("pin.manifest", loaded.document.path, tuple(consistency_findings(loaded)))
    ]
    declared = [(f, getattr(spec, f)) for f in SOURCE_FIELDS if getattr(spec, f) is not None]
    if not declared:
        parts.append(
            CheckResult(
                "pin.verify",
                "source",
                status=CheckStatus.NOT_RUN,
                reason="no source or git_dir declared; only the manifest was checked",
            )
        )
    for field, value in declared:
        src = ctx.spec_path(value, field)
        if src.path is None:
            parts.append(
                CheckResult(
                    "pin.verify",
                    field,
                    status=CheckStatus.NOT_RUN,
                    reason=f"source not available: {src.reason}",
                )
            )
            continue
        try:
            reader = _open(field, src.path)
        except UsageError as err:
            raise ctx.error("GATE.SPEC.SOURCE", str(err), field) from err
        verification = verify(loaded, reader)
        parts.extend(r for r in verification.results if r.check != "pin.manifest")
    return [dataclasses.replace(r, subject=_part(r), evidence_class=evidence) for r in parts]


def run_formula_audit(spec: FormulaAuditSpec, ctx: GateContext) -> list[CheckResult]:
    """Run one `formula_audit` check: subjects `registry`, `examples`, `binding`."""
    from cbaudit.formulas.audit import audit, read_article
    from cbaudit.formulas.registry import load_registry

    evidence = spec.evidence_class or EvidenceClass.DERIVED
    where = ctx.spec_path(spec.registry, "registry")
    if where.path is None:
        return [
            CheckResult(
                "formula.registry",
                "registry",
                evidence_class=evidence,
                status=CheckStatus.NOT_RUN,
                reason=f"registry not available: {where.reason}",
            )
        ]
    reg = load_registry(where.path, display=where.display)
    article = None
    reason = "no article declared; the equation bindings were not checked"
    if spec.article is not None:
        found = ctx.spec_path(spec.article, "article")
        if found.path is None:
            reason = f"article not available: {found.reason}"
        else:
            article = read_article(found.path, display=found.display)
    results = audit(reg, article, reason)
    return [
        dataclasses.replace(r, subject=r.check.removeprefix("formula."), evidence_class=evidence)
        for r in results
    ]


PIN: CheckKind[PinSpec] = CheckKind(
    name="pin",
    spec_type=PinSpec,
    run=run_pin,
    summary="a pin manifest's self-checks, and its verification against a source when available",
)
FORMULA_AUDIT: CheckKind[FormulaAuditSpec] = CheckKind(
    name="formula_audit",
    spec_type=FormulaAuditSpec,
    run=run_formula_audit,
    summary="the formula registry's self-checks, and its binding to the article when available",
)
