"""Bundle discovery and manifest loading: bundle.yaml plus included check lists."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io import load_document
from cbaudit.io.schemas import validate
from cbaudit.model import Finding, InputError, Location
from cbaudit.model.findings import pointer_join

BUNDLE_FILE = "bundle.yaml"


@dataclass(frozen=True)
class CheckSpec:
    """One declared check and where it was declared."""

    bundle: str
    check_id: str
    kind: str
    spec: Mapping[str, Any]
    base_dir: Path
    manifest: str
    pointer: str
    bundle_root: Path
    root: Path | None = None  # the declared or permitted root its checks may read in
    line: int | None = None  # line of the check's entry in its manifest, where known


@dataclass(frozen=True)
class Bundle:
    """A loaded bundle: its identity, the files it was read from, and its checks."""

    name: str
    title: str
    root: Path
    manifest_files: tuple[Path, ...]
    checks: tuple[CheckSpec, ...]
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


def _schema_errors(data: Any, schema: str, doc_path: str, locate: Any) -> None:
    findings = validate(data, schema, file=doc_path, locate=locate)
    if findings:
        raise InputError(findings)


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


def load_bundle(root: Path, *, permit: Path | None = None) -> Bundle:
    """Read bundle.yaml and its includes; refuse duplicate ids and escaping includes.

    The root its checks may read in besides the bundle is `permit` (`--root`) when given,
    else the bundle's declared `root:`, else none.
    """
    manifest_path = root / BUNDLE_FILE
    doc = load_document(manifest_path)
    _schema_errors(doc.data, "bundle", doc.path, doc.locate)
    name = str(doc.data["bundle"])
    read_root: Path | None = None
    if permit is not None:
        read_root = permitted_root(root, permit)
    elif "root" in doc.data:
        read_root = declared_root(root, doc.data["root"], doc.locate("/root"))
    files = [manifest_path]
    specs: list[CheckSpec] = []

    def add_checks(
        items: list[Any], base_dir: Path, display: str, ptr: str, loop: Any = None, at: Any = None
    ) -> None:
        for i, item in enumerate(items):
            if "loop" in item or loop is not None:
                item = {**item, "loop": loop_label(item.get("loop", loop))}
            specs.append(
                CheckSpec(
                    bundle=name,
                    check_id=str(item["id"]),
                    kind=str(item["kind"]),
                    spec=item,
                    base_dir=base_dir,
                    manifest=display,
                    pointer=pointer_join(ptr, i),
                    bundle_root=root,
                    root=read_root,
                    line=at(pointer_join(ptr, i)).line if at else None,
                )
            )

    add_checks(doc.data.get("checks", []), root, doc.path, "/checks", at=doc.locate)
    resolved_root = root.resolve()
    for j, rel in enumerate(doc.data.get("include", [])):
        target = (root / rel).resolve()
        if resolved_root not in target.parents:
            loc = doc.locate(f"/include/{j}")
            raise InputError(
                Finding("GATE.PATH.ESCAPE", f"include {rel!r} escapes the bundle", location=loc)
            )
        if not target.is_file():
            loc = doc.locate(f"/include/{j}")
            raise InputError(
                Finding("GATE.INCLUDE.MISSING", f"included file {rel!r} not found", location=loc)
            )
        inc = load_document(root / rel)
        _schema_errors(inc.data, "check-list", inc.path, inc.locate)
        files.append(root / rel)
        add_checks(
            inc.data["checks"],
            (root / rel).parent,
            inc.path,
            "/checks",
            inc.data.get("loop"),
            inc.locate,
        )
    seen: dict[str, CheckSpec] = {}
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
    return Bundle(name, str(doc.data["title"]), root, tuple(files), tuple(specs), read_root)
