"""The one place cbaudit imports torch (lazily), with a message naming the extra."""

from __future__ import annotations

import importlib.util
import warnings
from types import ModuleType

from cbaudit.model import InputError

EXTRA_HINT = "install the bench extra: pip install 'cbaudit[bench]'"


def torch_available() -> bool:
    """Whether torch can be imported, without importing it."""
    return importlib.util.find_spec("torch") is not None


def require_torch() -> ModuleType:
    """Import torch or raise a located `BENCH.TORCH.MISSING` (exit 2) naming the extra."""
    try:
        with warnings.catch_warnings():
            # torch warns at import when NumPy is absent; the runner never needs NumPy.
            warnings.filterwarnings("ignore", message=".*NumPy.*")
            import torch
    except ImportError as err:
        raise InputError.at(
            "BENCH.TORCH.MISSING", f"torch is not installed; {EXTRA_HINT}", "cbaudit bench"
        ) from err
    return torch
