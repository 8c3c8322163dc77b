"""The formula audit: registry self-checks, worked examples, and the binding to an article."""

from __future__ import annotations

import difflib
import hashlib
from collections import Counter
from collections.abc import Mapping
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
from cbaudit.formulas.registry import Formula, Registry
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


class _RegistrySink:
    """Findings about a registry, each located by the pointer parts it is given."""

    def __init__(self, reg: Registry) -> None:
        self.reg = reg
        self.findings: list[Finding] = []

    def add(self, code: str, message: str, *parts: str | int) -> None:
        self.findings.append(
            Finding(code, message, Severity.ERROR, self.reg.locate(pointer_join("", *parts)))
        )


def registry_findings(reg: Registry) -> list[Finding]:
    """Self-checks that need no article: ids, names, plain forms, families, units, bindings."""
    sink = _RegistrySink(reg)
    if reg.normalization_id != NORMALIZATION_ID:
        sink.add(
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
        _check_names(f, i, ids, names, sink)
        _check_families(reg, f, i, sink)
        last_index = _check_bindings(f, i, claimed, last_index, sink)
    _check_unbound(reg, claimed, sink)
    return sink.findings


def _check_names(
    f: Formula, i: int, ids: Counter[str], names: Counter[str], sink: _RegistrySink
) -> None:
    """A formula's id and name are unique, and its plain-text form exists and is plain."""
    if ids[f.id] > 1:
        sink.add("FORMULA.ID.DUPLICATE", f"{f.id} is used by {ids[f.id]} formulas", "formulas", i)
    if names[f.name] > 1:
        sink.add("FORMULA.NAME.DUPLICATE", f"{f.id}: name {f.name} is not unique", "formulas", i)
    if not f.plain.strip():
        sink.add("FORMULA.PLAIN.MISSING", f"{f.id}: no plain-text form", "formulas", i, "plain")
    elif any(ch in f.plain for ch in _UNSAFE):
        sink.add(
            "FORMULA.PLAIN.UNSAFE",
            f"{f.id}: the plain-text form holds LaTeX or math delimiters (\\ or $)",
            "formulas",
            i,
            "plain",
        )


def _check_families(reg: Registry, f: Formula, i: int, sink: _RegistrySink) -> None:
    """A formula's family and unit family are declared, and it has its unit family's owner."""
    if f.family not in reg.families:
        sink.add(
            "FORMULA.FAMILY.UNDECLARED",
            f"{f.id}: family {f.family!r} is not declared under families",
            "formulas",
            i,
            "family",
        )
    unit = reg.unit_families.get(f.unit_family)
    if unit is None:
        sink.add(
            "FORMULA.UNIT.UNDECLARED",
            f"{f.id}: unit family {f.unit_family!r} is not declared under unit_families",
            "formulas",
            i,
            "unit_family",
        )
    elif unit.owner != f.owner:
        sink.add(
            "FORMULA.UNIT.OWNER_DRIFT",
            f"{f.id}: owner {f.owner} differs from {unit.owner}, the owner of unit family"
            f" {f.unit_family}",
            "formulas",
            i,
            "owner",
        )


def _check_bindings(
    f: Formula, i: int, claimed: dict[int, str], last_index: int, sink: _RegistrySink
) -> int:
    """A formula binds at least one display equation, each not yet bound and later than every
    equation bound before it. Records its equations in `claimed`; returns the new last index."""
    if not f.equations:
        sink.add("FORMULA.BINDING.NONE", f"{f.id}: binds no display equation", "formulas", i)
    for j, b in enumerate(f.equations):
        if b.index in claimed:
            sink.add(
                "FORMULA.BINDING.DUPLICATE",
                f"{f.id}: display equation {b.index} is already bound by {claimed[b.index]}",
                "formulas",
                i,
                "equations",
                j,
            )
        elif b.index <= last_index:
            sink.add(
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
    return last_index


def _check_unbound(reg: Registry, claimed: Mapping[int, str], sink: _RegistrySink) -> None:
    """An equation declared unbound is bound by no formula and says why it is unbound."""
    for k, u in enumerate(reg.unbound):
        if u.index in claimed:
            sink.add(
                "FORMULA.BINDING.DUPLICATE",
                f"display equation {u.index} is declared unbound but {claimed[u.index]} binds it",
                "unbound",
                k,
            )
        if not u.unbound_ok or not (u.reason or "").strip():
            sink.add(
                "FORMULA.UNBOUND.NO_REASON",
                f"display equation {u.index} is listed as unbound without unbound_ok: true and"
                " a reason",
                "unbound",
                k,
            )


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
    out = [
        Finding("FORMULA.ARTICLE.UNTERMINATED", message, location=Location(article.path, line=line))
        for line, message in article.problems
    ]
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
    out += _Alignment(reg, article, _expected(reg)).findings(metrics)
    return out, metrics


@dataclass(frozen=True, slots=True)
class _Alignment:
    """The registry's expected equations (in index order) aligned with the article's by hash."""

    reg: Registry
    article: Article
    expected: list[_Expected]

    def findings(self, metrics: dict[str, Any]) -> list[Finding]:
        """Walk the alignment: equal runs count as bound (in `metrics`), the rest differ."""
        matcher = difflib.SequenceMatcher(
            None, [e.sha256 for e in self.expected], list(self.article.hashes), autojunk=False
        )
        out: list[Finding] = []
        for tag, a0, a1, b0, b1 in matcher.get_opcodes():
            if tag == "equal":
                out += self._equal(a0, a1, b0, metrics)
            else:
                out += self._differ(tag, a0, a1, b0, b1)
        return out

    def _equal(self, a0: int, a1: int, b0: int, metrics: dict[str, Any]) -> list[Finding]:
        """Matching hashes: count each as bound or declared unbound; a moved index warns."""
        out: list[Finding] = []
        eqs = self.article.equations
        for off in range(a1 - a0):
            e, k = self.expected[a0 + off], b0 + off
            metrics["declared_unbound" if e.declared_unbound else "bound"] += 1
            if e.index != eqs[k].index:
                out.append(
                    Finding(
                        "FORMULA.EQUATION.RENUMBERED",
                        f"{e.label}: bound as display equation {e.index}, now equation"
                        f" {eqs[k].index} (line {eqs[k].line}); the text is unchanged,"
                        " update the index",
                        Severity.WARNING,
                        self.reg.locate(pointer_join(e.pointer, "index")),
                    )
                )
        return out

    def _differ(self, tag: str, a0: int, a1: int, b0: int, b1: int) -> list[Finding]:
        """A run that differs: replaced pairs changed, the registry's extra equations are
        missing from the article, the article's extra equations are unbound."""
        pairs = min(a1 - a0, b1 - b0) if tag == "replace" else 0
        out = [self._changed(self.expected[a0 + off], b0 + off) for off in range(pairs)]
        out += [self._missing(e) for e in self.expected[a0 + pairs : a1]]
        out += [self._unbound(k) for k in range(b0 + pairs, b1)]
        return out

    def _at_eq(self, k: int) -> Location:
        return Location(self.article.path, line=self.article.equations[k].line)

    def _changed(self, e: _Expected, k: int) -> Finding:
        eq = self.article.equations[k]
        return Finding(
            "FORMULA.EQUATION.CHANGED",
            f"{e.label}: display equation {eq.index} (line {eq.line}) changed;"
            f" its normalized sha256 is {self.article.hashes[k]}, the registry binds"
            f" {e.sha256} (index {e.index})",
            location=self._at_eq(k),
        )

    def _missing(self, e: _Expected) -> Finding:
        return Finding(
            "FORMULA.EQUATION.MISSING",
            f"{e.label}: its display equation (index {e.index}, sha256 {e.sha256}) is no"
            " longer in the article",
            location=self.reg.locate(e.pointer),
        )

    def _unbound(self, k: int) -> Finding:
        eq = self.article.equations[k]
        return Finding(
            "FORMULA.EQUATION.UNBOUND",
            f"display equation {eq.index} (line {eq.line}, sha256"
            f" {self.article.hashes[k]}) is bound by no formula and not declared unbound_ok",
            location=self._at_eq(k),
        )


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
