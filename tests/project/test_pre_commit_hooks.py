"""The hooks in .pre-commit-hooks.yaml work as a user runs them: `pre-commit try-repo` installs
cbaudit from this repository into its own environment and runs both hooks in a scratch
repository that holds a copy of evidence/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from repo_paths import EVIDENCE, REPO

HOOKS = REPO / ".pre-commit-hooks.yaml"


def test_validate_plan_hook_leaves_negative_cases_to_the_gate() -> None:
    """The validate-plan hook excludes negative/ cases, which are meant to fail."""
    import re

    hook = next(h for h in yaml.safe_load(HOOKS.read_text()) if h["id"] == "cbaudit-validate-plan")
    cases = sorted(p.relative_to(REPO).as_posix() for p in EVIDENCE.rglob("*.case.json"))
    picked = [c for c in cases if re.search(hook["files"], c) and not re.search(hook["exclude"], c)]
    assert picked and all("/negative/" not in c for c in picked)
    assert any("/negative/" in c for c in cases)


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=cbaudit", "-c", "user.email=cbaudit@invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_hooks_pass_with_pre_commit_try_repo(tmp_path: Path) -> None:
    """Both hooks pass on a fresh repository holding a copy of evidence/ (no pyproject.toml),
    and the validate-plan hook really checks files (it is not skipped)."""
    scratch = tmp_path / "scratch"
    shutil.copytree(EVIDENCE, scratch / "evidence")
    _git("init", "-q", ".", cwd=scratch)
    _git("add", "-A", cwd=scratch)
    _git("commit", "-q", "-m", "evidence", cwd=scratch)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CBAUDIT_", "GITHUB_"))}
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")  # a fresh install of cbaudit
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "--all-files"],
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    lines = [line for line in out.splitlines() if line.startswith("cbaudit ")]
    assert len(lines) == 2 and all(line.endswith("Passed") for line in lines), out
