"""The one registry of check kinds (`KINDS`) and of the mutation targets they declare (`TARGETS`).

The gate, `cbaudit mutate` and the CLI look kinds up here; `mutate` itself receives them by
parameter (docs/architecture.md).
"""

from cbaudit.kinds.registry import KINDS, TARGETS

__all__ = ["KINDS", "TARGETS"]
