"""Inputs that travel with a task: file content, not paths on the submitting machine.

A unit that runs on a cluster worker must not count on the submitter's file system. A
`Shipment` carries the bytes of the files a unit may read, keyed by their absolute path on the
submitting machine, and the submitter's working directory. On the worker, `relocated(...)`
writes them once per process under a private folder T (at T + their absolute path), changes
into T + the submitter's working directory for the unit's duration, and gives back:

* `rebase(path)`: where a submitter's path lies on the worker (an absolute path gains the T
  prefix; a relative one is unchanged, since the working directory moved with it);
* `restore(obj)`: the unit's result with every T prefix taken out of its strings and paths,
  so the result says exactly what it would have said on the submitting machine.

A file a unit reads that was not shipped is simply not there: the unit reports it as missing
(a located error, never a pass).
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from cbaudit.model import UsageError

#: Folders never shipped (version control, environments, caches).
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".cache",
        "node_modules",
    }
)
#: The most bytes one shipment may carry (a larger one is refused: run it locally).
MAX_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class Shipment:
    """Files (absolute path on the submitter -> bytes), symlinks (path -> target) and the
    submitter's working directory."""

    files: Mapping[str, bytes]
    cwd: str
    links: Mapping[str, str] = field(default_factory=dict)
    digest: str = ""

    @property
    def size(self) -> int:
        return sum(len(b) for b in self.files.values())


def pack(roots: Iterable[Path], files: Iterable[Path] = ()) -> Shipment:
    """Ship every regular file under each folder in `roots` and each file in `files`.

    Symlinks are kept as links when they point inside what is shipped (else their content is
    shipped); SKIPPED_DIRS are left behind. More than MAX_BYTES is a usage error (exit 2)."""
    contents: dict[str, bytes] = {}
    links: dict[str, str] = {}
    total = 0
    folders = [Path(os.path.abspath(r)) for r in roots]

    def add(path: Path) -> None:
        nonlocal total
        key = str(path)
        if key in contents or key in links:
            return
        if path.is_symlink():
            target = os.path.realpath(path)
            if any(target == str(r) or target.startswith(str(r) + os.sep) for r in folders):
                links[key] = target
                return
        try:
            data = path.read_bytes()
        except OSError:
            return  # unreadable here: the unit will report it where it reads it
        total += len(data)
        if total > MAX_BYTES:
            raise UsageError(
                f"the inputs to ship to the cluster exceed {MAX_BYTES // 2**20} MiB (at {path});"
                " run this one with --executor local"
            )
        contents[key] = data

    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
            for name in sorted(filenames):
                path = Path(dirpath) / name
                try:
                    mode = path.lstat().st_mode
                except OSError:
                    continue
                if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
                    add(path)
    for f in files:
        p = Path(os.path.abspath(f))
        if p.is_file():
            add(p)
    h = hashlib.sha256()
    for key in sorted(contents):
        h.update(key.encode() + b"\0" + hashlib.sha256(contents[key]).digest())
    for key in sorted(links):
        h.update(key.encode() + b"\0>" + links[key].encode())
    return Shipment(contents, os.getcwd(), links, h.hexdigest())


# ------------------------------------------------------------------------------ worker

_UNPACKED: dict[str, Path] = {}
_PREFIX = "cbaudit-shipped-"


def _cleanup() -> None:
    for folder in _UNPACKED.values():
        shutil.rmtree(folder, ignore_errors=True)


atexit.register(_cleanup)


def _sweep_orphans() -> None:
    """Remove the folders of worker processes that died without cleaning up (a cluster may
    kill its workers): each folder's name carries its process id."""
    top = Path(tempfile.gettempdir())
    for folder in top.glob(f"{_PREFIX}*-*"):
        pid = folder.name[len(_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue  # alive (another user's) or not ours to judge


def unpack(shipment: Shipment) -> Path:
    """The folder T this process wrote `shipment` under (once per shipment and process)."""
    known = _UNPACKED.get(shipment.digest)
    if known is not None and known.is_dir():
        return known
    if not _UNPACKED:
        _sweep_orphans()
    top = Path(os.path.realpath(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")))
    for key, data in shipment.files.items():
        dest = Path(str(top) + key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    for key, target in shipment.links.items():
        dest = Path(str(top) + key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(str(top) + target, dest)
    Path(str(top) + shipment.cwd).mkdir(parents=True, exist_ok=True)
    _UNPACKED[shipment.digest] = top
    return top


@dataclass(frozen=True)
class Relocation:
    """Where a shipment lies on this worker; see the module docstring."""

    top: str
    replacements: tuple[tuple[str, str], ...] = ()  # (worker text, submitter text), after top

    def rebase(self, path: Path) -> Path:
        return Path(self.top + str(path)) if path.is_absolute() else path

    def restore_text(self, text: str) -> str:
        text = text.replace(self.top, "")
        for mine, theirs in self.replacements:
            text = text.replace(mine, theirs)
        return text

    def restore(self, obj: Any) -> Any:
        """`obj` with every string and path restored (dataclasses, mappings, sequences)."""
        return _walk(obj, self.restore_text)


def _walk(obj: Any, fix: Callable[[str], str]) -> Any:
    if isinstance(obj, Enum) or obj is None or isinstance(obj, bool | int | float | bytes):
        return obj
    if isinstance(obj, str):
        return fix(obj)
    if isinstance(obj, Path):
        return type(obj)(fix(str(obj)))
    if isinstance(obj, Mapping):
        return (
            type(obj)({_walk(k, fix): _walk(v, fix) for k, v in obj.items()})
            if isinstance(obj, dict)
            else {_walk(k, fix): _walk(v, fix) for k, v in obj.items()}
        )
    if isinstance(obj, tuple):
        return tuple(_walk(v, fix) for v in obj)
    if isinstance(obj, list):
        return [_walk(v, fix) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {
            f.name: _walk(getattr(obj, f.name), fix)
            for f in dataclasses.fields(obj)
            if f.init and hasattr(obj, f.name)
        }
        return dataclasses.replace(obj, **changes)
    return obj


@contextmanager
def relocated(
    shipment: Shipment, replacements: Iterable[tuple[str, str]] = ()
) -> Iterator[Relocation]:
    """Unpack `shipment`, run the block in T + the submitter's working directory, go back."""
    top = unpack(shipment)
    before = os.getcwd()
    os.chdir(str(top) + shipment.cwd)
    try:
        # longest first: a worker's registry may lie inside its package folder
        pairs = sorted(((a, b) for a, b in replacements if a != b), key=lambda p: -len(p[0]))
        yield Relocation(str(top), tuple(pairs))
    finally:
        os.chdir(before)
