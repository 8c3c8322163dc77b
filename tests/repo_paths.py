"""Paths tests share: the repository, its evidence folder, and the shared folder beside it.

Import these from here (`from repo_paths import REPO`), never from a `conftest` module: several
test folders have their own conftest, and `import conftest` would pick whichever came first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EVIDENCE = REPO / "evidence"
SHARED = REPO.parent / "shared"

M52 = EVIDENCE / "m5-2-continuous-batching"
CONFORMANCE = EVIDENCE / "vllm-v0.23.0-conformance"


def loop_checks(*folders: str) -> list[Any]:
    """The M5.2 bundle's declared checks from the given loop folders, as the gate loads them."""
    from cbaudit.gate.manifest import load_bundle

    roots = {(M52 / f).resolve() for f in folders}
    return [s for s in load_bundle(M52).checks if s.base_dir.resolve() in roots]
