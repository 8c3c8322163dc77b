"""Integers written as floats: `-0.0`, `2.0` or `1e3` where a schema requires an integer.

JSON Schema calls any number with a zero fractional part an integer, so `jsonschema` (and
cbaudit's own first pass, which agrees with it) accepts `"request_generation": -0.0` and the
contract then compares it equal to generation 0. An auditor should not read identities,
versions and token counts from floats: `float_integer_findings` names every float whose
position the schema types `integer` (and not `number`), with the code `SCHEMA.INTEGER.FLOAT`.

`strictly_valid` is the cheap way in: the schema check with integers read strictly (one pass,
as fast as the ordinary one), so a document that passes it needs nothing else. For one that
does not, `float_integer_findings` walks the document for floats with a zero fractional part
and follows the schema along each one's path (`properties`, `additionalProperties`, `items`,
`prefixItems`, `$ref`, `allOf`, `anyOf`, `oneOf`), remembered per schema and path shape. A
path the walk cannot follow counts as integer-only: an unknown position fails closed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any
from urllib.parse import urldefrag, urljoin

from cbaudit.io.fast_schema import Unsupported, _resolve_pointer, compile_schema
from cbaudit.io.schemas import SCHEMA_BASE, _schema_at, is_valid
from cbaudit.model import Finding, Location
from cbaudit.model.findings import Locator, pointer_join

CODE = "SCHEMA.INTEGER.FLOAT"
_SUFFIX = ".schema.json"

Path = tuple[str | int, ...]
Shape = tuple[str | None, ...]  # a path with list indices replaced by None


def integral_floats(data: Any) -> list[tuple[Path, float]]:
    """Every float in `data` with a zero fractional part (-0.0, 2.0, 1e3), with its path, in
    document order."""
    out: list[tuple[Path, float]] = []
    path: list[str | int] = []

    def visit(key: str | int, value: Any) -> None:
        if type(value) is float:
            if value.is_integer():
                out.append(((*path, key), value))
        elif isinstance(value, dict | list):
            path.append(key)
            walk(value)
            path.pop()

    def walk(node: dict[str, Any] | list[Any]) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                visit(k, v)
        else:
            for i, v in enumerate(node):
                visit(i, v)

    if type(data) is float:
        return [((), data)] if data.is_integer() else []
    if isinstance(data, dict | list):
        walk(data)
    return out


@cache
def _strict(name: str) -> Callable[[Any], bool] | None:
    """Schema `name` compiled with strict integers (None when the own compiler cannot)."""
    try:
        return compile_schema(SCHEMA_BASE + name + _SUFFIX, _schema_at, strict_integers=True)
    except Unsupported:
        return None


def strictly_valid(data: Any, name: str) -> bool:
    """Whether `data` satisfies schema `name` with every integer written as an integer."""
    check = _strict(name)
    if check is not None:
        try:
            return check(data)
        except RecursionError:
            pass
    return is_valid(data, name) and not float_integer_findings(data, name)


def float_integer_findings(
    data: Any,
    name: str,
    *,
    file: str | None = None,
    pointer_prefix: str = "",
    locate: Locator | None = None,
) -> list[Finding]:
    """`SCHEMA.INTEGER.FLOAT` for each float where schema `name` requires an integer.

    Call it on a document the schema accepts; its findings are then the only reason to refuse
    it. Findings are in document order.
    """
    out: list[Finding] = []
    for path, value in integral_floats(data):
        shape = tuple(None if isinstance(p, int) else p for p in path)
        if _allows_float(name, shape):
            continue
        pointer = pointer_join(pointer_prefix, *path)
        loc = locate(pointer) if locate is not None else Location(file=file, pointer=pointer)
        field = next((p for p in reversed(path) if isinstance(p, str)), "value")
        out.append(
            Finding(
                CODE,
                f"{value!r} is a float; {field} must be written as an integer"
                " (a float such as -0.0 or 2.0 never stands for one)",
                location=loc,
            )
        )
    return out


# --------------------------------------------------------------------------- the schema walk

_Node = tuple[Any, str]  # a (sub)schema and the base URI its $refs resolve against


@cache
def _allows_float(name: str, shape: Shape) -> bool:
    """Whether schema `name` lets a non-integer number sit at paths of this shape."""
    uri = SCHEMA_BASE + name + _SUFFIX
    try:
        nodes = _expand([(_schema_at(uri), uri)])
        for step in shape:
            nodes = _expand([child for node in nodes for child in _children(node, step)])
        return any(_number_allowed(schema) for schema, _ in nodes)
    except (KeyError, IndexError, TypeError, ValueError, Unsupported):
        return False  # a position the walk cannot follow: integer-only, fail closed


def _deref(node: _Node) -> _Node:
    schema, base = node
    if isinstance(schema, dict) and "$id" in schema:
        base = urljoin(base, schema["$id"])
    return schema, base


def _expand(nodes: list[_Node]) -> list[_Node]:
    """Follow `$ref` and the combinators until only plain subschemas are left."""
    out: list[_Node] = []
    todo = [_deref(n) for n in nodes]
    seen = 0
    while todo:
        seen += 1
        if seen > 1000:
            raise Unsupported("a schema that expands without end")
        schema, base = todo.pop()
        if not isinstance(schema, dict):
            continue  # true/false schemas say nothing about numbers
        out.append((schema, base))
        if "$ref" in schema:
            target = urljoin(base, schema["$ref"])
            uri, fragment = urldefrag(target)
            todo.append(_deref((_resolve_pointer(_schema_at(uri), fragment), uri)))
        for keyword in ("allOf", "anyOf", "oneOf"):
            todo.extend(_deref((sub, base)) for sub in schema.get(keyword, ()))
    return out


def _children(node: _Node, step: str | None) -> list[_Node]:
    """The subschemas that apply to member `step` (None: an array item) of `node`."""
    schema, base = node
    if step is None:
        subs = list(schema.get("prefixItems", ()))
        if "items" in schema:
            subs.append(schema["items"])
        return [(sub, base) for sub in subs]
    props = schema.get("properties", {})
    if step in props:
        return [(props[step], base)]
    extra = schema.get("additionalProperties")
    return [(extra, base)] if isinstance(extra, dict) else []


def _number_allowed(schema: dict[str, Any]) -> bool:
    """A plain subschema whose `type` admits a non-integer number."""
    kind = schema.get("type")
    if kind is None:
        return False  # no type here; the alternatives expanded beside it decide
    kinds = kind if isinstance(kind, list) else [kind]
    return "number" in kinds
