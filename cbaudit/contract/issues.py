"""The unlocated form of a contract finding, produced on the hot path and located later."""

from __future__ import annotations

from typing import Literal, NamedTuple

RecordKind = Literal["workload", "state", "plan", "result"]


class Issue(NamedTuple):
    """A contract violation: its code, which record it is in, a pointer inside that record."""

    code: str
    record: RecordKind
    pointer: str  # RFC 6901, relative to the record's root
    message: str
