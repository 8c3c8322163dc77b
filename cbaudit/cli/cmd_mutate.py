"""`cbaudit mutate [PATH] [--operators ...] [--seed S] [--jobs J] [--break PCT]`: mutation
campaigns over evidence fixtures, the bundle's declared negatives, metamorphic relations."""

# No `from __future__ import annotations` here: Typer reads each option's annotation when
# the command is built, and a string annotation costs an eval (issue 13, start-up).

import json
import os
from enum import StrEnum
from pathlib import Path

import typer

from cbaudit.checks.bundle import BUNDLE_FILE, Bundle, load_bundle
from cbaudit.cli.common import ExecutorOpt, OutputOpt, QuietOpt, RayAddressOpt, VerboseOpt, emit
from cbaudit.cli.progress import progress_bar
from cbaudit.io.atomic import atomic_write
from cbaudit.io.executor import Executor, ExecutorKind, make_executor
from cbaudit.kinds import KINDS, TARGETS
from cbaudit.model import CheckResult, InputDigest, Location, Report, UsageError
from cbaudit.model.progress import Progress
from cbaudit.mutate.bundle import declared_negatives, load_fixture_file, valid_fixtures
from cbaudit.mutate.campaign import FixtureInput, run_campaign
from cbaudit.mutate.negatives import ARTICLE_FLOORS, declared_results, floor_results
from cbaudit.mutate.registry import OPERATORS
from cbaudit.mutate.reporting import campaign_result, stryker_report


class MutateFormat(StrEnum):
    """--format choices: the shared reporters plus the Stryker mutation-testing report."""

    text = "text"
    json = "json"
    junit = "junit"
    sarif = "sarif"
    markdown = "markdown"
    html = "html"
    stryker = "stryker"


def _negative_outcomes(bundle: Bundle, ids: set[str]) -> dict[str, list[CheckResult]]:
    """Run the bundle's negative checks exactly as the gate does."""
    from cbaudit.gate.runner import run_check

    specs = [s for s in bundle.checks if s.check_id in ids]
    return {s.check_id: run_check(s, KINDS).results for s in specs}


def _fixtures(path: Path, target: str | None) -> tuple[list[FixtureInput], Bundle | None]:
    if target is not None and target not in TARGETS:
        raise UsageError(f"--target {target!r} is not one of {', '.join(TARGETS)}")
    if path.is_dir():
        if target is not None:
            raise UsageError(
                f"--target names the type of a single fixture file; {path} is a bundle"
                " directory, whose checks say what each fixture is"
            )
        bundle = load_bundle(path, KINDS)  # LOAD.NOT_FOUND without its bundle.yaml
        return valid_fixtures(bundle, KINDS), bundle
    return [load_fixture_file(path, str(path), TARGETS, target)], None  # LOAD.* when unreadable


def build_report(
    path: Path | None,
    *,
    operators: list[str],
    seed: int,
    jobs: int,
    break_at: float | None,
    limit: int | None,
    timeout_s: float,
    target: str | None,
    negatives: bool,
    floors: bool,
    relations: list[str],
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> tuple[Report, dict[str, object] | None]:
    """Run what was asked; returns the report and, for a campaign, its Stryker form.

    `executor` runs the campaign's cells (default: `jobs` local processes); the declared
    negatives and the relations run here."""
    results: list[CheckResult] = []
    inputs: list[InputDigest] = []
    stryker = None
    summary: dict[str, object] = {"seed": seed}
    if path is not None:
        fixtures, bundle = _fixtures(path, target)
        ops = OPERATORS.select(operators)
        if operators and not ops:
            raise UsageError(f"no operator matches {operators} (see --list-operators)")
        campaign = run_campaign(
            fixtures,
            ops,
            targets=TARGETS,
            seed=seed,
            jobs=jobs,
            limit=limit,
            timeout_s=timeout_s,
            progress=progress,
            executor=executor,
            ship=[bundle.read_root or bundle.root] if bundle is not None else [],
        )
        results.append(campaign_result(campaign, fixtures, subject=str(path), min_score=break_at))
        stryker = stryker_report(campaign, fixtures, break_at=break_at)
        summary.update(
            {
                "mutants": len(campaign.mutants),
                "score": campaign.score,
                "counts": campaign.counts(),
                "fixtures": list(campaign.fixtures),
            }
        )
        if bundle is not None:
            inputs += [
                InputDigest.of(f, display=os.path.normpath(f)) for f in bundle.manifest_files
            ]
            declared = declared_negatives(bundle)
            where = Location(file=str(path / BUNDLE_FILE))
            if negatives:
                outcomes = _negative_outcomes(bundle, {n.check_id for n in declared})
                results += declared_results(declared, outcomes, where=where)
            if floors:
                results += floor_results(declared, dict(ARTICLE_FLOORS), where=where)
        else:
            inputs.append(InputDigest.of(path, display=str(path)))
    if relations:
        # the relations replay policies: loaded only when asked for
        from cbaudit.mutate.metamorphic import RELATIONS, MetamorphicOptions, run_relations

        names = list(RELATIONS) if "all" in relations else relations
        unknown = [n for n in names if n not in RELATIONS]
        if unknown:
            raise UsageError(f"unknown relation(s) {unknown} (known: {', '.join(RELATIONS)})")
        results += run_relations(names, MetamorphicOptions(seed=seed))
    provenance = executor.provenance() if executor is not None else None
    return Report.build("mutate", results, inputs, summary, executor=provenance), stryker


def _list_operators() -> int:
    for op in OPERATORS.values():
        typer.echo(
            f"{op.name}\tloop {op.loop}\t{op.target}\t{op.pointer}\t{op.expect}\t{op.changes}"
        )
    return 0


def mutate_cmd(
    path: Path | None = typer.Argument(
        None, help="A bundle directory (every valid fixture it declares) or one fixture file."
    ),
    operators: list[str] = typer.Option(
        [], "--operators", "-O", help="Operator names or dotted prefixes (repeat; default all)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of every random choice (deterministic)."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Worker processes for the campaign."),
    executor_kind: ExecutorKind = ExecutorOpt,
    ray_address: str | None = RayAddressOpt,
    break_at: float | None = typer.Option(
        None, "--break", min=0, max=100, help="Fail when the score is below PCT percent."
    ),
    limit: int | None = typer.Option(
        None, "--limit", min=1, help="At most N seeded mutants per operator and fixture."
    ),
    timeout_s: float = typer.Option(
        10.0, "--timeout", min=0.001, help="Seconds one oracle call may take (else: timeout)."
    ),
    target: str | None = typer.Option(
        None, "--target", help=f"Fixture type of a single file ({', '.join(TARGETS)})."
    ),
    negatives: bool = typer.Option(
        True, "--negatives/--no-negatives", help="Also run the bundle's declared negatives."
    ),
    floors: bool = typer.Option(
        False, "--floors", help="Also check the article's negative-fixture floors per loop."
    ),
    relations: list[str] = typer.Option(
        [],
        "--relation",
        "-r",
        help="Metamorphic relation to run (repeat, or 'all'): hidden-output-invariance,"
        " request-order-permutation, time-scaling, chunk-partition-invariance.",
    ),
    list_ops: bool = typer.Option(False, "--list-operators", help="List the operators and exit."),
    fmt: MutateFormat = typer.Option(MutateFormat.text, "--format", "-f", help="Output format."),
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Mutate valid fixtures one invariant at a time; every mutant must be rejected.

    Statuses: killed, killed_by_other, killed_by_schema, survived, timeout, oracle_error,
    equivalent. Score = detected / (all - equivalent).

    Exit codes: 0 all detected, 1 a survivor, oracle error, surviving negative or failed
    relation (or a score below --break), 2 unusable input.
    """
    if list_ops:
        return _list_operators()
    if path is None and not relations:
        raise UsageError("mutate needs a PATH (bundle or fixture) or --relation NAME")
    executor = make_executor(executor_kind, jobs, ray_address)
    try:
        with progress_bar("mutate", "cells", quiet=quiet) as progress:
            report, stryker = build_report(
                path,
                operators=operators,
                seed=seed,
                jobs=jobs,
                break_at=break_at,
                limit=limit,
                timeout_s=timeout_s,
                target=target,
                negatives=negatives,
                floors=floors,
                relations=relations,
                progress=progress,
                executor=executor,
            )
    finally:
        executor.close()
    if fmt is MutateFormat.stryker:
        if stryker is None:
            raise UsageError("--format stryker needs a PATH to mutate")
        text = json.dumps(stryker, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        if output is not None:
            atomic_write(output, text)
        else:
            typer.echo(text, nl=False)
        return int(report.exit_code)
    return emit(report, fmt.value, output, quiet, verbose)


def register(app: typer.Typer) -> None:
    """Add `mutate` to the app."""
    app.command("mutate")(mutate_cmd)
