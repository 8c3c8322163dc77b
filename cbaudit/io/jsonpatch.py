"""A small RFC 6902 JSON Patch applier (add, remove, replace, move, copy, test).

`apply_patch(doc, ops)` returns a new document and never mutates its input. Operations copy
only the containers on the path they change (path copying); by default the input is deep-copied
first, so the result owns all of its data. With `share=True` the deep copy is skipped and the
result shares every untouched subtree with `doc`: that is what a mutation campaign wants (one
small patch over a large fixture, many times), and callers must then treat both documents as
read-only. A failing operation raises `PatchError` carrying the index of the operation, so
callers can locate it.
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


def _child(node: Any, token: str) -> Any:
    if isinstance(node, Mapping):
        if token not in node:
            raise ValueError(f"member {token!r} does not exist")
        return node[token]
    if isinstance(node, list):
        return node[_index(node, token, allow_end=False)]
    raise ValueError(f"cannot descend into a scalar at {token!r}")


def resolve(doc: Any, pointer: str) -> Any:
    """The value at `pointer` (ValueError when it does not exist)."""
    node = doc
    for token in parse_pointer(pointer):
        node = _child(node, token)
    return node


def _shallow(node: Any) -> Any:
    if isinstance(node, Mapping):
        return dict(node)
    if isinstance(node, list):
        return list(node)
    return node


def _copy_path(root: Any, tokens: list[str]) -> tuple[Any, Any]:
    """Copy the containers from the root down to the parent of the last token.

    Returns (new root, the copied parent container).
    """
    new_root = _shallow(root)
    node = new_root
    for token in tokens[:-1]:
        if isinstance(node, dict):
            child = _shallow(_child(node, token))
            node[token] = child
        elif isinstance(node, list):
            i = _index(node, token, allow_end=False)
            child = _shallow(node[i])
            node[i] = child
        else:
            raise ValueError(f"cannot descend into a scalar at {token!r}")
        node = child
    return new_root, node


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


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _value(op: Mapping[str, Any]) -> Any:
    if "value" not in op:
        raise ValueError("operation needs a 'value'")
    return op["value"]


def apply_patch(doc: Any, ops: Sequence[Mapping[str, Any]], *, share: bool = False) -> Any:
    """Apply RFC 6902 `ops` and return the new document; `doc` is never mutated.

    Values written by `add`/`replace`/`copy` are deep-copied, so a patch can be applied many
    times without the results aliasing one another's new values.
    """
    out = doc if share else copy.deepcopy(doc)
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
                out = _replace(out, path, copy.deepcopy(_value(op)))
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
