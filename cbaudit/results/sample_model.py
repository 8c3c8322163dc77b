"""The sample set every comparable input is adapted into, and what an adapter is.

Kept apart from `samples` (the adapter registry) so that adapters living in other modules
(`cbaudit.results.peers`) can build sample sets without importing the registry that lists them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cbaudit.io.loader import Document
from cbaudit.model import EvidenceClass, InputError


@dataclass(frozen=True, slots=True)
class Point:
    """The samples of one point (a grid point, a load level, a request class...)."""

    key: str
    metric: str
    unit: str
    samples: tuple[float, ...]
    reported: str | None = None  # the value as the source wrote it (source-reported only)


@dataclass(frozen=True)
class SampleSet:
    """One result, ready to be compared."""

    label: str  # how reports name it: `file#id`
    file: str
    pointer: str  # where the result sits in its file
    adapter: str
    coordinates: Mapping[str, str | None]  # the flat comparison set
    evidence_class: EvidenceClass
    points: Mapping[str, Point]
    manifest: Mapping[str, str | None] | None = None  # checked manifest fields (measured files)
    source_reported: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)


Builder = Callable[[Document], list[SampleSet]]


@dataclass(frozen=True, slots=True)
class Adapter:
    """Turns one input type into sample sets."""

    name: str
    detect: Callable[[Any], bool]
    build: Builder


def finite(value: Any, file: str, pointer: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError.at(
            "COMPARE.SAMPLE.TYPE", "a sample must be a number", file, pointer=pointer
        )
    out = float(value)
    if not math.isfinite(out):
        raise InputError.at("COMPARE.SAMPLE.TYPE", "a sample must be finite", file, pointer=pointer)
    return out


def evidence(value: Any, file: str, pointer: str) -> EvidenceClass:
    try:
        return EvidenceClass(str(value))
    except ValueError:
        known = ", ".join(e.value for e in EvidenceClass)
        raise InputError.at(
            "COMPARE.EVIDENCE_CLASS.UNKNOWN",
            f"evidence class {value!r} is not one of {known}",
            file,
            pointer=pointer,
        ) from None
