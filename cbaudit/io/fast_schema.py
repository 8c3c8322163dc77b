"""A fast yes/no JSON Schema check for the draft 2020-12 keywords cbaudit's schemas use.

`cbaudit.io.schemas` asks this module first whether a document is valid (unless the optional
`jsonschema-rs` is installed), and asks `jsonschema` for located errors only when it is not.
Importing `jsonschema` costs more than a whole small command may take (issue 13), and a
plain install has no `jsonschema-rs`, so this pass is what keeps `validate-plan` fast there.

A schema is compiled once into plain closures. The keywords are those the shipped schemas
use, with `jsonschema`'s exact semantics (`integer` accepts 2.0, `true` is not `1` for
`const`, `enum` and `uniqueItems`, `pattern` is `re.search`): a hypothesis test holds this
module equal to `jsonschema` on every shipped schema. A keyword it does not implement (say
`format`, `multipleOf`, `unevaluatedProperties`, `$dynamicRef`) makes `compile_schema` raise
`Unsupported`, and the caller asks `jsonschema` instead: nothing unknown passes silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence, Sized
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

Check = Callable[[Any], bool]
Retrieve = Callable[[str], Any]
"""uri (no fragment) -> the schema document with that `$id` (KeyError when unknown)."""

DRAFT = "https://json-schema.org/draft/2020-12/schema"

_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"}
)
_APPLIED = frozenset(
    {
        "type", "const", "enum", "$ref",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "pattern",
        "properties", "required", "additionalProperties", "propertyNames",
        "minProperties", "maxProperties",
        "items", "prefixItems", "contains", "minItems", "maxItems", "uniqueItems",
        "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    }
)  # fmt: skip
KNOWN = _ANNOTATIONS | _APPLIED


class Unsupported(Exception):
    """The schema uses something this module does not implement; use `jsonschema`."""


# -- jsonschema's notions of type and equality -------------------------------------------


def _is_integer(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


_TYPES: dict[str, Check] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "integer": _is_integer,
    "number": _is_number,
}
#: `strict_integers`: an integer is an int, never a float with a zero fraction (-0.0, 2.0).
_STRICT_TYPES: dict[str, Check] = {
    **_TYPES,
    "integer": lambda x: isinstance(x, int) and not isinstance(x, bool),
}


def equal(one: Any, two: Any) -> bool:
    """JSON equality as `jsonschema` has it: `True` is not `1`, `1.0` is `1`."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return one.keys() == two.keys() and all(equal(one[k], two[k]) for k in one)
    if isinstance(one, bool) or isinstance(two, bool):
        return one is two
    return bool(one == two)


def _unique(items: list[Any]) -> bool:
    return all(not equal(items[i], items[j]) for i in range(len(items)) for j in range(i))


# -- compiling ------------------------------------------------------------------------------


def _true(x: Any) -> bool:
    return True


def _false(x: Any) -> bool:
    return False


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _true
    if len(checks) == 1:
        return checks[0]

    def check(x: Any) -> bool:
        for c in checks:  # noqa: SIM110 - the hot path; all() over a generator is slower
            if not c(x):
                return False
        return True

    return check


def _resolve_pointer(document: Any, fragment: str) -> Any:
    if fragment in ("", "/"):
        return document if fragment == "" else document[""]
    if not fragment.startswith("/"):
        raise Unsupported(f"anchor reference #{fragment}")
    node = document
    for raw in fragment[1:].split("/"):
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


class _Compiler:
    """Compiles schemas reachable from one root; `$ref` targets are compiled once each."""

    def __init__(self, retrieve: Retrieve, types: dict[str, Check] = _TYPES) -> None:
        self._retrieve = retrieve
        self._table: dict[str, Check] = {}
        self.types = types

    def ref(self, base: str, ref: str) -> Check:
        target = urljoin(base, ref)
        uri, fragment = urldefrag(target)
        key = f"{uri}#{fragment}"
        if key not in self._table:
            try:
                document = self._retrieve(uri)
                schema = _resolve_pointer(document, fragment)
            except (KeyError, IndexError, ValueError, TypeError) as err:
                raise Unsupported(f"unresolvable $ref {ref!r}") from err
            self._table[key] = _false  # a placeholder while a recursive $ref compiles
            self._table[key] = self.compile(schema, uri)
        table = self._table
        return lambda x: table[key](x)

    def compile(self, schema: Any, base: str) -> Check:
        if schema is True:
            return _true
        if schema is False:
            return _false
        if not isinstance(schema, dict):
            raise Unsupported(f"a schema must be an object or a boolean, not {schema!r}")
        unknown = set(schema) - KNOWN
        if unknown:
            raise Unsupported(f"keywords {sorted(unknown)}")
        if schema.get("$schema", DRAFT) != DRAFT:
            raise Unsupported(f"$schema {schema['$schema']!r}")
        if "$id" in schema:
            base = urljoin(base, schema["$id"])
        checks: list[Check] = []
        for keyword in _ORDER:
            if keyword in schema:
                made = _KEYWORDS[keyword](self, schema, base)
                if made is not None:
                    checks.append(made)
        return _all(checks)


Make = Callable[[_Compiler, dict[str, Any], str], Check | None]


def _type(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    names = s["type"] if isinstance(s["type"], list) else [s["type"]]
    try:
        tests = [c.types[n] for n in names]
    except (KeyError, TypeError) as err:
        raise Unsupported(f"type {s['type']!r}") from err
    if len(tests) == 1:
        return tests[0]
    return lambda x: any(t(x) for t in tests)


def _const(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    value = s["const"]
    return lambda x: equal(x, value)


def _enum(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    values = list(s["enum"])
    return lambda x: any(equal(v, x) for v in values)


def _bound(keyword: str, test: Callable[[Any, Any], bool]) -> Make:
    def make(c: _Compiler, s: dict[str, Any], base: str) -> Check:
        limit = s[keyword]
        if not _is_number(limit):
            raise Unsupported(f"{keyword} {limit!r}")
        return lambda x: not _is_number(x) or test(x, limit)

    return make


def _length(keyword: str, kind: type[Sized], test: Callable[[int, int], bool]) -> Make:
    def make(c: _Compiler, s: dict[str, Any], base: str) -> Check:
        limit = s[keyword]
        if not _is_integer(limit):
            raise Unsupported(f"{keyword} {limit!r}")
        return lambda x: not isinstance(x, kind) or test(len(x), limit)

    return make


def _pattern(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    try:
        search = re.compile(s["pattern"]).search
    except (re.error, TypeError) as err:
        raise Unsupported(f"pattern {s['pattern']!r}") from err
    return lambda x: not isinstance(x, str) or search(x) is not None


def _properties(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    props = {name: c.compile(sub, base) for name, sub in s["properties"].items()}

    def check(x: Any) -> bool:
        if isinstance(x, dict):
            for name, value in x.items():
                test = props.get(name)
                if test is not None and not test(value):
                    return False
        return True

    return check


def _required(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    names = list(s["required"])
    return lambda x: not isinstance(x, dict) or all(n in x for n in names)


def _additional(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    declared = set(s.get("properties", {}))
    test = c.compile(s["additionalProperties"], base)
    if test is _true:
        return _true
    if test is _false:
        return lambda x: not isinstance(x, dict) or declared.issuperset(x)

    def check(x: Any) -> bool:
        if isinstance(x, dict):
            for k, v in x.items():
                if k not in declared and not test(v):
                    return False
        return True

    return check


def _property_names(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    test = c.compile(s["propertyNames"], base)
    return lambda x: not isinstance(x, dict) or all(test(k) for k in x)


def _items(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    skip = len(s.get("prefixItems", []))
    test = c.compile(s["items"], base)

    def check(x: Any) -> bool:
        if isinstance(x, list):
            for v in x[skip:] if skip else x:
                if not test(v):
                    return False
        return True

    return check


def _prefix_items(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    tests = [c.compile(sub, base) for sub in s["prefixItems"]]
    return lambda x: not isinstance(x, list) or all(t(v) for t, v in zip(tests, x, strict=False))


def _contains(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    test = c.compile(s["contains"], base)
    return lambda x: not isinstance(x, list) or any(test(v) for v in x)


def _unique_items(c: _Compiler, s: dict[str, Any], base: str) -> Check | None:
    if not s["uniqueItems"]:
        return None
    return lambda x: not isinstance(x, list) or _unique(x)


def _all_of(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    return _all([c.compile(sub, base) for sub in s["allOf"]])


def _any_of(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    tests = [c.compile(sub, base) for sub in s["anyOf"]]
    return lambda x: any(t(x) for t in tests)


def _one_of(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    tests = [c.compile(sub, base) for sub in s["oneOf"]]
    return lambda x: sum(1 for t in tests if t(x)) == 1


def _not(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    test = c.compile(s["not"], base)
    return lambda x: not test(x)


def _if(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    condition = c.compile(s["if"], base)
    then = c.compile(s.get("then", True), base)
    otherwise = c.compile(s.get("else", True), base)
    return lambda x: then(x) if condition(x) else otherwise(x)


def _ref(c: _Compiler, s: dict[str, Any], base: str) -> Check:
    if not isinstance(s["$ref"], str):
        raise Unsupported(f"$ref {s['$ref']!r}")
    return c.ref(base, s["$ref"])


def _ignored(c: _Compiler, s: dict[str, Any], base: str) -> None:
    """`then`/`else` are read by `if`; without an `if` they assert nothing."""
    return None


_KEYWORDS: dict[str, Make] = {
    "type": _type,
    "const": _const,
    "enum": _enum,
    "minimum": _bound("minimum", lambda x, m: x >= m),
    "maximum": _bound("maximum", lambda x, m: x <= m),
    "exclusiveMinimum": _bound("exclusiveMinimum", lambda x, m: x > m),
    "exclusiveMaximum": _bound("exclusiveMaximum", lambda x, m: x < m),
    "minLength": _length("minLength", str, lambda n, m: n >= m),
    "maxLength": _length("maxLength", str, lambda n, m: n <= m),
    "pattern": _pattern,
    "required": _required,
    "minProperties": _length("minProperties", dict, lambda n, m: n >= m),
    "maxProperties": _length("maxProperties", dict, lambda n, m: n <= m),
    "properties": _properties,
    "additionalProperties": _additional,
    "propertyNames": _property_names,
    "minItems": _length("minItems", list, lambda n, m: n >= m),
    "maxItems": _length("maxItems", list, lambda n, m: n <= m),
    "uniqueItems": _unique_items,
    "prefixItems": _prefix_items,
    "items": _items,
    "contains": _contains,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
    "then": _ignored,
    "else": _ignored,
    "$ref": _ref,
}
# Cheap type and shape tests first, so most invalid documents fail before the costly ones.
_ORDER = tuple(_KEYWORDS)  # the order written above
assert set(_KEYWORDS) == _APPLIED


def compile_schema(uri: str, retrieve: Retrieve, *, strict_integers: bool = False) -> Check:
    """A yes/no check for the schema with `$id` `uri`; `Unsupported` when it cannot.

    With `strict_integers` a float never counts as an `integer` (cbaudit's own reading, not
    `jsonschema`'s: see `cbaudit.io.integers`).
    """
    types = _STRICT_TYPES if strict_integers else _TYPES
    return _Compiler(retrieve, types).ref(uri, "")
