"""cbaudit's own schema pass answers exactly as `jsonschema` on every shipped schema."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any
from urllib.parse import urldefrag, urljoin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from repo_paths import EVIDENCE, REPO

from cbaudit.io import fast_schema
from cbaudit.io.fast_schema import Unsupported, compile_schema
from cbaudit.io.schemas import _own_validator, _registry, _schema_at, _uri, list_schemas

SCHEMAS = list_schemas()


@cache
def _reference(name: str) -> Draft202012Validator:
    return Draft202012Validator(_schema_at(_uri(name)), registry=_registry())


def _own(name: str) -> Any:
    check = _own_validator(name)
    assert check is not None, f"{name}: the own pass refused a shipped schema"
    return check


def test_every_shipped_schema_compiles() -> None:
    """Each shipped schema uses only keywords the own pass implements (so it is used), and its
    `$id` is the one `$ref`s are resolved by."""
    for name in SCHEMAS:
        _own(name)
        assert _schema_at(_uri(name))["$id"] == _uri(name)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "format": "date"},
        {"type": "number", "multipleOf": 0.5},
        {"patternProperties": {"^a": {"type": "integer"}}},
        {"unevaluatedProperties": False},
        {"$dynamicRef": "#meta"},
        {"$ref": "#anchor"},
        {"$ref": "other.schema.json"},
        {"$schema": "http://json-schema.org/draft-07/schema#"},
        {"type": "decimal"},
        {"minimum": "1"},
        {"items": {"dependentRequired": {"a": ["b"]}}},
    ],
    ids=json.dumps,
)
def test_what_it_does_not_implement_is_refused(schema: dict[str, Any]) -> None:
    """An unimplemented keyword or reference is Unsupported (the caller uses jsonschema)."""
    uri = "https://cbaudit.invalid/schemas/t.schema.json"
    with pytest.raises(Unsupported):
        compile_schema(uri, {uri: schema}.__getitem__)


def test_type_and_equality_follow_jsonschema() -> None:
    """`integer` takes 2.0 but not true; `const`/`enum`/`uniqueItems` tell true from 1."""
    uri = "https://cbaudit.invalid/schemas/t.schema.json"
    cases: list[tuple[dict[str, Any], Any]] = [
        ({"type": "integer"}, 2.0),
        ({"type": "integer"}, True),
        ({"type": "number"}, False),
        ({"const": 1}, True),
        ({"const": 1}, 1.0),
        ({"enum": [[0, 1]]}, [False, True]),
        ({"uniqueItems": True}, [1, True]),
        ({"uniqueItems": True}, [1, 1.0]),
        ({"uniqueItems": True}, [{"a": [1]}, {"a": [1.0]}]),
        ({"pattern": "b"}, "abc"),
        ({"maxLength": 1}, "é"),
    ]
    for schema, value in cases:
        own = compile_schema(uri, {uri: schema}.__getitem__)
        assert own(value) == Draft202012Validator(schema).is_valid(value), (schema, value)


# -- instances drawn from the schemas, then damaged ----------------------------------------

_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(),
    st.sampled_from([0.0, 1.0, 2.5, -1.5, 1e300]),
    st.text(max_size=6),
)
_ANY = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


def _resolve(base: str, ref: str) -> tuple[Any, str]:
    uri, fragment = urldefrag(urljoin(base, ref))
    node = _schema_at(uri)
    for token in filter(None, fragment.split("/")):
        node = node[token.replace("~1", "/").replace("~0", "~")]
    return node, uri


def _numbers(node: dict[str, Any], integer: bool) -> st.SearchStrategy[Any]:
    edges: list[Any] = []
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in node:
            edges += [node[key] - 1, node[key], node[key] + 1]
    base = st.integers(-10, 10**6) if integer else st.floats(-1e6, 1e6)
    extra = st.sampled_from([float(e) for e in edges] + edges) if edges else base
    return st.one_of(base, extra)


def _sized(node: dict[str, Any], low: str, high: str) -> tuple[int, int]:
    lo = max(0, node.get(low, 0) - 1)
    return lo, max(lo, node.get(high, lo + 3) + 1)


def _typed(node: dict[str, Any], kind: str, base: str, depth: int) -> st.SearchStrategy[Any]:
    if kind == "object":
        props = node.get("properties", {})
        required = [p for p in node.get("required", []) if p in props]
        optional = [p for p in props if p not in required]
        fixed = {p: _from(props[p], base, depth + 1) for p in required}
        maybe = {p: _from(props[p], base, depth + 1) for p in optional}
        extra = st.dictionaries(st.sampled_from(["x", "zz", "Unknown"]), _SCALAR, max_size=1)
        made = st.fixed_dictionaries(fixed, optional=maybe)
        return st.tuples(made, extra).map(lambda pair: {**pair[1], **pair[0]})
    if kind == "array":
        lo, hi = _sized(node, "minItems", "maxItems")
        prefix = [_from(p, base, depth + 1) for p in node.get("prefixItems", [])]
        items = _from(node.get("items", True), base, depth + 1)
        rest = st.lists(items, min_size=max(0, lo - len(prefix)), max_size=min(hi, 6))
        return st.tuples(st.tuples(*prefix), rest).map(lambda pair: [*pair[0], *pair[1]])
    if kind == "string":
        lo, hi = _sized(node, "minLength", "maxLength")
        plain = st.text(min_size=lo, max_size=min(hi, 12))
        if "pattern" in node:
            return st.one_of(st.from_regex(node["pattern"]), plain)
        return plain
    if kind in ("integer", "number"):
        return _numbers(node, kind == "integer")
    return {"boolean": st.booleans(), "null": st.none()}.get(kind, _ANY)


def _from(node: Any, base: str, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values near what `node` accepts (and some it refuses)."""
    if not isinstance(node, dict) or depth > 8:
        return _ANY
    options: list[st.SearchStrategy[Any]] = []
    if "$ref" in node:
        target, uri = _resolve(base, node["$ref"])
        options.append(st.deferred(lambda: _from(target, uri, depth + 1)))
    if "const" in node:
        options.append(st.just(copy.deepcopy(node["const"])))
    if "enum" in node:
        options.append(st.sampled_from(node["enum"]))
    for key in ("oneOf", "anyOf", "allOf"):
        for sub in node.get(key, []):
            options.append(_from(sub, base, depth + 1))
    if "if" in node:
        options.append(_from(node.get("then", True), base, depth + 1))
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if not kinds and "properties" in node:
        kinds = ["object"]
    options += [_typed(node, kind, base, depth) for kind in kinds]
    return st.one_of(options) if options else _ANY


@cache
def _instances(name: str) -> st.SearchStrategy[Any]:
    """The strategy for schema `name`, built once: Hypothesis validates a new strategy tree
    on its first draw, which for the larger schemas cost far more than drawing from it."""
    return _from(_schema_at(_uri(name)), _uri(name))


@st.composite
def _damaged(draw: st.DrawFn, name: str) -> Any:
    """An instance of schema `name`, with one node sometimes replaced or removed."""
    value = draw(_instances(name))
    if not draw(st.booleans()):
        return value
    path: list[Any] = []
    node = value
    while isinstance(node, dict | list) and node and draw(st.booleans()):
        key = draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
        path.append(key)
        node = node[key]
    if not path:
        return draw(_ANY)
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(_ANY)
    return value


@pytest.mark.parametrize("name", SCHEMAS)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_own_pass_equals_jsonschema(name: str, data: st.DataObject) -> None:
    """On instances drawn from each shipped schema, damaged or not, both give one answer."""
    instance = data.draw(_damaged(name))
    assert _own(name)(instance) == _reference(name).is_valid(instance)


def _documents() -> list[Any]:
    from cbaudit.io.loader import load_document

    found = []
    for folder in (EVIDENCE, REPO / "registry", REPO / "pinned"):
        for path in sorted(folder.rglob("*")):
            if path.suffix in (".json", ".yaml", ".yml") and path.stat().st_size < 200_000:
                try:
                    found.append(load_document(path, expect=None).data)
                except Exception:  # a deliberately broken negative fixture
                    continue
    return found


def _subtrees(value: Any, depth: int = 0) -> list[Any]:
    out = [value]
    if depth < 2 and isinstance(value, dict):
        for child in value.values():
            out += _subtrees(child, depth + 1)
    return out


def test_own_pass_equals_jsonschema_on_the_repository_documents() -> None:
    """Every document (and its top parts) the repository holds gets the same answer."""
    docs = [sub for doc in _documents() for sub in _subtrees(doc)]
    agreed = valid = 0
    for name in SCHEMAS:
        own, reference = _own(name), _reference(name)
        for doc in docs:
            answer = own(doc)
            assert answer == reference.is_valid(doc), name
            agreed += 1
            valid += answer
    assert valid > 100  # the corpus holds many valid documents, not only refusals
    assert agreed > 1000


def test_the_module_lists_exactly_what_it_applies() -> None:
    """Each applied keyword has an implementation, and nothing else is known."""
    assert set(fast_schema._KEYWORDS) == fast_schema._APPLIED
