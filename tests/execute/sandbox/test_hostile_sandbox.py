"""A hostile agent in a real job, under each sandbox: what it reaches and what survives it.

The agent (tests/agents/escape_artist.py) reads the harness's and the sentinel's environ,
lists ``/proc``, reads the secrets planted in the parent's HOME, another job's workspace and
an earlier run's transcript, writes beside its job, into the parent's HOME, the config
folder, ``/tmp`` and beside the test's folder, starts ``env -i`` double-forked daemons and
200 sleeping children, and ignores SIGTERM; one such job exits, one is stopped by its time
limit. The jobs run in a harness process of their own (tests/agents/sandbox_harness.py) as
``axis run`` runs them, started with the planted secrets in its environment, so
``/proc/<harness>/environ`` holds them as a real harness's does.

Under a confining sandbox (``CONFINING``) every read and write outside the job is refused
and nothing survives; under ``none`` the tests assert what leaks, so ``docs/sandboxes.md``
stays true (nothing survives there either: the job marker and the orphan machinery end it).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from axis_eval.config.actions import RunScriptAction
from axis_eval.config.sandbox import NetworkMode, SandboxMode, SandboxPolicy
from axis_eval.config.scenario import ResolvedCheck, Scenario
from axis_eval.execute.models import JobOutcome
from axis_eval.execute.sandbox.bwrap_mounts import default_readable
from axis_eval.execute.sandbox.probe import bwrap_problem
from axis_eval.planning.models import AgentSpec, JobSpec
from helpers.processes import processes_with

from .conftest import AGENT_IMAGE

PY = sys.executable
TESTS = Path(__file__).resolve().parents[2]
HARNESS = TESTS / "agents" / "sandbox_harness.py"
OUTSIDE_TMP = TESTS.parent / ".cache" / "sandbox-tests"
"""Where the fake parent HOME goes: outside every folder bwrap always hides (``/tmp``,
``/root``, ``/home``...), as a CI runner's HOME may be (``/github/home``), so only the rule
that hides the harness's own HOME can keep it from the agent."""
SECRET_NAME = "AXIS_TEST_SECRET"

needs_bwrap = pytest.mark.skipif(
    bwrap_problem() is not None, reason=f"bubblewrap cannot confine here: {bwrap_problem()}"
)
DOCKER_MARKS = [pytest.mark.slow, pytest.mark.xdist_group("docker"), pytest.mark.timeout(300)]
"""A docker test runs on the xdist worker of the session's private dockerd (conftest.py),
which skips it loudly (fails under ``CI=true``) where Docker cannot run."""
SANDBOX_MODES = [
    pytest.param("none"),
    pytest.param("bwrap", marks=needs_bwrap),
    pytest.param("docker", marks=DOCKER_MARKS),
]
"""Every mode the hostile suite runs under."""
IMAGE_HOME = {".bashrc", ".profile"}
"""What the agent image's HOME (root's, or a user's from /etc/skel) holds."""
CONFINING = {"bwrap", "docker"}
"""Modes under which nothing outside the job may be reached."""
CONFINING_MODES = [param for param in SANDBOX_MODES if param.values[0] in CONFINING]


@dataclass
class World:
    """The host as the hostile agent finds it: planted secrets, another job, a project."""

    tmp_path: Path
    home: Path
    """The parent's (fake) HOME, holding ``.ssh/id_rsa``, ``.aws/credentials``, ``.claude.json``."""
    project: Path
    """The config folder; ``.axis/reports/old-run/transcript.json`` is an earlier run's."""
    tmp_base: Path
    """Where the jobs' folders go; ``axis-1-999`` there is another job's folder."""
    secrets: dict[str, str] = field(default_factory=dict)
    """What must never reach a confined agent: name → value."""
    written: list[Path] = field(default_factory=list)
    """Host paths a test's agents may have written (removed afterwards)."""

    @property
    def agents(self) -> Path:
        """The test agents, copied into the config folder: the one host folder a docker
        job's container mounts (read-only), so every mode runs the same copies."""
        return self.project / "agents"

    @property
    def reports(self) -> Path:
        return self.project / ".axis" / "reports"

    @property
    def other_work(self) -> Path:
        return self.tmp_base / "axis-1-999" / "work"

    @property
    def planted(self) -> dict[str, Path]:
        return {
            "id_rsa": self.home / ".ssh" / "id_rsa",
            "aws": self.home / ".aws" / "credentials",
            "claude": self.home / ".claude.json",
            "transcript": self.reports / "old-run" / "transcript.json",
            "other_job": self.other_work / "notes.txt",
        }

    def snapshot(self) -> dict[str, Any]:
        """What the host's planted folders hold (names and contents), to compare after."""
        out: dict[str, Any] = {}
        for root in (self.home, self.project, self.tmp_base):
            for path in sorted(root.rglob("*")):
                out[str(path)] = path.read_bytes() if path.is_file() else None
        return out


@contextlib.contextmanager
def planted_world(tmp_path: Path) -> Iterator[World]:
    """A world under ``tmp_path`` (its HOME outside ``/tmp``), removed afterwards."""
    OUTSIDE_TMP.mkdir(parents=True, exist_ok=True)
    outside = Path(tempfile.mkdtemp(prefix="w-", dir=OUTSIDE_TMP))
    w = World(tmp_path, outside / "home", tmp_path / "project", tmp_path / "jobs")
    w.secrets["environ"] = f"env-secret-{uuid.uuid4().hex}"
    for name, path in w.planted.items():
        w.secrets[name] = f"{name}-secret-{uuid.uuid4().hex}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(w.secrets[name])
    w.agents.mkdir()
    for script in ("escape_artist.py", "acp_escape.py"):
        shutil.copy(TESTS / "agents" / script, w.agents / script)
    try:
        yield w
    finally:
        for path in w.written:
            path.unlink(missing_ok=True)
        shutil.rmtree(outside, ignore_errors=True)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with planted_world(tmp_path) as w:
        yield w


@pytest.fixture(autouse=True)
def _docker_for_docker_mode(request: pytest.FixtureRequest) -> None:
    """A test run under ``docker`` gets the session's private daemon as its Docker."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("mode") == "docker":
        request.getfixturevalue("docker_sandbox")


def new_token() -> str:
    return f"escape-{uuid.uuid4().hex}"


def escape_job(
    number: int,
    world: World,
    token: str,
    mode: SandboxMode,
    plan: dict[str, Any],
    *,
    time_limit_s: float = 30,
    network: NetworkMode = "host",
    setup: tuple[str, ...] = (),
    teardown: tuple[str, ...] = (),
    checks: tuple[tuple[str, str], ...] = (),
    script: str = "escape_artist.py",
) -> JobSpec:
    """A job whose agent is the escape artist, following ``plan`` (``script``: its file,
    in ``world.agents`` or by absolute path); under docker, in the test agent image."""
    encoded = base64.b64encode(json.dumps(plan).encode()).decode()
    scenario = Scenario(
        key=f"s{number}",
        base_key=f"s{number}",
        name="S",
        prompt=f"{script} {token} @HARNESS@ @SENTINEL@ {encoded}",
        judge=[ResolvedCheck(check=text, weight=1.0, run=run) for text, run in checks] or "j",
        setup=[RunScriptAction(action="run_script", command=c) for c in setup],
        teardown=[RunScriptAction(action="run_script", command=c) for c in teardown],
    )
    return JobSpec(
        number=number,
        scenario=scenario,
        agent=AgentSpec(name="a", adapter="scripted"),
        run_index=1,
        run_count=1,
        time_limit_s=time_limit_s,
        config_dir=str(world.project),
        sandbox=SandboxPolicy(
            mode=mode, network=network, image=AGENT_IMAGE if mode == "docker" else None
        ),
    )


def run_harness(
    world: World,
    jobs: list[JobSpec],
    tokens: list[str],
    *,
    checks: bool = False,
    bare: bool = False,
    tmp_base: Path | None = None,
) -> dict[str, Any]:
    """Run ``jobs`` one after another in a harness process holding the planted secrets in
    its environment (``SECRET_NAME``) and the fake HOME; its result, checked for survivors
    after it has exited too (any found is killed, and the test fails). ``checks``: the
    rubric's ``run`` checks run through the scorer; ``bare``: without the run's subreaper
    and orphan reaper (tests/agents/sandbox_harness.py); ``tmp_base``: where the jobs'
    folders go (default ``world.tmp_base``)."""
    request = world.tmp_path / "request.json"
    result = world.tmp_path / "result.json"
    in_docker = {job.sandbox.mode for job in jobs} == {"docker"}
    request.write_text(
        json.dumps(
            {
                "python": "python3" if in_docker else PY,  # the image's, or this one
                "agents": str(world.agents),
                "jobs": [job.model_dump(mode="json") for job in jobs],
                "tokens": tokens,
                "tmp_base": str(tmp_base or world.tmp_base),
                "hidden": [str(world.project / ".axis")],
                "checks": checks,
                "bare": bare,
            }
        )
    )
    env = {**os.environ, SECRET_NAME: world.secrets["environ"], "HOME": str(world.home)}
    try:
        done = subprocess.run(
            [PY, str(HARNESS), str(request), str(result)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        left = [p for token in tokens for p in processes_with(token)]
        for pid, _ in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert done.returncode == 0, f"the harness failed:\n{done.stderr[-4000:]}"
    assert left == [], f"{len(left)} processes outlived the harness: {left[:5]}"
    data: dict[str, Any] = json.loads(result.read_text())
    data["outcomes"] = [JobOutcome.model_validate(o) for o in data["outcomes"]]
    return data


def findings(outcome: JobOutcome) -> list[dict[str, Any]]:
    """The escape artist's report lines, from the job's raw output."""
    out = []
    for line in outcome.raw_output:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "finding":
            out.append(event)
    return out


def by_target(found: list[dict[str, Any]], probe: str) -> dict[str, dict[str, Any]]:
    return {f["target"]: f for f in found if f["probe"] == probe}


def hostile_plan(world: World, token: str, *, hang: bool) -> tuple[dict[str, Any], list[Path]]:
    """What the escape artist tries, and the host paths its writes would create."""
    user_home = pwd.getpwuid(os.getuid()).pw_dir
    writes = {
        "$HOME/../../../" + token: world.tmp_base / token,  # beside its run's jobs folder
        f"{world.home}/{token}": world.home / token,
        f"{world.home}/../{token}": world.home.parent / token,
        f"{world.project}/{token}": world.project / token,
        f"/tmp/{token}": Path("/tmp") / token,
        f"{world.tmp_path.parent}/{token}": world.tmp_path.parent / token,
    }
    plan = {
        "reads": [str(path) for path in world.planted.values()],
        "lists": [
            str(world.reports),
            str(world.other_work),
            "$HOME/../../..",
            str(world.home),
            user_home,
        ],
        "writes": list(writes),
        "sleepers": 200,
        "daemons": 3,
        "hang": hang,
    }
    return plan, list(writes.values())


@pytest.mark.parametrize("mode", SANDBOX_MODES)
def test_a_hostile_agent_reaches_nothing_outside_and_nothing_it_started_survives(
    mode: SandboxMode, world: World
) -> None:
    """One job whose agent exits, one stopped by its time limit (SIGTERM ignored).

    A confining sandbox runs them without the run's subreaper and orphan reaper (the
    pipeline has both; the other tests here keep them): its namespace alone must end what
    the job started. Under ``none`` that machinery is what ends it.
    """
    exits, hangs = new_token(), new_token()
    plan_exits, targets = hostile_plan(world, exits, hang=False)
    plan_hangs, more_targets = hostile_plan(world, hangs, hang=True)
    world.written.extend(targets + more_targets)
    before = world.snapshot()
    jobs = [
        escape_job(1, world, exits, mode, plan_exits),
        escape_job(2, world, hangs, mode, plan_hangs, time_limit_s=2),
    ]
    result = run_harness(world, jobs, [exits, hangs], bare=mode in CONFINING)

    ended, stopped = result["outcomes"]
    assert ended.status == "completed" and ended.result == "done", ended.error
    assert stopped.error_kind == "timeout", stopped.error
    assert stopped.result == "done"  # it had done everything before it hung
    for outcome, left, token, paths in zip(
        result["outcomes"],
        result["survivors"],
        [exits, hangs],
        [targets, more_targets],
        strict=True,
    ):
        assert outcome.sandbox == mode
        assert left == [], f"{len(left)} survived their job under {mode}: {left[:5]}"
        found = findings(outcome)
        daemons = by_target(found, "daemons")["env -i"]
        assert daemons["ok"] and daemons["data"]["count"] == 3, daemons["data"]
        assert by_target(found, "sleepers")["fork"]["data"] == 200
        # The job's own environment is an allow-list under every mode.
        assert world.secrets["environ"] not in by_target(found, "own-env")["os.environ"]["data"]
        if mode in CONFINING:
            assert_confined(world, result, outcome, found, token, paths)
        else:
            assert_leaks(world, result, outcome, found, paths)
    if mode in CONFINING:
        assert world.snapshot() == before, "the host's files changed"


def assert_confined(
    world: World,
    result: dict[str, Any],
    outcome: JobOutcome,
    found: list[dict[str, Any]],
    token: str,
    paths: list[Path],
) -> None:
    text = outcome.model_dump_json()  # raw output, transcript, stderr, result, error
    leaked = [name for name, value in world.secrets.items() if value in text]
    assert leaked == [], f"secrets in the job's outcome: {leaked}"
    reads = by_target(found, "read")
    for pid in (result["harness"], result["sentinel"]):
        environ = reads[f"/proc/{pid}/environ"]
        assert not environ["ok"] or SECRET_NAME not in environ["data"], environ
    for path in world.planted.values():
        assert not reads[str(path)]["ok"], reads[str(path)]
    lists = by_target(found, "list")
    procs = [int(name) for name in lists["/proc"]["data"] if name.isdigit()]
    assert result["harness"] not in procs and result["sentinel"] not in procs
    assert 1 in procs  # its own PID namespace: bwrap, or the runner, is its init
    reports = lists[str(world.reports)]
    assert not reports["ok"] or reports["data"] == [], reports
    assert not lists[str(world.other_work)]["ok"]
    # Where the jobs' folders are made: only its own run's jobs folder is there, and in
    # that only its own job's folder.
    beside = lists["$HOME/../../.."]["data"]
    assert len(beside) == 1 and beside[0].startswith(f"axis-jobs-{result['harness']}-"), beside
    home = lists[str(world.home)]
    assert not home["ok"] or home["data"] == [], home
    # The user's real HOME (always hidden): only the folders a job must read show through
    # under bwrap; a container has the image's own HOME (Debian's skeleton files), no host's.
    user_home = pwd.getpwuid(os.getuid()).pw_dir
    allowed = (
        IMAGE_HOME
        if outcome.sandbox == "docker"
        else {
            Path(folder).relative_to(user_home).parts[0]
            for folder in default_readable(str(world.project), os.environ.get("PATH", ""))
            if Path(user_home) in Path(folder).parents
        }
    )
    seen = lists[user_home]
    assert not seen["ok"] or set(seen["data"]) <= allowed, (seen["data"], allowed)
    assert [path for path in paths if path.exists()] == [], "a write reached the host"
    for folder in (Path("/tmp"), world.tmp_path.parent, world.project, world.tmp_base):
        assert [name for name in os.listdir(folder) if token in name] == []


def assert_leaks(
    world: World,
    result: dict[str, Any],
    outcome: JobOutcome,
    found: list[dict[str, Any]],
    paths: list[Path],
) -> None:
    """What an agent under ``none`` reaches (docs/sandboxes.md lists it)."""
    text = outcome.model_dump_json()
    reads = by_target(found, "read")
    secret = f"{SECRET_NAME}={world.secrets['environ']}"
    for pid in (result["harness"], result["sentinel"]):
        assert secret in reads[f"/proc/{pid}/environ"]["data"]  # both environs are readable
    assert world.secrets["environ"] in text  # and the value sits in the job's raw output
    for name, path in world.planted.items():
        assert reads[str(path)]["ok"] and reads[str(path)]["data"] == world.secrets[name]
    lists = by_target(found, "list")
    procs = [int(name) for name in lists["/proc"]["data"] if name.isdigit()]
    assert result["harness"] in procs and result["sentinel"] in procs
    assert lists[str(world.reports)]["data"] == ["old-run"]
    assert lists[str(world.other_work)]["data"] == ["notes.txt"]
    assert "axis-1-999" in lists["$HOME/../../.."]["data"]
    assert ".ssh" in lists[str(world.home)]["data"]
    assert [path for path in paths if not path.exists()] == [], "every write lands on the host"


# -- network ----------------------------------------------------------------------------


@needs_bwrap
def test_network_none_cuts_a_bwrap_job_off_and_host_keeps_it_on(world: World) -> None:
    """A TCP server on the host's loopback: reachable from a bwrap job on the host's network,
    not from one with ``network: none``; ``none`` does not enforce ``network: none``."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        plan = {"connect": ["127.0.0.1", port]}
        runs: list[tuple[SandboxMode, NetworkMode]] = [
            ("bwrap", "host"),
            ("bwrap", "none"),
            ("none", "none"),
        ]
        tokens = [new_token() for _ in runs]
        jobs = [
            escape_job(n, world, token, mode, plan, network=network)
            for n, (token, (mode, network)) in enumerate(zip(tokens, runs, strict=True), 1)
        ]
        result = run_harness(world, jobs, tokens)
    target = f"127.0.0.1:{port}"
    connected = [by_target(findings(o), "connect")[target]["ok"] for o in result["outcomes"]]
    assert connected == [True, False, True]
    assert [o.status for o in result["outcomes"]] == ["completed"] * 3


# -- setup, teardown and checks ---------------------------------------------------------


@pytest.mark.parametrize("mode", SANDBOX_MODES)
def test_setup_teardown_and_checks_run_in_the_jobs_sandbox(mode: SandboxMode, world: World) -> None:
    """They share the agent's workspace, and under bwrap its rules: the planted secret in
    the parent's HOME is as hidden from them as from the agent."""
    stolen = world.planted["id_rsa"]
    shares, blocked = new_token(), new_token()
    plan = {"reads": ["from-setup.txt"], "writes": ["from-agent.txt"]}
    jobs = [
        escape_job(
            1,
            world,
            shares,
            mode,
            plan,
            setup=(f"echo {shares} > from-setup.txt",),
            teardown=(f"cat {stolen} > stolen.txt && cat stolen.txt >> $AXIS_OUTPUT",),
            checks=(
                (
                    "shares the workspace",
                    f"grep -q {shares} from-setup.txt && grep -q {shares} from-agent.txt",
                ),
                ("cannot read the parent's HOME", f"! cat {stolen}"),
            ),
        ),
        escape_job(2, world, blocked, mode, {}, setup=(f"cat {stolen}",)),
    ]
    result = run_harness(world, jobs, [shares, blocked], checks=True)
    first, second = result["outcomes"]
    assert first.status == "completed", first.error
    assert by_target(findings(first), "read")["from-setup.txt"]["data"] == f"{shares}\n"
    assert [v["score"] for v in result["checks"][0]] == ([10, 10] if mode in CONFINING else [10, 0])
    teardown = first.teardown_output or ""
    if mode in CONFINING:
        assert "Teardown failed" in teardown and world.secrets["id_rsa"] not in teardown
        assert second.status == "failed" and second.error_kind == "setup"
        assert world.secrets["id_rsa"] not in first.model_dump_json() + second.model_dump_json()
        assert world.secrets["id_rsa"] not in json.dumps(result["checks"])
    else:
        assert teardown == world.secrets["id_rsa"]  # the teardown read the parent's HOME
        assert second.status == "completed", second.error


# -- holes this suite found (closed in 994411e; each test failed before) -----------------
# One harness run per confining mode probes them all (a job each), its jobs' folders outside
# /tmp as a $TMPDIR elsewhere puts them; each test reads its own job's outcome.

KERNEL_SETTINGS = [
    "/proc/sys/kernel/core_pattern",  # "|program": the kernel runs it as root, on the host
    "/proc/sys/vm/drop_caches",
    "/proc/sys/fs/file-max",
]


@dataclass
class Probes:
    world: World
    outcomes: dict[str, JobOutcome]
    neighbour: Path
    """Another job's file, in the jobs' folder."""
    acp_outside: Path
    """Where the ACP agent has the harness write, outside its job."""


@pytest.fixture(scope="module", params=CONFINING_MODES)
def probes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Probes]:
    mode: SandboxMode = request.param
    with contextlib.ExitStack() as scope:
        if mode == "docker":  # the session's daemon (module scope: no monkeypatch fixture)
            docker = request.getfixturevalue("agent_docker")
            patch = scope.enter_context(pytest.MonkeyPatch.context())
            patch.setenv("DOCKER_HOST", docker.env["DOCKER_HOST"])
            patch.delenv("DOCKER_CONTEXT", raising=False)
        yield from _probe(mode, tmp_path_factory)


def _probe(mode: SandboxMode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probes]:
    with planted_world(tmp_path_factory.mktemp("probes")) as world:
        jobs_root = world.home.parent / "jobs"
        neighbour = jobs_root / "axis-1-999" / "work" / "notes.txt"
        neighbour.parent.mkdir(parents=True)
        neighbour.write_text(world.secrets["other_job"])
        names = ("neighbour", "acp", "symlink", "kernel", "home_script")
        tokens = {name: new_token() for name in names}
        # An agent configured as a script in the user's HOME (`python3 ~/agent.py`).
        home_script = world.home / "agent.py"
        shutil.copy(TESTS / "agents" / "escape_artist.py", home_script)
        acp_outside = world.home / tokens["acp"]
        acp_plan = {
            "write": [[str(acp_outside), "x"], ["$CWD/inside.txt", "x"]],
            "read": [str(world.planted["id_rsa"]), "$CWD/inside.txt"],
        }
        acp = escape_job(2, world, tokens["acp"], mode, {})
        acp = acp.model_copy(
            update={
                "agent": AgentSpec(name="a", adapter="acp"),
                "scenario": acp.scenario.model_copy(update={"prompt": json.dumps(acp_plan)}),
            }
        )
        link = [["$HOME/../teardown-notes.md", str(world.planted["aws"])]]
        jobs = {
            "neighbour": escape_job(
                1, world, tokens["neighbour"], mode,
                {"reads": [str(neighbour)], "lists": ["$HOME/../../.."]},
            ),
            "acp": acp,
            "symlink": escape_job(
                3, world, tokens["symlink"], mode, {"symlinks": link},
                teardown=("echo done >> $AXIS_OUTPUT",),
            ),
            "kernel": escape_job(
                4, world, tokens["kernel"], mode, {"open_for_write": KERNEL_SETTINGS}
            ),
            "home_script": escape_job(
                5, world, tokens["home_script"], mode,
                {"reads": [str(world.planted["id_rsa"]), str(world.planted["aws"])]},
                script=str(home_script),
            ),
        }  # fmt: skip
        if mode == "docker":  # a container holds no host HOME: a script there cannot run
            del jobs["home_script"], tokens["home_script"]
        result = run_harness(world, list(jobs.values()), list(tokens.values()), tmp_base=jobs_root)
        yield Probes(
            world, dict(zip(jobs, result["outcomes"], strict=True)), neighbour, acp_outside
        )


def test_other_jobs_folders_stay_hidden_wherever_the_jobs_folders_are(probes: Probes) -> None:
    """The jobs' folders go to the system temporary folder, which is ``$TMPDIR`` (a CI's
    scratch disk, a cluster's ``/scratch``...), not necessarily under ``/tmp``: the folder
    they are made in must be hidden, not only ``/tmp``."""
    outcome = probes.outcomes["neighbour"]
    assert outcome.status == "completed", outcome.error
    found = findings(outcome)
    assert not by_target(found, "read")[str(probes.neighbour)]["ok"]
    assert "axis-1-999" not in by_target(found, "list")["$HOME/../../.."]["data"]


def test_an_acp_agent_cannot_have_the_harness_read_or_write_outside_its_job(
    probes: Probes,
) -> None:
    """ACP agents ask the client to read and write files for them: the client must apply
    the job's rules to those paths, as the sandbox does to the agent's own calls."""
    outcome = probes.outcomes["acp"]
    assert outcome.status == "completed" and outcome.result is not None, outcome.error
    done = {(r["method"], r["path"]): r for r in json.loads(outcome.result)}
    # Its own workspace stays served: the capability is confined, not turned off.
    assert done["write", "$CWD/inside.txt"]["ok"] and done["read", "$CWD/inside.txt"]["ok"]
    assert not probes.acp_outside.exists(), "the harness wrote outside the job for the agent"
    assert not done["read", str(probes.world.planted["id_rsa"])]["ok"]
    assert probes.world.secrets["id_rsa"] not in outcome.model_dump_json()


def test_a_symlink_planted_for_the_teardown_notes_touches_no_host_file(probes: Probes) -> None:
    """The teardown's notes file lies in the job's folder, which the agent may write: the
    harness must not follow a link the agent left there to a host file."""
    outcome = probes.outcomes["symlink"]
    assert by_target(findings(outcome), "symlink")["$HOME/../teardown-notes.md"]["ok"]
    victim = probes.world.planted["aws"]
    assert victim.read_text() == probes.world.secrets["aws"], "a host file was truncated"


def test_kernel_settings_stay_read_only_in_the_sandbox(probes: Probes) -> None:
    """The agent opens kernel settings for writing (and closes them, writing nothing).

    Only a harness running as root tells: uid 0 keeps the owner's write access to
    ``/proc/sys`` without any capability (sysctl writes check the uid), so
    ``kernel.core_pattern`` (``|program``: run as root outside every namespace) was open
    to the agent; as another user the kernel refuses either way.
    """
    outcome = probes.outcomes["kernel"]
    assert outcome.status == "completed", outcome.error
    opened = by_target(findings(outcome), "open-w")
    assert [path for path in KERNEL_SETTINGS if opened[path]["ok"]] == []


@pytest.mark.parametrize(
    "probes", [p for p in CONFINING_MODES if p.values[0] == "bwrap"], indirect=True
)  # docker mounts no host HOME: the script is not in the container at all
def test_an_agent_script_in_the_parents_home_does_not_open_the_home(probes: Probes) -> None:
    """The script itself must be readable (the agent runs), the rest of HOME not."""
    outcome = probes.outcomes["home_script"]
    assert outcome.status == "completed", outcome.error
    reads = by_target(findings(outcome), "read")
    leaked = [name for name in ("id_rsa", "aws") if reads[str(probes.world.planted[name])]["ok"]]
    assert leaked == [], f"the parent's HOME is readable: {leaked}"
