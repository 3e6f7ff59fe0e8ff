"""One registry of agent names: the built-ins plus the config's ``adapters``.

Resolving a name here only says *which* adapter a name means; loading Python adapter code
happens when a job needs it, so planning and dry runs stay fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from axis_eval.adapters.builtins import BUILTINS, BuiltinAgent
from axis_eval.config.models import Config, DeclarativeAdapter
from axis_eval.errors import ConfigError

_MODULE_ATTR = re.compile(r"^(?P<module>[A-Za-z_][\w.]*):(?P<attr>[A-Za-z_]\w*)$")
_PY_FILE = re.compile(r"^(?P<file>.+\.py)(?::(?P<attr>[A-Za-z_]\w*))?$")
"""The two ways to name Python adapter code: ``module:attribute`` and ``file.py[:attribute]``."""
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts")
"""AXIS's own adapter modules, hosted in Node (:mod:`axis_eval.adapters.node_adapter`)."""


@dataclass(frozen=True)
class CustomAdapterRef:
    """A custom adapter from the config: a Python file, a ``module:attr``, a JavaScript or
    TypeScript module, or declarative."""

    name: str
    python_file: str | None = None
    """Absolute path of a ``.py`` file."""
    module: str | None = None
    attribute: str | None = None
    declarative: DeclarativeAdapter | None = None
    node_module: str | None = None
    """Absolute path of a JavaScript/TypeScript module (AXIS's ``createAgentAdapter``)."""


AdapterRef = BuiltinAgent | CustomAdapterRef


def known_names(config: Config) -> list[str]:
    """Every agent name a config can use, sorted."""
    return sorted(set(BUILTINS) | set(config.adapters))


def resolve_custom(config: Config, config_dir: str, file: str) -> dict[str, CustomAdapterRef]:
    """Check every entry of ``adapters`` and say what each one is.

    Raises:
        ConfigError: a missing file, or a malformed reference.
    """
    out: dict[str, CustomAdapterRef] = {}
    for name, ref in config.adapters.items():
        where = f"adapters.{name}"
        if isinstance(ref, DeclarativeAdapter):
            out[name] = CustomAdapterRef(name=name, declarative=ref)
            continue
        text = ref.strip()
        if Path(text).suffix.lower() in JS_SUFFIXES:
            path = (Path(config_dir) / text).resolve()
            if not path.is_file():
                raise ConfigError(f"{where}: adapter file not found: {path} ({file})")
            out[name] = CustomAdapterRef(name=name, node_module=str(path))
            continue
        found = python_ref(name, text, config_dir)
        if found is None:
            raise ConfigError(
                f"{where}: expected a .py file, a module:attribute, or a declarative object; "
                f"found {text!r} ({file})"
            )
        if found.python_file is not None and not Path(found.python_file).is_file():
            raise ConfigError(f"{where}: adapter file not found: {found.python_file} ({file})")
        out[name] = found
    return out


def python_ref(name: str, text: str, base_dir: str) -> CustomAdapterRef | None:
    """The Python adapter ``text`` names (``file.py[:attribute]``, relative to ``base_dir``,
    or ``module:attribute``), or None when it is neither. The one rule for such names: the
    config's ``adapters`` and the task runner's goal agent both read them here."""
    found = _PY_FILE.match(text)
    if found:
        path = (Path(base_dir) / found["file"]).resolve()
        return CustomAdapterRef(name=name, python_file=str(path), attribute=found["attr"])
    found = _MODULE_ATTR.match(text)
    if found:
        return CustomAdapterRef(name=name, module=found["module"], attribute=found["attr"])
    return None


def resolve(
    name: str,
    config: Config,
    custom: dict[str, CustomAdapterRef],
    *,
    where: str = "agents",
    file: str | None = None,
) -> AdapterRef:
    """The adapter a name means; a config's ``adapters`` entry overrides a built-in.

    Raises:
        ConfigError: the name is unknown; the message lists every known name.
    """
    if name in custom:
        return custom[name]
    if name in BUILTINS:
        return BUILTINS[name]
    from axis_eval.config._problems import did_you_mean

    raise ConfigError(
        f"{where}: unknown agent {name!r}{did_you_mean(name, known_names(config))}"
        + (f" ({file})" if file else ""),
        hint=f"known agents: {', '.join(known_names(config))}; register your own in "
        "the config's `adapters`",
    )
