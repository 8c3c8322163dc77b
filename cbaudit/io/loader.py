"""Strict loading with locations. (Provisional implementation: being hardened.)"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cbaudit.model import InputError, Location

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Document:
    """A parsed input: its data plus what is needed to locate a JSON pointer in it."""

    path: str
    data: Any
    text: str
    fmt: str  # "json" or "yaml"
    sha256: str
    line_offset: int = 0  # JSONL: (1-based line of this record) - 1

    def locate(self, pointer: str) -> Location:
        """Best-effort line/column of `pointer` in the source text."""
        return Location(file=self.path, pointer=pointer, line=self.line_offset + 1)


def load_text(
    text: str | bytes,
    *,
    name: str,
    fmt: str = "json",
    expect: type | None = dict,
    line_offset: int = 0,
) -> Document:
    raw = text.encode() if isinstance(text, str) else text
    decoded = raw.decode("utf-8")
    data = json.loads(decoded) if fmt == "json" else yaml.safe_load(decoded)
    if expect is not None and not isinstance(data, expect):
        raise InputError.at("LOAD.TOP_LEVEL_TYPE", "wrong top-level type", name, pointer="")
    return Document(name, data, decoded, fmt, hashlib.sha256(raw).hexdigest(), line_offset)


def load_document(
    path: str | Path,
    *,
    fmt: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    expect: type | None = dict,
    display: str | None = None,
) -> Document:
    p = Path(path)
    name = display if display is not None else str(path)
    if not p.exists():
        raise InputError.at("LOAD.NOT_FOUND", "no such file", name)
    kind = fmt or ("yaml" if p.suffix.lower() in (".yaml", ".yml") else "json")
    return load_text(p.read_bytes(), name=name, fmt=kind, expect=expect)


def iter_jsonl(
    path: str | Path, *, display: str | None = None, max_line_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[Document]:
    name = display if display is not None else str(path)
    with open(path, "rb") as fh:
        for i, line in enumerate(fh):
            if line.strip():
                yield load_text(line, name=name, fmt="json", line_offset=i)
