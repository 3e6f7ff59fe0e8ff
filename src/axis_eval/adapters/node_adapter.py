"""AXIS custom adapters written in JavaScript or TypeScript, run unchanged.

A module that builds its adapter with ``createAgentAdapter`` or ``createAcpBasedAdapter``
from ``@netlify/axis`` (default export, or a named ``adapter`` export) is imported by our
Node host (:mod:`._node_host`), where ``@netlify/axis`` resolves to our own implementation
of the two factories; no npm package is needed. axis-eval still starts, sandboxes, limits
and stops the agent process itself, exactly as for a Python adapter; Node only runs the
adapter's callbacks:

- one *service* host per loaded adapter answers the per-job questions that need no stream
  state (``isolationEnv``, ``resolveCommand``/``cliCommand``, ``buildArgs``, ``prepare``,
  ``extractUsage``);
- one host per job (:mod:`._node_reader`) holds ``initialState()`` and runs ``onLine`` /
  ``onChunk``, ``onEnd`` and ``getResult``; it is stopped with the job.

An ACP-based adapter becomes an :class:`~axis_eval.adapters.acp.AcpAdapter`: our ACP
client speaks the protocol, Node supplies command, arguments, environment and usage.

The spec's ``timeoutMs`` is not used: the scenario's time limit (``limits``) governs the
agent, as in AXIS, where the scenario's limit always takes precedence over the spec's.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from pathlib import Path
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval.adapters._node_entries import usage_from
from axis_eval.adapters._node_host import HostError, NodeHost, node_argv
from axis_eval.adapters._node_reader import NodeAgentAdapter
from axis_eval.adapters.acp import AcpAdapter, create_acp_adapter
from axis_eval.adapters.base import (
    AdapterConfigError,
    AdapterInput,
    AdapterResult,
    AgentAdapter,
    AggregateMode,
    LinesMode,
    ResultContext,
    StreamContext,
)
from axis_eval.adapters.hooks import BlockingHook
from axis_eval.errors import EXIT_USAGE, AxisError, PreflightError

__all__ = ["NodeAgentAdapter", "NodeLoadError", "js_input", "load_node_adapter", "usage_from"]


class NodeLoadError(AxisError):
    """The module could not be imported, or exports no adapter we can host (exit 2)."""

    exit_code = EXIT_USAGE


class JavaScriptError(Exception):
    """A hosted callback threw (or its host failed); the message is the JavaScript error."""


class _Service:
    """The adapter's service host, started again after it died (a hung callback).

    Its callbacks are :class:`~axis_eval.adapters.hooks.BlockingHook` objects: jobs call
    them in threads (the host answers one at a time, in the order they come)."""

    def __init__(self, argv: list[str], module: str, key: str) -> None:
        self.argv, self.module, self.key = argv, module, key
        self.host: NodeHost | None = None
        self._lock = threading.Lock()

    def get(self) -> NodeHost:
        with self._lock:
            if self.host is None or self.host.dead is not None:
                self.host = NodeHost(self.argv, self.module, self.key)
            return self.host

    def value(self, op: str, where: str, **payload: Any) -> Any:
        """The callback's return value; a throw (or a hang) raises AdapterConfigError."""
        try:
            answer = self.get().call(op, where, **payload)
        except HostError as exc:
            raise AdapterConfigError(f"{self.key}: {exc.message}") from exc
        if not answer.ok:
            raise AdapterConfigError(f"{self.key}: {answer.where or where} threw {answer.error}")
        return answer.value


def js_input(inp: AdapterInput) -> dict[str, Any]:
    """The ``input`` an AXIS adapter's callbacks get, built from ours."""
    agent = inp.agent
    config: dict[str, Any] = {
        "agent": agent.adapter,
        "name": agent.name,
        "flags": dict(agent.flags),
        "skills": list(agent.skills),
    }
    if agent.model is not None:
        config["model"] = agent.model
    if agent.command:
        config["command"] = agent.command[0] if len(agent.command) == 1 else list(agent.command)
    limit = inp.time_limit_s
    return {
        "prompt": inp.prompt,
        "config": config,
        "workspace": inp.workspace,
        "workingDirectory": inp.workspace,
        "home": inp.home,
        "homeDirectory": inp.home,
        "env": dict(inp.env),
        "mcpServers": {
            k: v.model_dump(mode="json", exclude_none=True) for k, v in inp.mcp_servers.items()
        },
        "skills": list(inp.skills),
        "resolvedSkills": list(inp.skills),
        "timeoutMs": int(limit * 1000) if limit > 0 and math.isfinite(limit) else None,
        "endpoint": inp.endpoint,
        "captureRawOutput": True,
        "debug": False,
    }


def _strings(value: Any, what: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise AdapterConfigError(
            f"{key}: {what} must return an array of strings, got {value!r:.200}"
        )
    return value


def _command(value: Any, key: str) -> list[str]:
    """``{command, prefixArgs}`` (AXIS's shape), or an array, or one program name."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict) and isinstance(value.get("command"), str):
        prefix = value.get("prefixArgs") or []
        return [value["command"], *_strings(prefix, "resolveCommand's prefixArgs", key)]
    return _strings(value, "resolveCommand", key)


def _env(value: Any, what: str, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AdapterConfigError(f"{key}: {what} must return an object, got {value!r:.200}")
    return {str(k): str(v) for k, v in value.items() if v is not None}


class _Callbacks:
    """The Python callbacks of an adapter hosted in Node (all through the service host)."""

    def __init__(self, service: _Service, has: dict[str, Any]) -> None:
        self.service = service
        self.has = has
        self.key = service.key
        self.isolation_failed: dict[str, str] = {}
        """home -> why ``isolationEnv`` failed (the job's command line then refuses)."""

    def isolation_env(self, workspace: str, home: str) -> dict[str, str]:
        # Called where an exception would end the harness: a failure is kept and fails
        # the job when its command line is built.
        try:
            got = self.service.value("isolationEnv", "isolationEnv", workspace=workspace, home=home)
            return _env(got, "isolationEnv", self.key)
        except AdapterConfigError as exc:
            self.isolation_failed[home] = exc.message
            return {}

    def resolve_command(self, inp: AdapterInput) -> list[str]:
        return _command(
            self.service.value("command", "resolveCommand", input=js_input(inp)), self.key
        )

    def build_args(self, inp: AdapterInput) -> list[str]:
        failed = self.isolation_failed.pop(inp.home, None)
        if failed is not None:
            raise AdapterConfigError(failed)
        return _strings(
            self.service.value("args", "buildArgs", input=js_input(inp)), "buildArgs", self.key
        )

    def prepare(self, inp: AdapterInput) -> None:
        # The supervisor words it: "<name>: prepare raised JavaScriptError: TypeError: …".
        try:
            env = self.service.value("prepare", "prepare", input=js_input(inp), env=dict(inp.env))
        except AdapterConfigError as exc:
            message = exc.message.removeprefix(f"{self.key}: ").removeprefix("prepare threw ")
            raise JavaScriptError(message) from exc
        inp.env.update(_env(env, "prepare", self.key))

    def extract_usage(self, response: dict[str, Any]) -> TokenUsage | None:
        return usage_from(self.service.value("extractUsage", "extractUsage", response=response))


def _unused_line(value: Any, ctx: StreamContext[Any]) -> None:
    """The per-job Node host reads the output; these Python callbacks are never called."""


def _unused_result(ctx: ResultContext[Any]) -> AdapterResult:
    return AdapterResult(result=None)


def _load_error(key: str, module: str, answer: dict[str, Any]) -> NodeLoadError:
    where = answer.get("where")
    if where == "export":
        return NodeLoadError(
            f'Custom adapter "{key}" at {module} must export a valid AgentAdapter '
            '(as default export or named "adapter" export).',
            hint="export default createAgentAdapter({...}) (from @netlify/axis); see "
            "docs/adapters.md",
        )
    if where == "factory":
        return NodeLoadError(
            f'Custom adapter "{key}" at {module} exports an adapter that was not built with '
            "createAgentAdapter or createAcpBasedAdapter from @netlify/axis; axis-eval can "
            "host only those",
            hint="build it with one of the two factories, or write a Python adapter",
        )
    if where == "import":
        return NodeLoadError(
            f'Custom adapter "{key}" at {module} failed to load: {answer.get("error")}'
        )
    return NodeLoadError(f'Custom adapter "{key}" at {module}: {where} threw {answer.get("error")}')


def load_node_adapter(key: str, module: str) -> AgentAdapter[Any]:
    """Import ``module`` in a Node host and build the adapter it exports.

    Raises:
        NodeLoadError: node is missing, the module fails to import or exports no adapter
            built with the two factories, or its ``requiredEnv`` throws.
    """
    try:
        argv = node_argv(module)
    except FileNotFoundError as exc:
        raise NodeLoadError(
            f'Custom adapter "{key}" at {module} is JavaScript/TypeScript, which needs '
            "Node.js, and node is not on PATH",
            hint="install Node.js (>= 20), or write the adapter in Python",
        ) from exc
    except PreflightError as exc:
        raise NodeLoadError(
            f'Custom adapter "{key}" at {module}: {exc.message}', hint=exc.hint
        ) from exc
    service = _Service(argv, module, key)
    host = service.get()
    try:
        answer = host.loaded()
    except HostError as exc:
        host.close()
        raise NodeLoadError(f'Custom adapter "{key}" at {module}: {exc.message}') from exc
    if not answer.ok or not isinstance(answer.value, dict):
        host.close()
        raise _load_error(key, module, answer.raw)
    return _build(key, module, argv, service, answer.value)


def _build(
    key: str, module: str, argv: list[str], service: _Service, desc: dict[str, Any]
) -> AgentAdapter[Any]:
    has = desc.get("has") if isinstance(desc.get("has"), dict) else {}
    assert isinstance(has, dict)
    calls = _Callbacks(service, has)
    env_names = [n for n in desc.get("requiredEnv") or [] if isinstance(n, str) and n]
    required, optional = ([], env_names) if desc.get("localSession") else (env_names, [])
    # Each is answered by the service host: a BlockingHook, which a job runs off the loop.
    isolation = BlockingHook(calls.isolation_env) if has.get("isolationEnv") else None
    prepare = BlockingHook(calls.prepare) if has.get("prepare") else None
    wants_command = bool(has.get("resolveCommand") or desc.get("cliCommand"))
    resolve = BlockingHook(calls.resolve_command) if wants_command else None
    build_args = BlockingHook(calls.build_args)
    if desc.get("kind") == "acp":
        acp = create_acp_adapter(
            name=key,
            command=["node-hosted"],
            required_env=required,
            optional_env=optional,
            isolation_env=isolation,
            prepare=prepare,
            extract_usage=BlockingHook(calls.extract_usage) if has.get("extractUsage") else None,
            build_args=build_args,
        )
        adapter: AcpAdapter = dataclasses.replace(acp, resolve_command=resolve)
        return adapter
    aggregate = desc.get("mode") == "aggregate"
    stream: LinesMode[Any] | AggregateMode[Any] = (
        AggregateMode(on_chunk=_unused_line) if aggregate else LinesMode(on_line=_unused_line)
    )
    return NodeAgentAdapter(
        name=key,
        build_args=build_args,
        initial_state=dict,
        stream=stream,
        get_result=_unused_result,
        resolve_command=resolve,
        prompt_via="stdin" if desc.get("promptVia") == "stdin" else "argv",
        required_env=tuple(required),
        optional_env=tuple(optional),
        isolation_env=isolation,
        prepare=prepare,
        module=str(Path(module)),
        node_argv=tuple(argv),
        has_on_end=bool(has.get("onEnd")),
    )
