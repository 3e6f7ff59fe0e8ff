"""What a plain `axis run` loads: its fixed cost is mostly imports (docs/benchmarks.md), so
the modules only some runs need must stay out of one that does not need them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

# Loaded only by the runs (or commands) that use them.
NOT_ON_THE_RUN_PATH = (
    "anthropic",  # judging
    "openai",
    "httpx",
    "axis_eval.scoring.judge",
    "axis_eval.scoring.scorer",
    "axis_model_server",  # `model_server` in the config, or --tape
    "axis_eval.adapters.acp",  # ACP agents
    "axis_eval.runs.baseline_models",  # --compare-baseline
    "axis_eval.schemas",  # `axis schema`
    "yaml",  # YAML configs and scenarios
    "tomllib",  # TOML configs
    "difflib",  # "did you mean" for a config with a problem
    "mimetypes",  # collected artifacts
    "grpclib",  # the guest-service client (docker sandbox), loaded when it connects
)

RUN_AND_LIST_MODULES = """
import json, sys
from axis_eval.cli.main import cli
try:
    cli(["run", "--no-score"], prog_name="axis")
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def one_job_project(root: Path) -> None:
    """A project with one scenario and an agent that prints a line and exits."""
    (root / "scenarios").mkdir()
    agent = {"command": [sys.executable, "-c", "print('ok')"], "args": [], "output": "text"}
    config = {"scenarios": "./scenarios", "agents": ["instant"], "adapters": {"instant": agent}}
    (root / "axis.config.json").write_text(json.dumps(config))
    scenario = {"name": "s", "prompt": "say ok", "judge": [{"check": "ok", "weight": 1}]}
    (root / "scenarios" / "s.json").write_text(json.dumps(scenario))


def test_a_plain_run_loads_only_what_it_uses(tmp_path: Path) -> None:
    one_job_project(tmp_path)

    out = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST_MODULES],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, out.stderr
    (report,) = (tmp_path / ".axis" / "reports").iterdir()
    assert json.loads((report / "report.json").read_text())["summary"]["completed"] == 1

    modules = result["modules"]
    assert "axis_eval.pipeline" in modules  # the run really went through the pipeline
    loaded = [m for m in modules if m.startswith(NOT_ON_THE_RUN_PATH)]
    assert loaded == [], f"a plain run imported {loaded}: import them where they are used"


RUN_VIA_MAIN = """
import atexit, gc, json, sys
from axis_eval.cli import import_gc, main as cli_main
seen = {}
original = import_gc.imports_done
def spy():
    seen["during_imports"] = gc.get_threshold()
    original()
    seen["after_imports"] = gc.get_threshold()
    seen["frozen"] = gc.get_freeze_count()
import_gc.imports_done = spy
atexit.register(lambda: print(json.dumps({**seen, "before": BEFORE})))
sys.argv = ["axis", "run", "--no-score"]
cli_main.main()
"""


def test_the_console_script_collects_normally_once_a_run_has_imported(tmp_path: Path) -> None:
    """`main` raises the collector's threshold while modules load (no young-generation passes
    over import garbage), and a run gets the normal collector back, with what was imported
    frozen, before its first job."""
    import gc

    one_job_project(tmp_path)
    before = list(gc.get_threshold())
    code = RUN_VIA_MAIN.replace("BEFORE", repr(before))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["during_imports"][0] > 10 * before[0]
    assert seen["after_imports"] == before
    assert seen["frozen"] > 10_000  # the imported modules, classes and schemas


def test_no_model_on_the_run_path_uses_the_builtin_list_as_a_default_factory() -> None:
    """pydantic inspects each default factory's signature at class creation; for the builtin
    `list` that costs ~125 µs a field (axis_eval._util.defaults.empty_list: ~6 µs)."""
    import importlib
    import pkgutil

    from pydantic import BaseModel

    import axis_eval

    for info in pkgutil.walk_packages(axis_eval.__path__, "axis_eval."):
        if not info.name.endswith("__main__"):  # the console script: runs on import
            importlib.import_module(info.name)
    seen: list[type[BaseModel]] = []
    todo = list(BaseModel.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("axis_eval."):
            seen.append(cls)
    assert len(seen) > 50
    slow = [
        f"{cls.__module__}.{cls.__qualname__}.{name}"
        for cls in seen
        for name, field in cls.model_fields.items()
        if field.default_factory is list
    ]
    assert slow == []


def _model_classes(trees: dict[Path, ast.Module]) -> dict[Path, list[str]]:
    """Per module, the pydantic model classes it defines (bases followed across modules)."""
    models = {"BaseModel"}
    changed = True
    while changed:
        changed = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in models:
                    bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                    if bases & models:
                        models.add(node.name)
                        changed = True
    defined = {
        path: [n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name in models]
        for path, tree in trees.items()
    }
    return {path: names for path, names in defined.items() if names}


def test_modules_of_pydantic_models_evaluate_their_annotations_eagerly() -> None:
    """``from __future__ import annotations`` makes pydantic compile every field's annotation
    string (a ``typing.ForwardRef``) at import: ~3 % of a one-job run's instructions."""
    src = Path(__file__).resolve().parents[1] / "src" / "axis_eval"
    trees = {path: ast.parse(path.read_text()) for path in src.rglob("*.py")}
    lazy = [
        f"{path.relative_to(src)} ({', '.join(names)})"
        for path, names in _model_classes(trees).items()
        if any(
            isinstance(node, ast.ImportFrom) and node.module == "__future__"
            for node in trees[path].body
        )
    ]
    assert lazy == [], lazy
