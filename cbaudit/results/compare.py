"""Compare two results: comparability first, then honest statistics per point.

The order is the article's (0x0E): when any coordinate of the comparison set differs, or a
checked manifest field differs without `allow`, the comparison refuses to rank and lists every
difference with both values. Only a comparable pair gets statistics: per point each side's
median with a distribution-free CI and n, the change in medians, a two-sided Mann-Whitney U
test (its variant named), "~" when p > alpha (as benchstat prints it), numbered footnotes,
the metric's direction from the registry, and a geometric mean over the points both sides have.

A single value (n = 1) is shown as reported, with no variance and no significance claim.
Findings are warnings unless the caller's `fail_on` names their kind, so a plain comparison
exits 0 and a CI gate can ask for `regression` or `incomparable` to fail it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from cbaudit.model import CheckResult, Finding, Location, Severity, UsageError
from cbaudit.model.findings import pointer_join
from cbaudit.results.coordinates import (
    MANIFEST_FIELDS,
    CoordinateDiff,
    comparison_keys,
    differences,
)
from cbaudit.results.metrics import Direction, MetricInfo
from cbaudit.results.samples import Point, SampleSet, iter_points
from cbaudit.results.stats import (
    MWUVariant,
    geometric_mean,
    iqr_over_median,
    mann_whitney_u,
    median_ci,
    min_attainable_p,
)

FAIL_KINDS = ("regression", "incomparable")

FOOTNOTE_TEXT = {
    "few": "too few samples: no {conf:.0%} median CI or no attainable p <= alpha at these n",
    "noisy": "high variance: IQR/median above {noisy:.0%} on at least one side",
    "only_a": "point present only in A: not compared",
    "only_b": "point present only in B: not compared",
    "single": "single reported value (n = 1): shown as reported, no variance, no significance",
    "direction": "metric not in the metric registry: direction unknown, no regression verdict",
    "no_value": "no raw samples (text or median only): shown as reported, untested",
}


@dataclass(frozen=True)
class CompareOptions:
    """How a comparison is judged."""

    alpha: float = 0.05
    min_change: float = 0.0  # a fraction: changes below it are "~" even when significant
    fail_on: frozenset[str] = frozenset()
    allow: frozenset[str] = frozenset()  # manifest fields allowed to differ
    confidence: float = 0.95
    noisy_iqr: float = 0.05

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise UsageError(f"--alpha must be in (0, 1), got {self.alpha}")
        if self.min_change < 0.0:
            raise UsageError("--min-change must be >= 0")
        bad = sorted(set(self.fail_on) - set(FAIL_KINDS))
        if bad:
            raise UsageError(f"--fail-on takes {', '.join(FAIL_KINDS)}; got {', '.join(bad)}")
        unknown = sorted(set(self.allow) - set(MANIFEST_FIELDS))
        if unknown:
            raise UsageError(
                f"--allow takes manifest fields {', '.join(MANIFEST_FIELDS)};"
                f" got {', '.join(unknown)}"
            )


@dataclass
class _Footnotes:
    conf: float
    noisy: float
    order: list[str] = field(default_factory=list)

    def ref(self, kind: str) -> int:
        if kind not in self.order:
            self.order.append(kind)
        return self.order.index(kind) + 1

    def render(self) -> list[dict[str, Any]]:
        return [
            {
                "n": i + 1,
                "kind": k,
                "text": FOOTNOTE_TEXT[k].format(conf=self.conf, noisy=self.noisy),
            }
            for i, k in enumerate(self.order)
        ]


def _coord_pointer(item: SampleSet, key: str) -> str:
    pointers = item.extra.get("pointers")
    if isinstance(pointers, Mapping):  # peers' files: where each coordinate is read from
        return str(pointers.get(key) or item.pointer)
    if item.adapter == "bench-results":
        return item.pointer + "/manifest"
    if item.adapter == "replay-report":
        return pointer_join("/summary/coordinates", *key.split("."))
    parts = key.split(".")
    return pointer_join(item.pointer, "coordinates", *parts)


def _severity(kind: str, opts: CompareOptions) -> Severity:
    return Severity.ERROR if kind in opts.fail_on else Severity.WARNING


def comparability_findings(
    a: SampleSet, b: SampleSet, opts: CompareOptions
) -> tuple[list[CoordinateDiff], list[dict[str, Any]], list[str], list[Finding]]:
    """Coordinate differences, manifest differences, allowed fields and their findings."""
    sev = _severity("incomparable", opts)
    findings: list[Finding] = []
    diffs = differences(a.coordinates, b.coordinates, comparison_keys(a.coordinates, b.coordinates))
    for d in diffs:
        code = "COMPARE.COORDINATE.UNREPORTED" if d.unreported else "COMPARE.COORDINATE.DIFFERS"
        findings.append(
            Finding(
                code,
                f"{d.coordinate}: A={d.a!r} B={d.b!r}",
                sev,
                Location(file=a.file, pointer=_coord_pointer(a, d.coordinate)),
            )
        )
    manifest_diffs: list[dict[str, Any]] = []
    allowed: list[str] = []
    if a.manifest is not None or b.manifest is not None:
        if a.manifest is None or b.manifest is None:
            missing = "A" if a.manifest is None else "B"
            manifest_diffs.append({"field": "manifest", "a": None, "b": None, "allowed": False})
            findings.append(
                Finding(
                    "COMPARE.MANIFEST.MISSING",
                    f"{missing} has no measurement manifest; measured files need one to compare",
                    sev,
                    Location(file=a.file, pointer=a.pointer),
                )
            )
        else:
            for name in MANIFEST_FIELDS:
                va, vb = a.manifest.get(name), b.manifest.get(name)
                if va is not None and va == vb:
                    continue
                ok = name in opts.allow
                manifest_diffs.append({"field": name, "a": va, "b": vb, "allowed": ok})
                if ok:
                    allowed.append(name)
                    findings.append(
                        Finding(
                            "COMPARE.MANIFEST.ALLOWED",
                            f"manifest field {name} differs and was allowed: A={va!r} B={vb!r}",
                            Severity.NOTE,
                            Location(file=a.file, pointer=pointer_join(a.pointer, "manifest")),
                        )
                    )
                else:
                    code = "COMPARE.MANIFEST.MISMATCH"
                    msg = (
                        f"manifest field {name}: A={va!r} B={vb!r} (pass --allow {name} to accept)"
                    )
                    if va is None or vb is None:
                        code = "COMPARE.MANIFEST.UNREPORTED"
                        msg = f"manifest field {name} not recorded: A={va!r} B={vb!r}"
                    findings.append(
                        Finding(
                            code,
                            msg,
                            sev,
                            Location(file=a.file, pointer=pointer_join(a.pointer, "manifest")),
                        )
                    )
    return diffs, manifest_diffs, allowed, findings


def _side(point: Point, conf: float) -> dict[str, Any]:
    if not point.samples:
        return {"n": 0, "median": None, "ci": None, "reported": point.reported}
    ci = median_ci(point.samples, conf)
    return {
        "n": ci.n,
        "median": ci.median,
        "ci": None if ci.low is None else [ci.low, ci.high],
        "ci_coverage": ci.coverage,
        "reported": point.reported,
    }


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.6g}"


def _side_text(side: Mapping[str, Any]) -> str:
    if side["n"] == 0:
        return f"{side['reported']!s} (text)"
    ci = side["ci"]
    ci_text = f" [{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else ""
    return f"{_fmt(side['median'])}{ci_text} n={side['n']}"


def _analyse_point(
    key: str,
    pa: Point,
    pb: Point,
    info: MetricInfo | None,
    opts: CompareOptions,
    notes: _Footnotes,
) -> dict[str, Any]:
    sa, sb = _side(pa, opts.confidence), _side(pb, opts.confidence)
    row: dict[str, Any] = {
        "point": key,
        "metric": pa.metric,
        "unit": pa.unit,
        "direction": info.direction.value if info else None,
        "a": sa,
        "b": sb,
        "change_pct": None,
        "p_value": None,
        "test": None,
        "verdict": "not tested",
        "footnotes": [],
    }
    refs: list[int] = row["footnotes"]
    if sa["n"] == 0 or sb["n"] == 0:
        refs.append(notes.ref("no_value"))
        return row
    ma, mb = float(sa["median"]), float(sb["median"])
    if ma != 0.0:
        row["change_pct"] = (mb - ma) / abs(ma) * 100.0
    if sa["n"] == 1 or sb["n"] == 1:
        single = (sa["n"] == 1 and pa.reported is not None) or (
            sb["n"] == 1 and pb.reported is not None
        )
        refs.append(notes.ref("single" if single else "few"))
        return row
    test = mann_whitney_u(pa.samples, pb.samples)
    row["p_value"] = test.p_value
    row["test"] = test.variant.value
    if sa["ci"] is None or sb["ci"] is None or min_attainable_p(sa["n"], sb["n"]) > opts.alpha:
        refs.append(notes.ref("few"))
    noisy = [iqr_over_median(pa.samples), iqr_over_median(pb.samples)]
    if any(v is not None and v > opts.noisy_iqr for v in noisy):
        refs.append(notes.ref("noisy"))
    change = row["change_pct"]
    if test.p_value > opts.alpha or change is None or abs(change) < opts.min_change * 100.0:
        row["verdict"] = "~"
        return row
    if info is None:
        refs.append(notes.ref("direction"))
        row["verdict"] = "changed"
        return row
    worse = change > 0 if info.direction is Direction.LOWER else change < 0
    row["verdict"] = "regression" if worse else ("improvement" if change != 0 else "~")
    return row


def _point_line(row: Mapping[str, Any]) -> str:
    change = row["change_pct"]
    delta = "~" if row["verdict"] == "~" else ("-" if change is None else f"{change:+.2f}%")
    short = {MWUVariant.EXACT.value: "exact U", MWUVariant.NORMAL.value: "normal U"}
    p = (
        ""
        if row["p_value"] is None
        else f" p={row['p_value']:.3g} ({short.get(row['test'], row['test'])})"
    )
    marks = "".join(f"[{n}]" for n in row["footnotes"])
    return (
        f"A {_side_text(row['a'])} | B {_side_text(row['b'])} | {delta}{p} {row['verdict']}"
        f"{' ' + marks if marks else ''}"
    ).strip()


def compare_pair(
    a: SampleSet,
    b: SampleSet,
    metrics: Mapping[str, MetricInfo],
    opts: CompareOptions,
) -> list[CheckResult]:
    """The comparison of `a` against `b` (B relative to A): one pair result plus one per point."""
    subject = f"{a.label} vs {b.label}"
    diffs, manifest_diffs, allowed, findings = comparability_findings(a, b, opts)
    refused = bool(diffs) or any(not m["allowed"] for m in manifest_diffs)
    base_metrics: dict[str, Any] = {
        "a": a.label,
        "b": b.label,
        "comparable": not refused,
        "differing_coordinates": [d.to_dict() for d in diffs],
        "manifest_differences": manifest_diffs,
        "manifest_allowed": allowed,
        "alpha": opts.alpha,
        "min_change_pct": opts.min_change * 100.0,
        "ranking_produced": False,
    }
    if refused:
        n = len(diffs) + sum(1 for m in manifest_diffs if not m["allowed"])
        return [_refusal(a, subject, n, findings, base_metrics, opts)]
    notes = _Footnotes(opts.confidence, opts.noisy_iqr)
    rows = _point_rows(a, b, metrics, opts, notes)
    findings += _regressions(rows, b, opts)
    geo = _geomeans(rows)
    footnotes = notes.render()
    findings += _footnote_findings(footnotes, a)
    counts = _verdict_counts(rows)
    base_metrics.update(
        {
            "points": rows,
            "geomean": geo,
            "tests": sorted({r["test"] for r in rows if r.get("test")}),
            "footnotes": footnotes,
            "verdicts": counts,
            "ranking_produced": any(r["verdict"] in ("regression", "improvement") for r in rows),
        }
    )
    pair = CheckResult(
        check="compare-results",
        subject=subject,
        findings=tuple(findings),
        metrics=base_metrics,
        evidence_class=a.evidence_class,
        reason=_pair_reason(counts, geo),
    )
    return [pair, *(_point_result(row, a) for row in rows)]


def _refusal(
    a: SampleSet,
    subject: str,
    n: int,
    findings: list[Finding],
    base_metrics: dict[str, Any],
    opts: CompareOptions,
) -> CheckResult:
    """The one result of a pair that differs in `n` coordinates or manifest fields: no ranking."""
    refusal = Finding(
        "COMPARE.INCOMPARABLE",
        f"refusing to rank: {n} coordinate(s) differ or are unreported",
        _severity("incomparable", opts),
        Location(file=a.file, pointer=a.pointer),
    )
    return CheckResult(
        check="compare-results",
        subject=subject,
        findings=(*findings, refusal),
        metrics=base_metrics,
        evidence_class=a.evidence_class,
        reason=f"incomparable: {n} difference(s); no ranking",
    )


def _point_rows(
    a: SampleSet,
    b: SampleSet,
    metrics: Mapping[str, MetricInfo],
    opts: CompareOptions,
    notes: _Footnotes,
) -> list[dict[str, Any]]:
    """One row per point of either side: analysed when both sides have it, else not compared."""
    rows: list[dict[str, Any]] = []
    for key, pa, pb in iter_points(a, b):
        if pa is None or pb is None:
            kind = "only_a" if pb is None else "only_b"
            rows.append(
                {
                    "point": key,
                    "verdict": "not compared",
                    "footnotes": [notes.ref(kind)],
                    "a": None,
                    "b": None,
                }
            )
            continue
        rows.append(_analyse_point(key, pa, pb, metrics.get(pa.metric), opts, notes))
    return rows


def _regressions(
    rows: Sequence[Mapping[str, Any]], b: SampleSet, opts: CompareOptions
) -> list[Finding]:
    """A finding, located in B, for every point whose verdict is a regression."""
    sev = _severity("regression", opts)
    return [
        Finding(
            "COMPARE.REGRESSION",
            f"point {row['point']}: {row['metric']} changed {row['change_pct']:+.2f}%"
            f" (p={row['p_value']:.3g}, {row['direction']})",
            sev,
            Location(file=b.file, pointer=b.pointer),
        )
        for row in rows
        if row["verdict"] == "regression"
    ]


def _footnote_findings(footnotes: Sequence[Mapping[str, Any]], a: SampleSet) -> list[Finding]:
    """Each numbered footnote as a note (COMPARE.NOTE.<KIND>), located in A."""
    return [
        Finding(
            "COMPARE.NOTE." + str(note["kind"]).upper(),
            f"[{note['n']}] {note['text']}",
            Severity.NOTE,
            Location(file=a.file, pointer=a.pointer),
        )
        for note in footnotes
    ]


def _verdict_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many points got each verdict, by verdict name."""
    return {
        v: sum(1 for r in rows if r["verdict"] == v) for v in sorted({r["verdict"] for r in rows})
    }


def _pair_reason(counts: Mapping[str, int], geo: Mapping[str, Mapping[str, Any]]) -> str:
    """The pair's one-line reason: the verdict counts, then each metric's geometric mean."""
    geo_text = ", ".join(
        f"{m} geomean {g['change_pct']:+.2f}% over {g['points']}" for m, g in sorted(geo.items())
    )
    return (
        "comparable; "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + (f"; {geo_text}" if geo_text else "")
    )


def _point_result(row: dict[str, Any], a: SampleSet) -> CheckResult:
    """One point's result: its row as metrics and its line as the reason."""
    return CheckResult(
        check="compare-results.point",
        subject=str(row["point"]),
        metrics=row,
        evidence_class=a.evidence_class,
        reason=_point_line(row)
        if row["verdict"] != "not compared"
        else "not compared " + "".join(f"[{n}]" for n in row["footnotes"]),
    )


def _geomeans(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Geometric mean of B/A median ratios per metric, over the points both sides have."""
    ratios: dict[str, list[float]] = {}
    for row in rows:
        a, b = row.get("a"), row.get("b")
        if not a or not b or not a.get("median") or b.get("median") is None:
            continue
        ma, mb = float(a["median"]), float(b["median"])
        if ma > 0 and mb > 0:
            ratios.setdefault(str(row["metric"]), []).append(mb / ma)
    return {
        m: {
            "ratio": geometric_mean(v),
            "change_pct": (geometric_mean(v) - 1.0) * 100.0,
            "points": len(v),
        }
        for m, v in sorted(ratios.items())
    }


def compare_all_pairs(
    sets: Sequence[SampleSet], metrics: Mapping[str, MetricInfo], opts: CompareOptions
) -> tuple[list[CheckResult], dict[str, Any]]:
    """Check every pair of a registry; rank none unless comparable (the article finds none)."""
    results: list[CheckResult] = []
    comparable_pairs: list[list[str]] = []
    for a, b in combinations(sets, 2):
        pair = compare_pair(a, b, metrics, opts)
        if pair[0].metrics["comparable"]:
            comparable_pairs.append([str(a.extra.get("id")), str(b.extra.get("id"))])
        results.extend(pair)
    summary = {
        "results": len(sets),
        "pairs_checked": len(sets) * (len(sets) - 1) // 2,
        "comparable_pairs": comparable_pairs,
        "generic_policy_ranking_allowed": False,
    }
    return results, summary


def sets_by_id(sets: Iterable[SampleSet]) -> dict[str, SampleSet]:
    return {str(s.extra.get("id")): s for s in sets}
