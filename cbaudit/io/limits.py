"""Bounds on what the loader accepts: size, nesting depth and YAML alias expansion."""

from __future__ import annotations

import os
import re

from cbaudit.model import UsageError

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Largest input file (or JSONL record) read, in bytes, unless configured otherwise."""

DEFAULT_MAX_DEPTH = 256
"""Deepest nesting of arrays/objects accepted. cbaudit records are a handful of levels deep."""

DEFAULT_MAX_ALIAS_NODES = 100_000
"""Most nodes YAML aliases may add to a document when they are expanded."""

MAX_BYTES_ENV = "CBAUDIT_MAX_INPUT_BYTES"

_SIZE_RE = re.compile(r"^\s*([0-9]+)\s*([kKmMgG]?)(?:i?[bB])?\s*$")
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(text: str) -> int:
    """Bytes from `123`, `512k`, `64M`, `1GiB` (binary units). ValueError when malformed."""
    match = _SIZE_RE.match(text)
    if match is None:
        raise ValueError(text)
    value = int(match.group(1)) * _UNITS[match.group(2).lower()]
    if value <= 0:
        raise ValueError(text)
    return value


def resolve_max_bytes(explicit: int | None = None) -> int:
    """The input size cap: `explicit` if given, else $CBAUDIT_MAX_INPUT_BYTES, else 64 MiB."""
    if explicit is not None:
        if explicit <= 0:
            raise UsageError(f"max_bytes must be a positive number of bytes (got {explicit})")
        return explicit
    raw = os.environ.get(MAX_BYTES_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_MAX_BYTES
    try:
        return parse_size(raw)
    except ValueError:
        raise UsageError(
            f"{MAX_BYTES_ENV}={raw!r} is not a size; give a positive number of bytes "
            "such as 1048576, 512k or 64M"
        ) from None
