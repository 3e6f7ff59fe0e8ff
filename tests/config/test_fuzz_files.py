"""Fuzzing config and scenario files in every format (hypothesis).

The property, for any bytes in ``axis.config.<json|yaml|toml|js>`` or a scenario file:

- loading a config either succeeds (and the config serializes, as the report does) or
  raises a :class:`ConfigError` whose message names the file;
- a scenario either loads, is not a scenario, or is a listed load failure naming it, and
  its good sibling still loads;
- never another exception, never a hang: each example runs under a SIGALRM bound.

Inputs: the valid examples the other tests use, mutated byte by byte and token by token;
hostile structures (nesting around and past the limit, YAML alias bombs, numbers past the
digit limit, NUL, bidi marks and lone surrogates); special files; and a fixed set of
hostile JavaScript programs (Node is slow, so those are not generated). A few examples go
end to end through ``axis run --dry-run``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings, strategies as st
from hypothesis.control import currently_in_test_context

from axis_eval.config import files as config_files
from axis_eval.config.discover import discover
from axis_eval.config.load import load_config
from axis_eval.errors import EXIT_USAGE, ConfigError
from helpers.system_parts import not_run

from .test_load import PROFILED
from .test_problems import EVERY_SCENARIO_FIELD

pytestmark = pytest.mark.fuzz

EXAMPLE_TIME_S = 10.0
"""The most one example may take (a regression that hangs fails here, not at the suite's
timeout); real examples take milliseconds."""

SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# -- the bound on each example ------------------------------------------------------------


class Hung(Exception):
    """An example ran past :data:`EXAMPLE_TIME_S`."""


def _hung(_signum: int, _frame: FrameType | None) -> None:
    raise Hung(f"an example took longer than {EXAMPLE_TIME_S}s")


@contextmanager
def bounded(seconds: float = EXAMPLE_TIME_S) -> Iterator[None]:
    """Raise :class:`Hung` after ``seconds``; pytest-timeout's own alarm is put back."""
    previous = signal.signal(signal.SIGALRM, _hung)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(0.001, outer - (seconds - left)))


# -- the property -------------------------------------------------------------------------


def check_config(root: Path, name: str, data: bytes | None = None) -> None:
    """Write ``data`` to ``root/name`` (None: it is there) and load it: the property."""
    path = root / name
    if data is not None:
        path.write_bytes(data)
    with bounded():
        try:
            loaded = load_config(str(path))
        except ConfigError as exc:
            assert str(path) in exc.render() or path.name in exc.render(), exc.render()
            assert exc.exit_code == EXIT_USAGE
            note("config: " + _gist(exc.message))
            return
        note("config: loaded")
        # What a run does with a loaded config: the report keeps a copy, warnings are shown.
        loaded.config.model_dump_json()
        "\n".join(loaded.warnings).encode("utf-8")


def note(outcome: str) -> None:
    """Count an outcome in hypothesis's statistics (``--hypothesis-show-statistics``)."""
    if currently_in_test_context():
        event(outcome)


def _gist(message: str) -> str:
    """The kind of an error, for hypothesis's statistics (``--hypothesis-show-statistics``)."""
    for needle in ("invalid JSON", "invalid YAML", "invalid TOML", "not UTF-8", "nested",
                   "digits", "values", "characters", "regular file", "symlink", "Node",
                   "export", "invalid config", "expected"):  # fmt: skip
        if needle in message:
            return needle
    return message[:40]


GOOD = {"name": "good", "prompt": "p", "judge": "j"}


def check_scenario(root: Path, name: str, data: bytes | None = None) -> None:
    """A project with ``scenarios/good.json`` and ``scenarios/<name>``: the property."""
    (root / "scenarios").mkdir(parents=True, exist_ok=True)
    (root / "axis.config.json").write_text('{"agents": ["codex"]}')
    (root / "scenarios" / "good.json").write_text(json.dumps(GOOD))
    if data is not None:
        (root / "scenarios" / name).write_bytes(data)
    with bounded():
        loaded = load_config(str(root))
        found = discover(loaded.config, loaded.config_dir)
    keys = [s.key for s in found.scenarios]
    assert "good" in keys
    note("scenario: " + (_gist(found.load_failures[0].error) if found.load_failures else "loaded"))
    stem = name.rsplit(".", 1)[0]
    assert set(keys) <= {"good", stem} | {k for k in keys if k.startswith(f"{stem}@")}
    for failure in found.load_failures:
        assert failure.path == f"scenarios/{name}"
        assert failure.error
        failure.model_dump_json()
    for scenario in found.scenarios:
        scenario.model_dump_json()  # a run writes each scenario into its report
    "\n".join(found.warnings).encode("utf-8")


@pytest.fixture
def fresh() -> Iterator[Callable[[], Path]]:
    """A new empty folder per call (hypothesis runs many examples in one test)."""
    made: list[str] = []

    def make() -> Path:
        made.append(tempfile.mkdtemp(prefix="axis-fuzz-"))
        return Path(made[-1])

    yield make
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


# -- serializing seeds and hostile values in each format ----------------------------------


class Deep:
    """``depth`` lists (or ``{"k": …}`` objects) around ``leaf``, rendered without recursion."""

    def __init__(self, depth: int, leaf: Any, lists: bool) -> None:
        self.depth, self.leaf, self.lists = depth, leaf, lists


_FLOATS = {
    ".json": ("NaN", "Infinity", "-Infinity"),
    ".yaml": (".nan", ".inf", "-.inf"),
    ".toml": ("nan", "inf", "-inf"),
}


def render(value: Any, suffix: str) -> str:
    """``value`` as an inline (flow) value of the format: JSON, YAML flow, TOML inline."""
    if isinstance(value, Deep):
        inner = render(value.leaf, suffix)
        if value.lists:
            return "[" * value.depth + inner + "]" * value.depth
        opening = '{"k" = ' if suffix == ".toml" else '{"k": '
        return opening * value.depth + inner + "}" * value.depth
    if value is None:
        return '"null"' if suffix == ".toml" else "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if abs(value) < 10**4000 else "1" * 4400  # str() refuses more
    if isinstance(value, float):
        nan, inf, ninf = _FLOATS[suffix]
        if math.isnan(value):
            return nan
        if math.isinf(value):
            return inf if value > 0 else ninf
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # all three take JSON's escapes (TOML refuses \ud800)
    if isinstance(value, list):
        return "[" + ", ".join(render(v, suffix) for v in value) + "]"
    if isinstance(value, dict):
        sep = " = " if suffix == ".toml" else ": "
        pairs = (f"{json.dumps(str(k))}{sep}{render(v, suffix)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return json.dumps(str(value))


PLACEHOLDER = "__HOSTILE_VALUE__"


def to_text(value: dict[str, Any], suffix: str) -> str:
    """A seed in the format: JSON, YAML block style (as people write it), TOML lines."""
    if suffix == ".toml":
        return "".join(f"{json.dumps(str(k))} = {render(v, suffix)}\n" for k, v in value.items())
    if suffix == ".yaml":
        return str(yaml.safe_dump(value, sort_keys=False))
    return json.dumps(value, indent=2)


CONFIG_SEEDS: list[dict[str, Any]] = [
    PROFILED,
    {"agents": ["codex"], "name": "n", "settings": {"concurrency": 2, "runs": 3}},
    {
        "name": "quickstart",
        "scenarios": "./scenarios",
        "agents": ["toy", "claude-code", {"agent": "codex", "model": "gpt-5.5"}],
        "adapters": {"toy": {"command": ["python3", "x.py"], "args": [], "output": "ndjson"}},
        "profiles": {"live": {"model_server": None}},
        "artifacts": ["*.txt"],
        "settings": {"concurrency": 4},
    },
]
SCENARIO_SEEDS: list[dict[str, Any]] = [
    {k: v for k, v in EVERY_SCENARIO_FIELD.items() if k != "key"},
    GOOD,
    {
        "name": "Append a line",
        "prompt": "Append a line",
        "judge": [{"check": "starts with its first line"}, {"check": "ends with it"}],
        "setup": [{"action": "copy", "match": "./fixtures/*", "destination": "."}],
        "variants": [{"name": "short"}, {"name": "long", "prompt": "longer"}],
    },
]
SUFFIXES = [".json", ".yaml", ".toml"]

HOSTILE_SNIPPETS = [
    b"[",
    b"{",
    b"]]]",
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"\x00",
    b"\xff\xfe",
    b"\xed\xa0\x80",  # a UTF-8-encoded surrogate
    b"\\ud800",
    b"\\u0000",
    "\u202e\u2066".encode(),
    b"1" * 4400,
    b"0x" + b"f" * 4000,
    b"1e999999",
    b"NaN",
    b"-Infinity",
    b"!!python/object:os.system",
    b"!!int ''",
    b"2001-13-01",
    b"---\n",
    b'"""',
    b"[[a]]\n",
    b"a.b.c.d = 1\n",
    b"\n  - ",
    b"? ",
]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> tuple[str, bytes]:
    """A seed in one format with a few bytes flipped, cut, doubled or hostile snippets in."""
    suffix = draw(st.sampled_from(SUFFIXES))
    data = bytearray(to_text(draw(st.sampled_from(seeds)), suffix).encode("utf-8"))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["flip", "cut", "insert", "double", "snippet"]))
        if op == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut":
            del data[at : at + draw(st.integers(1, 16))]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "double":
            data[at:at] = data[at : at + draw(st.integers(1, 64))] * draw(st.integers(2, 20))
        else:
            data[at:at] = draw(st.sampled_from(HOSTILE_SNIPPETS))
    return suffix, bytes(data)


ODD_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(["\x00", "\u202e", "\u2066", "\ud800", "\udfff", "\udc80", "\ufeff"]),
        st.characters(codec="utf-8"),
    ),
    max_size=12,
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([(10, 4299), (-10, 4299), (10, 4301), (2, 20_000)]).map(
        lambda power: power[0] ** power[1]  # around the 4,300-digit limit
    ),
    st.floats(allow_nan=True, allow_infinity=True),
    ODD_TEXT,
)
DEEP = st.builds(
    Deep, st.sampled_from([1, 50, 98, 99, 100, 101, 1_200, 30_000]), LEAVES, st.booleans()
)
HOSTILE_VALUES = st.recursive(
    st.one_of(LEAVES, DEEP),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(ODD_TEXT, inner, max_size=4)
    ),
    max_leaves=10,
)


@st.composite
def hostile(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> tuple[str, bytes]:
    """A seed with a hostile value put in, in place of a field or as a new key."""
    seed = dict(draw(st.sampled_from(seeds)))
    key = draw(st.one_of(st.sampled_from(sorted(seed)), st.text(min_size=1, max_size=8)))
    seed[key] = PLACEHOLDER
    suffix = draw(st.sampled_from(SUFFIXES))
    text = to_text(seed, suffix)
    quoted = PLACEHOLDER if suffix == ".yaml" else json.dumps(PLACEHOLDER)
    text = text.replace(quoted, render(draw(HOSTILE_VALUES), suffix), 1)
    return suffix, text.encode("utf-8", "surrogatepass")


@st.composite
def alias_bomb(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> tuple[str, bytes]:
    """A YAML seed with a chain of anchors (each ``width`` aliases of the one before) and
    the last used in a random field: from a few values to billions."""
    levels, width = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    lines = [f"x0: &x0 [{', '.join(['lol'] * width)}]"]
    lines += [f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * width)}]" for i in range(1, levels)]
    seed = dict(draw(st.sampled_from(seeds)))
    field = draw(st.sampled_from(sorted(seed)))
    body = yaml.safe_dump({k: v for k, v in seed.items() if k != field}, sort_keys=False)
    return ".yaml", ("\n".join(lines) + f"\n{body}{field}: *x{levels - 1}\n").encode()


# -- configs ------------------------------------------------------------------------------


@SETTINGS
@given(case=st.one_of(mutated(CONFIG_SEEDS), hostile(CONFIG_SEEDS), alias_bomb(CONFIG_SEEDS)))
def test_any_config_file_loads_or_is_an_error_naming_it(
    fresh: Callable[[], Path], case: tuple[str, bytes]
) -> None:
    suffix, data = case
    check_config(fresh(), f"axis.config{suffix}", data)


@SETTINGS
@given(case=st.one_of(mutated(SCENARIO_SEEDS), hostile(SCENARIO_SEEDS), alias_bomb(SCENARIO_SEEDS)))
def test_any_scenario_file_loads_or_is_a_listed_failure(
    fresh: Callable[[], Path], case: tuple[str, bytes]
) -> None:
    suffix, data = case
    check_scenario(fresh(), f"fuzz{suffix}", data)


@settings(
    max_examples=max(12, settings.default.max_examples // 5),  # a CLI run is slower
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=st.one_of(hostile(CONFIG_SEEDS), alias_bomb(CONFIG_SEEDS)))
def test_a_dry_run_of_any_config_never_shows_a_traceback(
    axis: Callable[..., Any], case: tuple[str, bytes]
) -> None:
    suffix, data = case
    with tempfile.TemporaryDirectory(prefix="axis-fuzz-") as folder:
        root = Path(folder)
        (root / "scenarios").mkdir()
        (root / "scenarios" / "good.json").write_text(json.dumps(GOOD))
        (root / f"axis.config{suffix}").write_bytes(data)
        with bounded():
            result = axis("run", "--dry-run", cwd=root)
    assert result.exit_code in (0, 1, EXIT_USAGE), result.stderr
    assert "Traceback" not in result.stdout + result.stderr


# -- special files ------------------------------------------------------------------------


def make_special(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "loop":
        os.symlink(path.name, path)
    elif kind == "dangling":
        os.symlink("nowhere", path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
    else:
        os.symlink(f"/dev/{kind}", path)


SPECIAL = ["fifo", "folder", "loop", "dangling", "socket", "null", "zero", "urandom"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("suffix", [".json", ".yaml", ".toml", ".js"])
def test_a_special_file_is_an_error_naming_it(
    fresh: Callable[[], Path], kind: str, suffix: str
) -> None:
    root = fresh()
    make_special(root / f"axis.config{suffix}", kind)
    with pytest.raises(ConfigError) as info:
        check_config_raising(root, f"axis.config{suffix}")
    assert str(root / f"axis.config{suffix}") in info.value.message
    scenarios = fresh()
    (scenarios / "scenarios").mkdir()
    make_special(scenarios / "scenarios" / f"fuzz{suffix}", kind)
    check_scenario(scenarios, f"fuzz{suffix}")


def check_config_raising(root: Path, name: str) -> None:
    with bounded():
        load_config(str(root / name))


@pytest.mark.parametrize("kind", ["fifo", "folder", "loop", "dangling", "zero"])
def test_a_dry_run_with_a_special_config_exits_2(
    tmp_path: Path, axis: Callable[..., Any], kind: str
) -> None:
    make_special(tmp_path / "axis.config.json", kind)
    with bounded():
        result = axis("run", "--dry-run", cwd=tmp_path)
    assert result.exit_code == EXIT_USAGE
    assert "axis.config.json is" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "text",
    [
        "x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        + "".join(f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 9)}]\n" for i in range(1, 10))
        + "agents: [codex]\nname: *x9\n",
        "agents: [codex]\nname: " + "[" * 5000 + "\n",
        "agents: [codex]\nname: " + "1" * 5000 + "\n",
        'agents: [codex]\nname: "\\ud800"\n',
    ],
    ids=["alias-bomb", "deep", "huge-int", "lone-surrogate"],
)
def test_a_dry_run_with_a_hostile_yaml_config_exits_2(
    tmp_path: Path, axis: Callable[..., Any], text: str
) -> None:
    (tmp_path / "axis.config.yaml").write_text(text)
    with bounded():
        result = axis("run", "--dry-run", cwd=tmp_path)
    assert result.exit_code == EXIT_USAGE, result.stderr
    assert "axis.config.yaml" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


# -- JavaScript: a fixed set of hostile programs -------------------------------------------

HOSTILE_JS = {
    "throws": 'throw new Error("boom");',
    "bigint": "module.exports = { agents: ['codex'], n: 1n };",
    "circular": "const a = { agents: ['codex'] }; a.self = a; module.exports = a;",
    "deep-for-node": "let v = []; for (let i = 0; i < 1e5; i++) v = [v];"
    " module.exports = { agents: ['codex'], x: v };",
    "deep-for-axis": "let v = []; for (let i = 0; i < 150; i++) v = [v];"
    " module.exports = { agents: ['codex'], x: v };",
    "huge": "module.exports = { agents: ['codex'], name: 'x'.repeat(5 << 20) };",
    "many-values": "module.exports = { agents: ['codex'], x: Array(120000).fill(0) };",
    "no-output": "process.exit(0);",
    "noise-first": "console.log('hello'); module.exports = { agents: ['codex'] };",
    "bad-utf8": "process.stdout.write(Buffer.from([0xff, 0xfe]));"
    " module.exports = { agents: ['codex'] };",
    "stderr-flood": "process.stderr.write('e'.repeat(5 << 20)); process.exit(1);",
    "never-settles": "module.exports = () => new Promise(() => {});",
    "surrogate": "module.exports = { agents: ['codex'], name: '\\ud800', prompt: '\\ud800' };",
    "nul": "module.exports = { agents: ['codex'], name: 'a\\u0000b', prompt: 'a\\u0000' };",
    "infinity": "module.exports = { agents: ['codex'], settings: { concurrency: 1e400 } };",
    "symbol": "module.exports = Symbol('x');",
    "function-throws": "module.exports = async () => { throw new Error('late'); };",
    "not-object": "module.exports = [1, 2, 3];",
    "exit-code": "process.exitCode = 7; module.exports = { agents: ['codex'] };",
}


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("node") is None:
        not_run("NODE FUZZ TEST", "node is not on PATH")
    monkeypatch.setattr(config_files, "NODE_TIMEOUT_S", 5.0)


@pytest.mark.usefixtures("node")
@pytest.mark.parametrize("name", sorted(HOSTILE_JS))
def test_a_hostile_js_file_is_an_error_or_a_failure_never_a_crash(
    fresh: Callable[[], Path], name: str
) -> None:
    program = HOSTILE_JS[name].encode()
    check_config(fresh(), "axis.config.js", program)
    check_scenario(fresh(), "fuzz.js", program.replace(b"agents: ['codex']", b"name: 's'"))
