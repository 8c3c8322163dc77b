"""A local Ray head on loopback (2 CPUs) for the `ray` tests, started once per session.

`ray start --head --block` runs in a session of its own under a private temp folder, on free
ports, so it meets no other cluster on the machine; the fixture stops it by signalling that
session (never `ray stop`, which would stop every cluster of this user).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HAVE_RAY = importlib.util.find_spec("ray") is not None
NO_RAY = "ray is not installed (pip install 'cbaudit[ray]'; `make test` installs it)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def ray_head() -> Iterator[str]:
    """The address (127.0.0.1:PORT) of a 2-CPU Ray head; stopped after the session."""
    if not HAVE_RAY:
        pytest.skip(NO_RAY)
    temp = tempfile.mkdtemp(prefix="cbray")  # short: Ray's socket paths must stay short
    port = _free_port()
    ray = Path(sys.executable).with_name("ray")
    cmd = [
        str(ray),
        "start",
        "--head",
        "--block",
        "--node-ip-address",
        "127.0.0.1",
        "--port",
        str(port),
        "--num-cpus",
        "2",
        "--include-dashboard=false",
        "--disable-usage-stats",
        "--temp-dir",
        temp,
        "--ray-client-server-port",
        str(_free_port()),
        "--dashboard-agent-listen-port",
        str(_free_port()),
        "--dashboard-agent-grpc-port",
        str(_free_port()),
        "--runtime-env-agent-port",
        str(_free_port()),
        "--metrics-export-port",
        str(_free_port()),
        "--node-manager-port",
        str(_free_port()),
        "--object-manager-port",
        str(_free_port()),
    ]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    log = open(Path(temp) / "head.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 90
        while not _answers(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                text = (Path(temp) / "head.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"the Ray head did not start:\n{text}")
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc)
        log.close()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the head's session (it tears its processes down), then SIGKILL what is left."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=3)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
