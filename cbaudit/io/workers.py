"""Local worker processes that stop with their parent.

`worker_pool` is a `ProcessPoolExecutor` for the gate, mutation campaigns and rate sweeps with
two guarantees the plain executor lacks:

* a worker ignores SIGINT (a terminal's Ctrl-C reaches the whole process group; the parent
  decides what happens) and dies on SIGTERM (a forked worker would otherwise inherit the
  parent's handler);
* when the block is left by an exception (an interrupt, a crash), the workers are terminated
  (then killed after a grace period) and reaped instead of being waited for, so no process
  outlives the command.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when a pool starts: a one-process run never pays for it
    from concurrent.futures import ProcessPoolExecutor

#: Seconds terminated workers get to exit before they are killed.
GRACE_S = 2.0


def _init_worker(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if initializer is not None:
        initializer(*initargs)


@contextmanager
def worker_pool(
    jobs: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> Iterator[ProcessPoolExecutor]:
    """A process pool of `jobs` workers; see the module docstring."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        max_workers=jobs, initializer=_init_worker, initargs=(initializer, initargs)
    )
    try:
        yield pool
    except BaseException:
        stop_workers(pool)
        raise
    pool.shutdown(wait=True)


def stop_workers(pool: ProcessPoolExecutor, grace_s: float = GRACE_S) -> None:
    """Cancel what has not started, terminate the workers, kill stragglers, reap them all."""
    # The executor keeps its processes in a private mapping (Python 3.14 adds
    # terminate_workers()); it is the only handle on them.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    # ... and its management thread (`shutdown` drops the pool's reference to it)
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(grace_s)
        if proc.is_alive():
            proc.kill()
            proc.join(grace_s)
    # The management thread sees its workers gone and closes its wake-up pipe. Left running,
    # it races the interpreter's exit hook, which writes to that pipe to wake it: on CPython
    # 3.11 the hook can find the pipe open, then write after the thread closed it
    # (`OSError: [Errno 9] Bad file descriptor`, printed after cbaudit's own message). Waiting
    # for the thread here leaves the hook a closed pipe, which it skips.
    if manager is not None and manager.is_alive():
        manager.join(grace_s)
