"""Where a replay's time goes, event by event: what a stretch and a full iteration cost, and how
much of it grows with the rows.

    .venv/bin/python benchmarks/replay_events.py [--trace FILE] [--rate-scale X]

Runs `cbaudit replay run TRACE -p vllm-v1` in this process with the issue-16 configuration of
`benchmarks/replay_speed.py` (2048 tokens, 256 sequences, K/V block 16, 26,312 blocks, roofline
Llama-3-8B on H100 at `mfu=0.7`, contract validation on) and times, with `perf_counter`:

* every stretch set-up (`cbaudit.sim.stretch._stretch`), taken or not, against B, the number
  of running requests at its first cut;
* every iteration run in full (`Engine.iterate` less the stretches run after it inside the same
  call), against the rows of its plan.

Printed: the configuration, the wall time of the whole replay command as run here, the time
in each kind of event, a table per bucket of B or rows (count, mean microseconds), and a least-
squares fit `time = fixed + per_row * n` for each kind. The last line bounds what any design
that makes the per-row part free (decodes advanced as one shared count, an unmaterialised
block of rows) could save: the fitted per-row time summed over every event, as a share of the
command's wall time. The timers add about half a microsecond per event, so the absolute figures
are a little high; the split between fixed and per-row cost is what the script is for.

The replay's report is written to a temporary file and must finish every request; nothing is
written into the repository.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from replay_speed import (  # noqa: E402  (the same configuration and trace rewriting)
    BLOCK,
    BLOCKS,
    DEFAULT_TRACE,
    SEQ_BUDGET,
    TOKEN_BUDGET,
    rate_scale,
    read_trace,
    replay_args,
    scaled,
    write_splitwise,
)

import cbaudit.sim.engine as engine_mod  # noqa: E402
import cbaudit.sim.stretch as stretch_mod  # noqa: E402
from cbaudit.cli.main import main as cbaudit_main  # noqa: E402

_BUCKET = 4  # rows per table line


class Events:
    """Durations and sizes of the two kinds of event, gathered by the wrappers below."""

    def __init__(self) -> None:
        self.stretches: list[tuple[int, int, float]] = []  # (B, outcome, seconds)
        self.full: list[tuple[int, float]] = []  # (rows, seconds without its stretches)
        self.in_stretches = 0.0  # seconds inside `_stretch` during the current `iterate`
        self.rows = 0  # rows of the plan the current `iterate` executed
        self.iterations = 0  # every iteration seen: in full, in stretches, idle


def instrument(events: Events) -> Callable[[], None]:
    """Wrap the engine's two entry points; returns the function that unwraps them."""
    clock = time.perf_counter
    stretch = stretch_mod._stretch
    iterate = engine_mod.Engine.iterate
    execute = engine_mod.Engine.execute

    def timed_stretch(engine: Any, closed: Any, contexts: Any, partial: Any) -> int:
        b = len(engine.running)
        t0 = clock()
        outcome: int = stretch(engine, closed, contexts, partial)
        dt = clock() - t0
        events.stretches.append((b, outcome, dt))
        events.in_stretches += dt
        return outcome

    def timed_execute(self: Any, plan: Any) -> Any:
        events.rows = len(plan.block) + len(plan.items)
        return execute(self, plan)

    def timed_iterate(self: Any) -> None:
        events.in_stretches = 0.0
        events.rows = -1
        it0 = self.iteration
        t0 = clock()
        iterate(self)
        dt = clock() - t0
        events.iterations += self.iteration - it0
        if events.rows >= 0:  # a plan was chosen and executed: an iteration in full
            events.full.append((events.rows, dt - events.in_stretches))

    stretch_mod._stretch = timed_stretch  # type: ignore[assignment]
    engine_mod.Engine.iterate = timed_iterate  # type: ignore[method-assign]
    engine_mod.Engine.execute = timed_execute  # type: ignore[method-assign]

    def undo() -> None:
        stretch_mod._stretch = stretch
        engine_mod.Engine.iterate = iterate  # type: ignore[method-assign]
        engine_mod.Engine.execute = execute  # type: ignore[method-assign]

    return undo


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares `seconds = fixed + per_row * n` over (n, seconds) points."""
    if len(points) < 2:
        return (points[0][1] if points else 0.0), 0.0
    slope, intercept = statistics.linear_regression(
        [float(n) for n, _ in points], [t for _, t in points]
    )
    return intercept, slope


def table(title: str, points: list[tuple[int, float]]) -> None:
    buckets: dict[int, list[float]] = defaultdict(list)
    for n, t in points:
        buckets[n // _BUCKET * _BUCKET].append(t)
    print(f"  {title}: {len(points)} events, {sum(t for _, t in points):.3f} s")
    print(f"    {'rows':>9}  {'events':>7}  {'mean us':>8}")
    for lo in sorted(buckets):
        ts = buckets[lo]
        print(
            f"    {lo:4d}-{lo + _BUCKET - 1:<4d}  {len(ts):7d}  {1e6 * statistics.fmean(ts):8.1f}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--rate-scale", type=rate_scale, default=Decimal(1))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cbaudit-events-") as tmp:
        trace = args.trace
        if args.rate_scale != 1:  # the same rows at X times their rate, as replay_speed.py does
            trace = Path(tmp) / "scaled.csv"
            write_splitwise(scaled(read_trace(args.trace), args.rate_scale), trace)
        report = Path(tmp) / "report.json"
        argv = replay_args(trace, report)
        print(
            f"configuration: vllm-v1, token budget {TOKEN_BUDGET}, {SEQ_BUDGET} sequences, K/V "
            f"block {BLOCK}, {BLOCKS} blocks; roofline Llama-3-8B on H100 (mfu 0.7); contract "
            f"validation on; trace {args.trace.name} at {args.rate_scale:g}x its rate"
        )
        events = Events()
        undo = instrument(events)
        t0 = time.perf_counter()
        try:
            code = cbaudit_main(argv)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        finally:
            undo()
        wall = time.perf_counter() - t0
        if code != 0:
            print(f"the replay exited with {code}", file=sys.stderr)
            return 1
        metrics = json.loads(report.read_text())["results"][0]["metrics"]
    # the wrappers saw every iteration, or the figures below leave some out
    if events.iterations != metrics["iterations"]:
        print(
            f"the timers saw {events.iterations} iterations, the report has "
            f"{metrics['iterations']}: this script no longer wraps what the engine runs",
            file=sys.stderr,
        )
        return 1
    taken = [(b, t) for b, outcome, t in events.stretches if outcome]
    refused = [(b, t) for b, outcome, t in events.stretches if not outcome]
    print(
        f"replay command (in process, timers on): {wall:.3f} s; {metrics['iterations']} "
        f"iterations, {metrics['requests_finished']} requests"
    )
    table("stretches taken, by B (running requests at the first cut)", taken)
    table("stretch set-ups not taken, by B", refused)
    table("iterations in full, by rows of the plan (stretches after them excluded)", events.full)
    bound = 0.0
    for name, points in (("stretch taken", taken), ("iteration in full", events.full)):
        fixed, per_row = fit(points)
        rows = sum(n for n, _ in points)
        bound += per_row * rows
        print(
            f"  fit, {name}: {1e6 * fixed:.1f} us fixed + {1e6 * per_row:.2f} us per row "
            f"({rows} rows in all: {per_row * rows:.3f} s of per-row work)"
        )
        if fixed < 0:
            print(
                "    (a negative fixed part: the cost is not linear in the rows here, so the "
                "per-row work and the bound below are overstated)"
            )
    print(
        f"per-row work, fitted, as a share of the command: {bound:.3f} s of {wall:.3f} s "
        f"({100 * bound / wall:.0f}%): the most that making every row free could save"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
