"""Before any job starts: load the adapters, check what they need, gather the secrets.

Everything here fails early (exit code 2) so that a run never stops half-way for a missing
CLI, variable or skill folder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from axis_eval._util.git import GitError
from axis_eval.adapters.base import AgentAdapter
from axis_eval.adapters.loader import AdapterLoadError, load_adapter
from axis_eval.adapters.mcp_files import (
    McpVariableMissing,
    interpolated_values,
    missing_message,
    missing_variables,
)
from axis_eval.adapters.registry import resolve, resolve_custom
from axis_eval.adapters.skills import SkillError, check_sources, fetch_skills
from axis_eval.config.models import LoadedConfig
from axis_eval.errors import PreflightError
from axis_eval.execute.lifecycle import fetch_copy_repos, git_copy_sources
from axis_eval.execute.workspace import PASSTHROUGH, missing_env
from axis_eval.planning.models import AgentSpec, JobSpec, Plan
from axis_eval.redact import Redactor, looks_secret, mcp_secret_values


def load_adapters(
    the_plan: Plan, loaded: LoadedConfig, *, binaries: bool = True
) -> dict[str, AgentAdapter[Any]]:
    """Load every adapter the jobs need, once.

    Raises:
        PreflightError: an adapter cannot load (a missing CLI names its install command).
    """
    return load_agent_adapters(unique_agents(the_plan), loaded, binaries=binaries)


def load_agent_adapters(
    used: Sequence[AgentSpec], loaded: LoadedConfig, *, binaries: bool = True
) -> dict[str, AgentAdapter[Any]]:
    """The adapters of ``used`` agents, each once (what a remote worker loads for its jobs).
    ``binaries``: check each built-in's pinned CLI is installed here (not where the jobs run
    on other machines: their workers check theirs).

    Raises:
        PreflightError: an adapter cannot load (a missing CLI names its install command).
    """
    custom = resolve_custom(loaded.config, loaded.config_dir, loaded.path)
    adapters: dict[str, AgentAdapter[Any]] = {}
    for agent in used:
        if agent.adapter in adapters:
            continue
        # The pinned CLI is only needed when some entry of this adapter has no `command`.
        needs_binary = binaries and not all(a.command for a in used if a.adapter == agent.adapter)
        try:
            ref = resolve(agent.adapter, loaded.config, custom)
            adapters[agent.adapter] = load_adapter(ref, require_binary=needs_binary)
        except AdapterLoadError as exc:
            raise PreflightError(f"agent {agent.name!r}: {exc.message}", hint=exc.hint) from exc
    return adapters


def preflight(
    the_plan: Plan,
    loaded: LoadedConfig,
    environ: Mapping[str, str],
    adapters: Mapping[str, AgentAdapter[Any]] | None = None,
    *,
    agent_env: bool = True,
    git: GitFetch | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, AgentAdapter[Any]]:
    """Check, before any job starts, every adapter's environment and the skill sources
    (``agent_env``: the agents' variables must be set here; not when the jobs run on
    workers, whose own environments their pre-flight checks), and fetch what the jobs need
    from git: GitHub skills and the repositories ``copy`` actions name (``git``: how;
    ``say``: where ``Cloning …`` lines and warnings about the clones go).

    Raises:
        PreflightError: an adapter cannot load, a variable it needs is not set, a skill
            source cannot be used, or a repository cannot be fetched.
    """
    loaded_adapters = dict(adapters) if adapters is not None else load_adapters(the_plan, loaded)
    unset = missing_keys(the_plan, loaded_adapters, environ) if agent_env else []
    if unset:
        raise PreflightError(
            "; ".join(key_sentence(agent, names) for agent, names in unset),
            hint=f"export {unset[0][1][0]}=… before `axis run`, {OFFLINE_HINT}",
        )
    unset_mcp = mcp_unset(the_plan, environ) if agent_env else []
    if unset_mcp:
        raise McpVariableMissing(
            missing_message(unset_mcp),
            hint=f"export {unset_mcp[0][3]}=… before `axis run` "
            "(in MCP header and env values, $${NAME} is a literal ${NAME})",
        )
    fetch_git_sources(the_plan, loaded, git or GitFetch(), say)
    problems = check_sources([s for j in the_plan.jobs for s in j.skills], loaded.config_dir)
    if problems:
        raise PreflightError(
            "skills: " + "; ".join(problems),
            hint="skills are local folders holding a SKILL.md, relative to the config, "
            "or GitHub repositories (owner/repo)",
        )
    return loaded_adapters


def mcp_unset(the_plan: Plan, environ: Mapping[str, str]) -> list[tuple[str, str, str, str]]:
    """``${VAR}`` in the jobs' MCP headers and env values that ``environ`` (with each job's
    own ``env`` values) does not set: ``(server, field, key, variable)``, each once."""
    found: dict[tuple[str, str, str, str], None] = {}
    for job in the_plan.jobs:
        for item in missing_variables(job.mcp_servers, {**environ, **job.env_set}):
            found[item] = None
    return list(found)


@dataclass(frozen=True)
class GitFetch:
    """How pre-flight fetches GitHub skills and ``copy`` repositories."""

    offline: bool = False
    """Use the caches only (``--offline``)."""
    refresh_skills: bool = False
    """Clone GitHub skills afresh (``--refresh-skills``)."""
    refresh_repos: bool = False
    """Clone ``copy`` repositories afresh (``--refresh-repos``)."""


def fetch_git_sources(
    the_plan: Plan,
    loaded: LoadedConfig,
    how: GitFetch,
    say: Callable[[str], None] | None = None,
) -> None:
    """Clone (or reuse) the GitHub skills and ``copy`` repositories the plan's jobs and the
    run's hooks use, before any job starts.

    Raises:
        PreflightError: a source cannot be fetched (the message names its URL and why).
    """
    try:
        fetch_skills(
            [s for j in the_plan.jobs for s in j.skills],
            loaded.config_dir,
            refresh=how.refresh_skills,
            offline=how.offline,
            say=say,
        )
    except SkillError as exc:
        raise PreflightError(f"skills: {exc.message}", hint=exc.hint) from exc
    config = loaded.config
    actions = [a for j in the_plan.jobs for a in (*j.scenario.setup, *j.scenario.teardown)]
    sources = git_copy_sources([*config.before_all, *actions, *config.after_all])
    try:
        fetch_copy_repos(
            sources,
            Path(loaded.config_dir),
            refresh=how.refresh_repos,
            offline=how.offline,
            say=say,
        )
    except GitError as exc:
        raise PreflightError(f"copy: {exc.message}", hint=exc.hint) from exc
    except OSError as exc:
        raise PreflightError(f"copy: cannot write the repository cache: {exc}") from exc


def missing_keys(
    the_plan: Plan, adapters: Mapping[str, AgentAdapter[Any]], environ: Mapping[str, str]
) -> list[tuple[str, list[str]]]:
    """``(agent name, its required variables not set in environ)`` for each agent lacking some."""
    found = []
    for agent in unique_agents(the_plan):
        missing = missing_env(adapters[agent.adapter].required_env, environ)
        if missing:
            found.append((agent.name, missing))
    return found


def key_sentence(agent: str, missing: Sequence[str]) -> str:
    """``the 'claude-code' agent needs … ANTHROPIC_API_KEY, which are not set``."""
    return (
        f"the {agent!r} agent needs environment variable(s) {', '.join(missing)}, which are not set"
    )


OFFLINE_HINT = (
    "or run offline against a scripted model (`axis run --tape TAPE`, docs/model-server.md)"
)


def sandbox_preflight(the_plan: Plan) -> str | None:
    """Check the sandboxes the jobs ask for, before any job starts; the loud warning to show
    when ``auto`` falls back to ``none``, or when bwrap cannot bound its in-memory folders
    (None when neither).

    Raises:
        PreflightError: a job asks for ``bwrap`` and bubblewrap cannot confine jobs here.
    """
    modes = {job.sandbox.mode for job in the_plan.jobs}
    if not modes & {"auto", "bwrap"}:
        return None
    from axis_eval.execute.sandbox.probe import bwrap_problem, unbounded_tmpfs_warning

    problem = bwrap_problem()
    if problem is None:
        return unbounded_tmpfs_warning()
    if "bwrap" in modes:
        raise PreflightError(
            f"sandbox bwrap: {problem}",
            hint="install bubblewrap (apt-get install bubblewrap), allow unprivileged user "
            "namespaces, or choose another sandbox (--sandbox none|docker|auto)",
        )
    return (
        f"sandbox auto: {problem}; jobs run UNCONFINED (sandbox none): the agent sees and "
        "may change everything this user can (docs/sandboxes.md)"
    )


def unique_agents(the_plan: Plan) -> list[AgentSpec]:
    """The agents some job of the plan uses, in the config's order."""
    used = {job.agent.name for job in the_plan.jobs}
    return [a for a in the_plan.agents if a.name in used]


def run_redactor(
    the_plan: Plan, adapters: Mapping[str, AgentAdapter[Any]], env: Mapping[str, str]
) -> Redactor:
    """Secrets: values of secret-looking passed-through variables, scenario values, MCP."""
    names: list[str] = []
    secrets: list[str] = []
    for job in the_plan.jobs:
        names.extend(job.env_pass)
        secrets.extend(job_secrets(job, env))
    for adapter in adapters.values():
        names.extend(adapter.required_env)
    names = [n for n in dict.fromkeys(names) if n not in PASSTHROUGH]
    return Redactor.from_env(names, env, secrets)


def job_secrets(job: JobSpec, env: Mapping[str, str]) -> list[str]:
    """A job's secret values besides its variables': its MCP header and env values, as
    written and as filled in from ``env``, and its secret-looking scenario values (a Dask
    worker redacts its jobs' outcomes with these, from its own environment)."""
    servers = {k: v.model_dump() for k, v in job.mcp_servers.items()}
    secrets = mcp_secret_values(servers)
    secrets.extend(interpolated_values(job.mcp_servers, {**env, **job.env_set}))
    secrets.extend(v for k, v in job.env_set.items() if looks_secret(k))
    # "Bearer <token>" headers: the token alone must not leak either.
    return [*secrets, *(s.split()[-1] for s in secrets if len(s.split()) > 1)]


def predict_preflight(
    the_plan: Plan,
    loaded: LoadedConfig,
    environ: Mapping[str, str],
    *,
    score: bool = True,
    judge_override: str | None = None,
) -> list[str]:
    """What the real run's pre-flight would stop on, and what it would warn about before any
    job starts, as warning lines: ``axis run --dry-run`` predicts ``axis run``.

    Mirrors the run's order: the adapters (and their pinned CLIs), the agents' keys (the
    scripted model server supplies placeholders for them), the judges' keys and adapters,
    then whether the tape answers the judge.
    """
    from axis_eval.errors import AxisError

    out: list[str] = []
    try:
        adapters = load_adapters(the_plan, loaded)
    except PreflightError as exc:
        out.append(_stops(exc))
        try:
            adapters = load_adapters(the_plan, loaded, binaries=False)
        except PreflightError:
            return out
    env = dict(environ)
    scripted = loaded.config.model_server is not None
    if scripted:
        from axis_eval.execute.scripted_model import placeholder_keys

        env.update(placeholder_keys([n for a in adapters.values() for n in a.required_env], env))
    for agent, names in missing_keys(the_plan, adapters, env):
        out.append(
            f"{key_sentence(agent, names)}: `axis run` will stop before any job starts "
            f"(export {names[0]}=…, {OFFLINE_HINT})"
        )
    unset_mcp = mcp_unset(the_plan, env)
    if unset_mcp:
        out.append(f"{missing_message(unset_mcp)}: `axis run` will stop before any job starts")
    if not score:
        return out
    from axis_eval.pipeline.tape_judging import LOCAL_URL, tape_judging_warnings
    from axis_eval.scoring.scorer import preflight_judging

    try:
        preflight_judging(
            loaded,
            unique_agents(the_plan),
            adapters,
            env,
            judge_override=judge_override,
            model_server_url=LOCAL_URL if scripted else None,
        )
    except AxisError as exc:
        out.append(_stops(exc))
    if scripted:
        out.extend(tape_judging_warnings(the_plan, loaded, judge_override=judge_override))
    return out


def _stops(exc: Exception) -> str:
    from axis_eval.errors import AxisError

    text = exc.message if isinstance(exc, AxisError) else str(exc)
    hint = exc.hint if isinstance(exc, AxisError) else None
    return f"{text}: `axis run` will stop before any job starts" + (f" ({hint})" if hint else "")


def needed_keys(the_plan: Plan, loaded: LoadedConfig, *, score: bool = True) -> list[str]:
    """The API keys the plan's agents (and, when scoring, their judges) need without a
    scripted model server: what ``axis run --profile live`` of a scaffold asks for."""
    from axis_eval.scoring.judge import choose_judge

    adapters = load_adapters(the_plan, loaded, binaries=False)
    agents = unique_agents(the_plan)
    names = [n for a in agents for n in adapters[a.adapter].required_env]
    for agent in agents if score else []:
        choice = choose_judge(loaded.config.judging, agent)
        if choice.kind == "api" and not choice.base_url and choice.api_key_env:
            names.append(choice.api_key_env)
        elif choice.agent is not None and choice.agent.adapter in adapters:
            names.extend(adapters[choice.agent.adapter].required_env)
    return list(dict.fromkeys(names))
