"""Paths of the Loop 2 evidence used by the contract tests."""

from __future__ import annotations

from pathlib import Path

LOOP2 = Path(__file__).resolve().parents[2] / "evidence" / "m5-2-continuous-batching" / "loop2"
VALID = LOOP2 / "valid.case.json"
VALID6 = LOOP2 / "valid-iteration-6.case.json"
TRACE = LOOP2 / "iterations-5-6.trace.jsonl"
NEGATIVE = LOOP2 / "negative"
