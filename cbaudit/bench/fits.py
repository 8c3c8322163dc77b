"""Fits over measured points (pure Python).

1. The roofline `T = max(bytes * a, FLOPs * b) + t0` (a = 1/(BW x MBU), b = 1/(peak x MFU))
   fitted on decode-only and prefill-only points by least squares on relative error.
2. Its error (MAPE) on the mixed points: if mixed steps "add up" under the roofline, the
   model fitted on pure points predicts them.
3. The inter-token cost of a chunk: `T_mixed(B, L, C) - T_decode(B, L)`, for every mixed point
   whose decode part was measured alone.

Only `measured_gpu` points feed fits; a CPU run gets `status: not_run`.

The max model is memory-bound exactly when FLOPs/bytes is below a/b, so a regime split is a
threshold on arithmetic intensity. The fit tries every threshold that leaves points on both
sides, solves the 3-parameter weighted least squares for each, and keeps the one with the
smallest squared relative error under the max model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cbaudit.model import EvidenceClass

MIN_FIT_POINTS = 3


@dataclass(frozen=True, slots=True)
class RooflineFit:
    """Fitted coefficients: ms per byte, ms per FLOP, fixed ms."""

    ms_per_byte: float
    ms_per_flop: float
    t0_ms: float

    def predict_ms(self, nbytes: float, flops: float) -> float:
        return max(nbytes * self.ms_per_byte, flops * self.ms_per_flop) + self.t0_ms


def _solve3(m: list[list[float]], v: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when singular."""
    a = [[*row, rhs] for row, rhs in zip(m, v, strict=True)]
    n = len(a)
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[piv][col]) < 1e-12:
            return None
        a[col], a[piv] = a[piv], a[col]
        for r in range(n):
            if r != col:
                f = a[r][col] / a[col][col]
                for c in range(col, n + 1):
                    a[r][c] -= f * a[col][c]
    return [a[i][n] / a[i][i] for i in range(n)]


def _lsq(rows: list[list[float]], targets: list[float]) -> list[float] | None:
    """Least squares of rows @ p ~= targets through the normal equations."""
    k = len(rows[0])
    ata = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    atb = [sum(r[i] * t for r, t in zip(rows, targets, strict=True)) for i in range(k)]
    return _solve3(ata, atb)


def _objective(fit: RooflineFit, pts: Sequence[tuple[float, float, float]]) -> float:
    return sum(((fit.predict_ms(x, y) - t) / t) ** 2 for x, y, t in pts)


def fit_roofline(pts: Sequence[tuple[float, float, float]]) -> RooflineFit | None:
    """Fit `(bytes, flops, ms)` triples; None with fewer than 3 points or no valid split."""
    if len(pts) < MIN_FIT_POINTS or any(t <= 0 for _, _, t in pts):
        return None
    sx = max(x for x, _, _ in pts) or 1.0
    sy = max(y for _, y, _ in pts) or 1.0
    order = sorted(pts, key=lambda p: p[1] / p[0] if p[0] else float("inf"))
    best: tuple[float, RooflineFit] | None = None
    for split in range(1, len(order)):
        mem, comp = order[:split], order[split:]
        for with_t0 in (True, False):
            rows: list[list[float]] = []
            targets: list[float] = []
            for x, _, t in mem:
                rows.append([x / sx / t, 0.0] + ([1.0 / t] if with_t0 else []))
                targets.append(1.0)
            for _, y, t in comp:
                rows.append([0.0, y / sy / t] + ([1.0 / t] if with_t0 else []))
                targets.append(1.0)
            if len(rows) < len(rows[0]):
                continue
            sol = _lsq(rows, targets)
            if sol is None:
                continue
            a, b = sol[0] / sx, sol[1] / sy
            t0 = sol[2] if with_t0 else 0.0
            if a <= 0 or b <= 0 or t0 < 0:
                continue
            fit = RooflineFit(a, b, t0)
            score = _objective(fit, pts)
            if best is None or score < best[0] - 1e-15:
                best = (score, fit)
    return best[1] if best else None


def mape(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Mean absolute percentage error of (predicted, measured) pairs, as a fraction."""
    if not pairs:
        return None
    return sum(abs(p - m) / m for p, m in pairs) / len(pairs)


def _usable(p: Mapping[str, Any]) -> bool:
    return (
        p.get("status") == "ok"
        and p.get("median_ms") is not None
        and p.get("evidence_class") == EvidenceClass.MEASURED_GPU.value
    )


def chunk_itl(points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Inter-token cost of each measured mixed point against its decode-only twin."""
    from cbaudit.bench.spec import parse_spec

    by_spec = {p["spec"]: p for p in points if _usable(p)}
    out: list[dict[str, Any]] = []
    for p in points:
        if not _usable(p) or p["kind"] != "mixed":
            continue
        spec = parse_spec(p["spec"])
        dec = by_spec.get(spec.decode_part)
        if dec is None:
            continue
        pre = by_spec.get(spec.prefill_part)
        t_mix, t_dec = float(p["median_ms"]), float(dec["median_ms"])
        out.append(
            {
                "id": p["id"],
                "spec": p["spec"],
                "decode_id": dec["id"],
                "decode_rows": p["decode_rows"],
                "history_tokens": p["history_tokens"],
                "prefill_tokens": p["prefill_tokens"],
                "mixed_ms": t_mix,
                "decode_ms": t_dec,
                "delta_ms": t_mix - t_dec,
                "ratio": t_mix / t_dec,
                "prefill_alone_ms": float(pre["median_ms"]) if pre else None,
                "separate_sum_ms": t_dec + float(pre["median_ms"]) if pre else None,
            }
        )
    return out


def compute_fits(
    points: Sequence[Mapping[str, Any]],
    *,
    on_gpu: bool,
    spec_bandwidth: float | None = None,
    spec_flops: float | None = None,
) -> dict[str, Any]:
    """The `fits` block of a results file."""
    base: dict[str, Any] = {"evidence_class": EvidenceClass.MODELED.value}
    if not on_gpu:
        return {
            **base,
            "status": "not_run",
            "reason": "CPU run: measured_cpu points never feed fits",
            "roofline": None,
            "mixed": None,
            "chunk_itl": [],
        }
    usable = [p for p in points if _usable(p)]
    pure = [p for p in usable if p["kind"] in ("decode", "prefill")]
    triples = [
        (float(p["roofline"]["bytes"]), float(p["roofline"]["flops"]), float(p["median_ms"]))
        for p in pure
    ]
    fit = fit_roofline(triples)
    itl = chunk_itl(points)
    if fit is None:
        return {
            **base,
            "status": "insufficient",
            "reason": f"{len(pure)} usable pure points; the roofline fit needs"
            f" >= {MIN_FIT_POINTS} spanning both regimes",
            "roofline": None,
            "mixed": None,
            "chunk_itl": itl,
        }
    eff_bw = 1e3 / fit.ms_per_byte
    eff_fl = 1e3 / fit.ms_per_flop
    roof = {
        "ms_per_byte": fit.ms_per_byte,
        "ms_per_flop": fit.ms_per_flop,
        "t0_ms": fit.t0_ms,
        "effective_bytes_per_s": eff_bw,
        "effective_flops_per_s": eff_fl,
        "mbu_of_spec": eff_bw / spec_bandwidth if spec_bandwidth else None,
        "mfu_of_spec": eff_fl / spec_flops if spec_flops else None,
        "points": len(triples),
        "mape_fit": mape([(fit.predict_ms(x, y), t) for x, y, t in triples]),
    }
    per_point = []
    for p in usable:
        if p["kind"] != "mixed":
            continue
        pred = fit.predict_ms(float(p["roofline"]["bytes"]), float(p["roofline"]["flops"]))
        meas = float(p["median_ms"])
        per_point.append(
            {
                "id": p["id"],
                "predicted_ms": pred,
                "measured_ms": meas,
                "ape": abs(pred - meas) / meas,
            }
        )
    mixed = {
        "points": len(per_point),
        "mape": mape([(e["predicted_ms"], e["measured_ms"]) for e in per_point]),
        "max_ape": max((e["ape"] for e in per_point), default=None),
        "per_point": per_point,
    }
    return {
        **base,
        "status": "ok",
        "reason": None,
        "roofline": roof,
        "mixed": mixed,
        "chunk_itl": itl,
    }
