"""Turn a registry entry into a runnable adapter: import Python adapter code, or build one.

Custom adapters come from a ``.py`` file (attribute after ``:``, else ``adapter``, else the
one :class:`AgentAdapter` the file defines), from ``module:attribute`` on ``sys.path``, from
a declarative ``{command, args, output}`` entry, or from a JavaScript/TypeScript module built
with AXIS's ``createAgentAdapter``/``createAcpBasedAdapter`` (hosted in Node). Loading runs
user code, so it happens only when a job needs the adapter, never while planning.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
import secrets
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from axis_eval.adapters.base import AdapterConfigError, AgentAdapter
from axis_eval.adapters.builtins import BuiltinAgent
from axis_eval.adapters.declarative import declarative_adapter
from axis_eval.adapters.registry import CustomAdapterRef
from axis_eval.errors import EXIT_USAGE, AxisError, PreflightError

__all__ = ["AdapterLoadError", "load_adapter", "load_builtin"]

_HINT = "define `adapter = create_agent_adapter(...)` (from axis_eval.adapters) at module level"


class AdapterLoadError(AxisError):
    """A custom adapter could not be imported, or its module holds no usable adapter."""

    exit_code = EXIT_USAGE


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def load_adapter(
    ref: BuiltinAgent | CustomAdapterRef, *, require_binary: bool = True
) -> AgentAdapter[Any]:
    """The adapter a registry entry names, renamed to its config key.

    ``require_binary=False`` (every agent entry using a built-in sets ``command``) skips the
    check that the built-in's CLI is installed.

    Raises:
        AdapterLoadError: the code fails to import, holds no (or several) adapters, or the
            declarative entry is inconsistent; a built-in's CLI is not installed (the hint
            gives the install command); or ``ref`` is a built-in not available yet.
    """
    if isinstance(ref, BuiltinAgent):
        return load_builtin(ref, require_binary=require_binary)
    if ref.declarative is not None:
        try:
            return declarative_adapter(ref.name, ref.declarative)
        except AdapterConfigError as exc:
            raise AdapterLoadError(exc.message, hint=exc.hint) from exc
    if ref.node_module is not None:
        from axis_eval.adapters.node_adapter import NodeLoadError, load_node_adapter

        try:
            return load_node_adapter(ref.name, ref.node_module)
        except NodeLoadError as exc:
            raise AdapterLoadError(exc.message, hint=exc.hint) from exc
    if ref.python_file is not None:
        module, where = _import_file(ref.name, ref.python_file), ref.python_file
    elif ref.module is not None:
        module, where = _import_module(ref.name, ref.module), ref.module
    else:
        raise AdapterLoadError(f"adapter {ref.name!r} names no file, module or declarative form")
    adapter = _pick(ref.name, module, ref.attribute, where)
    return adapter if adapter.name == ref.name else dataclasses.replace(adapter, name=ref.name)


_NATIVE_MODULES = {
    "claude-stream-json": "axis_eval.adapters.claude_code",
    "codex-json": "axis_eval.adapters.codex",
    "gemini-stream-json": "axis_eval.adapters.gemini",
}


def load_builtin(ref: BuiltinAgent, *, require_binary: bool = True) -> AgentAdapter[Any]:
    """The adapter of a built-in agent: a native CLI adapter, or the generic ACP one.

    Raises:
        AdapterLoadError: the CLI is not installed, or the built-in is not available yet.
    """
    try:
        if ref.protocol in _NATIVE_MODULES:
            module = importlib.import_module(_NATIVE_MODULES[ref.protocol])
            adapter: AgentAdapter[Any] = module.NATIVE.adapter(ref, require_binary=require_binary)
            return adapter
        if ref.protocol == "acp":
            try:
                acp = importlib.import_module("axis_eval.adapters.acp")
            except ModuleNotFoundError as exc:
                if exc.name != "axis_eval.adapters.acp":
                    raise
                raise AdapterLoadError(
                    f"the ACP built-in agent {ref.name!r} is not available yet"
                ) from exc
            return cast(
                AgentAdapter[Any], acp.builtin_acp_adapter(ref, require_binary=require_binary)
            )
    except PreflightError as exc:
        raise AdapterLoadError(exc.message, hint=exc.hint) from exc
    raise AdapterLoadError(f"the built-in agent {ref.name!r} is not available in this version yet")


def _import_file(name: str, path: str) -> ModuleType:
    """Import a ``.py`` file under a unique module name; its folder is importable meanwhile."""
    stem = re.sub(r"\W", "_", Path(path).stem)
    module_name = f"axis_eval_custom_adapter_{stem}_{secrets.token_hex(4)}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise AdapterLoadError(f"adapter {name!r}: cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    folder = str(Path(path).parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(module_name, None)
        raise AdapterLoadError(
            f"adapter {name!r}: importing {path} failed: {_first_line(exc)}"
        ) from exc
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
    return module


def _import_module(name: str, module_name: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:
        hint = None
        if isinstance(exc, ModuleNotFoundError):
            hint = "install the package, or put its folder on PYTHONPATH"
        raise AdapterLoadError(
            f"adapter {name!r}: cannot import module {module_name!r}: {_first_line(exc)}",
            hint=hint,
        ) from exc


def _adapters_in(module: ModuleType) -> dict[str, AgentAdapter[Any]]:
    """Module-level AgentAdapter instances by name, each object once."""
    found: dict[str, AgentAdapter[Any]] = {}
    for key, value in vars(module).items():
        if isinstance(value, AgentAdapter) and not any(v is value for v in found.values()):
            found[key] = value
    return found


def _checked(name: str, value: object, where: str) -> AgentAdapter[Any]:
    if not isinstance(value, AgentAdapter):
        raise AdapterLoadError(
            f"adapter {name!r}: {where} is a {type(value).__name__}, not an AgentAdapter",
            hint=_HINT,
        )
    return value


def _pick(name: str, module: ModuleType, attribute: str | None, where: str) -> AgentAdapter[Any]:
    found = _adapters_in(module)
    if attribute is not None:
        if not hasattr(module, attribute):
            listed = f"; it defines {', '.join(found)}" if found else ""
            raise AdapterLoadError(
                f"adapter {name!r}: {where} has no attribute {attribute!r}{listed}", hint=_HINT
            )
        return _checked(name, getattr(module, attribute), f"{where}:{attribute}")
    if "adapter" in vars(module):
        return _checked(name, vars(module)["adapter"], f"`adapter` in {where}")
    if len(found) == 1:
        return next(iter(found.values()))
    if not found:
        raise AdapterLoadError(f"adapter {name!r}: {where} defines no AgentAdapter", hint=_HINT)
    raise AdapterLoadError(
        f"adapter {name!r}: {where} defines several AgentAdapters ({', '.join(found)})",
        hint=f"name the one to use `adapter`, or write {where}:<name> in the config",
    )
