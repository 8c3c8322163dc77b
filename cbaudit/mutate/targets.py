"""Which fixture type a document is: the mutation target whose `matches` accepts it.

A target (`cbaudit.checks.interface.Target`) answers two questions about in-memory data: does
this fixture belong to me (`matches`), and what does my oracle say about it (`evaluate` ->
`Verdict`). Targets are declared by the check kinds beside their oracles
(`CheckKind.mutation`); `mutate` receives them by parameter (`cbaudit.kinds.TARGETS` from the
CLI, `targets_of(ctx.kinds)` in the gate) and never imports the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.checks.interface import Target, Verdict

__all__ = ["Target", "Verdict", "detect"]


def detect(data: Any, targets: Mapping[str, Target]) -> Target | None:
    """The first target (in registry order) whose fixtures look like `data`, or None."""
    if not isinstance(data, Mapping):
        return None
    for target in targets.values():
        if target.matches(data):
            return target
    return None
