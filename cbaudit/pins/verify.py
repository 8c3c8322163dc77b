"""Verify a pin manifest against a source: revision identity, file bytes, markers at their lines."""

from __future__ import annotations

from dataclasses import dataclass

from cbaudit.model import CheckResult, CheckStatus, Finding, Severity, UsageError
from cbaudit.model.findings import pointer_join
from cbaudit.pins.digests import ContentId, eol_variants, split_lines
from cbaudit.pins.manifest import LoadedManifest, Marker, PinnedFile, consistency_findings
from cbaudit.pins.sources import FileAbsent, GitSource, PathRefused, SourceReader

_SHOW = 80


@dataclass(frozen=True, slots=True)
class FileOutcome:
    """What verification observed about one pinned file."""

    path: str
    verified: bool  # the pinned bytes were found (exactly, or behind a line-ending filter)
    observed: ContentId | None  # identity of the pinned bytes when verified, else as read
    markers_checked: int
    markers_ok: int


@dataclass(frozen=True)
class Verification:
    """Results of one verification plus what an attestation needs."""

    results: tuple[CheckResult, ...]
    files: tuple[FileOutcome, ...]
    source_kind: str

    @property
    def passed(self) -> bool:
        return all(r.outcome is CheckStatus.PASSED for r in self.results)


def _show(text: str) -> str:
    return repr(text if len(text) <= _SHOW else text[: _SHOW - 3] + "...")


def _lines_list(lines: list[int]) -> str:
    head = ", ".join(str(n) for n in lines[:8])
    return head + (f" (+{len(lines) - 8} more)" if len(lines) > 8 else "")


def marker_finding(marker: Marker, lines: list[str], path: str) -> tuple[str, str] | None:
    """Check one marker at its line: None when the line reads the text exactly.

    Otherwise (code, message): `PIN.MARKER.MOVED` when the exact text is on other lines (it
    says which), `PIN.MARKER.MISMATCH` when a line matches only up to whitespace, and
    `PIN.MARKER.GONE` when no line matches at all.
    """
    n = marker.line
    if n <= len(lines) and lines[n - 1] == marker.text:
        return None
    now = (
        f"line {n} now reads {_show(lines[n - 1])}"
        if n <= len(lines)
        else f"the file has only {len(lines)} lines"
    )
    label = f"marker {marker.id}" + (f" ({marker.symbol})" if marker.symbol else "")
    exact = [i + 1 for i, line in enumerate(lines) if line == marker.text]
    if exact:
        return (
            "PIN.MARKER.MOVED",
            f"{label}: {path}:{n} no longer holds {_show(marker.text)}; {now}; the text is now"
            f" at line {_lines_list(exact)}",
        )
    squeezed = " ".join(marker.text.split())
    loose = [i + 1 for i, line in enumerate(lines) if " ".join(line.split()) == squeezed]
    if loose:
        return (
            "PIN.MARKER.MISMATCH",
            f"{label}: {path}:{n} does not read {_show(marker.text)} exactly; {now}; a line"
            f" differing only in whitespace is at line {_lines_list(loose)}",
        )
    return (
        "PIN.MARKER.GONE",
        f"{label}: no line of {path} reads {_show(marker.text)} any more; {now}",
    )


def _content_findings(
    pinned: PinnedFile, data: bytes, kind: str
) -> tuple[list[tuple[str, str, Severity]], ContentId, bool]:
    """Compare bytes with the pinned identity: (findings, identity of pinned bytes, verified)."""
    got = ContentId.of(data)
    want = ContentId(pinned.sha256, pinned.size, pinned.git_blob)
    if got == want:
        return [], got, True
    if kind == "directory" and got.sha256 != want.sha256:
        for conversion, variant in eol_variants(data).items():
            alt = ContentId.of(variant)
            if alt.sha256 == want.sha256:
                note = (
                    "CRLF line ends where the blob has LF"
                    if conversion == "crlf_to_lf"
                    else "LF line ends where the blob has CRLF"
                )
                msg = (
                    f"{pinned.path}: the checkout differs from the pinned blob only by line"
                    f" endings ({note}; a checkout filter such as core.autocrlf or"
                    f" .gitattributes eol converted it). Undoing that conversion gives the"
                    f" pinned sha256 and blob {want.git_blob}; verify with --git-dir to hash"
                    " the stored blob directly"
                )
                return [("PIN.FILE.CHECKOUT_EOL", msg, Severity.WARNING)], alt, True
    out: list[tuple[str, str, Severity]] = []
    where = {"git": "the git blob", "archive": "the archive member"}.get(kind, "the checkout file")
    if got.size != want.size:
        out.append(
            (
                "PIN.FILE.SIZE",
                f"{pinned.path}: {where} has {got.size} bytes, the pin says {want.size}",
                Severity.ERROR,
            )
        )
    if got.sha256 != want.sha256:
        out.append(
            (
                "PIN.FILE.SHA256",
                f"{pinned.path}: sha256 of {where} is {got.sha256}, the pin says {want.sha256}",
                Severity.ERROR,
            )
        )
    if got.git_blob != want.git_blob:
        out.append(
            (
                "PIN.FILE.BLOB",
                f"{pinned.path}: git blob id of {where} is {got.git_blob}, the pin says"
                f" {want.git_blob}",
                Severity.ERROR,
            )
        )
    return out, got, False


def _git_identity(loaded: LoadedManifest, git: GitSource) -> tuple[list[Finding], GitSource | None]:
    """Resolve the pinned commit and check the tag; returns the reader bound to the commit."""
    m = loaded.manifest
    out: list[Finding] = []

    def add(code: str, msg: str, field: str, sev: Severity = Severity.ERROR) -> None:
        out.append(Finding(code, msg, sev, loaded.locate(pointer_join("", field))))

    if m.commit is None and m.tag is None:
        raise UsageError("--git-dir needs a manifest that records a commit or a tag")
    commit: str | None = None
    if m.commit is not None:
        commit = git.rev(f"{m.commit}^{{commit}}")
        if commit is None:
            add(
                "PIN.GIT.COMMIT_MISSING",
                f"commit {m.commit} is not in {git.repo} (fetch it, or the pin names a"
                " different repository)",
                "commit",
            )
            return out, None
    if m.tag is not None:
        found = git.tag(m.tag)
        if found is None:
            sev = Severity.WARNING if commit is not None else Severity.ERROR
            add(
                "PIN.GIT.TAG_MISSING",
                f"tag {m.tag} is not in {git.repo}"
                + ("; the commit was verified by its id" if commit else ""),
                "tag",
                sev,
            )
        else:
            tag_target, tag_commit = found
            if commit is None:
                commit = tag_commit
            elif tag_commit != commit:
                add(
                    "PIN.GIT.TAG_MISMATCH",
                    f"tag {m.tag} points to commit {tag_commit}, the pin says {commit}",
                    "tag",
                )
            if m.tag_object is not None and tag_target != m.tag_object:
                add(
                    "PIN.GIT.TAG_OBJECT_MISMATCH",
                    f"tag {m.tag} is object {tag_target}, the pin records tag object"
                    f" {m.tag_object}",
                    "tag_object",
                )
            elif m.tag_object is None and tag_target != tag_commit:
                add(
                    "PIN.GIT.TAG_OBJECT_UNRECORDED",
                    f"tag {m.tag} is an annotated tag object {tag_target}; the pin could"
                    " record it as tag_object",
                    "tag_object",
                    Severity.NOTE,
                )
    if commit is None:
        return out, None
    return out, git.at(commit)


def verify(loaded: LoadedManifest, source: SourceReader) -> Verification:
    """Verify every pinned file and marker of `loaded` against `source`.

    Results: `pin.manifest` (consistency), `pin.revision` (git only), one `pin.file` per file.
    """
    m = loaded.manifest
    subject = loaded.document.path
    results: list[CheckResult] = [
        CheckResult("pin.manifest", subject, tuple(consistency_findings(loaded)))
    ]
    reader: SourceReader | None = source
    if isinstance(source, GitSource):
        found, reader = _git_identity(loaded, source)
        metrics = {"commit": reader.commit if isinstance(reader, GitSource) else None}
        results.append(
            CheckResult("pin.revision", f"{m.runtime} {m.version}", tuple(found), metrics)
        )
    outcomes: list[FileOutcome] = []
    for i, pinned in enumerate(m.files):
        result, outcome = _verify_file(loaded, i, pinned, reader, source.kind)
        results.append(result)
        outcomes.append(outcome)
    return Verification(tuple(results), tuple(outcomes), source.kind)


def _verify_file(
    loaded: LoadedManifest,
    index: int,
    pinned: PinnedFile,
    reader: SourceReader | None,
    kind: str,
) -> tuple[CheckResult, FileOutcome]:
    base = pointer_join("", "files", index)
    total = len(pinned.markers)
    if reader is None:
        res = CheckResult(
            "pin.file",
            pinned.path,
            status=CheckStatus.NOT_RUN,
            reason="the pinned revision could not be resolved in the repository",
        )
        return res, FileOutcome(pinned.path, False, None, 0, 0)
    try:
        data = reader.read(pinned.path)
    except PathRefused as err:
        f = Finding(err.code, err.message, location=loaded.locate(pointer_join(base, "path")))
        return CheckResult("pin.file", pinned.path, (f,)), FileOutcome(
            pinned.path, False, None, 0, 0
        )
    except FileAbsent as err:
        f = Finding("PIN.FILE.MISSING", str(err), location=loaded.locate(base))
        return CheckResult("pin.file", pinned.path, (f,)), FileOutcome(
            pinned.path, False, None, 0, 0
        )
    findings: list[Finding] = []
    content, identity, verified = _content_findings(pinned, data, kind)
    for code, msg, sev in content:
        findings.append(Finding(code, msg, sev, loaded.locate(base)))
    lines = split_lines(data)
    ok = 0
    for j, marker in enumerate(pinned.markers):
        problem = marker_finding(marker, lines, pinned.path)
        if problem is None:
            ok += 1
            continue
        loc = loaded.locate(pointer_join(base, "markers", j, "line"))
        findings.append(Finding(problem[0], problem[1], location=loc))
    metrics = {
        "sha256": identity.sha256,
        "bytes": identity.size,
        "git_blob": identity.git_blob,
        "lines": len(lines),
        "markers_checked": total,
        "markers_ok": ok,
    }
    res = CheckResult("pin.file", pinned.path, tuple(findings), metrics)
    return res, FileOutcome(pinned.path, verified, identity, total, ok)
