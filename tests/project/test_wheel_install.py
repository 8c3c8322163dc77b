"""A user's install: the wheel in a fresh virtual environment with no extras runs everything.

Builds the wheel with pip (as `pip install .` does), installs it into a new venv without any
extra (no dev tools, no jsonschema-rs, no torch), then runs every command's `--help` and one
real command of each from a folder outside the checkout. A module the package imports but
`pyproject.toml` does not declare fails here as a ModuleNotFoundError (exit 3): issue 13 found
`click` that way. pip's cache is reused, so after the first run this takes well under a minute.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import CONFORMANCE, M52, REPO

from cbaudit.cli.app import COMMANDS, load_command

pytestmark = pytest.mark.slow

_PIP = ["-m", "pip", "--disable-pip-version-check", "-q"]


def _python(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / "python"


@pytest.fixture(scope="module")
def plain_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `cbaudit` program of a fresh venv holding the wheel and its declared dependencies."""
    work = tmp_path_factory.mktemp("wheel")
    # hatchling builds from the checkout and leaves out what .gitignore names (.venv, caches)
    built = subprocess.run(
        [sys.executable, *_PIP, "wheel", "--no-deps", "-w", str(work / "dist"), str(REPO)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (work / "dist").glob("cbaudit-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PIP_REQUIRE_VIRTUALENV"}
    installed = subprocess.run(
        [str(_python(venv)), *_PIP, "install", str(wheel)], capture_output=True, text=True, env=env
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return _python(venv).with_name("cbaudit")


def _run(program: Path, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CBAUDIT_")}
    return subprocess.run(
        [str(program), *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env
    )


def _command_paths() -> list[list[str]]:
    paths = []
    for name in COMMANDS:
        paths.append([name])
        paths += [[name, sub] for sub in getattr(load_command(name), "commands", {})]
    return paths


def test_installed_wheel_declares_what_it_imports(plain_install: Path, tmp_path: Path) -> None:
    """Only declared packages are installed, and nothing optional came along."""
    listed = subprocess.run(
        [str(plain_install.with_name("python")), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "cbaudit" in names
    assert not names & {"click", "jsonschema-rs", "torch", "check-jsonschema", "pytest"}


def test_every_help_runs_from_the_plain_install(plain_install: Path, tmp_path: Path) -> None:
    """`--help` of the program and of every command and subcommand exits 0."""
    assert _run(plain_install, "--help", cwd=tmp_path).returncode == 0
    version = _run(plain_install, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("cbaudit ")
    for path in _command_paths():
        run = _run(plain_install, *path, "--help", cwd=tmp_path)
        assert run.returncode == 0, (path, run.stderr[-2000:])
        assert "Usage:" in run.stdout


def test_one_real_command_of_each_runs_from_the_plain_install(
    plain_install: Path, tmp_path: Path
) -> None:
    """Each command does real work on a small input and exits 0 without any extra."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    manifest = tmp_path / "pin.yaml"
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(M52 / "loop2" / "valid.case.json", bundle / "valid.case.json")
    (bundle / "bundle.yaml").write_text(
        "schema_version: 1\nbundle: small\ntitle: Small\ninclude: []\nchecks:\n"
        "  - {id: one, kind: plan_case, case: valid.case.json}\n"
    )
    reports = M52 / "compare" / "reports"
    corpus = CONFORMANCE / "corpus"
    runs: list[list[str | Path]] = [
        ["validate-plan", M52 / "loop2" / "valid.case.json"],
        ["replay", M52 / "loop3" / "abc.workload.yaml", "--policy", "fifo"],
        ["replay", "--list-policies"],
        ["conform", corpus / "null_block_exact.vllm-trace.jsonl",
         "-w", corpus / "null_block_exact.workload.json"],
        ["mutate", M52 / "loop2" / "valid.case.json", "--operators", "plan.decision"],
        [
            "pin", "create", "--source", tree, "--file", "pkg/mod.py", "--marker", "pkg/mod.py:1",
            "--runtime", "toy", "--runtime-version", "1", "-o", manifest,
        ],
        ["verify-pin", manifest, "--source", tree],
        ["formula-audit", REPO / "registry" / "formula_registry.yaml"],
        ["compare-results", reports / "orca-seed1.json", reports / "sarathi-serve-seed1.json"],
        ["audit-registries"],
        ["failure-closure", M52 / "loop11" / "failure_closure.json"],
        ["bench", "check", M52 / "bench" / "results-cpu-tiny.json"],
        ["bench", "spec", "32q1s2k_q512s4k"],
        ["gate", bundle, "-j", "1"],
        ["schema", "list"],
        ["model", "step-time", "-m", "lecture4-dense-70b-fp16", "-H", "lecture4-h100-sxm"],
        ["new", "bundle", "scaffolded", "--dir", tmp_path],
        ["gate", tmp_path / "scaffolded", "-j", "1"],
        ["schema", "export", tmp_path / "schemas"],
    ]  # fmt: skip
    for args in runs:
        run = _run(plain_install, *args, cwd=tmp_path)
        assert run.returncode == 0, (args, run.stdout[-2000:], run.stderr[-2000:])
    ran = {str(args[0]) for args in runs}
    assert set(COMMANDS) <= ran  # one real command of each top-level command


def test_the_installed_policies_are_the_verified_ones(plain_install: Path, tmp_path: Path) -> None:
    """The wheel carries `verified_sources.json`, and its policy sources are the recorded
    ones: `python -m cbaudit.policies.verified` passes there, and a vllm-v1 replay takes its
    stretches without a note (a stale or missing record would give one: every iteration in
    full, `docs/replay.md`, "Whose promise is believed")."""
    check = subprocess.run(
        [str(plain_install.with_name("python")), "-m", "cbaudit.policies.verified"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("CBAUDIT_")},
    )
    assert check.returncode == 0 and "sources match" in check.stdout, check
    trace = REPO / "tests" / "sim" / "data" / "azure_small.csv"
    run = _run(
        plain_install, "replay", trace, "-p", "vllm-v1", "--cost-model", "roofline",
        "--cost-option", "hardware=nvidia-h100-sxm", "--cost-option", "model=llama-3-8b-gqa-fp16",
        "-q", "-f", "json", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0 and run.stderr == "", run.stderr
