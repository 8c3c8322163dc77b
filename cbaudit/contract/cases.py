"""Loading plan-case files: plain cases, and negative cases written as a patch over a base.

A patch case is `{"base": "../valid.case.json", "patch": [RFC 6902 ops], "expect_code":
"PLAN...", "why": "..."}`; `base` is relative to the patch file and must be a plain case.
Findings in a patched case point at the patch operation that touched the pointer (file and
line of the patch file), else at the untouched member of the base file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.jsonpatch import PatchError, apply_patch
from cbaudit.io.loader import Document, load_document
from cbaudit.io.schemas import validate
from cbaudit.model import Finding, InputError, Location
from cbaudit.model.findings import Locator


@dataclass(frozen=True)
class LoadedCase:
    """A case ready to validate, or the located reason it could not be loaded."""

    data: Mapping[str, Any]
    locate: Locator | None
    files: tuple[Path, ...]  # every file read, for input digests
    expect_code: str | None = None
    why: str | None = None
    error: tuple[Finding, ...] | None = None


def is_patch_case(data: Any) -> bool:
    """True for the `{base, patch}` form of a negative case."""
    return isinstance(data, Mapping) and "patch" in data and "kind" not in data


def _touches(op_path: str, pointer: str) -> bool:
    return (
        pointer == op_path or pointer.startswith(op_path + "/") or op_path.startswith(pointer + "/")
    )


def _patch_locator(fixture: Document, base: Document, ops: list[Mapping[str, Any]]) -> Locator:
    paths = [(i, str(op.get("path", ""))) for i, op in enumerate(ops)]

    def locate(pointer: str) -> Location:
        for i, op_path in reversed(paths):
            if _touches(op_path, pointer):
                at = fixture.locate(f"/patch/{i}")
                return Location(file=fixture.path, pointer=pointer, line=at.line, column=at.column)
        return base.locate(pointer)

    return locate


def _failed(
    files: tuple[Path, ...], findings: tuple[Finding, ...], meta: Mapping[str, Any] | None = None
) -> LoadedCase:
    meta = meta or {}
    return LoadedCase(
        data={},
        locate=None,
        files=files,
        expect_code=meta.get("expect_code"),
        why=meta.get("why"),
        error=findings,
    )


def load_case(
    path: Path | str, *, display: str | None = None, root: Path | None = None
) -> LoadedCase:
    """Read a plain or patch case; never raises for unusable input (returns `error`).

    With `root` (the gate passes the bundle, or its declared root), a patch case's base must
    lie inside it (`CASE.BASE.ESCAPE`).
    """
    path = Path(path)
    name = display if display is not None else str(path)
    try:
        doc = load_document(path, display=name)
    except InputError as err:
        return _failed((path,), err.findings)
    if not is_patch_case(doc.data):
        return LoadedCase(data=doc.data, locate=doc.locate, files=(path,))

    files: tuple[Path, ...] = (path,)
    shape = validate(doc.data, "plan-case-patch", file=name, locate=doc.locate)
    if shape:
        return _failed(files, tuple(shape))
    base_rel = str(doc.data["base"])
    base_path = path.parent / base_rel
    base_name = os.path.normpath(Path(name).parent / base_rel)
    if root is not None:
        top, resolved = root.resolve(), base_path.resolve()
        if resolved != top and top not in resolved.parents:
            message = f"base {base_rel!r} lies outside the bundle (or its declared root)"
            escape = Finding("CASE.BASE.ESCAPE", message, location=doc.locate("/base"))
            return _failed((path,), (escape,), doc.data)
    files = (path, base_path)
    try:
        base = load_document(base_path, display=base_name)
    except InputError as err:
        at = doc.locate("/base")
        where = Finding(
            code=err.findings[0].code,
            message=f"base {base_rel!r}: {err.findings[0].message}",
            location=Location(file=name, pointer="/base", line=at.line, column=at.column),
        )
        return _failed(files, (where, *err.findings[1:]), doc.data)
    if is_patch_case(base.data):
        loc = doc.locate("/base")
        return _failed(
            files,
            (
                Finding(
                    "CASE.BASE.NESTED",
                    f"base {base_rel!r} is itself a patch case; patch a plain case",
                    location=loc,
                ),
            ),
            doc.data,
        )
    ops: list[Mapping[str, Any]] = list(doc.data["patch"])
    try:
        patched = apply_patch(base.data, ops)
    except PatchError as err:
        loc = doc.locate(f"/patch/{err.index}")
        return _failed(files, (Finding("CASE.PATCH.INVALID", str(err), location=loc),), doc.data)
    if not isinstance(patched, Mapping):
        loc = doc.locate("/patch")
        return _failed(
            files,
            (Finding("CASE.PATCH.INVALID", "the patched case is not an object", location=loc),),
            doc.data,
        )
    return LoadedCase(
        data=patched,
        locate=_patch_locator(doc, base, ops),
        files=files,
        expect_code=doc.data.get("expect_code"),
        why=doc.data.get("why"),
    )
