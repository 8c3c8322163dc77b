"""The read log: which files a gate check opened, confined to where it may read.

While `recording(...)` is active (the gate opens it around each check), every file opened
through `cbaudit.io` (`load_document`, `iter_jsonl`, `read_bounded`, `open_input`) is noted
here. A file outside the log's roots (the bundle or its declared root, the package's own
data) and not explicitly permitted (an external input the check expanded from `${VAR}`) is
refused with `GATE.PATH.ESCAPE`, so a path *inside* an input (a case's `base`, a cost model's
table) is confined even where the code that follows it does not check.

When the check ends, `ReadLog.digests()` hashes each file once (sha256 of its bytes; cached in
the process by path, size and modification time), so the results can carry their inputs back
from a worker process. Outside a recording, noting costs one context-variable lookup.

A file that changes between the check's read and the hash is reported with the later bytes;
the gate is not a defence against a concurrent writer.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO

from cbaudit.model import InputError
from cbaudit.model.errors import file_error

ESCAPE_CODE = "GATE.PATH.ESCAPE"


class ReadLog:
    """The files one check read (absolute, symlinks resolved), in the order first read."""

    def __init__(self, roots: Iterable[Path]) -> None:
        self.roots = tuple(Path(os.path.realpath(r)) for r in roots)
        self.permitted: set[Path] = set()
        self.files: dict[Path, None] = {}

    def permit(self, path: Path) -> None:
        """Let the check read `path` (a file, or a folder and what it holds) although it lies
        outside the roots: an external input the check expanded from the environment."""
        self.permitted.add(Path(os.path.realpath(path)))

    def allows(self, target: Path) -> bool:
        """True when `target` (resolved) lies in a root or a permitted external input."""
        return any(target == r or r in target.parents for r in (*self.roots, *self.permitted))

    def note(self, path: str | Path, name: str) -> None:
        """Record a read of `path` (shown as `name`); refuse it outside what the check may read."""
        target = Path(os.path.realpath(path))
        if target in self.files:
            return
        if not self.allows(target):
            raise InputError.at(
                ESCAPE_CODE,
                f"a check may read only inside its bundle (or its declared root): {name}"
                f" resolves to {target}",
                name,
            )
        self.files[target] = None

    def digests(self) -> tuple[tuple[str, str], ...]:
        """(absolute path, sha256) of every file read that still exists, in reading order."""
        out: list[tuple[str, str]] = []
        for path in self.files:
            digest = file_sha256(path)
            if digest is not None:
                out.append((str(path), digest))
        return tuple(out)


_LOG: ContextVar[ReadLog | None] = ContextVar("cbaudit_read_log", default=None)


@contextmanager
def recording(roots: Iterable[Path]) -> Iterator[ReadLog]:
    """Note every read in this block into a new log confined to `roots`.

    A block inside another recording shares the outer log (a check that runs another check,
    such as `negative_check`, reads on behalf of the outer one).
    """
    outer = _LOG.get()
    if outer is not None:
        yield outer
        return
    log = ReadLog(roots)
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


def active_log() -> ReadLog | None:
    """The log of the recording in progress, if any."""
    return _LOG.get()


def note_read(path: str | Path, name: str | None = None) -> None:
    """Record a read of `path` in the active log (a no-op outside a recording)."""
    log = _LOG.get()
    if log is not None:
        log.note(path, name if name is not None else str(path))


def permit_read(path: Path) -> None:
    """Let the active recording read `path`, an external input named outside any bundle."""
    log = _LOG.get()
    if log is not None:
        log.permit(path)


def open_input(path: str | Path, name: str | None = None) -> BinaryIO:
    """Open an input file for binary reading, noting the read (for streamed readers)."""
    shown = name if name is not None else str(path)
    note_read(path, shown)
    try:
        return open(path, "rb")
    except OSError as err:
        raise file_error(shown, err) from None


_HASHES: dict[tuple[Path, int, int], str] = {}


def file_sha256(path: Path) -> str | None:
    """sha256 of `path`'s bytes (None when it is gone or not a regular file); cached."""
    try:
        info = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    key = (path, info.st_size, info.st_mtime_ns)
    cached = _HASHES.get(key)
    if cached is not None:
        return cached
    try:
        with path.open("rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None
    _HASHES[key] = digest
    return digest
