"""The shape of one simulated iteration, as a cost model sees it.

A cost model answers one question, "how long does this step take?", from the step's shape
alone: the decode rows with the context each one reads, and the prefill chunks with their
request-local `[start, end)` intervals. Everything else (which request, which client) is
deliberately absent so a cost model cannot depend on identity.

Conventions (article 0x01A, 0x09):

* a decode row at computed frontier `c` processes one query row at position `c` and attends
  to `c + 1` key rows (its history plus itself); its context length is `c + 1`;
* a prefill chunk `[s, e)` processes `e - s` query rows; it attends to `s` history rows and to
  the causal triangle of the chunk, `(e - s) * s + (e - s) * (e - s + 1) / 2` query-key pairs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class StepShape:
    """Decode context lengths and prefill chunk intervals of one iteration, plus totals.

    `decode_context_lens[i]` is the number of key rows decode row `i` attends to (>= 1);
    `prefill_chunks[j]` is `(start, end)` with `0 <= start < end`. The derived totals are
    computed once at construction.
    """

    decode_context_lens: tuple[int, ...] = ()
    prefill_chunks: tuple[tuple[int, int], ...] = ()
    # derived totals
    decode_rows: int = field(init=False)
    prefill_tokens: int = field(init=False)
    tokens: int = field(init=False)  # query rows: decode rows + prefill chunk widths
    rows: int = field(init=False)  # selected request generations (sequences)
    history_rows: int = field(init=False)  # K/V rows read from earlier iterations
    attention_pairs: int = field(init=False)  # causal query-key pairs processed

    def __post_init__(self) -> None:
        prefill_tokens = 0
        history = 0
        pairs = 0
        for start, end in self.prefill_chunks:
            if start < 0 or end <= start:
                raise ValueError(f"prefill chunk [{start}, {end}) is empty or negative")
            width = end - start
            prefill_tokens += width
            history += start
            pairs += width * start + width * (width + 1) // 2
        contexts = self.decode_context_lens
        n_dec = len(contexts)
        decode_ctx = 0
        if n_dec:
            if min(contexts) < 1:
                bad = next(ctx for ctx in contexts if ctx < 1)  # the first, in row order
                raise ValueError(f"decode context length {bad} < 1")
            decode_ctx = sum(contexts)
        put = object.__setattr__
        put(self, "decode_rows", n_dec)
        put(self, "prefill_tokens", prefill_tokens)
        put(self, "tokens", n_dec + prefill_tokens)
        put(self, "rows", n_dec + len(self.prefill_chunks))
        put(self, "history_rows", history + decode_ctx - n_dec)
        put(self, "attention_pairs", pairs + decode_ctx)

    @classmethod
    def of(
        cls, decode_context_lens: Iterable[int] = (), prefill_chunks: Iterable[tuple[int, int]] = ()
    ) -> StepShape:
        """Build from any iterables."""
        return cls(tuple(decode_context_lens), tuple(prefill_chunks))

    @property
    def mean_decode_context(self) -> float:
        """Mean decode context length (0.0 without decode rows)."""
        if not self.decode_context_lens:
            return 0.0
        return sum(self.decode_context_lens) / len(self.decode_context_lens)

    @property
    def is_empty(self) -> bool:
        return self.rows == 0
