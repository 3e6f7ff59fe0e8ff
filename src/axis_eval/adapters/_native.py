"""What the native built-in agents (claude-code, codex, gemini) share.

Each built-in resolves its CLI from the pinned cache (``axis agents install``) or PATH,
records the CLI's exact version, maps ``model`` and ``flags`` to CLI flags, and keeps all
of the agent's state under the job's HOME. Each built-in's module declares what is its own
as one :class:`NativeRecipe` (``NATIVE``); :meth:`NativeRecipe.adapter` turns it into an
ordinary :class:`~axis_eval.adapters.base.AgentAdapter`. Nothing here spawns the agent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from axis_eval._types import TokenUsage
from axis_eval._util.json_text import context_text
from axis_eval.adapters import base, install, skills
from axis_eval.adapters._scrub import MAX_COUNT, finite_cost, scrub
from axis_eval.adapters.base import flag_args
from axis_eval.adapters.builtins import BuiltinAgent

__all__ = [
    "NativeCli",
    "NativeRecipe",
    "NativeState",
    "as_text",
    "endpoint_base",
    "finite_cost",
    "flag_args",
    "has_flag",
    "install_skills",
    "openai_base",
    "package_version",
    "parse_version",
    "set_agent_env",
    "set_base_url",
    "xdg_env",
]

_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?")


def parse_version(text: str | None) -> str | None:
    """The first ``1.2.3``-like token of ``text`` (``codex-cli 0.171.0`` → ``0.171.0``)."""
    if not text:
        return None
    match = _VERSION.search(text)
    return match.group(0) if match else text.strip() or None


def package_version(binary: str) -> str | None:
    """The npm package version of a CLI installed from npm, read from its package.json.

    Follows symlinks (``node_modules/.bin/claude`` → ``@anthropic-ai/claude-code/bin/…``)
    and walks up at most four folders, staying inside ``node_modules``. Reading a file is
    instant; ``<cli> --version`` starts the whole CLI, which for some (Gemini) is slow.
    """
    try:
        path = Path(binary).resolve()
    except OSError:
        return None
    if "node_modules" not in path.parts:
        return None
    folder = path.parent
    for _ in range(4):
        if folder.name == "node_modules":
            return None
        manifest = folder / "package.json"
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            version = data.get("version") if isinstance(data, dict) else None
            return version if isinstance(version, str) and version else None
        folder = folder.parent
    return None


def has_flag(flags: Mapping[str, str | bool], *names: str) -> bool:
    """Whether ``flags`` mentions any of ``names`` (with or without dashes), any value."""
    wanted = {n.lstrip("-") for n in names}
    return any(key.lstrip("-") in wanted for key in flags)


def model_args(inp: base.AdapterInput, *aliases: str) -> list[str]:
    """``--model M`` for the agent entry's model, unless ``flags`` already set it (as
    ``model`` or one of ``aliases``)."""
    if inp.agent.model and not has_flag(inp.agent.flags, "model", *aliases):
        return ["--model", inp.agent.model]
    return []


def xdg_env(home: str) -> dict[str, str]:
    """XDG folders inside the job's HOME, so no CLI writes to the user's real ones."""
    return {
        "XDG_CONFIG_HOME": f"{home}/.config",
        "XDG_DATA_HOME": f"{home}/.local/share",
        "XDG_STATE_HOME": f"{home}/.local/state",
        "XDG_CACHE_HOME": f"{home}/.cache",
    }


def endpoint_base(endpoint: str) -> str:
    """The endpoint without trailing slashes."""
    return endpoint.rstrip("/")


def openai_base(endpoint: str) -> str:
    """The endpoint as an OpenAI-compatible base URL (``…/v1``)."""
    base = endpoint_base(endpoint)
    return base if base.endswith("/v1") else base + "/v1"


def set_base_url(inp: base.AdapterInput, variable: str) -> None:
    """Point the CLI's base-URL ``variable`` at the entry's endpoint, when there is one."""
    if inp.endpoint:
        set_agent_env(inp, {variable: endpoint_base(inp.endpoint)})


def install_skills(inp: base.AdapterInput, target: Path) -> None:
    """Copy the entry's skills into ``target`` (the CLI's skills folder under HOME)."""
    if inp.skills:
        skills.install_skills(inp.skills, inp.env.get("AXIS_CONFIG_DIR"), target)


def set_agent_env(inp: base.AdapterInput, values: Mapping[str, str]) -> None:
    """Add variables to the agent's environment from ``prepare``.

    The supervisor copies ``inp.env`` for the spawn after ``prepare`` returns, so updating it
    here reaches the agent. (Values that depend on the input, such as the endpoint, have no
    other place: ``isolation_env`` only sees the workspace and HOME.)
    """
    inp.env.update(values)


def as_text(value: Any) -> str:
    """A tool output as text: strings as they are, text blocks joined, the rest as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts: list[str] = []
        for block in value:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "image":
                parts.append("[image]")
            elif isinstance(block, str):
                parts.append(block)
            else:
                parts.append(context_text(block))
        return "\n".join(parts)
    return context_text(value)


def int_of(value: Any) -> int:
    """A token count from JSON: non-negative finite numbers up to :data:`MAX_COUNT` (floats
    truncated), anything else is 0 (``NaN``, ``1e400``, which JSON reads as infinity, …)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not 0 <= value <= MAX_COUNT:  # also False for NaN
        return 0
    return int(value)


def usage_of(
    input: Any = 0, output: Any = 0, cache_read: Any = 0, cache_write: Any = 0
) -> TokenUsage:
    """A :class:`TokenUsage` from loosely typed JSON numbers."""
    return TokenUsage(
        input=int_of(input),
        output=int_of(output),
        cache_read_input=int_of(cache_read),
        cache_write_input=int_of(cache_write),
    )


@dataclass
class NativeCli:
    """The CLI of one native built-in: which binary, which version, per run.

    ``binary`` is the pinned cache install (or the CLI on PATH) found at load time; an
    agent entry's ``command`` replaces it. The version is the npm package version (read
    from its package.json), else ``<cli> --version``; for a ``command`` override only the
    package.json is read (a wrapper script is never run just to ask its version).
    """

    builtin: BuiltinAgent
    binary: str | None
    version: str | None
    _next_version: str | None = None

    @classmethod
    def load(cls, builtin: BuiltinAgent, *, require_binary: bool = True) -> NativeCli:
        """Find the CLI now (pre-flight).

        Raises:
            PreflightError: the CLI is not installed and ``require_binary``; the message
                gives the ``axis agents install`` command.
        """
        fallback = builtin.command[0]
        try:
            binary: str | None = install.resolve_binary(builtin.name, fallback)
        except Exception:
            if require_binary:
                raise
            binary = None
        version = detect_version(binary) if binary else None
        return cls(builtin, binary, version)

    def resolve_command(self, inp: base.AdapterInput) -> list[str]:
        """The default argv prefix: the resolved CLI (an entry's ``command`` wins anyway)."""
        if self.binary is None:
            pkg = install.PINS.get(self.builtin.name)
            hint = install.install_command([self.builtin.name]) if pkg else "install it"
            raise base.AdapterConfigError(
                f"the {self.builtin.name!r} agent's CLI ({self.builtin.command[0]}) is not "
                f"installed; run `{hint}`"
            )
        return [self.binary]

    def version_for(self, inp: base.AdapterInput) -> str | None:
        """The CLI version for this run (the ``command`` override's, when it has one)."""
        command = inp.agent.command
        if not command:
            return self.version
        found = shutil.which(command[0], path=inp.env.get("PATH")) or command[0]
        return package_version(found) if os.path.exists(found) else None

    def remember(self, inp: base.AdapterInput) -> None:
        """Called from ``build_args``: the version the next ``initial_state`` records."""
        self._next_version = self.version_for(inp)

    def take_version(self) -> str | None:
        """Called from ``initial_state`` (which the supervisor calls right after ``build_args``)."""
        version, self._next_version = self._next_version, None
        return version


_DETECTED: dict[str, str | None] = {}


def detect_version(binary: str) -> str | None:
    """The CLI's exact version: package.json when npm-installed, else ``--version``."""
    if binary not in _DETECTED:
        _DETECTED[binary] = package_version(binary) or parse_version(install.cli_version(binary))
    return _DETECTED[binary]


def config_dir(inp: base.AdapterInput, variable: str, default: str) -> Path:
    """An agent config folder from the job's environment (``CLAUDE_CONFIG_DIR`` …), created."""
    folder = Path(inp.env.get(variable) or os.path.join(inp.home, default))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def first_text(values: Iterable[Any]) -> str | None:
    """The first non-empty string among ``values``."""
    for value in values:
        if isinstance(value, str) and value.strip():
            return value
    return None


@dataclass
class NativeState:
    """What every native built-in's run state holds; each built-in's state adds its own."""

    version: str | None = None
    """The CLI's version: the one started, unless its stream names its own."""
    model: str | None = None
    """The model the stream names."""


S = TypeVar("S", bound=NativeState)


@dataclass(frozen=True)
class NativeRecipe(Generic[S]):
    """What one native built-in declares: how to start its CLI and how to read it.

    Everything the three built-ins do alike is :meth:`adapter`'s: the prompt on stdin, the
    CLI's exact version in each run's state, the ``XDG_*`` folders under the job's HOME,
    the base-URL variable passed through when set, stdout lines that are not JSON objects
    warned about, the CLI's version and model recorded in the transcript.
    """

    args: Callable[[base.AdapterInput], list[str]]
    """The arguments after the CLI (the prompt goes to stdin)."""
    home_env: Callable[[str], dict[str, str]]
    """``home -> variables`` set for every job, besides the ``XDG_*`` folders."""
    base_url_env: str
    """The CLI's base-URL variable, passed through from the parent when set."""
    prepare: Callable[[base.AdapterInput], None]
    """Writes the job's config files under HOME before the spawn."""
    state: Callable[[str | None], S]
    """``version -> `` a fresh run state (the state dataclass: its first field is the
    version of the CLI started)."""
    on_line: Callable[[dict[str, Any], base.StreamContext[S]], None]
    """Maps one stdout JSON object into the transcript."""
    get_result: Callable[[base.ResultContext[S]], base.AdapterResult]
    """Reads the answer; the transcript already has the version and model (:meth:`result`)."""
    on_end: Callable[[base.StreamContext[S]], None] | None = None
    """Runs once after stdout ends."""

    def adapter(
        self, builtin: BuiltinAgent, *, require_binary: bool = True
    ) -> base.AgentAdapter[S]:
        """The built-in's adapter, its CLI found now (``require_binary=False``: every agent
        entry sets ``command``, so a missing CLI is no error yet).

        Raises:
            PreflightError: the CLI is not installed (and ``require_binary``).
        """
        cli = NativeCli.load(builtin, require_binary=require_binary)

        def build_args(inp: base.AdapterInput) -> list[str]:
            cli.remember(inp)
            return self.args(inp)

        def initial_state() -> S:
            return self.state(cli.take_version())

        def isolation_env(workspace: str, home: str) -> dict[str, str]:
            return {**xdg_env(home), **self.home_env(home)}

        # One string per kind of warning, shared by every line that earns it: a flood of
        # tiny bad lines must not cost a new message each.
        not_object = f"{builtin.name}: a stdout line is JSON but not an object"
        kept: dict[str, str] = {}

        def on_line(event: Any, ctx: base.StreamContext[S]) -> None:
            if not isinstance(event, dict):
                ctx.warn(not_object)
                return
            scrubbed = scrub(event)
            if problem := scrubbed.describe():
                ctx.warn(
                    kept.setdefault(
                        problem, f"{builtin.name}: a stdout event was kept with {problem}"
                    )
                )
            self.on_line(scrubbed.value, ctx)

        return base.create_agent_adapter(
            name=builtin.name,
            build_args=build_args,
            initial_state=initial_state,
            stream=base.LinesMode(on_line=on_line, on_end=self.on_end),
            get_result=self.result,
            resolve_command=cli.resolve_command,
            prompt_via="stdin",
            required_env=builtin.required_env,
            optional_env=(self.base_url_env,),
            isolation_env=isolation_env,
            prepare=self.prepare,
        )

    def result(self, ctx: base.ResultContext[S]) -> base.AdapterResult:
        """``get_result``, after recording the CLI's version and the model (unless the
        transcript already names one) in the transcript."""
        transcript = ctx.transcript.transcript
        transcript.agent_version = ctx.state.version
        if transcript.model is None and ctx.state.model:
            transcript.model = ctx.state.model
        return self.get_result(ctx)
