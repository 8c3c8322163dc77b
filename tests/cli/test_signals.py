"""SIGINT and SIGTERM stop a command cleanly: a message, exit 130 or 143, no process left
behind and no half-written output file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_paths import M52

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").is_file(), reason="reads the process table from /proc"
)


def _group(pgid: int) -> dict[int, str]:
    """Live (non-zombie) processes of process group `pgid`: pid -> state."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended while we looked
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        state, group = fields[0], int(fields[2])
        if group == pgid and state != "Z":
            found[int(entry.name)] = state
    return found


def _wait_for(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _start(args: list[str], out: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CBAUDIT_")}
    env.pop("GITHUB_ACTIONS", None)
    return subprocess.Popen(
        [sys.executable, "-m", "cbaudit", *args],
        cwd=out,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: workers are found by group id
    )


def _stop_and_check(proc: subprocess.Popen[str], signum: int, whole_group: bool) -> str:
    """Wait for the workers, send `signum`, return stderr once nothing of the group is left."""
    assert _wait_for(lambda: len(_group(proc.pid)) >= 3, 60), "workers never started"
    time.sleep(0.3)  # let the fresh workers run their initializer (their own signal handling)
    if whole_group:  # as a terminal's Ctrl-C or a CI runner's cancel does
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    try:
        # An orphaned worker keeps the output pipes open, so this times out.
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        left = _group(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)  # never leave them running
        proc.communicate()
        pytest.fail(f"still running 30 s after the signal: {left}")
    # The command reaps its workers before it exits, so the group is empty at once (a short
    # grace covers the kernel's bookkeeping).
    if not _wait_for(lambda: not _group(proc.pid), 0.5):
        left = _group(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"left behind: {left}")
    assert out == ""
    return err


CASES = [
    (signal.SIGINT, False, 130, "cbaudit: interrupted"),
    (signal.SIGINT, True, 130, "cbaudit: interrupted"),
    (signal.SIGTERM, False, 143, "cbaudit: terminated"),
    (signal.SIGTERM, True, 143, "cbaudit: terminated"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "whole_group", "code", "message"),
    CASES,
    ids=["sigint", "sigint-group", "sigterm", "sigterm-group"],
)
def test_gate_stops_with_its_workers(
    tmp_path: Path, signum: int, whole_group: bool, code: int, message: str
) -> None:
    """`cbaudit gate -j 2` stopped mid-run: message, exit code, no worker and no output left."""
    proc = _start(
        ["gate", str(M52), "-j", "2", "--output", "report.json", "--html", "report.html"], tmp_path
    )
    err = _stop_and_check(proc, signum, whole_group)
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1] == message, err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # neither a report nor a temporary file


@pytest.mark.slow
def test_mutate_stops_with_its_workers(tmp_path: Path) -> None:
    """`cbaudit mutate -j 2` on SIGTERM: exit 143, no worker left, no Stryker file."""
    proc = _start(
        ["mutate", str(M52), "-j", "2", "--format", "stryker", "--output", "s.json"], tmp_path
    )
    err = _stop_and_check(proc, signal.SIGTERM, False)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "cbaudit: terminated", err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("signum", "code", "message"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_a_signal_inside_a_command_is_reported_not_swallowed(
    monkeypatch: pytest.MonkeyPatch, cli, signum: int, code: int, message: str
) -> None:  # type: ignore[no-untyped-def]
    """typer turns KeyboardInterrupt into a silent exit 130; a stop signal instead reaches the
    top-level handler, which says so, and the previous handlers are back afterwards."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def stopped(*_args: object, **_kwargs: object) -> None:
        os.kill(os.getpid(), signum)
        time.sleep(5)
        raise AssertionError("the signal did not stop the command")

    monkeypatch.setattr("cbaudit.gate.runner.run_gate", stopped)
    run = cli("gate", M52)
    assert (run.code, run.err) == (code, f"cbaudit: {message}\n")
    assert {s: signal.getsignal(s) for s in before} == before
