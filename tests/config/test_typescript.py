"""``.ts`` configs and scenario modules run in Node, through Node's own type stripping where it
has it, else the pinned tsx loader (``axis_eval._util.node_ts``): the same ``{profile}``
argument, bounds and errors as ``.js``.

Real Node and the real pinned tsx (``make agents`` installs it into ``.cache/agents``); where
either is missing the tests skip loudly, and under ``CI=true`` they fail.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from axis_eval._util import node_ts
from axis_eval.adapters.install import agents_dir
from axis_eval.config import files as config_files
from axis_eval.config.discover import discover
from axis_eval.config.load import load_config
from axis_eval.errors import ConfigError
from helpers.system_parts import not_run

CONFIG = """\
import type { AxisConfig } from "@netlify/axis";
import greet from "./scenarios/greet.ts";

interface Options { profile?: string }

export default ({ profile }: Options): AxisConfig => {
  const agents: string[] = profile === "ci" ? ["codex"] : ["claude-code", "gemini"];
  return {
    agents,
    profiles: { ci: {} },
    scenarios: ["./scenarios", { key: "inline-" + (profile ?? "none"), ...greet }],
  } as AxisConfig;
};
"""

SCENARIO = """\
import type { ScenarioInput } from "@netlify/axis";

const prompt: string = "Say hello";
const scenario: ScenarioInput = { name: "greet", prompt, judge: "it said hello" };
export default scenario;
"""


@pytest.fixture(autouse=True)
def typescript() -> list[str]:
    """The extra Node argv this machine runs TypeScript with (skips loudly without)."""
    node = shutil.which("node")
    if node is None:
        not_run("TYPESCRIPT TEST", "node is not on PATH")
    try:
        return node_ts.typescript_node_args(node)
    except node_ts.TypeScriptUnavailable as exc:
        not_run("TYPESCRIPT TEST", f"{exc.message} ({exc.hint})")


def project(root: Path, config: str = CONFIG) -> Path:
    (root / "scenarios").mkdir(parents=True)
    (root / "axis.config.ts").write_text(config)
    (root / "scenarios" / "greet.ts").write_text(SCENARIO)
    return root


def test_the_helper_gives_node_flags_and_shares_the_agents_cache(typescript: list[str]) -> None:
    assert typescript in (list(node_ts.STRIP_FLAGS), ["--import", typescript[-1]])
    if typescript[0] == "--import":
        assert typescript[1].startswith("file://") and typescript[1].endswith("loader.mjs")
        assert node_ts.TSX_VERSION in typescript[1]
    assert node_ts.cache_dir() == agents_dir()


def test_a_ts_config_plans_jobs_per_profile(tmp_path: Path, axis_process) -> None:
    root = project(tmp_path / "p")
    ci = axis_process("run", "--dry-run", "--profile", "ci", "--json", cwd=root)
    assert ci.exit_code == 0, ci.stderr
    plain = axis_process("run", "--dry-run", "--json", cwd=root)
    assert plain.exit_code == 0, plain.stderr

    def jobs(text: str) -> list[tuple[str, str]]:
        data = json.loads(text)
        return sorted((j["scenarioKey"], j["agentName"]) for j in data["jobs"])

    assert jobs(ci.stdout) == [("greet", "codex"), ("inline-ci", "codex")]
    assert jobs(plain.stdout) == [
        ("greet", "claude-code"),
        ("greet", "gemini"),
        ("inline-none", "claude-code"),
        ("inline-none", "gemini"),
    ]


def test_ts_scenario_modules_are_discovered(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "scenarios" / "deep").mkdir(parents=True)
    (root / "axis.config.json").write_text('{"agents": ["codex"]}')
    (root / "scenarios" / "deep" / "greet.ts").write_text(SCENARIO)
    (root / "scenarios" / "types.d.ts").write_text("export type X = string;\n")
    (root / "scenarios" / "util.ts").write_text("export const helper = (n: number) => n;\n")
    loaded = load_config(str(root))
    found = discover(loaded.config, loaded.config_dir)
    assert [s.key for s in found.scenarios] == ["deep/greet"]
    assert found.scenarios[0].prompt == "Say hello"
    assert found.load_failures == [] and found.warnings == []


def test_a_ts_syntax_error_exits_2_naming_the_file(tmp_path: Path, axis_process) -> None:
    root = project(tmp_path / "p", "export default { agents: [\n")
    result = axis_process("run", "--dry-run", cwd=root)
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert f"Node failed to evaluate config file {root.resolve()}/axis.config.ts" in result.stderr


def test_a_broken_ts_scenario_is_a_load_failure_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "scenarios").mkdir(parents=True)
    (root / "axis.config.json").write_text('{"agents": ["codex"]}')
    (root / "scenarios" / "bad.ts").write_text('export default { prompt: "x" judge: 1 };\n')
    loaded = load_config(str(root))
    [failure] = discover(loaded.config, loaded.config_dir).load_failures
    assert failure.path == "scenarios/bad.ts"
    assert "Node failed to evaluate scenario file" in failure.error


def test_a_ts_config_is_bounded_in_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config_files, "NODE_TIMEOUT_S", 1.5)
    root = project(tmp_path / "p", "const spin = (): void => { while (true) {} };\nspin();\n")
    with pytest.raises(ConfigError, match=r"axis\.config\.ts with Node took longer than 1\.5s"):
        load_config(str(root))


def test_the_loader_missing_exits_2_with_the_install_hint(
    tmp_path: Path, axis_process, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p")
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv(node_ts.LOADER_ENV, "tsx")  # even where Node strips types itself
    result = axis_process("run", "--dry-run", cwd=root)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{root.resolve()}/axis.config.ts: running TypeScript needs" in result.stderr
    assert f"not installed in {tmp_path / 'empty-cache'}" in result.stderr
    assert "axis agents install --typescript" in result.stderr


def test_a_bad_loader_choice_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p")
    monkeypatch.setenv(node_ts.LOADER_ENV, "esbuild")
    with pytest.raises(ConfigError) as info:
        load_config(str(root))
    assert "AXIS_TS_LOADER='esbuild' is not a TypeScript loader" in info.value.message
    assert info.value.exit_code == 2


def test_node_only_is_an_error_where_node_cannot_strip_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = shutil.which("node")
    assert node is not None
    root = project(tmp_path / "p")
    monkeypatch.setenv(node_ts.LOADER_ENV, "node")
    if node_ts.node_strips_types(node):
        loaded = load_config(str(root))  # Node's own stripping reads the same files
        assert [a.agent for a in loaded.config.agents] == ["claude-code", "gemini"]
        (root / "axis.config.ts").write_text("enum E { A }\nexport default { agents: [E.A] };\n")
        with pytest.raises(ConfigError) as info:
            load_config(str(root))
        assert info.value.hint is not None and "AXIS_TS_LOADER=tsx" in info.value.hint
        return
    with pytest.raises(ConfigError) as info:
        load_config(str(root))
    assert "AXIS_TS_LOADER=node, but this Node" in info.value.message
    assert "cannot strip TypeScript types" in info.value.message


def test_agents_install_typescript_reports_the_cached_loader(axis_process) -> None:
    """With the pinned tsx already in the cache (the autouse fixture found it, or Node
    strips types), the command says where it is; npm runs only when it is missing."""
    if node_ts.tsx_loader() is None:
        not_run("TSX INSTALL TEST", f"{node_ts.TSX_SPEC} is not in {node_ts.cache_dir()}")
    result = axis_process("agents", "install", "--typescript")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"typescript ({node_ts.TSX_SPEC}): {node_ts.tsx_loader()}\n"
