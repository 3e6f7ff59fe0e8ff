"""``axis run``: plan the scenario × agent pairs, run them, write a report, gate CI.

The decorators below declare the flags (names, types, defaults, help). The command body
hands what click parsed to :class:`~axis_eval.cli.run_options.RunCommandOptions`, which
checks how the flags combine and builds the library's ``RunOptions`` from them.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import click

from axis_eval.cli import import_gc
from axis_eval.cli._common import fail, finite_float, internal_error, warn
from axis_eval.cli.run_options import RUNS

if TYPE_CHECKING:
    from axis_eval import LoadedConfig, Selection


_Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _with_shown_default(
    flag: str, kind: click.ParamType[Any], default: float, help: str
) -> _Decorator:
    """An option with a default that ``--help`` shows."""
    return click.option(flag, type=kind, default=default, show_default=True, help=help)


def _value_optional(flag: str, bare: str, metavar: str, help: str) -> _Decorator:
    """An option whose value may be left out: the bare flag means ``bare``, absent None."""
    return click.option(
        flag, is_flag=False, flag_value=bare, default=None, metavar=metavar, help=help
    )


@click.command("run")
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
@click.option(
    "--runs",
    type=RUNS,
    help="Repeat count for every pair (odd, 1-19), or auto: adaptive repeats.",
)
@click.option("--concurrency", type=click.IntRange(min=1), help="Jobs at once (default 15).")
@click.option(
    "--sandbox",
    type=click.Choice(["auto", "none", "bwrap", "docker"]),
    help="Confine every job: auto (bwrap where it works, else none), none, bwrap, docker.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    help="Where jobs run: local (this process) or dask (a Dask cluster; docs/distributed.md).",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="The Dask scheduler (tcp://HOST:PORT; default $AXIS_DASK_SCHEDULER). Implies dask.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    help="Without a scheduler: start a local Dask cluster of N worker processes. Implies dask.",
)
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
@_with_shown_default(
    "--grace-seconds",
    finite_float(min=0),
    5.0,
    "Time between SIGTERM and SIGKILL when an agent is stopped.",
)
@_with_shown_default(
    "--pass-score",
    click.IntRange(0, 100),
    75,
    "A run passes (for pass@k and pass^k) when its composite reaches this.",
)
@click.option(
    "--min-pass-rate",
    type=finite_float(0, 1),
    help="Fail a pair whose runs pass less often than this fraction (e.g. 0.67).",
)
@_value_optional(
    "--compare-baseline",
    "default",
    "[NAME]",
    "After the run, compare with this baseline (bare: default); exit 1 on regression.",
)
@_value_optional(
    "--failed",
    "latest",
    "[REPORT_ID]",
    "Re-run the pairs that failed or were withheld in this report (bare: latest).",
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
@click.option(
    "--offline",
    is_flag=True,
    help="Take remote scenarios, GitHub skills and copied repositories from their caches "
    "in .axis/; never fetch (a missing cache is an error).",
)
@click.option(
    "--refresh-skills",
    is_flag=True,
    help="Clone GitHub skills afresh instead of reusing .axis/skills-cache.",
)
@click.option(
    "--refresh-repos",
    is_flag=True,
    help="Clone the git repositories `copy` actions name afresh instead of reusing .axis/repos.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log each step to stderr.")
def run_command(**params: Any) -> None:
    """Run every scenario × agent pair and write a report."""
    from axis_eval import AxisError, load_config, read_report
    from axis_eval.cli.run_options import RunCommandOptions

    options = RunCommandOptions.from_click(params)  # UsageError (exit 2) for a bad mix
    ci = options.ci_flags()
    scratch = contextlib.ExitStack()  # a dry run's clones of remote scenario sources
    try:
        ci.check_paths()
        loaded = load_config(
            options.config_path,
            profile=options.profile,
            overrides=options.config_overrides(),
            **options.remote_options(scratch),
            say=lambda line: click.echo(line, err=True),
        )
        selection = options.selection()
        previous = None
        if options.resume is not None:
            previous = read_report(loaded.config_dir, options.resume)
        if options.failed is not None:
            pairs = _failed_pairs(loaded.config_dir, options.failed)
            if pairs is None:
                sys.exit(0)
            selection = options.selection(only_pairs=pairs)
        if options.dry_run:
            _dry_run(
                loaded,
                selection,
                options.as_json,
                score=not options.no_score,
                judge=options.judge,
            )
        ci.load_baseline(loaded.config_dir)
        # The execution stack is imported only for real runs: a dry run plans and prints.
        from axis_eval import run
        from axis_eval.cli.live import make_display

        import_gc.imports_done()
        display = make_display(options.verbose)
        outcome = run(options.pipeline_options(loaded, selection, previous, display))
    except AxisError as error:
        fail(error)  # a crashed run too: RunCrashed, exit 3, its report closed `crashed`
    except KeyboardInterrupt:
        # Ctrl-C outside the run's own handlers (beforeAll, afterAll): a report already
        # opened has been closed `interrupted`, and the run said so.
        from axis_eval.errors import Interrupted

        fail(Interrupted("SIGINT"))
    finally:
        scratch.close()
    try:
        if options.as_json:
            click.echo(outcome.manifest.model_dump_json(by_alias=True, indent=2))
        code = ci.finish(outcome, options.as_json)
    except Exception as exc:  # the run is over and saved: only what shows it failed
        internal_error(
            exc,
            folder=outcome.report_dir,
            redactor=outcome.redactor,
            context=(
                f"The run finished and its report is saved ({outcome.report_dir}, state "
                f"{outcome.manifest.state}); showing its results or writing the CI files "
                f"failed. `axis reports {outcome.manifest.report_id}` shows it."
            ),
        )
    sys.exit(code)


def _dry_run(
    loaded: LoadedConfig, selection: Selection, as_json: bool, *, score: bool, judge: str | None
) -> NoReturn:
    """Print the jobs in scheduling order and exit: 1 when a scenario failed to load.

    What the real run's pre-flight would stop on (a missing key, CLI or judge) or warn
    about (a tape that does not answer the judge) is printed as warnings first, so the dry
    run predicts the real one.
    """
    import os

    from axis_eval import plan
    from axis_eval.pipeline import predict_preflight
    from axis_eval.report.render import dry_run_json, render_dry_run

    the_plan = plan(loaded, selection)
    warn(the_plan.warnings)
    warn(predict_preflight(the_plan, loaded, os.environ, score=score, judge_override=judge))
    for note in the_plan.notes:
        click.echo(note, err=True)
    if as_json:
        click.echo(json.dumps(dry_run_json(the_plan), indent=2))
    else:
        click.echo(render_dry_run(the_plan))
    # Scenarios that fail to load fail a real run (exit 1); a dry run says so too.
    sys.exit(1 if the_plan.load_failures else 0)


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
