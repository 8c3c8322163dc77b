"""A plain trace is held as columns (`TraceRequests`): every declaration, id, realized output
and id -> position answer is the one the records of the manifest path give; values a C array
could not give back exactly keep the records."""

from __future__ import annotations

import random
from pathlib import Path

from cbaudit.sim.contract_view import contract_decl, contract_manifest
from cbaudit.sim.workload import (
    TraceIndex,
    TraceRealized,
    TraceRequests,
    _from_expanded,
    _from_trace,
    int_array,
    trace_requests,
)


def _trace(tmp_path: Path, n: int, seed: int) -> Path:
    rng = random.Random(seed)
    t = 0.0
    rows = ["arrived_at,num_prefill_tokens,num_decode_tokens"]
    for _ in range(n):
        t += rng.choice([0, 0, 0.5, 1, 0.0000625, 0.0031])
        rows.append(f"{t:.7f},{rng.randint(1, 5000)},{rng.randint(1, 900)}")
    path = tmp_path / "cols.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_trace_columns_answer_as_the_records_do(tmp_path: Path) -> None:
    path = _trace(tmp_path, 300, 4)
    fast = _from_trace(path, str(path))
    slow = _from_expanded(path, str(path), None)
    assert fast is not None and isinstance(fast.requests, TraceRequests)
    assert isinstance(fast.hidden_realized, TraceRealized)
    assert isinstance(slow.requests, tuple) and isinstance(slow.hidden_realized, dict)
    rows = fast.requests
    assert rows == slow.requests and list(rows) == list(slow.requests)
    assert rows[-1] == slow.requests[-1] and rows[5:9] == slow.requests[5:9]
    assert {type(d.arrival) for d in rows} == {int, float}
    position = fast.position_index()
    assert isinstance(position, TraceIndex)
    assert dict(position) == slow.position_index() == {d.request_id: i for i, d in enumerate(rows)}
    assert dict(fast.hidden_realized) == slow.hidden_realized
    cols, ref = fast.columns(), slow.columns()
    for a, b in zip(cols, ref, strict=True):
        assert list(a) == list(b)
    assert cols[0] is rows.arrival  # the trace's own column, no copy
    for bad in (
        "splitwise-1",
        "splitwise-0000001",
        "splitwise-00001x",
        "xsplitwise-000001",
        "splitwise_000001",
        "splitwise-000300",
        "splitwise-٠٠٠٠٠١",
        5,
        None,
    ):
        assert rows.index_of(bad) is None, bad
        assert bad not in position and position.get(bad) is None  # type: ignore[arg-type]
        assert bad not in fast.hidden_realized
    assert rows.index_of("splitwise-000299") == 299
    for i in (0, 7, 299):  # the contract's record, made from the columns directly
        assert rows.contract_decl(i, rows.request_id(i)) == contract_decl(slow.requests[i])
    lazy = contract_manifest(fast, fast.position_index())
    eager = contract_manifest(slow, slow.position_index())
    assert list(lazy.requests) == list(eager.requests) and lazy.clients == eager.clients
    for rid in ("splitwise-000000", "splitwise-000150", "splitwise-000299", "nope"):
        assert lazy.by_id.get(rid) == eager.by_id.get(rid)


def test_ids_past_a_million_rows_keep_their_digits() -> None:
    rows = trace_requests("azure", [0] * 1_000_002, [1] * 1_000_002, [1] * 1_000_002)
    assert rows is not None
    assert rows.request_id(1_000_001) == "azure-1000001"
    assert rows.index_of("azure-1000001") == 1_000_001
    assert rows.index_of("azure-01000001") is None


def test_values_a_c_array_cannot_give_back_keep_the_records() -> None:
    """An int arrival of 2**53 (a double rounds it), an integral float arrival (it would read
    back as an int) and a count past 2**63 give None: the loader keeps records."""
    assert trace_requests("a", [0, 2**53], [1, 1], [1, 1]) is None
    assert trace_requests("a", [0, 2.0**60], [1, 1], [1, 1]) is None
    assert trace_requests("a", [0, 1], [1, 2**63], [1, 1]) is None
    wide = trace_requests("a", [0, 2**51 + 0.5, 2**53 - 1], [1, 2**40, 3], [1, 1, 2**31])
    assert wide is not None
    assert (wide.prompt.typecode, wide.output.typecode) == ("q", "q")
    assert [d.arrival for d in wide] == [0, 2**51 + 0.5, 2**53 - 1]
    assert [type(d.arrival) for d in wide] == [int, float, int]
    assert (wide[1].prompt_tokens, wide[2].max_output_tokens) == (2**40, 2**31)
    assert int_array([1, 2]).typecode == "i" and int_array([2**31]).typecode == "q"


def test_index_of_takes_request_ids_spelling_only() -> None:
    """`index_of` tests the id's spelling without formatting it again: it answers i exactly
    when the string is `request_id(i)` of a row, for ids and near misses of every kind."""
    n = 1_000_012  # ids of six digits and of seven
    rows = trace_requests("azure", [0] * n, [1] * n, [1] * n)
    assert rows is not None
    near = ["", "0", "00000", "+00001", "-00001", " 00001", "00_001", "0000001", "١٢٣٤٥٦"]
    near += ["１２３４５６", "12345²", "1e3456", "123456 ", "0999999", "01000001", "1000012"]
    candidates = [f"azure-{s}" for s in near] + ["azure000001", "azure--000001", "Azure-000001"]
    for i in (0, 1, 9, 99_999, 123_456, 999_999, 1_000_000, 1_000_011, 1_000_012, 10**9):
        rid = f"azure-{i:06d}"
        candidates += [rid, rid + "0", rid[:-1], "azure-0" + rid[6:], rid.replace("azure", "azur")]
    for s in candidates:
        tail = s[len("azure-") :]
        try:
            j = int(tail)
        except ValueError:
            j = -1
        want = j if 0 <= j < n and s == rows.request_id(j) else None
        assert rows.index_of(s) == want, s
