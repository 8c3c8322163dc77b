"""SIGINT and SIGTERM end a command the same way: cleanly, with a message and a known code.

While a command runs, both signals raise `Interrupted` in the main thread. It is not a
`KeyboardInterrupt`, which typer catches and turns into a silent exit 130 before cbaudit's own
handler could see it. Unwinding runs every `finally`: worker pools stop and reap their
processes (`cbaudit.io.workers`), temporary output files are removed (`atomic_write`), and the
top-level handler prints `cbaudit: interrupted` (exit 130) or `cbaudit: terminated` (exit 143).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class Interrupted(BaseException):
    """A stop signal arrived; a BaseException so no `except Exception` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """The shell's convention: 128 + the signal number (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + self.signum

    @property
    def message(self) -> str:
        return _WORDS.get(signal.Signals(self.signum), f"stopped by signal {self.signum}")


def _raise(signum: int, _frame: FrameType | None) -> None:
    # The first signal stops the command; more of them while it unwinds (a second Ctrl-C, a
    # SIGTERM to the whole group) are ignored so the clean-up is not cut short. The clean-up
    # itself is bounded (workers are killed after a grace period).
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise `Interrupted` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig in SIGNALS:
        signal.signal(sig, _raise)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:  # None: installed outside Python; nothing to restore
                signal.signal(sig, handler)


def run_forwarding(argv: list[str]) -> int:
    """Run a child process to the end; a stop signal is passed on to it and awaited.

    For children that stop gracefully on their own (the bench runner finishes the point in
    hand and writes its results): the child exits, then `Interrupted` goes on unwinding.
    """
    import subprocess

    with subprocess.Popen(argv) as proc:
        try:
            return proc.wait()
        except Interrupted as stop:
            proc.send_signal(stop.signum)
            proc.wait()
            raise
