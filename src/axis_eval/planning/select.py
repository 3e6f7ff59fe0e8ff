"""Selection rules: glob matching, scenario and agent filters, display names."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from axis_eval.config.models import AgentEntry
from axis_eval.errors import ConfigError
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
