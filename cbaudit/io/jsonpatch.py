"""A small RFC 6902 JSON Patch applier (add, remove, replace, move, copy, test).

`apply_patch(doc, ops)` returns a new document and never mutates its input. A failing
operation raises `PatchError` carrying the index of the operation, so callers can locate it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any


class PatchError(ValueError):
    """An operation could not be applied; `index` is its position in the patch."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(f"patch operation {index}: {message}")
        self.index = index


def parse_pointer(pointer: str) -> list[str]:
    """Split an RFC 6901 pointer into unescaped reference tokens."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"pointer {pointer!r} must be empty or start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(container: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise ValueError(f"{token!r} is not an array index")
    idx = int(token)
    limit = len(container) + (1 if allow_end else 0)
    if idx >= limit:
        raise ValueError(f"array index {idx} out of range")
    return idx


def _parent(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise ValueError(f"member {token!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, allow_end=False)]
        else:
            raise ValueError(f"cannot descend into a scalar at {token!r}")
    return node


def resolve(doc: Any, pointer: str) -> Any:
    """The value at `pointer` (ValueError when it does not exist)."""
    tokens = parse_pointer(pointer)
    if not tokens:
        return doc
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ValueError(f"member {last!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, allow_end=False)]
    raise ValueError("cannot index into a scalar")


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = parse_pointer(pointer)
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise ValueError("cannot add into a scalar")
    return doc


def _remove(doc: Any, pointer: str) -> tuple[Any, Any]:
    tokens = parse_pointer(pointer)
    if not tokens:
        raise ValueError("cannot remove the whole document")
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ValueError(f"member {last!r} does not exist")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, allow_end=False))
    raise ValueError("cannot remove from a scalar")


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def apply_patch(doc: Any, ops: Sequence[Mapping[str, Any]]) -> Any:
    """Apply RFC 6902 `ops` to a deep copy of `doc` and return it."""
    out = copy.deepcopy(doc)
    for i, op in enumerate(ops):
        try:
            if not isinstance(op, Mapping):
                raise ValueError("operation is not an object")
            name = op.get("op")
            path = op.get("path")
            if not isinstance(path, str):
                raise ValueError("'path' must be a string")
            if name == "add":
                out = _add(out, path, copy.deepcopy(_value(op)))
            elif name == "remove":
                out, _ = _remove(out, path)
            elif name == "replace":
                resolve(out, path)
                out, _ = _remove(out, path) if parse_pointer(path) else (out, None)
                out = _add(out, path, copy.deepcopy(_value(op)))
            elif name in ("move", "copy"):
                source = op.get("from")
                if not isinstance(source, str):
                    raise ValueError("'from' must be a string")
                if name == "move":
                    if path.startswith(source + "/"):
                        raise ValueError("cannot move a value into its own child")
                    out, value = _remove(out, source)
                else:
                    value = copy.deepcopy(resolve(out, source))
                out = _add(out, path, value)
            elif name == "test":
                if not _json_equal(resolve(out, path), _value(op)):
                    raise ValueError(f"test failed at {path!r}")
            else:
                raise ValueError(f"unknown op {name!r}")
        except (ValueError, IndexError, KeyError, TypeError) as err:
            raise PatchError(i, str(err)) from err
    return out


def _value(op: Mapping[str, Any]) -> Any:
    if "value" not in op:
        raise ValueError("operation needs a 'value'")
    return op["value"]
