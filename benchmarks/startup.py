"""Start-up and finish time of real cbaudit commands, side by side with check-jsonschema.

Issue 13's target: any real subcommand on one small input starts and finishes in at most 0.6x
the wall time of `check-jsonschema --version` on the same machine. Each round runs the peer
and then every cbaudit command once, each in a fresh process (A B C A B C ...), so load on the
machine hits all of them alike; the script prints the configuration, the minimum and median
wall time of each, and each command's ratio to the peer (min to min, and median to median).

    .venv/bin/python benchmarks/startup.py [--rounds 30] [--cbaudit PATH] [--check]

The commands do their whole real work on small real inputs: `validate-plan` of one M5.2 plan
case (load, leak scan, schema, contract, text report), `replay` of the Loop 3 three-request
workload under `fifo` (every plan contract-checked), `mutate` of the plan case with the
`plan.decision` operators, `gate` of a one-check bundle, `failure-closure` of the M5.2
registry (hashing every bound file), `formula-audit` of the formula registry, `model step-time`
of worked example 4.2 (two shipped profiles, every input printed), and `--version`.
Children run with Python's bytecode cache on, as on any machine where cbaudit was installed
with pip (one untimed warm-up run of each writes it). `--check` exits 1 when a command's
median ratio is over `--max-ratio` (0.6).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
M52 = REPO / "evidence" / "m5-2-continuous-batching"

CASE = M52 / "loop2" / "valid.case.json"


def commands(bundle: Path) -> dict[str, list[str]]:
    """Each command on one small input; `bundle` is a one-check bundle made for the gate."""
    return {
        "validate-plan (1 case)": ["validate-plan", str(CASE)],
        "replay (3 requests, fifo)": [
            "replay", str(M52 / "loop3" / "abc.workload.yaml"), "--policy", "fifo",
        ],
        "mutate (1 case, 2 mutants)": ["mutate", str(CASE), "--operators", "plan.decision"],
        "gate (1-check bundle)": ["gate", str(bundle), "-j", "1"],
        "failure-closure": ["failure-closure", str(M52 / "loop11" / "failure_closure.json")],
        "formula-audit": ["formula-audit", str(REPO / "registry" / "formula_registry.yaml")],
        "model step-time": [
            "model", "step-time", "-m", "lecture4-dense-70b-fp16", "-H", "lecture4-h100-sxm",
            "-B", "32", "--context", "2048", "--prefill", "8192",
        ],
        "--version": ["--version"],
    }  # fmt: skip


def _small_bundle(folder: Path) -> Path:
    shutil.copy(CASE, folder / "valid.case.json")
    (folder / "bundle.yaml").write_text(
        "schema_version: 1\nbundle: small\ntitle: Small\ninclude: []\nchecks:\n"
        "  - {id: one, kind: plan_case, case: valid.case.json}\n"
    )
    return folder


PEER = "check-jsonschema --version"


def _beside_python(name: str) -> str | None:
    script = Path(sys.executable).with_name(name)
    return str(script) if script.exists() else shutil.which(name)


def _run(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr.decode()}")
    return elapsed * 1000


def _version(argv: list[str], env: dict[str, str]) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    return (out.stdout or out.stderr).strip().splitlines()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="interleaved rounds (30)")
    parser.add_argument("--cbaudit", help="the cbaudit program (default: beside this python)")
    parser.add_argument("--peer", help="the check-jsonschema program (default: beside python)")
    parser.add_argument("--max-ratio", type=float, default=0.6, help="the target ratio (0.6)")
    parser.add_argument("--check", action="store_true", help="exit 1 when over the target")
    args = parser.parse_args()

    cbaudit = args.cbaudit or _beside_python("cbaudit")
    peer = args.peer or _beside_python("check-jsonschema")
    if not cbaudit or not peer:
        raise SystemExit("need both cbaudit and check-jsonschema (pip install -e '.[dev]')")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("CBAUDIT_DEBUG", None)
    scratch = tempfile.TemporaryDirectory()
    bundle = _small_bundle(Path(scratch.name))
    runs = {PEER: [peer, "--version"]} | {
        name: [cbaudit, *argv] for name, argv in commands(bundle).items()
    }
    for argv in runs.values():  # warm-up: bytecode caches, the OS file cache
        _run(argv, env)

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}")
    print(f"python: {sys.version.split()[0]}; load average: {os.getloadavg()[0]:.2f}")
    print(f"cbaudit: {cbaudit} ({_version([cbaudit, '--version'], env)})")
    print(f"peer: {peer} ({_version([peer, '--version'], env)})")
    print(f"rounds: {args.rounds}, interleaved: {' | '.join(runs)}")

    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, argv in runs.items():
            times[name].append(_run(argv, env))
    print(f"load average after: {os.getloadavg()[0]:.2f}")

    peer_min, peer_med = min(times[PEER]), statistics.median(times[PEER])
    print(f"\n{'command':28} {'min ms':>8} {'median ms':>10} {'ratio min':>10} {'ratio med':>10}")
    over = []
    for name, samples in times.items():
        low, mid = min(samples), statistics.median(samples)
        if name == PEER:
            print(f"{name:28} {low:8.1f} {mid:10.1f} {'':>10} {'':>10}")
            continue
        ratio_min, ratio_med = low / peer_min, mid / peer_med
        flag = "" if ratio_med <= args.max_ratio else "  over target"
        print(f"{name:28} {low:8.1f} {mid:10.1f} {ratio_min:10.2f} {ratio_med:10.2f}{flag}")
        if ratio_med > args.max_ratio:
            over.append(name)
    scratch.cleanup()
    verdict = "met" if not over else f"NOT met by {', '.join(over)}"
    print(f"\ntarget: every command at most {args.max_ratio}x the peer (median) -> {verdict}")
    return 1 if args.check and over else 0


if __name__ == "__main__":
    raise SystemExit(main())
