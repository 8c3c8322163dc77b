"""Work a session fixture does once per test session, also when pytest-xdist splits the session
over several worker processes.

Without xdist a session fixture runs once anyway. Under xdist each worker would make its own
copy: the real M5.2 gate's reports, for instance, would be computed once per worker that runs a
test needing them. `run_once` has the first worker make the result in the folder the workers of
this session share (the parent of each worker's base temp), under a file lock; the others wait
for it and read the same result. A worker that fails half-way leaves no result, so the next one
tries again (and fails the same way, with its own message).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def run_once(
    request: pytest.FixtureRequest,
    factory: pytest.TempPathFactory,
    name: str,
    make: Callable[[Path], dict[str, Any]],
) -> dict[str, Any]:
    """`make(folder)`'s JSON-able result, made once per session in a fresh folder `name`."""
    if not hasattr(request.config, "workerinput"):  # not an xdist worker
        return make(factory.mktemp(name, numbered=True))
    # imported here: the GPU check's pytest (benchmarks/gpu_check.sh) loads the conftests on a
    # machine that may have pytest but not filelock, and runs without xdist
    from filelock import FileLock

    root = factory.getbasetemp().parent  # this session's, shared by its workers
    done = root / f"{name}.json"
    with FileLock(str(root / f"{name}.lock")):
        if done.is_file():
            result: dict[str, Any] = json.loads(done.read_text(encoding="utf-8"))
            return result
        folder = root / name
        shutil.rmtree(folder, ignore_errors=True)  # left by a worker that failed half-way
        folder.mkdir()
        result = make(folder)
        done.write_text(json.dumps(result), encoding="utf-8")
        return result
