"""Loading oracle fixtures, including negative fixtures written as a patch over a base.

A fixture is a JSON or YAML mapping. A *negative* fixture may instead be

    base: ../selective_batching.yaml      # relative to this file; not itself a patch
    patch: [ {op: replace, path: /expect/q_tot, value: 6} ]   # RFC 6902
    expect_code: SELECTIVE.EXPECT.SHAPE   # optional; the gate check may declare it instead
    why: one line

so each negative case states only what it breaks. Findings about a patched fixture point at
the negative file, with the pointer into the patched document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io import load_document
from cbaudit.io.jsonpatch import PatchError, apply_patch
from cbaudit.io.schemas import validate
from cbaudit.model import Finding, InputError, Location

Locator = Callable[[str], Location]


@dataclass(frozen=True)
class Fixture:
    """Fixture data plus how to locate a pointer in it."""

    data: Mapping[str, Any]
    path: str  # display path used in locations
    sha256: str
    locate: Locator
    base: str | None = None  # display path of the base, for patched fixtures
    expect_code: str | None = None  # declared by a negative fixture file
    # directory that relative paths inside `data` resolve against: the fixture's own folder,
    # or the base's folder for a patched fixture (the paths come from the base's text)
    directory: Path | None = None

    def require_schema(self, schema: str) -> None:
        """Raise `InputError` with located `SCHEMA.*` findings unless the data fits `schema`."""
        findings = validate(dict(self.data), schema, file=self.path, locate=self.locate)
        if findings:
            raise InputError(findings)


def _is_patch_file(data: Mapping[str, Any]) -> bool:
    return "base" in data and "patch" in data


def load_fixture(path: Path, *, display: str | None = None, root: Path | None = None) -> Fixture:
    """Load `path`; resolve `base` + `patch` negative fixtures (base must stay under `root`)."""
    name = display if display is not None else str(path)
    doc = load_document(path, display=name)
    data = doc.data
    if not _is_patch_file(data):
        return Fixture(
            data=data,
            path=name,
            sha256=doc.sha256,
            locate=doc.locate,
            directory=path.resolve().parent,
        )
    findings = validate(data, "oracle-fixture-patch", file=name, locate=doc.locate)
    if findings:
        raise InputError(findings)
    base_path = (path.parent / data["base"]).resolve()
    limit = (root or path.parent).resolve()
    if limit not in base_path.parents:
        raise InputError.at(
            "ORACLE.FIXTURE.BASE_ESCAPE",
            f"base {data['base']!r} lies outside {limit}",
            name,
            pointer="/base",
        )
    base_display = str(Path(name).parent / data["base"])
    base_doc = load_document(base_path, display=base_display)
    if _is_patch_file(base_doc.data):
        raise InputError.at(
            "ORACLE.FIXTURE.BASE_NESTED",
            "the base of a negative fixture must be a plain fixture, not another patch",
            name,
            pointer="/base",
        )
    try:
        patched = apply_patch(base_doc.data, data["patch"])
    except PatchError as err:
        raise InputError(
            Finding(
                "ORACLE.FIXTURE.PATCH_INVALID",
                str(err),
                location=doc.locate(f"/patch/{err.index}"),
            )
        ) from err
    if not isinstance(patched, dict):
        raise InputError.at(
            "ORACLE.FIXTURE.PATCH_INVALID", "the patched fixture is not a mapping", name
        )

    def locate(pointer: str) -> Location:
        return Location(file=name, pointer=pointer)

    return Fixture(
        data=patched,
        path=name,
        sha256=doc.sha256,
        locate=locate,
        base=base_display,
        expect_code=data.get("expect_code"),
        directory=base_path.parent,
    )
