"""`worker_pool` left by an exception: workers reaped and the pool's management thread ended
before the block's exception goes on (else the interpreter's exit hook races that thread on
its wake-up pipe and prints `OSError: [Errno 9] Bad file descriptor` after cbaudit's message).
"""

from __future__ import annotations

import threading
import time

import pytest

from cbaudit.io.workers import worker_pool


class _Stop(Exception):
    pass


def _nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _managers() -> list[threading.Thread]:
    return [
        t
        for t in threading.enumerate()
        if t.is_alive() and "ExecutorManagerThread" in type(t).__name__
    ]


def test_stopped_pool_leaves_no_worker_and_no_manager_thread() -> None:
    before = set(_managers())  # (another test's pool may still be winding down)
    pids: list[int] = []
    with pytest.raises(_Stop), worker_pool(2) as pool:
        futures = [pool.submit(_nap, 30.0) for _ in range(4)]
        deadline = time.monotonic() + 30
        while len(pool._processes) < 2 and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.02)
        procs = list(pool._processes.values())  # type: ignore[attr-defined]
        pids = [p.pid for p in procs]
        raise _Stop
    assert len(pids) == 2
    assert all(not p.is_alive() for p in procs)
    assert all(f.done() for f in futures)  # cancelled, or broken by the terminated workers
    assert set(_managers()) <= before  # ended before the exception left the block
