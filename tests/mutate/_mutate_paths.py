"""Paths of the M5.2 bundle fixtures the mutation tests use."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "evidence" / "m5-2-continuous-batching"
LOOP2_VALID = BUNDLE / "loop2" / "valid.case.json"
LOOP2_ITER6 = BUNDLE / "loop2" / "valid-iteration-6.case.json"
LOOP4 = BUNDLE / "loop4" / "selective_batching.yaml"
LOOP5 = BUNDLE / "loop5" / "admission_uncertainty.yaml"
LOOP6 = BUNDLE / "loop6" / "chunked_prefill.yaml"
