"""registry/formula_registry.yaml: F01-F72, examples from the seeds, binding to the article."""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo_paths import REPO, SHARED

from cbaudit.formulas.audit import audit, example_findings, read_article, registry_findings
from cbaudit.formulas.registry import load_registry

REGISTRY = REPO / "registry" / "formula_registry.yaml"
ARTICLE = SHARED / "seeds" / "000_723c321e7155665c.txt"


def _data() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))
    return loaded


def test_registry_self_checks_pass() -> None:
    """The shipped registry passes its schema, self-checks and every example."""
    reg = load_registry(REGISTRY)
    assert registry_findings(reg) == []
    findings, metrics = example_findings(reg)
    assert findings == []
    assert metrics["formulas_with_examples"] >= 15


def test_ids_are_f01_to_f72_in_order() -> None:
    """72 formulas, F01..F72 in order, in the seven families of 0x11A."""
    reg = load_registry(REGISTRY)
    assert [f.id for f in reg.formulas] == [f"F{n:02d}" for n in range(1, 73)]
    assert len(reg.families) == 7
    assert all(f.plain.strip() for f in reg.formulas)


@pytest.mark.parametrize(
    ("fid", "target", "expect"),
    [
        ("F11", "U_slot", Fraction(5, 8)),
        ("F69", "P_causal", 78),
        ("F57", "U", 8),
        ("F70", "D_piggy", 4),
        ("F71", "A_intent", 4),
        ("F44", "P_m", 19),
        ("F40", "Q_(k+1)", 220),
    ],
)
def test_seed_numbers_are_carried(fid: str, target: str, expect: object) -> None:
    """The seeds' worked numbers named by the issue appear as examples."""
    reg = load_registry(REGISTRY)
    formula = next(f for f in reg.formulas if f.id == fid)
    got = [Fraction(str(e.expect)) for e in formula.examples if e.target == target]
    assert Fraction(str(expect)) in got


def test_conditional_vtc_bound_example() -> None:
    """F60 carries U = 8 and 2U = 16: a gap of 16 meets the bound, 17 does not."""
    formula = next(f for f in load_registry(REGISTRY).formulas if f.id == "F60")
    assert [(e.bindings["U"], e.expect) for e in formula.examples] == [(8, True), (8, False)]


def _perturb(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    return value + 1


def test_every_example_can_fail(tmp_path: Path) -> None:
    """Changing any one expected value yields exactly one FORMULA.EXAMPLE.WRONG."""
    base = _data()
    count = 0
    for i, formula in enumerate(base["formulas"]):
        for k, _ in enumerate(formula.get("examples", [])):
            data = copy.deepcopy(base)
            example = data["formulas"][i]["examples"][k]
            example["expect"] = _perturb(example["expect"])
            path = tmp_path / "mutant.yaml"
            path.write_text(yaml.safe_dump(data), encoding="utf-8")
            findings, _ = example_findings(load_registry(path))
            assert [f.code for f in findings] == ["FORMULA.EXAMPLE.WRONG"], (formula["id"], k)
            count += 1
    assert count >= 15


def test_binds_the_article_as_it_stands() -> None:
    """Against the article: 73 display equations, 72 bound, one declared unbound, no finding."""
    if not ARTICLE.is_file():
        pytest.skip(f"{ARTICLE} is not present in this checkout")
    reg = load_registry(REGISTRY)
    results = audit(reg, read_article(ARTICLE))
    assert [f.code for r in results for f in r.findings] == []
    assert dict(results[2].metrics) == {"display_equations": 73, "bound": 72, "declared_unbound": 1}
    assert [u.index for u in reg.unbound] == [52]
