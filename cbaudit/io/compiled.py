"""Which build of cbaudit is running: the interpreted sources, or a wheel whose replay hot path
`hatch_build.py` compiled with mypyc.

A compiled wheel carries `cbaudit/_compiled.json`: the compiler and, for every compiled module,
the digest of the source it was compiled from. The extension module sits beside that source
and Python imports it first. `cbaudit --version` says which build this is, and the replay
believes a compiled policy's stretch declaration only when the record says it was compiled
from the sources the differential tests ran on (`cbaudit/policies/verified.py`).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
RECORD_NAME = "_compiled.json"


@dataclass(frozen=True)
class CompiledBuild:
    """A compiled build's record: the compiler, and {module path: source digest} for every
    compiled module ("cbaudit/sim/engine.py": "sha256:..."). `problem` is set when the record
    cannot be read as one; then nothing in it is believed."""

    compiler: str
    modules: dict[str, str]
    problem: str | None = None


@cache
def compiled_build() -> CompiledBuild | None:
    """This installation's compiled-build record; None for the interpreted build (no record
    beside the package)."""
    path = PACKAGE_DIR / RECORD_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as err:
        return CompiledBuild("?", {}, f"cannot read {path}: {err.strerror or err}")
    try:
        data = json.loads(text)
        compiler = data["compiler"]
        modules = data["modules"]
    except (ValueError, KeyError, TypeError) as err:
        return CompiledBuild("?", {}, f"{path} is not a build record ({err})")
    if not (
        isinstance(compiler, str)
        and isinstance(modules, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in modules.items())
    ):
        return CompiledBuild("?", {}, f"{path} is not a build record")
    return CompiledBuild(compiler, dict(modules))


def extension_beside(source: Path) -> Path | None:
    """The extension module that an import of `source`'s module loads instead of it, if one
    is there."""
    stem = source.with_suffix("")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = stem.with_name(stem.name + suffix)
        if candidate.is_file():
            return candidate
    return None


def compiled_source_digest(source: Path) -> str | None:
    """The digest of the source that the extension module beside `source` (a module file of
    this package) was compiled from, by the build record; None when the record does not
    list it."""
    build = compiled_build()
    if build is None or build.problem:
        return None
    try:
        rel = source.resolve().relative_to(PACKAGE_DIR.parent).as_posix()
    except ValueError:
        return None
    return build.modules.get(rel)


def source_digest(source: bytes) -> str:
    """A source file's digest, line endings normalised (a checkout with CRLF endings holds the
    same code); the build record and the verified-sources record use it."""
    return "sha256:" + hashlib.sha256(source.replace(b"\r\n", b"\n")).hexdigest()


def describe_build() -> str:
    """One phrase for `cbaudit --version`: which build this is."""
    build = compiled_build()
    if build is None:
        return "interpreted"
    if build.problem:
        return f"compiled, but its build record is unusable: {build.problem}"
    loaded = sum(
        1 for rel in build.modules if extension_beside(PACKAGE_DIR.parent / rel) is not None
    )
    return f"compiled: {loaded} of {len(build.modules)} modules by {build.compiler}"
