"""Fixtures for the Loop 2 contract tests: the valid case as data."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _contract_paths import VALID


@pytest.fixture
def valid_data() -> dict[str, Any]:
    """A fresh copy of the valid iteration-5 case as plain JSON data."""
    data: dict[str, Any] = json.loads(VALID.read_text(encoding="utf-8"))
    return data
