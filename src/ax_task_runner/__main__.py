"""``ax-task-runner``: flags only; everything else is :func:`ax_task_runner.sources.main_from_cli`
(or, with ``--guest-services-only``, :func:`ax_task_runner.guest_only.main_guest_only`).

Kept to argparse and the standard library: the config model (pydantic, most of the
runner's start-up) loads only on the Task path, and for ``--help`` (the defaults it shows).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ax_task_runner.options import ENV_OPTIONS, _seconds

__all__ = ["build_parser", "main"]


class _FieldHelp(str):
    """An option's help text that ends with its ``RunnerConfig`` default and variable,
    added only when help is printed (:class:`_Formatter`)."""

    field: str


def _help(name: str, text: str) -> str:
    out = _FieldHelp(text)
    out.field = name
    return out


class _Formatter(argparse.HelpFormatter):
    """Appends ``(default: …; env …)`` to the options that name a ``RunnerConfig`` field;
    the config model is imported here, not when the runner starts."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if not isinstance(text, _FieldHelp):
            return text
        from ax_task_runner.config import RunnerConfig

        name = text.field
        variables = [v for v, (field, _) in ENV_OPTIONS.items() if field == name]
        default = RunnerConfig.model_fields[name].default
        shown = {"host": "every interface", "unix_socket": "TCP"}.get(name, default)
        extra = f"; env {variables[0]}" if variables else ""
        return f"{text} (default: {shown}{extra})"


GUEST_ONLY_REFUSES = (
    "task_file",
    "workspace_file",
    "state_dir",
    "readiness",
    "goal_agent",
    "goal_model",
    "goal_endpoint",
    "bootstrap_timeout_s",
    "git_attempts",
    "git_retry_delay_s",
)
"""Flags that mean nothing without a Task (``--guest-services-only`` refuses them)."""


def build_parser() -> argparse.ArgumentParser:
    """The command line; single-dash long forms (``-port 8080``) work as with Go's flags."""
    p = argparse.ArgumentParser(
        prog="ax-task-runner",
        formatter_class=_Formatter,
        description="AX task runner: prepares workspaces, runs spec.command, serves "
        "/healthz, /readyz and the task metadata. Specs come from AX_TASK_YAML and "
        "AX_WORKSPACES_YAML unless files are given.",
    )
    p.add_argument("--task-file", "-task-file", help="read the Task from this YAML file")
    p.add_argument(
        "--guest-services-only",
        dest="guest_only",
        action="store_const",
        const=True,
        help="serve the guest services (as with spec.debug: true) and nothing else: no "
        "Task, no Workspaces, no command; listens once they can answer (for a harness "
        "that drives the container, e.g. axis-eval's docker sandbox)",
    )
    p.add_argument(
        "--workspace-file",
        "-workspace-file",
        action="append",
        default=[],
        help="read Workspaces from this YAML file (repeatable, multi-document)",
    )
    p.add_argument("--port", "-port", type=int, help=_help("port", "port to listen on"))
    p.add_argument("--host", "-host", help=_help("host", "address to listen on"))
    p.add_argument(
        "--unix-socket",
        metavar="PATH",
        help=_help("unix_socket", "listen on this Unix socket instead of TCP"),
    )
    p.add_argument(
        "--files-root",
        dest="files_roots",
        metavar="PATH",
        action="append",
        help="a folder the guest FileSystemService may use (repeatable; default: the first "
        "workspace; env AX_RUNNER_FILES_ROOT, ':'-separated)",
    )
    p.add_argument(
        "--no-confine-files",
        dest="confine_files",
        action="store_const",
        const=False,
        help="let the guest FileSystemService use any path (env AX_RUNNER_CONFINE_FILES=false)",
    )
    p.add_argument(
        "--guest-env",
        choices=["runner", "empty"],
        help=_help(
            "guest_env",
            "base environment of guest processes: the runner's, or none (only the request's)",
        ),
    )
    p.add_argument("--workspace-root", help=_help("workspace_root", "the durable volume"))
    p.add_argument("--state-dir", help=_help("state_dir", "markers and logs"))
    p.add_argument(
        "--readiness",
        choices=["workspace", "serving"],
        help=_help("readiness", "what plain /readyz waits for"),
    )
    p.add_argument(
        "--stop-grace",
        dest="stop_grace_s",
        type=_seconds,
        help=_help("stop_grace_s", "SIGTERM-to-SIGKILL grace, seconds or 10s"),
    )
    p.add_argument("--goal-agent", help=_help("goal_agent", "agent for goal bootstrap"))
    p.add_argument("--goal-model", help=_help("goal_model", "model for the goal agent"))
    p.add_argument("--goal-endpoint", help=_help("goal_endpoint", "model API for the goal agent"))
    p.add_argument(
        "--bootstrap-timeout",
        dest="bootstrap_timeout_s",
        type=_seconds,
        help=_help("bootstrap_timeout_s", "goal time limit, seconds or 10m"),
    )
    p.add_argument("--git-attempts", type=int, help=_help("git_attempts", "tries per repository"))
    p.add_argument(
        "--git-retry-delay",
        dest="git_retry_delay_s",
        type=_seconds,
        help=_help("git_retry_delay_s", "pause between tries"),
    )
    return p


def _refused(args: dict[str, Any]) -> list[str]:
    """The flags given that ``--guest-services-only`` has no use for."""
    given = [name for name in GUEST_ONLY_REFUSES if args.get(name) not in (None, [])]
    return ["--" + name.removesuffix("_s").replace("_", "-") for name in given]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ax-task-runner`` console script."""
    parser = build_parser()
    args = vars(parser.parse_args(argv))
    if args.pop("guest_only"):
        refused = _refused(args)
        if refused:
            parser.error(f"--guest-services-only serves no Task: drop {', '.join(refused)}")
        from ax_task_runner.guest_only import main_guest_only

        return main_guest_only(args)
    task_file = args.pop("task_file")
    workspace_files = args.pop("workspace_file")
    from ax_task_runner.sources import main_from_cli

    return main_from_cli(args, task_file, workspace_files)


if __name__ == "__main__":
    sys.exit(main())
