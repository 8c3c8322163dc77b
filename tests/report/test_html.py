"""The HTML report's structure, read without a browser (the browser tests run it for real)."""

from __future__ import annotations

import re

from cbaudit.model import CheckResult, Report
from cbaudit.report import REPORTERS
from tests.report._dom import Node, parse
from tests.report._m52 import GateRun

ORDER = ["error", "failed", "not_run", "passed"]


def _doc(run: GateRun) -> Node:
    return parse(run.text("html"))


def test_verdict_and_blockers_come_first(m52_fail: GateRun) -> None:
    """Verdict, then the status bar, then what blocks publication, then what did not run,
    then the loops."""
    html = m52_fail.text("html")
    marks = [
        html.index("Publication is blocked"),
        html.index('<nav class="bar"'),
        html.index('id="blocking"'),
        html.index('id="not-run"'),
        html.index('id="loops"'),
    ]
    assert marks == sorted(marks)
    doc = parse(html)
    blocking = next(n for n in doc.iter() if n.attrs.get("id") == "blocking")
    statuses = [li.attrs["data-status"] for li in blocking.find_all("li", "blocker")]
    assert statuses == sorted(statuses, key=ORDER.index), "errors before failures"
    assert statuses[0] == "error" and "failed" in statuses


def test_self_contained(m52_fail: GateRun) -> None:
    """No external script, stylesheet, image or font: one inline script, inline CSS."""
    html = m52_fail.text("html")
    assert html.count("<script") == 1 and "<script src" not in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html


def test_each_loop_is_collapsible_with_claims_classes_and_checks(m52_fail: GateRun) -> None:
    """Every loop is a <details> with a summary (status, counts, evidence classes); loops
    with problems start open, passing ones closed; claims precede the checks."""
    loops = _doc(m52_fail).find_all("details", "loop")
    assert len(loops) >= 12
    for d in loops:
        summary = d.children[0]
        assert summary.tag == "summary"
        assert summary.find_all("span", "ev"), "evidence classes in the summary"
        assert ("open" in d.attrs) == (d.attrs["data-status"] != "passed")
    loop2 = next(d for d in loops if d.attrs["id"] == "loop-loop-2")
    text = loop2.text()
    assert text.index("Claims") < text.index("Checks")


def test_status_groups_are_never_interleaved(m52_fail: GateRun) -> None:
    """Within each loop the checks come in one group per status, worst first, and each row
    sits in the group of its status."""
    for loop in _doc(m52_fail).find_all("details", "loop"):
        groups = loop.find_all("details", "grouped")
        names = [next(c for c in g.classes if c.startswith("g-"))[2:] for g in groups]
        assert names == sorted(names, key=ORDER.index) and len(set(names)) == len(names)
        for g, name in zip(groups, names, strict=True):
            rows = g.find_all("tr", "check")
            assert rows and {r.attrs["data-status"] for r in rows} == {name}


def test_findings_are_structured_and_notes_apart(m52_fail: GateRun) -> None:
    """A finding is a row of code, location and message; notes and warnings sit in their own
    collapsed list, never among the errors."""
    doc = _doc(m52_fail)
    rows = doc.find_all("tr", "check")
    failed = [r for r in rows if r.attrs["data-status"] == "failed"]
    assert failed
    for row in failed:
        for li in row.find_all("li", "finding"):
            assert li.find_all("code", "code") and li.find_all("span", "loc")
            in_notes = any(a.tag == "details" and "notes" in a.classes for a in li.ancestors())
            assert in_notes == ("sev-error" not in li.classes)
    campaign = next(r for r in rows if r.attrs["id"].endswith("mutation-bundle-campaign"))
    assert campaign.find_all("details", "notes"), "KILLED_BY_OTHER notes are folded apart"


def test_kill_matrix_is_summarized_with_the_full_matrix_behind_a_disclosure(
    m52_fail: GateRun,
) -> None:
    """Per operator family and per fixture tables show; the full matrix is inside <details>."""
    doc = _doc(m52_fail)
    km = next(n for n in doc.find_all("div", "killmatrix") if "bundle-campaign" in n.attrs["id"])
    text = km.text()
    assert "Per operator family" in text and "Per fixture" in text
    assert "survived" in text, "the tampered baseline lets mutants survive"
    (full,) = km.find_all("details", "km-full")
    assert full.find_all("table", "km")
    sums = km.find_all("table", "km-sum")
    assert len(sums) == 2
    assert not any(a is full for t in sums for a in t.ancestors())


def test_long_subjects_can_wrap_between_their_parts() -> None:
    """Identifiers and paths get break opportunities after `: / . _` instead of breaking
    mid-word."""
    subject = "m5-2-continuous-batching:loop2.negative.plan-interval-before-frontier"
    html = REPORTERS["html"](Report.build("gate", [CheckResult("k", subject)]), 0, False)
    assert "m5-2-continuous-batching:<wbr>loop2.<wbr>negative.<wbr>plan-interval" in html
    assert "overflow-wrap:anywhere" not in html
    assert "word-break:break-all" not in html


def test_status_counts_link_to_their_sections_without_scripts(m52_fail: GateRun) -> None:
    """With scripts off the count chips are links to sections that exist; the search box and
    buttons are script-only."""
    doc = _doc(m52_fail)
    ids = {n.attrs["id"] for n in doc.iter() if "id" in n.attrs}
    chips = doc.find_all("a", "chip")
    assert [c.attrs["data-filter"] for c in chips] == ["all", *ORDER]
    for chip in chips:
        assert chip.attrs["href"][1:] in ids
    for control in (*doc.find_all("input"), *doc.find_all("button")):
        assert "js-only" in control.classes
