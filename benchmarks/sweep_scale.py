"""Sweep scale-out: one `cbaudit replay sweep` with 1 worker, 2 local workers, and on Ray.

    .venv/bin/python benchmarks/sweep_scale.py [--trace ../shared/traces/splitwise_code.csv]
        [--rates 8:32:4] [--repeats 2] [--repeat 3] [--ray-address HOST:PORT | --no-ray]

The workload is the Splitwise code trace's request shapes (8,819 prompt and output lengths,
`dist: trace`) offered as a Poisson stream at each rate, replayed under `sarathi-serve` with
the roofline cost model (H100 profile), budgets of 2048 tokens and 256 sequences per step, and
the SLO TTFT 200 ms, TBT 50 ms: a capacity question as users ask it (rates x repeats cells of
8,819 requests each).

Each configuration is the command a user runs, in a fresh process, timed end to end (start-up,
and on Ray the cluster's worker start, included):

* `j1`: `--jobs 1` (one process);
* `j2`: `--jobs 2` (two local processes);
* `ray2`: `--executor ray` on a 2-CPU Ray head (started here on 127.0.0.1 and stopped after,
  unless `--ray-address` names one; skipped with `--no-ray` or without Ray).

Configurations run interleaved (j1 j2 ray2 j1 j2 ray2 ...). Prints every run, then per
configuration min and median wall seconds and the speed-up median(j1) / median(config); it
also checks that every configuration's report is identical to j1's apart from the `executor`
field. Wall-clock figures are printed, never written into a report.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_TRACE = HERE.parent.parent / "shared" / "traces" / "splitwise_code.csv"

SPEC = """\
schema_version: 1
kind: workload-generator
workload_id: splitwise-code-poisson
seed: 11
count: {count}
clock: {{unit: ms}}
arrivals: {{process: poisson, rate_per_s: 1.0}}
prompt_tokens: {{dist: trace, path: {trace}, column: num_prefill_tokens}}
output_tokens: {{dist: trace, path: {trace}, column: num_decode_tokens}}
max_output_tokens: {{equal_to_realized: true}}
slo: {{ttft_ms: 200, tbt_ms: 50}}
policy: {{policy_id: sarathi-serve, policy_version: "1"}}
budgets: {{token_budget: 2048, sequence_budget: 256}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_head(temp: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A 2-CPU Ray head on loopback in a session of its own; returns it and its address."""
    port = _free_port()
    ray = Path(sys.executable).with_name("ray")
    cmd = [str(ray), "start", "--head", "--block", "--node-ip-address", "127.0.0.1"]
    cmd += ["--port", str(port), "--num-cpus", "2", "--include-dashboard=false"]
    cmd += ["--disable-usage-stats", "--temp-dir", str(temp)]
    flags = ["--ray-client-server-port"] if importlib.util.find_spec("grpc") else []
    for flag in (
        *flags,
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--runtime-env-agent-port",
        "--metrics-export-port",
        "--node-manager-port",
        "--object-manager-port",
    ):
        cmd += [flag, str(_free_port())]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the Ray head did not start") from None
            time.sleep(0.5)
    return proc, f"127.0.0.1:{port}"


def stop_head(proc: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def run_once(args: list[str], out: Path) -> tuple[float, dict[str, Any]]:
    """One sweep in a fresh process: (wall seconds, its JSON report)."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cbaudit", *args, "-f", "json", "-o", str(out), "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"sweep failed ({done.returncode}): {done.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(out.read_text())
    return wall, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--count", type=int, default=8819, help="requests per cell")
    parser.add_argument("--rates", default="8:32:4", help="offered rates A:B:N (requests/s)")
    parser.add_argument("--repeats", type=int, default=2, help="seeds per rate")
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration")
    parser.add_argument("--ray-address", default=None)
    parser.add_argument("--no-ray", action="store_true")
    opts = parser.parse_args()
    if not opts.trace.is_file():
        raise SystemExit(f"no trace at {opts.trace} (pass --trace)")

    temp = Path(tempfile.mkdtemp(prefix="cbscale"))
    spec = temp / "gen.yaml"
    spec.write_text(SPEC.format(count=opts.count, trace=json.dumps(str(opts.trace.resolve()))))
    sweep = ["replay", "sweep", str(spec), "--policy", "sarathi-serve", "--rates", opts.rates]
    sweep += ["--repeats", str(opts.repeats), "--cost-model", "roofline"]
    sweep += ["--cost-option", "hardware=nvidia-h100-sxm"]
    configs: dict[str, list[str]] = {"j1": ["-j", "1"], "j2": ["-j", "2"]}

    head = None
    use_ray = not opts.no_ray
    if use_ray:
        try:
            import ray  # noqa: F401
        except ImportError:
            print("ray is not installed: the ray2 configuration is skipped")
            use_ray = False
    if use_ray:
        address = opts.ray_address
        if address is None:
            head, address = start_head(temp / "ray")
        configs["ray2"] = ["--executor", "ray", "--ray-address", address]

    cells = int(opts.rates.split(":")[2]) * opts.repeats
    print(f"sweep: {cells} cells of {opts.count} requests (sarathi-serve, roofline H100)")
    times: dict[str, list[float]] = {name: [] for name in configs}
    reports: dict[str, dict[str, Any]] = {}
    try:
        for r in range(opts.repeat):
            for name, extra in configs.items():
                wall, report = run_once([*sweep, *extra], temp / f"{name}.json")
                times[name].append(wall)
                provenance = report.pop("executor", None)
                reports.setdefault(name, report)
                where = f"  {provenance}" if provenance and r == 0 else ""
                print(f"run {r + 1} {name:5s} {wall:8.2f} s{where}")
    finally:
        if head is not None:
            stop_head(head)
        shutil.rmtree(temp, ignore_errors=True)
    base = statistics.median(times["j1"])
    print(f"{'config':6s} {'min s':>8s} {'median s':>9s} {'speed-up':>9s}")
    for name, walls in times.items():
        med = statistics.median(walls)
        print(f"{name:6s} {min(walls):8.2f} {med:9.2f} {base / med:8.2f}x")
    same = all(rep == reports["j1"] for rep in reports.values())
    print(f"reports identical to j1 apart from `executor`: {same}")
    cap = reports["j1"]["summary"]["goodput_capacity"]
    print(f"goodput capacity estimate: {cap} requests/s")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
