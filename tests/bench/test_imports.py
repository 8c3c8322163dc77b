"""Import rules: bench reads only io and model; the CLI never loads torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import cbaudit.bench

ALLOWED = ("cbaudit.io", "cbaudit.model", "cbaudit.bench")


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for sub in node.body:
                lines.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return lines


def test_bench_imports_flow_down() -> None:
    """No bench module imports cli, gate, sim, oracles or report at run time."""
    root = Path(cbaudit.bench.__file__).parent
    bad: list[str] = []
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_lines(tree)
        for node in ast.walk(tree):
            if getattr(node, "lineno", 0) in skip:
                continue
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith("cbaudit.") and not name.startswith(ALLOWED):
                    bad.append(f"{path.name}: {name}")
    assert bad == []


def test_cli_start_does_not_import_torch() -> None:
    """Building the whole Typer app (every command module) leaves torch unimported."""
    code = "import sys, cbaudit.cli.app; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"
