"""Process control: the only place that starts agent processes or signals them (Linux only).

The seam
--------
One call starts a process and one object covers the rest of its life::

    proc = await spawn(ProcessSpec(argv, cwd, env, marker, stdin_data=b"..."))
    async for line in proc.stdout: ...          # and proc.stderr; proc.stdin if stdin_pipe
    code = await proc.wait()                    # the process itself exited
    await proc.stop(grace_s)                    # its whole tree: group + marker

(or ``async with await spawn(spec) as proc:``, which stops it on the way out.)

:func:`spawn` starts ``argv`` with exactly ``env`` (plus the job marker) in ``cwd``, in its
own session and process group, stdin from ``stdin_data``, a pipe or /dev/null; it raises
:class:`SpawnFailed` when the program cannot start. :class:`AgentProcess` streams stdout and
stderr, reports the exit (:meth:`~AgentProcess.wait`, :meth:`~AgentProcess.add_exit_callback`),
signals the group (:meth:`~AgentProcess.signal`) and :meth:`~AgentProcess.stop` ends its
whole tree: SIGTERM, ``grace_s``, SIGKILL, to its group and to every process carrying its
marker (``setsid`` children and double-fork orphans included), then, while a run claims
them, the adopted orphans that no longer carry a marker (:mod:`.orphans`), then reaps and
closes the pipes. A spawn that meets EMFILE waits for descriptors instead of failing. A
sandbox backend wraps this seam: it provides a :data:`Spawner` (a ``ProcessSpec`` in, a
:class:`ManagedProcess` out) and the callers stay as they are.

The task runner (ax-task-runner) starts its processes through the same :func:`spawn`, with
the options of :class:`ProcessSpec` that say how they differ from an agent's: no marker (the
tree is the process group), a new group in the caller's session, inherited or merged stdio.

The modules, by responsibility
------------------------------
- :mod:`.spawning`: :class:`ProcessSpec`, :func:`spawn`, :class:`AgentProcess` (the only
  module that imports ``subprocess``; not named ``spawn``, which would shadow the function
  as this package's attribute once imported).
- :mod:`.markers`: job markers (``AXIS_JOB_MARKER=<run_token>/<job_id>``) and what the
  marker kill remembers per marker.
- :mod:`.kill`: :func:`kill_marked`: killing a job's whole tree; :func:`kill_group` for a
  process spawned without a marker (a task runner's command); group signals.
- :mod:`.children`: the one registry of children whose exit status a spawner awaits. Every
  spawner in the process registers there, the task runner (ax-task-runner) embedded in
  axis-eval's process or running as PID 1 included, so the orphan reaper never takes one.
- :mod:`.reaping`: the subreaper switch, :class:`OrphanReaper`, the pidfd child watcher
  (which falls back to a waiting thread when no descriptor is left for a pidfd).
- :mod:`.orphans`: the adopted orphans no marker names (double-forked, ``setsid``, ``env
  -i``): while a run claims them, those no live job can own are killed, and all are
  reported to the sentinel. :mod:`.activity` holds what may still own one (live markers,
  spawns in flight) and when each began: an orphan is attributed by its birth.
- :mod:`.fds`: the descriptor limit: raising the soft limit, fitting the local executor's
  concurrency to it, and the EMFILE a spawn waits out.
- :mod:`.shell`: :func:`run_shell` (setup, teardown and check commands).
- :mod:`.sentinel`: :class:`Sentinel`, the watchdog that kills the run's marked processes
  (and the orphans it was told of) when the harness goes away, even by SIGKILL; its
  program is :mod:`.sentinel_main`. Its life is the run's claim on the adopted orphans.
- :mod:`.procfs`: the ``/proc`` reading (standard library only: the watchdog imports it);
  :func:`group_running`.

Names load on first use (this file imports no module of the package up front), so a
module here may import its siblings without an import cycle through the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axis_eval._util.lazy import lazy_exports

if TYPE_CHECKING:
    from axis_eval.execute.process.kill import (
        kill_group as kill_group,
        kill_marked as kill_marked,
        kill_marked_now as kill_marked_now,
        send_signal as send_signal,
        signal_group as signal_group,
    )
    from axis_eval.execute.process.markers import (
        MARKER_KEY as MARKER_KEY,
        forget_marker as forget_marker,
        ignore_existing_processes as ignore_existing_processes,
        marked_pids as marked_pids,
        marker_entry as marker_entry,
        new_run_token as new_run_token,
    )
    from axis_eval.execute.process.procfs import group_running as group_running
    from axis_eval.execute.process.reaping import (
        OrphanReaper as OrphanReaper,
        become_subreaper as become_subreaper,
        is_subreaper as is_subreaper,
        pidfd_child_watcher as pidfd_child_watcher,
        reap_orphans as reap_orphans,
        subreaper as subreaper,
    )
    from axis_eval.execute.process.sentinel import Sentinel as Sentinel
    from axis_eval.execute.process.shell import (
        SHELL_OUTPUT_CAP as SHELL_OUTPUT_CAP,
        ShellResult as ShellResult,
        run_shell as run_shell,
    )
    from axis_eval.execute.process.spawning import (
        STREAM_LIMIT as STREAM_LIMIT,
        AgentProcess as AgentProcess,
        ManagedProcess as ManagedProcess,
        ProcessSpec as ProcessSpec,
        Spawner as Spawner,
        SpawnFailed as SpawnFailed,
        Stdio as Stdio,
        spawn as spawn,
    )

_EXPORTS = {  # module → the public names it holds
    "spawning": (
        "STREAM_LIMIT",
        "AgentProcess",
        "ManagedProcess",
        "ProcessSpec",
        "SpawnFailed",
        "Spawner",
        "Stdio",
        "spawn",
    ),
    "markers": (
        "MARKER_KEY",
        "forget_marker",
        "ignore_existing_processes",
        "marked_pids",
        "marker_entry",
        "new_run_token",
    ),
    "kill": ("kill_group", "kill_marked", "kill_marked_now", "send_signal", "signal_group"),
    "procfs": ("group_running",),
    "reaping": (
        "OrphanReaper",
        "become_subreaper",
        "is_subreaper",
        "pidfd_child_watcher",
        "reap_orphans",
        "subreaper",
    ),
    "shell": ("SHELL_OUTPUT_CAP", "ShellResult", "run_shell"),
    "sentinel": ("Sentinel",),
}
_HOME = {name: f".{module}" for module, names in _EXPORTS.items() for name in names}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOME)
