"""What a check kind receives from the gate besides its own spec."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.atomic import atomic_write
from cbaudit.model import Finding, InputError, Location, Severity
from cbaudit.model.canonical import dumps_canonical


@dataclass(frozen=True)
class GateContext:
    """Where a check was declared and how the gate is running."""

    base_dir: Path  # directory of the file that declares the check
    manifest: str  # display path of that file, for locations
    pointer: str  # JSON pointer of the check inside that file
    bundle_root: Path  # the bundle directory; nothing may escape it
    update: bool = False  # rewrite expected outputs instead of failing on drift
    repo_root: Path | None = None  # nearest ancestor with pyproject.toml, if any

    def resolve_repo(self, rel: str, *, field: str = "") -> Path:
        """Resolve a repository-relative path (e.g. `pinned/x.yaml`); refuse escapes."""
        ptr = self.pointer + (f"/{field}" if field else "")
        root = self.repo_root or self.bundle_root
        if not isinstance(rel, str) or not rel or Path(rel).is_absolute():
            raise InputError.at(
                "GATE.PATH.INVALID",
                f"expected a relative path, got {rel!r}",
                self.manifest,
                pointer=ptr,
            )
        target = (root / rel).resolve()
        if target != root.resolve() and root.resolve() not in target.parents:
            raise InputError.at(
                "GATE.PATH.ESCAPE",
                f"path {rel!r} escapes the repository",
                self.manifest,
                pointer=ptr,
            )
        return target

    def location(self, suffix: str = "") -> Location:
        """A location pointing at this check (or a field of it) in its manifest."""
        return Location(file=self.manifest, pointer=self.pointer + suffix)

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
        root = self.bundle_root.resolve()
        if target != root and root not in target.parents:
            raise InputError.at(
                "GATE.PATH.ESCAPE",
                f"path {rel!r} escapes the bundle directory",
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
        old = path.read_text(encoding="utf-8", errors="replace")  # non-UTF-8 bytes: drift
        try:
            old_canon = dumps_canonical(json.loads(old))
        except ValueError:
            old_canon = old
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
