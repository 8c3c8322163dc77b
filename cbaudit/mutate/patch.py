"""JSON Patch (RFC 6902) applied by path copying: only the containers on a patched path are
copied, everything else is shared with the original document.

A mutant is one small patch over a large fixture, so a deep copy per mutant would dominate a
campaign. `apply_shared(doc, ops)` never mutates `doc`; the result shares untouched subtrees
with it, so callers must treat both as read-only. Failures raise
`cbaudit.io.jsonpatch.PatchError` (with the index of the failing operation), the same
error the case loaders use.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from cbaudit.io.jsonpatch import PatchError, parse_pointer

__all__ = ["PatchError", "apply_shared", "escape_token", "get_at", "pointer_of"]


def escape_token(token: str | int) -> str:
    """One RFC 6901 reference token, escaped."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer_of(*tokens: str | int) -> str:
    """A JSON pointer from raw tokens."""
    return "".join("/" + escape_token(t) for t in tokens)


def _index(node: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(node)
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise ValueError(f"{token!r} is not an array index")
    idx = int(token)
    if idx >= len(node) + (1 if allow_end else 0):
        raise ValueError(f"array index {idx} out of range")
    return idx


def get_at(doc: Any, pointer: str) -> Any:
    """The value at `pointer` (ValueError when absent)."""
    node = doc
    for token in parse_pointer(pointer):
        if isinstance(node, Mapping):
            if token not in node:
                raise ValueError(f"member {token!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, allow_end=False)]
        else:
            raise ValueError(f"cannot descend into a scalar at {token!r}")
    return node


def _copy_path(root: Any, tokens: list[str]) -> tuple[Any, Any]:
    """Copy the containers from the root down to the parent of the last token.

    Returns (new root, the copied parent container).
    """
    new_root = _shallow(root)
    node = new_root
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise ValueError(f"member {token!r} does not exist")
            child = _shallow(node[token])
            node[token] = child
        elif isinstance(node, list):
            i = _index(node, token, allow_end=False)
            child = _shallow(node[i])
            node[i] = child
        else:
            raise ValueError(f"cannot descend into a scalar at {token!r}")
        node = child
    return new_root, node


def _shallow(node: Any) -> Any:
    if isinstance(node, Mapping):
        return dict(node)
    if isinstance(node, list):
        return list(node)
    return node


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = parse_pointer(pointer)
    if not tokens:
        return value
    root, parent = _copy_path(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise ValueError("cannot add into a scalar")
    return root


def _remove(doc: Any, pointer: str) -> tuple[Any, Any]:
    tokens = parse_pointer(pointer)
    if not tokens:
        raise ValueError("cannot remove the whole document")
    root, parent = _copy_path(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ValueError(f"member {last!r} does not exist")
        return root, parent.pop(last)
    if isinstance(parent, list):
        return root, parent.pop(_index(parent, last, allow_end=False))
    raise ValueError("cannot remove from a scalar")


def _replace(doc: Any, pointer: str, value: Any) -> Any:
    tokens = parse_pointer(pointer)
    if not tokens:
        return value
    root, parent = _copy_path(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ValueError(f"member {last!r} does not exist")
        parent[last] = value
    elif isinstance(parent, list):
        parent[_index(parent, last, allow_end=False)] = value
    else:
        raise ValueError("cannot replace inside a scalar")
    return root


def apply_shared(doc: Any, ops: Sequence[Mapping[str, Any]]) -> Any:
    """Apply `ops` to `doc` without mutating it; untouched subtrees are shared.

    Values written by `add`/`replace` are deep-copied (they are small), so a patch can be
    applied many times without the mutants aliasing one another's new values.
    """
    out = doc
    for i, op in enumerate(ops):
        try:
            name = op.get("op")
            path = op.get("path")
            if not isinstance(path, str):
                raise ValueError("'path' must be a string")
            if name == "add":
                out = _add(out, path, copy.deepcopy(op["value"]))
            elif name == "remove":
                out, _ = _remove(out, path)
            elif name == "replace":
                out = _replace(out, path, copy.deepcopy(op["value"]))
            elif name in ("move", "copy"):
                source = op.get("from")
                if not isinstance(source, str):
                    raise ValueError("'from' must be a string")
                if name == "move":
                    if path.startswith(source + "/"):
                        raise ValueError("cannot move a value into its own child")
                    out, value = _remove(out, source)
                else:
                    value = copy.deepcopy(get_at(out, source))
                out = _add(out, path, value)
            elif name == "test":
                if get_at(out, path) != op["value"]:
                    raise ValueError(f"test failed at {path!r}")
            else:
                raise ValueError(f"unknown op {name!r}")
        except (ValueError, IndexError, KeyError, TypeError) as err:
            raise PatchError(i, str(err)) from err
    return out
