"""Sandboxes: how a job's processes are confined (``none``, ``bwrap``, ``docker``).

:class:`Sandboxes` opens one :class:`JobSandbox` per job; every process of the job (setup,
the agent, checks, teardown) starts through its :attr:`~JobSandbox.spawn`. The modules:
:mod:`.base` (the seam), :mod:`.sandboxes` (per run: which kind, ``auto`` resolved),
:mod:`.probe` (does bubblewrap work here), :mod:`.host`, :mod:`.bwrap`, :mod:`.docker`.
See ``docs/sandboxes.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axis_eval._util.lazy import lazy_exports

if TYPE_CHECKING:
    from axis_eval.execute.sandbox.base import (
        JobSandbox as JobSandbox,
        SandboxUnavailable as SandboxUnavailable,
    )
    from axis_eval.execute.sandbox.host import HostSandbox as HostSandbox
    from axis_eval.execute.sandbox.sandboxes import Sandboxes as Sandboxes

_HOME = {
    "JobSandbox": ".base",
    "SandboxUnavailable": ".base",
    "HostSandbox": ".host",
    "Sandboxes": ".sandboxes",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOME)
