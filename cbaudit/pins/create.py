"""Build a pin manifest from a source tree: hashes, sizes, blob ids and marker lines."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cbaudit.model import InputError, UsageError
from cbaudit.pins.digests import ContentId, split_lines
from cbaudit.pins.manifest import Marker, PinManifest, PinnedFile
from cbaudit.pins.sources import FileAbsent, PathRefused, SourceReader

_DEF = re.compile(r"\s*(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")
_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


@dataclass(frozen=True, slots=True)
class MarkerSpec:
    """`PATH:LINE[:ID]` from the command line."""

    path: str
    line: int
    id: str | None = None


def parse_marker_spec(text: str) -> MarkerSpec:
    """Parse `PATH:LINE` or `PATH:LINE:ID`; raise UsageError when it is neither."""
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and _ID.match(parts[2]):
        path, line, ident = parts[0], int(parts[1]), parts[2]
    else:
        parts = text.rsplit(":", 1)
        if len(parts) != 2 or not parts[1].isdigit():
            raise UsageError(f"--marker {text!r}: expected PATH:LINE or PATH:LINE:ID")
        path, line, ident = parts[0], int(parts[1]), None
    if not path or line < 1:
        raise UsageError(f"--marker {text!r}: expected a path and a line number >= 1")
    return MarkerSpec(path, line, ident)


def infer_symbol(lines: Sequence[str], line: int) -> str | None:
    """The dotted Python scope (`Class.method`) enclosing `line`, by indentation; else None."""
    target = lines[line - 1]
    indent = len(target) - len(target.lstrip())
    names: list[str] = []
    own = _DEF.match(target)
    if own:
        names.append(own.group(1))
    for i in range(line - 2, -1, -1):
        if indent == 0:
            break
        text = lines[i]
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        level = len(text) - len(text.lstrip())
        if level < indent:
            found = _DEF.match(text)
            if found:
                names.append(found.group(1))
            indent = level
    return ".".join(reversed(names)) or None


def _read(source: SourceReader, path: str) -> bytes:
    try:
        return source.read(path)
    except PathRefused as err:
        raise InputError.at(err.code, err.message, path) from err
    except FileAbsent as err:
        raise InputError.at("PIN.FILE.MISSING", str(err), path) from err


def create_manifest(
    source: SourceReader,
    files: Sequence[str],
    markers: Sequence[MarkerSpec],
    *,
    runtime: str,
    version: str,
    repository: str | None = None,
    tag: str | None = None,
    commit: str | None = None,
    tag_object: str | None = None,
) -> PinManifest:
    """Pin `files` (and the files markers name) with one marker per spec, in the given order."""
    order: list[str] = []
    for path in [*files, *(m.path for m in markers)]:
        if path not in order:
            order.append(path)
    if not order:
        raise UsageError("pin create needs at least one --file or --marker")
    taken = {m.id for m in markers if m.id is not None}
    if len(taken) != len([m for m in markers if m.id is not None]):
        raise UsageError("--marker ids must be unique")
    counter = 0

    def next_id() -> str:
        nonlocal counter
        while True:
            counter += 1
            candidate = f"M{counter:02d}"
            if candidate not in taken:
                taken.add(candidate)
                return candidate

    pinned: list[PinnedFile] = []
    for path in order:
        data = _read(source, path)
        lines = split_lines(data)
        made: list[Marker] = []
        for spec in (m for m in markers if m.path == path):
            if spec.line > len(lines):
                raise UsageError(f"--marker {path}:{spec.line}: {path} has {len(lines)} lines")
            text = lines[spec.line - 1]
            if not text.strip():
                raise UsageError(f"--marker {path}:{spec.line}: the line is blank")
            symbol = infer_symbol(lines, spec.line) if path.endswith(".py") else None
            made.append(
                Marker(
                    id=spec.id or next_id(),
                    line=spec.line,
                    text=text,
                    symbol=symbol,
                    claim=None,
                    occurrences=tuple(i + 1 for i, t in enumerate(lines) if t == text),
                )
            )
        ident = ContentId.of(data)
        pinned.append(
            PinnedFile(
                path=path,
                sha256=ident.sha256,
                size=ident.size,
                git_blob=ident.git_blob,
                lines=len(lines),
                markers=tuple(made),
            )
        )
    return PinManifest(
        runtime=runtime,
        version=version,
        files=tuple(pinned),
        repository=repository,
        tag=tag,
        commit=commit,
        tag_object=tag_object,
    )
