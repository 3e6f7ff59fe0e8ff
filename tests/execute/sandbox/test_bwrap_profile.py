"""The bwrap profile's mount rules where they meet: a folder's rule holds below it until a
deeper rule says otherwise, and at one path the stronger rule wins (other jobs' folders
and other runs' reports are never given back by a `sandbox.writable` around them)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.execute.process import ProcessSpec
from axis_eval.execute.sandbox import probe
from axis_eval.execute.sandbox.bwrap import BwrapSandbox, bwrap_args
from axis_eval.execute.sandbox.bwrap_mounts import SCRATCH_MB, passwd_home
from axis_eval.execute.sandbox.probe import bwrap_problem, bwrap_sizes_tmpfs
from axis_eval.execute.workspace import create_job_dirs
from axis_eval.pipeline.checks import sandbox_preflight
from helpers.fake_bwrap import unsized_bwrap
from helpers.system_parts import not_run


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    problem = bwrap_problem()
    if problem is not None:
        not_run("BWRAP SANDBOX TEST", problem)


async def _sees(box: BwrapSandbox, cwd: str, script: str) -> str:
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    proc = await box.spawn(ProcessSpec(["/bin/sh", "-c", script], cwd, env, None))
    out = await proc.stdout.read()
    await proc.wait()
    await proc.stop(0.5)
    return out.decode()


async def test_a_writable_folder_around_hidden_ones_keeps_them_hidden(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    config = tmp_path / "project"
    (config / ".axis" / "reports" / "old").mkdir(parents=True)
    (config / ".axis" / "reports" / "old" / "transcript.json").write_text("secret")
    (config / "fixture.txt").write_text("fixture")
    neighbour = create_job_dirs(str(jobs))
    (neighbour.workspace / "theirs.txt").write_text("theirs")
    dirs = create_job_dirs(str(jobs))
    # Writable: the whole tmp_path, which holds the config's .axis and every job's folder.
    policy = SandboxPolicy(mode="bwrap", writable=[str(tmp_path)])
    box = BwrapSandbox(dirs, policy, config_dir=str(config), hidden=[str(config / ".axis")])
    try:
        seen = await _sees(
            box,
            dirs.work_dir,
            f"cat {config}/fixture.txt; echo; ls -A {config}/.axis | wc -l;"
            f" ls {jobs}; ls {dirs.root.parent};"
            f" echo made > {tmp_path}/made.txt; echo mine > mine.txt",
        )
    finally:
        await box.close()
    lines = seen.split()
    assert lines[0] == "fixture"  # the config folder reads
    assert lines[1] == "0"  # its .axis is empty, writable parent or not
    # Only the job's own folder shows where the jobs' folders are made (the run's jobs
    # folder, and in it only the job's own folder, not the neighbour's).
    assert lines[2:] == [dirs.root.parent.name, dirs.root.name]
    assert neighbour.root.parent == dirs.root.parent
    assert (tmp_path / "made.txt").read_text() == "made\n"  # the writable folder is written
    assert (dirs.workspace / "mine.txt").read_text() == "mine\n"


def test_mounts_go_shallowest_first_and_skip_what_is_visible(tmp_path: Path) -> None:
    dirs = create_job_dirs(str(tmp_path))
    home = tmp_path / "home"
    inside = home / "project"
    inside.mkdir(parents=True)
    outside = Path("/usr/share")
    args = bwrap_args(
        dirs,
        SandboxPolicy(),
        hidden=[],
        readable=[str(inside), str(outside)],
        parent_homes=[str(home)],
    )
    pairs = [(args[i], args[i + 1]) for i in range(len(args) - 1) if args[i].startswith("--")]
    mounted = [path for flag, path in pairs if flag in ("--tmpfs", "--ro-bind", "--bind")]
    assert mounted.index(str(home)) < mounted.index(str(inside))  # hidden, then given back
    assert str(outside) not in mounted  # already visible, read-only: no mount
    assert mounted[-1] == dirs.root_dir or mounted.index(dirs.root_dir) > mounted.index(
        str(tmp_path)
    )


def test_named_folders_are_looked_up_once_a_run_and_a_jobs_own_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axis_eval.execute.sandbox import bwrap_mounts

    looked_up: list[tuple[str, ...]] = []
    real = bwrap_mounts.named_folders

    def counting(argv: tuple[str, ...], guarded: tuple[str, ...] = ()) -> list[str]:
        looked_up.append(tuple(argv))
        return real(argv, guarded)

    monkeypatch.setattr(bwrap_mounts, "named_folders", counting)
    mounts = bwrap_mounts.BwrapMounts(hidden=[], readable=[])
    script = tmp_path / "tools" / "agent.py"
    script.parent.mkdir()
    script.write_text("print('ok')\n")
    common = {"config_dir": str(tmp_path), "env_path": os.defpath, "homes": []}
    (tmp_path / "jobs").mkdir()
    for _ in range(3):
        dirs = create_job_dirs(str(tmp_path / "jobs"))
        own = dirs.workspace / "task.sh"
        own.write_text("true\n")
        agent = mounts.options(dirs, SandboxPolicy(), argv=["/bin/sh", str(script)], **common)
        assert str(script.parent) in agent  # under the hidden /tmp: given back, read-only
        mounts.options(dirs, SandboxPolicy(), argv=["/bin/sh", str(own)], **common)
    assert looked_up.count(("/bin/sh", str(script))) == 1  # once for the run
    assert sum(1 for argv in looked_up if argv[-1].endswith("task.sh")) == 3  # each job's own


MEMORY_PROBE = r"""
import errno, json, os, sys
out = {}
for path in sys.argv[1:]:
    st = os.statvfs(path)
    entry = {"size": st.f_blocks * st.f_frsize}
    try:
        with open(os.path.join(path, "probe"), "wb") as handle:
            handle.write(b"x")
        entry["write"] = "ok"
    except OSError as exc:
        entry["write"] = errno.errorcode[exc.errno]
    out[path] = entry
for path in ("/tmp", "/dev/shm"):
    fd = os.open(os.path.join(path, "fill"), os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        os.posix_fallocate(fd, 0, 8 << 20)  # a little: fine
        try:
            os.posix_fallocate(fd, 0, (512 << 20) + (1 << 20))  # past the bound
            out[path]["past_bound"] = "ok"
        except OSError as exc:
            out[path]["past_bound"] = errno.errorcode[exc.errno]
    finally:
        os.close(fd)
        os.unlink(os.path.join(path, "fill"))
with open("/dev/null", "w") as null:
    out["/dev/null"] = {"write": "ok" if null.write("x") == 1 else "short"}
print(json.dumps(out))
"""


async def test_a_job_cannot_fill_the_memory_through_the_sandboxs_in_memory_folders(
    tmp_path: Path,
) -> None:
    """Every tmpfs the sandbox mounts is bounded in data: the scratch folders (/tmp,
    /var/tmp, /dev/shm and the user's home from passwd) hold at most SCRATCH_MB each, every
    other cover and /dev are read-only; the job's own folders and a `sandbox.writable`
    folder inside a read-only cover stay writable, on disk."""
    if not bwrap_sizes_tmpfs():
        not_run(
            "BWRAP TMPFS BOUND TEST",
            f"this bwrap cannot bound a tmpfs: {probe.bwrap_size_problem()}",
        )
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    shared = jobs / "shared"
    shared.mkdir()
    config = tmp_path / "project"
    (config / ".axis").mkdir(parents=True)
    dirs = create_job_dirs(str(jobs))
    policy = SandboxPolicy(mode="bwrap", writable=[str(shared)])
    box = BwrapSandbox(dirs, policy, config_dir=str(config), hidden=[str(config / ".axis")])
    own_home = passwd_home()
    assert own_home is not None
    scratch = ["/tmp", "/var/tmp", "/dev/shm", own_home]
    covers = [
        c
        for c in ["/home", "/root", "/run", str(jobs), str(config / ".axis"), "/dev"]
        if c != own_home
    ]
    own = [dirs.work_dir, dirs.home_dir, dirs.tmp_dir, str(shared)]
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    argv = [sys.executable, "-c", MEMORY_PROBE, *scratch, *covers, *own]
    try:
        proc = await box.spawn(ProcessSpec(argv, dirs.work_dir, env, None))
        out = await proc.stdout.read()
        assert await proc.wait() == 0, out
        await proc.stop(0.5)
    finally:
        await box.close()
    seen = json.loads(out)
    bound = SCRATCH_MB << 20
    for path in scratch:
        assert (seen[path]["size"], seen[path]["write"]) == (bound, "ok"), path
    for path in ("/tmp", "/dev/shm"):
        assert seen[path]["past_bound"] == "ENOSPC", path
    for path in covers:
        assert seen[path]["write"] == "EROFS", (path, seen[path])
        if path != "/dev":  # bwrap's /dev takes no --size; it is read-only all the same
            assert seen[path]["size"] <= 1 << 20, (path, seen[path])
    for path in own:
        assert seen[path]["write"] == "ok", path
        assert os.path.isfile(os.path.join(path, "probe"))  # on the host's disk
    assert seen["/dev/null"] == {"write": "ok"}


@pytest.mark.parametrize(
    "message",
    ["Unknown option --size", "The --size option is not permitted in setuid mode"],
)
async def test_a_bwrap_that_cannot_bound_a_tmpfs_still_confines_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, message: str
) -> None:
    fakes = unsized_bwrap(tmp_path / "bin", message)  # a FAKE: no such bwrap here
    monkeypatch.setenv("PATH", f"{fakes}{os.pathsep}{os.environ['PATH']}")
    probe._probe.cache_clear()
    try:
        assert probe.bwrap_problem() is None  # it confines
        assert not probe.bwrap_sizes_tmpfs()
        assert probe.bwrap_size_problem() == f"bwrap: {message}"
        plan = cast(Any, SimpleNamespace(jobs=[SimpleNamespace(sandbox=SandboxPolicy())]))
        warning = sandbox_preflight(plan)
        assert warning is not None and message in warning and "/dev/shm" in warning
        (tmp_path / "jobs").mkdir()
        dirs = create_job_dirs(str(tmp_path / "jobs"))
        args = bwrap_args(dirs, SandboxPolicy(), hidden=[], readable=[], parent_homes=[])
        assert "--size" not in args
        box = BwrapSandbox(dirs, SandboxPolicy(mode="bwrap"), config_dir=str(tmp_path))
        try:
            seen = await _sees(
                box,
                dirs.work_dir,
                "echo x > /tmp/w && echo tmp-ok; echo x > /run/w || echo run-refused;"
                " echo x > mine && echo own-ok",
            )
        finally:
            await box.close()
        assert seen.split() == ["tmp-ok", "run-refused", "own-ok"]  # the fake ran the job
    finally:
        monkeypatch.undo()
        probe._probe.cache_clear()
    assert probe.bwrap_sizes_tmpfs()  # the real one again


OUTSIDE_COVERS = Path(__file__).resolve().parents[3] / ".cache" / "sandbox-tests"
"""A folder in no cover (the project's cache), as a CI user's passwd home may be."""


def _mounts(args: list[str]) -> list[tuple[str, str]]:
    """(option, path) of each tmpfs, bind and remount, ``--size`` folded into its tmpfs."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        flag = args[i]
        if flag == "--size":
            out.append((f"--tmpfs {args[i + 1]}", args[i + 3]))
            i += 4
        elif flag in ("--tmpfs", "--remount-ro"):
            out.append((flag, args[i + 1]))
            i += 2
        elif flag in ("--bind", "--ro-bind", "--ro-bind-try"):
            out.append((flag, args[i + 2]))
            i += 3
        else:
            i += 1
    return out


@pytest.mark.parametrize("where", ["missing", "symlink", "outside"])
def test_the_passwd_home_is_hidden_behind_bounded_writable_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, where: str
) -> None:
    """Missing inside a hidden folder (`useradd -M`), a symlink (mounted at its target), or
    outside every hidden folder (Jenkins' /var/lib/jenkins while HOME is elsewhere): the
    job gets an empty writable scratch folder there, never the host's files."""
    from axis_eval.execute.sandbox import bwrap_mounts

    parent = tmp_path / "homes"
    parent.mkdir()
    written = parent / "user"  # as the password database has it
    target = written
    if where == "symlink":
        target = tmp_path / "elsewhere"
        target.mkdir()
        written.symlink_to(target)
    elif where == "outside":  # outside /tmp and every other cover: the project's cache
        written = target = OUTSIDE_COVERS / f"var-lib-jenkins-{os.getpid()}-{tmp_path.name}"
        written.mkdir(parents=True)
        request.addfinalizer(written.rmdir)
    monkeypatch.setattr(bwrap_mounts, "passwd_home", lambda: str(written))
    (tmp_path / "jobs").mkdir()
    dirs = create_job_dirs(str(tmp_path / "jobs"))
    args = bwrap_args(dirs, SandboxPolicy(), hidden=[], readable=[], parent_homes=[str(parent)])
    mounts = _mounts(args)
    scratch = f"--tmpfs {SCRATCH_MB << 20}"
    assert (scratch, str(target)) in mounts
    assert ("--remount-ro", str(target)) not in mounts
    assert ("--remount-ro", str(parent)) in mounts  # the cover around it stays read-only
    if where == "missing":  # made inside the read-only cover, before it is sealed
        assert mounts.index((scratch, str(target))) > mounts.index(
            (f"--tmpfs {1 << 20}", str(parent))
        )


@pytest.mark.parametrize(
    "home", ["/dev", "/etc", "/var", "/", "/nonexistent", "jobs", "a file", "/usr/sbin"]
)
def test_a_passwd_home_that_is_a_system_folder_or_cannot_be_made_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: str
) -> None:
    from axis_eval.execute.sandbox import bwrap_mounts

    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (tmp_path / "a file").write_text("not a folder")
    written = str(tmp_path / home) if home in ("jobs", "a file") else home
    monkeypatch.setattr(bwrap_mounts, "passwd_home", lambda: written)
    dirs = create_job_dirs(str(jobs))
    mounts = _mounts(bwrap_args(dirs, SandboxPolicy(), hidden=[], readable=[], parent_homes=[]))
    assert (f"--tmpfs {SCRATCH_MB << 20}", written) not in mounts
    if home == "jobs":  # other jobs' folders: still covered, read-only
        assert ("--remount-ro", written) in mounts
    else:
        assert not [m for m in mounts if m[1] == written and m[0].startswith("--tmpfs")]


def test_a_passwd_home_through_a_symlinked_folder_is_mounted_where_bwrap_can_make_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """sshd's /var/run/sshd: /var/run is a link to /run on most systems; bwrap, mounting
    at the path as written, failed every command (`Can't mkdir /var/run/sshd`)."""
    from axis_eval.execute.sandbox import bwrap_mounts

    if os.path.realpath("/var/run") != "/run" or os.path.lexists("/run/axis-test-sshd"):
        pytest.skip("this machine's /var/run is not a link to /run")
    monkeypatch.setattr(bwrap_mounts, "passwd_home", lambda: "/var/run/axis-test-sshd")
    (tmp_path / "jobs").mkdir()
    dirs = create_job_dirs(str(tmp_path / "jobs"))
    mounts = _mounts(bwrap_args(dirs, SandboxPolicy(), hidden=[], readable=[], parent_homes=[]))
    assert (f"--tmpfs {SCRATCH_MB << 20}", "/run/axis-test-sshd") in mounts


async def test_a_job_writes_its_passwd_home_and_cannot_read_what_is_there_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The passwd home of a user whose HOME is elsewhere: writable scratch inside (Maven's
    ~/.m2), its host files unseen, even when a command names a file in it (that file alone
    is given)."""
    from axis_eval.execute.sandbox import bwrap_mounts

    if not bwrap_sizes_tmpfs():
        not_run("BWRAP TMPFS BOUND TEST", f"no --size: {probe.bwrap_size_problem()}")
    parent = tmp_path / "homes"
    home = parent / "user"
    home.mkdir(parents=True)
    (home / "id_rsa").write_text("SECRET")
    (home / "agent.sh").write_text(f"cat {home}/id_rsa 2>/dev/null || echo hidden; ls -A {home}\n")
    monkeypatch.setattr(bwrap_mounts, "passwd_home", lambda: str(home))
    (tmp_path / "jobs").mkdir()
    dirs = create_job_dirs(str(tmp_path / "jobs"))
    policy = SandboxPolicy(mode="bwrap")
    box = BwrapSandbox(dirs, policy, config_dir=str(tmp_path / "jobs"), parent_home=str(parent))
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    outs = []
    try:
        for argv in (
            ["/bin/sh", "-c", f"mkdir -p {home}/.m2/repository && echo made; cat {home}/id_rsa"],
            ["/bin/sh", str(home / "agent.sh")],
        ):
            proc = await box.spawn(ProcessSpec(argv, dirs.work_dir, env, None))
            outs.append((await proc.stdout.read()).decode().split())
            await proc.wait()
            await proc.stop(0.5)
    finally:
        await box.close()
    assert outs[0] == ["made"]  # written, and the host's id_rsa is not there
    assert outs[1] == ["hidden", "agent.sh"]  # the named file alone, not its folder
    assert not (home / ".m2").exists()  # the sandbox's own folder, not the host's


@pytest.mark.parametrize("home", ["/var/run/axis-test-sshd", "/nonexistent", "/dev"])
async def test_a_job_starts_whatever_its_passwd_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: str
) -> None:
    """A home bwrap could not mount at (missing outside any cover, through a symlinked
    folder) once failed every command of every job; a system folder stays usable."""
    from axis_eval.execute.sandbox import bwrap_mounts

    monkeypatch.setattr(bwrap_mounts, "passwd_home", lambda: home)
    (tmp_path / "jobs").mkdir()
    dirs = create_job_dirs(str(tmp_path / "jobs"))
    # nobody's HOME is its passwd home, /nonexistent: a parent HOME that is not there
    parent = home if home == "/nonexistent" else None
    box = BwrapSandbox(
        dirs, SandboxPolicy(mode="bwrap"), config_dir=str(tmp_path), parent_home=parent
    )
    writes = home == "/var/run/axis-test-sshd" and os.path.realpath("/var/run") == "/run"
    script = f"mkdir -p {home}/.m2 && echo made; echo x > /dev/null && echo started"
    try:
        seen = await _sees(box, dirs.work_dir, script)
    finally:
        await box.close()
    assert seen.split()[-1] == "started", seen
    assert ("made" in seen.split()) == writes
    assert not os.path.exists(f"{home}/.m2")  # nothing of it on the host


async def test_a_passwd_home_linked_from_a_hidden_folder_is_written_at_the_path_tools_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/home/u -> /data/home/u (NFS homes): Maven opens /home/u/.m2, inside the read-only
    /home cover; the link is made there again, to the scratch folder."""
    from axis_eval.execute.sandbox import bwrap_mounts

    parent = tmp_path / "homes"
    parent.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    (data / "id_rsa").write_text("SECRET")
    written = parent / "user"
    written.symlink_to(data)
    monkeypatch.setattr(bwrap_mounts, "passwd_home", lambda: str(written))
    (tmp_path / "jobs").mkdir()
    dirs = create_job_dirs(str(tmp_path / "jobs"))
    args = bwrap_args(dirs, SandboxPolicy(), hidden=[], readable=[], parent_homes=[str(parent)])
    at = args.index("--symlink")
    assert args[at + 1 : at + 3] == [str(data), str(written)]
    assert at < args.index("--remount-ro")  # made before the cover is sealed
    project = tmp_path / "project"  # the config folder: given back, so not the home's
    project.mkdir()
    box = BwrapSandbox(
        dirs, SandboxPolicy(mode="bwrap"), config_dir=str(project), parent_home=str(parent)
    )
    script = f"mkdir -p {written}/.m2 && echo made; cat {written}/id_rsa 2>/dev/null || echo hidden"
    try:
        seen = await _sees(box, dirs.work_dir, script)
    finally:
        await box.close()
    assert seen.split() == ["made", "hidden"]
    assert not (data / ".m2").exists()


def test_a_passwd_home_inside_a_folder_given_back_is_left_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A home inside the venv or a toolchain (a Jenkins home holding ~/tools/node on PATH):
    covering it would hide part of what the job runs."""
    from axis_eval.execute.sandbox import bwrap_mounts

    tools = tmp_path / "tools"
    (tools / "lib").mkdir(parents=True)
    monkeypatch.setattr(bwrap_mounts, "passwd_home", lambda: str(tools / "lib"))
    (tmp_path / "jobs").mkdir()
    dirs = create_job_dirs(str(tmp_path / "jobs"))
    args = bwrap_args(dirs, SandboxPolicy(), hidden=[], readable=[str(tools)], parent_homes=[])
    assert str(tools / "lib") not in args
    assert str(tools) in args  # given back, whole
