"""What a plain `axis run` loads: its fixed cost is mostly imports (docs/benchmarks.md), so
the modules only some runs need must stay out of one that does not need them."""

from __future__ import annotations

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


def test_a_plain_run_loads_only_what_it_uses(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    agent = {"command": [sys.executable, "-c", "print('ok')"], "args": [], "output": "text"}
    config = {"scenarios": "./scenarios", "agents": ["instant"], "adapters": {"instant": agent}}
    (tmp_path / "axis.config.json").write_text(json.dumps(config))
    scenario = {"name": "s", "prompt": "say ok", "judge": [{"check": "ok", "weight": 1}]}
    (tmp_path / "scenarios" / "s.json").write_text(json.dumps(scenario))

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
