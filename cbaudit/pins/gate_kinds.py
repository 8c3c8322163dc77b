"""Gate kind `pin`: a pin manifest's self-checks, and its verification when a source is here.

Spec fields: `manifest` (required), `git_dir` and/or `source` (optional). Each path field takes
the forms of `cbaudit.pins.gate_paths`. The manifest's schema and consistency are always
checked; a source that is not available makes its verification `not_run`, never `passed`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.model import CheckResult, CheckStatus, InputError, UsageError
from cbaudit.pins.gate_paths import spec_check_id, spec_evidence_class, spec_path
from cbaudit.pins.manifest import consistency_findings, load_manifest
from cbaudit.pins.sources import GitSource, SourceReader, open_source
from cbaudit.pins.verify import verify

if TYPE_CHECKING:
    from cbaudit.gate.context import GateContext

SOURCE_FIELDS = ("git_dir", "source")


def _open(field: str, path: Path) -> SourceReader:
    return GitSource.open(path) if field == "git_dir" else open_source(path)


def _part(result: CheckResult) -> str:
    """A short, unique subject: `manifest`, `revision`, `verify:FIELD`, or the file path."""
    if result.check == "pin.file":
        return result.subject
    if result.check == "pin.verify":
        return f"verify:{result.subject}"
    return result.check.removeprefix("pin.")


def run_pin(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Run one `pin` check: `pin.manifest`, then `pin.revision`/`pin.file` or `pin.verify`."""
    data = dict(spec)
    spec_check_id(data, ctx)
    evidence = spec_evidence_class(data, ctx)
    where = spec_path(data, "manifest", ctx)
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
    declared = [f for f in SOURCE_FIELDS if f in data]
    if not declared:
        parts.append(
            CheckResult(
                "pin.verify",
                "source",
                status=CheckStatus.NOT_RUN,
                reason="no source or git_dir declared; only the manifest was checked",
            )
        )
    for field in declared:
        src = spec_path(data, field, ctx)
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
            raise InputError.at(
                "GATE.SPEC.SOURCE", str(err), ctx.manifest, pointer=f"{ctx.pointer}/{field}"
            ) from err
        verification = verify(loaded, reader)
        parts.extend(r for r in verification.results if r.check != "pin.manifest")
    return [dataclasses.replace(r, subject=_part(r), evidence_class=evidence) for r in parts]
