"""The one JSON spelling cbaudit writes, so same inputs give byte-identical files."""

from __future__ import annotations

import json
from typing import Any


def dumps_canonical(value: Any) -> str:
    """Sorted keys, two-space indent, UTF-8 text, no NaN/Infinity, trailing newline."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
