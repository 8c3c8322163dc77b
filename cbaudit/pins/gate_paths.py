"""Paths in gate check specs: bundle-relative, repository-relative, or from the environment.

A spec field may be

* a relative path string: resolved against the declaring file, inside the bundle
  (`GateContext.resolve`, which refuses escapes);
* a mapping `{repo_path: REL}`: resolved against the root the bundle declares (`root:` in
  bundle.yaml) or the user permits (`cbaudit gate --root DIR`) (`GateContext.resolve_repo`),
  refusing absolute paths and escapes; with no root it is GATE.PATH.ESCAPE (a bundle that
  reads outside itself says so);
* a string holding `${NAME}` references: expanded from the environment. An unset or empty
  variable makes the path *unavailable* (the check reports not run, never passed). The
  expanded value is used as given (absolute, or relative to the working directory).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.model import EvidenceClass, InputError

if TYPE_CHECKING:
    from cbaudit.gate.context import GateContext

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class SpecPath:
    """A resolved spec path, or the reason it is not available here."""

    path: Path | None
    display: str
    reason: str | None = None


def spec_check_id(spec: Any, ctx: GateContext) -> str:
    """The check's `id`; InputError when the spec has none."""
    ident = spec.get("id") if isinstance(spec, dict) else None
    if not isinstance(ident, str) or not ident:
        raise InputError.at(
            "GATE.SPEC.ID", "a check needs a non-empty string id", ctx.manifest, pointer=ctx.pointer
        )
    return ident


def spec_evidence_class(spec: dict[str, Any], ctx: GateContext) -> EvidenceClass:
    """The declared evidence class (default `derived`)."""
    value = spec.get("evidence_class", EvidenceClass.DERIVED.value)
    try:
        return EvidenceClass(value)
    except ValueError:
        known = ", ".join(e.value for e in EvidenceClass)
        raise InputError.at(
            "GATE.SPEC.EVIDENCE_CLASS",
            f"unknown evidence_class {value!r} (known: {known})",
            ctx.manifest,
            pointer=ctx.pointer + "/evidence_class",
        ) from None


def spec_path(spec: dict[str, Any], field: str, ctx: GateContext) -> SpecPath:
    """Resolve `spec[field]` as described in the module docstring."""
    value = spec.get(field)
    ptr = f"{ctx.pointer}/{field}"
    if isinstance(value, dict) and set(value) == {"repo_path"}:
        rel = value["repo_path"]
        return SpecPath(ctx.resolve_repo(rel, field=f"{field}/repo_path"), str(rel))
    if not isinstance(value, str) or not value:
        raise InputError.at(
            "GATE.SPEC.FIELD",
            f"{field} must be a path string, ${{VAR}}, or {{repo_path: PATH}}",
            ctx.manifest,
            pointer=ptr,
        )
    names = _VAR.findall(value)
    if not names:
        return SpecPath(ctx.resolve(value, field=field), value)
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        return SpecPath(
            None, value, f"{', '.join(missing)} is not set, so {field} is not available"
        )
    expanded = _VAR.sub(lambda m: os.environ[m.group(1)], value)
    path = Path(expanded)
    if not path.exists():
        return SpecPath(None, value, f"{field} {expanded} (from {value}) does not exist")
    return SpecPath(path, expanded)
