"""What the gate adds to a check's results once it ran, whatever the kind.

* `declared_at`: the check's entry in its `checks.yaml` (file and line), so JUnit and SARIF can
  point at it when a result has no located finding (a not-run check, a crash).
* `duration_s`: the check's wall time, shared evenly by the results it produced. It never
  enters the JSON report (that stays byte-identical run to run); JUnit carries it.
* Finding locations a reader can open: check kinds name files relative to their bundle, their
  declaring file, the repository, or absolutely. Each file that exists is rewritten relative
  to the working directory (a CI job's checkout), so no report carries an absolute path or a
  bundle-relative one that does not resolve from where the gate ran. A "file" that is really
  the check's own id (a replay's subject) points at the check's declaration instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from cbaudit.checks.bundle import DeclaredCheck
from cbaudit.model import CheckResult, Finding, Location


def _repo_root(start: Path) -> Path | None:
    for candidate in [start, *start.parents]:
        if (candidate / "pyproject.toml").is_file():
            return candidate
    return None


def _display(path: Path, cwd: Path) -> str:
    """`path` relative to `cwd` (with `..` where it lies outside); absolute only when no
    relative path exists (another drive)."""
    try:
        return Path(os.path.relpath(path, cwd)).as_posix()
    except ValueError:
        return path.as_posix()


class Relocator:
    """Rewrites the file of each finding of one check (see the module docstring)."""

    def __init__(self, spec: DeclaredCheck, cwd: Path | None = None) -> None:
        self.cwd = (cwd or Path.cwd()).resolve()
        root = spec.bundle_root.resolve()
        repo = _repo_root(root)
        self.frames = [p for p in (root, spec.base_dir.resolve(), repo) if p is not None]
        self.own_ids = {spec.check_id, f"{spec.bundle}:{spec.check_id}"}
        self.declared = Location(file=spec.manifest, pointer=spec.pointer, line=spec.line)

    def file(self, name: str) -> str:
        path = Path(name)
        if path.is_absolute():
            return _display(path, self.cwd)
        if (self.cwd / path).exists():
            return path.as_posix()
        for frame in self.frames:
            candidate = frame / path
            if candidate.exists():
                return _display(candidate, self.cwd)
        return name

    def location(self, loc: Location, subject: str) -> Location:
        if loc.file is None:
            return loc
        if loc.file in self.own_ids or loc.file == subject:
            return self.declared
        new = self.file(loc.file)
        return loc if new == loc.file else replace(loc, file=new)

    def finding(self, f: Finding, subject: str) -> Finding:
        loc = self.location(f.location, subject)
        return f if loc is f.location else replace(f, location=loc)


def stamp(
    spec: DeclaredCheck, results: Sequence[CheckResult], seconds: float, cwd: Path | None = None
) -> list[CheckResult]:
    """`results` with their declaration, their share of `seconds` and readable locations."""
    relocate = Relocator(spec, cwd)
    share = seconds / len(results) if results else 0.0
    # Before the gate labels it, a result's subject is what the kind called it (often the id).
    return [
        replace(
            r,
            findings=tuple(relocate.finding(f, r.subject) for f in r.findings),
            declared_at=r.declared_at or relocate.declared,
            duration_s=share,
        )
        for r in results
    ]
