"""Metric tables without rich: the same characters rich prints, or rich itself prints them."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from cbaudit.model import CheckResult, Report
from cbaudit.report.text import WIDTH, Rows, layout, plain_table, render_rich, render_text

_ASCII = st.text(alphabet=string.printable.strip("\t\n\r\x0b\x0c") + " ", max_size=70)
_ANY = st.text(max_size=70)


def _rich(rows: Rows) -> list[str]:
    return render_rich([rows], False).splitlines()


@settings(max_examples=300)
@given(st.lists(st.tuples(_ASCII, st.one_of(_ASCII, _ASCII.map(lambda s: s * 2))), min_size=1))
def test_a_fitting_ascii_table_is_what_rich_prints(rows: list[tuple[str, str]]) -> None:
    """Printable ASCII cells that fit the width: the plain layout equals rich's, line by line."""
    table = Rows(tuple(rows))
    plain = plain_table(table)
    keys = max(len(k) for k, _ in rows) + 2
    values = max(len(v) for _, v in rows)
    assert (plain is None) == (2 + keys + 4 + values + 2 > WIDTH)
    if plain is not None:
        assert plain == _rich(table)


@settings(max_examples=100)
@given(st.lists(st.tuples(_ANY, _ANY), min_size=1, max_size=4))
def test_anything_else_is_left_to_rich(rows: list[tuple[str, str]]) -> None:
    """Unicode, control characters or a table too wide: no plain layout (rich measures)."""
    cells = [c for row in rows for c in row]
    plain = plain_table(Rows(tuple(rows)))
    if not all(c.isascii() and c.isprintable() for c in cells):
        assert plain is None
    if plain is not None:
        assert plain == _rich(Rows(tuple(rows)))


def test_a_wide_value_is_folded_by_rich() -> None:
    """A value wider than the console goes to rich, which folds it."""
    rep = Report.build("x", [CheckResult("c", "s", metrics={"k": "v" * 200})])
    text = render_text(rep, 1, False)
    assert text == render_rich(layout(rep, 1), False)
    assert max(len(line) for line in text.splitlines()) <= WIDTH
