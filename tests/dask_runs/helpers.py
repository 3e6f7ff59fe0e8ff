"""Projects and report readings shared by the Dask tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.processes import processes_with as processes_with  # re-exported
from helpers.projects import only_report

MAKER = (
    'echo "$AXIS_CONFIG_DIR" > where.txt; cat seed.txt > out.txt; echo "$1" >> out.txt; '
    "echo \"made $(cat out.txt | tr '\\n' ' ')\"; "
    'test -n "$E2E_DIR" && echo "$AXIS_SCENARIO $$" >> "$E2E_DIR/launches.log"; '
    'sleep "$(cat "$E2E_DIR/sleep" 2>/dev/null || echo "${MAKER_SLEEP:-0}")"'
)
"""The test agent (text output, no interactions, so only the rubric's checks score it):
copies the fixture a setup ``copy`` put in its workspace, appends its prompt, records its
launch in ``$E2E_DIR/launches.log`` (the variable comes from the worker's environment),
then sleeps as long as ``$E2E_DIR/sleep`` says (else ``$MAKER_SLEEP``, else not)."""


def maker_project(
    root: Path,
    scenarios: int,
    *,
    runs: int = 1,
    e2e: Path | None = None,
    token: str = "",
    **settings: Any,
) -> Path:
    """A project of ``scenarios`` scenarios, each with a fixture copied by its setup, a
    setup script from the config folder, and three deterministic checks (one fails).
    ``e2e``: the folder the agents record their launches in (writable in their sandbox);
    ``token``: in every prompt, so in every agent's command line (to find survivors)."""
    if e2e is not None:
        settings = {"sandbox": {"writable": [str(e2e)]}, **settings}
    (root / "fixtures").mkdir(parents=True, exist_ok=True)
    (root / "fixtures" / "seed.txt").write_text("seed from the bundle\n")
    (root / "scripts").mkdir(exist_ok=True)
    (root / "scripts" / "prepare.sh").write_text('echo prepared > "$AXIS_WORKSPACE/prep.txt"\n')
    (root / "scenarios").mkdir(exist_ok=True)
    config = {
        "scenarios": "./scenarios",
        "agents": ["maker"],
        "env": ["E2E_DIR", "MAKER_SLEEP"],
        "adapters": {
            "maker": {
                "command": ["sh", "-c", MAKER, "maker"],
                "args": ["{prompt}"],
                "output": "text",
            }
        },
        "artifacts": ["where.txt"],
        "settings": {"runs": runs, "concurrency": 8, **settings},
    }
    (root / "axis.config.json").write_text(json.dumps(config, indent=2))
    for n in range(scenarios):
        scenario = {
            "name": f"scenario {n}",
            "prompt": f"number {n} {token}".strip(),
            "setup": [
                {"action": "copy", "match": "fixtures/seed.txt"},
                {"action": "run_script", "command": 'sh "$AXIS_CONFIG_DIR/scripts/prepare.sh"'},
            ],
            "judge": [
                {"check": "the seed came", "run": "grep -q 'seed from the bundle' out.txt"},
                {"check": "its number", "run": f"grep -q 'number {n}' out.txt && test -f prep.txt"},
                {"check": "a wrong number", "run": f"grep -q 'number {n + 1000}' out.txt"},
            ],
        }
        (root / "scenarios" / f"s{n:02d}.json").write_text(json.dumps(scenario))
    return root


def report(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((only_report(root) / "report.json").read_text())
    return data


def runs_by_job(manifest: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    """Every run entry by (scenario, run index)."""
    return {
        (pair["scenarioKey"], run["runIndex"]): run
        for pair in manifest["results"]
        for run in pair["runs"]
    }


def comparable(run: dict[str, Any]) -> dict[str, Any]:
    """What a run means, times, places and paths aside."""
    score = run.get("score") or {}
    return {
        "status": run["status"],
        "failed": run["failed"],
        "errorKind": run.get("errorKind"),
        "result": (run.get("result") or "").strip(),
        "checks": [(c["check"], c["score"]) for c in score.get("checks", [])],
        "goal": score.get("goalAchievement"),
        "axis": score.get("axisScore"),
    }


def free_address() -> str:
    """A ``tcp://127.0.0.1:PORT`` nothing listens on (a port just freed by this process)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"tcp://127.0.0.1:{port}"


def claude_project(root: Path, **settings: Any) -> Path:
    """One scenario for the built-in claude-code agent, with a tape (``tape.yaml``) the
    scripted model server answers it from: it writes hello.txt with its shell, then says so."""
    root.mkdir(parents=True, exist_ok=True)
    config = {
        "scenarios": "./scenarios",
        "agents": ["claude-code"],
        "artifacts": ["hello.txt"],
        "settings": {"runs": 1, **settings},
    }
    (root / "axis.config.json").write_text(json.dumps(config, indent=2))
    (root / "scenarios").mkdir(exist_ok=True)
    scenario = {"name": "hello", "prompt": "Create hello.txt saying Hello.", "judge": "it did"}
    (root / "scenarios" / "hello.json").write_text(json.dumps(scenario))
    tape = {
        "version": 1,
        "conversations": [
            {
                "name": "hello",
                "match": "hello.txt",
                "turns": [
                    {
                        "text": "I'll create hello.txt.",
                        "tool_calls": [
                            {"tool": "shell", "args": {"command": "printf Hello > hello.txt"}}
                        ],
                    },
                    {"text": "Created hello.txt."},
                ],
            }
        ],
    }
    (root / "tape.yaml").write_text(json.dumps(tape))  # JSON is YAML
    return root


def worker_address(log: Path) -> str:
    """A started worker's address, from its log (cheaper than asking the scheduler)."""
    import re

    found = re.search(r"Start worker at:\s+(\S+)", log.read_text())
    assert found, log.read_text()
    return found.group(1)
