"""``axis run``'s flags as one value: checked together once, then turned into library calls.

:class:`RunCommandOptions` has a field per click parameter of ``axis run`` (same names, so
click's keyword arguments build it directly and a flag added to the command without a field
fails at once). How flags combine is checked in :meth:`RunCommandOptions.from_click`, the one
place that raises the usage errors (exit 2); the rest turns the value into what the library
takes: the config overrides, the :class:`~axis_eval.Selection`, the CI flags and the
pipeline's :class:`~axis_eval.RunOptions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

if TYPE_CHECKING:
    from axis_eval import Executor, LoadedConfig, ReportManifest, RunOptions, Selection
    from axis_eval.cli.ci import CiFlags
    from axis_eval.config.executor import ExecutorKind
    from axis_eval.config.sandbox import SandboxMode
    from axis_eval.progress import Display


class RunsType(click.ParamType[Any]):
    """``--runs``: an integer (checked against the odd 1-19 rule by the planner) or
    ``auto``: adaptive repeats."""

    name = "N|auto"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | Literal["auto"]:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        text = str(value).strip()
        if text.lower() == "auto":
            return "auto"
        try:
            return int(text)
        except ValueError:
            self.fail(f"{value!r}: expected an odd integer from 1 to 19, or auto", param, ctx)


RUNS = RunsType()


@dataclass(frozen=True)
class RunCommandOptions:
    """Every flag of ``axis run`` as click parsed it (types, ranges and defaults are click's)."""

    config_path: str | None
    scenarios: tuple[str, ...]
    agents: tuple[str, ...]
    profile: str | None
    runs: int | Literal["auto"] | None
    """``--runs N`` or ``--runs auto`` (adaptive repeats, :class:`RunsType`)."""
    concurrency: int | None
    sandbox: SandboxMode | None
    """``--sandbox``: wins over the config's and the scenarios' ``sandbox``."""
    executor: ExecutorKind | None
    """``--executor``: wins over ``settings.executor``."""
    scheduler: str | None
    workers: int | None
    dry_run: bool
    tape: str | None
    as_json: bool
    no_score: bool
    judge: str | None
    grace_seconds: float
    pass_score: int
    min_pass_rate: float | None
    compare_baseline: str | None
    """``--compare-baseline [NAME]``: the baseline's name (bare: ``default``)."""
    failed: str | None
    """``--failed [REPORT_ID]``: re-run that report's failed pairs (bare: ``latest``)."""
    resume: str | None
    force: bool
    min_score: int | None
    junit_path: str | None
    summary_md_path: str | None
    offline: bool
    """``--offline``: git sources come from their caches in ``.axis/``; nothing is fetched."""
    refresh_skills: bool
    refresh_repos: bool
    verbose: bool

    @classmethod
    def from_click(cls, params: Mapping[str, Any]) -> RunCommandOptions:
        """The options from click's keyword arguments.

        Raises:
            click.UsageError: flags that cannot be combined (exit 2, before anything loads).
        """
        options = cls(**params)
        options._check_combinations()
        return options

    def _check_combinations(self) -> None:
        # --failed and --resume choose the jobs themselves: no -s/-a with them.
        if self.failed is not None and self.resume is not None:
            raise click.UsageError("--failed and --resume cannot be combined")
        for flag, value in (("--failed", self.failed), ("--resume", self.resume)):
            if value is not None and (self.scenarios or self.agents):
                raise click.UsageError(
                    f"{flag} cannot be combined with -s/--scenario or -a/--agent"
                )
        if self.runs == "auto" and self.no_score:
            raise click.UsageError(
                "--runs auto cannot be combined with --no-score: adaptive repeats decide "
                "from the runs' scores (pass --runs N for a fixed count)"
            )
        if self.resume is not None and (self.runs is not None or self.dry_run):
            raise click.UsageError("--resume cannot be combined with --runs or --dry-run")
        if self.force and self.resume is None:
            raise click.UsageError("--force only applies to --resume")
        if self.dry_run and (self.junit_path is not None or self.summary_md_path is not None):
            raise click.UsageError("--junit and --summary-md cannot be combined with --dry-run")
        if self.offline and (self.refresh_skills or self.refresh_repos):
            flag = "--refresh-skills" if self.refresh_skills else "--refresh-repos"
            raise click.UsageError(f"--offline and {flag} cannot be combined")
        if self.scheduler is not None and self.workers is not None:
            raise click.UsageError(
                "--scheduler and --workers cannot be combined: --workers starts a local "
                "cluster, --scheduler uses a running one"
            )
        if self.executor == "local" and (self.scheduler is not None or self.workers is not None):
            flag = "--scheduler" if self.scheduler is not None else "--workers"
            raise click.UsageError(f"{flag} needs --executor dask (it implies it when left out)")

    def remote_options(self, scratch: ExitStack) -> dict[str, Any]:
        """``load_config``'s keywords for remote scenario sources: the cache with
        ``--offline``; for a dry run, a temporary folder ``scratch`` removes (a dry run
        writes nothing beside the config); else nothing (``.axis/remotes``)."""
        if self.offline:
            return {"offline": True}
        if self.dry_run:
            import tempfile

            folder = scratch.enter_context(tempfile.TemporaryDirectory(prefix="axis-remotes-"))
            return {"remotes_dir": folder}
        return {}

    def config_overrides(self) -> dict[str, Any] | None:
        """``--tape``: the config's model server plays this tape (its absolute path)."""
        if not self.tape:
            return None
        return {"model_server": {"tape": str(Path(self.tape).resolve())}}

    def selection(self, only_pairs: frozenset[tuple[str, str]] | None = None) -> Selection:
        """``-s``, ``-a``, ``--runs`` and ``--sandbox``; ``only_pairs``: the pairs
        ``--failed`` re-runs."""
        from axis_eval import Selection

        return Selection(
            scenarios=self.scenarios,
            agents=self.agents,
            runs=self.runs,
            only_pairs=only_pairs,
            sandbox=self.sandbox,
        )

    def executor_for(self, loaded: LoadedConfig) -> Executor | None:
        """The Dask executor when the flags or ``settings.executor`` ask for it (None: the
        local one). The flags win; the scheduler may also come from ``AXIS_DASK_SCHEDULER``;
        ``--scheduler`` or ``--workers`` alone imply ``dask``."""
        import os

        from axis_eval.config.executor import SCHEDULER_ENV

        settings = loaded.config.settings
        configured = settings.executor
        implied = "dask" if self.scheduler is not None or self.workers is not None else None
        kind = self.executor or implied or (configured.kind if configured else "local")
        if kind != "dask":
            return None
        from axis_eval import DaskExecutor

        if self.workers is not None:
            scheduler = None
        else:
            scheduler = (
                self.scheduler
                or (configured.scheduler if configured else None)
                or os.environ.get(SCHEDULER_ENV)
                or None
            )
        return DaskExecutor(
            loaded,
            scheduler=scheduler,
            workers=self.workers or (configured.workers if configured else None),
            concurrency=self.concurrency or settings.concurrency,
            grace_s=self.grace_seconds,
            score=not self.no_score,
        )

    def ci_flags(self) -> CiFlags:
        """``--min-score``, ``--compare-baseline``, ``--junit`` and ``--summary-md``."""
        from axis_eval.cli.ci import CiFlags

        return CiFlags(
            min_score=self.min_score,
            baseline_name=self.compare_baseline,
            junit_arg=self.junit_path,
            summary_md_arg=self.summary_md_path,
            no_score=self.no_score,
        )

    def pipeline_options(
        self,
        loaded: LoadedConfig,
        selection: Selection,
        resume: ReportManifest | None,
        display: Display,
    ) -> RunOptions:
        """The library's options for this run (``resume``: the report ``--resume`` names)."""
        from axis_eval import RunOptions

        return RunOptions(
            display=display,
            loaded=loaded,
            selection=selection,
            executor=self.executor_for(loaded),
            concurrency=self.concurrency,
            score=not self.no_score,
            judge=self.judge,
            grace_s=self.grace_seconds,
            verbose=self.verbose,
            json_output=self.as_json,
            pass_score=self.pass_score,
            min_pass_rate=self.min_pass_rate,
            resume=resume,
            force=self.force,
            offline=self.offline,
            refresh_skills=self.refresh_skills,
            refresh_repos=self.refresh_repos,
        )
