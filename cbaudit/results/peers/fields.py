"""Reading a peer's result file strictly: every bad field is a located `COMPARE.PEER.*` error.

A peer format is detected by a few keys that only it writes; once detected, the file must be
well formed in that format, so a truncated array or a string where a number belongs exits 2
with the file, line and JSON pointer, instead of being skipped (fail closed).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from cbaudit.io.loader import Document
from cbaudit.model import Finding, InputError
from cbaudit.model.findings import pointer_join

#: Codes of unusable peer files (exit 2).
PEER_CODES = {
    "COMPARE.PEER.FIELD": "a field of a peer's result file is missing or has the wrong type",
    "COMPARE.PEER.LENGTH": "per-request arrays of a peer's result file differ in length",
    "COMPARE.PEER.VERSION": "a peer's result file declares a format version cbaudit cannot read",
    "COMPARE.PEER.EMPTY": "a peer's result file holds no benchmark to compare",
}


def fail(doc: Document, code: str, message: str, pointer: str) -> InputError:
    assert code in PEER_CODES, code
    return InputError(Finding(code, message, location=doc.locate(pointer)))


def field(doc: Document, node: Any, key: str, pointer: str, fmt: str) -> Any:
    """`node[key]`, or a located COMPARE.PEER.FIELD error naming the format."""
    if not isinstance(node, Mapping):
        raise fail(doc, "COMPARE.PEER.FIELD", f"{fmt}: expected an object", pointer)
    if key not in node:
        raise fail(doc, "COMPARE.PEER.FIELD", f"{fmt}: required field {key!r} is missing", pointer)
    return node[key]


def number(doc: Document, value: Any, pointer: str, fmt: str, *, allow_inf: bool = False) -> float:
    """A finite number (or, with `allow_inf`, the string "inf" or an infinite float)."""
    if allow_inf and (value == "inf" or (isinstance(value, float) and math.isinf(value))):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise fail(doc, "COMPARE.PEER.FIELD", f"{fmt}: expected a number, got {value!r}", pointer)
    return float(value)


def numbers(doc: Document, value: Any, pointer: str, fmt: str) -> list[float]:
    if not isinstance(value, list):
        raise fail(doc, "COMPARE.PEER.FIELD", f"{fmt}: expected a list of numbers", pointer)
    return [number(doc, v, pointer_join(pointer, i), fmt) for i, v in enumerate(value)]


def text(doc: Document, value: Any, pointer: str, fmt: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise fail(doc, "COMPARE.PEER.FIELD", f"{fmt}: expected a non-empty string", pointer)
    return value.strip()


def same_lengths(doc: Document, arrays: Mapping[str, Sequence[Any]], fmt: str) -> int:
    """The common length of per-request arrays, or a COMPARE.PEER.LENGTH error."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k}={n}" for k, n in sorted(lengths.items()))
        first = sorted(lengths)[0]
        raise fail(
            doc,
            "COMPARE.PEER.LENGTH",
            f"{fmt}: per-request arrays differ in length ({shown}); the file is truncated or"
            " was edited",
            "/" + first,
        )
    return next(iter(lengths.values()), 0)


def canon(value: Any) -> str | None:
    """A coordinate value as text (JSON for structures); None stays unreported."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(float(value)) if isinstance(value, float) else repr(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
