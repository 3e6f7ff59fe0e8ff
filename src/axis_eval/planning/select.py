"""Selection rules: glob matching, scenario and agent filters, display names."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from axis_eval.config.models import AgentEntry
from axis_eval.errors import ConfigError, UsageError
from axis_eval.planning.models import AgentSpec


@lru_cache(maxsize=1024)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """An anchored regex for a glob: ``**/`` any depth, ``*`` within a segment, ``?``, ``[..]``."""
    p = pattern.replace("\\", "/").removeprefix("./")
    out = ""
    i = 0
    while i < len(p):
        c = p[i]
        if p.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
            continue
        if p.startswith("**", i):
            out += ".*"
            i += 2
            continue
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            end = p.find("]", i + 1)
            if end == -1:
                out += re.escape(c)
            else:
                body = p[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out += "[" + body.replace("\\", "\\\\") + "]"
                i = end
        else:
            out += re.escape(c)
        i += 1
    return re.compile(f"^{out}$")


def is_glob(pattern: str) -> bool:
    """Whether ``pattern`` has glob characters."""
    return any(ch in pattern for ch in "*?[")


def split_list(values: Iterable[str] | None) -> list[str]:
    """Flatten repeated and comma-separated CLI values."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return out


def scenario_matches(pattern: str, key: str) -> bool:
    """Exact key, base key (all variants), or a glob on either."""
    base = key.split("@", 1)[0]
    if pattern in (key, base):
        return True
    if is_glob(pattern):
        rx = glob_regex(pattern)
        return bool(rx.match(key) or rx.match(base))
    return False


def agent_matches(pattern: str, agent: AgentSpec) -> bool:
    """Exact display name, base name (before ``|``), adapter, or a glob on any of them."""
    pattern = pattern.lower()
    names = {agent.name.lower(), agent.name.split("|", 1)[0].lower(), agent.adapter}
    if pattern in names:
        return True
    if is_glob(pattern):
        rx = glob_regex(pattern)
        return any(rx.match(n) for n in names)
    return False


def sanitize_model(model: str) -> str:
    """``anthropic/claude-3.5-sonnet`` → ``anthropic-claude-3.5-sonnet``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-")


def display_names(entries: list[AgentEntry], file: str | None = None) -> list[AgentSpec]:
    """Name every agent as AXIS does; explicit names win and may not collide.

    Raises:
        ConfigError: two agents end up with the same name because of an explicit ``name``.
    """
    taken: set[str] = set()
    for index, entry in enumerate(entries):
        if not entry.name:
            continue
        if entry.name in taken:
            raise ConfigError(
                f"agents[{index}].name: two agents are named {entry.name!r}",
                file=file,
                hint="explicit agent names must be unique",
            )
        taken.add(entry.name)
    counts: dict[str, int] = {}
    specs: list[AgentSpec] = []
    for entry in entries:
        if entry.name:
            name = entry.name
        else:
            base = entry.agent + (f"|{sanitize_model(entry.model)}" if entry.model else "")
            counts[base] = counts.get(base, 0) + 1
            name = base if counts[base] == 1 else f"{base}-{counts[base]}"
            if name in taken:
                raise ConfigError(
                    f"agents: the generated name {name!r} collides with an explicit `name`",
                    file=file,
                    hint="rename the explicit agent",
                )
        taken.add(name)
        command = entry.command
        specs.append(
            AgentSpec(
                name=name,
                adapter=entry.agent,
                model=entry.model,
                endpoint=entry.endpoint,
                flags=dict(entry.flags),
                command=[command] if isinstance(command, str) else command,
                skills=list(entry.skills),
                scenarios=entry.scenarios,
                network=entry.network,
            )
        )
    return specs


def _shown_names(names: list[str], most: int = 8) -> str:
    """``a, b, c`` or ``a, b, … (12 in all)``: a long list is cut, never the whole of it."""
    if len(names) <= most:
        return ", ".join(names)
    return f"{', '.join(names[:most])}, … ({len(names)} in all)"


def unmatched_agent(pattern: str, agents: list[AgentSpec]) -> UsageError:
    """``-a PATTERN`` matched no configured agent: the closest names first, then them all."""
    from axis_eval.config._problems import did_you_mean

    names = [a.name for a in agents]
    options = names + sorted({a.adapter for a in agents} - set(names))
    return UsageError(
        f"-a {pattern!r} matches no configured agent{did_you_mean(pattern, options)}",
        hint=f"configured agents: {', '.join(names)}",
    )


def unmatched_scenario(pattern: str, keys: list[str], suite: bool) -> str:
    """Why ``-s PATTERN`` selected nothing, with the closest existing keys.

    ``keys`` are every discovered scenario's key; ``suite`` says whether the config has an
    ``include``/``exclude`` (only then is the suite named as a cause).
    """
    from axis_eval.config._problems import closest

    if any(scenario_matches(pattern, key) for key in keys):
        if suite:
            return (
                f"-s {pattern!r} matches only scenarios the suite's include/exclude or the "
                "agents' `scenarios` leave out (-s cannot reach what the suite excludes)"
            )
        return f"-s {pattern!r} matches only scenarios the agents' `scenarios` leave out"
    options = sorted({key.split("@", 1)[0] for key in keys} | set(keys))
    close = closest(pattern, options)
    if close:
        return f"-s {pattern!r} matches no scenario (did you mean {' or '.join(map(repr, close))}?)"
    if not keys:
        return f"-s {pattern!r} matches no scenario (none were found)"
    return f"-s {pattern!r} matches no scenario (scenarios: {_shown_names(options)})"


def empty_selection_hint(
    keys: list[str],
    s_patterns: list[str],
    a_patterns: list[str],
    skipped: set[str],
    *,
    missed: list[str],
    suite: bool,
) -> str:
    """The hint of "no jobs to run": what was found and what each filter left.

    ``missed`` are the ``-s`` patterns that selected nothing (each explained, with the
    closest keys); ``suite`` whether the config has an ``include``/``exclude``.
    """
    if not keys:
        return "no scenarios were found in the configured sources"
    parts = [f"{len(keys)} scenario(s) discovered"]
    parts.extend(unmatched_scenario(p, keys, suite) for p in missed)
    if s_patterns and not missed:
        parts.append(f"-s {','.join(s_patterns)} left none")
    if a_patterns:
        parts.append(f"-a {','.join(a_patterns)}")
    if skipped:
        parts.append(f"{len(skipped)} marked skip")
    checks = ["each agent's `scenarios`", "scenario `agents`"]
    if suite:
        checks.insert(0, "the suite's include/exclude")
    parts.append(f"check {', '.join(checks)}")
    return "; ".join(parts)
