"""formula-audit on small articles: drift by formula id, registry self-checks, --init."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from _formula_docs import ARTICLE, EQ1, EQ2, registry_data, write_article, write_registry

from cbaudit.formulas.audit import (
    _Alignment,
    _check_bindings,
    _check_families,
    _check_names,
    _check_unbound,
    _expected,
    _RegistrySink,
    read_article,
)
from cbaudit.formulas.registry import Registry, load_registry


@pytest.fixture
def docs(tmp_path: Path) -> tuple[Path, Path]:
    """A small article and a registry bound to it."""
    return write_article(tmp_path / "a.md"), write_registry(tmp_path / "r.yaml", registry_data())


def _run(cli, reg: Path, art: Path | None) -> tuple[int, dict[str, Any]]:
    args = ["formula-audit", reg, "--format", "json"]
    if art is not None:
        args += ["--article", art]
    r = cli(*args)
    return r.code, json.loads(r.out) if r.out else {}


def _codes(report: dict[str, Any]) -> list[str]:
    return sorted(f["code"] for r in report["results"] for f in r["findings"])


def _with(tmp_path: Path, edit) -> Path:
    data = registry_data()
    edit(data)
    return write_registry(tmp_path / "edited.yaml", data)


def test_bound_registry_passes(cli, docs) -> None:
    """A registry matching its article passes with every equation accounted for."""
    art, reg = docs
    code, report = _run(cli, reg, art)
    assert code == 0 and _codes(report) == []
    binding = report["results"][2]["metrics"]
    assert binding == {"display_equations": 3, "bound": 2, "declared_unbound": 1}


def test_changed_equation_names_the_formula(cli, tmp_path: Path, docs) -> None:
    """An edited display equation gives FORMULA.EQUATION.CHANGED for its formula, at its line."""
    _, reg = docs
    art = write_article(tmp_path / "b.md", ARTICLE.replace(EQ2, EQ2.replace("lceil", "lfloor")))
    code, report = _run(cli, reg, art)
    assert code == 1 and _codes(report) == ["FORMULA.EQUATION.CHANGED"]
    finding = report["results"][2]["findings"][0]
    assert finding["message"].startswith("F02 (chunk_count)")
    assert finding["location"]["line"] == 9


def test_spacing_only_edit_is_not_drift(cli, tmp_path: Path, docs) -> None:
    """Whitespace and thin-space edits do not change the normalized hash."""
    _, reg = docs
    art = write_article(tmp_path / "b.md", ARTICLE.replace(EQ1, EQ1.replace("}{", "} \\, {")))
    assert _run(cli, reg, art)[0] == 0


def test_inserted_equation_is_unbound_and_others_renumbered(cli, tmp_path: Path, docs) -> None:
    """A new equation is FORMULA.EQUATION.UNBOUND; later bindings are renumbered, not changed."""
    _, reg = docs
    art = write_article(tmp_path / "b.md", "$$z=0$$\n" + ARTICLE)
    code, report = _run(cli, reg, art)
    assert code == 1
    assert _codes(report) == ["FORMULA.EQUATION.RENUMBERED"] * 3 + ["FORMULA.EQUATION.UNBOUND"]


def test_removed_equation_is_missing(cli, tmp_path: Path, docs) -> None:
    """A bound equation that disappeared is FORMULA.EQUATION.MISSING for its formula."""
    _, reg = docs
    art = write_article(tmp_path / "b.md", ARTICLE.replace(f"$${EQ1}$$", ""))
    code, report = _run(cli, reg, art)
    assert "FORMULA.EQUATION.MISSING" in _codes(report) and code == 1
    assert "F01" in report["results"][2]["findings"][0]["message"]


def test_unbound_without_declaration(cli, tmp_path: Path, docs) -> None:
    """Dropping the unbound_ok declaration makes the equation FORMULA.EQUATION.UNBOUND."""
    art, _ = docs
    reg = _with(tmp_path, lambda d: d.pop("unbound"))
    code, report = _run(cli, reg, art)
    assert code == 1 and _codes(report) == ["FORMULA.EQUATION.UNBOUND"]


def test_unbound_needs_a_reason(cli, tmp_path: Path, docs) -> None:
    """unbound_ok without a reason is FORMULA.UNBOUND.NO_REASON and does not count."""
    art, _ = docs
    reg = _with(tmp_path, lambda d: d["unbound"][0].pop("reason"))
    _, report = _run(cli, reg, art)
    assert _codes(report) == ["FORMULA.EQUATION.UNBOUND", "FORMULA.UNBOUND.NO_REASON"]


def _edit_formula(key: str, value: Any, index: int = 0):
    def edit(d: dict[str, Any]) -> None:
        d["formulas"][index][key] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (_edit_formula("plain", "  "), "FORMULA.PLAIN.MISSING"),
        (_edit_formula("plain", "U_slot = \\frac{a}{b}"), "FORMULA.PLAIN.UNSAFE"),
        (_edit_formula("family", "undeclared"), "FORMULA.FAMILY.UNDECLARED"),
        (_edit_formula("unit_family", "furlongs"), "FORMULA.UNIT.UNDECLARED"),
        (_edit_formula("owner", "M5.3"), "FORMULA.UNIT.OWNER_DRIFT"),
        (_edit_formula("unit_family", "kv_bytes"), "FORMULA.UNIT.OWNER_DRIFT"),
        (_edit_formula("id", "F01", 1), "FORMULA.ID.DUPLICATE"),
        (_edit_formula("name", "slot_utilization", 1), "FORMULA.NAME.DUPLICATE"),
        (_edit_formula("equations", []), "FORMULA.BINDING.NONE"),
        (lambda d: d["normalization"].update(id="other/9"), "FORMULA.NORMALIZATION.UNSUPPORTED"),
    ],
)
def test_registry_self_checks(cli, tmp_path: Path, docs, edit, code: str) -> None:
    """Each registry defect gives its own finding code (exit 1), with or without the article."""
    reg = _with(tmp_path, edit)
    rc, report = _run(cli, reg, None)
    assert rc == 1
    assert code in _codes(report)


def test_binding_order_and_duplicates(cli, tmp_path: Path, docs) -> None:
    """Bindings out of article order or bound twice are findings."""
    _art, _ = docs

    def swap(d: dict[str, Any]) -> None:
        a, b = d["formulas"][0]["equations"], d["formulas"][1]["equations"]
        d["formulas"][0]["equations"], d["formulas"][1]["equations"] = b, a

    assert "FORMULA.BINDING.ORDER" in _codes(_run(cli, _with(tmp_path, swap), None)[1])

    def twice(d: dict[str, Any]) -> None:
        d["formulas"][1]["equations"] = list(d["formulas"][0]["equations"])

    assert "FORMULA.BINDING.DUPLICATE" in _codes(_run(cli, _with(tmp_path, twice), None)[1])


def test_wrong_and_invalid_examples(cli, tmp_path: Path, docs) -> None:
    """A wrong expected value is FORMULA.EXAMPLE.WRONG; an unevaluable one is INVALID."""

    def edit(d: dict[str, Any]) -> None:
        d["formulas"][0]["examples"][0]["expect"] = 0.6
        d["formulas"][1]["examples"][0]["bindings"] = {"S": 10}

    code, report = _run(cli, _with(tmp_path, edit), None)
    assert code == 1
    assert _codes(report) == ["FORMULA.EXAMPLE.INVALID", "FORMULA.EXAMPLE.WRONG"]
    wrong = next(f for r in report["results"] for f in r["findings"] if "WRONG" in f["code"])
    assert "5/8 (0.625)" in wrong["message"]
    assert wrong["location"]["pointer"] == "/formulas/0/examples/0"


def test_tolerance_allows_rounded_expectations(cli, tmp_path: Path, docs) -> None:
    """A rounded expected value passes only within its declared tolerance."""

    def edit(d: dict[str, Any]) -> None:
        d["formulas"][0]["examples"][0].update(bindings={"B": 2, "G_r": [11]}, expect=0.5)

    assert _run(cli, _with(tmp_path, edit), None)[0] == 0

    def rounded(d: dict[str, Any]) -> None:
        d["formulas"][0]["examples"][0].update(bindings={"B": 2, "G_r": [3, 6]}, expect=0.75)
        d["formulas"][0]["examples"][0]["tolerance"] = 0.001

    assert _run(cli, _with(tmp_path, rounded), None)[0] == 0
    d = registry_data()
    d["formulas"][0]["examples"][0].update(bindings={"B": 2, "G_r": [7, 6]}, expect=0.929)
    assert _run(cli, write_registry(tmp_path / "t.yaml", d), None)[0] == 1
    d["formulas"][0]["examples"][0]["tolerance"] = 0.0005
    assert _run(cli, write_registry(tmp_path / "t.yaml", d), None)[0] == 0


def test_without_article_binding_is_not_run(cli, docs) -> None:
    """Without --article the self-checks run and the binding is not run (exit 0)."""
    _, reg = docs
    code, report = _run(cli, reg, None)
    assert code == 0
    assert [r["status"] for r in report["results"]] == ["passed", "passed", "not_run"]


def test_unterminated_article_display(cli, tmp_path: Path, docs) -> None:
    """An unclosed $$ is FORMULA.ARTICLE.UNTERMINATED at its line."""
    _, reg = docs
    art = write_article(tmp_path / "b.md", ARTICLE + "\n$$broken\n")
    _, report = _run(cli, reg, art)
    assert "FORMULA.ARTICLE.UNTERMINATED" in _codes(report)


def test_unusable_inputs_exit_2(cli, tmp_path: Path, docs) -> None:
    """A schema-invalid registry or a missing article is exit 2 with a located message."""
    art, _ = docs
    bad = _with(tmp_path, lambda d: d["formulas"][0].pop("owner"))
    r = cli("formula-audit", bad, "--article", art)
    assert r.code == 2 and "SCHEMA.REQUIRED" in r.err and "/formulas/0/owner" in r.err
    r = cli("formula-audit", registry_path := write_registry(tmp_path / "ok.yaml", registry_data()),
            "--article", tmp_path / "absent.md")  # fmt: skip
    assert registry_path.exists() and r.code == 2 and "FORMULA.ARTICLE.NOT_FOUND" in r.err
    assert cli("formula-audit").code == 2


def test_init_skeleton_round_trip(cli, tmp_path: Path, docs) -> None:
    """--init writes one formula per equation; the skeleton binds but lacks plain forms."""
    art, _ = docs
    out = tmp_path / "skeleton.yaml"
    assert cli("formula-audit", out, "--init", "--article", art).code == 0
    data = yaml.safe_load(out.read_text())
    assert [f["id"] for f in data["formulas"]] == ["F01", "F02", "F03"]
    code, report = _run(cli, out, art)
    assert code == 1
    assert _codes(report) == ["FORMULA.PLAIN.MISSING"] * 3
    assert report["results"][2]["status"] == "passed"
    assert cli("formula-audit", out, "--init", "--article", art).code == 2
    assert cli("formula-audit", "--init").code == 2


def test_mathml_article(cli, tmp_path: Path) -> None:
    """Display MathML in HTML binds like LaTeX (by its TeX annotation or its markup)."""
    html = (
        '<html><body><math display="block"><mi>a</mi><mo>=</mo><mn>1</mn></math>'
        '<math display="block"><annotation encoding="application/x-tex">M=\\left\\lceil'
        "\\frac{S}{C}\\right\\rceil</annotation></math></body></html>"
    )
    art = write_article(tmp_path / "a.html", html)
    skeleton = tmp_path / "s.yaml"
    assert cli("formula-audit", skeleton, "--init", "--article", art).code == 0
    data = yaml.safe_load(skeleton.read_text())
    assert (
        data["formulas"][1]["equations"][0]["sha256"]
        == registry_data()["formulas"][1]["equations"][0]["sha256"]
    )


def test_report_is_deterministic(cli, tmp_path: Path, docs) -> None:
    """The same inputs give byte-identical JSON."""
    _, reg = docs
    art = write_article(tmp_path / "b.md", "$$z$$\n" + ARTICLE)
    first = cli("formula-audit", reg, "--article", art, "--format", "json").out
    assert first == cli("formula-audit", reg, "--article", art, "--format", "json").out


# The named steps of registry_findings and binding_findings, one at a time.


def _registry(tmp_path: Path, edit=None) -> Registry:
    data = registry_data()
    if edit is not None:
        edit(data)
    return load_registry(write_registry(tmp_path / "steps.yaml", data))


def _at(sink: _RegistrySink) -> list[tuple[str, str]]:
    return [(f.code, f.location.pointer) for f in sink.findings]


def test_names_step(tmp_path: Path) -> None:
    """A repeated id and name, and LaTeX in the plain form, are found at the formula."""
    reg = _registry(tmp_path)
    f = replace(reg.formulas[0], plain="U = \\frac{a}{b}")
    sink = _RegistrySink(reg)
    _check_names(f, 0, Counter({"F01": 2}), Counter({"slot_utilization": 2}), sink)
    _check_names(replace(f, plain=" "), 0, Counter(), Counter(), sink)
    assert _at(sink) == [
        ("FORMULA.ID.DUPLICATE", "/formulas/0"),
        ("FORMULA.NAME.DUPLICATE", "/formulas/0"),
        ("FORMULA.PLAIN.UNSAFE", "/formulas/0/plain"),
        ("FORMULA.PLAIN.MISSING", "/formulas/0/plain"),
    ]


def test_families_step(tmp_path: Path) -> None:
    """An undeclared family and unit family, and an owner other than the unit family's, are
    found at their fields."""
    reg = _registry(tmp_path)
    sink = _RegistrySink(reg)
    f = reg.formulas[1]
    _check_families(reg, f, 1, sink)
    assert sink.findings == []
    _check_families(reg, replace(f, family="queues", unit_family="seconds"), 1, sink)
    _check_families(reg, replace(f, owner="M5.1"), 1, sink)
    assert _at(sink) == [
        ("FORMULA.FAMILY.UNDECLARED", "/formulas/1/family"),
        ("FORMULA.UNIT.UNDECLARED", "/formulas/1/unit_family"),
        ("FORMULA.UNIT.OWNER_DRIFT", "/formulas/1/owner"),
    ]


def test_bindings_step_tracks_claims_and_order(tmp_path: Path) -> None:
    """Bindings claim equations in article order: a repeat is a duplicate, a step back is out
    of order, no binding at all is refused; the last index is carried from formula to formula."""
    reg = _registry(tmp_path)
    f1, f2 = reg.formulas
    sink, claimed = _RegistrySink(reg), {}
    assert _check_bindings(f2, 1, claimed, 0, sink) == 2
    assert _check_bindings(f1, 0, claimed, 2, sink) == 2  # equation 1 after equation 2
    assert _check_bindings(f1, 0, claimed, 2, sink) == 2  # equation 1 again
    assert _check_bindings(replace(f1, equations=()), 0, claimed, 2, sink) == 2
    assert claimed == {2: "F02", 1: "F01"}
    assert _at(sink) == [
        ("FORMULA.BINDING.ORDER", "/formulas/0/equations/0"),
        ("FORMULA.BINDING.DUPLICATE", "/formulas/0/equations/0"),
        ("FORMULA.BINDING.NONE", "/formulas/0"),
    ]


def test_unbound_step(tmp_path: Path) -> None:
    """An equation declared unbound that a formula binds is a duplicate; one without a reason
    is refused."""
    reg = _registry(tmp_path, lambda d: d["unbound"][0].update(reason=" "))
    sink = _RegistrySink(reg)
    _check_unbound(reg, {3: "F02"}, sink)
    assert _at(sink) == [
        ("FORMULA.BINDING.DUPLICATE", "/unbound/0"),
        ("FORMULA.UNBOUND.NO_REASON", "/unbound/0"),
    ]


def test_alignment_counts_bound_and_declared_unbound(tmp_path: Path, docs) -> None:
    """An aligned article counts two bound and one declared-unbound equation, no finding."""
    art, reg_path = docs
    reg = load_registry(reg_path)
    metrics = {"bound": 0, "declared_unbound": 0}
    assert _Alignment(reg, read_article(art), _expected(reg)).findings(metrics) == []
    assert metrics == {"bound": 2, "declared_unbound": 1}


def test_alignment_differing_runs(tmp_path: Path, docs) -> None:
    """A replaced equation is changed at its line, an equation the article lost is missing
    at its binding, an equation the article gained is unbound, and a moved one is renumbered."""
    _, reg_path = docs
    reg = load_registry(reg_path)
    metrics = {"bound": 0, "declared_unbound": 0}
    edited = read_article(
        write_article(tmp_path / "c.md", ARTICLE.replace(EQ1, EQ1.replace("B", "N")))
    )
    found = _Alignment(reg, edited, _expected(reg)).findings(metrics)
    assert [(f.code, f.location.line) for f in found] == [("FORMULA.EQUATION.CHANGED", 5)]
    lost = read_article(write_article(tmp_path / "d.md", ARTICLE.replace(f"$${EQ1}$$", "")))
    found = _Alignment(reg, lost, _expected(reg)).findings(metrics)
    assert [(f.code, f.location.pointer) for f in found] == [
        ("FORMULA.EQUATION.MISSING", "/formulas/0/equations/0"),
        ("FORMULA.EQUATION.RENUMBERED", "/formulas/1/equations/0/index"),
        ("FORMULA.EQUATION.RENUMBERED", "/unbound/0/index"),
    ]
    gained = read_article(write_article(tmp_path / "e.md", ARTICLE + "\n$$z=1$$\n"))
    found = _Alignment(reg, gained, _expected(reg)).findings(metrics)
    assert [f.code for f in found] == ["FORMULA.EQUATION.UNBOUND"]
    assert "display equation 4 " in found[0].message
