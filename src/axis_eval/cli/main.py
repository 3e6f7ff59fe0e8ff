"""The ``axis`` command: each subcommand turns flags into an API call, renders, exits.

Only this module turns an :class:`~axis_eval.errors.AxisError` into a message and an exit
code. Heavy imports live inside the commands so ``axis --version`` stays fast.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from axis_eval._version import __version__
from axis_eval.cli._common import axis_home, fail, warn
from axis_eval.cli.baseline import baseline_group
from axis_eval.cli.ci import CiFlags

if TYPE_CHECKING:
    from axis_eval import ReportManifest


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="axis")
def cli() -> None:
    """axis-eval: run AI coding agents on scenarios and score them (AXIS)."""


@cli.command("run")
@click.option("-c", "--config", "config_path", help="Config file or folder (default: probe cwd).")
@click.option(
    "-s",
    "--scenario",
    "--scenarios",
    "scenarios",
    multiple=True,
    help="Scenario keys, base keys or globs; comma lists allowed.",
)
@click.option(
    "-a",
    "--agent",
    "--agents",
    "agents",
    multiple=True,
    help="Agent names, adapter names or globs; comma lists allowed.",
)
@click.option("--profile", help="A profile from the config's `profiles`.")
@click.option("--runs", type=int, help="Repeat count for every pair (odd, 1-19).")
@click.option("--concurrency", type=click.IntRange(min=1), help="Jobs at once (default 15).")
@click.option("--dry-run", is_flag=True, help="Print the jobs in scheduling order; run nothing.")
@click.option(
    "--tape",
    type=click.Path(dir_okay=False),
    help="Answer from this scripted-model tape instead of real APIs (spends no tokens).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")
@click.option("--no-score", is_flag=True, help="Skip judging.")
@click.option(
    "--judge", help="Judge every run with this API model (anthropic:<model>) or agent name."
)
@click.option(
    "--grace-seconds",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="Time between SIGTERM and SIGKILL when an agent is stopped.",
)
@click.option(
    "--pass-score",
    type=click.IntRange(0, 100),
    default=75,
    show_default=True,
    help="A run passes (for pass@k and pass^k) when its composite reaches this.",
)
@click.option(
    "--min-pass-rate",
    type=click.FloatRange(0, 1),
    help="Fail a pair whose runs pass less often than this fraction (e.g. 0.67).",
)
@click.option(
    "--compare-baseline",
    "compare_baseline",
    is_flag=False,
    flag_value="default",
    default=None,
    metavar="[NAME]",
    help="After the run, compare with this baseline (bare: default); exit 1 on regression.",
)
@click.option(
    "--failed",
    "failed",
    is_flag=False,
    flag_value="latest",
    default=None,
    metavar="[REPORT_ID]",
    help="Re-run the pairs that failed or were withheld in this report (bare: latest).",
)
@click.option(
    "--resume",
    "resume",
    metavar="REPORT_ID",
    help="Finish an interrupted run in its own report folder; finished runs are kept.",
)
@click.option("--force", is_flag=True, help="With --resume: resume even if the config changed.")
@click.option(
    "--min-score",
    type=click.IntRange(0, 100),
    metavar="N",
    help="Fail a pair whose representative composite is below N (exit 1).",
)
@click.option(
    "--junit",
    "junit_path",
    metavar="PATH",
    help="Write JUnit XML here: a test case per pair (see docs/ci.md).",
)
@click.option(
    "--summary-md",
    "summary_md_path",
    metavar="PATH",
    help="Write a Markdown summary here (a CI job summary page).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log each step to stderr.")
def run_command(
    config_path: str | None,
    scenarios: tuple[str, ...],
    agents: tuple[str, ...],
    profile: str | None,
    runs: int | None,
    concurrency: int | None,
    dry_run: bool,
    tape: str | None,
    as_json: bool,
    no_score: bool,
    judge: str | None,
    grace_seconds: float,
    pass_score: int,
    min_pass_rate: float | None,
    compare_baseline: str | None,
    failed: str | None,
    resume: str | None,
    force: bool,
    min_score: int | None,
    junit_path: str | None,
    summary_md_path: str | None,
    verbose: bool,
) -> None:
    """Run every scenario × agent pair and write a report."""
    from axis_eval import AxisError, Selection, load_config, plan

    _check_rerun_flags(failed, resume, force, scenarios, agents, runs, dry_run)
    ci = CiFlags(min_score, compare_baseline, junit_path, summary_md_path, no_score)
    if dry_run and ci.writes:
        raise click.UsageError("--junit and --summary-md cannot be combined with --dry-run")
    try:
        ci.check_paths()
        from pathlib import Path

        overrides = {"model_server": {"tape": str(Path(tape).resolve())}} if tape else None
        loaded = load_config(config_path, profile=profile, overrides=overrides)
        selection = Selection(scenarios=scenarios, agents=agents, runs=runs)
        previous = None
        if resume is not None:
            from axis_eval import read_report

            previous = read_report(loaded.config_dir, resume)
        if failed is not None:
            pairs = _failed_pairs(loaded.config_dir, failed)
            if pairs is None:
                sys.exit(0)
            selection = Selection(runs=runs, only_pairs=pairs)
        if dry_run:
            the_plan = plan(loaded, selection)
            warn(the_plan.warnings)
            for note in the_plan.notes:
                click.echo(note, err=True)
            from axis_eval.report.render import dry_run_json, render_dry_run

            if as_json:
                click.echo(json.dumps(dry_run_json(the_plan), indent=2))
            else:
                click.echo(render_dry_run(the_plan))
            # Scenarios that fail to load fail a real run (exit 1); a dry run says so too.
            sys.exit(1 if the_plan.load_failures else 0)
        ci.load_baseline(loaded.config_dir)
        # The execution stack is imported only for real runs: a dry run plans and prints.
        from axis_eval import RunOptions, run
        from axis_eval.cli.live import make_display

        _imports_done()
        outcome = run(
            RunOptions(
                display=make_display(verbose),
                loaded=loaded,
                selection=selection,
                concurrency=concurrency,
                score=not no_score,
                judge=judge,
                grace_s=grace_seconds,
                verbose=verbose,
                json_output=as_json,
                pass_score=pass_score,
                min_pass_rate=min_pass_rate,
                resume=previous,
                force=force,
            )
        )
    except AxisError as error:
        fail(error)
    if as_json:
        click.echo(outcome.manifest.model_dump_json(by_alias=True, indent=2))
    sys.exit(ci.finish(outcome, as_json))


def _check_rerun_flags(
    failed: str | None,
    resume: str | None,
    force: bool,
    scenarios: tuple[str, ...],
    agents: tuple[str, ...],
    runs: int | None,
    dry_run: bool,
) -> None:
    """``--failed`` and ``--resume`` choose the jobs themselves: no ``-s``/``-a`` with them."""
    if failed is not None and resume is not None:
        raise click.UsageError("--failed and --resume cannot be combined")
    for flag, value in (("--failed", failed), ("--resume", resume)):
        if value is not None and (scenarios or agents):
            raise click.UsageError(f"{flag} cannot be combined with -s/--scenario or -a/--agent")
    if resume is not None and (runs is not None or dry_run):
        raise click.UsageError("--resume cannot be combined with --runs or --dry-run")
    if force and resume is None:
        raise click.UsageError("--force only applies to --resume")


def _failed_pairs(config_dir: str, report_id: str) -> frozenset[tuple[str, str]] | None:
    """The (scenario, agent) pairs of a report that failed, did not finish or were withheld.

    None (after saying so) when there is nothing to retry.
    """
    from axis_eval import read_report

    manifest = read_report(config_dir, report_id)
    pairs = frozenset(
        (p.scenario_key, p.agent_name)
        for p in manifest.results
        if p.failed
        or p.status != "completed"
        or any(
            r.status != "completed" or (r.score is not None and r.score.withheld) for r in p.runs
        )
    )
    if not pairs:
        click.echo(f"No failed jobs in report {manifest.report_id}. Nothing to retry.", err=True)
        return None
    return pairs


@cli.command("schema")
@click.argument(
    "name",
    required=False,
    type=click.Choice(["config", "scenario", "report", "result", "tape", "baseline"]),
)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Write files here.")
def schema_command(name: str | None, out_dir: str | None) -> None:
    """Print the JSON Schema of a file format (all of them without NAME)."""
    from pathlib import Path

    from axis_eval.schemas import SCHEMA_NAMES, schema_for, write_schemas

    if out_dir:
        for path in write_schemas(Path(out_dir)):
            click.echo(f"wrote {path}", err=True)
        return
    if name:
        click.echo(json.dumps(schema_for(name), indent=2))
    else:
        click.echo(json.dumps({n: schema_for(n) for n in SCHEMA_NAMES}, indent=2))


@cli.command("init")
@click.option("-s", "--scenarios", default="./scenarios", show_default=True)
@click.option("-a", "--agent", "agents", multiple=True, help="Agent names (default claude-code).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "yaml", "toml"]),
    default="json",
    show_default=True,
)
@click.option("-f", "--force", is_flag=True, help="Overwrite existing files.")
def init_command(scenarios: str, agents: tuple[str, ...], fmt: str, force: bool) -> None:
    """Scaffold a config and a sample scenario in the current folder."""
    from axis_eval import AxisError, init_project
    from axis_eval.planning.select import split_list

    try:
        written = init_project(
            ".",
            agents=split_list(agents) or None,
            scenarios=scenarios,
            fmt=fmt,  # type: ignore[arg-type]
            force=force,
        )
    except AxisError as error:
        fail(error)
    for path in written:
        click.echo(f"Created {path}")
    click.echo("Run `axis run --dry-run` to see the jobs, then `axis run`.")


@cli.command("score")
@click.argument("report_id")
@click.option("-c", "--config", "config_path", help="Config file or folder.")
@click.option("--judge", help="Judge with this API model (anthropic:<model>) or agent name.")
@click.option("--json", "as_json", is_flag=True, help="Print the updated manifest as JSON.")
def score_command(
    report_id: str, config_path: str | None, judge: str | None, as_json: bool
) -> None:
    """Score a finished report again from what is on disk (weights, calibration, judge)."""
    import asyncio

    from axis_eval import AxisError, load_config, read_report
    from axis_eval.report.render import render_report_detail
    from axis_eval.runs.rescored import save_rescore
    from axis_eval.runs.store import report_folder
    from axis_eval.scoring.rescore import rescore_report

    try:
        loaded = load_config(config_path)
        manifest = read_report(loaded.config_dir, report_id)
        folder = report_folder(loaded.config_dir, manifest.report_id)
        result = asyncio.run(rescore_report(folder, loaded, judge=judge))
        updated = save_rescore(folder, result)
    except AxisError as error:
        fail(error)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(
        f"judge calls: {result.calls} ({result.cached_calls} from the cache), "
        f"tokens: {result.input_tokens} in / {result.output_tokens} out",
        err=True,
    )
    if as_json:
        click.echo(updated.model_dump_json(by_alias=True, indent=2))
    else:
        click.echo(render_report_detail(updated))


@cli.command("reports")
@click.argument("args", nargs=-1, metavar="[ID | diff A B]")
@click.option("-c", "--config", "config_path", help="Config file or folder (locates .axis/).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--html",
    "html_out",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[PATH]",
    help="Write the report's HTML page again (bare: report.html in its folder) and print its path.",
)
def reports_command(
    args: tuple[str, ...], config_path: str | None, as_json: bool, limit: int, html_out: str | None
) -> None:
    """List reports, show one (ID or `latest`), or `diff A B`: per-pair deltas from A to B."""
    from axis_eval import AxisError, list_reports, read_report
    from axis_eval.report.render import render_report_detail, render_report_list

    if args and args[0] == "diff":
        if len(args) != 3:
            raise click.UsageError("usage: axis reports diff A B")
        _reports_diff(args[1], args[2], config_path, as_json)
        return
    if len(args) > 1:
        raise click.UsageError(f"unexpected arguments: {' '.join(args[1:])}")
    report_id = args[0] if args else None
    if html_out is not None and report_id is None:
        raise click.UsageError("--html needs a report: axis reports ID --html [PATH]")
    try:
        config_dir = axis_home(config_path)
        if report_id is None:
            manifests = list_reports(config_dir)
            if as_json:
                data = [m.model_dump(mode="json", by_alias=True) for m in manifests[:limit]]
                click.echo(json.dumps(data, indent=2))
            else:
                click.echo(render_report_list(manifests, limit))
            return
        manifest = read_report(config_dir, report_id)
        if html_out is not None:
            _reports_html(config_dir, manifest, html_out)
            return
    except AxisError as error:
        fail(error)
    if as_json:
        click.echo(manifest.model_dump_json(by_alias=True, indent=2))
    else:
        click.echo(render_report_detail(manifest))


def _reports_html(config_dir: str, manifest: ReportManifest, html_out: str) -> None:
    from pathlib import Path

    from axis_eval.report.html import write_html
    from axis_eval.runs.store import report_folder

    try:
        written = write_html(
            report_folder(config_dir, manifest.report_id),
            Path(html_out) if html_out else None,
            manifest=manifest,
        )
    except OSError as exc:
        click.echo(
            f"error: --html {html_out}: cannot write the page: {exc.strerror or exc}", err=True
        )
        sys.exit(2)
    click.echo(str(written))


def _reports_diff(a_id: str, b_id: str, config_path: str | None, as_json: bool) -> None:
    from axis_eval import AxisError, read_report
    from axis_eval.report.render import diff_reports, render_report_diff

    try:
        config_dir = axis_home(config_path)
        diff = diff_reports(read_report(config_dir, a_id), read_report(config_dir, b_id))
    except AxisError as error:
        fail(error)
    if as_json:
        click.echo(diff.model_dump_json(by_alias=True, indent=2))
    else:
        click.echo(render_report_diff(diff))


@cli.group("agents")
def agents_group() -> None:
    """Pinned agent CLIs: install them into axis-eval's cache, list them."""


@agents_group.command("install")
@click.argument("names", nargs=-1)
@click.option("--force", is_flag=True, help="Reinstall even when present.")
def agents_install(names: tuple[str, ...], force: bool) -> None:
    """Install pinned agent CLIs from npm (all installable ones without NAMES)."""
    from axis_eval import AxisError
    from axis_eval.adapters.install import PINS, install

    try:
        done = install(names or sorted(PINS), force=force, log=lambda m: click.echo(m, err=True))
    except AxisError as error:
        fail(error)
    for name, path in done.items():
        click.echo(f"{name}: {path}")


@agents_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def agents_list(as_json: bool) -> None:
    """Show every pinned agent CLI, its version and whether it is installed."""
    from axis_eval.adapters.install import PINS, agents_dir, installed_binary

    rows = [
        {
            "agent": name,
            "package": pkg.package,
            "pinned": pkg.version,
            "installed": str(path) if (path := installed_binary(name)) else None,
        }
        for name, pkg in sorted(PINS.items())
    ]
    if as_json:
        click.echo(json.dumps({"dir": str(agents_dir()), "agents": rows}, indent=2))
        return
    click.echo(f"Agent CLIs in {agents_dir()}")
    for row in rows:
        state = "installed" if row["installed"] else "not installed"
        spec = f"{row['package']}@{row['pinned']}"
        click.echo(f"  {row['agent']:<12} {spec:<46} {state}")


@cli.command("model-server")
@click.option("--tape", "tape_path", required=True, help="The tape to play (YAML or JSON).")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, help="Port on 127.0.0.1 (default: free)."
)
@click.option("--log", "log_path", help="Append every request to this file as JSON lines.")
def model_server_command(tape_path: str, port: int, log_path: str | None) -> None:
    """Serve a scripted model on 127.0.0.1: dry runs of scenarios without spending tokens."""
    from axis_model_server import TapeError, load_tape
    from axis_model_server.cli import serve

    try:
        tape = load_tape(tape_path)
    except TapeError as error:
        fail(error)
    _imports_done()  # a long-lived server: back to normal garbage collection
    sys.exit(serve(tape, tape_label=tape_path, port=port, log_path=log_path))


cli.add_command(baseline_group)


_GC_RESTORE: list[tuple[int, int, int]] = []
"""The collector's thresholds before ``main`` raised them (empty for in-process callers)."""


def _imports_done() -> None:
    """Back to normal garbage collection once a command has imported what it needs.

    ``main`` raises the collector's first threshold while modules load: importing pydantic
    and building ~70 model classes allocates hundreds of thousands of objects, and a
    young-generation collection every 700 of them costs ~15 ms of CPU per ``axis run`` and
    frees nothing (module objects live until exit). Freezing moves everything allocated so
    far out of the collector's sight; the run's own garbage is collected as usual. Only
    under ``main`` (the console script): in-process callers keep their collector as it is.
    """
    import gc

    if _GC_RESTORE:
        gc.freeze()
        gc.set_threshold(*_GC_RESTORE.pop())


def main() -> None:
    """Console-script entry point."""
    import gc

    _GC_RESTORE.append(gc.get_threshold())
    gc.set_threshold(100_000, 50, 100)
    try:
        cli(prog_name="axis")
    finally:
        # The process is exiting: freezing every object keeps the interpreter's final
        # garbage collections from freeing, one by one, every class, schema and validator
        # held in reference cycles (~30 ms of CPU per `axis` call with pydantic's objects).
        # Exit handlers still run and stdout/stderr are still flushed; only __del__ of
        # objects in cycles is skipped, which Python never promised at exit. Not for
        # in-process callers (the tests use `cli`): frozen objects are never collected.
        gc.freeze()
