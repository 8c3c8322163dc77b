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
LOOP7 = BUNDLE / "loop7" / "slo_overload.yaml"
LOOP8 = BUNDLE / "loop8" / "fairness_starvation.yaml"
LOOP9 = BUNDLE / "loop9" / "preemption_resume.yaml"
LOOP10 = BUNDLE / "loop10-runtime" / "runtime_policy_fixture.json"
LOOP11_SENSITIVITY = BUNDLE / "loop11" / "paper_sensitivity_fixture.yaml"
LOOP11_CLOSURE = BUNDLE / "loop11" / "failure_closure.json"
CONTRACTS = REPO / "registry" / "paper_contracts.yaml"
RESULTS = REPO / "registry" / "source_reported_results.yaml"
