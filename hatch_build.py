"""Wheel build hook: compile the replay's hot modules with mypyc where this machine can.

`pip install .` (and `pip wheel .`) runs this through hatchling. It compiles the modules listed
under `compiled-modules` in `pyproject.toml` ([tool.hatch.build.targets.wheel.hooks.custom])
from the very sources the wheel ships, and puts the extension modules beside those sources in
the wheel: Python imports an extension before a `.py` of the same name, so the compiled code
runs and the source stays for tracebacks and for the verified-sources check. The same source,
compiled where a compiler is at hand and interpreted elsewhere, is how black and mypy ship.

`CBAUDIT_COMPILE` chooses:

* `auto` (the default): compile when a C compiler and the Python headers are found; otherwise,
  or when the compile fails, build the interpreted wheel and say why (pip shows it with `-v`;
  `cbaudit --version` says which build is installed);
* `1`: compile or fail the build (CI and the benchmarks use it);
* `0`: build the interpreted wheel.

An editable install (`pip install -e .`, the Makefile's) is never compiled: the tests replace
and subclass the modules' functions and classes, which compiled code does not allow.

The wheel also carries `cbaudit/_compiled.json`: the mypy version that compiled it and the
digest of every compiled module's source, so that a replay believes a compiled policy's
stretch declaration only when it was built from the verified sources
(`cbaudit/policies/verified.py`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ENV = "CBAUDIT_COMPILE"
RECORD = "cbaudit/_compiled.json"
OPT_LEVEL = "3"

_SETUP = """\
from setuptools import setup
from mypyc.build import mypycify

setup(
    name="cbaudit-compiled-modules",
    packages=[],
    py_modules=[],
    ext_modules=mypycify({modules!r}, opt_level={opt!r}, debug_level="0"),
)
"""


class CompileError(Exception):
    """The modules could not be compiled here (the message says why, in one line or a tail
    of the compiler's output)."""


class CompileHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._work: str | None = None
        if self.target_name != "wheel" or version == "editable":
            return
        mode = (os.environ.get(ENV) or "auto").strip().lower()
        if mode not in ("auto", "0", "1"):
            raise ValueError(f"{ENV}={mode!r}: expected auto, 1 (compile or fail) or 0 (do not)")
        if mode == "0":
            self.app.display_info(f"cbaudit: {ENV}=0, building the interpreted wheel")
            return
        modules = self.config.get("compiled-modules")
        if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
            raise TypeError("compiled-modules (pyproject.toml) must be a list of module paths")
        self._work = tempfile.mkdtemp(prefix="cbaudit-mypyc-")
        t0 = time.monotonic()
        try:
            placed = compile_modules(Path(self.root), modules, Path(self._work))
        except Exception as err:  # (auto: any failure leaves the interpreted wheel)
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None
            if mode == "1":
                raise
            why = str(err) if isinstance(err, CompileError) else f"{type(err).__name__}: {err}"
            self.app.display_warning(
                f"cbaudit: the replay's hot modules were not compiled ({why}); building the"
                f" interpreted wheel (the same code, slower; {ENV}=1 makes this an error)"
            )
            return
        for source, target in placed.items():
            build_data["force_include"][source] = target
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        self.app.display_info(
            f"cbaudit: compiled {len(modules)} modules with mypyc in {time.monotonic() - t0:.0f} s"
        )

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._work:  # (set by initialize, which hatchling always runs first)
            shutil.rmtree(self._work, ignore_errors=True)


def _source_digest(root: Path) -> Any:
    """`cbaudit.io.compiled.source_digest`, the digest the replay checks the record against,
    loaded from its file (standard library only) without importing the package being built."""
    spec = importlib.util.spec_from_file_location(
        "_cbaudit_build_record", root / "cbaudit" / "io" / "compiled.py"
    )
    if spec is None or spec.loader is None:
        raise CompileError("cannot load cbaudit/io/compiled.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclass looks itself up there)
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module.source_digest


def _find_compiler() -> None:
    """Raise CompileError unless a C compiler and the Python headers are present."""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    if not cc or shutil.which(cc[0]) is None:
        raise CompileError(f"no C compiler found ({' '.join(cc) or 'cc'})")
    include = sysconfig.get_paths().get("include", "")
    if not (Path(include) / "Python.h").is_file():
        raise CompileError(f"the Python headers are missing (no Python.h in {include})")


def compile_modules(root: Path, modules: list[str], work: Path) -> dict[str, str]:
    """Compile `modules` (paths under `root`, like cbaudit/sim/engine.py) in a copy of the
    package under `work`; return {file built: its path in the wheel}, the build record
    included."""
    _find_compiler()
    try:
        import mypy.version
    except ImportError as err:  # (a build without the hook's dependencies)
        raise CompileError(
            f"mypy (mypyc) is not installed in the build environment: {err}"
        ) from err
    src = work / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.pyd")
    shutil.copytree(root / "cbaudit", src / "cbaudit", ignore=skip)
    shutil.copy2(root / "pyproject.toml", src / "pyproject.toml")  # (mypy's settings)
    source_digest = _source_digest(root)
    record: dict[str, str] = {}
    for module in modules:
        path = src / module
        if not path.is_file() or path.suffix != ".py":
            raise CompileError(f"compiled-modules names {module}, which is not a module here")
        record[module] = source_digest(path.read_bytes())
    (src / "setup.py").write_text(_SETUP.format(modules=modules, opt=OPT_LEVEL), encoding="utf-8")
    jobs = str(max(1, os.cpu_count() or 1))
    done = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace", "--parallel", jobs],
        cwd=src, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip()[-2000:]
        raise CompileError(f"mypyc exited {done.returncode}:\n{tail}")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    placed: dict[str, str] = {}
    for module in modules:
        built = src / (module.removesuffix(".py") + suffix)
        if not built.is_file():
            raise CompileError(f"mypyc did not build {built.name} for {module}")
        placed[str(built)] = built.relative_to(src).as_posix()
    for shared in sorted(src.glob(f"*__mypyc{suffix}")):  # the modules' shared runtime
        placed[str(shared)] = shared.name
    body = {
        "about": (
            "The modules of this wheel compiled by mypyc (hatch_build.py), with the digest"
            " of the source each was compiled from."
        ),
        "compiler": f"mypyc (mypy {mypy.version.__version__}, opt_level {OPT_LEVEL})",
        "modules": record,
    }
    out = work / "_compiled.json"
    out.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    placed[str(out)] = RECORD
    return placed
