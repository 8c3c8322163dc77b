"""Progress: the core reports through a callback (it never prints); the CLI draws a bar on a
terminal's stderr, and nothing when stderr is not a terminal or with -q."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gate_test_kinds import ALL
from repo_paths import EVIDENCE, M52

from cbaudit.gate.runner import run_gate
from cbaudit.io import load_document
from cbaudit.kinds import TARGETS
from cbaudit.mutate.campaign import FixtureInput, run_campaign
from cbaudit.mutate.registry import OPERATORS
from cbaudit.mutate.targets import detect

Calls = list[tuple[int, int, str]]


def _recorder() -> tuple[Calls, object]:
    calls: Calls = []

    def progress(done: int, total: int, detail: str) -> None:
        calls.append((done, total, detail))

    return calls, progress


def _assert_counts_up(calls: Calls) -> None:
    assert calls, "no progress was reported"
    done = [c[0] for c in calls]
    assert done == sorted(done) and done[-1] == calls[-1][1]
    assert len({c[1] for c in calls}) == 1


@pytest.mark.parametrize("jobs", [1, 2])
def test_gate_reports_every_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """run_gate calls progress as checks finish, serially and in processes, up to the total."""
    monkeypatch.setattr("cbaudit.kinds.KINDS", ALL)
    checks = "".join(f"  - {{id: c{i}, kind: echo}}\n" for i in range(12))
    (tmp_path / "bundle.yaml").write_text(
        f"schema_version: 1\nbundle: demo\ntitle: Demo\nchecks:\n{checks}"
    )
    calls, progress = _recorder()
    report = run_gate([tmp_path], jobs=jobs, progress=progress)  # type: ignore[arg-type]
    _assert_counts_up(calls)
    assert calls[-1][:2] == (12, 12) and len(report.results) == 12
    assert {c[2] for c in calls} <= {f"c{i}" for i in range(12)}


@pytest.mark.parametrize("jobs", [1, 2])
def test_mutation_campaign_reports_cells_and_mutants(jobs: int) -> None:
    """run_campaign reports each finished cell and the mutants judged so far."""
    doc = load_document(M52 / "loop2" / "valid.case.json")
    target = detect(doc.data, TARGETS)
    assert target is not None
    fixture = FixtureInput("valid.case.json", doc.data, target.name)
    calls, progress = _recorder()
    result = run_campaign(
        [fixture],
        OPERATORS,
        targets=TARGETS,
        limit=2,
        jobs=jobs,
        progress=progress,  # type: ignore[arg-type]
    )  # type: ignore[arg-type]
    _assert_counts_up(calls)
    assert calls[-1][2] == f"{len(result.mutants)} mutants judged"


@pytest.mark.parametrize("jobs", [1, 2])
def test_sweep_reports_every_cell(jobs: int) -> None:
    """run_sweep reports each (rate, repeat) cell with its rate."""
    import yaml

    from cbaudit.sim import sweep

    spec_path = EVIDENCE / "m5-2-continuous-batching" / "loop7" / "sweep.generator.yaml"
    spec = {**yaml.safe_load(spec_path.read_text()), "count": 20}
    config = sweep.SweepConfig(
        spec=spec, spec_file="s.yaml", base_dir=str(spec_path.parent), policy="least-slack"
    )
    calls, progress = _recorder()
    sweep.run_sweep(config, [0.2, 0.6], repeats=2, attainment=0.9, jobs=jobs, progress=progress)  # type: ignore[arg-type]
    _assert_counts_up(calls)
    assert calls[-1][1] == 4 and all(c[2].startswith("rate ") for c in calls)


def _gate_on_a_terminal(*extra: str) -> tuple[int, bytes, str]:
    """`cbaudit gate -k loop7 -j 1` (30 checks, seconds: past the bar's half-second
    delay) with stderr on a pseudo-terminal: (code, stderr, stdout)."""
    import pty

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CBAUDIT_")}
    env.update(COLUMNS="120", TERM="xterm")
    env.pop("NO_COLOR", None)
    with subprocess.Popen(
        [sys.executable, "-m", "cbaudit", "gate", str(M52), "-k", "loop7", "-j", "1", *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
    ) as proc:
        os.close(slave)
        chunks: list[bytes] = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not data:
                break
            chunks.append(data)
        os.close(master)
        assert proc.stdout is not None
        out = proc.stdout.read().decode()
    return proc.returncode, b"".join(chunks), out


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_gate_draws_a_bar_on_a_terminal_and_none_with_q() -> None:
    """On a terminal the gate shows `N/M checks` on stderr; with -q nothing; the report is
    unchanged on stdout either way."""
    code, err, out = _gate_on_a_terminal()
    assert code == 0
    assert b"/30" in err and b"checks" in err, err[-400:]
    assert out.endswith("PASS: gate: 30 passed\n")
    code, err, out = _gate_on_a_terminal("-q")
    assert code == 0 and err == b""
    assert out.endswith("PASS: gate: 30 passed\n")


def test_no_bar_when_stderr_is_not_a_terminal(cli_proc) -> None:  # type: ignore[no-untyped-def]
    """With stderr piped (CI logs), a passing gate writes nothing to stderr."""
    run = cli_proc("gate", M52, "-k", "loop7", "-j", "1")
    assert run.code == 0 and run.err == ""


def test_replay_reports_finished_requests() -> None:
    """A replay reports each finished request out of the workload's requests."""
    from cbaudit.sim import replay
    from cbaudit.sim.replay_compare import load_replay_workload

    workload, _ = load_replay_workload(M52 / "loop3" / "abc.workload.yaml")
    calls: list[tuple[int, int]] = []
    options = replay.ReplayOptions(policy="orca")
    replay.run(workload, options, progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1][0] == calls[-1][1] == len(workload.requests)
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)
