"""Finding scenarios: recursive walk, keys, skipped folders, markers, load failures."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axis_eval.config.discover import Discovery, discover
from axis_eval.config.load import load_config
from axis_eval.errors import ConfigError

MakeProject = Callable[..., Path]


def sc(name: str = "S", **fields: Any) -> dict[str, Any]:
    return {"name": name, "prompt": f"do {name}", "judge": "done", **fields}


def found_in(root: Path) -> Discovery:
    loaded = load_config(str(root))
    return discover(loaded.config, loaded.config_dir)


def keys(found: Discovery) -> list[str]:
    return [s.key for s in found.scenarios]


def test_json_and_yaml_found_recursively_keyed_by_relative_path(
    tmp_path: Path, make_project: MakeProject
) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"]},
        {
            "top.json": sc("top"),
            "cms/create-post.yaml": sc("post"),
            "cms/deep/edit.yml": sc("edit"),
        },
    )
    found = found_in(tmp_path)
    assert keys(found) == ["cms/create-post", "cms/deep/edit", "top"]
    assert found.load_failures == [] and found.warnings == []
    post = found.scenarios[0]
    assert post.source == str((tmp_path / "scenarios/cms/create-post.yaml").resolve())


def test_skipped_folders_are_not_walked(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"]},
        {
            "real.json": sc(),
            "fixtures/f.json": sc(),
            "cms/fixtures/f.json": sc(),
            "scenario-fixtures/g.json": sc(),
            "node_modules/pkg/n.json": sc(),
            ".hidden/h.json": sc(),
            "cms/.cache/c.json": sc(),
            "fixtures/broken.json": "{not json",
        },
    )
    found = found_in(tmp_path)
    assert keys(found) == ["real"]
    assert found.load_failures == []


def test_files_without_markers_are_not_scenarios(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"]},
        {
            "real.json": sc(),
            "package.json": {"name": "pkg", "version": "1.0.0"},
            "data.yaml": {"items": [1, 2]},
            "list.json": "[1, 2, 3]",
            "notes.md": "# not data",
        },
    )
    found = found_in(tmp_path)
    assert keys(found) == ["real"]
    assert found.load_failures == []


@pytest.mark.parametrize("marker", ["prompt", "judge", "rubric"])
def test_one_marker_makes_a_scenario_and_the_rest_is_a_load_failure(
    tmp_path: Path, make_project: MakeProject, marker: str
) -> None:
    make_project(tmp_path, {"agents": ["codex"]}, {"half.json": {"name": "h", marker: "x"}})
    [failure] = found_in(tmp_path).load_failures
    assert failure.path == "scenarios/half.json" and failure.key == "half"


@pytest.mark.parametrize(
    "body",
    [
        {"name": "n", "setup": [{"action": "run_script", "command": "x"}]},
        {"name": "n", "teardown": []},
        {"name": "n", "variants": [{"name": "a"}]},
        {"name": "n", "criteria": ["works"]},
    ],
)
def test_scenario_only_fields_without_prompt_is_a_load_failure(
    tmp_path: Path, make_project: MakeProject, body: dict[str, Any]
) -> None:
    make_project(tmp_path, {"agents": ["codex"]}, {"ok.json": sc(), "odd.json": body})
    found = found_in(tmp_path)
    assert keys(found) == ["ok"]
    [failure] = found.load_failures
    assert failure.path == "scenarios/odd.json"
    assert "prompt" in failure.error


def test_broken_scenarios_are_load_failures_and_others_still_load(
    tmp_path: Path, make_project: MakeProject
) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"]},
        {
            "good.json": sc(),
            "bad-json.json": '{"name": "x", "prompt": ',
            "bad-yaml.yaml": "name: [x\nprompt: p\n",
            "bad-field.json": sc(runs=4),
            "bad-action.json": sc(setup=[{"action": "run_scrpt", "command": "x"}]),
        },
    )
    found = found_in(tmp_path)
    assert keys(found) == ["good"]
    by_key = {f.key: f for f in found.load_failures}
    assert set(by_key) == {"bad-json", "bad-yaml", "bad-field", "bad-action"}
    assert "invalid JSON" in by_key["bad-json"].error
    assert "invalid YAML" in by_key["bad-yaml"].error
    assert "runs: expected an odd run count" in by_key["bad-field"].error
    assert "nearest legal: 3 or 5" in by_key["bad-field"].error
    assert "(did you mean 'run_script'?)" in by_key["bad-action"].error
    assert by_key["bad-field"].path == "scenarios/bad-field.json"


def test_declared_key_must_match_the_path(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"]},
        {"a/right.json": sc(key="a/right"), "a/wrong.json": sc(key="a/other")},
    )
    found = found_in(tmp_path)
    assert keys(found) == ["a/right"]
    [failure] = found.load_failures
    assert failure.error == "declared key 'a/other' does not match path-derived key 'a/wrong'"


def test_duplicate_keys_are_an_error(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(tmp_path, {"agents": ["codex"]}, {"a.json": sc(), "a.yaml": sc()})
    with pytest.raises(ConfigError, match="duplicate scenario key 'a'"):
        found_in(tmp_path)


def test_variant_key_colliding_with_a_file_is_an_error(
    tmp_path: Path, make_project: MakeProject
) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"]},
        {"a.json": sc(variants=[{"name": "x"}]), "a@x.json": sc()},
    )
    with pytest.raises(ConfigError) as info:
        found_in(tmp_path)
    assert "duplicate scenario key 'a@x'" in info.value.message
    assert info.value.hint is not None and "variant" in info.value.hint


def test_variants_are_expanded_and_sorted(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"]},
        {"b.json": sc(), "a.json": sc(variants=[{"name": "z"}, {"name": "m"}])},
    )
    assert keys(found_in(tmp_path)) == ["a@m", "a@z", "b"]


def test_single_file_source_keyed_by_stem(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"], "scenarios": ["./scenarios/deep/one.json"]},
        {"deep/one.json": sc(), "other.json": sc()},
    )
    assert keys(found_in(tmp_path)) == ["one"]


def test_single_file_source_without_markers_is_a_load_failure(
    tmp_path: Path, make_project: MakeProject
) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"], "scenarios": ["./scenarios/x.json"]},
        {"x.json": {"name": "x"}},
    )
    [failure] = found_in(tmp_path).load_failures
    assert failure.error == "not a scenario: no `prompt` or `judge`"


def test_several_sources_and_inline_scenarios(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(
        tmp_path,
        {
            "agents": ["codex"],
            "scenarios": ["./scenarios", "./more", {"key": "inline/x", **sc(), "runs": 3}],
        },
        {"a.json": sc()},
    )
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "b.json").write_text('{"name": "b", "prompt": "p", "judge": "j"}')
    found = found_in(tmp_path)
    assert keys(found) == ["a", "b", "inline/x"]
    assert found.scenarios[2].source is None and found.scenarios[2].runs == 3


def test_inline_scenario_needs_a_key(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(tmp_path, {"agents": ["codex"], "scenarios": [sc()]})
    with pytest.raises(ConfigError, match=r"inline scenario scenarios\[0\] needs a `key`"):
        found_in(tmp_path)


def test_missing_source_folder_is_an_error(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(tmp_path, {"agents": ["codex"], "scenarios": ["./evals"]})
    with pytest.raises(ConfigError) as info:
        found_in(tmp_path)
    assert "scenarios source not found" in info.value.message
    assert str(tmp_path.resolve() / "evals") in info.value.message


def test_typescript_scenarios_are_loaded_not_skipped(
    tmp_path: Path, make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``.ts`` file is a scenario module (tests/config/test_typescript.py loads them);
    without a TypeScript loader it is a load failure that says how to install one."""
    if shutil.which("node") is None:
        pytest.skip("needs Node.js")
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "no-cache"))
    monkeypatch.setenv("AXIS_TS_LOADER", "tsx")
    make_project(tmp_path, {"agents": ["codex"]}, {"a.json": sc(), "b.ts": "export default {}"})
    found = found_in(tmp_path)
    assert keys(found) == ["a"]
    assert found.warnings == []
    [failure] = found.load_failures
    assert failure.path == "scenarios/b.ts"
    assert "axis agents install --typescript" in failure.error


def test_keys_of_odd_file_names_are_what_pathlib_makes_them(
    tmp_path: Path, make_project: MakeProject
) -> None:
    # The walk names files with string operations; a key must stay what
    # ``path.relative_to(root).with_suffix("")`` gives, dots anywhere in the name included.
    names = ["a.b.json", "..x.json", "v1.2.yaml", "deep/er/c.JSON", "deep/.hidden.json"]
    make_project(tmp_path, {"agents": ["codex"]}, {"seed.json": sc()})
    folder = tmp_path / "scenarios"
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text('{"name": "n", "prompt": "p", "judge": "j"}')
    (folder / "not-data.json.txt").write_text('{"prompt": "p", "judge": "j"}')
    found = found_in(tmp_path)
    expected = sorted(["seed", *(Path(n).with_suffix("").as_posix() for n in names)])
    assert sorted(keys(found)) == expected
    assert not found.load_failures
