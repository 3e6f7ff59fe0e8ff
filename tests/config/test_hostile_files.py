"""Hostile config and scenario files: each is a clear error naming the file, never a hang,
a traceback or a run lost to one bad scenario.

The limits are in ``config/_limits.py`` (docs/configuration.md, "Limits on input files").
Cases that would hang or eat memory if a limit regressed (alias bombs, ``/dev/zero``) load
in a child process with a memory cap and a timeout, so a regression fails the test instead
of taking the machine down.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axis_eval.config import _limits
from axis_eval.config._problems import describe, problems_from, unknown_keys
from axis_eval.config.discover import Discovery, discover
from axis_eval.config.files import read_data_file
from axis_eval.config.load import find_config, load_config, validate_config
from axis_eval.errors import EXIT_USAGE, ConfigError, UsageError
from axis_eval.planning.matrix import plan

SRC = Path(__file__).resolve().parents[2] / "src"
GOOD = {"name": "good", "prompt": "p", "judge": "j"}
MakeProject = Callable[..., Path]


def project(root: Path, config: str | dict[str, Any], scenarios: dict[str, str]) -> Path:
    """A project: ``config`` (YAML text, or a dict as JSON), ``good.json`` and ``scenarios``."""
    root.mkdir(parents=True, exist_ok=True)
    if isinstance(config, str):
        (root / "axis.config.yaml").write_text(config)
    else:
        (root / "axis.config.json").write_text(json.dumps(config))
    (root / "scenarios").mkdir(exist_ok=True)
    (root / "scenarios" / "good.json").write_text(json.dumps(GOOD))
    for name, text in scenarios.items():
        (root / "scenarios" / name).write_text(text)
    return root


def found_in(root: Path) -> Discovery:
    loaded = load_config(str(root))
    return discover(loaded.config, loaded.config_dir)


def failure_of(found: Discovery, name: str) -> str:
    """The load failure of ``scenarios/<name>``, after checking the good sibling still loads."""
    assert [s.key for s in found.scenarios] == ["good"]
    errors = {f.path: f.error for f in found.load_failures}
    assert f"scenarios/{name}" in errors, errors
    return errors[f"scenarios/{name}"]


# -- a child process for the cases a regression would let run away ---------------------

CHILD = """
import json, sys, time
from axis_eval.config.discover import discover
from axis_eval.config.load import load_config
from axis_eval.errors import AxisError
for root in sys.argv[1:]:
    start = time.monotonic()
    try:
        loaded = load_config(root)
        found = discover(loaded.config, loaded.config_dir)
        result = {
            "outcome": "loaded",
            "scenarios": [s.key for s in found.scenarios],
            "failures": {f.path: f.error for f in found.load_failures},
        }
    except AxisError as exc:
        result = {"outcome": type(exc).__name__, "message": exc.render()}
    result["seconds"] = time.monotonic() - start
    print(json.dumps(result), flush=True)
"""


def _cap_memory() -> None:
    limit = 3 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def load_in_child(roots: list[Path]) -> list[dict[str, Any]]:
    """Load each project in one child (3 GiB of memory, 60 s): one result per project."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *map(str, roots)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        preexec_fn=_cap_memory,
    )
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == len(roots), done.stderr[-3000:]
    return results


def bomb(levels: int = 9) -> str:
    """YAML anchors ``l0``…``l<levels-1>``, each nine aliases of the one before: the last
    stands for 9**levels strings ("billion laughs")."""
    lines = ["l0: &l0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


TOP = f"*l{9 - 1}"
BOMBS = {
    "config name": (bomb() + f"name: {TOP}\nagents: [codex]\n", {}),
    "agent flags": (bomb() + f"agents:\n  - agent: codex\n    flags: {TOP}\n", {}),
    "unused profile": (bomb() + f"agents: [codex]\nprofiles:\n  big: {{name: {TOP}}}\n", {}),
    "scenario prompt": (
        "agents: [codex]\n",
        {"bomb.yaml": bomb() + f"name: b\nprompt: {TOP}\njudge: j\n"},
    ),
    "scenario judge": (
        "agents: [codex]\n",
        {"bomb.yaml": bomb() + f"name: b\nprompt: p\njudge: {TOP}\n"},
    ),
    "dev zero": ("agents: [codex]\n", {}),
    "dev zero config": ("agents: [codex]\n", {}),
}


@pytest.fixture(scope="module")
def bomb_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    roots = []
    for case, (config, scenarios) in BOMBS.items():
        root = project(tmp_path_factory.mktemp(case.replace(" ", "-")), config, scenarios)
        if case == "dev zero":
            os.symlink("/dev/zero", root / "scenarios" / "zero.json")
        if case == "dev zero config":  # named with -c: it used to be read until memory ran out
            os.symlink("/dev/zero", root / "zero.json")
            root = root / "zero.json"
        roots.append(root)
    return dict(zip(BOMBS, load_in_child(roots), strict=True))


@pytest.mark.parametrize("case", ["config name", "agent flags", "unused profile"])
def test_an_alias_bomb_in_a_config_is_a_clear_error(
    bomb_results: dict[str, dict[str, Any]], case: str
) -> None:
    result = bomb_results[case]
    assert result["outcome"] == "ConfigError"
    assert "axis.config.yaml holds more than 100,000 values" in result["message"]
    assert "YAML alias" in result["message"]
    assert result["seconds"] < 10


@pytest.mark.parametrize("case", ["scenario prompt", "scenario judge"])
def test_an_alias_bomb_in_a_scenario_is_a_load_failure(
    bomb_results: dict[str, dict[str, Any]], case: str
) -> None:
    result = bomb_results[case]
    assert result["outcome"] == "loaded" and result["scenarios"] == ["good"]
    assert "holds more than 100,000 values" in result["failures"]["scenarios/bomb.yaml"]


def test_a_symlink_to_dev_zero_is_a_load_failure(bomb_results: dict[str, dict[str, Any]]) -> None:
    result = bomb_results["dev zero"]
    assert result["outcome"] == "loaded" and result["scenarios"] == ["good"]
    error = result["failures"]["scenarios/zero.json"]
    assert "is a character device, not a regular file" in error


def test_a_config_named_with_c_that_is_dev_zero_is_an_error(
    bomb_results: dict[str, dict[str, Any]],
) -> None:
    result = bomb_results["dev zero config"]
    assert result["outcome"] == "ConfigError"
    assert result["message"].endswith("zero.json is a character device, not a regular file")


# -- the pieces of the alias fix, each on its own ----------------------------------------


def test_aliases_within_the_budget_load(tmp_path: Path) -> None:
    text = bomb(5) + "agents: [codex]\nprofiles:\n  ok: {artifacts: *l0}\n"  # 9**5 strings
    (tmp_path / "axis.config.yaml").write_text(text)
    loaded = load_config(str(tmp_path), profile="ok")
    assert loaded.config.artifacts == ["lol"] * 9
    assert "axis.config.yaml: unknown key 'l4'" in loaded.warnings


class Loud:
    """Counts the times anything renders it: a rendering that reached it read too far."""

    seen = 0

    def __repr__(self) -> str:
        Loud.seen += 1
        return "loud"


def test_describe_stops_reading_a_shared_value_once_it_has_enough() -> None:
    shared: Any = ["lol"] * 9
    for _ in range(5):
        shared = [shared] * 9  # 9**6 leaves, then one object at the very end
    Loud.seen = 0
    text = describe([shared, Loud()])
    assert text == ("[" * 7 + ", ".join(['"lol"'] * 9))[:57] + "..."
    assert Loud.seen == 0, "describe serialized the whole value before cutting it"


def test_describe_never_converts_a_huge_integer_to_text() -> None:
    assert describe(10**10_000) == "an integer of about 10,001 digits"
    assert describe([2**100_000]).startswith("[an integer of about 30,10")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a\x00b\u202ec\udc80", '"a\\u0000b\\u202ec\\udc80"'),
        (b"\xff" * 100, ("b'" + "\\xff" * 20)[:57] + "..."),
        (float("nan"), "NaN"),
        ({"k": 1}, "an object"),
        ([{"k": [1, None, True]}], '[{"k": [1, null, true]}]'),
    ],
)
def test_describe_renders_odd_values_as_escaped_json(value: Any, shown: str) -> None:
    assert describe(value) == shown


def test_a_problem_message_about_a_shared_value_is_short() -> None:
    shared: Any = ["x"] * 9
    for _ in range(4):
        shared = [shared] * 9  # 9**5 strings, under the loader's budget
    with pytest.raises(ConfigError) as info:
        validate_config({"agents": ["codex"], "name": shared}, "f.json")
    [problem] = info.value.problems
    assert problem.path == "name" and problem.expected == "a string"
    assert problem.found is not None and len(problem.found) == 60


class CountingDict(dict[str, Any]):
    """A dict that counts the times its items are read."""

    reads = 0

    def items(self) -> Any:
        CountingDict.reads += 1
        return super().items()


def test_the_unknown_key_walk_visits_a_shared_object_once() -> None:
    shared: Any = CountingDict(leaf=1)
    for _ in range(12):
        shared = CountingDict(left=shared, right=shared)  # 2**12 paths to the leaf
    config = validate_config({"agents": ["codex"], "profiles": {"p": {"deep": shared}}}, "f")
    CountingDict.reads = 0
    assert unknown_keys(config) == []
    assert CountingDict.reads == 13, "each shared dict is walked once"


def test_a_file_with_thousands_of_bad_values_lists_the_first_twenty() -> None:
    with pytest.raises(ConfigError) as info:
        validate_config({"agents": ["codex"], "artifacts": [1] * 5000}, "f.json")
    problems = info.value.problems
    assert len(problems) == 21
    assert problems[-1].render() == "(and 4,980 more): expected the same kind of fix"


def test_a_long_key_is_cut_in_paths_and_warnings() -> None:
    key = "k" * 100_000
    config = validate_config({"agents": ["codex"], key: 1}, "f.json")
    [warning] = unknown_keys(config)
    assert len(warning) < 100 and warning.startswith("unknown key 'kkk")


def test_problems_from_pydantic_paths_cut_long_keys() -> None:
    from pydantic import TypeAdapter, ValidationError

    with pytest.raises(ValidationError) as info:
        TypeAdapter(dict[str, int]).validate_python({"k" * 10_000: "x"})
    [problem] = problems_from(info.value)
    assert len(problem.path) == 60 and problem.path.endswith("...")


# -- huge integers and deep nesting (all three text formats) ----------------------------

DIGITS = "1" * 5000


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("axis.config.json", '{"agents": ["codex"], "x": ' + DIGITS + "}"),
        ("axis.config.yaml", f"agents: [codex]\nx: {DIGITS}\n"),
        ("axis.config.toml", f'agents = ["codex"]\nx = {DIGITS}\n'),
        ("axis.config.yaml", f"agents: [codex]\nx: 0x{'f' * 4000}\n"),  # converts, too long
        ("axis.config.toml", f'agents = ["codex"]\nx = 0x{"f" * 4000}\n'),
        ("axis.config.yaml", "agents: [codex]\nx: " + "1:" * 3000 + "1\n"),  # sexagesimal
    ],
)
def test_an_integer_past_the_digit_limit_is_a_config_error(
    tmp_path: Path, name: str, text: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path))
    assert str((tmp_path / name).resolve()) in info.value.message
    assert "more than 4,300 digits" in info.value.message
    assert info.value.exit_code == EXIT_USAGE


def test_an_integer_of_4300_digits_is_still_read(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text('{"x": ' + "9" * 4300 + "}")
    assert read_data_file(tmp_path / "s.json", kind="scenario")["x"] == 10**4300 - 1


def nested(suffix: str, depth: int, agents: bool = False) -> str:
    """A file whose top object (level 1) has ``x``: ``depth - 1`` lists inside each other,
    the innermost holding a number; with ``agents``, a valid config around it."""
    inner = "[" * (depth - 1) + "1" + "]" * (depth - 1)
    if suffix == ".toml":
        return ("agents = ['codex']\n" if agents else "") + f"x = {inner}\n"
    if suffix == ".yaml":
        return ("agents: [codex]\n" if agents else "") + f"x: {inner}\n"
    return "{" + ('"agents": ["codex"], ' if agents else "") + '"x": ' + inner + "}"


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".toml"])
@pytest.mark.parametrize("depth", [101, 1_500, 20_000])
def test_nesting_past_the_limit_is_an_error_naming_the_file(
    tmp_path: Path, suffix: str, depth: int
) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text(nested(suffix, depth))
    with pytest.raises(ConfigError) as info:
        read_data_file(path, kind="scenario")
    assert str(path) in info.value.message
    assert "100 levels" in info.value.message


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".toml"])
def test_nesting_up_to_the_limit_loads_and_validates(tmp_path: Path, suffix: str) -> None:
    (tmp_path / f"axis.config{suffix}").write_text(nested(suffix, 100, agents=True))
    loaded = load_config(str(tmp_path))
    assert loaded.warnings == [f"axis.config{suffix}: unknown key 'x'"]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", nested(".json", 5_000)),
        ("deep.yaml", nested(".yaml", 5_000)),
        ("deep.toml", "name = 's'\nprompt = 'p'\n" + nested(".toml", 5_000)),
        ("big.json", '{"name": "s", "prompt": "p", "judge": "j", "n": ' + DIGITS + "}"),
        ("big.yaml", f"name: s\nprompt: p\njudge: j\nn: {DIGITS}\n"),
        ("big.toml", f"name = 's'\nprompt = 'p'\njudge = 'j'\nn = {DIGITS}\n"),
    ],
)
def test_a_hostile_scenario_is_a_load_failure_and_the_others_load(
    tmp_path: Path, name: str, text: str
) -> None:
    root = project(tmp_path, {"agents": ["codex"]}, {name: text})
    error = failure_of(found_in(root), name)
    assert "100 levels" in error or "4,300 digits" in error


def test_a_recursive_alias_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("name: &a [x, *a]\n")
    with pytest.raises(ConfigError, match=r"s\.yaml contains itself \(a recursive YAML alias\)"):
        read_data_file(tmp_path / "s.yaml", kind="scenario")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('x: !!int ""', "cannot read '' as int"),
        ("x: 2001-13-01", "cannot read '2001-13-01' as timestamp: month must be in 1..12"),
        ("x: !!bool maybe", "cannot read 'maybe' as bool"),
        ("x: !!timestamp soon", "cannot read 'soon' as timestamp"),
    ],
)
def test_a_yaml_value_its_tag_cannot_read_is_invalid_yaml(
    tmp_path: Path, text: str, needle: str
) -> None:
    (tmp_path / "s.yaml").write_text(text + "\n")
    with pytest.raises(ConfigError) as info:
        read_data_file(tmp_path / "s.yaml", kind="scenario")
    assert f"invalid YAML in scenario file {tmp_path / 's.yaml'} at line 1" in info.value.message
    assert needle in info.value.message


# -- files that are not regular files, and the size cap ---------------------------------


@pytest.mark.timeout(20)
def test_a_fifo_in_the_scenarios_folder_is_a_load_failure(tmp_path: Path) -> None:
    root = project(tmp_path, {"agents": ["codex"]}, {})
    os.mkfifo(root / "scenarios" / "pipe.json")  # reading it would wait for a writer
    error = failure_of(found_in(root), "pipe.json")
    assert error.endswith("pipe.json is a FIFO (named pipe), not a regular file")


def test_a_symlink_loop_and_a_folder_in_the_scenarios_folder(tmp_path: Path) -> None:
    root = project(tmp_path, {"agents": ["codex"]}, {})
    os.symlink("loop.json", root / "scenarios" / "loop.json")
    os.symlink("gone.json", root / "scenarios" / "dangling.json")
    found = found_in(root)
    errors = {f.path: f.error for f in found.load_failures}
    assert errors["scenarios/loop.json"].endswith("loop.json is a symlink loop")
    assert errors["scenarios/dangling.json"].endswith("dangling.json is a broken symlink")
    assert [s.key for s in found.scenarios] == ["good"]


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("kind", "explicit"),
    # `-c` naming /dev/zero is checked in the child process above (it used to be read until
    # memory ran out); found by probing, it is only stat'ed.
    [
        (kind, explicit)
        for kind in ("fifo", "folder", "loop", "dangling", "dev-zero")
        for explicit in (False, True)
        if (kind, explicit) != ("dev-zero", True)
    ],
)
def test_a_config_that_is_not_a_regular_file_is_an_error_naming_it(
    tmp_path: Path, kind: str, explicit: bool
) -> None:
    path = tmp_path / "axis.config.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "loop":
        os.symlink(path.name, path)
    elif kind == "dangling":
        os.symlink("elsewhere.json", path)
    else:
        os.symlink("/dev/zero", path)
    (tmp_path / "axis.config.yaml").write_text("agents: [codex]\n")  # never used instead
    expected = {
        "fifo": "is a FIFO (named pipe), not a regular file",
        "folder": "is a folder, not a regular file",
        "loop": "is a symlink loop",
        "dangling": "is a broken symlink",
        "dev-zero": "is a character device, not a regular file",
    }[kind]
    if explicit and kind == "folder":
        expected = "is a folder, not a regular file"  # -c DIR probes DIR/axis.config.*
    with pytest.raises(ConfigError) as info:
        if explicit and kind != "folder":
            load_config(str(path))
        else:
            load_config(cwd=str(tmp_path))
    assert info.value.message == f"config file {path} {expected}"
    assert info.value.exit_code == EXIT_USAGE


def test_an_explicit_scenario_source_that_is_a_loop_is_a_load_failure(tmp_path: Path) -> None:
    root = project(tmp_path, {"agents": ["codex"], "scenarios": ["./loop.json"]}, {})
    os.symlink("loop.json", root / "loop.json")
    found = found_in(root)
    [failure] = found.load_failures
    assert failure.path == "loop.json" and failure.error.endswith("is a symlink loop")


def test_a_file_over_the_size_cap_is_an_error(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {"agents": ["codex"]},
        {"huge.json": json.dumps({**GOOD, "prompt": "x" * _limits.MAX_FILE_BYTES})},
    )
    assert "huge.json is larger than 1 MiB" in failure_of(found_in(root), "huge.json")
    (root / "axis.config.json").write_text(" " * _limits.MAX_FILE_BYTES + '{"agents": []}')
    with pytest.raises(ConfigError, match=r"axis\.config\.json is larger than 1 MiB"):
        load_config(str(root))


def test_a_file_of_exactly_the_cap_is_read(tmp_path: Path) -> None:
    body = json.dumps(GOOD)
    (tmp_path / "s.json").write_text(body + " " * (_limits.MAX_FILE_BYTES - len(body)))
    assert read_data_file(tmp_path / "s.json", kind="scenario") == GOOD


def test_text_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_bytes(b'{"name": "\xed\xa0\x80"}')  # a surrogate, CESU-style
    with pytest.raises(ConfigError, match="scenario file is not UTF-8 text"):
        read_data_file(tmp_path / "s.json", kind="scenario")


# -- scenario file names that are not UTF-8 ----------------------------------------------


def test_a_scenario_name_that_is_not_utf8_is_a_load_failure(tmp_path: Path) -> None:
    root = project(tmp_path, {"agents": ["codex"]}, {})
    name = os.fsencode(root / "scenarios") + b"/caf\xe9.json"  # Latin-1, not UTF-8
    with open(name, "w") as handle:
        handle.write(json.dumps(GOOD))
    found = found_in(root)
    assert [s.key for s in found.scenarios] == ["good"]
    [failure] = found.load_failures
    assert failure.path == "scenarios/caf\\xe9.json" and failure.key is None
    assert "not valid UTF-8" in failure.error
    json.dumps(failure.model_dump(), ensure_ascii=False).encode("utf-8")  # reports can hold it


def test_a_dry_run_lists_a_scenario_named_in_latin1(
    tmp_path: Path, axis: Callable[..., Any]
) -> None:
    root = project(tmp_path, {"agents": ["codex"]}, {})
    with open(os.fsencode(root / "scenarios") + b"/na\xefve.json", "w") as handle:
        handle.write(json.dumps(GOOD))
    result = axis("run", "--dry-run", cwd=root)
    assert result.exit_code == 1
    assert "scenarios/na\\xefve.json: the file name is not valid UTF-8" in result.stdout


# -- when every scenario fails to load ----------------------------------------------------


def test_when_every_scenario_fails_the_error_lists_why(tmp_path: Path) -> None:
    root = project(tmp_path, {"agents": ["codex"]}, {"a.json": '{"name": "a", "prompt": '})
    (root / "scenarios" / "good.json").write_text('{"name": "g", "prompt": "p"}')
    with pytest.raises(UsageError) as info:
        plan(load_config(str(root)))
    message = info.value.message
    assert message.startswith("no jobs to run: the selection is empty\nFailed to load (2):")
    assert "\n  scenarios/a.json: invalid JSON in scenario file" in message
    assert "\n  scenarios/good.json: (top level): expected a `judge`" in message
    assert info.value.hint == "every scenario file found failed to load: fix the files listed above"


def test_a_dry_run_with_only_broken_scenarios_shows_them(
    tmp_path: Path, axis: Callable[..., Any]
) -> None:
    root = project(tmp_path, {"agents": ["codex"]}, {"deep.json": nested(".json", 3000)})
    (root / "scenarios" / "good.json").unlink()
    result = axis("run", "--dry-run", cwd=root)
    assert result.exit_code == EXIT_USAGE
    assert "scenarios/deep.json: scenario file" in result.stderr
    assert "nested too deeply" in result.stderr or "100 levels" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


# -- find_config on odd paths -------------------------------------------------------------


def test_an_explicit_config_path_through_a_loop_is_an_error(tmp_path: Path) -> None:
    os.symlink("a", tmp_path / "b")
    os.symlink("b", tmp_path / "a")
    with pytest.raises(ConfigError, match="is a symlink loop"):
        find_config("a", str(tmp_path))
    with pytest.raises(ConfigError, match="config file not found"):
        find_config("a/axis.config.json", str(tmp_path))


def test_only_json_too_small_to_pass_a_limit_skips_the_walk() -> None:
    from axis_eval.config._limits import MAX_DEPTH, MAX_VALUES, check_value, json_within_limits

    deepest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert json_within_limits(deepest)
    check_value(json.loads(deepest), "f.json", "scenario")  # as deep as allowed: accepted
    too_deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert not json_within_limits(too_deep)  # walked, and refused there
    with pytest.raises(ConfigError, match="nested"):
        check_value(json.loads(too_deep), "f.json", "scenario")
    assert not json_within_limits("[" + "1," * MAX_VALUES + "1]")  # many values: walked
