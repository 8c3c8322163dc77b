"""Replay speed of one policy in two source trees, interleaved A B A B (before/after a change).

    .venv/bin/python benchmarks/replay_ab.py --tree-a /tmp/main --tree-b . [--policy vllm-v1]
        [--trace ../shared/traces/splitwise_code.csv] [--repeat 5] [--kv-blocks N]

Each run is a fresh subprocess with the tree's `cbaudit` first on `sys.path`; it replays the
Splitwise code trace (8,819 requests) under the roofline cost model (H100 profile), with
contract validation on, and reports the replay's own wall time (load excluded). Budgets: 2048
tokens and 256 sequences per step; `--kv-blocks N` adds a K/V pool of N blocks of 16 tokens
(vllm-v1 then admits by blocks and preempts). Prints every run, then min, median and the
ratio B / A of each, with iterations per second (the two trees may decide differently, so
compare iterations too). Wall-clock figures are printed, never written into a report.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_TRACE = HERE.parent.parent / "shared" / "traces" / "splitwise_code.csv"

CHILD = r"""
import json, sys, time
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_models import get_cost_model
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.workload import workload_from_data
from cbaudit.sim.workload_gen import import_trace_json

trace, policy, kv = sys.argv[1], sys.argv[2], int(sys.argv[3])
budgets = {"token_budget": 2048, "sequence_budget": 256}
if kv:
    budgets.update(kv_block_size=16, kv_total_blocks=kv)
wl = workload_from_data(import_trace_json(trace, budgets=budgets), trace)
cost = get_cost_model("roofline", {"hardware": "nvidia-h100-sxm"})
engine = Engine(wl, POLICIES.create(policy), cost, validation=Validation.CONTRACT)
t0 = time.perf_counter()
run = engine.run()
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": wall, "iterations": run.iterations, "stop": run.stop_reason,
                  "preemptions": run.preemptions, "findings": len(run.findings)}))
"""


def once(tree: Path, trace: Path, policy: str, kv: int) -> dict[str, float]:
    """One replay in a fresh interpreter that imports cbaudit from `tree`."""
    code = f"import sys; sys.path.insert(0, {str(tree.resolve())!r})\n" + CHILD
    out = subprocess.run(
        [sys.executable, "-c", code, str(trace), policy, str(kv)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree-a", type=Path, required=True, help="the source tree before")
    ap.add_argument("--tree-b", type=Path, required=True, help="the source tree after")
    ap.add_argument("--policy", default="vllm-v1")
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--kv-blocks", type=int, default=0)
    args = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for i in range(args.repeat):
        for label, tree in (("A", args.tree_a), ("B", args.tree_b)):
            r = once(tree, args.trace, args.policy, args.kv_blocks)
            runs[label].append(r)
            print(
                f"run {i + 1} {label}: {r['wall_s']:.3f} s, {r['iterations']} iterations,"
                f" {r['preemptions']} preemptions, stop={r['stop']}, findings={r['findings']}"
            )
    walls = {k: [r["wall_s"] for r in v] for k, v in runs.items()}
    its = {k: v[0]["iterations"] for k, v in runs.items()}
    for k in ("A", "B"):
        w = walls[k]
        print(
            f"{k}: min {min(w):.3f} s, median {statistics.median(w):.3f} s,"
            f" {its[k] / statistics.median(w):,.0f} iterations/s"
        )
    print(
        f"ratio B/A: min {min(walls['B']) / min(walls['A']):.3f},"
        f" median {statistics.median(walls['B']) / statistics.median(walls['A']):.3f}"
    )


if __name__ == "__main__":
    main()
