"""Layering rules: models stay light, and only two modules start processes."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "axis_eval"
SPAWNERS = {"execute/process.py", "_util/processes.py"}
ENGINE = ("axis_eval.execute", "axis_eval.pipeline", "axis_eval.cli", "axis_eval.adapters")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_only_two_modules_import_subprocess() -> None:
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if "subprocess" in _imports(p) and str(p.relative_to(SRC)) not in SPAWNERS
    ]
    assert offenders == []


def test_models_import_no_engine_code() -> None:
    for path in SRC.rglob("models.py"):
        engine = [m for m in _imports(path) if m.startswith(ENGINE)]
        assert engine == [], f"{path.relative_to(SRC)} imports {engine}"


def test_cli_uses_the_public_api() -> None:
    imports = _imports(SRC / "cli" / "main.py")
    internal = {
        m
        for m in imports
        if m.startswith("axis_eval.")
        and m
        not in {
            "axis_eval._version",
            "axis_eval.cli.live",
            "axis_eval.cli._common",
            "axis_eval.cli.baseline",
            "axis_eval.cli.ci",
            "axis_eval.report.html",
            "axis_eval.schemas",
            "axis_eval.adapters.install",
            "axis_eval.runs.rescored",
            "axis_eval.runs.store",
            "axis_eval.scoring.rescore",
        }
        and not m.startswith("axis_eval.report.render")
        and not m.startswith("axis_eval.planning.select")
    }
    assert internal == set()
