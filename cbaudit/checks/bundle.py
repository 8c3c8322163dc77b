"""Bundle discovery and loading: bundle.yaml, its included check lists, every entry parsed.

The gate and `cbaudit mutate` read bundles through this one loader.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind
from cbaudit.checks.parse import parse_entry, schema_findings
from cbaudit.checks.spec import CheckSpec
from cbaudit.io.loader import Document, load_document
from cbaudit.model import Finding, InputError, Location
from cbaudit.model.findings import Locator, pointer_join

BUNDLE_FILE = "bundle.yaml"


@dataclass(frozen=True)
class DeclaredCheck:
    """One check a bundle declares: where, its kind and spec, or why it cannot run.

    `spec` is None when the entry did not parse; `errors` then says why (the gate reports the
    check as one `error` result without running it). `entry` is the entry as written.
    """

    bundle: str
    check_id: str
    kind: str
    entry: Mapping[str, Any]
    base_dir: Path
    manifest: str
    pointer: str
    bundle_root: Path
    root: Path | None = None  # the declared or permitted root its checks may read in
    line: int | None = None  # line of the check's entry in its manifest, where known
    check_kind: CheckKind[Any] | None = None
    spec: CheckSpec | None = None
    errors: tuple[Finding, ...] = ()

    def context(self, kinds: Mapping[str, CheckKind[Any]], update: bool = False) -> GateContext:
        """The context this check runs with."""
        return GateContext(
            base_dir=self.base_dir,
            manifest=self.manifest,
            pointer=self.pointer,
            bundle_root=self.bundle_root,
            update=update,
            root=self.root,
            kinds=kinds,
        )


@dataclass(frozen=True)
class Bundle:
    """A loaded bundle: its identity, the files it was read from, and its checks."""

    name: str
    title: str
    root: Path
    manifest_files: tuple[Path, ...]
    checks: tuple[DeclaredCheck, ...]
    read_root: Path | None = None  # declared (`root:`) or permitted (`--root`), resolved


def loop_label(value: Any) -> str:
    """One spelling for loop names: `7`, `"7"`, `loop7` and `Loop 7` all become `Loop 7`."""
    text = str(value).strip()
    match = re.fullmatch(r"(?i)(?:loop[\s_-]*)?(\d+)", text)
    return f"Loop {match.group(1)}" if match else text


def discover(paths: list[Path]) -> list[Path]:
    """Bundle directories under each path (a path may itself be a bundle)."""
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise InputError.at("GATE.PATH.NOT_FOUND", "no such directory", str(path))
        if not path.is_dir():
            raise InputError.at("GATE.PATH.NOT_DIRECTORY", "expected a directory", str(path))
        if (path / BUNDLE_FILE).is_file():
            found.append(path)
            continue
        found.extend(sorted(p.parent for p in path.rglob(BUNDLE_FILE)))
    uniq: dict[Path, Path] = {}
    for p in found:
        uniq.setdefault(p.resolve(), p)
    if not uniq:
        shown = ", ".join(str(p) for p in paths)
        raise InputError.at("GATE.NO_BUNDLE", f"no {BUNDLE_FILE} found under {shown}", shown)
    return list(uniq.values())


def _checked(path: Path, schema: str, display: str | None = None) -> Document:
    """Load a manifest and refuse it unless it fits `schema`; a key the schema does not know
    is `GATE.SPEC.UNKNOWN_FIELD` (the other violations keep their `SCHEMA.*` code)."""
    doc = load_document(path, display=display)
    findings = schema_findings(doc.data, schema, locate=doc.locate, file=doc.path, entry=False)
    if findings:
        raise InputError(findings)
    return doc


def git_work_tree(folder: Path) -> Path | None:
    """The top of the git work tree holding `folder` (nearest folder with `.git`), or None."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _root_error(message: str, location: Location) -> InputError:
    return InputError(Finding("GATE.ROOT.INVALID", message, location=location))


def declared_root(bundle_dir: Path, value: Any, location: Location) -> Path:
    """A bundle's `root:`: its own folder or one above it, never above its git work tree."""
    if not isinstance(value, str) or not value or Path(value).is_absolute():
        raise _root_error(f"root {value!r} must be a path relative to the bundle", location)
    here = bundle_dir.resolve()
    target = (here / value).resolve()
    if target == here:
        return target
    if target not in here.parents:
        raise _root_error(
            f"root {value!r} is not the bundle's folder or a folder above it", location
        )
    top = git_work_tree(here)
    if top is None:
        raise _root_error(
            f"root {value!r}: the bundle is not inside a git work tree, so a root above it is"
            " refused (pass `cbaudit gate --root DIR` to permit one)",
            location,
        )
    if target != top and top not in target.parents:
        raise _root_error(f"root {value!r} lies above the git work tree {top}", location)
    return target


def permitted_root(bundle_dir: Path, permit: Path) -> Path:
    """`--root DIR`: an existing folder that holds the bundle."""
    where = Location(file=str(permit), pointer="")
    if not permit.is_dir():
        raise _root_error(f"--root {permit} is not a directory", where)
    target = permit.resolve()
    here = bundle_dir.resolve()
    if target != here and target not in here.parents:
        raise _root_error(f"--root {permit} does not contain the bundle {bundle_dir}", where)
    return target


def load_bundle(
    root: Path,
    kinds: Mapping[str, CheckKind[Any]],
    *,
    permit: Path | None = None,
) -> Bundle:
    """Read bundle.yaml and its includes and parse every check entry with `kinds` (the gate
    passes `cbaudit.kinds.KINDS`); refuse duplicate ids and escaping includes.

    The root its checks may read in besides the bundle is `permit` (`--root`) when given,
    else the bundle's declared `root:`, else none. An entry that does not parse is kept, with
    its findings, for the gate to report (`DeclaredCheck.errors`).
    """
    manifest_path = root / BUNDLE_FILE
    doc = _checked(manifest_path, "bundle")
    name = str(doc.data["bundle"])
    read_root: Path | None = None
    if permit is not None:
        read_root = permitted_root(root, permit)
    elif "root" in doc.data:
        read_root = declared_root(root, doc.data["root"], doc.locate("/root"))
    scope = _Scope(name, root, read_root, kinds)
    files = [manifest_path]
    specs = scope.add(doc, root, None)
    for j, rel in enumerate(doc.data.get("include", [])):
        inc_path = _include(root, rel, doc.locate(f"/include/{j}"))
        inc = _checked(inc_path, "check-list", display=str(root / rel))
        files.append(root / rel)
        specs += scope.add(inc, (root / rel).parent, inc.data.get("loop"))
    _refuse_duplicates(specs)
    return Bundle(name, str(doc.data["title"]), root, tuple(files), tuple(specs), read_root)


def _include(root: Path, rel: str, where: Location) -> Path:
    target = (root / rel).resolve()
    if root.resolve() not in target.parents:
        raise InputError(
            Finding("GATE.PATH.ESCAPE", f"include {rel!r} escapes the bundle", location=where)
        )
    if not target.is_file():
        raise InputError(
            Finding("GATE.INCLUDE.MISSING", f"included file {rel!r} not found", location=where)
        )
    return root / rel


@dataclass(frozen=True)
class _Scope:
    """What every check of one bundle shares while it is parsed."""

    bundle: str
    root: Path
    read_root: Path | None
    kinds: Mapping[str, CheckKind[Any]]

    def add(self, doc: Document, base_dir: Path, loop: Any) -> list[DeclaredCheck]:
        """The checks of one manifest (`bundle.yaml` or a check list), each parsed."""
        out: list[DeclaredCheck] = []
        for i, item in enumerate(doc.data.get("checks", [])):
            if "loop" in item or loop is not None:
                item = {**item, "loop": loop_label(item.get("loop", loop))}
            pointer = pointer_join("/checks", i)
            out.append(
                declare(
                    item,
                    bundle=self.bundle,
                    base_dir=base_dir,
                    manifest=doc.path,
                    pointer=pointer,
                    bundle_root=self.root,
                    root=self.read_root,
                    kinds=self.kinds,
                    locate=doc.locate,
                )
            )
        return out


def declare(
    entry: Mapping[str, Any],
    *,
    bundle: str,
    base_dir: Path,
    manifest: str,
    pointer: str,
    bundle_root: Path,
    kinds: Mapping[str, CheckKind[Any]],
    root: Path | None = None,
    locate: Locator | None = None,
) -> DeclaredCheck:
    """One entry as a declared check, parsed (its findings kept when it does not parse)."""
    ctx = GateContext(
        base_dir=base_dir,
        manifest=manifest,
        pointer=pointer,
        bundle_root=bundle_root,
        root=root,
        kinds=kinds,
        locate=locate,
    )
    parsed = parse_entry(entry, ctx)
    return DeclaredCheck(
        bundle=bundle,
        check_id=str(entry.get("id")),
        kind=str(entry.get("kind")),
        entry=entry,
        base_dir=base_dir,
        manifest=manifest,
        pointer=pointer,
        bundle_root=bundle_root,
        root=root,
        line=locate(pointer).line if locate is not None else None,
        check_kind=parsed.kind,
        spec=parsed.spec,
        errors=parsed.findings,
    )


def _refuse_duplicates(specs: list[DeclaredCheck]) -> None:
    seen: dict[str, DeclaredCheck] = {}
    for spec in specs:
        if spec.check_id in seen:
            first = seen[spec.check_id]
            raise InputError(
                Finding(
                    "GATE.CHECK.DUPLICATE_ID",
                    f"check id {spec.check_id!r} is declared twice"
                    f" (first at {first.manifest}#{first.pointer})",
                    location=Location(file=spec.manifest, pointer=spec.pointer + "/id"),
                )
            )
        seen[spec.check_id] = spec
