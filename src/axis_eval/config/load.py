"""Find, parse and validate a config: discovery, profiles, errors and unknown-key warnings."""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from axis_eval.config._problems import did_you_mean, problems_from, unknown_keys
from axis_eval.config._reading import check_regular, is_dir, lexists, shown
from axis_eval.config.files import read_data_file
from axis_eval.config.git_sources import ResolvedRemote
from axis_eval.config.models import Config, LoadedConfig
from axis_eval.config.remotes import RemoteFetch, expand_remotes, remote_source
from axis_eval.errors import ConfigError, FieldProblem

CONFIG_NAMES = (
    "axis.config.json",
    "axis.config.yaml",
    "axis.config.yml",
    "axis.config.toml",
    "axis.config.js",
    "axis.config.mjs",
    "axis.config.ts",
    "axis.config.mts",
    "axis.config.cts",
)
"""Probed in this order; the first found wins (a warning names the others)."""

REMOTE_PATTERN = re.compile(r"^(https?|git|ssh)://|^git@[^:]+:")
"""A ``scenarios`` entry naming a git repository (config/remotes.py), or scp-style (refused)."""
_SCP = re.compile(r"^git@[^:]+:")


def find_config(explicit: str | None = None, cwd: str | None = None) -> Path:
    """The config file: ``explicit`` when given, else the first ``axis.config.*`` in ``cwd``.

    Anything by a config's name counts as found, so a FIFO, a folder, a broken symlink or a
    symlink loop named ``axis.config.json`` is an error naming it, never "no config".

    Raises:
        ConfigError: no config, or the one found is not a readable regular file.
    """
    base = Path(cwd or Path.cwd())
    if explicit:
        path = Path(os.path.abspath(base / explicit))
        if is_dir(path):
            return find_config(None, str(path))
        if not lexists(path):
            raise ConfigError(f"config file not found: {shown(path)}")
        return _usable(path)
    for name in CONFIG_NAMES:
        if lexists(base / name):
            return _usable(base / name)
    raise ConfigError(
        f"no axis.config.* found in {shown(base.resolve())}",
        hint="create one with `axis init`, or pass -c PATH",
    )


def _usable(path: Path) -> Path:
    """``path`` resolved, if it is a regular file."""
    check_regular(path, "config")
    return path.resolve()


def _others(path: Path) -> list[str]:
    return [name for name in CONFIG_NAMES if name != path.name and lexists(path.parent / name)]


def deep_merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """Objects merge key by key; lists and scalars in ``overlay`` replace."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def apply_profile(raw: dict[str, Any], profile: str | None, file: str) -> dict[str, Any]:
    """Merge the named profile over the config; include/exclude are replaced as a pair."""
    if profile is None:
        return raw
    profiles = raw.get("profiles") or {}
    if not isinstance(profiles, dict) or profile not in profiles:
        names = sorted(str(p) for p in profiles) if isinstance(profiles, dict) else []
        known = ", ".join(names) or "none"
        raise ConfigError(
            f"unknown profile {profile!r}{did_you_mean(profile, names)} in {file}",
            hint=f"profiles defined: {known}",
        )
    overlay = profiles[profile]
    if not isinstance(overlay, dict):
        raise ConfigError(
            "invalid profile",
            file=file,
            problems=[FieldProblem(f"profiles.{profile}", "an object", type(overlay).__name__)],
        )
    merged = deep_merge(raw, {k: v for k, v in overlay.items() if k != "profiles"})
    if "include" in overlay or "exclude" in overlay:
        merged.pop("include", None)
        merged.pop("exclude", None)
        for key in ("include", "exclude"):
            if key in overlay:
                merged[key] = copy.deepcopy(overlay[key])
    return merged


def validate_config(raw: Any, file: str) -> Config:
    """Validate raw data as a :class:`Config`, raising a :class:`ConfigError` on problems."""
    if not isinstance(raw, dict):
        raise ConfigError(
            "invalid config",
            file=file,
            problems=[FieldProblem("", "an object at the top level", type(raw).__name__)],
        )
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"invalid config {file}", problems=problems_from(exc)) from exc
    scp = [s for s in config.scenarios if isinstance(s, str) and _SCP.match(s.strip())]
    if scp:
        raise ConfigError(
            f"scp-style git URLs are not supported: {scp[0]} ({file})",
            hint="write it as ssh://git@host/owner/repo",
        )
    return config


def load_config(
    path: str | None = None,
    *,
    profile: str | None = None,
    cwd: str | None = None,
    overrides: dict[str, Any] | None = None,
    offline: bool = False,
    remotes_dir: str | Path | None = None,
    say: Callable[[str], None] | None = None,
) -> LoadedConfig:
    """Find, parse, merge the profile and ``overrides``, and validate a config.

    Args:
        path: a config file or a directory holding one; default: probe ``cwd``.
        profile: a name from the config's ``profiles``.
        cwd: where to look when ``path`` is not given (default: the current directory).
        overrides: raw values deep-merged last (the CLI's flags), so a bad flag and a bad
            file fail the same way.
        offline: remote scenario sources (git URLs in ``scenarios``) come from their
            cache in ``.axis/remotes`` beside the config, never fetched; a source not in
            the cache is an error. Default: cloned there, or pulled.
        remotes_dir: clone remote scenario sources here instead of ``.axis/remotes`` (a
            dry run's temporary folder: it writes nothing beside the config).
        say: gets ``Cloning remote scenarios: <url>`` (``Pulling …``) before git runs,
            and warnings about the clones (symlinks deleted because they led out).

    Raises:
        ConfigError: the file is missing, unreadable, or invalid; a remote source cannot
            be fetched (the message names its URL).
    """
    file = find_config(path, cwd)
    raw = read_data_file(file, kind="config", profile=profile)
    if not isinstance(raw, dict):
        raise ConfigError(
            "invalid config",
            file=str(file),
            problems=[FieldProblem("", "an object at the top level", type(raw).__name__)],
        )
    merged = apply_profile(raw, profile, str(file))
    if overrides:
        merged = deep_merge(merged, overrides)
    config = validate_config(merged, str(file))
    fetched: list[ResolvedRemote] = []
    if _raw_sources(merged, file):
        fetch = RemoteFetch(offline, Path(remotes_dir) if remotes_dir else None, say)
        merged, fetched = expand_remotes(merged, config, file, fetch, CONFIG_NAMES)
        config = validate_config(merged, str(file))
    warnings = [f"{file.name}: {w}" for w in unknown_keys(config)]
    for name, overlay in config.profiles.items():
        if isinstance(overlay, dict) and name != profile:
            extra = set(overlay) - _top_level_names()
            warnings.extend(
                f"{file.name}: unknown key 'profiles.{name}.{k}'" for k in sorted(extra)
            )
    others = _others(file)
    probed = path is None or (Path(cwd or Path.cwd()) / path).is_dir()
    if others and probed:
        warnings.append(f"using {file.name}; also found {', '.join(others)} (ignored)")
    return LoadedConfig(
        config=config,
        path=str(file),
        config_dir=str(file.parent),
        profile=profile,
        warnings=warnings,
        remotes=fetched,
    )


def _raw_sources(raw: dict[str, Any], file: Path) -> list[Any]:
    """The ``scenarios`` entries of ``raw`` that are git repositories."""
    sources = raw.get("scenarios", [])
    try:
        return [s for s in ([sources] if isinstance(sources, str) else sources) if remote_source(s)]
    except ValueError as exc:
        raise ConfigError(f"invalid scenarios entry: expected {exc}", file=str(file)) from exc


def _top_level_names() -> set[str]:
    return {f.alias or n for n, f in Config.model_fields.items()}
