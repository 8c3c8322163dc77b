"""A small synthetic gate report with every chart type and every problem kind."""

from __future__ import annotations

from cbaudit.model import CheckResult, CheckStatus, Finding, Location, Report, Severity


def gate_report() -> Report:
    """Three loops: charts (Loop 3), a failed negative case with a note (Loop 2), a
    check not run here (Loop 10)."""
    f = Finding(
        "PLAN.BUDGET.TOKEN_EXCEEDED",
        "5 tokens > budget 4",
        location=Location("evidence/b/loop2/neg.json", "/plan/budget_ledger", 3, 5),
    )
    charts = (
        {
            "type": "gantt",
            "title": "slots",
            "slots": 2,
            "x_label": "iteration",
            "rows": [
                {"label": "A", "spans": [[0, 1, "prefill"], [1, 5, "decode"]]},
                {"label": "B", "spans": [[0, 1, "prefill"], [1, 3, "decode"]]},
            ],
        },
        {"type": "histogram", "title": "TTFT", "series": {"ttft_ms": [1, 2, 2, 3]}},
        {
            "type": "bars",
            "title": "outcomes",
            "categories": ["accept-all", "cap-4"],
            "series": {"offered": [6, 6], "completed": [6, 4]},
        },
        {
            "type": "lines",
            "title": "service",
            "series": {"A": [[0, 0], [1, 2]], "B": [[0, 0], [1, 1]]},
        },
        {
            "type": "scatter",
            "title": "step time",
            "points": [[1, 2], [4, 3]],
            "line": [[0, 1], [5, 4]],
        },
        {
            "type": "matrix",
            "title": "kill matrix",
            "rows": ["op"],
            "cols": ["fx"],
            "cells": [["killed"]],
        },
    )
    return Report.build(
        "gate",
        [
            CheckResult("replay", "b:loop3", charts=charts),
            CheckResult(
                "negative_case",
                "b:neg",
                findings=(
                    f,
                    Finding(
                        "MUTATE.MUTANT.KILLED_BY_OTHER",
                        "killed by PLAN.X instead",
                        Severity.NOTE,
                        Location("evidence/b/loop2/neg.json"),
                    ),
                ),
                declared_at=Location("evidence/b/loop2/checks.yaml", "/checks/1", 9),
            ),
            CheckResult("pin", "b:pin", status=CheckStatus.NOT_RUN, reason="no source"),
        ],
        summary={
            "claims": [
                {
                    "bundle": "b",
                    "check": "loop3",
                    "loop": "Loop 3",
                    "claim": "13/16 <x>",
                    "evidence_class": "synthetic",
                    "status": "passed",
                },
                {
                    "bundle": "b",
                    "check": "neg",
                    "loop": "Loop 2",
                    "claim": "budget",
                    "evidence_class": "derived",
                    "status": "failed",
                },
                {
                    "bundle": "b",
                    "check": "pin",
                    "loop": "Loop 10",
                    "claim": "pin",
                    "evidence_class": "derived",
                    "status": "not_run",
                },
            ]
        },
    )
