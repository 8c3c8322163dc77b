"""The schema registry: JSON Schemas (draft 2020-12) shipped with cbaudit.

Schemas live in the top-level `schemas/` directory of the repository and inside the wheel as
`cbaudit/_schemas`. Each file is `<name>.schema.json` with `$id` `<BASE><name>.schema.json`, so
schemas can `$ref` one another by file name.

Validation takes a fast first pass (cbaudit's own `cbaudit.io.fast_schema` for one document;
`jsonschema-rs`, when installed, for the many records of a trace or the mutants of a campaign)
and asks `jsonschema` for detailed, located errors only when something is invalid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from cbaudit.model import Finding, InputError, Location
from cbaudit.model.findings import Locator, pointer_join

SCHEMA_BASE = "https://cbaudit.invalid/schemas/"
_SUFFIX = ".schema.json"


@cache
def schema_root() -> Path:
    """Where the schemas are: inside an installed wheel, else the source checkout (looked up
    once: a schema look-up is made for every `$ref`)."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_schemas"
    if packaged.is_dir():
        return packaged
    return here.parent / "schemas"


def list_schemas() -> list[str]:
    """Names of every shipped schema, sorted."""
    return sorted(p.name[: -len(_SUFFIX)] for p in schema_root().glob(f"*{_SUFFIX}"))


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The schema called `name` (e.g. `iteration-plan`)."""
    path = schema_root() / f"{name}{_SUFFIX}"
    if not path.is_file():
        known = ", ".join(list_schemas())
        raise InputError.at(
            "SCHEMA.UNKNOWN", f"no schema named {name!r} (known: {known})", str(path)
        )
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _schema_at(uri: str) -> dict[str, Any]:
    """The shipped schema whose `$id` is `uri` (KeyError for any other uri)."""
    if not (uri.startswith(SCHEMA_BASE) and uri.endswith(_SUFFIX)):
        raise KeyError(uri)
    name = uri[len(SCHEMA_BASE) : -len(_SUFFIX)]
    if not _is_shipped(name):
        raise KeyError(uri)
    return load_schema(name)


@cache
def _is_shipped(name: str) -> bool:
    return (schema_root() / f"{name}{_SUFFIX}").is_file()


def _uri(name: str) -> str:
    return SCHEMA_BASE + name + _SUFFIX


@cache
def _registry() -> Any:
    from referencing import Registry, Resource

    resources = []
    for name in list_schemas():
        schema = load_schema(name)
        resources.append((schema.get("$id", _uri(name)), Resource.from_contents(schema)))
    return Registry().with_resources(resources)


@cache
def _detailed_validator(name: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(name), registry=_registry())


@cache
def _fast_validator(name: str) -> Any:
    """jsonschema-rs (the optional extra `fast`), when it is installed and takes the schema."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    try:
        return jsonschema_rs.Draft202012Validator(load_schema(name), retriever=_schema_at)
    except Exception:  # an unsupported feature: fall back to the other validators
        return None


@cache
def _own_validator(name: str) -> Callable[[Any], bool] | None:
    """cbaudit's own first pass (`cbaudit.io.fast_schema`); None for a schema it cannot take."""
    from cbaudit.io.fast_schema import Unsupported, compile_schema

    try:
        load_schema(name)
        return compile_schema(_uri(name), _schema_at)
    except Unsupported:
        return None


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def schema_code(keyword: str) -> str:
    """`SCHEMA.<KEYWORD>` for a JSON Schema keyword (`additionalProperties` ->
    `SCHEMA.ADDITIONAL_PROPERTIES`)."""
    return "SCHEMA." + _CAMEL.sub("_", keyword).upper().replace("$", "")


def is_valid(data: Any, name: str) -> bool:
    """Schema-only yes/no for one document, as cheap to start as possible.

    cbaudit's own pass (compiled in a few milliseconds) when it takes the schema, else
    jsonschema-rs when installed, else `jsonschema` itself (also for a document too deep for
    the own pass). For many documents of one schema use `validator_for_many`.
    """
    own = _own_validator(name)
    if own is not None:
        try:
            return own(data)
        except RecursionError:
            pass
    fast = _fast_validator(name)
    if fast is not None:
        return bool(fast.is_valid(data))
    return bool(_detailed_validator(name).is_valid(data))


def validator_for_many(name: str) -> Callable[[Any], bool]:
    """A yes/no check for many documents of one schema (a trace's records, a campaign's
    mutants): jsonschema-rs when installed (slower to load, far faster per document), else
    `is_valid`. Both answer as `jsonschema` does."""
    fast = _fast_validator(name)
    if fast is not None:
        check: Callable[[Any], bool] = fast.is_valid
        return check
    return lambda data: is_valid(data, name)


def schema_errors(data: Any, schema: str | Mapping[str, Any]) -> list[Any]:
    """`jsonschema`'s detailed errors of `data`, sorted by place (empty when it is valid).

    `schema` is a shipped schema's name (a fast yes/no first) or a schema document that may
    `$ref` the shipped schemas by their `$id`.
    """
    if isinstance(schema, str):
        if is_valid(data, schema):
            return []
        validator = _detailed_validator(schema)
    else:
        from jsonschema import Draft202012Validator

        # without an $id of its own, relative references resolve beside the shipped schemas
        document = {"$id": SCHEMA_BASE + "inline.schema.json", **schema}
        validator = Draft202012Validator(document, registry=_registry())
    return sorted(
        validator.iter_errors(data),
        key=lambda e: ([str(p) for p in e.absolute_path], str(e.validator)),
    )


def validate(
    data: Any,
    name: str,
    *,
    file: str | None = None,
    pointer_prefix: str = "",
    locate: Locator | None = None,
) -> list[Finding]:
    """Located schema findings for `data` against schema `name` (empty when valid).

    Codes are `SCHEMA.<KEYWORD>` (`SCHEMA.REQUIRED`, `SCHEMA.TYPE`, ...). For `required`
    the pointer names the missing member.
    """
    if is_valid(data, name):
        return []
    findings: list[Finding] = []
    required_seen: dict[str, int] = {}
    errors = sorted(
        _detailed_validator(name).iter_errors(data),
        key=lambda e: ([str(p) for p in e.absolute_path], str(e.validator)),
    )
    for err in errors:
        path = list(err.absolute_path)
        pointer = pointer_join(pointer_prefix, *path)
        if err.validator == "required" and isinstance(err.validator_value, list):
            missing = [
                m
                for m in err.validator_value
                if isinstance(err.instance, dict) and m not in err.instance
            ]
            # jsonschema yields one error per missing member, in the order of `required`.
            k = required_seen.get(pointer, 0)
            required_seen[pointer] = k + 1
            target = pointer_join(pointer, missing[k]) if k < len(missing) else pointer
            loc = locate(pointer) if locate else Location(file=file, pointer=pointer)
            loc = Location(file=loc.file, pointer=target, line=loc.line, column=loc.column)
        else:
            loc = locate(pointer) if locate else Location(file=file, pointer=pointer)
        message = err.message
        if len(message) > 300:
            message = message[:297] + "..."
        findings.append(
            Finding(code=schema_code(str(err.validator)), message=message, location=loc)
        )
    return findings
