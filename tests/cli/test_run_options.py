"""``axis run``'s flags as one model: every flag has a field, bad mixes exit 2 with a
message, and the library's RunOptions carries each flag."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest

from axis_eval import DaskExecutor, load_config
from axis_eval.cli.run import run_command
from axis_eval.cli.run_options import RunCommandOptions

Axis = Callable[..., Any]


def parsed(*args: str) -> dict[str, Any]:
    """What click hands ``run_command`` for these arguments."""
    with run_command.make_context("run", list(args)) as ctx:
        return dict(ctx.params)


def test_every_flag_of_axis_run_is_a_field_of_the_model() -> None:
    names = {p.name for p in run_command.params}
    assert names == set(RunCommandOptions.__dataclass_fields__)
    options = RunCommandOptions.from_click(parsed())
    assert options.grace_seconds == 5.0 and options.pass_score == 75  # click's defaults


BAD_MIXES = {
    "failed-resume": (["--failed", "--resume", "r"], "--failed and --resume cannot be combined"),
    "failed-scenario": (["--failed", "-s", "a"], "--failed cannot be combined with -s/--scen"),
    "resume-agent": (["--resume", "r", "-a", "x"], "--resume cannot be combined with -s/--scen"),
    "resume-runs": (["--resume", "r", "--runs", "3"], "--resume cannot be combined with --runs"),
    "resume-dry": (["--resume", "r", "--dry-run"], "--resume cannot be combined with --runs"),
    "force-alone": (["--force"], "--force only applies to --resume"),
    "dry-junit": (["--dry-run", "--junit", "j.xml"], "cannot be combined with --dry-run"),
    "dry-summary": (["--dry-run", "--summary-md", "s.md"], "cannot be combined with --dry-run"),
    "scheduler-workers": (["--scheduler", "tcp://h:1", "--workers", "2"], "cannot be combined"),
    "local-workers": (["--executor", "local", "--workers", "2"], "--workers needs --executor d"),
    "local-scheduler": (["--executor", "local", "--scheduler", "x"], "--scheduler needs --exec"),
}


@pytest.mark.parametrize("case", sorted(BAD_MIXES))
def test_flags_that_cannot_be_combined_are_refused_before_anything_loads(case: str) -> None:
    args, message = BAD_MIXES[case]
    with pytest.raises(click.UsageError, match=message):
        RunCommandOptions.from_click(parsed(*args))


def test_a_bad_mix_exits_2_with_the_message_and_no_traceback(axis: Axis, tmp_path: Path) -> None:
    done = axis("run", "--force", cwd=tmp_path)  # no config there: the check comes first
    assert done.exit_code == 2
    assert "--force only applies to --resume" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_library_options_carry_every_flag(tmp_path: Path) -> None:
    options = RunCommandOptions.from_click(
        parsed(
            "--concurrency", "3", "--no-score", "--judge", "anthropic:m", "--grace-seconds", "1.5",
            "--json", "--pass-score", "60", "--min-pass-rate", "0.5", "-v", "-s", "a,b",
            "-a", "x", "--runs", "3", "--tape", "t.yaml",
        )
    )  # fmt: skip
    selection = options.selection()
    assert (selection.scenarios, selection.agents, selection.runs) == (("a,b",), ("x",), 3)
    assert options.selection(only_pairs=frozenset({("a", "x")})).only_pairs == frozenset(
        {("a", "x")}
    )
    tape = options.config_overrides()
    assert tape == {"model_server": {"tape": str(Path("t.yaml").resolve())}}
    display = object()  # carried, not read
    (tmp_path / "axis.config.json").write_text('{"agents": ["claude-code"]}')
    loaded = load_config(str(tmp_path))
    built = options.pipeline_options(
        loaded=loaded,
        selection=selection,
        resume=None,
        display=display,  # type: ignore[arg-type]
    )
    assert built.display is display and built.loaded is loaded and built.selection is selection
    assert (built.concurrency, built.score, built.judge, built.grace_s) == (
        3, False, "anthropic:m", 1.5,
    )  # fmt: skip
    assert (built.json_output, built.verbose, built.pass_score, built.min_pass_rate) == (
        True, True, 60, 0.5,
    )  # fmt: skip
    assert (built.resume, built.force) == (None, False)
    assert built.executor is None  # local: the session makes its own


def test_the_ci_flags_come_from_the_model() -> None:
    options = RunCommandOptions.from_click(
        parsed("--min-score", "70", "--compare-baseline", "--junit", "j.xml", "--no-score")
    )
    ci = options.ci_flags()
    assert (ci.min_score, ci.baseline_name, ci.junit_arg, ci.summary_md_arg, ci.no_score) == (
        70, "default", "j.xml", None, True,
    )  # fmt: skip
    assert RunCommandOptions.from_click(parsed()).config_overrides() is None


def _loaded(tmp_path: Path, executor: object = None) -> Any:
    settings = {"executor": executor} if executor is not None else {}
    body = {"agents": ["claude-code"], "settings": {"concurrency": 6, **settings}}
    (tmp_path / "axis.config.json").write_text(__import__("json").dumps(body))
    return load_config(str(tmp_path))


EXECUTORS = {
    "default": ([], None, None, None),
    "config-kind": ([], "dask", ("dask", None, None), None),
    "config-object": ([], {"kind": "dask", "scheduler": "tcp://s:1"},
                      ("dask", "tcp://s:1", None), None),
    "env-scheduler": (["--executor", "dask"], None, ("dask", "tcp://e:2", None), "tcp://e:2"),
    "flag-wins": (["--scheduler", "tcp://f:3"], {"kind": "dask", "scheduler": "tcp://s:1"},
                  ("dask", "tcp://f:3", None), "tcp://e:2"),
    "workers-implies": (["--workers", "3"], {"kind": "dask", "scheduler": "tcp://s:1"},
                        ("dask", None, 3), "tcp://e:2"),
    "flag-local": (["--executor", "local"], {"kind": "dask", "workers": 2}, None, None),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(EXECUTORS))
def test_the_executor_comes_from_the_flags_then_the_config_then_the_environment(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, configured, expected, env = EXECUTORS[case]
    if env is None:
        monkeypatch.delenv("AXIS_DASK_SCHEDULER", raising=False)
    else:
        monkeypatch.setenv("AXIS_DASK_SCHEDULER", env)
    options = RunCommandOptions.from_click(parsed(*args))
    built = options.executor_for(_loaded(tmp_path, configured))
    if expected is None:
        assert built is None
        return
    assert isinstance(built, DaskExecutor)
    assert ("dask", built.scheduler, built.workers) == expected
    assert built.concurrency == 6  # settings.concurrency: the global cap
