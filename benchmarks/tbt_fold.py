"""TBT bookkeeping designs replayed on a real trace's gap stream, interleaved A B A B (issue 16).

    .venv/bin/python benchmarks/tbt_fold.py [--trace FILE] [--rounds 5]
        [--buffer-gaps N]... [--only DESIGN]

Runs `cbaudit replay run TRACE` once, in this process, with the issue-16 configuration
(`vllm-v1`, roofline Llama-3-8B on an H100 at `mfu=0.7`, token budget 2048, 256 sequences,
26,312 K/V blocks of 16) and records every TBT gap the engine counts, in order: each quiet
stretch's start, iteration end times and weight (the decoding rows, `stretch._apply`), each
gap of a full iteration (`Engine._serve`, weight 1), and each fold of the engine's dict. Then
it replays that stream through two designs of the bookkeeping:

* `dict`: the engine's: a dict of counts per distinct gap, folded into `SortedCounts` (sorted
  C arrays) where the engine folded it, and once at the end;
* `buffer-N`: the gaps computed at C speed (`map(operator.sub, ...)`, the maximum by `max`),
  appended with their weights to two C arrays, and folded every N gaps: an index sort of the
  buffer at C speed, equal values collapsed by prefix sums (`accumulate`, `compress`), and
  the resulting sorted runs merged into the sorted arrays (no dict, no hash).

Both replays must give the same multiset (the same values in the same order with the same
counts) and the same per-stretch maxima (the per-request `tbt_max`), else exit 1. Each round
runs every design once in the same order; printed per design: min and median milliseconds
and the ratio to `dict`. `--only DESIGN` runs one design once and prints nothing else (for
`valgrind --tool=callgrind`: the recording run is common to all designs). Wall-clock figures
are printed, never written into a report.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from array import array
from bisect import bisect_left
from collections.abc import Callable
from itertools import accumulate, chain, compress, islice, repeat
from operator import ne, sub
from pathlib import Path
from typing import Any

from cbaudit.sim import engine as engine_module
from cbaudit.sim import stretch as stretch_module
from cbaudit.sim.series import SortedCounts

HERE = Path(__file__).resolve().parent
DEFAULT_TRACE = HERE.parent.parent / "shared" / "traces" / "splitwise_code.csv"
OPTIONS = [
    "-p", "vllm-v1", "--cost-model", "roofline",
    "--cost-option", "hardware=nvidia-h100-sxm", "--cost-option", "model=llama-3-8b-gqa-fp16",
    "--cost-option", "mfu=0.7", "--budget", "token_budget=2048", "--budget", "sequence_budget=256",
    "--budget", "kv_block_size=16", "--budget", "kv_total_blocks=26312", "-q", "-f", "json",
]  # fmt: skip

# the stream: ("s", start, times, weight) a stretch, ("g", gap) a full iteration's gap, ("f",)
Event = tuple[Any, ...]


def record(trace: Path) -> list[Event]:
    """Every TBT gap of one replay of `trace`, in the order the engine counts them."""
    events: list[Event] = []
    in_stretch = [False]

    class Recording(dict[float, int]):
        """The engine's TBT dict, noting each per-iteration gap (weight 1) it is given."""

        def __setitem__(self, gap: float, count: int) -> None:
            if not in_stretch[0]:
                events.append(("g", gap))
            super().__setitem__(gap, count)

    apply, fold = stretch_module._apply, engine_module.Engine._fold_tbt
    init = engine_module.Engine.__init__

    def rec_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.tbt = Recording()

    def rec_apply(engine: Any, k: int, times: list[float], *rest: Any) -> None:
        b = len(engine.running) - (rest[1] is not None)
        if b:
            events.append(("s", engine.now, tuple(times), b))
        in_stretch[0] = True
        try:
            apply(engine, k, times, *rest)
        finally:
            in_stretch[0] = False

    def rec_fold(self: Any) -> None:
        events.append(("f",))
        fold(self)

    from cbaudit.cli.main import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        argv = sys.argv
        sys.argv = ["cbaudit", "replay", "run", str(trace), *OPTIONS, "-o", f"{tmp}/r.json"]
        engine_module.Engine.__init__ = rec_init  # type: ignore[method-assign]
        engine_module.Engine._fold_tbt = rec_fold  # type: ignore[method-assign]
        stretch_module._apply = rec_apply
        try:
            cli()
        except SystemExit as done:
            if done.code:
                raise
        finally:
            sys.argv = argv
            engine_module.Engine.__init__ = init  # type: ignore[method-assign]
            engine_module.Engine._fold_tbt = fold  # type: ignore[method-assign]
            stretch_module._apply = apply
    return events


def by_dict(events: list[Event]) -> tuple[SortedCounts, float]:
    """The engine's bookkeeping (the loops copy `stretch._apply` and `Engine._serve`)."""
    tbt: dict[float, int] = {}
    folded = SortedCounts()
    maxima = 0.0
    for event in events:
        kind = event[0]
        if kind == "s":
            _, start, times, b = event
            get = tbt.get
            prev = start
            gap_max = 0.0
            for t in times:
                gap = t - prev
                prev = t
                tbt[gap] = get(gap, 0) + b
                if gap > gap_max:
                    gap_max = gap
            maxima += gap_max
        elif kind == "g":
            gap_t = event[1]
            tbt[gap_t] = tbt.get(gap_t, 0) + 1
        elif tbt:
            folded = folded.merged(tbt)
            tbt.clear()
    return folded.merged(tbt), maxima


def _collapse(values: array[float], weights: array[int]) -> tuple[array[float], array[int]]:
    """The buffer as sorted distinct values and summed weights, at C speed (the sort is
    stable: of values that compare equal, 0.0 and -0.0, the first one counted is kept)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ordered = array("d", map(values.__getitem__, order))
    totals = array("q", accumulate(map(weights.__getitem__, order)))
    del order
    starts = list(map(ne, ordered, chain((None,), ordered)))
    keys = array("d", compress(ordered, starts))
    ends = array("q", compress(totals, chain(islice(starts, 1, None), (True,))))
    return keys, array("q", map(sub, ends, chain((0,), ends)))


def _merge(
    keys: array[float], counts: array[int], more: tuple[array[float], array[int]]
) -> tuple[array[float], array[int]]:
    """Two sorted distinct runs merged (`SortedCounts.merged` without the dict's lookups)."""
    new_keys, new_counts = more
    if not keys:
        return new_keys, new_counts
    out_keys: array[float] = array("d")
    out_counts: array[int] = array("q")
    i, n = 0, len(keys)
    places = map(bisect_left, repeat(keys), new_keys)
    for value, j, c in zip(new_keys, places, new_counts, strict=True):
        if j > i:
            out_keys.extend(keys[i:j])
            out_counts.extend(counts[i:j])
        if j < n and keys[j] == value:
            out_keys.append(keys[j])
            out_counts.append(counts[j] + c)
            i = j + 1
        else:
            out_keys.append(value)
            out_counts.append(c)
            i = j
    out_keys.extend(keys[i:])
    out_counts.extend(counts[i:])
    return out_keys, out_counts


def by_buffer(events: list[Event], size: int) -> tuple[SortedCounts, float]:
    """Gaps and weights buffered in C arrays, folded every `size` gaps (see the docstring)."""
    values: array[float] = array("d")
    weights: array[int] = array("q")
    one = array("q", (0,))
    keys: array[float] = array("d")
    counts: array[int] = array("q")
    maxima = 0.0
    for event in events:
        kind = event[0]
        if kind == "s":
            _, start, times, b = event
            gaps = array("d", map(sub, times, chain((start,), times)))
            gap_max = max(gaps)
            maxima += gap_max if gap_max > 0.0 else 0.0
            values += gaps
            one[0] = b
            weights += one * len(gaps)
        elif kind == "g":
            values.append(event[1])
            weights.append(1)
        else:
            continue
        if len(values) >= size:
            keys, counts = _merge(keys, counts, _collapse(values, weights))
            del values[:], weights[:]
    if values:
        keys, counts = _merge(keys, counts, _collapse(values, weights))
    return SortedCounts(keys, counts), maxima


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--buffer-gaps", type=int, action="append", default=None)
    ap.add_argument("--only", default=None, help="run one design once (for callgrind)")
    args = ap.parse_args()
    events = record(args.trace)
    designs: dict[str, Callable[[], tuple[SortedCounts, float]]] = {"dict": lambda: by_dict(events)}
    for size in args.buffer_gaps or [16_384, 65_536]:
        designs[f"buffer-{size}"] = lambda size=size: by_buffer(events, size)
    if args.only is not None:
        designs[args.only]()
        return
    stretches = sum(1 for e in events if e[0] == "s")
    gaps = sum(len(e[2]) if e[0] == "s" else 1 for e in events if e[0] != "f")
    reference, ref_max = designs["dict"]()
    print(
        f"{args.trace.name}: {gaps:,} gaps ({stretches:,} stretches), {len(reference):,}"
        f" distinct, weight {sum(reference.values()):,}, python {sys.version.split()[0]}"
    )
    for name, design in designs.items():
        got, got_max = design()
        if list(got.items()) != list(reference.items()) or got_max != ref_max:
            print(f"{name}: a different multiset or maxima than dict")
            sys.exit(1)
    walls: dict[str, list[float]] = {name: [] for name in designs}
    for i in range(args.rounds):
        print(f"round {i + 1}, load {os.getloadavg()[0]:.2f}")
        for name, design in designs.items():
            t0 = time.perf_counter()
            design()
            walls[name].append(time.perf_counter() - t0)
    base = walls["dict"]
    for name, w in walls.items():
        print(
            f"{name:>14}: min {min(w) * 1e3:7.1f} ms, median {statistics.median(w) * 1e3:7.1f}"
            f" ms, ratio to dict: min {min(w) / min(base):.2f},"
            f" median {statistics.median(w) / statistics.median(base):.2f}"
        )


if __name__ == "__main__":
    main()
