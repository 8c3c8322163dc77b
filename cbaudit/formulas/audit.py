"""The formula audit: registry self-checks, worked examples, and the binding to an article."""

from __future__ import annotations

import difflib
import hashlib
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from cbaudit.formulas.evaluator import (
    EvalError,
    Value,
    definition_sides,
    evaluate,
    show,
    split_top,
    to_value,
)
from cbaudit.formulas.extract import DisplayEquation, extract_equations
from cbaudit.formulas.normalize import NORMALIZATION_ID, RULES, equation_hash
from cbaudit.formulas.registry import Registry
from cbaudit.io.limits import resolve_max_bytes
from cbaudit.io.loader import read_bounded
from cbaudit.model import CheckResult, CheckStatus, Finding, InputError, Location, Severity
from cbaudit.model.findings import pointer_join

_UNSAFE = ("\\", "$")


@dataclass(frozen=True, slots=True)
class Article:
    """An article's display equations, with their hashes."""

    path: str
    sha256: str
    equations: tuple[DisplayEquation, ...]
    hashes: tuple[str, ...]
    problems: tuple[tuple[int, str], ...]


def read_article(path: Path, display: str | None = None) -> Article:
    """Read an article and extract its display equations; InputError when unreadable."""
    name = display if display is not None else str(path)
    if not path.exists():
        raise InputError.at("FORMULA.ARTICLE.NOT_FOUND", "no such article file", name)
    raw = read_bounded(path, name, resolve_max_bytes())  # a directory, unreadable, too large
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError.at(
            "FORMULA.ARTICLE.ENCODING", f"the article is not UTF-8 ({err.reason})", name
        ) from err
    equations, problems = extract_equations(text)
    return Article(
        path=name,
        sha256=hashlib.sha256(raw).hexdigest(),
        equations=tuple(equations),
        hashes=tuple(equation_hash(e.body, mathml=e.is_mathml) for e in equations),
        problems=tuple((p.line, p.message) for p in problems),
    )


def registry_findings(reg: Registry) -> list[Finding]:
    """Self-checks that need no article: ids, names, plain forms, families, units, bindings."""
    out: list[Finding] = []

    def add(code: str, message: str, *parts: str | int, sev: Severity = Severity.ERROR) -> None:
        out.append(Finding(code, message, sev, reg.locate(pointer_join("", *parts))))

    if reg.normalization_id != NORMALIZATION_ID:
        add(
            "FORMULA.NORMALIZATION.UNSUPPORTED",
            f"normalization {reg.normalization_id!r} is not supported (this cbaudit uses"
            f" {NORMALIZATION_ID!r})",
            "normalization",
            "id",
        )
    ids = Counter(f.id for f in reg.formulas)
    names = Counter(f.name for f in reg.formulas)
    claimed: dict[int, str] = {}
    last_index = 0
    for i, f in enumerate(reg.formulas):
        if ids[f.id] > 1:
            add("FORMULA.ID.DUPLICATE", f"{f.id} is used by {ids[f.id]} formulas", "formulas", i)
        if names[f.name] > 1:
            add("FORMULA.NAME.DUPLICATE", f"{f.id}: name {f.name} is not unique", "formulas", i)
        if not f.plain.strip():
            add("FORMULA.PLAIN.MISSING", f"{f.id}: no plain-text form", "formulas", i, "plain")
        elif any(ch in f.plain for ch in _UNSAFE):
            add(
                "FORMULA.PLAIN.UNSAFE",
                f"{f.id}: the plain-text form holds LaTeX or math delimiters (\\ or $)",
                "formulas",
                i,
                "plain",
            )
        if f.family not in reg.families:
            add(
                "FORMULA.FAMILY.UNDECLARED",
                f"{f.id}: family {f.family!r} is not declared under families",
                "formulas",
                i,
                "family",
            )
        unit = reg.unit_families.get(f.unit_family)
        if unit is None:
            add(
                "FORMULA.UNIT.UNDECLARED",
                f"{f.id}: unit family {f.unit_family!r} is not declared under unit_families",
                "formulas",
                i,
                "unit_family",
            )
        elif unit.owner != f.owner:
            add(
                "FORMULA.UNIT.OWNER_DRIFT",
                f"{f.id}: owner {f.owner} differs from {unit.owner}, the owner of unit family"
                f" {f.unit_family}",
                "formulas",
                i,
                "owner",
            )
        if not f.equations:
            add("FORMULA.BINDING.NONE", f"{f.id}: binds no display equation", "formulas", i)
        for j, b in enumerate(f.equations):
            if b.index in claimed:
                add(
                    "FORMULA.BINDING.DUPLICATE",
                    f"{f.id}: display equation {b.index} is already bound by {claimed[b.index]}",
                    "formulas",
                    i,
                    "equations",
                    j,
                )
            elif b.index <= last_index:
                add(
                    "FORMULA.BINDING.ORDER",
                    f"{f.id}: binds display equation {b.index} after equation {last_index};"
                    " formulas bind equations in article order",
                    "formulas",
                    i,
                    "equations",
                    j,
                )
            claimed.setdefault(b.index, f.id)
            last_index = max(last_index, b.index)
    for k, u in enumerate(reg.unbound):
        if u.index in claimed:
            add(
                "FORMULA.BINDING.DUPLICATE",
                f"display equation {u.index} is declared unbound but {claimed[u.index]} binds it",
                "unbound",
                k,
            )
        if not u.unbound_ok or not (u.reason or "").strip():
            add(
                "FORMULA.UNBOUND.NO_REASON",
                f"display equation {u.index} is listed as unbound without unbound_ok: true and"
                " a reason",
                "unbound",
                k,
            )
    return out


def _matches(got: Value, want: Value, tolerance: float | None) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and got == want
    if isinstance(want, list) or isinstance(got, list):
        if not (isinstance(want, list) and isinstance(got, list)) or len(want) != len(got):
            return False
        return all(_matches(g, w, tolerance) for g, w in zip(got, want, strict=True))
    if tolerance is None and isinstance(got, Fraction) and isinstance(want, Fraction):
        return got == want
    slack = tolerance if tolerance is not None else 1e-9 * max(1.0, abs(float(want)))
    return abs(float(got) - float(want)) <= slack


def example_findings(reg: Registry) -> tuple[list[Finding], dict[str, Any]]:
    """Evaluate every worked example on its formula's plain-text form."""
    out: list[Finding] = []
    total = 0
    with_examples = 0
    for i, f in enumerate(reg.formulas):
        if f.examples:
            with_examples += 1
        for k, ex in enumerate(f.examples):
            total += 1
            loc = reg.locate(pointer_join("", "formulas", i, "examples", k))
            label = f"{f.id} example {k + 1}" + (f" ({ex.target})" if ex.target else "")
            try:
                if not f.plain.strip():
                    raise EvalError("the formula has no plain-text form")
                env = {name: to_value(v) for name, v in ex.bindings.items()}
                want = to_value(ex.expect)
                if ex.target:
                    values = [evaluate(side, env) for side in definition_sides(f.plain, ex.target)]
                else:
                    values = [evaluate(s, env) for s in split_top(f.plain, ";")]
            except EvalError as err:
                out.append(Finding("FORMULA.EXAMPLE.INVALID", f"{label}: {err}", location=loc))
                continue
            for value in values:
                if not _matches(value, want, ex.tolerance):
                    tol = f" (tolerance {ex.tolerance})" if ex.tolerance is not None else ""
                    out.append(
                        Finding(
                            "FORMULA.EXAMPLE.WRONG",
                            f"{label}: {f.plain!r} evaluates to {show(value)}, the example"
                            f" expects {show(want)}{tol}",
                            location=loc,
                        )
                    )
                    break
    return out, {"examples": total, "formulas_with_examples": with_examples}


@dataclass(frozen=True, slots=True)
class _Expected:
    index: int
    sha256: str
    label: str
    pointer: str
    declared_unbound: bool = False


def _expected(reg: Registry) -> list[_Expected]:
    out: list[_Expected] = []
    for i, f in enumerate(reg.formulas):
        for j, b in enumerate(f.equations):
            ptr = pointer_join("", "formulas", i, "equations", j)
            out.append(_Expected(b.index, b.sha256, f"{f.id} ({f.name})", ptr))
    for k, u in enumerate(reg.unbound):
        if u.unbound_ok and (u.reason or "").strip():
            ptr = pointer_join("", "unbound", k)
            out.append(_Expected(u.index, u.sha256, "a declared-unbound equation", ptr, True))
    return sorted(out, key=lambda e: e.index)


def binding_findings(reg: Registry, article: Article) -> tuple[list[Finding], dict[str, Any]]:
    """Align the registry's bindings with the article's display equations by hash."""
    out: list[Finding] = []
    for line, message in article.problems:
        out.append(
            Finding(
                "FORMULA.ARTICLE.UNTERMINATED", message, location=Location(article.path, line=line)
            )
        )
    metrics: dict[str, Any] = {
        "display_equations": len(article.equations),
        "bound": 0,
        "declared_unbound": 0,
    }
    if reg.normalization_id != NORMALIZATION_ID:
        return out, metrics
    if reg.article_sha256 is not None and reg.article_sha256 != article.sha256:
        out.append(
            Finding(
                "FORMULA.ARTICLE.CHANGED",
                f"the article's sha256 is {article.sha256}; the registry was made against"
                f" {reg.article_sha256} (informative: the equation bindings decide)",
                Severity.NOTE,
                Location(article.path),
            )
        )
    expected = _expected(reg)
    eqs = article.equations

    def at_eq(k: int) -> Location:
        return Location(article.path, line=eqs[k].line)

    def unbound(k: int) -> None:
        out.append(
            Finding(
                "FORMULA.EQUATION.UNBOUND",
                f"display equation {eqs[k].index} (line {eqs[k].line}, sha256"
                f" {article.hashes[k]}) is bound by no formula and not declared unbound_ok",
                location=at_eq(k),
            )
        )

    def missing(e: _Expected) -> None:
        out.append(
            Finding(
                "FORMULA.EQUATION.MISSING",
                f"{e.label}: its display equation (index {e.index}, sha256 {e.sha256}) is no"
                " longer in the article",
                location=reg.locate(e.pointer),
            )
        )

    matcher = difflib.SequenceMatcher(
        None, [e.sha256 for e in expected], list(article.hashes), autojunk=False
    )
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            for off in range(a1 - a0):
                e, k = expected[a0 + off], b0 + off
                if e.declared_unbound:
                    metrics["declared_unbound"] += 1
                else:
                    metrics["bound"] += 1
                if e.index != eqs[k].index:
                    out.append(
                        Finding(
                            "FORMULA.EQUATION.RENUMBERED",
                            f"{e.label}: bound as display equation {e.index}, now equation"
                            f" {eqs[k].index} (line {eqs[k].line}); the text is unchanged,"
                            " update the index",
                            Severity.WARNING,
                            reg.locate(pointer_join(e.pointer, "index")),
                        )
                    )
            continue
        pairs = min(a1 - a0, b1 - b0) if tag == "replace" else 0
        for off in range(pairs):
            e, k = expected[a0 + off], b0 + off
            out.append(
                Finding(
                    "FORMULA.EQUATION.CHANGED",
                    f"{e.label}: display equation {eqs[k].index} (line {eqs[k].line}) changed;"
                    f" its normalized sha256 is {article.hashes[k]}, the registry binds"
                    f" {e.sha256} (index {e.index})",
                    location=at_eq(k),
                )
            )
        for e in expected[a0 + pairs : a1]:
            missing(e)
        for k in range(b0 + pairs, b1):
            unbound(k)
    return out, metrics


def audit(
    reg: Registry, article: Article | None, not_run_reason: str | None = None
) -> list[CheckResult]:
    """Registry self-checks, examples, and (with an article) the binding check."""
    examples, ex_metrics = example_findings(reg)
    subject = reg.document.path
    results = [
        CheckResult(
            "formula.registry",
            subject,
            tuple(registry_findings(reg)),
            {
                "formulas": len(reg.formulas),
                "families": len(reg.families),
                "unit_families": len(reg.unit_families),
                "declared_unbound": len(reg.unbound),
                "normalization": reg.normalization_id,
            },
        ),
        CheckResult("formula.examples", subject, tuple(examples), ex_metrics),
    ]
    if article is None:
        results.append(
            CheckResult(
                "formula.binding",
                subject,
                status=CheckStatus.NOT_RUN,
                reason=not_run_reason or "no article given; the equation bindings were not checked",
            )
        )
    else:
        found, metrics = binding_findings(reg, article)
        results.append(CheckResult("formula.binding", article.path, tuple(found), metrics))
    return results


def skeleton(article: Article) -> dict[str, Any]:
    """A registry skeleton: one formula per display equation, to be filled in by hand."""
    return {
        "schema_version": 1,
        "normalization": {"id": NORMALIZATION_ID, "rules": list(RULES)},
        "article": {
            "name": Path(article.path).name,
            "sha256": article.sha256,
            "display_equations": len(article.equations),
        },
        "families": {"unassigned": {"title": "Unassigned: group the formulas into families"}},
        "unit_families": {
            "unassigned": {"owner": "unassigned", "description": "Unassigned: declare units"}
        },
        "formulas": [
            {
                "id": f"F{eq.index:02d}",
                "name": f"formula_{eq.index:02d}",
                "family": "unassigned",
                "plain": "",
                "unit_family": "unassigned",
                "owner": "unassigned",
                "equations": [{"index": eq.index, "sha256": h}],
            }
            for eq, h in zip(article.equations, article.hashes, strict=True)
        ],
        "unbound": [],
    }
