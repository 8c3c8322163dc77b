"""docs/model.md stays true: each console example prints exactly what the page shows."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Any

import pytest
from repo_paths import REPO

_BLOCK = re.compile(r"```console\n\$ (cbaudit [^\n]+)\n(.*?)```", re.DOTALL)
EXAMPLES = _BLOCK.findall((REPO / "docs" / "model.md").read_text(encoding="utf-8"))


def test_the_page_has_its_examples() -> None:
    """One example per calculator at least (step-time, preemption-cost, graph-padding, hybrid)."""
    commands = {shlex.split(cmd)[2] for cmd, _ in EXAMPLES}
    assert {"step-time", "preemption-cost", "graph-padding", "hybrid-pools"} <= commands


@pytest.mark.parametrize(("command", "shown"), EXAMPLES, ids=[c[:60] for c, _ in EXAMPLES])
def test_each_example_prints_what_the_page_shows(
    cli: Callable[..., Any], command: str, shown: str
) -> None:
    """The real output, trailing spaces aside, is the page's block."""
    run = cli(*shlex.split(command)[1:])
    assert run.code == 0, run.err
    printed = "\n".join(line.rstrip() for line in run.out.splitlines())
    assert printed == shown.rstrip("\n")
