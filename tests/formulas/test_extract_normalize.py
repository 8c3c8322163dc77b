"""Display-equation extraction and the versioned LaTeX normalization."""

from __future__ import annotations

from cbaudit.formulas.extract import extract_equations
from cbaudit.formulas.normalize import equation_hash, normalize_latex, normalize_mathml


def test_extracts_every_display_form_in_order() -> None:
    """$$, \\[ \\], equation/align environments and display MathML are found in order."""
    text = (
        "intro $inline$ text\n"
        "$$a=1$$ $$b=2$$\n"
        "\\[c=3\\]\n"
        "\\begin{equation}\\label{e}d=4\\end{equation}\n"
        "\\begin{align*}e&=5\\end{align*}\n"
        '<p><math display="block"><mi>f</mi><mo>=</mo><mn>6</mn></math></p>\n'
        '<math display="block"><semantics><mrow/>'
        '<annotation encoding="application/x-tex">g=7</annotation></semantics></math>\n'
        "<math><mi>inline</mi></math>\n"
    )
    eqs, problems = extract_equations(text)
    assert problems == []
    assert [(e.index, e.line, e.kind) for e in eqs] == [
        (1, 2, "dollars"),
        (2, 2, "dollars"),
        (3, 3, "bracket"),
        (4, 4, "env"),
        (5, 5, "env"),
        (6, 6, "mathml"),
        (7, 7, "mathml"),
    ]
    assert [e.body for e in eqs[:5]] == ["a=1", "b=2", "c=3", "\\label{e}d=4", "e&=5"]
    assert eqs[5].is_mathml and not eqs[6].is_mathml and eqs[6].body == "g=7"


def test_inner_environments_stay_in_their_display() -> None:
    """An aligned block inside $$...$$ is one display, not two."""
    eqs, _ = extract_equations("$$\\begin{aligned}a&=1\\\\b&=2\\end{aligned}$$")
    assert len(eqs) == 1


def test_escaped_dollars_and_linebreak_brackets_are_not_openers() -> None:
    """\\$$ and \\\\[ are not display openers."""
    eqs, problems = extract_equations("costs \\$$5 and a break \\\\[2pt] here")
    assert eqs == [] and problems == []


def test_unterminated_display_is_reported() -> None:
    """An opener without a closer is reported with its line."""
    eqs, problems = extract_equations("ok $$a$$\n\n$$b=\n")
    assert len(eqs) == 1
    assert [p.line for p in problems] == [3]


def test_normalization_rules() -> None:
    """Spacing, labels, comments and trailing punctuation are dropped; meaning is kept."""
    assert normalize_latex(r"U_{slot}=\frac{\sum_r G_r}{B\max_r G_r}.") == (
        r"U_{slot}=\frac{\sum_rG_r}{B\max_rG_r}"
    )
    assert normalize_latex("c_r < p_r, \\qquad e_r=0.") == "c_r<p_r,e_r=0"
    assert normalize_latex("T_r\\,\\Delta M") == "T_r\\Delta M"
    assert normalize_latex("\\sum_{e\\in\\mathcal C_i} c(e)") == "\\sum_{e\\in\\mathcal C_i}c(e)"
    assert normalize_latex("a \\text{if  the   rows}\\;b") == "a\\text{if the rows}b"
    assert normalize_latex("x=1 % a comment\n+2 \\label{eq:x}\\nonumber") == "x=1+2"
    assert normalize_latex("a\\\\ b\\%") == "a\\\\b\\%"


def test_hash_is_stable_across_spacing_and_sensitive_to_content() -> None:
    """Equal up to the rules gives equal hashes; a changed operand changes the hash."""
    assert equation_hash("M = \\lceil S / C \\rceil .") == equation_hash("M=\\lceil S/C\\rceil")
    assert equation_hash("M=\\lceil S/C\\rceil") != equation_hash("M=\\lfloor S/C\\rfloor")
    assert equation_hash("a=\\text{x y}") != equation_hash("a=\\text{xy}")
    assert equation_hash("x\r\n+1") == equation_hash("x\n+1")


def test_mathml_normalization() -> None:
    """MathML without TeX is hashed as markup with inter-tag whitespace removed."""
    assert (
        normalize_mathml("<mi>f</mi>\n  <mo>=</mo>  <mn>6</mn>") == "<mi>f</mi><mo>=</mo><mn>6</mn>"
    )
