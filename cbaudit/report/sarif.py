"""SARIF 2.1.0 for code-scanning views: quiet on green.

Only checks that did not pass produce results, so a passing gate uploads no alerts:

* a failed or errored check: one result per finding at or above the chosen level (`error` by
  default; `warning` and `note` add the check's warnings and notes), and one
  `CBAUDIT.CHECK.FAILED` / `CBAUDIT.CHECK.ERROR` result at the check's declaration when none
  of its findings is an error;
* a check that did not run here: one `CBAUDIT.CHECK.NOT_RUN` warning at its declaration, only
  at level `warning` or `note` (`cbaudit gate --sarif-level warning`).

Every location is a repository-relative URI (relative to the directory the gate ran in,
percent-encoded, `uriBaseId` `%SRCROOT%`) with a region (`startLine` 1 for a whole file); a
result whose finding names no file points at the check's entry in its `checks.yaml`.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any
from urllib.parse import quote

from cbaudit.model import CheckResult, CheckStatus, Location, Report, Severity
from cbaudit.report.json_report import dumps_canonical
from cbaudit.report.view import display_path

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"


class SarifLevel(StrEnum):
    """The least severe result a SARIF file carries (`--sarif-level`)."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTE: 2}
_LEVEL_RANK = {SarifLevel.ERROR: 0, SarifLevel.WARNING: 1, SarifLevel.NOTE: 2}
_SEVERITY_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}

#: Rule ids of results that stand for a whole check rather than one finding.
CHECK_RULES = {
    CheckStatus.FAILED: ("CBAUDIT.CHECK.FAILED", "error", "the check failed"),
    CheckStatus.ERROR: ("CBAUDIT.CHECK.ERROR", "error", "the check could not use its input"),
    CheckStatus.NOT_RUN: (
        "CBAUDIT.CHECK.NOT_RUN",
        "warning",
        "the check could not run here (not a pass)",
    ),
}


def _uri(path: str) -> str:
    """A relative, percent-encoded URI (never absolute: see `display_path`)."""
    return quote(display_path(path), safe="/")


def _physical(loc: Location) -> dict[str, Any] | None:
    if not loc.file:
        return None
    region: dict[str, Any] = {"startLine": loc.line if loc.line is not None else 1}
    if loc.line is not None and loc.column is not None:
        region["startColumn"] = loc.column
    out: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(loc.file), "uriBaseId": SRCROOT},
            "region": region,
        }
    }
    if loc.pointer is not None:
        out["logicalLocations"] = [{"fullyQualifiedName": loc.pointer or "/", "kind": "member"}]
    return out


def _fingerprint(*parts: Any) -> dict[str, str]:
    key = "|".join(str(p) for p in parts)
    return {"cbauditFinding/v1": hashlib.sha256(key.encode()).hexdigest()[:32]}


def _result(rule: str, level: str, message: str, loc: Location | None, *key: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"ruleId": rule, "level": level, "message": {"text": message}}
    located = _physical(loc) if loc is not None else None
    if located is not None:
        entry["locations"] = [located]
    entry["partialFingerprints"] = _fingerprint(rule, *key)
    return entry


def _check_results(check: CheckResult, level: SarifLevel) -> list[dict[str, Any]]:
    outcome = check.outcome
    if outcome is CheckStatus.PASSED:
        return []
    limit = _LEVEL_RANK[level]
    if outcome is CheckStatus.NOT_RUN:
        if limit < _LEVEL_RANK[SarifLevel.WARNING]:
            return []
        rule, lvl, default = CHECK_RULES[outcome]
        text = f"{check.subject}: {check.reason or default}"
        return [_result(rule, lvl, text, check.declared_at, check.subject)]
    out: list[dict[str, Any]] = []
    for f in check.findings:
        if _RANK[f.severity] > limit:
            continue
        loc = f.location if f.location.file else check.declared_at
        out.append(
            _result(
                f.code,
                _SEVERITY_LEVEL[f.severity],
                f.message,
                loc,
                f.location.file,
                f.location.pointer,
                check.subject,
            )
        )
    if not any(f.severity is Severity.ERROR for f in check.findings):
        rule, lvl, default = CHECK_RULES[outcome]
        text = f"{check.subject}: {check.reason or default}"
        out.append(_result(rule, lvl, text, check.declared_at, check.subject))
    return out


def render_sarif(
    report: Report,
    verbosity: int = 0,
    color: bool = False,
    *,
    level: SarifLevel | str = SarifLevel.ERROR,
) -> str:
    del verbosity, color
    chosen = SarifLevel(level)
    results = [entry for check in report.results for entry in _check_results(check, chosen)]
    codes = sorted({str(r["ruleId"]) for r in results})
    rule_index = {code: i for i, code in enumerate(codes)}
    for r in results:
        r["ruleIndex"] = rule_index[str(r["ruleId"])]
    rules = [
        {
            "id": code,
            "name": "".join(part.capitalize() for part in code.replace(".", "_").split("_")),
            "shortDescription": {"text": code},
        }
        for code in codes
    ]
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "cbaudit",
                        "version": report.tool_version,
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return dumps_canonical(doc)
