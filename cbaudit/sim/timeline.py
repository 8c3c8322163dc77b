"""The slot-occupancy timeline of a replay, as a Gantt chart spec for the publish report.

A `TimelineSink` is a trace sink (see `cbaudit.sim.engine.TraceSink`): it keeps, for every
iteration, which request ran which phase. Only small replays get a chart; the sink stops
recording past its limits so a large replay never pays for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PHASE_STATE = {"PREFILL_CHUNK": "prefill", "DECODE_ROW": "decode"}


class TimelineSink:
    """Collect (iteration, request, phase) from plan records."""

    def __init__(self, max_iterations: int = 400, max_requests: int = 48) -> None:
        self.max_iterations = max_iterations
        self.max_requests = max_requests
        self.iterations: list[list[tuple[str, str]]] = []
        self.requests: list[str] = []
        self.slots: int | None = None
        self.truncated = False

    def write(self, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "workload":
            budgets = data.get("budgets", {})
            self.slots = budgets.get("sequence_budget")
            self.requests = [str(r["request_id"]) for r in data.get("requests", [])]
            if len(self.requests) > self.max_requests:
                self.truncated = True
            return
        if kind != "plan" or self.truncated:
            return
        if len(self.iterations) >= self.max_iterations:
            self.truncated = True
            return
        row = [
            (str(item["request_id"]), PHASE_STATE.get(str(item.get("phase")), "rebuild"))
            for item in data.get("selected", [])
        ]
        self.iterations.append(row)

    def chart(self, title: str) -> dict[str, Any] | None:
        """A `gantt` chart spec, or None when the replay was too large to draw."""
        if self.truncated or not self.iterations:
            return None
        spans: dict[str, list[list[Any]]] = {rid: [] for rid in self.requests}
        for i, row in enumerate(self.iterations, start=1):
            for rid, state in row:
                runs = spans.setdefault(rid, [])
                if runs and runs[-1][1] == i - 1 and runs[-1][2] == state:
                    runs[-1][1] = i
                else:
                    runs.append([i - 1, i, state])
        rows = [{"label": rid, "spans": spans[rid]} for rid in spans if spans[rid]]
        spec: dict[str, Any] = {
            "type": "gantt",
            "title": title,
            "x_label": "iteration (boundary ticks)",
            "rows": rows,
        }
        if isinstance(self.slots, int):
            spec["slots"] = self.slots
        return spec
