"""Atomic file writes: a temporary file beside the target, then a rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from cbaudit.model import UsageError


def atomic_write(path: Path | str, text: str | bytes) -> None:
    """Write `text` to `path` so readers see the old file or the whole new one, never half."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{path}: output directory {parent} does not exist")
    if path.is_dir():
        raise UsageError(f"{path}: is a directory")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        data = text.encode("utf-8") if isinstance(text, str) else text
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, new_file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_stream(path: Path | str) -> Iterator[IO[bytes]]:
    """A binary handle for streaming a file into place: readers see the old file or the whole
    new one, never half (the temporary file is removed when the block raises)."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{path}: output directory {parent} does not exist")
    if path.is_dir():
        raise UsageError(f"{path}: is a directory")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.chmod(tmp, new_file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def new_file_mode(path: Path) -> int:
    """The mode for a file about to replace `path`: the replaced file's, else the one a plain
    open() would give under the process umask. `mkstemp` creates its file 0600; a temporary
    file renamed into place keeps that mode unless it is set from this."""
    return path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
