"""What keeps the runner's start light: the command line without pydantic, the options of
``--guest-services-only`` kept equal to ``RunnerConfig``'s, the HTTP date without ``email``."""

from __future__ import annotations

import random
import subprocess
import sys
from email.utils import formatdate

import pytest

from ax_task_runner.__main__ import GUEST_ONLY_REFUSES, _FieldHelp, _refused, build_parser
from ax_task_runner.config import RunnerConfig
from ax_task_runner.errors import RunnerError
from ax_task_runner.guest_only import GuestOnlyOptions, guest_only_options
from ax_task_runner.options import ENV_OPTIONS
from ax_task_runner.server import http_date


def test_the_command_line_loads_no_pydantic_until_the_task_path() -> None:
    code = (
        "import sys; from ax_task_runner.__main__ import build_parser;"
        "import ax_task_runner.guest_only; build_parser().parse_args(['--port', '1']);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'yaml')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_help_still_shows_the_config_defaults_and_variables() -> None:
    text = " ".join(build_parser().format_help().split())
    assert "port to listen on (default: 80; env AX_RUNNER_PORT)" in text
    assert "address to listen on (default: every interface; env AX_RUNNER_HOST)" in text
    assert "(default: TCP; env AX_RUNNER_UNIX_SOCKET)" in text
    assert "goal time limit, seconds or 10m (default: 600.0; env AX_BOOTSTRAP_TIMEOUT)" in text
    fields = [a.help.field for a in build_parser()._actions if isinstance(a.help, _FieldHelp)]
    assert len(fields) == 14 and set(fields) <= set(RunnerConfig.model_fields)


def test_what_guest_only_refuses_names_real_flags() -> None:
    parser = build_parser()
    dests = {a.dest: a.option_strings[0] for a in parser._actions}
    assert set(GUEST_ONLY_REFUSES) <= set(dests)
    given = {name: "x" for name in GUEST_ONLY_REFUSES} | {"workspace_file": ["w.yaml"]}
    assert _refused(given) == [dests[name] for name in GUEST_ONLY_REFUSES]
    assert _refused({"workspace_file": [], "task_file": None, "port": 8080}) == []


def test_guest_only_options_follow_runner_config() -> None:
    # The same defaults (pydantic is not loaded on this path: a copy, kept equal here).
    ours = GuestOnlyOptions()
    for name in GuestOnlyOptions.__dataclass_fields__:
        assert getattr(ours, name) == RunnerConfig.model_fields[name].get_default(
            call_default_factory=True
        ), name
    # The same variables, flags over them.
    environ = {"AX_RUNNER_UNIX_SOCKET": "/s", "AX_RUNNER_FILES_ROOT": "/x:/y"}
    environ |= {"AX_RUNNER_CONFINE_FILES": "false", "AX_RUNNER_GUEST_ENV": "empty"}
    got = guest_only_options({"unix_socket": "/flag", "port": None}, environ)
    assert got == GuestOnlyOptions("/flag", None, 80, "/workspace", ["/x", "/y"], False, "empty")
    assert guest_only_options({}, {"AX_RUNNER_STOP_GRACE": "1m"}).stop_grace_s == 60
    # The same limits: what RunnerConfig refuses, this refuses.
    for field, value in [("port", -1), ("port", 65536), ("stop_grace_s", -0.5)]:
        with pytest.raises(ValueError):
            RunnerConfig.model_validate({field: value})
        with pytest.raises(RunnerError, match=f"invalid option: {field}"):
            guest_only_options({field: value}, {})
    for field, value in [("port", 0), ("port", 65535), ("stop_grace_s", 0)]:
        RunnerConfig.model_validate({field: value})
        assert getattr(guest_only_options({field: value}, {}), field) == value
    with pytest.raises(RunnerError, match="guest_env"):
        guest_only_options({}, {"AX_RUNNER_GUEST_ENV": "none"})
    assert {field for field, _ in ENV_OPTIONS.values()} >= set(
        GuestOnlyOptions.__dataclass_fields__
    )
    for variable in ("AX_TASK_YAML", "AX_WORKSPACES_YAML"):
        with pytest.raises(RunnerError, match=f"serves no Task: {variable} is set"):
            guest_only_options({}, {variable: "kind: Task"})
    assert guest_only_options({}, {"AX_TASK_YAML": "  \n"}) == GuestOnlyOptions()


def test_the_http_date_is_what_email_utils_writes() -> None:
    rng = random.Random(15)
    for when in [0.0, 784111777.0, 951782400.0, 2**31 + 0.9] + [
        rng.uniform(0, 6e9) for _ in range(2000)
    ]:
        assert http_date(when) == formatdate(when, usegmt=True), when
