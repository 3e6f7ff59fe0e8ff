"""What an agent sees: a built environment, its own HOME/TMPDIR, folders removed after."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from helpers.processes import read_json

from .helpers import (
    HOST_ONLY,
    auto_kind,
    base_environ,
    ndjson_adapter,
    observed,
    pids_file,
    run_api,
    runs_by_scenario,
    scenario,
    write_project,
)

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess

CANARY = "canary-value-that-must-not-leak-5f1e"


# The environment is built by the harness: the same allow-list under every sandbox (and
# under `none` it is all that keeps the parent's secrets from the agent).
@pytest.mark.parametrize("mode", ["auto", "none"])
async def test_environment_and_folders_of_a_job(tmp_path: Path, e2e_dir: Path, mode: str) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"envdump": ndjson_adapter("env")},
        scenarios={"look": scenario()},
        env=["E2E_DIR", "E2E_ALLOWED", "E2E_API_KEY"],
        artifacts=["env.json"],
        settings=observed(e2e_dir) if mode == "auto" else HOST_ONLY,
    )
    environ = base_environ(
        E2E_DIR=str(e2e_dir),
        E2E_ALLOWED="yes-allowed",
        E2E_API_KEY="sk-e2e-secret-0042",
        AXIS_CANARY_SECRET=CANARY,
        HOME="/root/parent-home",
        TMPDIR=str(tmp_path),
        XDG_CONFIG_HOME="/parent/xdg",
        CLAUDE_CONFIG_DIR="/parent/claude",
        PYTHONPATH="/parent/pythonpath",
    )
    outcome = await run_api(root, environ)
    manifest = read_json(outcome.report_dir / "report.json")
    run = runs_by_scenario(manifest)["look"]
    assert run["status"] == "completed", run
    assert run["sandbox"] == (auto_kind() if mode == "auto" else "none")

    dump = read_json(pids_file(e2e_dir, "look").with_name("env-look.json"))
    env: dict[str, str] = dump["env"]
    cwd = Path(dump["cwd"])
    job_root = cwd.parent

    # The parent's canary (and everything else not allowed by name) is absent.
    assert "AXIS_CANARY_SECRET" not in env
    assert all(CANARY not in v for v in env.values())
    for name in ("XDG_CONFIG_HOME", "PYTHONPATH"):
        assert name not in env
    # Names the config lists are passed through.
    assert env["E2E_ALLOWED"] == "yes-allowed"
    assert env["E2E_API_KEY"] == "sk-e2e-secret-0042"
    assert env["PATH"] == environ["PATH"]

    # HOME is a sibling of the workspace; TMPDIR is inside the job folder; the agent
    # config dirs live inside HOME (never the parent's).
    home = Path(env["HOME"])
    assert cwd.name == "work"
    assert home != cwd and home.parent == job_root
    assert not home.is_relative_to(cwd)
    tmpdir = Path(env["TMPDIR"])
    assert tmpdir.is_relative_to(job_root) and tmpdir != cwd
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"):
        assert Path(env[name]).is_relative_to(home), (name, env[name])

    assert env["AXIS_CONFIG_DIR"] == str(root)
    assert env["AXIS_SCENARIO"] == "look"
    assert env["AXIS_AGENT"] == "envdump"
    assert (env["AXIS_RUN_INDEX"], env["AXIS_RUN_COUNT"]) == ("1", "1")
    assert "AXIS_OUTPUT" not in env

    if run["sandbox"] == "bwrap":
        # bwrap's --chdir sets PWD: the workspace, nothing of the parent's.
        assert env.pop("PWD") == str(cwd)
    allowed = {
        *("PATH", "USER", "SHELL", "LANG", "TERM", "HOME", "TMPDIR"),
        *("E2E_DIR", "E2E_ALLOWED", "E2E_API_KEY"),
        *("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"),
        *("AXIS_CONFIG_DIR", "AXIS_SCENARIO", "AXIS_AGENT", "AXIS_AGENT_NAME"),
        *("AXIS_RUN_INDEX", "AXIS_RUN_COUNT", "AXIS_JOB_MARKER"),
        "LC_CTYPE",  # Python's own C-locale coercion may add it in the agent
    }
    assert set(env) <= allowed, sorted(set(env) - allowed)

    # The job folder is gone after the run.
    assert not job_root.exists()

    # The dump came back as an artifact; secret-looking passed values are redacted in it,
    # and nothing of the canary reached the report.
    art = next(a for a in run["artifacts"] if a["path"] == "env.json")
    assert "sk-e2e-secret-0042" not in art["content"]
    assert json.loads(art["content"])["env"]["E2E_API_KEY"] == "[REDACTED]"
    for path in outcome.report_dir.rglob("*.json"):
        assert CANARY not in path.read_text(), path


async def test_folders_jobs_left_empty_go_at_the_cap_and_at_the_runs_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axis_eval.execute import job as job_mod, workspace
    from axis_eval.pipeline import engine

    workspace.remove_released()  # what earlier tests' jobs released
    monkeypatch.setattr(workspace, "RELEASED_CAP", 2)
    made: list[Path] = []
    flushes: list[list[bool]] = []  # per removal: whether each waiting job folder was there

    def create(base: str | None = None) -> workspace.JobDirs:
        dirs = workspace.create_job_dirs(base)
        made.append(dirs.root)
        return dirs

    def remove() -> int:
        flushes.append([d.root.is_dir() for d in workspace._released])
        return workspace.remove_released()

    monkeypatch.setattr(job_mod, "create_job_dirs", create)
    monkeypatch.setattr(job_mod, "remove_released", remove)
    monkeypatch.setattr(engine, "remove_released", remove)
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick")},
        scenarios={f"s{n}": scenario() for n in range(5)},
    )
    outcome = await run_api(root, base_environ(TMPDIR=str(tmp_path)), concurrency=1)
    runs = runs_by_scenario(read_json(outcome.report_dir / "report.json"))
    assert [runs[f"s{n}"]["status"] for n in range(5)] == ["completed"] * 5
    # One job at a time: after the second and the fourth the cap removes both; the last one
    # waits for the run's end. Each waited whole until then.
    assert flushes == [[True, True], [True, True], [True]]
    assert len(made) == 5 and not any(folder.exists() for folder in made)


DEEP_AGENT = """
import json, os
with open("found.txt", "w") as f:
    f.write("an artifact beside the deep tree")
cur = os.open(".", os.O_RDONLY)
for _ in range(1500):
    os.mkdir("d", dir_fd=cur)
    cur = os.open("d", os.O_RDONLY, dir_fd=cur)
print(json.dumps({"type": "result", "text": "deep"}), flush=True)
"""

# Job `a` hands a descriptor of its workspace to job `b` (concurrent jobs share abstract
# Unix sockets under `network: host`) and ends with its folders empty; once `a` is over, `b`
# plants a tree deeper than Python's recursion in a's folder through the descriptor.
HANDOFF_AGENT = """
import array, json, os, socket, sys, time
name = b"\\0" + sys.argv[1].encode()
if os.environ["AXIS_SCENARIO"] == "a":
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen(1)
    peer, _ = server.accept()
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    peer.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    peer.recv(1)
    text = "handed over"
else:
    for _ in range(400):
        try:
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.connect(name)
            break
        except OSError:
            time.sleep(0.02)
    _, ancillary, _, _ = peer.recvmsg(1, socket.CMSG_SPACE(4))
    cur = array.array("i", ancillary[0][2][:4])[0]
    peer.send(b"k")
    peer.recv(1)  # end of file: job a's agent has exited
    time.sleep(0.5)  # and its job is over
    try:
        for _ in range(1500):
            os.mkdir("d", dir_fd=cur)
            cur = os.open("d", os.O_RDONLY, dir_fd=cur)
        text = "planted"
    except OSError as exc:
        text = f"refused: {exc}"
print(json.dumps({"type": "result", "text": text}), flush=True)
"""


def code_adapter(root: Path, code: str, *args: str) -> dict[str, object]:
    """A declarative adapter running ``code`` from a file in the config folder (which every
    sandbox lets its jobs read)."""
    script = root / "agent.py"
    root.mkdir(parents=True, exist_ok=True)
    script.write_text(code)
    return {"command": [sys.executable, str(script), *args], "output": "ndjson"}


def recording_job_roots(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    from axis_eval.execute import job as job_mod, workspace

    made: list[Path] = []

    def create(base: str | None = None) -> workspace.JobDirs:
        dirs = workspace.create_job_dirs(base)
        made.append(dirs.root)
        return dirs

    monkeypatch.setattr(job_mod, "create_job_dirs", create)
    return made


async def test_a_workspace_deeper_than_pythons_recursion_is_collected_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = recording_job_roots(monkeypatch)
    root = tmp_path / "proj"
    write_project(
        root,
        adapters={"deep": code_adapter(root, DEEP_AGENT)},
        scenarios={"s": scenario()},
        artifacts=["**/*.txt"],  # collecting them walks the whole tree
    )
    outcome = await run_api(root, base_environ(TMPDIR=str(tmp_path)))
    run = runs_by_scenario(read_json(outcome.report_dir / "report.json"))["s"]
    assert run["status"] == "completed", run
    assert [a["path"] for a in run["artifacts"]] == ["found.txt"]
    assert len(made) == 1 and not made[0].exists()


async def test_a_tree_planted_in_a_finished_jobs_folder_ends_with_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = recording_job_roots(monkeypatch)
    root = tmp_path / "proj"
    token = f"axis-test-handoff-{os.getpid()}-{time.monotonic_ns()}"
    write_project(
        root,
        adapters={"handoff": code_adapter(root, HANDOFF_AGENT, token)},
        scenarios={"a": scenario(), "b": scenario()},
    )
    outcome = await run_api(root, base_environ(TMPDIR=str(tmp_path)), concurrency=2)
    runs = runs_by_scenario(read_json(outcome.report_dir / "report.json"))
    assert runs["a"]["status"] == runs["b"]["status"] == "completed", runs
    transcript = read_json(outcome.report_dir / "scenarios" / "b" / "handoff" / "transcript.json")
    assert "planted" in json.dumps(transcript), transcript  # into a folder still there
    assert len(made) == 2 and not any(folder.exists() for folder in made)
