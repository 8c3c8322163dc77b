"""`bench attach`: add measured step timings to a replay report (pure Python).

The report is treated as generic JSON with `results` and `summary` (the `Report.to_dict`
shape). An `attachments` list is added (or extended); an attachment for the same results
file (same sha256) is replaced, so attaching twice is idempotent. Every figure keeps its own
evidence class: timings are `measured_gpu` or `measured_cpu` exactly as the results file says,
roofline predictions are `modeled`. Nothing already in the report is changed or upgraded.
"""

from __future__ import annotations

import copy
from typing import Any

from cbaudit.bench.results import BenchResults
from cbaudit.model import InputError

ATTACHMENT_KIND = "bench_results"


def _timing(results: BenchResults, index: int) -> dict[str, Any]:
    p = results.points[index]
    stats = p.stats or {}
    modeled = p.roofline.get("modeled_ms_ceilings") or p.roofline.get("modeled_ms_spec")
    return {
        "id": p.id,
        "spec": p.spec,
        "kind": p.kind,
        "status": p.status.value,
        "tokens": p.tokens,
        "decode_rows": p.decode_rows,
        "prefill_tokens": p.prefill_tokens,
        "history_tokens": p.history_tokens,
        "prefill_history_tokens": p.prefill_history_tokens,
        "median_ms": p.median_ms,
        "p90_ms": stats.get("p90_ms"),
        "ci95_ms": stats.get("ci95_ms"),
        "noisy": p.noisy,
        "evidence_class": p.evidence_class.value if p.evidence_class else None,
        "modeled_ms": modeled,
        "modeled_evidence_class": "modeled",
    }


def attachment_for(results: BenchResults, display_path: str) -> dict[str, Any]:
    m = results.manifest
    fits = results.fits
    return {
        "kind": ATTACHMENT_KIND,
        "path": display_path,
        "sha256": results.sha256,
        "format_version": results.format_version,
        "evidence_class": results.evidence_class.value,
        "measured_on_gpu": results.measured_on_gpu,
        "label": results.label,
        "manifest": {
            "device": m["device"]["name"],
            "device_type": m["device"]["type"],
            "torch": m["torch"]["version"],
            "cuda": m["torch"]["cuda"],
            "dtype": m["dtype"],
            "geometry": m["geometry"],
            "backend": m["backend"],
            "graph_mode": m["graph_mode"],
            "grid": m["grid"],
            "seed": m["seed"],
        },
        "step_timings": [_timing(results, i) for i in range(len(results.points))],
        "fits": {
            "evidence_class": "modeled",
            "status": fits["status"],
            "reason": fits.get("reason"),
            "roofline": fits.get("roofline"),
            "mixed_mape": (fits.get("mixed") or {}).get("mape"),
            "chunk_itl": fits.get("chunk_itl", []),
        },
    }


def attach(report: Any, results: BenchResults, *, display_path: str, file: str) -> dict[str, Any]:
    """A new report dict with the attachment added; `report` is left untouched.

    Raises `BENCH.ATTACH.NOT_A_REPORT` when `report` lacks the report shape and
    `BENCH.ATTACH.ATTACHMENTS` when an existing `attachments` member is not a list.
    """
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        raise InputError.at(
            "BENCH.ATTACH.NOT_A_REPORT",
            "not a cbaudit JSON report (an object with a `results` list)",
            file,
            pointer="/results",
        )
    out = copy.deepcopy(report)
    existing = out.get("attachments", [])
    if not isinstance(existing, list):
        raise InputError.at(
            "BENCH.ATTACH.ATTACHMENTS", "`attachments` must be a list", file, pointer="/attachments"
        )
    kept = [
        a
        for a in existing
        if not (
            isinstance(a, dict)
            and a.get("kind") == ATTACHMENT_KIND
            and a.get("sha256") == results.sha256
        )
    ]
    kept.append(attachment_for(results, display_path))
    out["attachments"] = kept
    inputs = out.get("inputs")
    if isinstance(inputs, list):
        entry = {"path": display_path, "sha256": results.sha256}
        if entry not in inputs:
            inputs.append(entry)
            inputs.sort(key=lambda d: str(d.get("path", "")) if isinstance(d, dict) else "")
    return out
