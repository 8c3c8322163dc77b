"""An in-toto Statement v1 recording a pin verification."""

from __future__ import annotations

from typing import Any

from cbaudit import __version__
from cbaudit.model import Severity
from cbaudit.pins.manifest import LoadedManifest
from cbaudit.pins.verify import Verification

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://cbaudit.invalid/attestation/pin-verification/v1"


def build_statement(loaded: LoadedManifest, verification: Verification) -> dict[str, Any] | None:
    """The statement for `verification`, or None when no file was verified (no subject).

    Subjects are the verified files, each with its sha256 and gitBlob digests; the predicate
    names the manifest (by sha256), the revision, the source kind and the verdict.
    """
    m = loaded.manifest
    subjects = [
        {"name": f.path, "digest": {"sha256": f.observed.sha256, "gitBlob": f.observed.git_blob}}
        for f in verification.files
        if f.verified and f.observed is not None
    ]
    if not subjects:
        return None
    codes = sorted(
        {
            finding.code
            for r in verification.results
            for finding in r.findings
            if finding.severity is not Severity.NOTE
        }
    )
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "manifest": {"path": loaded.document.path, "sha256": loaded.document.sha256},
            "runtime": m.runtime,
            "version": m.version,
            "repository": m.repository,
            "tag": m.tag,
            "tagObject": m.tag_object,
            "commit": m.commit,
            "source": verification.source_kind,
            "verdict": "pass" if verification.passed else "fail",
            "files": [
                {
                    "path": f.path,
                    "verified": f.verified,
                    "markers_checked": f.markers_checked,
                    "markers_ok": f.markers_ok,
                }
                for f in verification.files
            ],
            "findings": codes,
            "tool": {"name": "cbaudit", "version": __version__},
        },
    }
