"""The garbage collector around a console-script command: quiet while modules load.

``axis`` is a short-lived process whose fixed cost is mostly imports. Importing pydantic and
building the model classes allocates a great many objects that live until exit, and a
young-generation collection every 700 allocations walks them for nothing. So
:func:`raise_threshold` holds collections off while a command imports, the command calls
:func:`imports_done` once it has what it needs (the run's own garbage is then collected as
usual), and :func:`freeze_at_exit` spares the interpreter's final collections. Only the
console script (``main``) arms this: in-process callers (the tests use ``cli``) keep their
collector as it is, because frozen objects are never collected.
"""

from __future__ import annotations

import gc

_RESTORE: list[tuple[int, int, int]] = []
"""The collector's thresholds before :func:`raise_threshold` (empty when not armed)."""


def raise_threshold() -> None:
    """Hold young-generation collections off while the command's modules load."""
    _RESTORE.append(gc.get_threshold())
    gc.set_threshold(100_000, 50, 100)


def imports_done() -> None:
    """Back to normal garbage collection once a command has imported what it needs.

    Freezing moves everything allocated so far (modules, classes, schemas) out of the
    collector's sight; what the command allocates from here on is collected as usual.
    A no-op unless :func:`raise_threshold` ran.
    """
    if _RESTORE:
        gc.freeze()
        gc.set_threshold(*_RESTORE.pop())


def freeze_at_exit() -> None:
    """The process is exiting: keep its final collections from freeing objects one by one.

    Without this the interpreter's last collections free, one by one, every class, schema
    and validator held in reference cycles. Exit handlers still run and stdout/stderr are
    still flushed; only ``__del__`` of objects in cycles is skipped, which Python never
    promised at exit.
    """
    gc.freeze()
