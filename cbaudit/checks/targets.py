"""Helpers for writing a mutation `Target`'s evaluator (`cbaudit.checks.interface.Target`).

An evaluator judges an in-memory mutant with its oracle and answers with a `Verdict`: the
error codes, and whether the shape was unusable. These helpers turn findings (or a schema
rejection) into that answer the same way for every loop.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from cbaudit.checks.interface import Verdict
from cbaudit.io.schemas import _fast_validator, validate
from cbaudit.model import Finding, Location, Severity


def error_codes(findings: Iterable[Finding]) -> frozenset[str]:
    """The codes of the error-severity findings."""
    return frozenset(f.code for f in findings if f.severity is Severity.ERROR)


def verdict(findings: Iterable[Finding]) -> Verdict:
    """A verdict from an oracle's findings; unusable when a schema finding is among them."""
    codes = error_codes(findings)
    return Verdict(codes, unusable=any(c.startswith("SCHEMA.") for c in codes))


def no_locate(pointer: str) -> Location:
    """The locator of an in-memory mutant: it has no file."""
    return Location(pointer=pointer)


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
_KIND_SUFFIXES = ("NotValid", "MultipleValid")
_KIND_NAMES = {"Constant": "CONST", "FalseSchema": "FALSE"}


def _kind_code(kind: Any) -> str:
    """`SCHEMA.<KEYWORD>` from a jsonschema-rs error kind (the io layer's spelling)."""
    name = type(kind).__name__
    for suffix in _KIND_SUFFIXES:
        if name.endswith(suffix) and name != suffix:
            name = name[: -len(suffix)]
    return "SCHEMA." + _KIND_NAMES.get(name, _CAMEL.sub("_", name).upper())


def schema_codes(data: Any, schema: str) -> frozenset[str]:
    """The schema finding codes of invalid `data`, fast (jsonschema-rs) when available."""
    fast = _fast_validator(schema)
    if fast is None:
        return frozenset(f.code for f in validate(data, schema))
    return frozenset(_kind_code(err.kind) for err in fast.iter_errors(data))
