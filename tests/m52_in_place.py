"""The whole gate over the repository's evidence/, as `make gate` runs it, made once per session.

`tests/gate/test_inputs.py` needs every file such a run opened for reading (an audit hook,
`sys.addaudithook`, notes each; worker processes are forked from it and keep the hook);
`tests/project/test_self_contained_bundle.py` needs its report as the in-place result a copied
bundle must reproduce. Both read the same run: the `m52_in_place` fixture in tests/conftest.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repo_paths import EVIDENCE, REPO, SHARED

ARTICLE = SHARED / "seeds" / "000_723c321e7155665c.txt"

HOOKED_GATE = """
import os, sys
log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)

def hook(event, args):
    if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    mode, flags = args[1], args[2]
    reading = ("r" in mode and "+" not in mode) if mode else (flags & 3) == os.O_RDONLY
    if reading:
        os.write(log, os.fsencode(os.path.realpath(os.fspath(args[0]))) + b"\\n")

sys.addaudithook(hook)
from cbaudit.cli.app import run
sys.exit(run(["gate", sys.argv[2], "-q", "-j", "2", "-f", "json", "-o", sys.argv[3]]))
"""


def gate_env() -> dict[str, str]:
    """The caller's environment without CBAUDIT_* settings or GITHUB_ACTIONS, with the article
    when the shared folder has it (as `make gate` does)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CBAUDIT_")}
    env.pop("GITHUB_ACTIONS", None)
    if ARTICLE.is_file():
        env["CBAUDIT_M52_ARTICLE"] = str(ARTICLE)
    return env


@dataclass(frozen=True)
class InPlaceGate:
    """The gate's JSON report over evidence/ and every file the run opened for reading."""

    report_file: Path
    opened_file: Path

    def report(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.report_file.read_text(encoding="utf-8"))
        return data

    def opened(self) -> set[Path]:
        return {Path(line) for line in self.opened_file.read_text().splitlines()}


def run_hooked_gate(folder: Path) -> dict[str, str]:
    """Run the gate over evidence/ from the repository, hooked; where its two files are."""
    log, out = folder / "opened.txt", folder / "report.json"
    proc = subprocess.run(
        [sys.executable, "-c", HOOKED_GATE, str(log), str(EVIDENCE), str(out)],
        cwd=REPO,
        env=gate_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {"report_file": str(out), "opened_file": str(log)}
