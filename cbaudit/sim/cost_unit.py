"""The `unit` cost model: every iteration takes one tick, whatever its shape (synthetic).

On a tick clock the replay clock then counts iterations exactly (the article's cut numbers);
on a millisecond clock one iteration lasts `tick_ms` milliseconds (default 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.model import EvidenceClass, InputError
from cbaudit.sim.step import StepShape


class UnitCostModel:
    """One tick per iteration."""

    is_unit = True

    def __init__(self, tick_ms: float = 1.0) -> None:
        self.tick_ms = tick_ms

    @property
    def evidence_class(self) -> EvidenceClass:
        return EvidenceClass.SYNTHETIC

    def step_time_ms(self, step: StepShape) -> float:
        del step
        return self.tick_ms

    def describe(self) -> dict[str, Any]:
        return {
            "name": "unit",
            "evidence_class": self.evidence_class.value,
            "tick_ms": self.tick_ms,
            "definition": "every iteration lasts one tick, independent of its shape",
        }


def from_options(options: Mapping[str, Any], src: Any = None) -> UnitCostModel:
    """Factory for the cost-model registry; the only option is `tick_ms` (> 0)."""
    extra = sorted(set(options) - {"tick_ms"})
    file = getattr(src, "file", None)
    pointer = getattr(src, "pointer", None)
    if extra:
        raise InputError.at(
            "COST.UNKNOWN_OPTION",
            f"unit cost model takes only tick_ms, not {extra}",
            file,
            pointer=pointer,
        )
    tick = options.get("tick_ms", 1.0)
    if isinstance(tick, bool) or not isinstance(tick, int | float) or tick <= 0:
        raise InputError.at(
            "COST.BAD_OPTION", f"tick_ms must be > 0, got {tick!r}", file, pointer=pointer
        )
    return UnitCostModel(float(tick))
