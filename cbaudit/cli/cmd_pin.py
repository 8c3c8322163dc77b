"""`cbaudit verify-pin MANIFEST (--source DIR|ARCHIVE | --git-dir DIR)` and `cbaudit pin create`."""

from __future__ import annotations

from pathlib import Path

import typer
import yaml

from cbaudit.cli.common import (
    FormatOpt,
    OutputFormat,
    OutputOpt,
    QuietOpt,
    VerboseOpt,
    atomic_write,
    emit,
)
from cbaudit.io.schemas import validate
from cbaudit.model import (
    CheckResult,
    Finding,
    InputDigest,
    InputError,
    Location,
    Report,
    Severity,
    UsageError,
)
from cbaudit.pins.attest import build_statement
from cbaudit.pins.create import create_manifest, parse_marker_spec
from cbaudit.pins.manifest import SCHEMA, load_manifest
from cbaudit.pins.sources import GitSource, SourceReader, open_source
from cbaudit.pins.verify import verify
from cbaudit.report.json_report import dumps_canonical

pin_app = typer.Typer(help="Create pin manifests for runtime sources.", no_args_is_help=True)


def _check_target(path: Path | None, what: str) -> None:
    if path is not None and not (path.parent if str(path.parent) else Path(".")).is_dir():
        raise UsageError(f"{what} {path}: directory {path.parent} does not exist")


def verify_pin(
    manifest: Path = typer.Argument(..., help="Pin manifest (YAML or JSON)."),
    source: Path | None = typer.Option(
        None,
        "--source",
        help="A checkout, an unpacked release, or a release archive (.whl, .zip, .tar.gz).",
    ),
    git_dir: Path | None = typer.Option(
        None, "--git-dir", help="A git repository: blobs are read from the pinned commit."
    ),
    attest: Path | None = typer.Option(
        None, "--attest", help="Write an in-toto Statement of the verified files to FILE."
    ),
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Check a pin manifest's hashes, sizes, blob ids and line markers against a source."""
    if (source is None) == (git_dir is None):
        raise UsageError("verify-pin needs exactly one of --source DIR|ARCHIVE or --git-dir DIR")
    _check_target(attest, "--attest")
    loaded = load_manifest(manifest)
    reader: SourceReader = (
        GitSource.open(git_dir) if git_dir is not None else open_source(source or Path())
    )
    verification = verify(loaded, reader)
    results = list(verification.results)
    if attest is not None:
        statement = build_statement(loaded, verification)
        if statement is None:
            note = Finding(
                "PIN.ATTEST.NO_SUBJECT",
                f"no file was verified, so no attestation was written to {attest}",
                Severity.WARNING,
                Location(file=str(attest)),
            )
            results.append(CheckResult("pin.attest", str(attest), (note,)))
        else:
            atomic_write(attest, dumps_canonical(statement))
    m = loaded.manifest
    summary = {
        "runtime": m.runtime,
        "version": m.version,
        "tag": m.tag,
        "commit": m.commit,
        "source": verification.source_kind,
        "files": len(verification.files),
        "files_verified": sum(f.verified for f in verification.files),
        "markers_checked": sum(f.markers_checked for f in verification.files),
        "markers_ok": sum(f.markers_ok for f in verification.files),
    }
    digest = InputDigest(loaded.document.path, loaded.document.sha256)
    report = Report.build("verify-pin", results, inputs=[digest], summary=summary)
    return emit(report, fmt, output, quiet, verbose)


@pin_app.command("create")
def pin_create(
    source: Path | None = typer.Option(
        None, "--source", help="Source tree or release archive to pin files from."
    ),
    git_dir: Path | None = typer.Option(
        None, "--git-dir", help="A git repository: pin the blobs of the commit --rev names."
    ),
    rev: str | None = typer.Option(
        None, "--rev", help="With --git-dir: the revision to read (default HEAD)."
    ),
    files: list[str] = typer.Option([], "--file", help="Path (relative to the source) to pin."),
    markers: list[str] = typer.Option(
        [], "--marker", help="PATH:LINE[:ID] — pin the exact text of that line."
    ),
    runtime: str = typer.Option(..., "--runtime", help="Runtime name, e.g. vllm."),
    runtime_version: str = typer.Option(..., "--runtime-version", help="Release, e.g. 0.23.0."),
    repository: str | None = typer.Option(None, "--repository", help="Upstream repository URL."),
    tag: str | None = typer.Option(None, "--tag", help="Release tag."),
    commit: str | None = typer.Option(None, "--commit", help="40-hex commit id."),
    tag_object: str | None = typer.Option(None, "--tag-object", help="Annotated tag object id."),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the manifest here (.json: JSON, else YAML)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --output file."),
) -> int:
    """Write a pin manifest (hashes, sizes, blob ids, marker lines) for files of a source tree.

    With --git-dir the blobs of the commit --rev names are pinned, and that commit recorded.
    """
    if (source is None) == (git_dir is None):
        raise UsageError("pin create needs exactly one of --source DIR or --git-dir DIR")
    if rev is not None and git_dir is None:
        raise UsageError("--rev needs --git-dir")
    if output is not None and output.exists() and not force:
        raise UsageError(f"--output {output} exists; pass --force to overwrite it")
    _check_target(output, "--output")
    specs = [parse_marker_spec(m) for m in markers]
    reader: SourceReader
    if git_dir is not None:
        reader, commit = _git_reader(git_dir, rev or "HEAD", commit)
        if tag is not None:
            tag_object = _git_tag(reader, git_dir, tag, commit, tag_object)
    else:
        reader = open_source(source or Path())
    made = create_manifest(
        reader,
        files,
        specs,
        runtime=runtime,
        version=runtime_version,
        repository=repository,
        tag=tag,
        commit=commit,
        tag_object=tag_object,
    )
    data = made.to_data()
    problems = validate(data, SCHEMA, file="<pin create>")
    if problems:
        raise InputError(problems)
    json_out = output is not None and output.suffix.lower() == ".json"
    text = (
        dumps_canonical(data)
        if json_out
        else yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=4096)
    )
    if output is None:
        typer.echo(text, nl=False)
    else:
        atomic_write(output, text)
        n = sum(len(f.markers) for f in made.files)
        typer.echo(f"wrote {output}: {len(made.files)} files, {n} markers", err=True)
    return 0


def _git_reader(git_dir: Path, rev: str, commit: str | None) -> tuple[GitSource, str]:
    """The reader bound to the commit `rev` names, and that commit's full id.

    A rev that names no commit is PIN.GIT.COMMIT_MISSING (exit 2); a --commit that is not
    that commit is a usage error.
    """
    repo = GitSource.open(git_dir)
    resolved = repo.rev(f"{rev}^{{commit}}")
    if resolved is None:
        raise InputError.at(
            "PIN.GIT.COMMIT_MISSING",
            f"--rev {rev!r} names no commit in {git_dir} (fetch it, or check the spelling)",
            str(git_dir),
        )
    if commit is not None and commit != resolved:
        raise UsageError(f"--commit {commit} is not the commit --rev {rev} names ({resolved})")
    return repo.at(resolved), resolved


def _git_tag(
    repo: GitSource, git_dir: Path, tag: str, commit: str, given: str | None
) -> str | None:
    """Check that --tag names the pinned commit; the annotated tag object id, if any.

    The same rules `verify-pin --git-dir` applies afterwards, applied while creating: a tag
    missing from the repository, naming another commit, or whose object differs from
    --tag-object is an error (exit 2); an annotated tag's object id is recorded unless given.
    """
    found = repo.tag(tag)
    if found is None:
        raise InputError.at("PIN.GIT.TAG_MISSING", f"--tag {tag} is not in {git_dir}", str(git_dir))
    target, tag_commit = found
    if tag_commit != commit:
        raise InputError.at(
            "PIN.GIT.TAG_MISMATCH",
            f"--tag {tag} points to commit {tag_commit}, but the pinned commit is {commit}",
            str(git_dir),
        )
    annotated = target if target != tag_commit else None
    if given is not None and given != target:
        raise InputError.at(
            "PIN.GIT.TAG_OBJECT_MISMATCH",
            f"--tag {tag} is object {target}, not --tag-object {given}",
            str(git_dir),
        )
    return given if given is not None else annotated


def register(app: typer.Typer) -> None:
    app.command("verify-pin")(verify_pin)
    app.add_typer(pin_app, name="pin")
