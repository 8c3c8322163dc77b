"""What a small command loads: the guard of its start-up time (benchmarks/startup.py times it).

Wall-clock tests would be flaky; which modules a run imports is exact. A command must not
load what its work does not need: the other commands, the simulator, PyYAML for a JSON
input, rich for plain output, pydantic (typer's coercion), jsonschema for a valid document.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import M52, REPO

CASE = M52 / "loop2" / "valid.case.json"

HEAVY = (
    "pydantic",
    "jsonschema",
    "jsonschema_rs",
    "yaml",
    "rich",
    "cbaudit.sim",
    "cbaudit.gate",
    "cbaudit.mutate",
    "cbaudit.oracles",
    "cbaudit.policies",
    "cbaudit.cli.cmd_replay",
    "cbaudit.cli.cmd_gate",
)


def _loaded(*args: str) -> tuple[int, set[str]]:
    code = (
        "import sys; from cbaudit.cli.app import run; rc = run(sys.argv[1:]);"
        " print(rc); print(' '.join(sorted(sys.modules)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
    )
    lines = proc.stdout.strip().splitlines()
    return int(lines[-2]), set(lines[-1].split())


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY))


def test_validate_plan_of_one_case_loads_only_what_it_needs() -> None:
    """One JSON case: the contract and the loader, nothing heavy."""
    code, modules = _loaded("validate-plan", str(CASE))
    assert code == 0
    assert _heavy(modules) == []
    assert "cbaudit.contract.validator" in modules


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_other_formats_load_only_their_reporter(fmt: str) -> None:
    """`--format json|sarif` loads that reporter only (no HTML, Markdown or rich)."""
    code, modules = _loaded("validate-plan", str(CASE), "--format", fmt)
    assert code == 0
    assert not {"cbaudit.report.publish", "cbaudit.report.junit", "rich"} & modules


# What `replay run` of a plain CSV trace under the roofline model (shipped profiles) must not
# load: PyYAML (the shipped profiles come from their parsed index), the state/plan/result
# records (the live contract checks the engine's own objects), the table cost model, the engine
# config reader (no --engine-config), the workload generators (a plain trace takes its default
# policy and budgets from the trace reader), and the other commands' code.
REPLAY_NEVER = (
    "yaml",
    "cbaudit.io.yaml_strict",
    "cbaudit.contract.records",
    "cbaudit.contract.validator",
    "cbaudit.sim.cost_table",
    "cbaudit.sim.engine_config",
    "cbaudit.sim.slo",
    "cbaudit.sim.workload_gen",
    "pydantic",
    "jsonschema",
    "jsonschema_rs",
    "rich",
    "cbaudit.gate",
    "cbaudit.mutate",
    "cbaudit.oracles",
    "cbaudit.cli.cmd_gate",
    "cbaudit.report.html",
)


def test_replay_of_a_plain_trace_loads_no_yaml_and_no_iteration_records(tmp_path: Path) -> None:
    trace = REPO / "tests" / "sim" / "data" / "azure_small.csv"
    out = tmp_path / "r.json"
    code, modules = _loaded(
        "replay", "run", str(trace), "-p", "vllm-v1", "--cost-model", "roofline",
        "--cost-option", "hardware=nvidia-h100-sxm", "--cost-option", "model=llama-3-8b-gqa-fp16",
        "-q", "-f", "json", "-o", str(out),
    )  # fmt: skip
    assert code == 0 and out.is_file()
    assert {"cbaudit.sim.engine", "cbaudit.sim.cost_models", "cbaudit.sim.profiles"} <= modules
    assert sorted(m for m in modules if m.startswith(REPLAY_NEVER)) == []


def test_the_collector_is_paused_for_start_up_only(tmp_path: Path) -> None:
    """`main` pauses the cyclic collector while typer and the command load; the command's own
    work runs with it on, and the start-up objects frozen out of its walks."""
    trace = REPO / "tests" / "sim" / "data" / "azure_small.csv"
    code = (
        "import gc, sys; import cbaudit.cli.common as common; real = common.emit\n"
        "def emit(*a, **k):\n"
        "    print('command', gc.isenabled(), gc.get_freeze_count() > 1000); return real(*a, **k)\n"
        "common.emit = emit\n"
        "from cbaudit.cli.main import main; main(sys.argv[1:])\n"
    )
    args = ["replay", "run", str(trace), "-p", "fifo", "-q", "-o", str(tmp_path / "r.txt")]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["command", "True", "True"]


def test_run_in_process_leaves_the_collector_alone() -> None:
    """Only the console entry pauses it: `run` called in a process (tests, embedding) does not."""
    import gc

    from cbaudit.cli.app import run

    frozen = gc.get_freeze_count()
    assert run(["validate-plan", str(CASE), "-q"]) == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen
