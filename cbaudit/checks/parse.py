"""Parse one check entry into its kind's frozen spec, refusing what the kind does not know.

The steps (docs/architecture.md): look the kind up (`GATE.CHECK.UNKNOWN_KIND`); validate the
entry against the kind's JSON Schema, with findings located at the key in its check list
(`GATE.SPEC.UNKNOWN_FIELD` with a "did you mean", `GATE.SPEC.MISSING_FIELD`,
`GATE.SPEC.INVALID`); confine every path-valued field (a property whose schema is one of the
path forms of `check-common.schema.json`) to the read root (`GATE.PATH.*`); build the spec;
run the kind's own `validate`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind
from cbaudit.checks.spec import CheckSpec, build_spec
from cbaudit.io.schemas import load_schema, schema_code, schema_errors
from cbaudit.model import Finding, InputError, Location
from cbaudit.model.findings import Locator, pointer_join

UNKNOWN_FIELD = "GATE.SPEC.UNKNOWN_FIELD"
MISSING_FIELD = "GATE.SPEC.MISSING_FIELD"
INVALID = "GATE.SPEC.INVALID"
UNKNOWN_KIND = "GATE.CHECK.UNKNOWN_KIND"

COMMON_SCHEMA = "check-common.schema.json"
SCHEMA_SUFFIX = ".schema.json"
#: The path forms of `check-common.schema.json#/$defs/<form>` (see `GateContext.check_path`).
PATH_FORMS = frozenset({"path", "source", "registry_path", "result_ref"})


def _where(locate: Locator | None, file: str | None, pointer: str) -> Location:
    return locate(pointer) if locate is not None else Location(file=file, pointer=pointer)


def _unknown(err: Any, pointer: str, locate: Locator | None, file: str | None) -> list[Finding]:
    known = sorted(err.schema.get("properties", {}))
    out = []
    for key in sorted(str(k) for k in err.instance if k not in err.schema.get("properties", {})):
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
        at = pointer_join(pointer, key)
        out.append(
            Finding(
                UNKNOWN_FIELD, f"unknown field {key!r}{hint}", location=_where(locate, file, at)
            )
        )
    return out


def schema_findings(
    data: Any,
    schema: str | Mapping[str, Any],
    *,
    pointer: str = "",
    locate: Locator | None = None,
    file: str | None = None,
    entry: bool = True,
) -> list[Finding]:
    """Located findings of `data` against `schema` (empty when valid).

    An unknown key is always `GATE.SPEC.UNKNOWN_FIELD`, one finding per key at the key. For a
    check entry (`entry`) a missing key is `GATE.SPEC.MISSING_FIELD` and any other violation
    `GATE.SPEC.INVALID`; for a bundle manifest or check list they keep their `SCHEMA.<KEYWORD>`.
    """
    findings: list[Finding] = []
    for err in schema_errors(data, schema):
        at = pointer_join(pointer, *err.absolute_path)
        keyword = str(err.validator)
        if keyword == "additionalProperties" and isinstance(err.instance, Mapping):
            findings += _unknown(err, at, locate, file)
            continue
        message = err.message if len(err.message) <= 300 else err.message[:297] + "..."
        if keyword == "required" and isinstance(err.instance, Mapping):
            code = MISSING_FIELD if entry else schema_code(keyword)
            where = _where(locate, file, at)
            for name in err.validator_value:
                if name not in err.instance:
                    loc = Location(where.file, pointer_join(at, name), where.line, where.column)
                    findings.append(Finding(code, f"missing field {name!r}", location=loc))
            continue
        code = INVALID if entry else schema_code(keyword)
        findings.append(Finding(code, message, location=_where(locate, file, at)))
    return _unique(findings)


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[str, str, str | None]] = set()
    out = []
    for f in findings:
        key = (f.code, f.message, f.location.pointer)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def path_fields(schema: Mapping[str, Any], data: Any) -> Iterator[tuple[str, Any, str]]:
    """(pointer suffix, value, form) of every path-valued field of `data`, found by walking
    `schema` (properties, items, additionalProperties, and `$defs` references: local, or into
    another shipped schema such as `check-common.schema.json`)."""

    def walk(
        node: Any, value: Any, at: str, doc: Mapping[str, Any]
    ) -> Iterator[tuple[str, Any, str]]:
        if not isinstance(node, Mapping):
            return
        ref = node.get("$ref")
        if isinstance(ref, str):
            target, _, fragment = ref.partition("#")
            name = fragment.rsplit("/", 1)[-1]
            into = load_schema(target.removesuffix(SCHEMA_SUFFIX)) if target else doc
            if into.get("$id", "").endswith(COMMON_SCHEMA) and name in PATH_FORMS:
                yield at, value, name
            elif fragment.startswith("/$defs/"):
                yield from walk(into.get("$defs", {}).get(name), value, at, into)
            return
        props = node.get("properties", {})
        if isinstance(value, Mapping):
            for key, sub in props.items():
                if key in value:
                    yield from walk(sub, value[key], pointer_join(at, key), doc)
            extra = node.get("additionalProperties")
            if isinstance(extra, Mapping):
                for key in value:
                    if key not in props:
                        yield from walk(extra, value[key], pointer_join(at, str(key)), doc)
        items = node.get("items")
        if isinstance(value, list) and isinstance(items, Mapping):
            for i, item in enumerate(value):
                yield from walk(items, item, pointer_join(at, i), doc)

    yield from walk(schema, data, "", schema)


def path_findings(
    schema: Mapping[str, Any], entry: Mapping[str, Any], ctx: GateContext
) -> list[Finding]:
    """`GATE.PATH.*` for every path-valued field of `entry` that leaves the read root."""
    findings: list[Finding] = []
    for at, value, form in path_fields(schema, entry):
        try:
            ctx.check_path(value, form, at.lstrip("/"))
        except InputError as err:
            findings += err.findings
    return findings


@dataclass(frozen=True)
class Parsed:
    """The outcome of parsing one entry: its kind and spec, or the findings that refuse it."""

    kind: CheckKind[Any] | None
    spec: CheckSpec | None
    findings: tuple[Finding, ...] = ()


def parse_entry(entry: Mapping[str, Any], ctx: GateContext) -> Parsed:
    """Parse the entry declared at `ctx.pointer` with `ctx.kinds` (see the module docstring)."""
    name = entry.get("kind")
    kind = ctx.kinds.get(name) if isinstance(name, str) else None
    if kind is None:
        known = ", ".join(sorted(ctx.kinds))
        finding = Finding(
            UNKNOWN_KIND,
            f"unknown check kind {name!r} (known: {known})",
            location=ctx.location("/kind"),
        )
        return Parsed(None, None, (finding,))
    schema = kind.schema_document()
    findings = schema_findings(
        entry,
        kind.schema_name or schema,
        pointer=ctx.pointer,
        locate=ctx.locate,
        file=ctx.manifest,
    )
    if not findings:
        findings = path_findings(schema, entry, ctx)
    if findings:
        return Parsed(kind, None, tuple(findings))
    try:
        spec = kind.build(entry, ctx) if kind.build else build_spec(kind.spec_type, entry)
        if kind.validate is not None:
            findings = kind.validate(spec, ctx)
    except InputError as err:
        return Parsed(kind, None, err.findings)
    return Parsed(kind, None if findings else spec, tuple(findings))


def spec_of(kind: CheckKind[Any], entry: Mapping[str, Any], ctx: GateContext) -> Any:
    """`kind`'s spec for `entry`, or InputError with the findings that refuse it (for callers
    that build one check by hand: tests, `cbaudit mutate`)."""
    scoped = ctx if kind.name in ctx.kinds else _with_kind(ctx, kind)
    parsed = parse_entry({"kind": kind.name, **entry}, scoped)
    if parsed.spec is None:
        raise InputError(parsed.findings)
    return parsed.spec


def _with_kind(ctx: GateContext, kind: CheckKind[Any]) -> GateContext:
    from dataclasses import replace

    return replace(ctx, kinds={**ctx.kinds, kind.name: kind})


def run_entry(kind: CheckKind[Any], entry: Mapping[str, Any], ctx: GateContext) -> list[Any]:
    """Parse one hand-written entry (InputError when refused) and run it: the kind's results
    as `run` returns them, without the gate's labels, bindings or read log."""
    return list(kind.run(spec_of(kind, entry, ctx), ctx))
