"""Workspace preparation: binding paths, once-only markers, git, skills, MCP files, goals.

Once-only work (git, the goal) is recorded by markers in two places: upstream's
``<state dir>/initialized-<path>`` and a copy on the durable volume
(``<workspace root>/.ax-task-runner/``), since the state dir is not restored on resume.
Either one means "done". Skills folders and MCP files live outside the durable volume,
are idempotent, and are written on every boot.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ax_task_runner.errors import SpecError
from ax_task_runner.files import write_atomic
from ax_task_runner.git import GitFetcher, destination
from ax_task_runner.goal import GoalOutcome, run_goal
from ax_task_runner.logs import event
from ax_task_runner.mcp import collect_servers, write_mcp_configs
from ax_task_runner.spec import Parsed, Task, Workspace, is_label

__all__ = [
    "DURABLE_DIR",
    "GoalSettings",
    "Markers",
    "Mount",
    "bootstrap_goal",
    "marker_key",
    "prepare_workspace",
    "resolve_mounts",
]

log = logging.getLogger(__name__)

DURABLE_DIR = ".ax-task-runner"
"""Folder under the workspace root (the durable volume) holding the durable markers."""


@dataclass(frozen=True)
class Mount:
    """A binding resolved: its name, absolute path, goal and matching Workspace (if any)."""

    name: str
    path: str
    goal: str = ""
    workspace: Workspace | None = None

    @property
    def label(self) -> str:
        """The name written into markers: the Workspace's, else ``unknown``."""
        meta = self.workspace.metadata if self.workspace else None
        return (meta.name if meta else "") or "unknown"


def resolve_mounts(
    task: Task | None, workspaces: list[Workspace], root: str
) -> Parsed[list[Mount]]:
    """Line up ``spec.workspaces`` with the Workspace documents (matched by name).

    A binding without a path lands at ``<root>/<name>``; a relative path is taken under
    ``root`` (with a warning). No bindings at all means one unnamed mount at ``root``.

    Raises:
        SpecError: a binding has no name, or two share a name or a path.
    """
    root = os.path.normpath(os.path.abspath(root))
    by_name = {ws.metadata.name: ws for ws in workspaces if ws.metadata}
    warnings: list[str] = []
    mounts: list[Mount] = []
    names: set[str] = set()
    paths: dict[str, str] = {}
    bindings = task.spec.workspaces if task is not None else []
    for i, ref in enumerate(bindings):
        where = f"spec.workspaces[{i}]"
        name = ref.name.strip()
        if not name or name in (".", "..") or "/" in name:
            raise SpecError(f"{where}: name is required and must be a folder name")
        if not is_label(name):
            warnings.append(f"{where}: name {name!r} is not a lowercase RFC 1123 label")
        if name in names:
            raise SpecError(f"{where}: duplicate workspace name {name!r}")
        names.add(name)
        path = ref.path.strip()
        if path and not Path(path).is_absolute():
            warnings.append(f"{where}: path {path!r} is not absolute; using it under {root}")
        path = os.path.normpath(os.path.join(root, path)) if path else os.path.join(root, name)
        if path in paths:
            raise SpecError(f"{where}: path {path} is also used by {paths[path]!r}")
        paths[path] = name
        workspace = by_name.get(name)
        if workspace is None and workspaces:
            warnings.append(f"{where}: no Workspace named {name!r}; an empty folder is used")
        mounts.append(Mount(name, path, ref.goal.strip(), workspace))
    if not mounts:
        mounts.append(Mount("", root))
    return Parsed(mounts, warnings)


def marker_key(path: str) -> str:
    """Upstream's marker suffix: ``/workspace/my-service`` → ``workspace-my-service``."""
    cleaned = os.path.normpath(path).strip("/")
    return cleaned.replace("/", "-") or "root"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _at(mount: Mount) -> dict[str, str]:
    """The fields naming a workspace in a log line, in upstream's order: name, then path."""
    return {"workspace": mount.name, "path": mount.path}


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


class Markers:
    """Once-only markers in the state dir and on the durable volume."""

    def __init__(self, state_dir: str, root: str) -> None:
        self.state_dir = Path(state_dir)
        self.root = Path(os.path.abspath(root))
        self.durable_dir = self.root / DURABLE_DIR

    def _places(self, kind: str, path: str) -> list[Path]:
        key = marker_key(path)
        places = [self.state_dir / f"{kind}-{key}"]
        inside = os.path.commonpath([str(self.root), os.path.abspath(path)]) == str(self.root)
        if inside:  # a workspace off the volume would not survive a resume anyway
            digest = hashlib.sha256(os.path.normpath(path).encode()).hexdigest()[:8]
            places.append(self.durable_dir / f"{kind}-{key}-{digest}")
        return places

    def found(self, kind: str, mount: Mount) -> Path | None:
        """The first existing ``kind`` marker (``initialized`` or ``goal``) of ``mount``."""
        return next((p for p in self._places(kind, mount.path) if p.is_file()), None)

    def write(self, kind: str, mount: Mount, extra: str = "") -> None:
        """Write the ``kind`` marker everywhere it is missing (failures only logged)."""
        text = f"workspace: {mount.label}\ninitialized_at: {_now()}\n"
        if kind != "initialized":
            text = f"workspace: {mount.label}\nfinished_at: {_now()}\n"
        for place in self._places(kind, mount.path):
            if place.is_file():
                continue
            body = (
                text + extra + (f"path: {mount.path}\n" if place.parent != self.state_dir else "")
            )
            try:
                write_atomic(place, body, durable=place.parent == self.durable_dir)
            except OSError as exc:
                event(log, logging.WARNING, "cannot write marker", path=str(place), error=str(exc))


@dataclass(frozen=True)
class GoalSettings:
    """How goals run (from :class:`~ax_task_runner.config.RunnerConfig`)."""

    agent: str
    timeout_s: float
    model: str | None = None
    endpoint: str | None = None


def _skills(workspace: Workspace, path: str) -> None:
    skills = workspace.spec.skills
    if skills is None:
        return
    if skills.registries:
        event(
            log,
            logging.INFO,
            "skills registries are not resolved by this runner",
            count=len(skills.registries),
        )
    if skills.path.strip():
        folder = os.path.join(path, skills.path.strip())  # an absolute path stays as given
        try:
            os.makedirs(folder, mode=0o755, exist_ok=True)
        except OSError as exc:
            event(log, logging.WARNING, "cannot create skills path", path=folder, error=str(exc))


async def _mcp(workspace: Workspace, env: dict[str, str]) -> None:
    servers = collect_servers(workspace)
    if not servers:
        return
    try:
        written = await asyncio.to_thread(write_mcp_configs, servers, env)
    except Exception as exc:
        event(log, logging.WARNING, "cannot write MCP configuration", error=str(exc))
        return
    if written:
        event(log, logging.INFO, "wrote MCP configuration", files=[str(p) for p in written])


async def prepare_workspace(
    mount: Mount, *, env: dict[str, str], markers: Markers, fetcher: GitFetcher
) -> bool:
    """Prepare one workspace; False only when its folder cannot be created (not ready)."""
    try:
        os.makedirs(mount.path, mode=0o755, exist_ok=True)
    except OSError as exc:
        event(log, logging.ERROR, "workspace maiden run setup failed", **_at(mount), error=str(exc))
        return False
    try:
        markers.state_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as exc:
        where = str(markers.state_dir)
        event(log, logging.WARNING, "cannot create state dir", path=where, error=str(exc))
    workspace = mount.workspace
    if workspace is not None:
        _skills(workspace, mount.path)
        await _mcp(workspace, env)
    found = markers.found("initialized", mount)
    if found is not None:
        skipping = "workspace already initialized; skipping maiden run setup"
        event(log, logging.INFO, skipping, **_at(mount), marker=str(found))
        markers.write("initialized", mount)
        return True
    event(log, logging.INFO, "executing workspace maiden run setup", **_at(mount))
    failed = 0
    for repo in workspace.spec.git if workspace is not None else []:
        if not repo.repo.strip():
            continue
        outcome = await fetcher.fetch(repo, destination(repo, mount.path))
        failed += outcome.status == "failed"
    if failed:
        event(
            log,
            logging.WARNING,
            "git fetch failed; marker withheld so the next boot retries",
            workspace=mount.name,
            failed=failed,
        )
    else:
        markers.write("initialized", mount)
    return True


async def bootstrap_goal(
    mount: Mount,
    *,
    env: dict[str, str],
    markers: Markers,
    settings: GoalSettings,
    cancel: asyncio.Event,
) -> GoalOutcome | None:
    """Run the binding's goal unless it has none or it already ran (None then).

    A failed, timed-out or skipped goal is recorded and not retried; a cancelled one
    (the runner stopping) runs again on the next boot.
    """
    if not mount.goal:
        return None
    done = markers.found("goal", mount)
    if done is not None:
        event(
            log,
            logging.INFO,
            "goal bootstrap already ran; skipping",
            workspace=mount.name,
            marker=str(done),
        )
        return None
    timeout = f"{settings.timeout_s:g}s"
    event(
        log,
        logging.INFO,
        "running goal bootstrap",
        **_at(mount),
        agent=settings.agent,
        timeout=timeout,
    )
    outcome = await run_goal(
        goal=mount.goal,
        workspace=mount.path,
        agent=settings.agent,
        env=env,
        folder=markers.state_dir / "goal" / marker_key(mount.path),
        timeout_s=settings.timeout_s,
        cancel=cancel,
        model=settings.model,
        endpoint=settings.endpoint,
    )
    messages = {
        "completed": (logging.INFO, "goal bootstrap completed"),
        "failed": (logging.WARNING, "goal bootstrap failed (continuing)"),
        "timed_out": (logging.WARNING, "goal bootstrap timed out (continuing)"),
        "skipped": (logging.WARNING, "goal bootstrap skipped"),
        "cancelled": (logging.INFO, "goal bootstrap cancelled; it runs again on the next boot"),
    }
    level, text = messages[outcome.status]
    event(
        log,
        level,
        text,
        workspace=mount.name,
        agent=settings.agent,
        seconds=round(outcome.duration_s, 1),
        detail=_one_line(outcome.message),
    )
    if outcome.status != "cancelled":
        extra = f"status: {outcome.status}\nmessage: {_one_line(outcome.message)!r}\n"
        markers.write("goal", mount, extra)
    return outcome
