"""`cbaudit bench` end to end on the CPU path: run, refuse overwrite, faults, no torch, attach."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cbaudit.model import Report

REPO = Path(__file__).resolve().parents[2]


def _fake_no_torch(tmp_path: Path) -> dict[str, str]:
    """An environment where `import torch` fails (a shadowing package that raises)."""
    shadow = tmp_path / "shadow" / "torch"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no torch here')\n")
    path = os.pathsep.join([str(tmp_path / "shadow"), str(REPO)])
    return {**os.environ, "PYTHONPATH": path}


def _proc(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cbaudit", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def test_help_works_without_torch(tmp_path: Path) -> None:
    """`cbaudit bench --help` and `bench spec` start without torch."""
    env = _fake_no_torch(tmp_path)
    r = _proc(["bench", "--help"], env)
    assert r.returncode == 0 and "attach" in r.stdout
    r = _proc(["bench", "spec", "32q1s2k_q512s4k", "--format", "json"], env)
    assert r.returncode == 0
    assert json.loads(r.stdout)["results"][0]["metrics"]["tokens"] == 544


def test_run_without_torch_names_the_extra(tmp_path: Path) -> None:
    """Without torch, `bench run` exits 2 and says which extra to install."""
    r = _proc(["bench", "run", str(tmp_path / "r.json")], _fake_no_torch(tmp_path))
    assert r.returncode == 2
    assert "BENCH.TORCH.MISSING" in r.stderr and "cbaudit[bench]" in r.stderr
    assert not (tmp_path / "r.json").exists()


def test_run_refuses_to_overwrite(cli: Any, tmp_path: Path) -> None:
    """An existing results file is kept unless --force is given."""
    out = tmp_path / "r.json"
    out.write_text("keep me")
    r = cli("bench", "run", out, "--grid", "tiny")
    assert r.code == 2 and "BENCH.OUTPUT.EXISTS" in r.err
    assert out.read_text() == "keep me"


def test_run_end_to_end_with_force_and_json_report(cli: Any, tmp_path: Path) -> None:
    """A forced CPU run writes a valid results file and a JSON report of every point."""
    pytest.importorskip("torch")
    out = tmp_path / "r.json"
    out.write_text("old")
    r = cli(
        "bench", "run", out, "--spec", "4q1s64_q16s16", "--spec", "q1s32", "--device", "cpu",
        "--max-samples", "3", "--no-ceilings", "--force", "--format", "json", "-q",
    )  # fmt: skip
    assert r.code == 0, r.err
    rep = json.loads(r.out)
    assert rep["verdict"] == "pass"
    points = [x for x in rep["results"] if x["check"] == "bench.point"]
    assert [x["evidence_class"] for x in points] == ["measured_cpu", "measured_cpu"]
    assert json.loads(out.read_text())["points"][0]["spec"] == "4q1s64_q16s16"


def test_injected_fault_fails_the_point(cli: Any, tmp_path: Path) -> None:
    """A deliberately broken packing stops the point untimed, with its code, exit 1."""
    pytest.importorskip("torch")
    out = tmp_path / "bad.json"
    r = cli(
        "bench", "run", out, "--spec", "2q1s8_q5s20", "--device", "cpu", "--no-ceilings",
        "--inject-fault", "row_swap", "--format", "json", "-q",
    )  # fmt: skip
    assert r.code == 1
    res = next(x for x in json.loads(r.out)["results"] if x["check"] == "bench.point")
    assert res["status"] == "failed" and res["findings"][0]["code"] == "BENCH.CORRECTNESS.MISMATCH"
    point = json.loads(out.read_text())["points"][0]
    assert point["status"] == "failed_correctness" and point["stats"] is None
    assert point["evidence_class"] is None


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--spec", "q5s2"], "BENCH.SPEC.KV_SHORTER_THAN_Q"),
        (["--grid", "nosuchgrid"], "BENCH.GRID.NOT_FOUND"),
        (["--backend", "triton"], "BENCH.OPTION.INVALID"),
        (["--budget-s", "0"], "BENCH.BUDGET.INVALID"),
    ],
)
def test_unusable_run_options(cli: Any, tmp_path: Path, args: list[str], code: str) -> None:
    """Bad specs, grids and options are refused before the runner starts (exit 2)."""
    r = cli("bench", "run", tmp_path / "r.json", *args)
    assert r.code == 2 and code in r.err
    assert not (tmp_path / "r.json").exists()


def test_bad_grid_file_is_located(cli: Any, tmp_path: Path) -> None:
    """A grid file with a bad spec names the file, the pointer and the code."""
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "format: cbaudit-bench-grid\nformat_version: 1\nname: g\npoints: [q1s64, q9s3]\n"
    )
    r = cli("bench", "run", tmp_path / "r.json", "--grid", grid)
    assert r.code == 2
    assert f"{grid}#/points/1: error BENCH.SPEC.KV_SHORTER_THAN_Q" in r.err


def _replay_report(path: Path) -> dict[str, Any]:
    data = Report.build("replay", [], summary={"policy": "fcfs"}).to_dict()
    path.write_text(json.dumps(data))
    return data


def test_attach_adds_timings_with_classes_and_sha(
    cli: Any, tmp_path: Path, tiny_results: Path
) -> None:
    """Attach keeps each figure's class, the file's sha256, and is idempotent."""
    rep = tmp_path / "replay.json"
    before = _replay_report(rep)
    out = tmp_path / "with.json"
    r = cli("bench", "attach", rep, tiny_results, "--output", out)
    assert r.code == 0, r.err
    data = json.loads(out.read_text())
    assert data["results"] == before["results"] and data["summary"] == before["summary"]
    (att,) = data["attachments"]
    sha = __import__("hashlib").sha256(tiny_results.read_bytes()).hexdigest()
    assert att["sha256"] == sha and att["evidence_class"] == "measured_cpu"
    assert {"path": str(tiny_results), "sha256": sha} in data["inputs"]
    t = att["step_timings"][0]
    assert t["evidence_class"] == "measured_cpu" and t["modeled_evidence_class"] == "modeled"
    assert att["fits"]["status"] == "not_run"
    r2 = cli("bench", "attach", out, tiny_results, "--in-place")
    assert r2.code == 0
    assert len(json.loads(out.read_text())["attachments"]) == 1
    assert json.loads(rep.read_text()) == before


def test_attach_refusals(cli: Any, tmp_path: Path, tiny_results: Path) -> None:
    """Neither/both of --output and --in-place, or a non-report, exit 2 without writing."""
    rep = tmp_path / "replay.json"
    _replay_report(rep)
    assert cli("bench", "attach", rep, tiny_results).code == 2
    both = cli("bench", "attach", rep, tiny_results, "-o", tmp_path / "x.json", "--in-place")
    assert both.code == 2 and not (tmp_path / "x.json").exists()
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    r = cli("bench", "attach", other, tiny_results, "--in-place")
    assert r.code == 2 and "BENCH.ATTACH.NOT_A_REPORT" in r.err
    assert json.loads(other.read_text()) == {"hello": 1}


def test_check_reports_every_point(cli: Any, tiny_results: Path) -> None:
    """`bench check` passes a good CPU file and labels it not measured on GPU."""
    r = cli("bench", "check", tiny_results, "--format", "json")
    assert r.code == 0
    rep = json.loads(r.out)
    assert rep["summary"]["evidence_class"] == "measured_cpu"
    assert "not measured on GPU" in rep["summary"]["label"]
    assert len(rep["results"]) == 12


def test_sigterm_still_writes_a_whole_results_file(tmp_path: Path) -> None:
    """SIGTERM mid-run: the point in hand finishes, the rest are skipped, the file is whole."""
    import signal
    import time

    pytest.importorskip("torch")
    out = tmp_path / "stopped.json"
    argv = [sys.executable, "-m", "cbaudit.bench.runner", "-o", str(out), "--grid", "tiny",
            "--device", "cpu", "--no-ceilings"]  # fmt: skip
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        for line in proc.stderr:  # wait until the first point is under way
            if "[1/" in line or time.monotonic() > deadline:
                break
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        assert proc.wait(timeout=120) == 0, rest
    assert "SIGTERM: finishing this point" in rest
    data = json.loads(out.read_text(encoding="utf-8"))
    statuses = [p["status"] for p in data["points"]]
    assert "skipped_budget" in statuses, statuses
    why = "run stopped by a signal before this point"
    stopped = [p for p in data["points"] if p["reason"] == why]
    assert stopped and all(p["median_ms"] is None for p in stopped)
    assert any("stopped early by a signal" in n for n in data["manifest"]["notes"])
    assert not list(tmp_path.glob(".*.tmp"))


def test_gpu_check_dry_run_writes_its_files(tmp_path: Path) -> None:
    """The prepared GPU check rehearses on the CPU: results, summary, log and device tests."""
    import shutil

    pytest.importorskip("torch")
    if shutil.which("bash") is None:
        pytest.skip("bash is not available")
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "gpu"
    env = {**os.environ, "CBAUDIT_GPU_CHECK_DRY_RUN": "1", "PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", str(repo / "benchmarks" / "gpu_check.sh"), str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,  # the runner's 220 s and the device tests' 240 s (a loaded CI machine)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = {p.name for p in out.iterdir()}
    assert {"results-dry-run-cpu.json", "summary.txt", "runner.log", "gpu-tests.txt"} <= names
    summary = (out / "summary.txt").read_text(encoding="utf-8")
    assert "not measured on GPU" in summary and "measured_cpu" in summary
    tests = (out / "gpu-tests.txt").read_text(encoding="utf-8")
    assert " passed" in tests and "failed" not in tests, tests
