"""A user's install: the wheel in a fresh virtual environment with no extras runs everything.

Builds the wheel with pip (as `pip install .` does), installs it into a new venv without any
extra (no dev tools, no jsonschema-rs, no torch), then runs every command's `--help` and one
real command of each from a folder outside the checkout. A module the package imports but
`pyproject.toml` does not declare fails here as a ModuleNotFoundError (exit 3): issue 13 found
`click` that way. pip's cache is reused; `make pytest` builds the wheel once beforehand and
names it in CBAUDIT_TEST_WHEEL.

Where a C compiler and the Python headers are found, that wheel is the compiled build
(hatch_build.py): the replay's hot modules compiled by mypyc. It must then give byte for byte
what the sources give (reports, traces, samples, stdout and stderr) on generated workloads
under every policy and on a trace at realistic batch sizes, and its record must name the
sources it was built from. The fallback (no compiler: the interpreted wheel, and why) is
built here too.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from repo_paths import CONFORMANCE, M52, REPO, SHARED

from cbaudit.cli.app import COMMANDS, load_command
from cbaudit.policies import verified
from cbaudit.policies.registry import POLICIES
from tests.sim.generated import (
    POLICY_OPTIONS,
    busy_workload_doc,
    long_workload_doc,
    workload_doc,
)

pytestmark = pytest.mark.slow

_PIP = ["-m", "pip", "--disable-pip-version-check", "-q"]


def _python(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / "python"


def _build_wheel(
    out: Path, env: dict[str, str] | None = None, *extra: str
) -> subprocess.CompletedProcess[str]:
    """`pip wheel` of the checkout into `out` (verbose: the build hook's lines are kept)."""
    # hatchling builds from the checkout and leaves out what .gitignore names (.venv, caches)
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "-v", "--no-deps",
         *extra, "-w", str(out), str(REPO)],
        capture_output=True, text=True, env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.fixture(scope="module")
def plain_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `cbaudit` program of a fresh venv holding the wheel and its declared dependencies."""
    work = tmp_path_factory.mktemp("wheel")
    given = os.environ.get("CBAUDIT_TEST_WHEEL")
    if given:  # (make pytest: the wheel `make wheel` just built from this checkout)
        wheel = Path(given)
        assert wheel.is_file() and wheel.name.startswith("cbaudit-"), given
    else:
        built = _build_wheel(work / "dist")
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        (wheel,) = (work / "dist").glob("cbaudit-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PIP_REQUIRE_VIRTUALENV"}
    installed = subprocess.run(
        [str(_python(venv)), *_PIP, "install", str(wheel)], capture_output=True, text=True, env=env
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return _python(venv).with_name("cbaudit")


def _clean_env() -> dict[str, str]:
    """This environment without cbaudit's settings and without PYTHONPATH: the installed
    program sees only its own venv."""
    return {
        k: v for k, v in os.environ.items() if not k.startswith("CBAUDIT_") and k != "PYTHONPATH"
    }


def _run(program: Path, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = _clean_env()
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
        env=_clean_env(),
    )
    assert check.returncode == 0 and "sources match" in check.stdout, check
    trace = REPO / "tests" / "sim" / "data" / "azure_small.csv"
    run = _run(
        plain_install, "replay", trace, "-p", "vllm-v1", "--cost-model", "roofline",
        "--cost-option", "hardware=nvidia-h100-sxm", "--cost-option", "model=llama-3-8b-gqa-fp16",
        "-q", "-f", "json", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0 and run.stderr == "", run.stderr


# --- the compiled build (hatch_build.py) ------------------------------------------------------


def _hook() -> Any:
    """hatch_build.py, the wheel's build hook (hatchling is a dev dependency)."""
    spec = importlib.util.spec_from_file_location("cbaudit_hatch_build", REPO / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compiler_here() -> str | None:
    """None when the hook finds a C compiler and the Python headers here; else why not."""
    hook = _hook()
    try:
        hook._find_compiler()
    except hook.CompileError as err:
        return str(err)
    return None


def _package_dir(program: Path) -> Path:
    """Where the venv of `program` has the cbaudit package."""
    where = subprocess.run(
        [str(program.with_name("python")), "-c",
         "import cbaudit, os; print(os.path.dirname(cbaudit.__file__))"],
        capture_output=True, text=True, check=True, cwd=program.parent, env=_clean_env(),
    )  # fmt: skip
    return Path(where.stdout.strip())


def _compiled(program: Path) -> dict[str, Any] | None:
    """The installed wheel's build record (None: the interpreted wheel)."""
    record = _package_dir(program) / "_compiled.json"
    return json.loads(record.read_text(encoding="utf-8")) if record.is_file() else None


def _need_compiled(program: Path) -> dict[str, Any]:
    record = _compiled(program)
    if record is None:
        pytest.skip(f"the wheel was built interpreted here ({_compiler_here()}): nothing compiled")
    return record


def test_the_wheel_is_compiled_where_a_compiler_is_found(
    plain_install: Path, tmp_path: Path
) -> None:
    """`pip install .` gives the compiled build wherever the hook finds a C compiler and the
    Python headers (a failing compile must not hide behind the fallback), and `--version`
    says which build is installed."""
    version = _run(plain_install, "--version", cwd=tmp_path).stdout
    record = _compiled(plain_install)
    why_not = _compiler_here()
    if why_not is None:
        assert record is not None, "a compiler is here, yet the wheel is interpreted"
    if record is None:
        assert version.endswith("(interpreted)\n"), version
        return
    modules = _hook_modules()
    assert sorted(record["modules"]) == sorted(modules)
    assert f"(compiled: {len(modules)} of {len(modules)} modules by mypyc" in version, version


def _hook_modules() -> list[str]:
    with (REPO / "pyproject.toml").open("rb") as f:
        hooks = tomllib.load(f)["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]
    return list(hooks["custom"]["compiled-modules"])


def test_the_build_record_names_the_shipped_sources(plain_install: Path) -> None:
    """Each compiled module's record is the digest of the source shipped beside it, which is
    this checkout's; the extension is what an import loads."""
    record = _need_compiled(plain_install)
    probe = (
        "import importlib, json, sys\n"
        "out = {}\n"
        "for rel in json.loads(sys.argv[1]):\n"
        "    m = importlib.import_module(rel.removesuffix('.py').replace('/', '.'))\n"
        "    out[rel] = m.__file__\n"
        "print(json.dumps(out))\n"
    )
    python = str(plain_install.with_name("python"))
    asked = json.dumps(list(record["modules"]))
    loaded = json.loads(
        subprocess.run(
            [python, "-c", probe, asked],
            capture_output=True, text=True, check=True, cwd=plain_install.parent,
            env=_clean_env(),
        ).stdout
    )  # fmt: skip
    for rel, want in record["modules"].items():
        file = Path(loaded[rel])
        assert file.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), file
        shipped = file.with_name(Path(rel).name)
        assert shipped.read_bytes() == (REPO / rel).read_bytes(), rel
        assert want == verified.digest((REPO / rel).read_bytes()), rel


_ROOFLINE = [
    "--cost-model", "roofline", "--cost-option", "hardware=nvidia-h100-sxm",
    "--cost-option", "model=llama-3-8b-gqa-fp16", "--cost-option", "mfu=0.7",
]  # fmt: skip
# the issue-16 configuration (BLIS's): about 30 rows per iteration on a trace like the one below
_ISSUE_BUDGETS = [
    "--budget", "token_budget=2048", "--budget", "sequence_budget=256",
    "--budget", "kv_block_size=16", "--budget", "kv_total_blocks=26312",
]  # fmt: skip
_TIE_BREAK = {
    "policy_id": "fcfs",
    "policy_version": "1",
    "tie_break": {
        "key": ["phase_rank", "priority_rank", "arrival_order", "request_id", "request_generation"],
        "phase_order": ["DECODE_ROW", "PREFILL_CHUNK"],
    },
}


def _trace(path: Path, n: int, seed: int) -> Path:
    """A Splitwise-format trace: n requests, bursty arrivals, prompts and outputs spread as in
    the public code and conversation traces (hundreds to thousands of prompt tokens, tens to
    hundreds of output tokens)."""
    rnd = random.Random(seed)
    t = 0.0
    rows = ["arrived_at,num_prefill_tokens,num_decode_tokens"]
    for _ in range(n):
        t += rnd.expovariate(8.0) if rnd.random() < 0.9 else rnd.uniform(0.5, 3.0)
        prompt = min(8000, int(rnd.lognormvariate(6.8, 0.9)) + 1)
        out = min(1500, int(rnd.lognormvariate(4.0, 1.1)) + 1)
        rows.append(f"{t:.6f},{prompt},{out}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _cases(work: Path) -> list[dict[str, Any]]:
    """Every registered policy on generated workloads (two seeds, short and long, slot clock
    and roofline ms), vllm-v1 on a busy one (large kept decode blocks), and vllm-v1 and
    sarathi-serve on a trace at realistic batch sizes and
    on the real Splitwise code trace when the shared folder has it; default and
    per-iteration paths; with --trace-out, --samples-out, --steps and --window."""
    cases: list[dict[str, Any]] = []

    def add(name: str, *args: str | Path, every: bool = True) -> None:
        outs = ["-f", "json", "-o", f"{name}.json", "--samples-out", f"{name}.samples.jsonl"]
        if every:  # (a trace's iterations in full would be hundreds of MB)
            outs += ["--trace-out", f"{name}.trace.jsonl", "--steps", "5", "--window", "7"]
        cases.append({"name": name, "args": ["replay", "run", *map(str, args), *outs]})

    for seed in range(2):
        for unit, cost in (("tick", []), ("ms", _ROOFLINE)):
            for kind, make in (("s", workload_doc), ("l", long_workload_doc)):
                doc = {**make(seed, unit), "policy": _TIE_BREAK}
                wl = work / f"{kind}{seed}-{unit}.json"
                wl.write_text(json.dumps(doc), encoding="utf-8")
                for pid in POLICIES.ids():
                    opts = [a for k, v in POLICY_OPTIONS.get(pid, {}).items()
                            for a in ("--policy-option", f"{k}={v}")]  # fmt: skip
                    per = ["--per-iteration"] if (seed + len(pid)) % 4 == 0 else []
                    add(f"{kind}{seed}-{unit}-{pid}", wl, "-p", pid, *opts, *cost, *per)
    for unit, cost in (("tick", []), ("ms", _ROOFLINE)):  # large kept decode blocks
        wl = work / f"b0-{unit}.json"
        wl.write_text(json.dumps({**busy_workload_doc(0, unit), "policy": _TIE_BREAK}), "utf-8")
        add(f"b0-{unit}-vllm-v1", wl, "-p", "vllm-v1", *cost, every=False)
    traces = [_trace(work / "trace.csv", 2000, 16)]
    real = SHARED / "traces" / "splitwise_code.csv"
    if real.is_file():
        traces.append(real)
    for i, trace in enumerate(traces):
        for pid in ("vllm-v1", "sarathi-serve"):
            add(f"trace{i}-{pid}", trace, "-p", pid, *_ROOFLINE, *_ISSUE_BUDGETS, every=False)
    add("trace0-vllm-v1-per-iteration", traces[0], "-p", "vllm-v1", *_ROOFLINE,
        *_ISSUE_BUDGETS, "--per-iteration", every=False)  # fmt: skip
    return cases


def test_the_compiled_build_gives_the_bytes_the_sources_give(
    plain_install: Path, tmp_path: Path
) -> None:
    """The same commands through the compiled build and through this checkout's sources
    (interpreted) write the same bytes: every report, trace, samples file, stdout, stderr and
    exit code. No replay of cbaudit's own policies says its stretch declaration was not
    believed (the compiled policies are the verified ones)."""
    _need_compiled(plain_install)
    cases = _cases(tmp_path)
    listing = tmp_path / "cases.json"
    listing.write_text(json.dumps(cases), encoding="utf-8")
    driver = Path(__file__).with_name("compiled_driver.py")
    env = _clean_env()
    ran = {}
    for build, python in (
        ("compiled", plain_install.with_name("python")),
        ("source", Path(sys.executable)),
    ):
        done = subprocess.run(
            [str(python), str(driver), str(listing), str(tmp_path / build)],
            capture_output=True, text=True, cwd=tmp_path,
            env=env if build == "compiled" else {**env, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        ran[build] = json.loads(done.stdout.splitlines()[-1])["engine"]
    assert ran["compiled"].endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), ran
    assert Path(ran["source"]).resolve() == (REPO / "cbaudit" / "sim" / "engine.py"), ran
    names = sorted(p.name for p in (tmp_path / "source").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "compiled").iterdir())
    assert len(names) >= 5 * len(cases)  # (exit, out, err, report, samples at least)
    differ = [
        n
        for n in names
        if (tmp_path / "source" / n).read_bytes() != (tmp_path / "compiled" / n).read_bytes()
    ]
    assert differ == [], differ[:20]
    notes = [
        n
        for n in names
        if n.endswith(".err") and "no stretches" in (tmp_path / "compiled" / n).read_text()
    ]
    assert notes == [], notes[:5]
    completed = [
        c["name"]
        for c in cases
        if (tmp_path / "compiled" / f"{c['name']}.exit").read_text() == "0\n"
    ]
    assert len(completed) > len(cases) // 2 and all(
        (tmp_path / "compiled" / f"trace0-{pid}.exit").read_text() == "0\n"
        for pid in ("vllm-v1", "sarathi-serve")
    )


def test_a_compiled_policy_from_other_sources_is_not_believed(
    plain_install: Path, tmp_path: Path
) -> None:
    """A copy of the installed package whose build record gives vllm_v1.py another digest (as
    if its extension were built from other bytes): the replay runs every iteration through
    the policy and says why; the same report as the intact build."""
    _need_compiled(plain_install)
    site = _package_dir(plain_install).parent
    copy = tmp_path / "copy"
    shutil.copytree(site / "cbaudit", copy / "cbaudit")
    for shared in site.glob("*__mypyc*"):
        shutil.copy2(shared, copy / shared.name)
    record_file = copy / "cbaudit" / "_compiled.json"
    record = json.loads(record_file.read_text(encoding="utf-8"))
    record["modules"]["cbaudit/policies/vllm_v1.py"] = "sha256:" + "0" * 64
    record_file.write_text(json.dumps(record), encoding="utf-8")
    trace = REPO / "tests" / "sim" / "data" / "azure_small.csv"
    args = ["-m", "cbaudit", "replay", str(trace), "-p", "vllm-v1", *_ROOFLINE, "-q", "-f", "json"]
    env = _clean_env()
    python = str(plain_install.with_name("python"))
    tampered = subprocess.run([python, *args], capture_output=True, text=True, cwd=tmp_path,
                              env={**env, "PYTHONPATH": str(copy)})  # fmt: skip
    intact = subprocess.run([python, *args], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert tampered.returncode == intact.returncode == 0, tampered.stderr
    assert "vllm_v1.py (compiled from other sources) differs" in tampered.stderr, tampered.stderr
    assert intact.stderr == "" and tampered.stdout == intact.stdout


def test_without_a_compiler_the_wheel_is_interpreted_and_says_why(tmp_path: Path) -> None:
    """No C compiler (CC names none): `auto` builds the pure-Python wheel and the build output
    says why; `CBAUDIT_COMPILE=1` fails the build instead; an unknown value is refused."""
    nocc = {"CC": str(tmp_path / "no-such-cc"), "CBAUDIT_COMPILE": "auto"}
    built = _build_wheel(tmp_path / "auto", nocc, "--no-build-isolation")
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp_path / "auto").glob("cbaudit-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert "cbaudit/_compiled.json" not in names
    assert not [n for n in names if n.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))]
    said = built.stdout + built.stderr
    assert "were not compiled (no C compiler found" in said and "interpreted wheel" in said, said[
        -3000:
    ]
    required = _build_wheel(
        tmp_path / "one", {**nocc, "CBAUDIT_COMPILE": "1"}, "--no-build-isolation"
    )
    assert required.returncode != 0 and "no C compiler found" in required.stdout + required.stderr
    odd = _build_wheel(tmp_path / "odd", {"CBAUDIT_COMPILE": "maybe"}, "--no-build-isolation")
    assert odd.returncode != 0 and "CBAUDIT_COMPILE='maybe'" in odd.stdout + odd.stderr
