"""Read data files (JSON, YAML, TOML, and JS/TS modules through Node) into plain Python values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from axis_eval._util.node_ts import (
    INSTALL_HINT,
    TS_SUFFIXES,
    TypeScriptUnavailable,
    typescript_node_args,
)
from axis_eval._util.processes import (
    HelperOutputTooLarge,
    HelperStopped,
    HelperTimeout,
    run_helper,
)
from axis_eval.config._limits import (
    LIMITS_HINT,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_NODE_OUTPUT_BYTES,
    NODE_TIMEOUT_S,
    check_value,
    json_within_limits,
)
from axis_eval.config._reading import check_regular, read_text, shown
from axis_eval.errors import ConfigError, Interrupted

DATA_SUFFIXES = (".json", ".yaml", ".yml", ".toml")
JS_SUFFIXES = (".js", ".mjs", ".cjs")
MODULE_SUFFIXES = JS_SUFFIXES + TS_SUFFIXES
"""Evaluated by Node (TypeScript through :mod:`axis_eval._util.node_ts`)."""

_NODE_LOADER = r"""
const { pathToFileURL } = require("node:url");
const [file, profile] = process.argv.slice(1);
import(pathToFileURL(file).href).then(async (mod) => {
  let value = mod.default !== undefined ? mod.default : mod;
  const keys = value && typeof value === "object" ? Object.keys(value) : [];
  if (keys.length === 1 && keys[0] === "default") {
    value = value.default;
  }
  if (typeof value === "function") value = await value({ profile: profile || undefined });
  process.stdout.write(JSON.stringify(value === undefined ? null : value));
}).catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err));
  process.exit(3);
});
"""


def read_data_file(path: Path, *, kind: str, profile: str | None = None) -> Any:
    """Parse ``path`` by its suffix; ``kind`` ("config" or "scenario") words the errors.

    Every format goes through the same bounds (``config/_limits.py``): a regular file of at
    most 1 MiB, nesting, integer length, and the values and text a YAML alias may expand
    to; each is a :class:`ConfigError` naming the file, never a traceback or a hang.
    """
    suffix = path.suffix.lower()
    if suffix in MODULE_SUFFIXES:
        value = _evaluate_js(path, kind, profile)
    elif suffix in (".json", "", ".yaml", ".yml", ".toml"):
        text = read_text(path, kind)
        value = _parse(text, suffix, path, kind)
        if suffix in (".json", "") and json_within_limits(text):
            return value  # nothing in it can pass a limit (see json_within_limits)
    else:
        raise ConfigError(
            f"unsupported {kind} file type {suffix!r}: {shown(path)}",
            hint="use .json, .yaml, .yml, .toml, .js, .mjs or .ts",
        )
    check_value(value, shown(path), kind)
    return value


def _parse(text: str, suffix: str, path: Path, kind: str) -> Any:
    try:
        if suffix in (".json", ""):
            return _parse_json(text, path, kind)
        if suffix in (".yaml", ".yml"):
            return _parse_yaml(text, path, kind)
        return _parse_toml(text, path, kind)
    except RecursionError:  # a parser's own stack, before the nesting limit could see it
        raise ConfigError(
            f"{kind} file {shown(path)} is nested too deeply to parse "
            f"(the limit is {MAX_DEPTH} levels)",
            hint=LIMITS_HINT,
        ) from None


def _too_long_number(path: Path, kind: str, language: str) -> ConfigError:
    return ConfigError(
        f"invalid {language} in {kind} file {shown(path)}: an integer of more than "
        f"{MAX_INT_DIGITS:,} digits",
        hint=LIMITS_HINT,
    )


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _LongNumber
    return int(text)


_DIGIT_LIMIT = "integer string conversion"
"""In the message of the ValueError ``int()`` raises past Python's digit limit."""


class _LongNumber(Exception):
    """An integer literal past :data:`MAX_INT_DIGITS` (raised inside ``json.loads``)."""


def _parse_json(text: str, path: Path, kind: str) -> Any:
    try:
        return json.loads(text, parse_int=_bounded_int)
    except _LongNumber:
        raise _too_long_number(path, kind, "JSON") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"invalid JSON in {kind} file {shown(path)} at line {exc.lineno}, "
            f"column {exc.colno}: {exc.msg}"
        ) from exc


def _parse_toml(text: str, path: Path, kind: str) -> Any:
    import tomllib  # only TOML configs pay for the parser

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {kind} file {shown(path)}: {exc}") from exc
    except ValueError as exc:  # int() past Python's digit limit, raised through the parser
        if _DIGIT_LIMIT in str(exc):
            raise _too_long_number(path, kind, "TOML") from None
        raise ConfigError(f"invalid TOML in {kind} file {shown(path)}: {exc}") from None


def _parse_yaml(text: str, path: Path, kind: str) -> Any:
    import yaml

    from axis_eval.config import _yaml  # only YAML files pay for the parser

    try:
        return _yaml.load(text)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML in {kind} file {shown(path)}{where}: {problem}") from exc


def _evaluate_js(path: Path, kind: str, profile: str | None) -> Any:
    """The default export of a ``.js``/``.mjs``/``.ts`` file, through Node, as JSON.

    TypeScript runs under the extra Node flags of
    :func:`~axis_eval._util.node_ts.typescript_node_args` (Node's own type stripping, or
    the pinned tsx loader); everything else is the same as for JavaScript.

    Node runs in its own process group for at most :data:`NODE_TIMEOUT_S`; the group is
    killed when it is done, times out, prints more than the output cap, or when we are
    interrupted (Ctrl-C propagates as ``KeyboardInterrupt``, SIGTERM as
    :class:`~axis_eval.errors.Interrupted`), so a ``while(true){}`` never outlives axis.
    """
    typescript = path.suffix.lower() in TS_SUFFIXES
    language = "TypeScript" if typescript else "JavaScript"
    node = shutil.which("node")
    if node is None:
        raise ConfigError(
            f"{shown(path)} is a {language} {kind} file, and evaluating it needs Node.js, "
            "which is not on PATH",
            hint="install Node.js, or convert the file to JSON or YAML",
        )
    check_regular(path, kind)
    extra: list[str] = []
    if typescript:
        try:
            extra = typescript_node_args(node)
        except TypeScriptUnavailable as exc:
            raise ConfigError(f"{shown(path)}: {exc.message}", hint=exc.hint) from None
    try:
        done = run_helper(
            [node, *extra, "-e", _NODE_LOADER, str(path), profile or ""],
            cwd=str(path.parent),
            timeout_s=NODE_TIMEOUT_S,
            max_output_bytes=MAX_NODE_OUTPUT_BYTES,
            stop_on_signals=True,
        )
    except HelperTimeout as exc:
        raise ConfigError(
            f"evaluating {kind} file {shown(path)} with Node took longer than {NODE_TIMEOUT_S:g}s",
            hint=LIMITS_HINT,
        ) from exc
    except HelperOutputTooLarge as exc:
        raise ConfigError(
            f"{shown(path)}: its default export is larger than "
            f"{MAX_NODE_OUTPUT_BYTES // (1024 * 1024)} MiB as JSON",
            hint=LIMITS_HINT,
        ) from exc
    except HelperStopped as exc:
        raise Interrupted(exc.signal_name) from None
    if done.returncode != 0:
        first = _first_error(done.stderr, typescript)
        hint = None
        if extra and extra[0] != "--import":  # Node's own type stripping
            hint = (
                "Node's type stripping takes erasable syntax only (no enum or namespace; "
                "imports with their .ts extension): AXIS_TS_LOADER=tsx uses the pinned tsx "
                f"instead (`{INSTALL_HINT}`)"
            )
        raise ConfigError(f"Node failed to evaluate {kind} file {shown(path)}: {first}", hint=hint)
    try:
        return _parse(done.stdout or "null", ".json", path, kind)
    except ConfigError as exc:
        raise ConfigError(
            f"{shown(path)}: its default export is not JSON-serializable"
            if "invalid JSON" in exc.message
            else exc.message,
            hint=exc.hint,
        ) from exc


def _first_error(stderr: str, typescript: bool) -> str:
    """The first line of Node's error; for TypeScript the lines before the stack, since a
    transform error's first line ("Transform failed with 1 error:") does not say where."""
    lines = stderr.strip().splitlines() or ["(no output)"]
    if not typescript:
        return lines[0][:500]
    head: list[str] = []
    for line in lines:
        if line.lstrip().startswith("at ") or len(head) == 3:
            break
        if line.strip():
            head.append(line.strip())
    return " ".join(head or lines[:1])[:500]
