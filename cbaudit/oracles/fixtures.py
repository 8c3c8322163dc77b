"""Loading oracle fixtures, including negative fixtures written as a patch over a base.

A fixture is a JSON or YAML mapping. A *negative* fixture may instead be

    base: ../selective_batching.yaml      # relative to this file; not itself a patch
    patch: [ {op: replace, path: /expect/q_tot, value: 6} ]   # RFC 6902
    expect_code: SELECTIVE.EXPECT.SHAPE   # optional; the gate check may declare it instead
    why: one line

so each negative case states only what it breaks. Findings about a patched fixture point at
the negative file, with the pointer into the patched document.

The Loop 8 and Loop 9 kinds load their fixtures the same way with their own codes
(`load_loop_fixture`, `LoadedFixture`: `FIXTURE.BASE.*`, `FIXTURE.PATCH.INVALID`); the
resolving is shared in `cbaudit.io.patched`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.loader import Document
from cbaudit.io.patched import PatchCodes, load_patched
from cbaudit.io.schemas import validate
from cbaudit.model import Finding, InputError
from cbaudit.model.findings import Locator


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
    # the folder nothing the fixture names may lie outside: the bundle (or its declared root)
    # when the gate loads it; None means the enclosing bundle (see `enclosing_bundle`)
    root: Path | None = None

    def require_schema(self, schema: str) -> None:
        """Raise `InputError` with located `SCHEMA.*` findings unless the data fits `schema`."""
        findings = validate(dict(self.data), schema, file=self.path, locate=self.locate)
        if findings:
            raise InputError(findings)


CODES = PatchCodes(
    escape="ORACLE.FIXTURE.BASE_ESCAPE",
    nested="ORACLE.FIXTURE.BASE_NESTED",
    invalid="ORACLE.FIXTURE.PATCH_INVALID",
)


def _validate_patch_file(doc: Document) -> list[Finding]:
    return validate(doc.data, "oracle-fixture-patch", file=doc.path, locate=doc.locate)


def enclosing_bundle(directory: Path) -> Path:
    """The nearest folder at or above `directory` holding `bundle.yaml` (else `directory`)."""
    folder = directory.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / "bundle.yaml").is_file():
            return candidate
    return folder


def load_fixture(path: Path, *, display: str | None = None, root: Path | None = None) -> Fixture:
    """Load `path`; resolve `base` + `patch` negative fixtures (base must stay under `root`,
    which defaults to the fixture's enclosing bundle)."""
    top = (root or enclosing_bundle(path.parent)).resolve()
    loaded = load_patched(
        path,
        display=display if display is not None else str(path),
        root=top,
        codes=CODES,
        validate_patch=_validate_patch_file,
    )
    return Fixture(
        data=loaded.data,
        path=loaded.path,
        sha256=loaded.sha256,
        locate=loaded.locate,
        base=loaded.base,
        expect_code=loaded.expect_code,
        directory=loaded.directory,
        root=top,
    )


# --- Loops 8 and 9 --------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedFixture:
    """A Loop 8 or 9 fixture: data, display path, sha256, locator, the codes a negative declares."""

    data: Mapping[str, Any]
    path: str
    sha256: str
    locate: Locator
    expect_code: tuple[str, ...] = ()


def _codes(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and all(isinstance(c, str) for c in raw):
        return tuple(raw)
    return ()


LOOP_CODES = PatchCodes(
    escape="FIXTURE.BASE.ESCAPE",
    nested="FIXTURE.BASE.NESTED",
    invalid="FIXTURE.PATCH.INVALID",
    nested_keys=("patch",),
    nested_message="a base must be a plain fixture",
)


def load_loop_fixture(path: Path, *, display: str, root: Path) -> LoadedFixture:
    """Load a Loop 8 or 9 fixture, resolving a `base` + `patch` negative (the base stays in
    `root`)."""
    loaded = load_patched(path, display=display, root=root, codes=LOOP_CODES)
    return LoadedFixture(
        loaded.data, loaded.path, loaded.sha256, loaded.locate, _codes(loaded.expect_code)
    )
