"""Per-iteration integer series kept as runs of equal values.

A replay records, for every iteration, how many rows it selected and how many tokens it
scheduled. Most iterations repeat the previous one's figures (a quiet decode stretch repeats
them for its whole length), so the series is held as (value, run length) pairs: its memory
grows with the number of changes, not with the number of iterations. Every figure the report
reads from it (totals, prefix sums over a horizon, the values in order) is exact.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from itertools import repeat


class RunSeries:
    """An append-only sequence of ints stored as runs: `append`, `extend` (the `array`
    calls the engine makes), `len`, iteration in order, `total`, `prefix_sum`, `runs`."""

    __slots__ = ("_counts", "_len", "_total", "_values")

    def __init__(self, values: Iterable[int] = ()) -> None:
        self._values: array[int] = array("q")
        self._counts: array[int] = array("q")
        self._len = 0
        self._total = 0
        self.extend(values)

    def append(self, value: int) -> None:
        """One more iteration's value."""
        values = self._values
        if values and values[-1] == value:
            self._counts[-1] += 1
        else:
            values.append(value)
            self._counts.append(1)
        self._len += 1
        self._total += value

    def extend_run(self, value: int, count: int) -> None:
        """`count` more iterations, each with `value`."""
        if count <= 0:
            return
        values = self._values
        if values and values[-1] == value:
            self._counts[-1] += count
        else:
            values.append(value)
            self._counts.append(count)
        self._len += count
        self._total += value * count

    def extend(self, values: Iterable[int]) -> None:
        """More iterations' values, in order (a list of one repeated value is one run)."""
        seq = values if isinstance(values, list) else list(values)
        if not seq:
            return
        first = seq[0]
        if seq.count(first) == len(seq):
            self.extend_run(first, len(seq))
            return
        for value in seq:
            self.append(value)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[int]:
        for value, count in zip(self._values, self._counts, strict=True):
            yield from repeat(value, count)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RunSeries):
            return self._values == other._values and self._counts == other._counts
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (mutable)

    def __repr__(self) -> str:
        return f"RunSeries({len(self._values)} runs, {self._len} values)"

    def total(self) -> int:
        """The sum of every value."""
        return self._total

    def prefix_sum(self, n: int) -> int:
        """The sum of the first `n` values (all of them when `n` >= len)."""
        if n >= self._len:
            return self._total
        out = 0
        left = n
        for value, count in zip(self._values, self._counts, strict=True):
            if left <= 0:
                break
            take = count if count < left else left
            out += value * take
            left -= take
        return out

    def runs(self) -> Iterator[tuple[int, int]]:
        """(value, run length) pairs in order; adjacent runs hold different values."""
        return zip(self._values, self._counts, strict=True)
