"""Remote scenario sources: git repositories listed in ``scenarios``, as AXIS has them.

Each is cloned shallow into ``.axis/remotes/<reversed host>/<owner>/<repo>`` beside the
config and pulled fast-forward on later runs (a pinned ref is fetched and checked out
instead). Its own ``axis.config.*`` (if any) contributes its ``scenarios`` (paths made
absolute inside the clone, inline scenarios as they are, URLs resolved in turn) and the
keyed merges: ``env``, ``skills`` and ``artifacts`` as ordered unions, ``mcp_servers`` and
``adapters`` by name; the parent wins, and a later sibling over an earlier one. Its
``agents``, ``settings``, ``judging``, hooks and ``name`` are ignored. Without a config the
clone itself is the scenarios folder. ``settings.remotes.maxDepth`` bounds the nesting
(default 1: a remote's config may not list remotes) and a cycle is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from axis_eval._util import git
from axis_eval.config._problems import problems_from
from axis_eval.config.files import read_data_file
from axis_eval.config.git_sources import (
    GitSource,
    ResolvedRemote,
    parse_git_url,
    remote_cache_dir,
)
from axis_eval.config.models import Config
from axis_eval.config.remote_deps import install_dependencies
from axis_eval.errors import ConfigError

__all__ = ["RemoteFetch", "expand_remotes", "remote_source"]

_MERGED = ("scenarios", "env", "mcp_servers", "skills", "artifacts", "adapters")
_PATH_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts")


@dataclass(frozen=True)
class RemoteFetch:
    """How remote sources are brought here."""

    offline: bool = False
    """Use the cache as it is; never contact a remote (a missing cache is an error)."""
    scratch: Path | None = None
    """Clone here instead of the config's ``.axis/remotes`` (a dry run writes nothing
    beside the config); unused when ``offline``."""
    say: Callable[[str], None] | None = None
    """Gets ``Cloning remote scenarios: <url>`` / ``Pulling remote scenarios: <url>``
    before git runs, and a warning naming each symlink deleted from a clone because it led
    out of it."""


def remote_source(entry: Any) -> GitSource | None:
    """A ``scenarios`` entry as a git source (``URL``, ``URL#REF``, ``{url, ref}``); None
    for a local path or an inline scenario.

    Raises:
        ValueError: a git URL that cannot be used.
    """
    if isinstance(entry, str):
        return parse_git_url(entry)
    if isinstance(entry, dict) and "url" in entry and isinstance(entry["url"], str):
        source = parse_git_url(entry["url"])
        ref = entry.get("ref")
        if source is None or not isinstance(ref, str) or not ref.strip():
            return source
        if source.ref is not None:
            raise ValueError("a ref after '#' or in `ref`, not both")
        return GitSource(source.url, source.host, source.port, source.owner, source.repo, ref)
    return None


@dataclass
class _Part:
    """What one remote (with the remotes its config lists) contributes."""

    scenarios: list[Any] = field(default_factory=list)
    env: list[str] = field(default_factory=list)
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    skills: list[str] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    adapters: dict[str, Any] = field(default_factory=dict)


@dataclass
class _State:
    fetch: RemoteFetch
    root: Path
    max_depth: int
    config_names: tuple[str, ...]
    file: str
    checkouts: dict[str, git.Checkout] = field(default_factory=dict)
    records: list[ResolvedRemote] = field(default_factory=list)


def expand_remotes(
    raw: dict[str, Any],
    config: Config,
    file: Path,
    fetch: RemoteFetch,
    config_names: tuple[str, ...],
) -> tuple[dict[str, Any], list[ResolvedRemote]]:
    """``raw`` with every remote source replaced by what it contributes, and the remotes
    as used (URL, ref, commit).

    Raises:
        ConfigError: a remote cannot be fetched (the message names the URL and says why),
            its config is invalid, the nesting is deeper than ``settings.remotes.maxDepth``
            or cyclic.
    """
    remotes = config.settings.remotes
    root = fetch.scratch or file.parent / ".axis" / "remotes"
    state = _State(fetch, root, remotes.max_depth if remotes else 1, config_names, str(file))
    own = _Part()
    parts: list[_Part] = []
    for entry in _as_list(raw.get("scenarios", ["./scenarios"])):
        source = _source(entry, state.file)
        if source is None:
            own.scenarios.append(entry)
            continue
        part = _visit(source, state, depth=1, chain=(), listed_by=None)
        own.scenarios.extend(part.scenarios)
        parts.append(part)
    out = dict(raw)
    out["scenarios"] = _unique(own.scenarios)
    out["env"] = _union(_as_list(raw.get("env", [])), *(p.env for p in parts))
    out["skills"] = _union(list(raw.get("skills") or []), *(p.skills for p in parts))
    out["artifacts"] = _union(list(raw.get("artifacts") or []), *(p.artifacts for p in parts))
    out["mcp_servers"] = _keyed(dict(raw.get("mcp_servers") or {}), [p.mcp_servers for p in parts])
    out["adapters"] = _keyed(dict(raw.get("adapters") or {}), [p.adapters for p in parts])
    return out, state.records


def _source(entry: Any, file: str) -> GitSource | None:
    try:
        return remote_source(entry)
    except ValueError as exc:
        raise ConfigError(f"scenarios entry {entry!r}: expected {exc}", file=file) from exc


def _visit(
    source: GitSource, state: _State, *, depth: int, chain: tuple[str, ...], listed_by: str | None
) -> _Part:
    if source.key in chain:
        raise ConfigError(f"Cyclic remote scenario reference detected: {source.url}")
    if depth > state.max_depth:
        raise ConfigError(
            f"remote scenario source {source.url} (listed by {listed_by}) is nested "
            f"{depth} deep, more than settings.remotes.maxDepth ({state.max_depth})",
            hint=f"raise settings.remotes.maxDepth in {state.file} to {depth} to allow it",
        )
    checkout = _checkout(source, state, listed_by)
    clone = checkout.path
    part = _Part()
    found = next((clone / n for n in state.config_names if (clone / n).is_file()), None)
    if found is None:
        part.scenarios.append(str(clone))
        return part
    remote_raw = _remote_config(found)
    nested: list[_Part] = []
    for entry in _as_list(remote_raw.get("scenarios", ["./scenarios"])):
        inner = _source(entry, str(found))
        if inner is not None:
            sub = _visit(
                inner, state, depth=depth + 1, chain=(*chain, source.key), listed_by=source.url
            )
            part.scenarios.extend(sub.scenarios)
            nested.append(sub)
        elif isinstance(entry, str):
            part.scenarios.append(_inside(clone, entry, found))
        else:
            part.scenarios.append(entry)
    part.env = _union(_as_list(remote_raw.get("env", [])), *(n.env for n in nested))
    skills = [_absolute_skill(clone, s, found) for s in remote_raw.get("skills") or []]
    part.skills = _union(skills, *(n.skills for n in nested))
    part.artifacts = _union(list(remote_raw.get("artifacts") or []), *(n.artifacts for n in nested))
    part.mcp_servers = _keyed(
        dict(remote_raw.get("mcp_servers") or {}), [n.mcp_servers for n in nested]
    )
    adapters = {
        k: _absolute_adapter(clone, v, found) for k, v in (remote_raw.get("adapters") or {}).items()
    }
    part.adapters = _keyed(adapters, [n.adapters for n in nested])
    return part


def _checkout(source: GitSource, state: _State, listed_by: str | None) -> git.Checkout:
    done = state.checkouts.get(source.key)
    if done is not None:
        if done.ref != source.ref:
            raise ConfigError(
                f"remote scenario source {source.url} is listed at two refs "
                f"({done.ref or 'default branch'} and {source.ref or 'default branch'})",
                file=state.file,
                hint="list each repository once, at one ref",
            )
        return done
    offline = state.fetch.offline
    root = state.root if not offline else Path(state.file).parent / ".axis" / "remotes"
    dest = remote_cache_dir(root, source)
    say = state.fetch.say
    if say is not None and not offline:
        verb = "Pulling" if git.is_checkout(dest) else "Cloning"
        say(f"{verb} remote scenarios: {source.url}")
    try:
        done = git.checkout(source.url, dest, ref=source.ref, offline=offline)
    except git.GitError as exc:
        raise ConfigError(f"remote scenario source {exc.message}", hint=exc.hint) from exc
    except OSError as exc:
        raise ConfigError(
            f"remote scenario source {source.url}: cannot write its clone {dest}: "
            f"{exc.strerror or exc}"
        ) from exc
    if say is not None and done.dropped:
        say(f"warning: {git.dropped_message(source.url, done.dropped)}")
    if not offline:  # offline, the cache is used as it is
        install_dependencies(done.path, source.url, say)
    state.checkouts[source.key] = done
    state.records.append(
        ResolvedRemote(
            url=source.url,
            ref=source.ref,
            commit=done.commit,
            path=str(dest),
            listed_by=listed_by,
        )
    )
    return done


def _remote_config(found: Path) -> dict[str, Any]:
    """The parts of a remote's config that count, validated (the file named on errors)."""
    raw = read_data_file(found, kind="config")
    if not isinstance(raw, dict):
        raise ConfigError(
            "invalid remote config: expected an object at the top level", file=str(found)
        )
    picked = {k: raw[k] for k in _MERGED if k in raw}
    try:  # validated as a config would be; its agents are not ours to use
        Config.model_validate({**picked, "agents": ["remote"]})
    except ValidationError as exc:
        raise ConfigError(f"invalid remote config {found}", problems=problems_from(exc)) from exc
    return picked


def _inside(clone: Path, entry: str, found: Path, what: str = "scenarios entry") -> str:
    """``entry`` (relative to ``clone``) as an absolute path that stays inside it.

    Raises:
        ConfigError: an absolute path, or one that leaves the clone (``..``, a symlink).
    """
    path = (clone / entry).resolve()
    top = clone.resolve()
    if (
        Path(entry).is_absolute()
        or not path.is_relative_to(top)
        or path.is_relative_to(top / ".git")
    ):
        raise ConfigError(
            f"{what} {entry!r} leaves the remote repository ({clone}): a remote's paths "
            "must stay inside its clone",
            file=str(found),
        )
    return str(path)


def _absolute_skill(clone: Path, source: Any, found: Path) -> Any:
    if isinstance(source, str) and source.strip().startswith(("./", "../", "/")):
        return _inside(clone, source.strip(), found, "skills entry")
    return source


def _absolute_adapter(clone: Path, ref: Any, found: Path) -> Any:
    if not isinstance(ref, str):
        return ref
    text = ref.strip()
    module, colon, attr = text.rpartition(":") if ":" in text else (text, "", "")
    path_like = module.startswith(("./", "../", "/")) or module.endswith(_PATH_SUFFIXES)
    if path_like:
        path = _inside(clone, module, found, "adapters entry")
        return path + (f":{attr}" if colon else "")
    return ref


def _as_list(value: Any) -> list[Any]:
    return [value] if isinstance(value, str) else list(value or [])


def _union(first: list[Any], *rest: list[Any]) -> list[Any]:
    out: list[Any] = []
    for items in (first, *rest):
        for item in items:
            if item not in out:
                out.append(item)
    return out


def _unique(sources: list[Any]) -> list[Any]:
    """Each path once (a repository listed twice contributes once)."""
    out: list[Any] = []
    for item in sources:
        if not (isinstance(item, str) and item in out):
            out.append(item)
    return out


def _keyed(own: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Later parts over earlier ones, ``own`` over all."""
    out: dict[str, Any] = {}
    for part in parts:
        out.update(part)
    out.update(own)
    return out
