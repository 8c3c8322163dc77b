"""Pin manifest records: load, schema-check, build frozen records, check consistency."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.loader import Document, load_document
from cbaudit.model import Finding, InputError, Location
from cbaudit.model.findings import pointer_join

SCHEMA = "pin-manifest"
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True, slots=True)
class Marker:
    """One line of a pinned file whose exact text backs a claim."""

    id: str
    line: int
    text: str
    symbol: str | None = None
    claim: str | None = None
    occurrences: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PinnedFile:
    """One pinned file: where it is and the identity of its bytes."""

    path: str
    sha256: str
    size: int
    git_blob: str
    lines: int | None = None
    markers: tuple[Marker, ...] = ()


@dataclass(frozen=True, slots=True)
class PinManifest:
    """A runtime revision and the files pinned from it."""

    runtime: str
    version: str
    files: tuple[PinnedFile, ...]
    repository: str | None = None
    tag: str | None = None
    commit: str | None = None
    tag_object: str | None = None
    notes: tuple[str, ...] = ()

    def to_data(self) -> dict[str, Any]:
        """The manifest as JSON/YAML-ready data, in the schema's field order."""
        out: dict[str, Any] = {"schema_version": 1, "runtime": self.runtime}
        out["version"] = self.version
        if self.repository is not None:
            out["repository"] = self.repository
        out["tag"] = self.tag
        out["commit"] = self.commit
        out["tag_object"] = self.tag_object
        if self.notes:
            out["notes"] = list(self.notes)
        out["files"] = [_file_data(f) for f in self.files]
        return out


def _file_data(f: PinnedFile) -> dict[str, Any]:
    item: dict[str, Any] = {"path": f.path, "sha256": f.sha256, "bytes": f.size}
    if f.lines is not None:
        item["lines"] = f.lines
    item["git_blob"] = f.git_blob
    item["markers"] = [
        {
            "id": m.id,
            "symbol": m.symbol,
            "claim": m.claim,
            "line": m.line,
            "text": m.text,
            "occurrences": list(m.occurrences),
        }
        for m in f.markers
    ]
    return item


@dataclass(frozen=True)
class LoadedManifest:
    """A manifest with its source document (for locations and the input digest)."""

    manifest: PinManifest
    document: Document

    def locate(self, pointer: str) -> Location:
        return self.document.locate(pointer)


def path_problem(path: str) -> tuple[str, str] | None:
    """Why a manifest path may not be followed, as (finding code, message), or None.

    Paths are relative POSIX paths inside the source root: no absolute paths, no drive
    letters, no `..`, no empty or `.` components and no backslashes.
    """
    if path.startswith(("/", "\\")) or _DRIVE.match(path):
        return ("PIN.PATH.ABSOLUTE", f"path {path!r} is absolute; pinned paths are relative")
    parts = path.split("/")
    if ".." in parts or any(".." in p.split("\\") for p in parts):
        return ("PIN.PATH.ESCAPE", f"path {path!r} escapes the source root")
    if "\\" in path or any(p in ("", ".") for p in parts):
        return ("PIN.PATH.NOT_NORMAL", f"path {path!r} is not a normalized POSIX path")
    return None


def _build(data: Mapping[str, Any]) -> PinManifest:
    files = []
    for f in data["files"]:
        markers = tuple(
            Marker(
                id=m["id"],
                line=m["line"],
                text=m["text"],
                symbol=m.get("symbol"),
                claim=m.get("claim"),
                occurrences=tuple(m.get("occurrences", ())),
            )
            for m in f.get("markers", ())
        )
        files.append(
            PinnedFile(
                path=f["path"],
                sha256=f["sha256"],
                size=f["bytes"],
                git_blob=f["git_blob"],
                lines=f.get("lines"),
                markers=markers,
            )
        )
    return PinManifest(
        runtime=data["runtime"],
        version=str(data["version"]),
        files=tuple(files),
        repository=data.get("repository"),
        tag=data.get("tag"),
        commit=data.get("commit"),
        tag_object=data.get("tag_object"),
        notes=tuple(data.get("notes", ())),
    )


def load_manifest(path: Path | str, *, display: str | None = None) -> LoadedManifest:
    """Load and schema-check a pin manifest; raise InputError (exit 2) when unusable.

    A manifest is unusable when it breaks its schema or names a path that may not be
    followed (absolute, escaping the source root, not normalized: `path_problem`).
    """
    doc = load_document(path, display=display, schema=SCHEMA)
    problems = []  # a path that may not be followed makes the whole manifest unusable
    for i, pinned in enumerate(doc.data["files"]):
        problem = path_problem(pinned["path"])
        if problem is not None:
            where = doc.locate(pointer_join("", "files", i, "path"))
            problems.append(Finding(problem[0], problem[1], location=where))
    if problems:
        raise InputError(problems)
    return LoadedManifest(_build(doc.data), doc)


def consistency_findings(loaded: LoadedManifest) -> list[Finding]:
    """Internal consistency of a schema-valid manifest (needs no source)."""
    m = loaded.manifest
    out: list[Finding] = []

    def at(code: str, message: str, *parts: str | int) -> None:
        out.append(Finding(code, message, location=loaded.locate(pointer_join("", *parts))))

    if m.tag_object is not None and m.tag is None:
        at("PIN.MANIFEST.TAG_OBJECT", "tag_object is recorded but no tag names it", "tag_object")
    seen_paths: dict[str, int] = {}
    seen_ids: dict[str, str] = {}
    for i, f in enumerate(m.files):
        if f.path in seen_paths:
            at(
                "PIN.MANIFEST.DUPLICATE_PATH",
                f"{f.path} is already pinned at /files/{seen_paths[f.path]}",
                "files",
                i,
                "path",
            )
        seen_paths.setdefault(f.path, i)
        for j, mk in enumerate(f.markers):
            if mk.id in seen_ids:
                at(
                    "PIN.MANIFEST.DUPLICATE_ID",
                    f"marker id {mk.id} is already used in {seen_ids[mk.id]}",
                    "files",
                    i,
                    "markers",
                    j,
                    "id",
                )
            seen_ids.setdefault(mk.id, f.path)
            if "\n" in mk.text or "\r" in mk.text:
                at(
                    "PIN.MANIFEST.MARKER_TEXT",
                    f"marker {mk.id}: text must be one line without line-end characters",
                    "files",
                    i,
                    "markers",
                    j,
                    "text",
                )
            if f.lines is not None and mk.line > f.lines:
                at(
                    "PIN.MANIFEST.LINE_RANGE",
                    f"marker {mk.id}: line {mk.line} is past the file's {f.lines} lines",
                    "files",
                    i,
                    "markers",
                    j,
                    "line",
                )
            if mk.occurrences and mk.line not in mk.occurrences:
                at(
                    "PIN.MANIFEST.OCCURRENCES",
                    f"marker {mk.id}: occurrences {list(mk.occurrences)} omit its own line"
                    f" {mk.line}",
                    "files",
                    i,
                    "markers",
                    j,
                    "occurrences",
                )
    return out
