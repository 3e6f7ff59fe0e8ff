"""Finding and reading the config: every format, -c, several files, profiles."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from axis_eval.config import files as config_files
from axis_eval.config.load import apply_profile, deep_merge, find_config, load_config
from axis_eval.errors import EXIT_USAGE, ConfigError

MakeProject = Callable[..., Path]
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- discovery and formats -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("axis.config.json", '{"agents": ["codex"]}'),
        ("axis.config.yaml", "agents:\n  - codex\n"),
        ("axis.config.yml", "agents: [codex]\n"),
        ("axis.config.toml", 'agents = ["codex"]\n'),
    ],
)
def test_each_data_format_is_discovered_in_cwd(tmp_path: Path, name: str, text: str) -> None:
    write(tmp_path / name, text)
    loaded = load_config(cwd=str(tmp_path))
    assert Path(loaded.path) == (tmp_path / name).resolve()
    assert loaded.config_dir == str(tmp_path.resolve())
    assert [a.agent for a in loaded.config.agents] == ["codex"]
    assert loaded.warnings == []


@needs_node
def test_js_config_is_evaluated_with_node(tmp_path: Path) -> None:
    write(tmp_path / "axis.config.js", 'module.exports = { agents: ["goose"], name: "js" };\n')
    loaded = load_config(cwd=str(tmp_path))
    assert loaded.path.endswith("axis.config.js")
    assert loaded.config.name == "js"
    assert [a.agent for a in loaded.config.agents] == ["goose"]


@needs_node
def test_mjs_default_export_object(tmp_path: Path) -> None:
    write(tmp_path / "axis.config.mjs", 'export default { agents: ["kimi"] };\n')
    loaded = load_config(cwd=str(tmp_path))
    assert [a.agent for a in loaded.config.agents] == ["kimi"]


@needs_node
def test_mjs_default_export_function_receives_profile(tmp_path: Path) -> None:
    write(
        tmp_path / "axis.config.mjs",
        "export default async ({ profile }) => ({\n"
        '  agents: ["codex"],\n'
        '  name: "profile=" + String(profile),\n'
        "  profiles: { ci: {} },\n"
        "});\n",
    )
    assert load_config(cwd=str(tmp_path)).config.name == "profile=undefined"
    assert load_config(cwd=str(tmp_path), profile="ci").config.name == "profile=ci"


@needs_node
def test_js_that_throws_is_a_config_error(tmp_path: Path) -> None:
    write(tmp_path / "axis.config.mjs", 'throw new Error("boom from config");\n')
    with pytest.raises(ConfigError) as info:
        load_config(cwd=str(tmp_path))
    assert "Node failed to evaluate" in info.value.message
    assert "boom from config" in info.value.message
    assert info.value.exit_code == EXIT_USAGE


def test_js_without_node_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "axis.config.js", 'module.exports = { agents: ["codex"] };\n')
    monkeypatch.setattr(config_files.shutil, "which", lambda _name: None)
    with pytest.raises(ConfigError) as info:
        load_config(cwd=str(tmp_path))
    assert "needs Node.js" in info.value.message
    assert info.value.hint is not None and "JSON or YAML" in info.value.hint


@needs_node
@pytest.mark.parametrize("name", ["axis.config.ts", "axis.config.mts", "axis.config.cts"])
def test_typescript_config_is_probed_and_needs_the_loader(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found in cwd and handed to the TypeScript loader: here one that is not installed."""
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "no-cache"))
    monkeypatch.setenv("AXIS_TS_LOADER", "tsx")
    write(tmp_path / name, 'export default { agents: ["codex"] };\n')
    with pytest.raises(ConfigError) as info:
        load_config(cwd=str(tmp_path))
    assert info.value.message.startswith(f"{(tmp_path / name).resolve()}: running TypeScript")
    assert "axis agents install --typescript" in info.value.render()
    assert info.value.exit_code == EXIT_USAGE


@needs_node
def test_explicit_ts_config_needs_the_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "no-cache"))
    monkeypatch.setenv("AXIS_TS_LOADER", "tsx")
    ts = write(tmp_path / "conf" / "axis.config.ts", "export default {};\n")
    with pytest.raises(ConfigError, match="running TypeScript needs"):
        load_config(str(ts))


def test_ts_loses_to_a_supported_format(tmp_path: Path) -> None:
    write(tmp_path / "axis.config.ts", "export default {};\n")
    write(tmp_path / "axis.config.json", '{"agents": ["codex"]}')
    assert load_config(cwd=str(tmp_path)).path.endswith("axis.config.json")


def test_several_configs_first_wins_with_a_warning(tmp_path: Path) -> None:
    write(tmp_path / "axis.config.yaml", "agents: [gemini]\n")
    write(tmp_path / "axis.config.json", '{"agents": ["codex"]}')
    write(tmp_path / "axis.config.toml", 'agents = ["goose"]\n')
    loaded = load_config(cwd=str(tmp_path))
    assert loaded.path.endswith("axis.config.json")
    assert [a.agent for a in loaded.config.agents] == ["codex"]
    [warning] = loaded.warnings
    assert "using axis.config.json" in warning
    assert "axis.config.yaml" in warning and "axis.config.toml" in warning


def test_directory_given_to_c_is_probed_and_warns_about_several(tmp_path: Path) -> None:
    write(tmp_path / "proj" / "axis.config.yml", "agents: [gemini]\n")
    write(tmp_path / "proj" / "axis.config.toml", 'agents = ["goose"]\n')
    loaded = load_config(str(tmp_path / "proj"))
    assert loaded.path.endswith("axis.config.yml")
    assert any("also found axis.config.toml" in w for w in loaded.warnings)


def test_explicit_file_overrides_discovery_without_warning(tmp_path: Path) -> None:
    write(tmp_path / "axis.config.json", '{"agents": ["codex"]}')
    other = write(tmp_path / "axis.config.yaml", "agents: [gemini]\n")
    loaded = load_config(str(other), cwd=str(tmp_path))
    assert [a.agent for a in loaded.config.agents] == ["gemini"]
    assert loaded.warnings == []


def test_explicit_path_is_relative_to_cwd(tmp_path: Path) -> None:
    write(tmp_path / "sub" / "my.yaml", "agents: [codex]\n")
    loaded = load_config("sub/my.yaml", cwd=str(tmp_path))
    assert loaded.config_dir == str((tmp_path / "sub").resolve())


def test_missing_explicit_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        find_config("nope.json", str(tmp_path))


def test_no_config_in_folder_hints_at_init(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        find_config(None, str(tmp_path))
    assert "no axis.config.*" in info.value.message
    assert info.value.hint is not None and "axis init" in info.value.hint


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("axis.config.json", '{"agents": [', "invalid JSON"),
        ("axis.config.yaml", "agents: [codex\n", "invalid YAML"),
        ("axis.config.toml", "agents = [\n", "invalid TOML"),
    ],
)
def test_unparseable_config_names_the_file(
    tmp_path: Path, name: str, text: str, needle: str
) -> None:
    path = write(tmp_path / name, text)
    with pytest.raises(ConfigError) as info:
        load_config(cwd=str(tmp_path))
    assert needle in info.value.message
    assert str(path.resolve()) in info.value.message


def test_top_level_must_be_an_object(tmp_path: Path) -> None:
    write(tmp_path / "axis.config.json", '["codex"]')
    with pytest.raises(ConfigError) as info:
        load_config(cwd=str(tmp_path))
    assert "expected an object at the top level, found list" in info.value.render()


# -- profiles --------------------------------------------------------------------------


def test_deep_merge_merges_objects_and_replaces_lists() -> None:
    base = {"settings": {"concurrency": 3, "limits": {"run": {"tokens": 5}}}, "env": ["A"]}
    merged = deep_merge(base, {"settings": {"limits": {"run": {"time_minutes": 2}}}, "env": ["B"]})
    assert merged == {
        "settings": {"concurrency": 3, "limits": {"run": {"tokens": 5, "time_minutes": 2}}},
        "env": ["B"],
    }
    assert base["env"] == ["A"], "the base is not modified"


PROFILED = {
    "agents": ["claude-code"],
    "include": ["a/*"],
    "exclude": ["a/two"],
    "env": ["ONE"],
    "settings": {"concurrency": 4, "limits": {"scenario": {"time_minutes": 2}}},
    "profiles": {
        "nightly": {"settings": {"limits": {"scenario": {"tokens": 100}}}, "agents": ["codex"]},
        "everything": {"include": ["**"]},
        "no-excl": {"exclude": []},
    },
}


def test_profile_deep_merges_over_the_config(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(tmp_path, PROFILED)
    config = load_config(str(tmp_path), profile="nightly").config
    assert [a.agent for a in config.agents] == ["codex"], "lists are replaced"
    limit = config.settings.limits.scenario
    assert limit is not None and (limit.time_minutes, limit.tokens) == (2, 100)
    assert config.settings.concurrency == 4
    assert config.include == ["a/*"] and config.exclude == ["a/two"], "suite untouched"


def test_profile_replaces_include_and_exclude_as_a_pair(
    tmp_path: Path, make_project: MakeProject
) -> None:
    make_project(tmp_path, PROFILED)
    config = load_config(str(tmp_path), profile="everything").config
    assert config.include == ["**"]
    assert config.exclude is None, "exclude goes with include even though the profile omits it"
    config = load_config(str(tmp_path), profile="no-excl").config
    assert config.include is None and config.exclude == []


def test_no_profile_leaves_the_config_alone(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(tmp_path, PROFILED)
    loaded = load_config(str(tmp_path))
    assert loaded.profile is None
    assert [a.agent for a in loaded.config.agents] == ["claude-code"]


def test_unknown_profile_lists_the_defined_ones(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(tmp_path, PROFILED)
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path), profile="weekly")
    assert "unknown profile 'weekly'" in info.value.message
    assert info.value.hint == "profiles defined: everything, nightly, no-excl"
    assert info.value.exit_code == EXIT_USAGE


def test_profile_without_profiles_section(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(tmp_path, {"agents": ["codex"]})
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path), profile="ci")
    assert info.value.hint == "profiles defined: none"


def test_profile_must_be_an_object() -> None:
    with pytest.raises(ConfigError) as info:
        apply_profile({"agents": ["codex"], "profiles": {"ci": ["x"]}}, "ci", "f.json")
    assert "profiles.ci: expected an object, found list" in info.value.render()


def test_profile_values_are_validated_like_the_config(
    tmp_path: Path, make_project: MakeProject
) -> None:
    make_project(
        tmp_path, {"agents": ["codex"], "profiles": {"ci": {"settings": {"concurrency": 0}}}}
    )
    assert load_config(str(tmp_path)).config.settings.concurrency == 15
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path), profile="ci")
    assert "settings.concurrency: expected a number greater than 0, found 0" in info.value.render()


def test_unknown_key_in_an_unused_profile_warns(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(tmp_path, {"agents": ["codex"], "profiles": {"ci": {"agnets": ["x"]}}})
    warnings = load_config(str(tmp_path)).warnings
    assert warnings == ["axis.config.json: unknown key 'profiles.ci.agnets'"]
