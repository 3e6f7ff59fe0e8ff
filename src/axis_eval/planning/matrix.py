"""Build the job matrix: select scenarios per agent, resolve run counts, order run-major."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from axis_eval.adapters.registry import resolve, resolve_custom
from axis_eval.config._base import check_runs
from axis_eval.config.actions import Limit, McpServer, McpStdioServer
from axis_eval.config.discover import Discovery, discover
from axis_eval.config.models import (
    DEFAULT_SCENARIO_MINUTES,
    AdaptiveRuns,
    Config,
    LoadedConfig,
)
from axis_eval.config.output_limit import OutputLimit
from axis_eval.config.sandbox import NetworkMode, SandboxMode, SandboxPolicy
from axis_eval.config.scenario import Scenario
from axis_eval.errors import UsageError
from axis_eval.planning.models import AgentSpec, JobSpec, Pair, Plan
from axis_eval.planning.remote_paths import check_remote_paths
from axis_eval.planning.select import (
    agent_matches,
    display_names,
    empty_selection_hint,
    scenario_matches,
    split_list,
    unmatched_agent,
    unmatched_scenario,
)


@dataclass(frozen=True)
class Selection:
    """What the command line narrows the suite to."""

    scenarios: Sequence[str] = ()
    """``-s`` values: exact keys, base keys or globs (comma lists allowed)."""
    agents: Sequence[str] = ()
    """``-a`` values: display names, adapter names or globs (comma lists allowed)."""
    runs: int | Literal["auto"] | None = None
    """``--runs``: wins over scenario and settings; ``auto``: adaptive repeats (the
    ``settings.runs`` rule when it is one, else the defaults)."""
    only_pairs: frozenset[tuple[str, str]] | None = None
    """Restrict to these (scenario key, agent name) pairs (``--failed``)."""
    sandbox: SandboxMode | None = None
    """``--sandbox``: wins over ``settings.sandbox`` and every scenario's ``sandbox``."""
    pair_runs: Mapping[tuple[str, str], int] | None = None
    """``--resume``: the runs each pair of the report has; an adaptive pair is planned with
    as many (the rounds it already grew), a fixed pair ignores it."""


def _in_suite(key: str, include: list[str] | None, exclude: list[str] | None) -> bool:
    if include is not None and not any(p == "*" or scenario_matches(p, key) for p in include):
        return False
    return not (exclude and any(p == "*" or scenario_matches(p, key) for p in exclude))


def _agent_wants(agent: AgentSpec, key: str) -> bool:
    if agent.scenarios is None:
        return True
    return any(p == "*" or scenario_matches(p, key) for p in agent.scenarios)


def _scenario_allows(scenario: Scenario, agent: AgentSpec) -> bool:
    if scenario.agents is None:
        return True
    names = {agent.name.lower(), agent.adapter}
    return any(a in names for a in scenario.agents)


def _run_count(selection: Selection, scenario: Scenario, config: Config) -> int | AdaptiveRuns:
    """``--runs`` over the scenario's ``runs`` over ``settings.runs``; ``auto`` takes the
    settings' adaptive rule, else the default one."""
    setting = config.settings.runs
    if selection.runs == "auto":
        return setting if isinstance(setting, AdaptiveRuns) else AdaptiveRuns()
    return selection.runs or scenario.runs or setting or 1


def _first(runs: int | AdaptiveRuns) -> int:
    """Runs planned up front: an adaptive pair's ``min``."""
    return runs.min if isinstance(runs, AdaptiveRuns) else runs


def _check_cli_runs(runs: int | Literal["auto"] | None) -> None:
    if runs is None or runs == "auto":
        return
    try:
        check_runs(runs)
    except ValueError as exc:
        raise UsageError(f"--runs {runs}: expected {exc}") from exc


def plan(loaded: LoadedConfig, selection: Selection | None = None) -> Plan:
    """Discover scenarios and build the jobs ``axis run`` would execute, in order.

    Selection narrows in a fixed order (source → suite include → exclude → the agent's
    own ``scenarios`` → ``-s``), then drops skipped scenarios and those whose ``agents``
    leave this agent out.

    Raises:
        ConfigError: an unknown agent, a bad adapter reference, or a bad scenario source.
        UsageError: bad ``--runs``, or a selection that leaves no job.
    """
    sel = selection or Selection()
    config = loaded.config
    _check_cli_runs(sel.runs)
    custom = resolve_custom(config, loaded.config_dir, loaded.path)
    agents = display_names(config.agents, loaded.path)
    for index, agent in enumerate(agents):
        resolve(agent.adapter, config, custom, where=f"agents[{index}].agent", file=loaded.path)
    for index, judge in enumerate(config.judging.agents or [] if config.judging else []):
        where = f"judging.agents[{index}].agent"
        resolve(judge.agent, config, custom, where=where, file=loaded.path)
    found = discover(config, loaded.config_dir)
    check_remote_paths(found.scenarios, loaded.remotes)
    s_patterns = split_list(sel.scenarios)
    a_patterns = split_list(sel.agents)
    warnings = list(loaded.warnings) + found.warnings
    chosen_agents = [
        a for a in agents if not a_patterns or any(agent_matches(p, a) for p in a_patterns)
    ]
    for pattern in a_patterns:
        if not any(agent_matches(pattern, a) for a in agents):
            raise unmatched_agent(pattern, agents)
    pairs: list[tuple[Scenario, AgentSpec, int]] = []
    rules: dict[tuple[str, str], AdaptiveRuns] = {}
    skipped: set[str] = set()
    matched_s: set[str] = set()
    for agent in chosen_agents:
        for scenario in found.scenarios:
            if not _in_suite(scenario.key, config.include, config.exclude):
                continue
            if not _agent_wants(agent, scenario.key):
                continue
            if s_patterns:
                hits = [p for p in s_patterns if scenario_matches(p, scenario.key)]
                if not hits:
                    continue
                matched_s.update(hits)
            if not _scenario_allows(scenario, agent):
                continue
            if scenario.skip:
                skipped.add(scenario.key)
                continue
            runs = _run_count(sel, scenario, config)
            first = _first(runs)
            if isinstance(runs, AdaptiveRuns):
                rules[(scenario.key, agent.name)] = runs
                grown = (sel.pair_runs or {}).get((scenario.key, agent.name), first)
                first = max(first, grown)
            pairs.append((scenario, agent, first))
    if sel.only_pairs is not None:
        pairs = [p for p in pairs if (p[0].key, p[1].name) in sel.only_pairs]
    keys = [s.key for s in found.scenarios]
    suite = config.include is not None or bool(config.exclude)
    missed = [p for p in s_patterns if p not in matched_s]
    warnings.extend(unmatched_scenario(p, keys, suite) for p in missed)
    warnings.extend(_never_run_warnings(config, [s.key for s in found.scenarios]))
    jobs = _jobs(pairs, config, loaded.config_dir, sel.sandbox)
    if not jobs:
        raise UsageError(
            "no jobs to run: the selection is empty" + _failures_text(found),
            hint=(
                "every scenario file found failed to load: fix the files listed above"
                if found.load_failures and not found.scenarios
                else empty_selection_hint(
                    keys, s_patterns, a_patterns, skipped, missed=missed, suite=suite
                )
            ),
        )
    return _assemble(loaded, agents, pairs, jobs, sorted(skipped), found, warnings, rules)


def _adaptive_note(rules: Mapping[tuple[str, str], AdaptiveRuns]) -> str:
    """The dry run's and the run's word on adaptive repeats: the rule, said once a kind."""
    kinds = sorted({(r.min, r.max, r.target, r.rule) for r in rules.values()}, key=lambda k: k[:3])
    said = "; ".join(
        f"{lo} runs per pair first, then 2 more at a time while the composite's "
        f"{'Bonferroni t' if rule == 't' else 'Hoeffding'} 95 % interval is wider than "
        f"{target:g} points, up to {hi}"
        for lo, hi, target, rule in kinds
    )
    return f"note: adaptive repeats for {len(rules)} pair(s): {said} (docs/statistics.md)"


def _assemble(
    loaded: LoadedConfig,
    agents: list[AgentSpec],
    pairs: list[tuple[Scenario, AgentSpec, int]],
    jobs: list[JobSpec],
    skipped: list[str],
    found: Discovery,
    warnings: list[str],
    rules: Mapping[tuple[str, str], AdaptiveRuns],
) -> Plan:
    kept = {(s.key, a.name) for s, a, _ in pairs}
    rules = {k: v for k, v in rules.items() if k in kept}
    max_runs = max([r for _, _, r in pairs] + [r.max for r in rules.values()])
    scenario_keys = {s.key for s, _, _ in pairs}
    agent_names = {a.name for _, a, _ in pairs}
    line = (
        f"Discovered {len(scenario_keys)} scenario{'s' if len(scenario_keys) != 1 else ''} "
        f"across {len(agent_names)} agent{'s' if len(agent_names) != 1 else ''}: "
        f"{len(pairs)} pair{'s' if len(pairs) != 1 else ''}, "
        f"{len(jobs)} job{'s' if len(jobs) != 1 else ''}"
    )
    if max_runs > 1:
        line += f" (up to {max_runs} runs each)"
    notes: list[str] = [_adaptive_note(rules)] if rules else []
    run_limit = loaded.config.settings.limits.run
    if max_runs > 1 and run_limit is not None:
        notes.append(
            "note: settings.limits.run is one budget for the whole run, shared by every "
            f"repeat; with up to {max_runs} runs per pair it runs out about {max_runs}× sooner"
        )
    return Plan(
        config_path=loaded.path,
        config_dir=loaded.config_dir,
        profile=loaded.profile,
        agents=agents,
        pairs=[
            Pair(
                scenario_key=s.key,
                agent_name=a.name,
                run_count=r,
                adaptive=rules.get((s.key, a.name)),
            )
            for s, a, r in pairs
        ],
        jobs=jobs,
        skipped=skipped,
        load_failures=found.load_failures,
        warnings=warnings,
        notes=notes,
        status_line=line,
        max_runs=max_runs,
    )


def sandbox_policy(
    config: Config,
    scenario: Scenario,
    agent: AgentSpec,
    limit: Limit | None,
    config_dir: str,
    override: SandboxMode | None = None,
    mcp_servers: Mapping[str, McpServer] | None = None,
) -> SandboxPolicy:
    """How one job is confined: ``--sandbox``, else the scenario's ``sandbox`` over
    ``settings.sandbox`` (each field on its own); network ``none`` when the scenario or the
    agent asks for it; the container limits of the job's ``limits``."""
    chosen, default = scenario.sandbox, config.settings.sandbox
    mode = override or (chosen and chosen.mode) or (default and default.mode) or "auto"
    image = (chosen and chosen.image) or (default and default.image) or None
    folders = {
        kind: _dedupe(
            [
                _host_folder(path, config_dir)
                for source in (default, chosen)
                if source is not None
                for path in getattr(source, kind) or []
            ]
        )
        for kind in ("readable", "writable")
    }
    # A stdio MCP server runs beside the agent: the files its command line names (a
    # server script in the project) must be readable where the agent runs.
    for server in (mcp_servers or {}).values():
        if isinstance(server, McpStdioServer):
            for arg in (server.command, *server.args):
                if arg.startswith("/") and os.path.isfile(arg):
                    folders["readable"] = _dedupe([*folders["readable"], os.path.dirname(arg)])
    network: NetworkMode = "none" if "none" in (scenario.network, agent.network) else "host"
    return SandboxPolicy(
        mode=mode,
        network=network,
        image=image,
        memory_mb=limit.memory_mb if limit else None,
        pids=limit.pids if limit else None,
        cpus=limit.cpus if limit else None,
        readable=folders["readable"],
        writable=folders["writable"],
    )


def _host_folder(path: str, config_dir: str) -> str:
    """An absolute host path: ``~/…`` expanded, a relative path under the config folder."""
    return os.path.normpath(Path(config_dir) / Path(path).expanduser())


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _jobs(
    pairs: list[tuple[Scenario, AgentSpec, int]],
    config: Config,
    config_dir: str,
    sandbox: SandboxMode | None = None,
) -> list[JobSpec]:
    max_runs = max((r for _, _, r in pairs), default=0)
    jobs: list[JobSpec] = []
    for run_index in range(1, max_runs + 1):
        for scenario, agent, runs in pairs:
            if run_index > runs:
                continue
            limit = scenario.limits or config.settings.limits.scenario
            minutes = limit.time_minutes if limit and limit.time_minutes else None
            env_set = scenario.env if isinstance(scenario.env, dict) else {}
            mcp_servers = {**config.mcp_servers, **scenario.mcp_servers}
            env_names = scenario.env if isinstance(scenario.env, list) else []
            jobs.append(
                JobSpec(
                    number=len(jobs) + 1,
                    scenario=scenario,
                    agent=agent,
                    run_index=run_index,
                    run_count=runs,
                    time_limit_s=(minutes or DEFAULT_SCENARIO_MINUTES) * 60.0,
                    token_limit=limit.tokens if limit else None,
                    output_limit=limit.output if limit and limit.output else OutputLimit(),
                    env_pass=_dedupe(list(config.env) + list(env_names)),
                    env_set=dict(env_set),
                    mcp_servers=mcp_servers,
                    skills=_dedupe(config.skills + agent.skills + scenario.skills),
                    artifacts=_dedupe(config.artifacts + scenario.artifacts),
                    config_dir=config_dir,
                    sandbox=sandbox_policy(
                        config, scenario, agent, limit, config_dir, sandbox, mcp_servers
                    ),
                )
            )
    return jobs


def _never_run_warnings(config: Config, keys: list[str]) -> list[str]:
    if config.include is None and not config.exclude:
        return []
    out: list[str] = []
    for key in keys:
        if _in_suite(key, config.include, config.exclude):
            continue
        claimed = False
        for overlay in config.profiles.values():
            if not isinstance(overlay, dict):
                continue
            paired = "include" in overlay or "exclude" in overlay
            include = overlay.get("include") if paired else config.include
            exclude = overlay.get("exclude") if paired else config.exclude
            include = [include] if isinstance(include, str) else include
            exclude = [exclude] if isinstance(exclude, str) else exclude
            if _in_suite(key, include, exclude):
                claimed = True
                break
        if not claimed:
            out.append(
                f"scenario {key!r} is excluded by the default suite and no profile includes it: "
                "it never runs"
            )
    return out


def _failures_text(found: Discovery) -> str:
    """The scenario files that failed to load, one a line: when they are why nothing runs,
    the error shows them (a dry run with one good scenario lists them the same way)."""
    if not found.load_failures:
        return ""
    lines = [f"\n  {f.path}: {f.error}" for f in found.load_failures]
    return f"\nFailed to load ({len(lines)}):" + "".join(lines)
