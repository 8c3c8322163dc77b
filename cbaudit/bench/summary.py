"""`python -m cbaudit.bench.summary RESULTS`: the short GPU-check summary (standard library).

Prints achieved copy bandwidth and GEMM FLOP/s against the spec sheet, the sentinel's
coefficient of variation and drift, the roofline fit and its MAPE on mixed points, and the
point counts. It reads the JSON directly so it runs wherever python3 does; validation is
`cbaudit bench check`'s job.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _pct(x: Any) -> str:
    return "n/a" if x is None else f"{100 * float(x):.1f}%"


def _si(x: Any, unit: str) -> str:
    if x is None:
        return "n/a"
    v = float(x)
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")):
        if v >= scale:
            return f"{v / scale:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


def summarize_results(data: dict[str, Any]) -> list[str]:
    m = data["manifest"]
    dev = m["device"]
    lines = [
        f"results: {data['label']} [{data['evidence_class']}]",
        f"device: {dev.get('name')} (cc {dev.get('compute_capability')},"
        f" driver {dev.get('driver')}); torch {m['torch']['version']} cuda {m['torch']['cuda']}",
        f"run: dtype {m['dtype']}, geometry {m['geometry']['name']} x{m['geometry']['layers']},"
        f" backend {m['backend']}, graph {m['graph_mode']}, grid {m['grid']['name']},"
        f" elapsed {m['elapsed_s']:.1f} s of {m['budget_s']} s",
    ]
    c = data.get("ceilings") or {}
    for name, unit in (("copy", "B/s"), ("gemm", "FLOP/s")):
        p = c.get(name) or {}
        if p.get("status") == "ok":
            lines.append(
                f"{name}: {_si(p.get('achieved'), unit)} achieved vs spec"
                f" {_si(p.get('spec'), unit)} = {_pct(p.get('fraction_of_spec'))}"
            )
        else:
            lines.append(f"{name}: not measured ({p.get('reason')})")
    s = data.get("sentinel") or {}
    if s:
        cvs = s.get("sample_cv") or []
        meds = [round(x, 4) for x in s.get("medians_ms", [])]
        lines.append(
            f"sentinel {s.get('spec')}: medians {meds} ms,"
            f" CV of medians {_pct(s.get('cv'))}, sample CV {[_pct(x) for x in cvs]},"
            f" drift {_pct(s.get('drift'))}{' (FLAGGED)' if s.get('drift_flag') else ''}"
        )
    counts: dict[str, int] = {}
    for p in data["points"]:
        counts[p["status"]] = counts.get(p["status"], 0) + 1
    noisy = sum(1 for p in data["points"] if p.get("noisy"))
    lines.append(f"points: {counts}, noisy {noisy}")
    f = data["fits"]
    if f["status"] == "ok":
        r = f["roofline"]
        lines.append(
            f"roofline fit on {r['points']} pure points:"
            f" effective {_si(r['effective_bytes_per_s'], 'B/s')}"
            f" ({_pct(r['mbu_of_spec'])} of spec), {_si(r['effective_flops_per_s'], 'FLOP/s')}"
            f" ({_pct(r['mfu_of_spec'])} of spec), t0 {r['t0_ms']:.4f} ms, fit MAPE"
            f" {_pct(r['mape_fit'])}"
        )
        mx = f["mixed"]
        lines.append(
            f"additivity: MAPE on {mx['points']} mixed points {_pct(mx['mape'])}"
            f" (max {_pct(mx['max_ape'])})"
        )
        for e in f.get("chunk_itl", [])[:8]:
            lines.append(
                f"chunk ITL {e['spec']}: {e['mixed_ms']:.3f} ms vs decode {e['decode_ms']:.3f} ms"
                f" (+{e['delta_ms']:.3f} ms, x{e['ratio']:.2f})"
            )
    else:
        lines.append(f"fits: {f['status']} ({f.get('reason')})")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write("usage: python -m cbaudit.bench.summary RESULTS\n")
        return 2
    try:
        data = json.loads(Path(args[0]).read_text(encoding="utf-8"))
        lines = summarize_results(data)
    except (OSError, ValueError, KeyError, TypeError) as err:
        sys.stderr.write(f"cbaudit: {args[0]}: cannot summarize: {err}\n")
        return 2
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
