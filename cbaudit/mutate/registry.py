"""The one registry of mutation operators, assembled explicitly from each loop's module.

Adding a loop's operators is adding its module to `_LOOP_MODULES`; a name registered twice
raises at import time.
"""

from __future__ import annotations

from types import ModuleType

from cbaudit.mutate import (
    ops_calc,
    ops_loop2,
    ops_loop4,
    ops_loop5,
    ops_loop6,
    ops_loop7,
    ops_loop8,
    ops_loop9,
    ops_loop10,
    ops_loop11,
)
from cbaudit.mutate.operators import Operator, OperatorRegistry

_LOOP_MODULES: tuple[ModuleType, ...] = (
    ops_loop2,
    ops_loop4,
    ops_loop5,
    ops_loop6,
    ops_loop7,
    ops_loop8,
    ops_loop9,
    ops_loop10,
    ops_loop11,
    ops_calc,
)


def _collect() -> list[Operator]:
    out: list[Operator] = []
    for module in _LOOP_MODULES:
        out.extend(module.OPERATORS)
    return out


OPERATORS = OperatorRegistry(_collect())
