"""The runner's exceptions.

::

    RunnerError        base; the console script logs it and exits 1
    ├─ SpecError       a Task or Workspace that cannot be read (bad YAML, wrong types)
    └─ ServeError      the HTTP server cannot listen (port taken, no permission)
"""

from __future__ import annotations

__all__ = ["RunnerError", "ServeError", "SpecError"]


class RunnerError(Exception):
    """The runner cannot start or go on; ``ax-task-runner`` exits with :attr:`exit_code`."""

    exit_code = 1


class SpecError(RunnerError):
    """``AX_TASK_YAML``, ``AX_WORKSPACES_YAML`` or a spec file is malformed.

    The message names the source, the document and the field, never a field's value
    (values may be secrets).
    """


class ServeError(RunnerError):
    """The metadata server could not listen on its address."""
