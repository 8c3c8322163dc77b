"""Findings: the one currency every check pays in."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

_CODE_RE = re.compile(r"^[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)+$")


class ExitCode(IntEnum):
    """Process exit codes; part of the documented interface."""

    OK = 0
    FINDINGS = 1
    UNUSABLE = 2
    INTERNAL = 3


class Severity(StrEnum):
    """How much a finding matters. Only errors fail a check."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


class EvidenceClass(StrEnum):
    """What a number is worth. A report never upgrades a class."""

    DERIVED = "derived"
    SYNTHETIC = "synthetic"
    SOURCE_REPORTED = "source_reported"
    MODELED = "modeled"
    MEASURED_CPU = "measured_cpu"
    MEASURED_GPU = "measured_gpu"


@dataclass(frozen=True, slots=True)
class Location:
    """Where a finding points: file, RFC 6901 JSON pointer, 1-based line and column."""

    file: str | None = None
    pointer: str | None = None
    line: int | None = None
    column: int | None = None

    def render(self) -> str:
        """`file:line:col#/pointer`, leaving out what is unknown."""
        out = self.file or "<input>"
        if self.line is not None:
            out += f":{self.line}"
            if self.column is not None:
                out += f":{self.column}"
        if self.pointer is not None:
            out += f"#{self.pointer or '/'}" if self.pointer == "" else f"#{self.pointer}"
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "pointer": self.pointer,
            "line": self.line,
            "column": self.column,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a check says: a stable dotted code, a message and a location."""

    code: str
    message: str
    severity: Severity = Severity.ERROR
    location: Location = field(default_factory=Location)

    def __post_init__(self) -> None:
        if not _CODE_RE.match(self.code):
            raise ValueError(f"finding code {self.code!r} is not an upper-case dotted code")

    def render(self) -> str:
        """One line: `location: severity CODE: message`."""
        return f"{self.location.render()}: {self.severity.value} {self.code}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "severity": self.severity.value,
            "location": self.location.to_dict(),
        }


def pointer_join(base: str, *parts: str | int) -> str:
    """Append reference tokens to an RFC 6901 pointer, escaping `~` and `/`."""
    out = base
    for part in parts:
        token = str(part).replace("~", "~0").replace("/", "~1")
        out += "/" + token
    return out


#: Maps a JSON pointer into a loaded document to a located position (file, line, column).
Locator = Callable[[str], Location]


def plain_locator(file: str) -> Locator:
    """A locator without line numbers: the file and the pointer."""
    return lambda pointer: Location(file=file, pointer=pointer)


class FindingSink:
    """Collects located findings for a checker; `catalog`, when given, lists the codes the
    checker may emit (anything else is a programming error, raised at once)."""

    def __init__(self, locate: Locator, catalog: Collection[str] | None = None) -> None:
        self.locate = locate
        self.catalog = catalog
        self.findings: list[Finding] = []

    def add(self, code: str, message: str, pointer: str) -> None:
        if self.catalog is not None and code not in self.catalog:
            raise KeyError(code)
        self.findings.append(Finding(code, message, location=self.locate(pointer)))
