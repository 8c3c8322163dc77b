"""The safe evaluator: exact arithmetic, the plain-text name rules, and refusals."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cbaudit.formulas.evaluator import (
    EvalError,
    definition_sides,
    evaluate,
    show,
    split_top,
    to_value,
)


def _ev(text: str, **env: object) -> object:
    return evaluate(text, {k: to_value(v) for k, v in env.items()})


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("1/3 + 1/6", Fraction(1, 2)),
        ("-2^2", Fraction(-4)),
        ("2^3^2", Fraction(512)),
        ("2**-1", Fraction(1, 2)),
        ("(1 + 2) * 3 - 4 / 8", Fraction(17, 2)),
        ("ceil(10/4) + floor(-1/2)", Fraction(2)),
        ("min(4, max(8 - 4, 0), 7)", Fraction(4)),
        ("sum(1, 2, 3)", Fraction(6)),
        ("sqrt(9/4)", Fraction(3, 2)),
        ("abs(-3) + |2 - 5|", Fraction(6)),
        ("log2(8)", 3.0),
        ("ln(1)", 0.0),
        ("1 < 2 <= 2 = 2", True),
        ("1 < 2 and not 3 < 2 or 1 > 2", True),
        ("2 ≤ 3 and 3 ≥ 3 and 1 ≠ 2", True),
    ],
)
def test_arithmetic_and_logic(expr: str, value: object) -> None:
    """Operators, precedence, functions and chained comparisons give exact values."""
    assert _ev(expr) == value


def test_plain_text_name_rules() -> None:
    """Subscripts, brackets, symbols with arguments, aggregates and 2U parse as names."""
    assert _ev("s_(m+1)*(s_(m+1)+1)/2 - s_m*(s_m+1)/2", s_m=4, **{"s_(m+1)": 8}) == 26
    assert _ev("c_start[r,n] < c_end[r,n]", **{"c_start[r,n]": 1, "c_end[r,n]": 2}) is True
    assert _ev("|W_f(t1,t2) - W_g(t1,t2)| <= 2U", U=8, **{"W_f(t1,t2)": 20, "W_g(t1,t2)": 4})
    assert _ev("B*max_r G_r - sum_r G_r", B=2, G_r=[2, 8]) == 6
    assert _ev("max(c_B, min_(i in active)c_i)", c_B=0, c_i=[4, 9]) == 4
    assert _ev("sum_i(q_i * E_i)", q_i=[1, 2], E_i=[3, 4]) == 11
    assert _ev("G_r + 1", G_r=[1, 2]) == [2, 3]


def test_definitions_and_statements() -> None:
    """A target's right-hand sides are found across `;` statements and chained `=`."""
    plain = "c_B = max(c_B, min_(i in active)c_i) = max(0,4) = 4; x = y <= z"
    assert definition_sides(plain, "c_B") == ["max(c_B, min_(i in active)c_i)", "max(0,4)", "4"]
    assert split_top("a = f(x; y); b", ";") == ["a = f(x; y)", " b"]
    with pytest.raises(EvalError):
        definition_sides(plain, "nope")


@pytest.mark.parametrize(
    "expr",
    [
        "__import__('os')",
        "x.y",
        "1 +",
        "(1",
        "1/0",
        "unknown + 1",
        "ceil",
        "sqrt(-1)",
        "ln(0)",
        "[1, 2]",
        "(1 < 2) + 1",
        "1 and 2",
    ],
)
def test_refusals(expr: str) -> None:
    """Anything outside the grammar or the arithmetic raises EvalError, never runs code."""
    with pytest.raises(EvalError):
        _ev(expr)


def test_show_spellings() -> None:
    """Values print exactly: integers, fractions with a decimal, booleans, lists."""
    assert show(Fraction(5, 8)) == "5/8 (0.625)"
    assert show(Fraction(4)) == "4"
    assert show(True) == "true"
    assert show([Fraction(1), Fraction(1, 2)]) == "[1, 1/2 (0.5)]"


@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(1, 50))
def test_matches_exact_fractions(a: int, b: int, c: int) -> None:
    """Random integer expressions agree with Python's exact Fraction arithmetic."""
    got = _ev("(a*b + c) / c - a^2", a=a, b=b, c=c)
    assert got == Fraction(a * b + c, c) - Fraction(a) ** 2
