"""Gate kind `formula_audit`: registry self-checks always; the article binding when available.

Spec fields: `registry` (required) and `article` (optional). Both take the path forms of
`cbaudit.pins.gate_paths` (bundle-relative, `{repo_path: ...}`, or `${VAR}`). Without an
available article, the binding result is `not_run` with the reason, never `passed`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cbaudit.formulas.audit import audit, read_article
from cbaudit.formulas.registry import load_registry
from cbaudit.model import CheckResult, CheckStatus
from cbaudit.pins.gate_paths import spec_check_id, spec_evidence_class, spec_path

if TYPE_CHECKING:
    from cbaudit.gate.context import GateContext


def run_formula_audit(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Run one `formula_audit` check: subjects `registry`, `examples`, `binding`."""
    data = dict(spec)
    spec_check_id(data, ctx)
    evidence = spec_evidence_class(data, ctx)
    where = spec_path(data, "registry", ctx)
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
    if "article" in data:
        found = spec_path(data, "article", ctx)
        if found.path is None:
            reason = f"article not available: {found.reason}"
        else:
            article = read_article(found.path, display=found.display)
    results = audit(reg, article, reason)
    return [
        dataclasses.replace(r, subject=r.check.removeprefix("formula."), evidence_class=evidence)
        for r in results
    ]
