"""docs/gate.md names every `GATE.*` code the gate and the check interface can produce."""

from __future__ import annotations

import re

from repo_paths import REPO


def test_every_gate_code_is_documented() -> None:
    """Each `GATE.*` string in cbaudit/checks, cbaudit/gate and the read log is in docs/gate.md
    or the README."""
    sources = [
        *(REPO / "cbaudit" / "checks").glob("*.py"),
        *(REPO / "cbaudit" / "gate").glob("*.py"),
        REPO / "cbaudit" / "io" / "reads.py",
    ]
    codes = {c for p in sources for c in re.findall(r'"(GATE\.[A-Z_.]+)"', p.read_text())}
    docs = (REPO / "docs" / "gate.md").read_text() + (REPO / "README.md").read_text()
    assert len(codes) > 10
    assert sorted(c for c in codes if f"`{c}`" not in docs) == []
