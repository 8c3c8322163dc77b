"""SARIF 2.1.0: rules keyed by finding code, results with file and line regions."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from cbaudit.model import Report, Severity
from cbaudit.report.json_report import dumps_canonical

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def _uri(path: str) -> str:
    """Repository-relative POSIX URI where the path is under the working directory."""
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(Path(os.getcwd()))
        except ValueError:
            return p.as_uri()
    return p.as_posix()


def render_sarif(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del verbosity, color
    codes = sorted({f.code for f in report.findings})
    rule_index = {code: i for i, code in enumerate(codes)}
    rules = [
        {
            "id": code,
            "name": "".join(part.capitalize() for part in code.replace(".", "_").split("_")),
            "shortDescription": {"text": code},
        }
        for code in codes
    ]
    results: list[dict[str, Any]] = []
    for check in report.results:
        for f in check.findings:
            entry: dict[str, Any] = {
                "ruleId": f.code,
                "ruleIndex": rule_index[f.code],
                "level": _LEVEL[f.severity],
                "message": {"text": f.message},
            }
            loc = f.location
            if loc.file:
                physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(loc.file)}}
                if loc.line is not None:
                    region: dict[str, Any] = {"startLine": loc.line}
                    if loc.column is not None:
                        region["startColumn"] = loc.column
                    physical["region"] = region
                location: dict[str, Any] = {"physicalLocation": physical}
                if loc.pointer is not None:
                    location["logicalLocations"] = [
                        {"fullyQualifiedName": loc.pointer or "/", "kind": "member"}
                    ]
                entry["locations"] = [location]
            key = f"{f.code}|{loc.file}|{loc.pointer}|{check.subject}"
            entry["partialFingerprints"] = {
                "cbauditFinding/v1": hashlib.sha256(key.encode()).hexdigest()[:32]
            }
            results.append(entry)
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
