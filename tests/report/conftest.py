"""Session fixtures: the real M5.2 gate's reports, passing and tampered (see `_m52`).

Each is made once per test session, also under pytest-xdist (`run_once`): every worker that runs
a test needing one reads the same reports.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from repo_paths import REPO
from run_once import run_once

from tests.report._m52 import GateRun, run_gate_cli, tamper


@pytest.fixture(scope="session")
def m52_pass(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> GateRun:
    """The gate over the repository's own evidence/ (it passes)."""

    def make(folder: Path) -> dict[str, Any]:
        return run_gate_cli(REPO, folder).to_dict()

    return GateRun.from_dict(run_once(request, tmp_path_factory, "m52-pass", make))


@pytest.fixture(scope="session")
def m52_fail(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> GateRun:
    """The gate over a tampered copy of the project (FAIL, ERROR and NOT RUN rows)."""

    def make(folder: Path) -> dict[str, Any]:
        project = folder / "m52-tampered"
        project.mkdir()
        shutil.copy2(REPO / "pyproject.toml", project / "pyproject.toml")
        for sub in ("evidence", "pinned", "registry"):
            shutil.copytree(REPO / sub, project / sub)
        tamper(project)
        return run_gate_cli(project, folder / "out").to_dict()

    return GateRun.from_dict(run_once(request, tmp_path_factory, "m52-fail", make))
