"""Small articles and registries written by the formula tests (not the real article)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from cbaudit.formulas.normalize import NORMALIZATION_ID, RULES, equation_hash

EQ1 = r"U_{slot}=\frac{\sum_r G_r}{B\max_r G_r}."
EQ2 = r"M=\left\lceil\frac{S}{C}\right\rceil,"
EQ3 = r"I=n\max_i t_i-\sum_i t_i."
ARTICLE = f"""A small article.

Slot occupancy:

$${EQ1}$$

Some prose with inline $x$ math and a price of \\$5.

$${EQ2}$$ and a proxy $${EQ3}$$
"""


def write_article(path: Path, text: str = ARTICLE) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def registry_data() -> dict[str, Any]:
    """A registry binding EQ1 -> F01, EQ2 -> F02, EQ3 declared unbound."""
    return copy.deepcopy(
        {
            "schema_version": 1,
            "normalization": {"id": NORMALIZATION_ID, "rules": list(RULES)},
            "families": {"batching": {"title": "Batching"}},
            "unit_families": {
                "ratio": {"owner": "M5.2", "description": "ratios"},
                "iterations": {"owner": "M5.2", "description": "invocations"},
                "kv_bytes": {"owner": "M5.1", "description": "bytes"},
            },
            "formulas": [
                {
                    "id": "F01",
                    "name": "slot_utilization",
                    "family": "batching",
                    "plain": "U_slot = sum_r(G_r) / (B*max_r(G_r))",
                    "unit_family": "ratio",
                    "owner": "M5.2",
                    "equations": [{"index": 1, "sha256": equation_hash(EQ1)}],
                    "examples": [
                        {"target": "U_slot", "bindings": {"B": 2, "G_r": [2, 8]}, "expect": 0.625}
                    ],
                },
                {
                    "id": "F02",
                    "name": "chunk_count",
                    "family": "batching",
                    "plain": "M = ceil(S/C)",
                    "unit_family": "iterations",
                    "owner": "M5.2",
                    "equations": [{"index": 2, "sha256": equation_hash(EQ2)}],
                    "examples": [{"target": "M", "bindings": {"S": 10, "C": 4}, "expect": 3}],
                },
            ],
            "unbound": [
                {
                    "index": 3,
                    "sha256": equation_hash(EQ3),
                    "unbound_ok": True,
                    "reason": "a proxy the registry does not name",
                }
            ],
        }
    )


def write_registry(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
