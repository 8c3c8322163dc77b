"""Shared fixtures: run the CLI in-process and capture what it prints."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from m52_in_place import InPlaceGate, run_hooked_gate
from repo_paths import EVIDENCE, REPO, SHARED
from run_once import run_once

# `make pytest-compiled` runs the engine, policy and differential tests against the wheel a
# user's `pip install .` builds, unpacked in CBAUDIT_TEST_BUILD (hatch_build.py compiles the
# replay's hot modules there). The package is imported from there before anything else
# imports it (the modules imported above do not), so every `cbaudit` module the tests reach
# is the build's; a folder that holds no compiled build is a usage error, never a silent run
# of the source tree.
_BUILD = os.environ.get("CBAUDIT_TEST_BUILD")
if _BUILD:
    sys.path.insert(0, os.path.abspath(_BUILD))
    import importlib.machinery

    import cbaudit
    import cbaudit.sim.engine

    _where = os.path.dirname(os.path.abspath(cbaudit.__file__))
    if _where != os.path.join(
        os.path.abspath(_BUILD), "cbaudit"
    ) or not cbaudit.sim.engine.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        raise pytest.UsageError(
            f"CBAUDIT_TEST_BUILD={_BUILD}: cbaudit was imported from {_where} and its engine"
            f" from {cbaudit.sim.engine.__file__}, not a compiled build there"
        )


__all__ = ["EVIDENCE", "REPO", "SHARED", "CliRun"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `slow` run first, the rest in their usual order (a stable sort).

    Under pytest-xdist (`make pytest`) each file goes to one worker, in this order: the long
    end-to-end files start at once and the many short ones fill in around them, instead of a
    long file starting last while the other worker idles.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_report_header() -> str | None:
    """Say which build of cbaudit the tests run against when it is not the source tree."""
    if not _BUILD:
        return None
    import cbaudit.sim.engine

    return f"cbaudit: the compiled build in {_BUILD} (engine: {cbaudit.sim.engine.__file__})"


@dataclass(frozen=True)
class CliRun:
    """Exit code and captured streams of one CLI invocation."""

    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliRun]:
    """Run `cbaudit ARGS` in-process; returns CliRun(code, out, err)."""
    from cbaudit.cli.app import run

    def _run(*args: str | os.PathLike[str]) -> CliRun:
        capsys.readouterr()
        code = run([str(a) for a in args])
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return _run


@pytest.fixture
def cli_proc() -> Callable[..., CliRun]:
    """Run `cbaudit ARGS` in a subprocess (real exit codes, real stderr)."""

    def _run(*args: str | os.PathLike[str], env: dict[str, str] | None = None) -> CliRun:
        proc = subprocess.run(
            [sys.executable, "-m", "cbaudit", *[str(a) for a in args]],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            check=False,
        )
        return CliRun(proc.returncode, proc.stdout, proc.stderr)

    return _run


@pytest.fixture(scope="session")
def m52_in_place(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> InPlaceGate:
    """The whole gate over the repository's evidence/ (see `m52_in_place`), once a session."""
    files = run_once(request, tmp_path_factory, "m52-in-place", run_hooked_gate)
    return InPlaceGate(Path(files["report_file"]), Path(files["opened_file"]))
