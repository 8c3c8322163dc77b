"""Loading a document that may be written as an RFC 6902 patch over a base document.

A negative fixture may be, instead of a whole mapping,

    base: ../fixture.yaml                   # relative to this file; must stay under `root`
    patch: [ {op: replace, path: /x, value: 6} ]   # RFC 6902
    expect_code: SOME.CODE                  # optional; returned raw for the caller to read

`load_patched` resolves such a file against its base (which may not itself be a patch) and
returns the patched mapping; findings about it point at the negative file, with the pointer
into the patched document. Callers pick the finding codes (`PatchCodes`) and may validate the
patch file first (e.g. against a schema).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.jsonpatch import PatchError, apply_patch
from cbaudit.io.loader import Document, load_document
from cbaudit.model import Finding, InputError, Location
from cbaudit.model.findings import Locator

PatchValidator = Callable[[Document], Sequence[Finding]]


@dataclass(frozen=True)
class PatchCodes:
    """Finding codes (and the few wording/detection choices) of one family of patch files.

    `escape`: the base lies outside `root`; `nested`: the base is itself a patch (a base holding
    every key of `nested_keys`); `invalid`: the patch is malformed or cannot be applied.
    """

    escape: str
    nested: str
    invalid: str
    nested_keys: tuple[str, ...] = ("base", "patch")
    nested_message: str = (
        "the base of a negative fixture must be a plain fixture, not another patch"
    )


@dataclass(frozen=True)
class PatchedDocument:
    """A loaded mapping, patched over its base when the file was a base + patch file."""

    data: Mapping[str, Any]
    path: str  # display path of the file itself, used in locations
    sha256: str  # of the file itself (the negative file for a patched document)
    locate: Locator
    directory: Path  # where relative paths inside `data` resolve: the base's folder if patched
    base: str | None = None  # display path of the base, for a patched document
    expect_code: Any = None  # the patch file's raw `expect_code` field (None when plain)


def is_patch_file(data: Any) -> bool:
    """True when `data` is a base + patch file rather than a whole document."""
    return isinstance(data, Mapping) and "base" in data and "patch" in data


def load_patched(
    path: Path,
    *,
    display: str,
    root: Path,
    codes: PatchCodes,
    validate_patch: PatchValidator | None = None,
) -> PatchedDocument:
    """Load `path`; resolve a `base` + `patch` file against its base, which must lie under `root`.

    `validate_patch`, when given, checks the patch file first and returns findings to raise.
    Messages name `root` as given.
    """
    doc = load_document(path, display=display)
    data = doc.data
    if not is_patch_file(data):
        return PatchedDocument(data, display, doc.sha256, doc.locate, path.resolve().parent)
    if validate_patch is not None:
        findings = validate_patch(doc)
        if findings:
            raise InputError(findings)
    base_rel = data["base"]
    if not isinstance(base_rel, str) or not isinstance(data["patch"], list):
        raise InputError.at(
            codes.invalid, "base must be a path and patch a list", display, pointer=""
        )
    base_path = (path.parent / base_rel).resolve()
    if root.resolve() not in base_path.parents:
        raise InputError.at(
            codes.escape, f"base {base_rel!r} lies outside {root}", display, pointer="/base"
        )
    base_display = str(Path(display).parent / base_rel)
    base_doc = load_document(base_path, display=base_display)
    if isinstance(base_doc.data, Mapping) and all(k in base_doc.data for k in codes.nested_keys):
        raise InputError.at(codes.nested, codes.nested_message, display, pointer="/base")
    try:
        patched = apply_patch(base_doc.data, data["patch"])
    except PatchError as err:
        raise InputError(
            Finding(codes.invalid, str(err), location=doc.locate(f"/patch/{err.index}"))
        ) from err
    if not isinstance(patched, Mapping):
        raise InputError.at(codes.invalid, "the patched fixture is not a mapping", display)

    def locate(pointer: str) -> Location:
        return Location(file=display, pointer=pointer)

    return PatchedDocument(
        data=patched,
        path=display,
        sha256=doc.sha256,
        locate=locate,
        directory=base_path.parent,
        base=base_display,
        expect_code=data.get("expect_code"),
    )
