"""The package's layering, as docs/architecture.md draws it, checked so it cannot rot.

- Stages are ordered bottom to top (``LAYERS``); a module imports only its own stage and the
  stages below it.
- File formats (``FORMATS``: pydantic models, no behaviour) are the pipeline's shared
  vocabulary: any stage may read one, and a format imports only formats, the foundation and
  ``config`` (the lowest stage).
- No two modules import each other, directly or round a longer loop (every import counts:
  inside functions and under ``TYPE_CHECKING`` too, and importing ``a.b.c`` runs ``a.b``).
- Only the process-control package starts processes; the task runner uses its public API.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src"
SRC = ROOT / "axis_eval"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("_types", "_util", "errors", "_version", "files", "redact"),  # the foundation: no stage
    ("config",),
    ("adapters",),  # below planning and execute: adapters describe, execute runs
    ("planning", "progress"),
    ("execute",),
    ("transcript",),
    ("scoring",),
    ("runs",),
    ("report",),
    ("export", "view"),  # read finished reports: other formats, the web app across runs
    ("pipeline", "schemas", "scaffold"),
    ("distributed",),  # an executor that needs the pipeline's adapter loading on its workers
    ("cli", "__main__", "__init__"),
)
"""Bottom to top. ``__init__`` is the package root (its public API, loaded lazily)."""

FORMATS = {
    "axis_eval.config.models",
    "axis_eval.config.scenario",
    "axis_eval.config.actions",
    "axis_eval.config.sandbox",
    "axis_eval.config.executor",
    "axis_eval.planning.models",
    "axis_eval.execute.models",
    "axis_eval.transcript.models",
    "axis_eval.scoring.models",
    "axis_eval.scoring.panel_models",
    "axis_eval.runs.baseline_models",
    "axis_eval.report.models",
    "axis_eval.report.judge_noise_models",
    "axis_eval.report.adaptive_models",
    "axis_eval.report.panel_models",
}
"""The file formats and the job's serializable spec and outcome."""

SPAWNERS = {"axis_eval.execute.process.spawning", "axis_eval._util.processes"}
"""The only modules that may import ``subprocess``."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    if node.level > 1:
        package = package[: -(node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def _nodes(path: Path) -> Iterator[ast.AST]:
    """The file's nodes; a package ``__init__``'s ``TYPE_CHECKING`` block is left out (the
    lazy public-API pattern: those names are imported on first use, by their own module)."""
    tree = ast.parse(path.read_text())
    if path.name == "__init__.py":
        tree.body = [n for n in tree.body if not _is_type_checking(n)]
    return ast.walk(tree)


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in (
        "TYPE_CHECKING",
        "typing.TYPE_CHECKING",
    )


@cache
def _imports(module: str) -> frozenset[str]:
    """Every module of ours that ``module`` imports, anywhere in its text."""
    path = _modules()[module]
    known = _modules()
    found: set[str] = set()
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path, node)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            if name in known:
                found.add(name)
                found.update(_parents(name))
    found.discard(module)
    return frozenset(found)


def _parents(name: str) -> Iterator[str]:
    """The packages importing ``name`` runs first (``a.b.c`` runs ``a.b``; each top-level
    root is kept lazy, as ``tests/test_startup.py`` checks, so it is left out)."""
    parts = name.split(".")
    return (".".join(parts[:i]) for i in range(2, len(parts)) if ".".join(parts[:i]) in _modules())


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _level(module: str) -> int:
    stage = _stage(module)
    for level, stages in enumerate(LAYERS):
        if stage in stages:
            return level
    raise AssertionError(f"{module}: stage {stage!r} is in no layer of LAYERS")


def _ours() -> Iterator[str]:
    return (m for m in _modules() if m.startswith("axis_eval"))


def _counts(dep: str) -> bool:
    """Whether an import of ``dep`` counts for layering: ours, and not a stage package's
    root (those import nothing: ``test_stage_packages_import_nothing_eagerly``)."""
    if not dep.startswith("axis_eval"):
        return False
    return not (dep.count(".") == 1 and _modules()[dep].name == "__init__.py")


def test_every_stage_is_placed() -> None:
    for module in _ours():
        _level(module)  # raises for a stage nobody placed


def test_no_stage_imports_a_stage_above_it() -> None:
    offenders: list[str] = []
    for module in _ours():
        for dep in _imports(module):
            if not _counts(dep) or dep in FORMATS:
                continue
            if _level(dep) > _level(module):
                offenders.append(f"{module} → {dep}")
    assert offenders == []


READS_FROM_ABOVE = {
    ("adapters", "axis_eval.planning.models"): "an adapter's input names the job's agent spec",
    ("adapters", "axis_eval.transcript.models"): "adapters build the run's transcript",
    ("execute", "axis_eval.transcript.models"): "a job's outcome carries its transcript",
    ("execute", "axis_eval.scoring.models"): "a job is scored while its workspace exists",
    ("progress", "axis_eval.scoring.models"): "the display shows a finished run's score",
    ("runs", "axis_eval.report.models"): "runs writes report.json, the report's format",
    ("runs", "axis_eval.report.judge_noise_models"): "re-judging writes a pair's judgeNoise",
    ("runs", "axis_eval.report.adaptive_models"): "adaptive repeats write a pair's adaptive",
    ("runs", "axis_eval.report.panel_models"): "the panel's agreement of a pair and the suite",
    ("scoring", "axis_eval.report.models"): "rescoring reads a saved run's entry",
}
"""Every format a stage reads from a stage above it, and why: a new one is a deliberate
change (add it here with its reason), never an accident."""


def test_formats_read_from_above_are_the_listed_ones() -> None:
    reads = {
        (_stage(module), dep)
        for module in _ours()
        for dep in _imports(module)
        if dep in FORMATS and _level(dep) > _level(module)
    }
    assert reads - READS_FROM_ABOVE.keys() == set()


def test_formats_import_only_formats_config_and_the_foundation() -> None:
    offenders = [
        f"{module} → {dep}"
        for module in FORMATS
        for dep in _imports(module)
        if _counts(dep) and dep not in FORMATS and _level(dep) > 1
    ]
    assert offenders == []


def test_the_shared_types_import_no_stage() -> None:
    assert {d for d in _imports("axis_eval._types") if d.startswith("axis_eval")} == set()


def test_no_import_cycles_between_modules() -> None:
    graph = {m: {d for d in _imports(m) if d in _modules()} for m in _modules()}
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append([*path[path.index(dep) :], dep])
            elif dep not in state:
                visit(dep, path)
        path.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert [" → ".join(c) for c in cycles] == []


def test_stage_packages_import_nothing_eagerly() -> None:
    # A stage's __init__ runs whenever any of its modules is imported: it may name its
    # public API lazily, but it imports none of its modules up front.
    for module, path in _modules().items():
        if path.name == "__init__.py" and module.count(".") == 1:
            assert {d for d in _imports(module) if d.startswith(module)} == set(), module


def test_only_the_process_package_imports_subprocess() -> None:
    offenders = [m for m in _ours() if "subprocess" in _stdlib_imports(m) and m not in SPAWNERS]
    assert offenders == []


def test_the_task_runner_reaches_no_private_name_of_axis_eval() -> None:
    offenders: list[str] = []
    for module, path in _modules().items():
        if not module.startswith("ax_task_runner"):
            continue
        text = path.read_text()
        if "sys.modules" in text:
            offenders.append(f"{module} uses sys.modules")
        for dep in _imports(module):
            if dep.startswith("axis_eval") and any(p.startswith("_") for p in dep.split(".")[1:]):
                offenders.append(f"{module} → {dep}")
    assert offenders == []


def test_the_model_server_imports_no_other_package() -> None:
    for module in _modules():
        if module.startswith("axis_model_server"):
            deps = {d for d in _imports(module) if not d.startswith("axis_model_server")}
            assert deps == set(), module


CLI_REACHES = {
    "axis_eval",  # the public API: the CLI is the library call
    "axis_eval.pipeline",
    "axis_eval.progress",
    "axis_eval.schemas",
    "axis_eval.adapters.install",
    "axis_eval.planning.select",
    "axis_eval.scoring.rescore",
    "axis_eval.runs.aggregate",
    "axis_eval.runs.baselines",
    "axis_eval.runs.rescored",
    "axis_eval.runs.store",
    "axis_eval.report.ci",
    "axis_eval.report.html",
    "axis_eval.report.render",
    "axis_eval.export.otel_send",
    "axis_eval.export.inspect_log",
    "axis_eval.view",  # `axis view`: the catalog, the server and the static export
}
"""What the CLI reaches besides the root: the views it renders and the stores it edits
(listed, so that a new reach into the engine is a deliberate change)."""


def test_cli_uses_the_public_api_and_a_listed_few_modules() -> None:
    reached = {
        dep
        for module in _ours()
        if module.startswith("axis_eval.cli")
        for dep in _imports(module)
        if _counts(dep) and not dep.startswith("axis_eval.cli") and dep not in FORMATS
        if _level(dep) > 0
    }
    assert reached - CLI_REACHES == set()


@cache
def _stdlib_imports(module: str) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(_modules()[module].read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return frozenset(names)
