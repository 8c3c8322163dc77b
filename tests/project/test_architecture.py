"""Architecture rules from DESIGN.md, read from the source with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "cbaudit"

# What each part may import (besides itself). Imports flow one way (docs/architecture.md):
# cli -> gate -> kinds (the registry) -> mutate -> oracles -> libraries -> checks (the check
# interface) -> io -> model; report reads only the model; torch lives only in bench.
LIBRARIES = {"contract", "policies", "sim", "pins", "formulas", "results", "bench"}
ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "io": {"model"},
    "report": {"model"},
    "checks": {"io", "model"},
    "contract": {"io", "model"},
    "policies": {"contract", "io", "model"},
    "sim": {"policies", "contract", "io", "model", "bench"},
    "pins": {"io", "model"},
    "formulas": {"pins", "io", "model"},
    "results": {"io", "model", "bench"},
    "bench": {"io", "model"},
    "conform": {"sim", "policies", "contract", "io", "model"},
    "integrations": set(),
    "oracles": {"checks", "conform", *LIBRARIES, "io", "model"},
    "mutate": {"oracles", "checks", *LIBRARIES, "io", "model"},
    "kinds": {"mutate", "oracles", "checks", "io", "model"},
    "gate": {"kinds", "checks", "results", "io", "model"},
    "cli": {
        "gate",
        "kinds",
        "mutate",
        "oracles",
        "conform",
        "checks",
        *LIBRARIES,
        "report",
        "io",
        "model",
    },
}


def _runtime_imports(tree: ast.Module) -> set[str]:
    """cbaudit parts imported at run time (imports under `if TYPE_CHECKING:` are skipped)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "cbaudit" and len(parts) > 1:
                    found.add(parts[1])
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "cbaudit" and len(parts) > 1:
                found.add(parts[1])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if p.parent != PKG)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_imports_flow_one_way(path: Path) -> None:
    """Each module imports only the parts DESIGN.md lets its part depend on."""
    part = path.relative_to(PKG).parts[0]
    assert part in ALLOWED, f"unknown part {part!r}: add it to ALLOWED and DESIGN"
    imported = _runtime_imports(ast.parse(path.read_text(encoding="utf-8")))
    imported.discard(part)
    imported.discard("__init__")
    assert imported <= ALLOWED[part], f"{path.name} imports {sorted(imported - ALLOWED[part])}"


def test_torch_only_inside_bench() -> None:
    """torch is imported only inside cbaudit/bench (and probed, not used, by the check runner
    for `requires: [cuda]`)."""
    offenders = []
    for path in _modules() + sorted(PKG.glob("*.py")):
        part = path.relative_to(PKG).parts[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n == "torch" or n.startswith("torch.") for n in names) and part not in (
                "bench",
                "checks",
            ):
                offenders.append(str(path.relative_to(PKG)))
    assert offenders == []


def test_nothing_imports_the_cli() -> None:
    """No part below the CLI imports it."""
    for path in _modules():
        if path.relative_to(PKG).parts[0] == "cli":
            continue
        assert "cli" not in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))), path


def test_test_folders_mirror_the_package() -> None:
    """Each folder of tests/ is named after the part of cbaudit it tests (or is `project`, for
    the repository as a whole: README, wheel, hooks, this file)."""
    tests = PKG.parent / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    parts = {p.name for p in PKG.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert folders - parts == {"project"}
