"""Where pinned bytes come from: a directory (checkout or unpacked release) or a git repository.

Both readers refuse paths that are absolute, escape the root, or pass through a symlink that
leaves it; they never follow such a path. The git reader returns blob bytes exactly as stored,
so no checkout filter (line endings, smudge) can change what is hashed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

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
        """`directory` or `git`."""
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
        return current.read_bytes()


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
