"""Bench test fixtures: torch imported once, quietly; one tiny CPU run shared by the module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from run_once import run_once

from cbaudit.bench.torch_env import torch_available

if torch_available():
    # Import torch here, outside any test, so its import-time NumPy warning is not turned into
    # an error by `filterwarnings = error`.
    from cbaudit.bench.torch_env import require_torch

    require_torch()


def run_runner(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the runner process on the tiny grid (small samples, no ceilings unless asked)."""
    return subprocess.run(
        [sys.executable, "-m", "cbaudit.bench.runner", "-o", str(out), "--quiet", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ},
    )


@pytest.fixture(scope="session")
def tiny_results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results file from a real CPU run of the tiny grid (one run a session, xdist too)."""
    pytest.importorskip("torch")

    def make(folder: Path) -> dict[str, Any]:
        out = folder / "tiny.json"
        proc = run_runner(out, "--grid", "tiny", "--max-samples", "5", "--device", "cpu")
        assert proc.returncode == 0, proc.stderr
        return {"path": str(out)}

    return Path(run_once(request, tmp_path_factory, "bench", make)["path"])


@pytest.fixture
def tiny_data(tiny_results: Path) -> dict[str, Any]:
    """A fresh copy of the tiny run's JSON, safe to tamper with."""
    data: dict[str, Any] = json.loads(tiny_results.read_text(encoding="utf-8"))
    return data
