"""Hidden-truth and physical-block leaks in online records, named as contract findings.

Every online schema closes its objects (`additionalProperties: false`), so a schema-valid
record cannot carry a leaked field; this scan runs only on records that failed the schema, to
say *why* precisely, and `strip_leaks` removes the leaked members so the remaining shape can
still be checked.
"""

from __future__ import annotations

from typing import Any

from cbaudit.contract.issues import Issue, RecordKind

HIDDEN_TRUTH_KEYS = frozenset(
    {
        "fixture_only_hidden_truth",
        "realized_output_tokens",
        "realized_output_length",
        "hidden_truth",
    }
)
PHYSICAL_BLOCK_KEYS = frozenset(
    {
        "block_table",
        "block_tables",
        "block_ids",
        "physical_blocks",
        "physical_block_ids",
        "kv_block_ids",
        "kv_blocks",
        "slot_mapping",
        "page_table",
        "page_ids",
    }
)
_ALL = HIDDEN_TRUTH_KEYS | PHYSICAL_BLOCK_KEYS


def _token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def scan_leaks(data: Any, record: RecordKind, pointer: str = "") -> list[Issue]:
    """Issues for every hidden-truth or physical-block member anywhere inside `data`."""
    out: list[Issue] = []
    stack: list[tuple[Any, str]] = [(data, pointer)]
    while stack:
        node, ptr = stack.pop()
        if isinstance(node, dict):
            for key in sorted(node, key=str, reverse=True):
                child = f"{ptr}/{_token(str(key))}"
                if key in HIDDEN_TRUTH_KEYS:
                    out.append(
                        Issue(
                            "PLAN.LEAK.HIDDEN_TRUTH",
                            record,
                            child,
                            f"online {record} record carries fixture-only hidden truth {key!r};"
                            " no policy may see realized output lengths",
                        )
                    )
                elif key in PHYSICAL_BLOCK_KEYS:
                    out.append(
                        Issue(
                            "PLAN.LEAK.PHYSICAL_BLOCK",
                            record,
                            child,
                            f"online {record} record carries physical-block field {key!r};"
                            " block ownership belongs to the allocator, not the plan",
                        )
                    )
                else:
                    stack.append((node[key], child))
        elif isinstance(node, list):
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], f"{ptr}/{i}"))
    out.sort(key=lambda issue: issue.pointer)
    return out


def strip_leaks(data: Any) -> Any:
    """A copy of `data` without any leaked member (other values shared, not copied)."""
    if isinstance(data, dict):
        return {k: strip_leaks(v) for k, v in data.items() if k not in _ALL}
    if isinstance(data, list):
        return [strip_leaks(v) for v in data]
    return data
