"""What a check kind receives from the gate besides its own spec: one context for every kind.

A check reads only inside its *read root*: the bundle directory, or the root the bundle
declares (`root:` in bundle.yaml) or the user permits (`cbaudit gate --root DIR`), which always
contains the bundle. Nothing is resolved from the working directory or from where a
`pyproject.toml` happens to be. The path forms of a spec field (docs/gate.md):

* a relative path string: resolved against the declaring file, inside the read root
  (`resolve`; `GATE.PATH.ESCAPE` outside it, `GATE.PATH.ABSOLUTE` for an absolute path inside);
* a mapping `{repo_path: REL}`: resolved against the declared or permitted root
  (`resolve_repo`); with no root it is `GATE.PATH.ESCAPE` (a bundle that reads outside itself
  says so);
* a string holding `${NAME}` references (`spec_path`): expanded from the environment, an
  external input used as given. An unset or empty variable makes the path *unavailable* (the
  check reports not run, never passed).

The same context, with `locate`, is what a kind's `validate` sees while the bundle loads.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.io.atomic import atomic_write
from cbaudit.io.loader import load_document
from cbaudit.io.reads import permit_read
from cbaudit.model import Finding, InputError, Location, Severity
from cbaudit.model.canonical import dumps_canonical
from cbaudit.model.findings import Locator

if TYPE_CHECKING:
    from cbaudit.checks.interface import CheckKind

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class SpecPath:
    """A resolved spec path, or the reason it is not available here."""

    path: Path | None
    display: str
    reason: str | None = None


def _inside(target: Path, top: Path) -> bool:
    return target == top or top in target.parents


@dataclass(frozen=True)
class GateContext:
    """Where a check was declared and how the gate is running (see the module docstring)."""

    base_dir: Path  # directory of the file that declares the check
    manifest: str  # display path of that file, for locations
    pointer: str  # JSON pointer of the check inside that file
    bundle_root: Path  # the bundle directory
    update: bool = False  # rewrite expected outputs instead of failing on drift
    root: Path | None = None  # the declared or permitted root (contains the bundle), if any
    # The registry this run uses: kinds that read a whole bundle (mutation campaigns, negative
    # floors) parse its checks with it. The gate passes `cbaudit.kinds.KINDS`.
    kinds: Mapping[str, CheckKind[Any]] = field(default_factory=dict, compare=False)
    # While a bundle loads: where a pointer of its manifest is (file, line, column).
    locate: Locator | None = field(default=None, compare=False)

    @cached_property
    def read_root(self) -> Path:
        """The folder no path a check reads may escape: the root if one is set, else the bundle."""
        return (self.root or self.bundle_root).resolve()

    def at(self, pointer: str, base_dir: Path | None = None) -> GateContext:
        """The same context for the entry at `pointer` (a nested check), declared in `base_dir`."""
        return GateContext(
            base_dir=base_dir or self.base_dir,
            manifest=self.manifest,
            pointer=pointer,
            bundle_root=self.bundle_root,
            update=self.update,
            root=self.root,
            kinds=self.kinds,
            locate=self.locate,
        )

    def location(self, suffix: str = "") -> Location:
        """A location pointing at this check (or a field of it) in its manifest."""
        if self.locate is not None:
            return self.locate(self.pointer + suffix)
        return Location(file=self.manifest, pointer=self.pointer + suffix)

    def error(self, code: str, message: str, field: str = "") -> InputError:
        """Unusable input located at this check (or its `field`, a pointer suffix without `/`)."""
        return InputError(
            Finding(code, message, location=self.location(f"/{field}" if field else ""))
        )

    def contains(self, path: Path) -> bool:
        """True when `path` (resolved) lies inside the read root."""
        return _inside(path.resolve(), self.read_root)

    def display(self, path: Path) -> str:
        """`path` as shown in reports: relative to the bundle (with `..` when it lies in the
        root above it), so a report reads the same from any working directory."""
        return os.path.relpath(path.resolve(), self.bundle_root.resolve())

    # ------------------------------------------------------------------ paths a check reads

    def resolve(self, rel: Any, *, field: str = "") -> Path:
        """Resolve a path relative to the declaring file; refuse escapes and absolute paths."""
        if not isinstance(rel, str) or not rel:
            raise self.error("GATE.PATH.INVALID", "expected a relative path", field)
        target = Path(os.path.realpath(os.path.join(self.base_dir, rel)))
        if not _inside(target, self.read_root):
            where = "the bundle directory" if self.root is None else "the bundle's root"
            raise self.error("GATE.PATH.ESCAPE", f"path {rel!r} escapes {where}", field)
        if Path(rel).is_absolute():
            raise self.error("GATE.PATH.ABSOLUTE", f"path {rel!r} must be relative", field)
        return target

    def resolve_repo(self, rel: Any, *, field: str = "") -> Path:
        """Resolve a root-relative path (`{repo_path: pinned/x.yaml}`); refuse escapes.

        Without a declared or permitted root there is nothing outside the bundle to read:
        the path is refused as GATE.PATH.ESCAPE.
        """
        if not isinstance(rel, str) or not rel or Path(rel).is_absolute():
            raise self.error("GATE.PATH.INVALID", f"expected a relative path, got {rel!r}", field)
        if self.root is None:
            raise self.error(
                "GATE.PATH.ESCAPE",
                f"repo_path {rel!r} lies outside the bundle, which declares no root: declare"
                " `root:` in bundle.yaml (a folder above the bundle) or pass `--root DIR`",
                field,
            )
        root = self.root.resolve()
        target = (root / rel).resolve()
        if not _inside(target, root):
            raise self.error("GATE.PATH.ESCAPE", f"path {rel!r} escapes the bundle's root", field)
        return target

    def spec_path(self, value: Any, field: str) -> SpecPath:
        """A path field that may also be `{repo_path: REL}` or hold `${VAR}` (module docstring).

        An expanded `${VAR}` path is an external input: the read log lets the check read it.
        """
        if isinstance(value, Mapping) and set(value) == {"repo_path"}:
            rel = value["repo_path"]
            return SpecPath(self.resolve_repo(rel, field=f"{field}/repo_path"), str(rel))
        if not isinstance(value, str) or not value:
            raise self.error(
                "GATE.SPEC.INVALID",
                f"{field} must be a path string, ${{VAR}}, or {{repo_path: PATH}}",
                field,
            )
        names = _VAR.findall(value)
        if not names:
            return SpecPath(self.resolve(value, field=field), value)
        missing = [n for n in names if not os.environ.get(n)]
        if missing:
            return SpecPath(
                None, value, f"{', '.join(missing)} is not set, so {field} is not available"
            )
        expanded = _VAR.sub(lambda m: os.environ[m.group(1)], value)
        path = Path(expanded)
        if not path.exists():
            return SpecPath(None, value, f"{field} {expanded} (from {value}) does not exist")
        permit_read(path)
        return SpecPath(path, expanded)

    def check_path(self, value: Any, form: str, field: str) -> None:
        """Refuse (InputError) a path field of the given form that leaves the read root.

        Forms (`check-common.schema.json#/$defs/...`): `path`, `source` (`${VAR}` is an
        external input, checked when it is read), `registry_path` (`registry:NAME` names a
        shipped file), `result_ref` (a `registry_path` with an optional `#ID`).
        """
        if form == "result_ref" and isinstance(value, str):
            value = value.rpartition("#")[0] if "#" in value else value
            form = "registry_path"
        if form == "registry_path" and isinstance(value, str) and value.startswith("registry:"):
            registry_name(value, self, field)
            return
        if form == "source":
            if isinstance(value, Mapping):
                self.resolve_repo(value.get("repo_path"), field=f"{field}/repo_path")
                return
            if isinstance(value, str) and _VAR.search(value):
                return
        self.resolve(value, field=field)

    # ------------------------------------------------------------------ expected outputs

    def write_text(self, path: Path, text: str) -> None:
        """Write `path` atomically (update mode); refuse any target outside the bundle itself,
        even inside a root the bundle may read (`GATE.UPDATE.OUTSIDE_BUNDLE`)."""
        if not _inside(path.resolve(), self.bundle_root.resolve()):
            raise self.error(
                "GATE.UPDATE.OUTSIDE_BUNDLE",
                f"--update writes only inside the bundle; {path} lies outside it",
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)

    def expect_json(
        self, rel: str, actual: Any, check_id: str, *, field: str = "expected"
    ) -> list[Finding]:
        """Compare JSON-ready `actual` with the expected file `rel` (canonical JSON).

        Returns `GATE.EXPECTED.DRIFT` with a unified diff when they differ, or
        `GATE.EXPECTED.MISSING` when the file does not exist. With `update`, (re)writes the file
        atomically (inside the bundle only) and returns no finding.
        """
        path = self.resolve(rel, field=field)
        text = dumps_canonical(actual)
        if self.update:
            return self._update(path, rel, text, check_id)
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

    def _update(self, path: Path, rel: str, text: str, check_id: str) -> list[Finding]:
        old_text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else None
        if old_text == text:
            return []
        self.write_text(path, text)
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


REGISTRY_PREFIX = "registry:"


def registry_name(value: str, ctx: GateContext, field: str) -> str:
    """The file name of a `registry:NAME` reference (a shipped registry file), or InputError."""
    name = value[len(REGISTRY_PREFIX) :]
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise ctx.error("GATE.PATH.INVALID", f"bad registry name {name!r}", field)
    return name
