"""Find scenarios: walk sources, derive keys, expand variants, collect load failures."""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from axis_eval.config._problems import problems_from, unknown_keys
from axis_eval.config._reading import is_dir, lexists, shown
from axis_eval.config._text import text_problem
from axis_eval.config.files import DATA_SUFFIXES, MODULE_SUFFIXES, read_data_file
from axis_eval.config.models import Config
from axis_eval.config.scenario import Scenario, ScenarioInput, expand
from axis_eval.errors import ConfigError

SKIPPED_DIRS = frozenset({"node_modules", "fixtures", "scenario-fixtures"})
"""Folders never walked (besides dot folders): dependencies and staged fixture files."""

MARKER_FIELDS = ("prompt", "judge", "rubric")
SCENARIO_ONLY_FIELDS = ("setup", "teardown", "variants", "criteria")
"""Fields that make a file look like a scenario even without prompt and judge."""


class LoadFailure(BaseModel):
    """A file that looks like a scenario but could not be loaded."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str
    """Path relative to the config directory."""
    key: str | None = None
    error: str


@dataclass
class Discovery:
    """Every runnable scenario (variants expanded), sorted by key, plus what went wrong."""

    scenarios: list[Scenario] = field(default_factory=list)
    load_failures: list[LoadFailure] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def discover(config: Config, config_dir: str) -> Discovery:
    """Walk every source of ``config`` and load the scenarios in it.

    Raises:
        ConfigError: a source path does not exist, or two scenarios share a key.
    """
    found = Discovery()
    base = Path(config_dir)
    for index, source in enumerate(config.scenarios):
        if isinstance(source, ScenarioInput):
            _add_inline(found, source, index)
            continue
        path = _resolved(base / source)
        if is_dir(path):
            _walk(found, path, base)
        elif lexists(path):  # a file, or a FIFO, device or loop: reading it says which
            _load_file(found, path, path.stem, base, explicit=True)
        else:
            raise ConfigError(
                f"scenarios source not found: {path}",
                hint=f"`scenarios` entry {index} ({source!r}) must be a folder or a file "
                "relative to the config file",
            )
    _check_unique(found.scenarios)
    found.scenarios.sort(key=lambda s: s.key)
    return found


def _resolved(path: Path) -> Path:
    """``path`` resolved, or as given when it cannot be (a symlink loop, an invalid name):
    reading it then reports why."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return path


def _add_inline(found: Discovery, source: ScenarioInput, index: int) -> None:
    if not source.key:
        raise ConfigError(
            f"inline scenario scenarios[{index}] needs a `key`",
            hint="inline scenarios have no file to derive a key from",
        )
    found.warnings.extend(f"scenarios[{index}]: {w}" for w in unknown_keys(source))
    found.scenarios.extend(expand(source, source.key, None))


def _walk(found: Discovery, root: Path, base: Path) -> None:
    # Names as strings until a file is read: four Path operations a scenario were a
    # measurable share of planning a large suite.
    top = os.fspath(root)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS)
        folder = dirpath[len(top) :].strip("/")  # os.walk joins onto ``top`` as given
        for name in sorted(filenames):
            stem, suffix = _split_suffix(name)
            if (low := suffix.lower()) not in DATA_SUFFIXES and low not in MODULE_SUFFIXES:
                continue
            if name.lower().endswith((".d.ts", ".d.mts", ".d.cts")):
                continue  # type declarations: no default export, never a scenario
            key = f"{folder}/{stem}" if folder else stem
            _load_file(found, Path(dirpath, name), key, base, explicit=False)


def _split_suffix(name: str) -> tuple[str, str]:
    """``name`` without its last suffix, and that suffix, as ``PurePath.stem`` and
    ``.suffix`` read them (a dot first or last starts no suffix)."""
    dot = name.rfind(".")
    if 0 < dot < len(name) - 1:
        return name[:dot], name[dot:]
    return name, ""


def _rel(path: Path, base: Path) -> str:
    text, top = os.fspath(path), os.fspath(base).rstrip("/")
    if text.startswith(top + "/"):  # the common case: no relative_to (and its parsing)
        return text[len(top) + 1 :]
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)


def _load_file(found: Discovery, path: Path, key: str, base: Path, *, explicit: bool) -> None:
    rel = _rel(path, base)
    if not (_is_utf8(rel) and _is_utf8(key)):
        # The key names the scenario in every report file (JSON, HTML, JUnit: all UTF-8),
        # so a name that is not UTF-8 is refused here, not when a report is written.
        found.load_failures.append(
            LoadFailure(
                path=shown(rel),
                error="the file name is not valid UTF-8: rename the file (a scenario's key "
                "is its path, and reports are UTF-8)",
            )
        )
        return
    try:
        raw = read_data_file(path, kind="scenario")
    except ConfigError as exc:
        found.load_failures.append(LoadFailure(path=rel, key=key, error=exc.message))
        return
    if not _looks_like_scenario(raw):
        if explicit:
            found.load_failures.append(
                LoadFailure(path=rel, key=key, error="not a scenario: no `prompt` or `judge`")
            )
        return
    try:
        scenario = ScenarioInput.model_validate(raw)
    except ValidationError as exc:
        detail = "; ".join(p.render() for p in problems_from(exc))
        found.load_failures.append(LoadFailure(path=rel, key=key, error=detail))
        return
    if scenario.key is not None and scenario.key != key:
        found.load_failures.append(
            LoadFailure(
                path=rel,
                key=key,
                error=f"declared key {scenario.key!r} does not match path-derived key {key!r}",
            )
        )
        return
    found.warnings.extend(f"{rel}: {w}" for w in unknown_keys(scenario))
    found.scenarios.extend(expand(scenario, key, str(path)))


def _is_utf8(text: str) -> bool:
    """os.walk decodes a non-UTF-8 byte to a lone surrogate, which the text rule refuses."""
    return text_problem(text) is None


def _looks_like_scenario(raw: Any) -> bool:
    if not isinstance(raw, dict):
        return False
    return any(k in raw for k in MARKER_FIELDS) or any(k in raw for k in SCENARIO_ONLY_FIELDS)


def _check_unique(scenarios: list[Scenario]) -> None:
    seen: dict[str, Scenario] = {}
    for scenario in scenarios:
        if scenario.key in seen:
            first = seen[scenario.key].source or "an inline scenario"
            second = scenario.source or "an inline scenario"
            raise ConfigError(
                f"duplicate scenario key {scenario.key!r} ({first} and {second})",
                hint="variant names must not collide with other scenarios' keys",
            )
        seen[scenario.key] = scenario
