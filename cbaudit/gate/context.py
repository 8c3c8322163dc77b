"""What a check kind receives from the gate besides its own spec."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.atomic import atomic_write
from cbaudit.io.loader import load_document
from cbaudit.model import Finding, InputError, Location, Severity
from cbaudit.model.canonical import dumps_canonical


@dataclass(frozen=True)
class GateContext:
    """Where a check was declared and how the gate is running.

    A check reads only inside its *read root*: the bundle directory, or the root the bundle
    declares (`root:` in bundle.yaml) or the user permits (`cbaudit gate --root DIR`), which
    always contains the bundle. Nothing is resolved from the working directory or from where a
    `pyproject.toml` happens to be.
    """

    base_dir: Path  # directory of the file that declares the check
    manifest: str  # display path of that file, for locations
    pointer: str  # JSON pointer of the check inside that file
    bundle_root: Path  # the bundle directory
    update: bool = False  # rewrite expected outputs instead of failing on drift
    root: Path | None = None  # the declared or permitted root (contains the bundle), if any

    @property
    def read_root(self) -> Path:
        """The folder no path a check reads may escape: the root if one is set, else the bundle."""
        return (self.root or self.bundle_root).resolve()

    def resolve_repo(self, rel: str, *, field: str = "") -> Path:
        """Resolve a root-relative path (`{repo_path: pinned/x.yaml}`); refuse escapes.

        Without a declared or permitted root there is nothing outside the bundle to read:
        the path is refused as GATE.PATH.ESCAPE.
        """
        ptr = self.pointer + (f"/{field}" if field else "")
        if not isinstance(rel, str) or not rel or Path(rel).is_absolute():
            raise InputError.at(
                "GATE.PATH.INVALID",
                f"expected a relative path, got {rel!r}",
                self.manifest,
                pointer=ptr,
            )
        if self.root is None:
            raise InputError.at(
                "GATE.PATH.ESCAPE",
                f"repo_path {rel!r} lies outside the bundle, which declares no root: declare"
                " `root:` in bundle.yaml (a folder above the bundle) or pass `--root DIR`",
                self.manifest,
                pointer=ptr,
            )
        root = self.root.resolve()
        target = (root / rel).resolve()
        if target != root and root not in target.parents:
            raise InputError.at(
                "GATE.PATH.ESCAPE",
                f"path {rel!r} escapes the bundle's root",
                self.manifest,
                pointer=ptr,
            )
        return target

    def location(self, suffix: str = "") -> Location:
        """A location pointing at this check (or a field of it) in its manifest."""
        return Location(file=self.manifest, pointer=self.pointer + suffix)

    def contains(self, path: Path) -> bool:
        """True when `path` (resolved) lies inside the read root."""
        top = self.read_root
        target = path.resolve()
        return target == top or top in target.parents

    def display(self, path: Path) -> str:
        """`path` as shown in reports: relative to the bundle (with `..` when it lies in the
        root above it), so a report reads the same from any working directory."""
        return os.path.relpath(path.resolve(), self.bundle_root.resolve())

    def resolve(self, rel: str, *, field: str = "") -> Path:
        """Resolve a path relative to the declaring file; refuse escapes and absolutes."""
        ptr = self.pointer + (f"/{field}" if field else "")
        if not isinstance(rel, str) or not rel:
            raise InputError.at(
                "GATE.PATH.INVALID", "expected a relative path", self.manifest, pointer=ptr
            )
        if Path(rel).is_absolute():
            raise InputError.at(
                "GATE.PATH.ABSOLUTE", f"path {rel!r} must be relative", self.manifest, pointer=ptr
            )
        target = (self.base_dir / rel).resolve()
        if not self.contains(target):
            where = "the bundle directory" if self.root is None else "the bundle's root"
            raise InputError.at(
                "GATE.PATH.ESCAPE",
                f"path {rel!r} escapes {where}",
                self.manifest,
                pointer=ptr,
            )
        return target

    def expect_json(
        self, rel: str, actual: Any, check_id: str, *, field: str = "expected"
    ) -> list[Finding]:
        """Compare JSON-ready `actual` with the expected file `rel` (canonical JSON).

        Returns `GATE.EXPECTED.DRIFT` with a unified diff when they differ, or
        `GATE.EXPECTED.MISSING` when the file does not exist. With `update`, (re)writes the file
        atomically and returns no finding.
        """
        path = self.resolve(rel, field=field)
        text = dumps_canonical(actual)
        if self.update:
            old_text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else None
            if old_text == text:
                return []
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
            if old_text is None:
                what = "created"
            else:
                changed = sum(
                    1
                    for line in difflib.unified_diff(
                        old_text.splitlines(), text.splitlines(), lineterm="", n=0
                    )
                    if line[:1] in "+-" and not line.startswith(("+++", "---"))
                )
                what = f"rewritten ({changed} changed lines)"
            return [
                Finding(
                    "GATE.EXPECTED.UPDATED",
                    f"{check_id}: expected output {rel} {what}",
                    severity=Severity.NOTE,
                    location=Location(file=str(path), pointer=""),
                )
            ]
        loc = Location(file=str(path), pointer="")
        if not path.exists():
            return [
                Finding(
                    "GATE.EXPECTED.MISSING",
                    f"{check_id}: expected output {rel} does not exist"
                    " (run `cbaudit gate --update`)",
                    location=loc,
                )
            ]
        # An expected file that is not usable JSON (broken, non-UTF-8, nested past the depth
        # limit, ...) is unusable input: its located LOAD.* finding, exit 2.
        old_canon = dumps_canonical(load_document(path, fmt="json", expect=None).data)
        if old_canon == text:
            return []
        diff = "".join(
            difflib.unified_diff(
                old_canon.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"{rel} (expected)",
                tofile=f"{rel} (actual)",
                n=2,
            )
        )
        lines = diff.splitlines()
        if len(lines) > 60:
            diff = "\n".join([*lines[:60], f"... ({len(lines) - 60} more diff lines)"])
        return [
            Finding(
                "GATE.EXPECTED.DRIFT",
                f"{check_id}: output no longer matches {rel}:\n{diff}",
                location=loc,
            )
        ]
