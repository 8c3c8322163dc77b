"""Paths of the Loop 2 evidence used by the contract tests."""

from __future__ import annotations

from repo_paths import M52

LOOP2 = M52 / "loop2"
VALID = LOOP2 / "valid.case.json"
VALID6 = LOOP2 / "valid-iteration-6.case.json"
TRACE = LOOP2 / "iterations-5-6.trace.jsonl"
NEGATIVE = LOOP2 / "negative"
