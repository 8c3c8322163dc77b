"""`--executor ray` against a local Ray head on loopback.

A sweep, a campaign and a gate through the cluster give the local report byte for byte apart
from the `executor` field; a worker killed mid-task is retried once, and a unit whose worker
dies twice becomes that unit's error result. Each command runs in a process of its own, as a
user runs it.

The head (`ray_head`) is `ray start --head --block` on 127.0.0.1 with 2 CPUs, in a session of
its own under a private temp folder, on free ports, so it meets no other cluster on the
machine; it is stopped by signalling that session (never `ray stop`, which would stop every
cluster of this user). Without Ray installed these tests are skipped, saying so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from repo_paths import M52, REPO

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


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    """The address (127.0.0.1:PORT) of a 2-CPU Ray head; stopped after this module."""
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
    if importlib.util.find_spec("grpc") is not None:  # Ray Client's server (ray[client]) is there
        cmd += ["--ray-client-server-port", str(_free_port())]
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
        shutil.rmtree(temp, ignore_errors=True)


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


pytestmark = [pytest.mark.ray, pytest.mark.skipif(not HAVE_RAY, reason=NO_RAY)]

SWEEP = ["replay", "sweep", str(M52 / "loop7" / "sweep.generator.yaml"), "--policy"]
SWEEP += ["least-slack", "--rates", "0.2:1.4:3", "--repeats", "2"]
COMMANDS = {
    "sweep": SWEEP,
    "gate": ["gate", str(M52), "--select", "loop10"],
    "mutate": ["mutate", str(M52), "-O", "runtime", "--limit", "1", "--no-negatives"],
}


def _cbaudit(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cbaudit", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        check=False,
    )


def _report(tmp: Path, name: str, *args: str) -> tuple[str, dict[str, Any]]:
    out = tmp / f"{name}.json"
    run = _cbaudit(*args, "-f", "json", "-o", str(out), "-q")
    assert run.returncode == 0, run.stderr[-3000:]
    text = out.read_text()
    return text, json.loads(text)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_ray_report_equals_local(command: str, ray_head: str, tmp_path: Path) -> None:
    """Same command, local (2 processes) and on the cluster: byte-identical JSON once the
    cluster's `executor` field is taken out; that field says where the units ran."""
    args = COMMANDS[command]
    local_text, local = _report(tmp_path, "local", *args, "-j", "2")
    ray_text, remote = _report(
        tmp_path, "ray", *args, "--executor", "ray", "--ray-address", ray_head
    )
    provenance = remote.pop("executor")
    assert provenance["kind"] == "ray" and provenance["address"] == ray_head
    assert provenance["workers"] == 2 and len(provenance["hosts"]) == 1
    assert "executor" not in local
    assert remote == local
    # byte for byte: the local text is the cluster's text without its last field
    assert json.dumps(remote, indent=2, sort_keys=True) == json.dumps(
        local, indent=2, sort_keys=True
    )
    assert len(ray_text) > len(local_text)


def test_an_address_that_does_not_answer_exits_2(tmp_path: Path) -> None:
    """No cluster at the address: one clear line, exit 2, no report written."""
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "r.json"
    run = _cbaudit(
        *COMMANDS["gate"],
        "--executor",
        "ray",
        "--ray-address",
        f"127.0.0.1:{port}",
        "-o",
        str(out),
        timeout=60,
    )
    assert run.returncode == 2
    assert f"--ray-address 127.0.0.1:{port}: no Ray cluster answers there" in run.stderr
    assert "Traceback" not in run.stderr and not out.exists()


KILLER = textwrap.dedent(
    """
    import json, os, signal, sys
    from pathlib import Path
    from cbaudit.io.executor import RayExecutor

    marks = Path(sys.argv[2])

    def work(shared, unit):
        # runs on a Ray worker: note the attempt, then die where the test asks
        n = len(list(marks.glob(f"{unit}-*")))
        (marks / f"{unit}-{n}").write_text(str(os.getpid()))
        if unit == 1 and n == 0 or unit == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # the worker dies mid-task
        return shared + unit

    ex = RayExecutor(sys.argv[1])
    try:
        out = ex.map(work, 100, [0, 1, 2, 3], failed=lambda u, why: {"unit": u, "why": why})
    finally:
        ex.close()
    print(json.dumps(out))
    """
)


def test_a_killed_worker_is_retried_once_then_reported(ray_head: str, tmp_path: Path) -> None:
    """Unit 1's worker is killed on its first attempt: the retry gives its result. Unit 2's
    worker is killed on every attempt: after exactly one retry it is an error result, in its
    place; no unit is dropped."""
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    marks = tmp_path / "marks"
    marks.mkdir()
    run = subprocess.run(
        [sys.executable, str(script), ray_head, str(marks)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out[0] == 100 and out[1] == 101 and out[3] == 103
    assert out[2]["unit"] == 2 and "failed twice on the cluster" in out[2]["why"]
    attempts = sorted(p.name for p in marks.iterdir())
    assert attempts == ["0-0", "1-0", "1-1", "2-0", "2-1", "3-0"]
