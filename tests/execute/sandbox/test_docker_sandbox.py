"""The ``docker`` sandbox: a job in a container of the agent image, the runner as PID 1.

Jobs run in this process with a private dockerd (conftest.py): setup, a scripted agent
(a Python program in the config folder, run by the image's python3, its prompt on stdin),
the rubric's ``run`` check and teardown all go through the container's runner; artifacts
come back. Containers go on every exit path (the job's end, the run's end, a cancel, the
harness killed, the next run for what a killed one left). The tests at the top need no
daemon.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from adapters.native.helpers import TRAP_VARS, parent_env, read_report, shell_tape, write_project
from axis_eval.adapters import install
from axis_eval.adapters.base import (
    AdapterInput,
    AdapterResult,
    AgentAdapter,
    LinesMode,
    StreamContext,
    create_agent_adapter,
)
from axis_eval.config.actions import CopyAction, RunScriptAction
from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.config.scenario import ResolvedCheck, Scenario
from axis_eval.execute.job import JobContext, StopSignal, run_job
from axis_eval.execute.models import JobOutcome
from axis_eval.execute.process import ProcessSpec, new_run_token
from axis_eval.execute.sandbox import (
    JobSandbox,
    Sandboxes,
    SandboxUnavailable,
    containers,
    docker_sync,
)
from axis_eval.execute.sandbox.containers import (
    LABEL_JOB,
    LABEL_OWNER,
    LABEL_RUN,
    ContainerSpec,
    Owner,
    run_args,
)
from axis_eval.execute.sandbox.docker import DockerSandbox, DockerSandboxes
from axis_eval.execute.workspace import create_job_dirs
from axis_eval.planning.models import AgentSpec, JobSpec
from axis_eval.scoring.models import CheckVerdict
from axis_model_server import ScriptedModelServer, parse_tape

from .conftest import DATA_ROOT, AgentDocker, build_agents, unavailable

F = TypeVar("F", bound=Callable[..., Any])


def daemon_test(test: F) -> F:
    """A test that starts containers: slow, and on the xdist worker of the session's daemon
    (the image tests' group)."""
    for mark in (pytest.mark.slow, pytest.mark.xdist_group("docker"), pytest.mark.timeout(300)):
        test = mark(test)
    return test


AGENT = r"""
import json, os, sys
prompt = sys.stdin.read()
info = {"prompt": prompt, "pid": os.getpid(), "cwd": os.getcwd()}
info["prepared"] = open(os.path.join(os.environ["HOME"], "prepared.txt")).read()
for name in ("from-setup.txt", "input.txt"):
    info[name] = open(name).read() if os.path.exists(name) else None
axis = os.path.join(os.environ["AXIS_CONFIG_DIR"], ".axis")
info["axis"] = sorted(os.listdir(axis)) if os.path.isdir(axis) else None
info["proc"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
info["pid1"] = open("/proc/1/cmdline", "rb").read().replace(b"\0", b" ").decode()
info["env"] = sorted(os.environ)
try:
    open(os.path.join(os.environ["AXIS_CONFIG_DIR"], "written-by-agent"), "w")
    info["config_writable"] = True
except OSError:
    info["config_writable"] = False
with open("out.txt", "w") as f:
    f.write("made in the container\n")
os.makedirs("sub", exist_ok=True)
with open("sub/deep.txt", "w") as f:
    f.write("deep\n")
os.symlink("/etc/hostname", "link-out")
if os.path.exists("remove-me.txt"):
    os.unlink("remove-me.txt")
if os.path.islink("was-a-link"):
    os.unlink("was-a-link")
    os.mkdir("was-a-link")
    with open("was-a-link/inside.txt", "w") as f:
        f.write("inside\n")
print(json.dumps({"type": "info", "info": info}), flush=True)
if "sleep" in prompt:
    print(json.dumps({"type": "sleeping"}), flush=True)
    import time
    time.sleep(120)
print(json.dumps({"type": "result", "text": "done"}), flush=True)
"""


@dataclass
class Seen:
    """What the scripted agent printed."""

    info: dict[str, Any] = field(default_factory=dict)
    text: str | None = None


def _on_line(event: Any, ctx: StreamContext[Seen]) -> None:
    if isinstance(event, dict) and event.get("type") == "info":
        ctx.state.info = event["info"]
    elif isinstance(event, dict) and event.get("type") == "result":
        ctx.state.text = str(event["text"])


def scripted_adapter(project: Path, outside: Path | None = None) -> AgentAdapter[Seen]:
    """Runs ``<project>/agent.py`` with the image's python3; the prompt on stdin. Its
    ``prepare`` writes a file in HOME and two in the workspace (one the agent deletes, one
    a symlink to a host folder, which the agent replaces by a folder)."""

    def prepare(inp: AdapterInput) -> None:
        Path(inp.home, "prepared.txt").write_text("written by prepare\n")
        Path(inp.workspace, "remove-me.txt").write_text("the agent deletes this\n")
        if outside is not None:
            Path(inp.workspace, "was-a-link").symlink_to(outside)

    return create_agent_adapter(
        name="scripted",
        build_args=lambda inp: [],
        initial_state=Seen,
        stream=LinesMode(on_line=_on_line),
        get_result=lambda ctx: AdapterResult(ctx.state.text),
        resolve_command=lambda inp: ["python3", str(project / "agent.py")],
        prompt_via="stdin",
        prepare=prepare,
    )


class ChecksOnly:
    """The scorer seam with the real deterministic checks and no judge."""

    def __init__(self, run_token: str) -> None:
        from axis_eval.scoring.scorer import JudgeScorer

        self.scorer = JudgeScorer(
            judging=None,
            config_dir="/",
            use_cache=False,
            parent_env=dict(os.environ),
            run_token=run_token,
        )
        self.verdicts: list[CheckVerdict] = []

    async def run_checks(
        self, outcome: JobOutcome, workspace: Path, sandbox: JobSandbox | None = None
    ) -> list[CheckVerdict]:
        self.verdicts = await self.scorer.run_checks(outcome, workspace, sandbox)
        return self.verdicts

    async def score(self, outcome: JobOutcome, workspace: Path) -> None:
        return None


def make_project(tmp_path: Path, name: str = "project") -> Path:
    project = tmp_path / name
    (project / "fixtures").mkdir(parents=True)
    (project / "agent.py").write_text(AGENT)
    (project / "fixtures" / "input.txt").write_text("copied by setup\n")
    (project / ".axis" / "reports" / "old-run").mkdir(parents=True)
    (project / ".axis" / "reports" / "old-run" / "transcript.json").write_text("secret")
    return project


def job(
    number: int,
    project: Path,
    policy: SandboxPolicy,
    *,
    prompt: str = "hello from the prompt",
    setup: tuple[RunScriptAction | CopyAction, ...] = (),
    teardown: tuple[str, ...] = (),
    checks: tuple[tuple[str, str], ...] = (),
    artifacts: tuple[str, ...] = (),
    time_limit_s: float = 60,
) -> JobSpec:
    scenario = Scenario(
        key=f"s{number}",
        base_key=f"s{number}",
        name="S",
        prompt=prompt,
        judge=[ResolvedCheck(check=text, weight=1.0, run=run) for text, run in checks] or "j",
        setup=list(setup),
        teardown=[RunScriptAction(action="run_script", command=c) for c in teardown],
    )
    return JobSpec(
        number=number,
        scenario=scenario,
        agent=AgentSpec(name="a", adapter="scripted"),
        run_index=1,
        run_count=1,
        time_limit_s=time_limit_s,
        artifacts=list(artifacts),
        config_dir=str(project),
        sandbox=policy,
    )


def context(
    token: str,
    project: Path,
    tmp_path: Path,
    *,
    prestart: bool = False,
    scorer: ChecksOnly | None = None,
    outside: Path | None = None,
) -> JobContext:
    sandboxes = Sandboxes(token, hidden=[str(project / ".axis")])
    sandboxes._docker = DockerSandboxes(token, prestart=prestart)
    base = tmp_path / "jobs"
    base.mkdir(exist_ok=True)
    return JobContext(
        run_token=token,
        adapters={"scripted": scripted_adapter(project, outside)},
        parent_env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
        stop=StopSignal(),
        grace_s=0.5,
        tmp_base=str(base),
        scorer=scorer,
        sandboxes=sandboxes,
    )


def docker_policy(agent_docker: AgentDocker, **fields: Any) -> SandboxPolicy:
    return SandboxPolicy(mode="docker", image=agent_docker.image, **fields)


async def open_box(
    boxes: DockerSandboxes, policy: SandboxPolicy, project: Path, tmp_path: Path, n: int = 1
) -> tuple[DockerSandbox, Any]:
    base = tmp_path / "jobs"
    base.mkdir(exist_ok=True)
    dirs = create_job_dirs(str(base))
    box = await boxes.open(policy, dirs, f"{boxes.run_token}/{n}", str(project))
    assert isinstance(box, DockerSandbox)
    return box, dirs


async def run_in(box: JobSandbox, argv: list[str], cwd: str = "/") -> tuple[int, str]:
    proc = await box.spawn(ProcessSpec(argv, cwd, {"PATH": "/usr/bin:/bin"}, None))
    out = await proc.stdout.read()
    code = await proc.wait()
    await proc.stop(0)
    return code, out.decode()


# -- without a daemon -------------------------------------------------------------------


def test_run_args_carry_the_labels_limits_mounts_and_runner_flags() -> None:
    spec = ContainerSpec(
        image="my/agents:1",
        name="axis-t-1",
        shared_dir="/tmp/axis-guest-x/shared",
        labels={LABEL_RUN: "tok", LABEL_JOB: "tok/1"},
        network="none",
        memory_mb=512,
        pids=100,
        cpus=1.5,
        read_only=["/cfg, with a comma"],
        writable=["/cache"],
        hidden=["/cfg, with a comma/.axis"],
    )
    args = run_args(spec)
    joined = " ".join(args)
    assert args[:4] == ["run", "-d", "--pull", "never"]  # an image is never pulled
    assert "--label axis-eval.run=tok" in joined and "--label axis-eval.job=tok/1" in joined
    assert "--network none" in joined
    assert "--memory 512m --memory-swap 512m" in joined
    assert "--pids-limit 100" in joined and "--cpus 1.5" in joined
    assert "--init" not in args  # the runner is PID 1 and reaps
    mounts = [args[i + 1] for i, a in enumerate(args) if a == "--mount"]
    assert mounts == [
        "type=bind,source=/tmp/axis-guest-x/shared,target=/run/axis-guest",
        'type=bind,"source=/cfg, with a comma","target=/cfg, with a comma",readonly',
        "type=bind,source=/cache,target=/cache",
        'type=tmpfs,"target=/cfg, with a comma/.axis",tmpfs-size=1m',
    ]
    image = args.index("my/agents:1")
    assert args[image + 1 :] == [
        "--guest-services-only",
        "--unix-socket", "/run/axis-guest/guest.sock",
        "--workspace-root", "/run/axis-guest/ws",
        "--guest-env", "empty",
        "--no-confine-files",
    ]  # fmt: skip


def test_a_container_owner_is_gone_only_when_surely_dead() -> None:
    here = Owner.current()
    assert not here.gone(here)
    assert Owner.parse(here.label) == here
    dead = Owner(here.host, here.boot, 2**22 + 7, 1)  # beyond any pid
    assert dead.gone(here)
    assert Owner(here.host, "another-boot", here.pid, here.start).gone(here)
    assert Owner(here.host, here.boot, here.pid, here.start + 1).gone(here)  # pid reused
    assert not Owner("another-host", "b", 2**22 + 7, 1).gone(here)  # never judged
    assert Owner.parse("garbage") is None


def test_the_agent_image_keeps_only_clis_whose_engines_accept_its_node() -> None:
    accepts = build_agents.node_accepts
    node = (18, 20, 4)
    assert accepts(">=18.0.0", node) and accepts(">= 16", node) and accepts(None, node)
    assert accepts("^18.1 || >=20", node) and accepts("18.x", node) and accepts("*", node)
    assert accepts(">=20", node) is False and accepts(">=20.0.0 <22", node) is False
    assert accepts("^16", node) is False and accepts("~18.19", node) is False
    assert accepts("node-lts", node) is None  # unreadable: kept, with a note


def test_the_workspace_listing_is_read_safely() -> None:
    data = b"f 12 644 out.txt\0d 0 755 sub\0l 0 777 link\0f 3 600 we ird\nname\0f 1 6"
    entries = docker_sync._parse_listing(data)
    assert [(e.kind, e.size, e.mode, e.rel) for e in entries] == [
        ("f", 12, 0o644, "out.txt"),
        ("d", 0, 0o755, "sub"),
        ("l", 0, 0o777, "link"),
        ("f", 3, 0o600, "we ird\nname"),
    ]  # the cut-off last record is dropped
    assert docker_sync._safe_parts("a/../b") is None and docker_sync._safe_parts("a/b")


async def test_no_docker_cli_is_an_infrastructure_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    project = make_project(tmp_path)
    token = new_run_token()
    ctx = context(token, project, tmp_path)
    outcome = await run_job(job(1, project, SandboxPolicy(mode="docker")), ctx)
    assert (outcome.status, outcome.error_kind) == ("failed", "infrastructure")
    assert "docker CLI is not installed" in (outcome.error or "")
    assert outcome.sandbox is None
    assert ctx.sandboxes is not None
    await ctx.sandboxes.aclose()


async def test_no_daemon_is_an_infrastructure_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if containers.docker_binary() is None:
        from helpers.system_parts import not_run

        not_run("DOCKER SANDBOX TEST", "the docker CLI is missing (`make system-deps`)")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    short = Path(tempfile.mkdtemp(prefix="axt-", dir="/tmp"))  # socket paths stay short
    monkeypatch.setattr(tempfile, "tempdir", str(short))  # where its socket folder goes
    try:
        boxes = DockerSandboxes(new_run_token())
        dirs = create_job_dirs(str(tmp_path))
        with pytest.raises(SandboxUnavailable, match="no Docker daemon answers"):
            await boxes.open(SandboxPolicy(mode="docker"), dirs, "t/1", str(tmp_path))
        assert [list(p.iterdir()) for p in short.glob("axis-guest-*")] == [[]]
        await boxes.aclose()
        assert list(short.iterdir()) == []  # the run's folder went at its end
    finally:
        shutil.rmtree(short, ignore_errors=True)


# -- with the session's daemon ------------------------------------------------------------


@daemon_test
async def test_a_job_runs_setup_agent_checks_and_teardown_in_its_container(
    docker_sandbox: AgentDocker, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    token = new_run_token()
    checks = ChecksOnly(token)
    ctx = context(token, project, tmp_path, scorer=checks, outside=outside)
    spec = job(
        1,
        project,
        docker_policy(docker_sandbox),
        setup=(
            RunScriptAction(
                action="run_script",
                command="echo from-setup > from-setup.txt && echo setup-note >> $AXIS_OUTPUT",
            ),
            CopyAction(action="copy", match="fixtures/input.txt"),
        ),
        teardown=("test -f out.txt && echo teardown-saw-out >> $AXIS_OUTPUT",),
        checks=(("the agent wrote out.txt", "grep -q container out.txt"),),
        artifacts=("out.txt", "sub/*.txt", "link-out"),
    )
    try:
        outcome = await run_job(spec, ctx)
        assert docker_sandbox.labelled(f"{LABEL_JOB}={token}/1") == []  # gone with its job
    finally:
        assert ctx.sandboxes is not None
        await ctx.sandboxes.aclose()
    assert docker_sandbox.labelled(f"{LABEL_RUN}={token}") == []
    assert not Path(DockerSandboxes(token)._run_dir()).exists()  # the socket folders too

    assert outcome.status == "completed", (outcome.error, outcome.stderr)
    assert outcome.sandbox == "docker" and outcome.result == "done"
    assert "setup-note" in (outcome.setup_output or "")
    assert "teardown-saw-out" in (outcome.teardown_output or "")
    assert [v.score for v in checks.verdicts] == [10]  # the check ran in the container
    info = json.loads(next(line for line in outcome.raw_output if '"info"' in line))["info"]
    assert info["prompt"] == "hello from the prompt"  # on stdin
    assert info["prepared"] == "written by prepare\n"  # the adapter's file went in
    assert info["from-setup.txt"] == "from-setup\n" and info["input.txt"] == "copied by setup\n"
    assert info["cwd"] == outcome.workspace  # the job's folders at their host paths
    assert info["axis"] == []  # other runs' reports are hidden
    assert info["config_writable"] is False  # the config folder is read-only
    assert "/usr/local/bin/ax-task-runner" in info["pid1"]  # the runner is PID 1
    assert os.getpid() not in info["proc"] and max(info["proc"]) < 1000  # its own PIDs
    assert "AX_TASK_YAML" not in info["env"] and "AX_METADATA_URL" not in info["env"]
    # Artifacts came back; the agent's symlink did not.
    got = {a.path: a.data for a in outcome.artifacts}
    assert got == {"out.txt": b"made in the container\n", "sub/deep.txt": b"deep\n"}
    assert not (project / "written-by-agent").exists()
    assert list(outside.iterdir()) == []  # the host link the agent replaced was not followed


@daemon_test
async def test_the_workspace_comes_back_mirrored_and_bounded(
    docker_sandbox: AgentDocker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path)
    boxes = DockerSandboxes(new_run_token(), prestart=False)
    try:
        box, dirs = await open_box(boxes, docker_policy(docker_sandbox), project, tmp_path)
        Path(dirs.work_dir, "remove-me.txt").write_text("x")
        outside = tmp_path / "outside"
        outside.mkdir()
        Path(dirs.work_dir, "was-a-link").symlink_to(outside)
        await box.before_agent()
        script = (
            "rm remove-me.txt was-a-link && mkdir was-a-link && echo in > was-a-link/f "
            "&& for i in 1 2 3 4 5; do echo $i > n$i.txt; done && ln -s /etc esc"
        )
        code, _out = await run_in(box, ["/bin/sh", "-c", script], dirs.work_dir)
        assert code == 0
        # A job that replaces the runner's socket file does not cut the harness off (nor
        # point it elsewhere): the harness connects through its own hard link.
        swap = "rm /run/axis-guest/guest.sock && : > /run/axis-guest/guest.sock"
        assert (await run_in(box, ["/bin/sh", "-c", swap]))[0] == 0
        assert await run_in(box, ["echo", "still here"]) == (0, "still here\n")
        monkeypatch.setattr(docker_sync, "MAX_FILES", 3)
        box._mirror.notes.clear()
        await box.after_agent()
        host = sorted(p.relative_to(dirs.workspace).as_posix() for p in dirs.workspace.rglob("*"))
        assert len([p for p in host if p.startswith("n")]) <= 3
        assert "remove-me.txt" not in host and "esc" not in host, (host, box.notes)
        assert not Path(dirs.work_dir, "was-a-link").is_symlink()
        assert list(outside.iterdir()) == []
        assert any("more than the 3 files" in note for note in box.notes), box.notes
        await box.close()
        dirs.remove()
    finally:
        await boxes.aclose()


@daemon_test
async def test_a_container_that_cannot_start_is_an_infrastructure_failure_and_the_run_goes_on(
    docker_sandbox: AgentDocker, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    token = new_run_token()
    ctx = context(token, project, tmp_path)
    bad = SandboxPolicy(mode="docker", image="axis-eval/no-such-image:never")
    try:
        failed = await run_job(job(1, project, bad), ctx)
        ok = await run_job(job(2, project, docker_policy(docker_sandbox)), ctx)
    finally:
        assert ctx.sandboxes is not None
        await ctx.sandboxes.aclose()
    assert (failed.status, failed.error_kind) == ("failed", "infrastructure")
    assert "axis-eval/no-such-image:never" in (failed.error or "")
    assert "make build-agent-image" in (failed.error or "")
    assert ok.status == "completed" and ok.sandbox == "docker", ok.error
    assert docker_sandbox.labelled(f"{LABEL_RUN}={token}") == []


@daemon_test
async def test_a_run_cancelled_mid_job_leaves_no_container(
    docker_sandbox: AgentDocker, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    token = new_run_token()
    ctx = context(token, project, tmp_path, prestart=True)
    running = asyncio.ensure_future(
        run_job(job(1, project, docker_policy(docker_sandbox), prompt="sleep"), ctx)
    )
    try:
        deadline = time.monotonic() + 60
        while len(docker_sandbox.labelled(f"{LABEL_RUN}={token}")) < 2:  # the job's + a spare
            assert time.monotonic() < deadline and not running.done()
            await asyncio.sleep(0.2)
        ctx.stop.trigger("Run cancelled by SIGINT")
        outcome = await asyncio.wait_for(running, 30)
    finally:
        assert ctx.sandboxes is not None
        await ctx.sandboxes.aclose()
    assert outcome.status == "cancelled" and outcome.sandbox == "docker"
    assert docker_sandbox.labelled(f"{LABEL_RUN}={token}") == []


HARNESS = """
import asyncio, os, sys
from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.execute.sandbox.docker import DockerSandboxes
from axis_eval.execute.workspace import create_job_dirs

async def main():
    token, image, project = sys.argv[1:4]
    boxes = DockerSandboxes(token)
    box = await boxes.open(
        SandboxPolicy(mode="docker", image=image), create_job_dirs(), token + "/1", project
    )
    print(box.container_id, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


@daemon_test
async def test_a_killed_harness_leaves_no_container(
    docker_sandbox: AgentDocker, tmp_path: Path
) -> None:
    """SIGKILL: the watchdog removes the run's containers; and what a run killed with its
    watchdog left (a container whose owner is gone) goes at the next run's first job."""
    project = make_project(tmp_path)
    token = new_run_token()
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, token, docker_sandbox.image, str(project)],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert harness.stdout is not None
        cid = harness.stdout.readline().strip()
        assert cid and docker_sandbox.labelled(f"{LABEL_RUN}={token}")
    finally:
        harness.send_signal(signal.SIGKILL)
        harness.wait(30)
        if harness.stdout is not None:
            harness.stdout.close()
    run_dir = Path(DockerSandboxes(token)._run_dir())
    deadline = time.monotonic() + 30
    while docker_sandbox.labelled(f"{LABEL_RUN}={token}") or run_dir.exists():
        assert time.monotonic() < deadline, "the watchdog did not remove the containers"
        await asyncio.sleep(0.2)

    here = Owner.current()
    dead = Owner(here.host, here.boot, harness.pid, 1)
    stale = f"axis-stale-{uuid.uuid4().hex[:8]}"
    docker_sandbox(
        "create", "--name", stale, "--label", f"{LABEL_OWNER}={dead.label}",
        "--label", f"{LABEL_RUN}=old-run", docker_sandbox.image,
    )  # fmt: skip
    boxes = DockerSandboxes(new_run_token(), prestart=False)
    try:
        box, dirs = await open_box(boxes, docker_policy(docker_sandbox), project, tmp_path)
        await box.close()
        dirs.remove()
    finally:
        await boxes.aclose()  # waits for the sweep of what dead owners left
    assert docker_sandbox.labelled("axis-eval.run=old-run") == []


@daemon_test
async def test_network_none_limits_and_pid_1_reach_the_container(
    docker_sandbox: AgentDocker, tmp_path: Path
) -> None:
    project = make_project(tmp_path, "a project, with a comma")  # --mount's csv quoting
    boxes = DockerSandboxes(new_run_token(), prestart=False)
    probe = "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 3)"
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = str(server.getsockname()[1])
        try:
            limited = docker_policy(
                docker_sandbox, network="none", memory_mb=256, pids=64, cpus=0.5
            )
            box, dirs = await open_box(boxes, limited, project, tmp_path)
            inspect = json.loads(docker_sandbox("inspect", box.container_id).stdout)[0]
            host_config = inspect["HostConfig"]
            assert host_config["Memory"] == 256 * 2**20
            assert host_config["PidsLimit"] == 64 and host_config["NanoCpus"] == 5 * 10**8
            assert host_config["NetworkMode"] == "none"
            labels = inspect["Config"]["Labels"]
            assert labels[LABEL_RUN] == boxes.run_token
            assert labels[LABEL_JOB] == f"{boxes.run_token}/1"
            assert labels["axis-eval.owner-pid"] == str(os.getpid())
            mounts = {m["Destination"]: m for m in inspect["Mounts"]}
            assert mounts[str(project)]["RW"] is False
            code, out = await run_in(box, ["cat", "/proc/1/cmdline"])
            assert "ax-task-runner" in out
            # The daemon keeps its mounts to itself (its own mount namespace): a bwrap job
            # starting meanwhile re-mounts every host mount and fails on one that vanishes.
            shown = Path("/proc/self/mountinfo").read_text()
            assert str(DATA_ROOT) not in shown, "the private dockerd's mounts show on the host"
            code, _out = await run_in(box, ["python3", "-c", probe, port])
            assert code != 0  # no network
            await box.close()
            dirs.remove()
            box, dirs = await open_box(boxes, docker_policy(docker_sandbox), project, tmp_path, 2)
            code, _out = await run_in(box, ["python3", "-c", probe, port])
            assert code == 0  # the host's network
            await box.close()
            dirs.remove()
        finally:
            await boxes.aclose()


@daemon_test
async def test_the_next_job_of_a_policy_takes_a_container_started_ahead(
    docker_sandbox: AgentDocker, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    boxes = DockerSandboxes(new_run_token())
    policy = docker_policy(docker_sandbox)
    try:
        first, dirs = await open_box(boxes, policy, project, tmp_path)
        deadline = time.monotonic() + 60
        while len(docker_sandbox.labelled(f"{LABEL_RUN}={boxes.run_token}")) < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        spare_task = next(iter(boxes._spares.values()))
        await asyncio.wait_for(asyncio.shield(spare_task), 60)
        await first.close()
        dirs.remove()
        started = time.monotonic()
        second, dirs = await open_box(boxes, policy, project, tmp_path, 2)
        opened_in = time.monotonic() - started
        assert second.container_id == spare_task.result().id
        code, out = await run_in(second, ["echo", "warm"])
        assert (code, out) == (0, "warm\n")
        print(f"\nopen from a spare: {opened_in:.3f} s", file=sys.stderr)
        await second.close()
        dirs.remove()
    finally:
        await boxes.aclose()
    assert docker_sandbox.labelled(f"{LABEL_RUN}={boxes.run_token}") == []


# -- a real agent CLI ---------------------------------------------------------------------


@daemon_test
def test_claude_code_runs_a_shell_command_in_the_container(
    docker_sandbox: AgentDocker, tmp_path: Path
) -> None:
    """The pinned Claude Code CLI of the image, against the scripted model server on the
    host's loopback (network ``host``), through ``axis run`` (in a process of its own, as a
    user runs it: this test process is the private dockerd's parent, and a run's orphan
    reaping must not meet the daemon's container shims)."""
    folder = install.PINS["claude-code"].folder_name
    if folder not in docker_sandbox.agents:
        unavailable(f"the agent image holds no {folder} (`make agents` installs it)")
    final = "Done: out.txt now says hello."
    command = "echo hello > out.txt && cat out.txt && tr '\\0' ' ' < /proc/1/cmdline"
    with ScriptedModelServer(parse_tape(shell_tape(command, final))) as server:
        root = write_project(
            tmp_path / "project",
            {"agent": "claude-code", "endpoint": server.url},
            "Create out.txt containing hello",
            env=TRAP_VARS,
            artifacts=["out.txt"],
            settings={"sandbox": {"mode": "docker", "image": docker_sandbox.image}},
        )
        env = {
            **parent_env(tmp_path, proxy=server.url),
            "DOCKER_HOST": docker_sandbox.env["DOCKER_HOST"],
            "AXIS_AGENTS_DIR": os.environ["AXIS_AGENTS_DIR"],
            "NO_COLOR": "1",
        }
        done = subprocess.run(
            [sys.executable, "-m", "axis_eval", "run", "--no-score", "--grace-seconds", "1"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    [report_dir] = (root / ".axis" / "reports").iterdir()
    view = read_report(report_dir, done.returncode)
    run = view.run
    assert view.exit_code == 0, (run, done.stderr[-3000:])
    assert run["status"] == "completed" and run["sandbox"] == "docker", run
    assert run["result"] == final
    [artifact] = run["artifacts"]
    assert (view.report_dir / artifact["file"]).read_text() == "hello\n"
    [call] = view.tools
    assert call["name"] == "Bash" and call["output"].startswith("hello")
    assert "/usr/local/bin/ax-task-runner" in call["output"]  # PID 1 of its container
    assert server.connect_attempts == []
    assert run["agentVersion"] == install.PINS["claude-code"].version
