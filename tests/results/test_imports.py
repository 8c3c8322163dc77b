"""cbaudit.results imports only io, model and itself (DESIGN.md's import table)."""

from __future__ import annotations

import ast
from pathlib import Path

import cbaudit.results

ALLOWED = ("cbaudit.io", "cbaudit.model", "cbaudit.results", "cbaudit.report.json_report")


def test_results_imports_flow_down() -> None:
    """No module of cbaudit.results imports gate, cli, oracles, sim, bench or torch."""
    root = Path(cbaudit.results.__file__).parent
    bad: list[str] = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith("cbaudit") and not name.startswith(ALLOWED):
                    bad.append(f"{path.name}: {name}")
                if name.split(".")[0] in ("torch", "scipy", "numpy"):
                    bad.append(f"{path.name}: {name}")
    assert bad == []
