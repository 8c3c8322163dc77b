"""The step-spec grammar: what one measured step contains.

A spec is one or more groups joined by `_`; each group is `[COUNT]q<Q>s<S>`:

* `COUNT` requests (default 1) ...
* ... each with `Q` query rows in this step ...
* ... and `S` key/value rows in total (its history plus the `Q` new rows), so `S >= Q`.

Numbers may end in `k` (times 1024). `32q1s2k` is 32 decode rows each attending to 2,048
keys; `q512s4k` is one prefill chunk of 512 rows over a 3,584-row history; `32q1s2k_q512s4k`
is the mixed step of both. A group with `Q == 1` is decode work, `Q > 1` is a prefill chunk.

The parser is pure Python (no torch) so the CLI can check specs before it starts the runner.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cbaudit.model import InputError

# One token: digits with an optional `k`. Guarding the total keeps a typo from asking for
# a terabyte of K/V.
_NUM = r"(\d+)(k?)"
_GROUP_RE = re.compile(rf"^(?:{_NUM})?q{_NUM}s{_NUM}$")
MAX_TOTAL_ROWS = 1 << 26


@dataclass(frozen=True, slots=True)
class SpecGroup:
    """`count` requests, each with `q` query rows and `kv` key rows (history + new)."""

    count: int
    q: int
    kv: int

    @property
    def history(self) -> int:
        """Key rows each request had before this step."""
        return self.kv - self.q

    @property
    def is_decode(self) -> bool:
        return self.q == 1

    @property
    def pairs_per_request(self) -> int:
        """Causal query-key pairs of one request: history block plus the in-step triangle."""
        return self.q * self.history + self.q * (self.q + 1) // 2

    def text(self) -> str:
        prefix = "" if self.count == 1 else str(self.count)
        return f"{prefix}q{_fmt(self.q)}s{_fmt(self.kv)}"


def _fmt(n: int) -> str:
    return f"{n // 1024}k" if n % 1024 == 0 and n >= 1024 else str(n)


@dataclass(frozen=True, slots=True)
class StepSpec:
    """A parsed spec plus the totals a cost model reads."""

    groups: tuple[SpecGroup, ...]
    requests: int = field(init=False)
    tokens: int = field(init=False)  # query rows in the step
    decode_rows: int = field(init=False)
    prefill_tokens: int = field(init=False)
    history_tokens: int = field(init=False)  # sum of decode histories (kv - 1 each)
    prefill_history_tokens: int = field(init=False)  # sum of prefill chunk starts
    kv_tokens: int = field(init=False)  # key rows attended over all requests
    attention_pairs: int = field(init=False)

    def __post_init__(self) -> None:
        g = self.groups
        object.__setattr__(self, "requests", sum(x.count for x in g))
        object.__setattr__(self, "tokens", sum(x.count * x.q for x in g))
        object.__setattr__(self, "decode_rows", sum(x.count for x in g if x.is_decode))
        object.__setattr__(self, "prefill_tokens", sum(x.count * x.q for x in g if not x.is_decode))
        object.__setattr__(
            self, "history_tokens", sum(x.count * x.history for x in g if x.is_decode)
        )
        object.__setattr__(
            self,
            "prefill_history_tokens",
            sum(x.count * x.history for x in g if not x.is_decode),
        )
        object.__setattr__(self, "kv_tokens", sum(x.count * x.kv for x in g))
        object.__setattr__(self, "attention_pairs", sum(x.count * x.pairs_per_request for x in g))

    @property
    def kind(self) -> str:
        """`decode`, `prefill` or `mixed`."""
        if self.decode_rows and self.prefill_tokens:
            return "mixed"
        return "decode" if self.decode_rows else "prefill"

    @property
    def decode_part(self) -> str:
        """The decode groups alone, as a spec (empty when there are none)."""
        return "_".join(x.text() for x in self.groups if x.is_decode)

    @property
    def prefill_part(self) -> str:
        """The prefill groups alone, as a spec (empty when there are none)."""
        return "_".join(x.text() for x in self.groups if not x.is_decode)

    def text(self) -> str:
        """The canonical spelling (`k` where exact, count 1 left out)."""
        return "_".join(x.text() for x in self.groups)

    def per_request(self) -> list[tuple[int, int]]:
        """`(q, kv)` of every request in packing order."""
        return [(x.q, x.kv) for x in self.groups for _ in range(x.count)]


def _num(digits: str | None, k: str | None, default: int | None = None) -> int:
    if digits is None:
        assert default is not None
        return default
    return int(digits) * (1024 if k else 1)


def parse_spec(text: object, *, file: str | None = None, pointer: str | None = None) -> StepSpec:
    """Parse a step spec or raise a located InputError.

    Codes: `BENCH.SPEC.SYNTAX` (not the grammar), `BENCH.SPEC.ZERO` (a zero count, Q or S),
    `BENCH.SPEC.KV_SHORTER_THAN_Q` (S < Q), `BENCH.SPEC.TOO_LARGE` (over 2**26 rows).
    """

    def fail(code: str, message: str) -> InputError:
        return InputError.at(code, message, file, pointer=pointer)

    if not isinstance(text, str) or not text:
        raise fail("BENCH.SPEC.SYNTAX", f"step spec must be a non-empty string, got {text!r}")
    groups: list[SpecGroup] = []
    for part in text.split("_"):
        m = _GROUP_RE.match(part)
        if m is None:
            raise fail(
                "BENCH.SPEC.SYNTAX",
                f"{text!r}: group {part!r} is not [COUNT]q<Q>s<S> (numbers may end in k)",
            )
        count = _num(m.group(1), m.group(2), default=1)
        q = _num(m.group(3), m.group(4))
        kv = _num(m.group(5), m.group(6))
        if count == 0 or q == 0 or kv == 0:
            raise fail("BENCH.SPEC.ZERO", f"{text!r}: group {part!r} has a zero count, q or s")
        if kv < q:
            raise fail(
                "BENCH.SPEC.KV_SHORTER_THAN_Q",
                f"{text!r}: group {part!r} has s={kv} < q={q}; s counts history plus new rows",
            )
        groups.append(SpecGroup(count, q, kv))
    spec = StepSpec(tuple(groups))
    if spec.kv_tokens > MAX_TOTAL_ROWS or spec.tokens > MAX_TOTAL_ROWS:
        raise fail("BENCH.SPEC.TOO_LARGE", f"{text!r}: more than {MAX_TOTAL_ROWS} rows")
    return spec
