"""Where pinned bytes come from: a directory (checkout or unpacked release), a release archive
(a wheel, zip or source tarball, read without unpacking) or a git repository.

Every reader refuses paths that are absolute, escape the root, or pass through a symlink that
leaves it; they never follow such a path. The git reader returns blob bytes exactly as stored,
so no checkout filter (line endings, smudge) can change what is hashed; the archive reader
returns member bytes exactly as packed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from cbaudit.io.reads import note_read
from cbaudit.model import UsageError
from cbaudit.pins.manifest import path_problem


class PathRefused(Exception):
    """A pinned path that may not be followed; carries a PIN.PATH.* code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class FileAbsent(Exception):
    """A pinned path that names no regular file in the source."""


class SourceReader(Protocol):
    """Reads the bytes of a pinned path from one kind of source."""

    @property
    def kind(self) -> str:
        """`directory`, `archive` or `git`."""
        ...

    def describe(self) -> str: ...

    def read(self, path: str) -> bytes: ...


@dataclass(frozen=True)
class DirectorySource:
    """A source tree on disk: a checkout or an unpacked release."""

    root: Path
    kind: str = "directory"

    @classmethod
    def open(cls, root: Path) -> DirectorySource:
        if not root.is_dir():
            raise UsageError(f"--source {root}: not a directory")
        return cls(root=root)

    def describe(self) -> str:
        return str(self.root)

    def read(self, path: str) -> bytes:
        problem = path_problem(path)
        if problem is not None:
            raise PathRefused(*problem)
        real_root = Path(os.path.realpath(self.root))
        current = real_root
        walked: list[str] = []
        for part in path.split("/"):
            walked.append(part)
            candidate = current / part
            if candidate.is_symlink():
                target = Path(os.path.realpath(candidate))
                if target != real_root and not target.is_relative_to(real_root):
                    raise PathRefused(
                        "PIN.PATH.SYMLINK_OUTSIDE",
                        f"{'/'.join(walked)} is a symlink to a place outside the source root;"
                        " not followed",
                    )
                current = target
            else:
                current = candidate
        if not current.is_file():
            what = "is not a regular file" if current.exists() else "does not exist"
            raise FileAbsent(f"{path} {what} under {self.root}")
        note_read(current, f"{self.root}/{path}")
        return current.read_bytes()


ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")


def is_archive(path: Path) -> bool:
    """Whether `path` names a release archive by its suffix."""
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


@dataclass(frozen=True)
class ArchiveSource:
    """A release archive read in place: a wheel or zip, or a (compressed) tarball.

    Pinned paths are looked up as archive members. A source tarball holds everything under one
    top-level folder (`vllm-0.23.0/...`); when every member shares such a folder and a pinned
    path is not itself a member, it is read below that folder, so the same manifest verifies
    against a wheel, an sdist or a checkout.
    Symbolic and hard links inside the archive are refused, never followed.
    """

    path: Path
    prefix: str = ""
    kind: str = "archive"
    _names: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    _zip: bool = field(default=False, repr=False, compare=False)

    @classmethod
    def open(cls, path: Path) -> ArchiveSource:
        if not path.is_file():
            raise UsageError(f"--source {path}: no such archive file")
        note_read(path)
        try:
            names = _member_names(path)
        except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError) as err:
            raise UsageError(f"--source {path}: not a readable archive ({err})") from None
        tops = {n.split("/", 1)[0] for n in names}
        prefix = ""
        if len(tops) == 1 and all("/" in n for n in names):
            prefix = next(iter(tops)) + "/"
        return cls(path=path, prefix=prefix, _names=frozenset(names), _zip=zipfile.is_zipfile(path))

    def describe(self) -> str:
        return str(self.path)

    def read(self, path: str) -> bytes:
        problem = path_problem(path)
        if problem is not None:
            raise PathRefused(*problem)
        if path in self._names:
            member = path
        elif self.prefix and self.prefix + path in self._names:
            member = self.prefix + path
        else:
            raise FileAbsent(f"{path} does not exist in {self.describe()}")
        if self._zip:
            with zipfile.ZipFile(self.path) as zf:
                info = zf.getinfo(member)
                if (info.external_attr >> 16) & 0o170000 == 0o120000:
                    raise PathRefused(
                        "PIN.PATH.SYMLINK", f"{path} is a symlink in {self.path}; not followed"
                    )
                return zf.read(info)
        with tarfile.open(self.path) as tf:
            entry = tf.getmember(member)
            if entry.issym() or entry.islnk():
                raise PathRefused(
                    "PIN.PATH.SYMLINK", f"{path} is a link in {self.path}; not followed"
                )
            if not entry.isfile():
                raise FileAbsent(f"{path} is not a regular file in {self.path}")
            handle = tf.extractfile(entry)
            if handle is None:
                raise FileAbsent(f"{path} cannot be read from {self.path}")
            with handle:
                return handle.read()


def _member_names(path: Path) -> list[str]:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            return [n for n in zf.namelist() if not n.endswith("/")]
    with tarfile.open(path) as tf:
        return [m.name.removeprefix("./") for m in tf.getmembers() if not m.isdir()]


def open_source(path: Path) -> DirectorySource | ArchiveSource:
    """`--source PATH`: a directory, or a release archive named by its suffix."""
    if path.is_file() and is_archive(path):
        return ArchiveSource.open(path)
    if path.is_file():
        raise UsageError(
            f"--source {path}: a file, but not an archive ({', '.join(ARCHIVE_SUFFIXES)})"
        )
    return DirectorySource.open(path)


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"})
    return env


@dataclass(frozen=True)
class GitSource:
    """A git repository (work tree, `.git` directory or bare) read with git plumbing."""

    repo: Path
    git: str
    commit: str | None = None  # resolved commit id whose tree is read
    kind: str = "git"

    @classmethod
    def open(cls, repo: Path) -> GitSource:
        git = shutil.which("git")
        if git is None:
            raise UsageError("--git-dir needs the `git` program, which is not on PATH")
        if not repo.is_dir():
            raise UsageError(f"--git-dir {repo}: not a directory")
        src = cls(repo=repo, git=git)
        if src.run("rev-parse", "--git-dir") is None:
            raise UsageError(f"--git-dir {repo}: not a git repository")
        return src

    def describe(self) -> str:
        return f"{self.repo}@{self.commit}" if self.commit else str(self.repo)

    def run(self, *args: str) -> bytes | None:
        """Output of `git -C REPO ARGS...` (argument list, no shell); None when git fails."""
        proc = subprocess.run(
            [self.git, "-C", str(self.repo), *args],
            capture_output=True,
            env=_git_env(),
            check=False,
        )
        return proc.stdout if proc.returncode == 0 else None

    def rev(self, spec: str) -> str | None:
        """The object id `spec` names, or None."""
        out = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", spec)
        return out.decode("ascii").strip() if out else None

    def tag(self, name: str) -> tuple[str, str | None] | None:
        """(object id of refs/tags/NAME, the commit it names), or None when there is no such
        tag. The two ids differ exactly when the tag is annotated."""
        ref = f"refs/tags/{name}"
        target = self.rev(ref)
        return None if target is None else (target, self.rev(f"{ref}^{{commit}}"))

    def at(self, commit: str) -> GitSource:
        return GitSource(repo=self.repo, git=self.git, commit=commit)

    def read(self, path: str) -> bytes:
        problem = path_problem(path)
        if problem is not None:
            raise PathRefused(*problem)
        if self.commit is None:
            raise FileAbsent(f"{path}: no commit resolved")
        listing = self.run("ls-tree", "-z", "--full-tree", self.commit, "--", path)
        if not listing:
            raise FileAbsent(f"{path} does not exist in commit {self.commit}")
        head, _, name = listing.rstrip(b"\0").partition(b"\t")
        mode, kind, oid = head.decode("ascii").split()
        if name.decode("utf-8", errors="replace") != path:
            raise FileAbsent(f"{path} does not exist in commit {self.commit}")
        if mode == "120000":
            raise PathRefused(
                "PIN.PATH.SYMLINK",
                f"{path} is a symlink in commit {self.commit}; pins name regular files,"
                " so it is not followed",
            )
        if kind != "blob":
            raise FileAbsent(f"{path} is a {kind}, not a file, in commit {self.commit}")
        data = self.run("cat-file", "blob", oid)
        if data is None:
            raise FileAbsent(f"{path}: blob {oid} cannot be read")
        return data
