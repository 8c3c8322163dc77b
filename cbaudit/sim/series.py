"""Compact replay figures: per-iteration series as runs, counted multisets as C arrays.

A replay records, for every iteration, how many rows it selected and how many tokens it
scheduled. Most iterations repeat the previous one's figures (a quiet decode stretch repeats
them for its whole length), so the series is held as (value, run length) pairs: its memory
grows with the number of changes, not with the number of iterations. Every figure the report
reads from it (totals, prefix sums over a horizon, the values in order) is exact.

The TBT gaps of a replay are a multiset (value -> count: an exact nearest-rank percentile
needs the counts of distinct values, not every sample). `SortedCounts` holds it as sorted
C arrays; the engine counts into a small dict and folds it in when the dict grows.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import ItemsView, Iterable, Iterator, Mapping, ValuesView
from itertools import chain, repeat
from operator import mul


class RunSeries:
    """An append-only sequence of ints stored as runs: `append`, `extend_run`, `extend` (the
    calls the engine makes), `len`, iteration in order, `total`, `prefix_sum`, `runs`.

    The runs are held as C ints (4 bytes) and widened to C long longs the first time a value
    or a run length does not fit (a replay's rows and tokens per iteration always fit). The
    last run is kept as two Python ints (it may still grow) and goes to the arrays when a
    different value ends it, so that an iteration's value costs a comparison and an attribute
    update or two; the length and the total are summed from the runs when asked for (the
    report asks a few times), not kept up to date on every call."""

    __slots__ = ("_counts", "_run", "_value", "_values")

    def __init__(self, values: Iterable[int] = ()) -> None:
        self._values: array[int] = array("i")
        self._counts: array[int] = array("i")
        self._value = 0  # the last run's value
        self._run = 0  # ... and its length (0: no run yet, and a first value extends it)
        self.extend(values)

    def extend_run(self, value: int, count: int = 1) -> None:
        """`count` more iterations, each with `value`."""
        if count <= 0:
            return
        if value == self._value:
            self._run += count
            return
        if self._run:  # the last run is finished: to the arrays
            try:
                self._values.append(self._value)
                self._counts.append(self._run)
            except OverflowError:
                self._widen()
        self._value = value
        self._run = count

    # one more iteration's value (`extend_run(value)`: the same function, no second call)
    append = extend_run

    def _widen(self) -> None:
        """The last run's value or length did not fit a C int: every run to C long longs, and
        that run appended (once) to them."""
        values, counts = self._values, self._counts
        if len(values) > len(counts):  # its value went in, its length did not
            values.pop()
        if values.typecode == "q":
            raise OverflowError("a run's value or length does not fit 8 bytes")
        values = self._values = array("q", values)
        counts = self._counts = array("q", counts)
        values.append(self._value)
        counts.append(self._run)

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
            self.extend_run(value)

    def __len__(self) -> int:
        return sum(self._counts) + self._run

    def __iter__(self) -> Iterator[int]:
        for value, count in self.runs():
            yield from repeat(value, count)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RunSeries):
            return (
                self._values == other._values
                and self._counts == other._counts
                and (self._value, self._run) == (other._value, other._run)
            )
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (mutable)

    def __repr__(self) -> str:
        runs = len(self._values) + (1 if self._run else 0)
        return f"RunSeries({runs} runs, {len(self)} values)"

    def total(self) -> int:
        """The sum of every value."""
        packed: int = sum(map(mul, self._values, self._counts))
        return packed + self._value * self._run

    def prefix_sum(self, n: int) -> int:
        """The sum of the first `n` values (all of them when `n` >= len)."""
        if n >= len(self):
            return self.total()
        out = 0
        left = n
        for value, count in self.runs():
            if left <= 0:
                break
            take = count if count < left else left
            out += value * take
            left -= take
        return out

    def runs(self) -> Iterator[tuple[int, int]]:
        """(value, run length) pairs in order; adjacent runs hold different values."""
        packed = zip(self._values, self._counts, strict=True)
        if not self._run:
            return packed
        return chain(packed, ((self._value, self._run),))


class SortedCounts(Mapping[float, int]):
    """A multiset of floats (value -> how often) as its sorted distinct values and their
    counts in two C arrays: 16 bytes a distinct value, where a dict holds a float object and
    a table slot (about 70). Read-only; `merged` returns a new one with more counts added.
    Iteration (keys, `items`) is in ascending order of value."""

    __slots__ = ("_counts", "_keys")

    def __init__(self, keys: Iterable[float] = (), counts: Iterable[int] = ()) -> None:
        self._keys: array[float] = array("d", keys)
        self._counts: array[int] = array("q", counts)
        if len(self._keys) != len(self._counts):
            raise ValueError("SortedCounts needs one count per value")

    @classmethod
    def of(cls, counts: Mapping[float, int]) -> SortedCounts:
        """The multiset `counts` (any mapping)."""
        return cls().merged(counts)

    def merged(self, more: Mapping[float, int]) -> SortedCounts:
        """This multiset with `more`'s counts added (a value already here adds to its count;
        values that compare equal, as 0.0 and -0.0 do in a dict, are one value)."""
        if not more:
            return self
        keys, counts = self._keys, self._counts
        if not keys:  # the first fold: the values sorted and their counts read, at C speed
            first = sorted(more)
            out = SortedCounts()
            out._keys, out._counts = array("d", first), array("q", map(more.__getitem__, first))
            return out
        new_keys: array[float] = array("d")
        new_counts: array[int] = array("q")
        values = sorted(more)
        # where each new value goes among the old ones (bisect called from C, no frames)
        places = map(bisect_left, repeat(keys), values)
        i, n = 0, len(keys)
        for value, j in zip(values, places, strict=False):
            if j > i:  # the old values below this one, copied at C speed
                new_keys.extend(keys[i:j])
                new_counts.extend(counts[i:j])
            if j < n and keys[j] == value:
                new_keys.append(keys[j])
                new_counts.append(counts[j] + more[value])
                i = j + 1
            else:
                new_keys.append(value)
                new_counts.append(more[value])
                i = j
        new_keys.extend(keys[i:])
        new_counts.extend(counts[i:])
        out = SortedCounts()
        out._keys, out._counts = new_keys, new_counts
        return out

    def __getitem__(self, value: float) -> int:
        keys = self._keys
        i = bisect_left(keys, value)
        if i < len(keys) and keys[i] == value:
            return self._counts[i]
        raise KeyError(value)

    def __iter__(self) -> Iterator[float]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def sorted_items(self) -> Iterator[tuple[float, int]]:
        """(value, count) in ascending order of value."""
        return zip(self._keys, self._counts, strict=True)

    def items(self) -> ItemsView[float, int]:
        return _SortedItems(self)

    def values(self) -> ValuesView[int]:
        return _SortedValues(self)

    def first(self) -> float:
        """The smallest value (IndexError when empty)."""
        return self._keys[0]

    def last(self) -> float:
        """The largest value (IndexError when empty)."""
        return self._keys[-1]

    def __repr__(self) -> str:
        return f"SortedCounts({len(self._keys)} values)"


class _SortedItems(ItemsView[float, int]):
    """`SortedCounts.items()`: the pairs straight from the arrays, in order."""

    _mapping: SortedCounts

    def __iter__(self) -> Iterator[tuple[float, int]]:
        return self._mapping.sorted_items()


class _SortedValues(ValuesView[int]):
    """`SortedCounts.values()`: the counts straight from their array, in value order."""

    _mapping: SortedCounts

    def __iter__(self) -> Iterator[int]:
        return iter(self._mapping._counts)
