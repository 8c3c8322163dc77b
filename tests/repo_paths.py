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
LECTURE4 = EVIDENCE / "lecture-4-continuous-batching"


def loop_checks(*folders: str) -> list[Any]:
    """The M5.2 bundle's declared checks from the given loop folders, as the gate loads them."""
    from cbaudit.checks.bundle import load_bundle
    from cbaudit.kinds import KINDS

    roots = {(M52 / f).resolve() for f in folders}
    return [s for s in load_bundle(M52, KINDS).checks if s.base_dir.resolve() in roots]


def run_declared(check: Any) -> list[Any]:
    """The results of one declared check, run as the gate runs it."""
    from cbaudit.gate.runner import run_check
    from cbaudit.kinds import KINDS

    return list(run_check(check, KINDS).results)


def declare(
    entry: dict[str, Any], base_dir: Path, bundle_root: Path, manifest: str = "checks.yaml"
) -> Any:
    """One hand-written entry as a declared check of bundle `b` (parsed with the registry)."""
    from cbaudit.checks.bundle import declare as declare_check
    from cbaudit.kinds import KINDS

    return declare_check(
        entry,
        bundle="b",
        base_dir=base_dir,
        manifest=manifest,
        pointer="/checks/0",
        bundle_root=bundle_root,
        kinds=KINDS,
    )
