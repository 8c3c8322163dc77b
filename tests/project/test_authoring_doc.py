"""docs/authoring.md: its commands, run in order in an empty folder, do what it says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO

DOC = REPO / "docs" / "authoring.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def _printed(console: str) -> list[str]:
    """The lines a console block shows as output (not the `$ command` lines)."""
    return [line for line in console.splitlines() if line and not line.startswith("$ ")]


def _contains(lines: list[str], block: list[str]) -> bool:
    """`block` appears in `lines` as consecutive lines."""
    n = len(block)
    return any(lines[i : i + n] == block for i in range(len(lines) - n + 1))


def test_the_walk_runs_and_ends_with_the_gate_it_shows(tmp_path: Path) -> None:
    """Every `sh` block runs (bash, -e); each gate output the doc shows is what the gate
    printed, line for line: the scaffold's 2 checks, then 7 with the formula binding, the
    calculator claim and its negative."""
    script = "set -euo pipefail\n" + "\n".join(_blocks("sh"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("NO_COLOR", None)
    run = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    out = run.stdout.splitlines()
    gates = [c for c in _blocks("console") if "cbaudit gate my-article" in c]
    assert len(gates) == 2
    for console in gates:
        shown = [line for line in _printed(console) if not line.startswith(("wrote", "next:"))]
        assert _contains(out, shown), shown
    assert out[-1] == "PASS: mutate: 1 passed"
    bundle = tmp_path / "walk" / "my-article"
    assert (bundle / "pins" / "formula_registry.yaml").is_file()
    assert "sha256:" in (bundle / "bundle.yaml").read_text(encoding="utf-8")
