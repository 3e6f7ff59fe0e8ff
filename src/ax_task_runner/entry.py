"""The one way the runner's modes run: logging set up, secrets known, errors as exit codes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any

from ax_task_runner.errors import RunnerError
from ax_task_runner.logs import event, redactor

__all__ = ["run_entry"]


def run_entry(start: Callable[[], Coroutine[Any, Any, int]], log: logging.Logger) -> int:
    """Run ``start()`` (called once logging is configured: building its options may raise
    :class:`RunnerError`) to its exit code; a failure is logged on ``log``."""
    from ax_task_runner.logs import configure

    configure()
    redactor.add_environment(os.environ)
    try:
        return asyncio.run(start())
    except RunnerError as exc:
        event(log, logging.ERROR, "task runner failed", error=str(exc))
        return exc.exit_code
    except KeyboardInterrupt:  # before the handlers were installed
        return 130
    finally:
        with contextlib.suppress(Exception):
            logging.shutdown()
