"""Small source trees and git repositories written by the pin tests (no vLLM source)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from cbaudit.pins.create import MarkerSpec, create_manifest
from cbaudit.pins.sources import DirectorySource

TOY = (
    '"""A toy scheduler for pin tests."""\n'
    "\n"
    "\n"
    "class Scheduler:\n"
    "    def __init__(self) -> None:\n"
    "        self.running: list[int] = []\n"
    "\n"
    "    def schedule(self) -> int:\n"
    "        budget = 8\n"
    "        self.running.append(budget)\n"
    "        return budget\n"
    "\n"
    "    def drain(self) -> None:\n"
    "        self.running.append(budget)\n"
)
CONFIG = "POLICY = 'fcfs'\nMAX_SEQS = 4\n"
SCHED = "pkg/sched.py"
CONF = "pkg/config.py"
# (path, line, id): class line, a method body line, a line whose text occurs twice.
MARKERS = [(SCHED, 4, "cls"), (SCHED, 9, "budget"), (SCHED, 10, "append"), (CONF, 1, None)]


def write_tree(root: Path, sched: str = TOY, config: str = CONFIG) -> Path:
    """Write the toy tree under `root` (bytes exactly as given) and return `root`."""
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / SCHED).write_bytes(sched.encode())
    (root / CONF).write_bytes(config.encode())
    return root


def manifest_data(root: Path, **meta: str | None) -> dict[str, object]:
    """A pin manifest (as data) for the toy tree under `root`."""
    specs = [MarkerSpec(p, n, i) for p, n, i in MARKERS]
    made = create_manifest(
        DirectorySource.open(root),
        [SCHED, CONF],
        specs,
        runtime="toy",
        version="1.0",
        tag=meta.get("tag"),
        commit=meta.get("commit"),
        tag_object=meta.get("tag_object"),
    )
    return made.to_data()


def write_manifest(path: Path, data: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity and no global config; return stdout."""
    proc = subprocess.run(
        [
            "git",
            "-c",
            "user.name=cbaudit tests",
            "-c",
            "user.email=tests@cbaudit.invalid",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "core.autocrlf=false",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "tag.gpgsign=false",
            "-C",
            str(repo),
            *args,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
    )
    return proc.stdout.strip()


def make_repo(root: Path) -> tuple[Path, str]:
    """A git repository holding the toy tree in one commit; returns (repo, commit id)."""
    write_tree(root)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "toy")
    return root, git(root, "rev-parse", "HEAD")
