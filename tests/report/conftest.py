"""Session fixtures: the real M5.2 gate's reports, passing and tampered (see `_m52`)."""

from __future__ import annotations

import shutil

import pytest
from repo_paths import REPO

from tests.report._m52 import GateRun, run_gate_cli, tamper


@pytest.fixture(scope="session")
def m52_pass(tmp_path_factory: pytest.TempPathFactory) -> GateRun:
    """The gate over the repository's own evidence/ (it passes)."""
    return run_gate_cli(REPO, tmp_path_factory.mktemp("m52-pass"))


@pytest.fixture(scope="session")
def m52_fail(tmp_path_factory: pytest.TempPathFactory) -> GateRun:
    """The gate over a tampered copy of the project (FAIL, ERROR and NOT RUN rows)."""
    project = tmp_path_factory.mktemp("m52-tampered")
    shutil.copy2(REPO / "pyproject.toml", project / "pyproject.toml")
    for folder in ("evidence", "pinned", "registry"):
        shutil.copytree(REPO / folder, project / folder)
    tamper(project)
    return run_gate_cli(project, tmp_path_factory.mktemp("m52-fail-out"))
