"""Patches for mutants: pointer helpers and JSON Patch applied by path copying.

A mutant is one small patch over a large fixture, so a deep copy per mutant would dominate a
campaign. `apply_shared(doc, ops)` is `cbaudit.io.jsonpatch.apply_patch(..., share=True)`: it
never mutates `doc`, and the result shares untouched subtrees with it, so callers must treat
both as read-only. Failures raise `cbaudit.io.jsonpatch.PatchError` (with the index of the
failing operation), the same error the case loaders use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cbaudit.io.jsonpatch import PatchError, apply_patch, resolve

__all__ = ["PatchError", "apply_shared", "escape_token", "get_at", "pointer_of"]


def escape_token(token: str | int) -> str:
    """One RFC 6901 reference token, escaped."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer_of(*tokens: str | int) -> str:
    """A JSON pointer from raw tokens."""
    return "".join("/" + escape_token(t) for t in tokens)


def get_at(doc: Any, pointer: str) -> Any:
    """The value at `pointer` (ValueError when absent)."""
    return resolve(doc, pointer)


def apply_shared(doc: Any, ops: Sequence[Mapping[str, Any]]) -> Any:
    """Apply `ops` to `doc` without mutating it; untouched subtrees are shared."""
    return apply_patch(doc, ops, share=True)
