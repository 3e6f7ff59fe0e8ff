"""Read data files (JSON, YAML, TOML, and JS/MJS through Node) into plain Python values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from axis_eval._util.processes import HelperTimeout, run_helper
from axis_eval.errors import ConfigError

DATA_SUFFIXES = (".json", ".yaml", ".yml", ".toml")
JS_SUFFIXES = (".js", ".mjs", ".cjs")
TS_SUFFIXES = (".ts", ".mts", ".cts")

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
    """Parse ``path`` by its suffix; ``kind`` ("config" or "scenario") words the errors."""
    suffix = path.suffix.lower()
    if suffix in TS_SUFFIXES:
        raise ConfigError(
            f"TypeScript {kind} files are not supported: {path}",
            hint=f"convert it to JSON or YAML (e.g. axis.config.json); `axis schema {kind}` "
            "prints the JSON Schema for editors",
        )
    try:
        text = path.read_text(encoding="utf-8") if suffix not in JS_SUFFIXES else ""
    except FileNotFoundError as exc:
        raise ConfigError(f"{kind} file not found: {path}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {kind} file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{kind} file is not UTF-8 text: {path}") from exc
    if suffix in (".json", ""):
        return _parse_json(text, path, kind)
    if suffix in (".yaml", ".yml"):
        return _parse_yaml(text, path, kind)
    if suffix == ".toml":
        import tomllib  # only TOML configs pay for the parser

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"invalid TOML in {kind} file {path}: {exc}") from exc
    if suffix in JS_SUFFIXES:
        return _evaluate_js(path, kind, profile)
    raise ConfigError(
        f"unsupported {kind} file type {suffix!r}: {path}",
        hint="use .json, .yaml, .yml, .toml, .js or .mjs",
    )


def _parse_json(text: str, path: Path, kind: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"invalid JSON in {kind} file {path} at line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}"
        ) from exc


def _parse_yaml(text: str, path: Path, kind: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML in {kind} file {path}{where}: {problem}") from exc


def _evaluate_js(path: Path, kind: str, profile: str | None) -> Any:
    node = shutil.which("node")
    if node is None:
        raise ConfigError(
            f"{path} is a JavaScript {kind} file, and evaluating it needs Node.js, "
            "which is not on PATH",
            hint="install Node.js, or convert the file to JSON or YAML",
        )
    if not path.is_file():
        raise ConfigError(f"{kind} file not found: {path}")
    try:
        done = run_helper(
            [node, "-e", _NODE_LOADER, str(path), profile or ""],
            cwd=str(path.parent),
            timeout_s=30.0,
        )
    except HelperTimeout as exc:
        raise ConfigError(f"evaluating {path} with Node took longer than 30s") from exc
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["(no output)"])[0]
        raise ConfigError(f"Node failed to evaluate {kind} file {path}: {first}")
    try:
        return json.loads(done.stdout or "null")
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: its default export is not JSON-serializable") from exc
